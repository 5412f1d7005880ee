//! Message streams (FlexIO `flexio_msg_stream`).
