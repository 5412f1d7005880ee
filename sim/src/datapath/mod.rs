//! The datapath: what the device does between commands (send queues, the port, receive
//! steering, completions and events, the RC transport).

pub(crate) mod rc;
