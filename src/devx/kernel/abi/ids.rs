//! Object, method and attribute ids of the uverbs ioctl interface.
//!
//! Sources: rdma-core `kernel-headers/rdma/ib_user_ioctl_cmds.h` (core objects, methods and
//! attributes: plain enums counting from 0) and `kernel-headers/rdma/mlx5_user_ioctl_cmds.h`
//! (the mlx5 driver's, counting from `1 << UVERBS_ID_NS_SHIFT` = 0x1000). The kernel's
//! `drivers/infiniband/core/uverbs_std_types*.c` and `drivers/infiniband/hw/mlx5/{devx,main,
//! qos}.c` define the same ids on the other side. Names are the headers' names.

/// Core ids (`ib_user_ioctl_cmds.h`).
pub mod core_ids {
    /// Driver-specific ids start here (`UVERBS_ID_NS_SHIFT` = 12).
    pub const UVERBS_ID_NS_SHIFT: u16 = 12;
    /// The namespace bits of an id (`UVERBS_ID_NS_MASK`).
    pub const UVERBS_ID_NS_MASK: u16 = 0xf000;

    // enum uverbs_default_objects
    pub const UVERBS_OBJECT_DEVICE: u16 = 0;
    pub const UVERBS_OBJECT_PD: u16 = 1;
    pub const UVERBS_OBJECT_COMP_CHANNEL: u16 = 2;
    pub const UVERBS_OBJECT_CQ: u16 = 3;
    pub const UVERBS_OBJECT_QP: u16 = 4;
    pub const UVERBS_OBJECT_SRQ: u16 = 5;
    pub const UVERBS_OBJECT_AH: u16 = 6;
    pub const UVERBS_OBJECT_MR: u16 = 7;
    pub const UVERBS_OBJECT_MW: u16 = 8;
    pub const UVERBS_OBJECT_FLOW: u16 = 9;
    pub const UVERBS_OBJECT_XRCD: u16 = 10;
    pub const UVERBS_OBJECT_RWQ_IND_TBL: u16 = 11;
    pub const UVERBS_OBJECT_WQ: u16 = 12;
    pub const UVERBS_OBJECT_FLOW_ACTION: u16 = 13;
    pub const UVERBS_OBJECT_DM: u16 = 14;
    pub const UVERBS_OBJECT_COUNTERS: u16 = 15;
    pub const UVERBS_OBJECT_ASYNC_EVENT: u16 = 16;

    // Driver data attributes of every method (`UVERBS_ATTR_UHW_IN` / `_OUT`).
    pub const UVERBS_ATTR_UHW_IN: u16 = 0x1000;
    pub const UVERBS_ATTR_UHW_OUT: u16 = 0x1001;

    // enum uverbs_methods_device
    pub const UVERBS_METHOD_INVOKE_WRITE: u16 = 0;
    pub const UVERBS_METHOD_INFO_HANDLES: u16 = 1;
    pub const UVERBS_METHOD_QUERY_PORT: u16 = 2;
    pub const UVERBS_METHOD_GET_CONTEXT: u16 = 3;
    pub const UVERBS_METHOD_QUERY_CONTEXT: u16 = 4;
    pub const UVERBS_METHOD_QUERY_GID_TABLE: u16 = 5;
    pub const UVERBS_METHOD_QUERY_GID_ENTRY: u16 = 6;

    // enum uverbs_attrs_invoke_write_cmd_attr_ids
    pub const UVERBS_ATTR_CORE_IN: u16 = 0;
    pub const UVERBS_ATTR_CORE_OUT: u16 = 1;
    pub const UVERBS_ATTR_WRITE_CMD: u16 = 2;

    // enum uverbs_attrs_query_port_cmd_attr_ids
    pub const UVERBS_ATTR_QUERY_PORT_PORT_NUM: u16 = 0;
    pub const UVERBS_ATTR_QUERY_PORT_RESP: u16 = 1;

    // enum uverbs_attrs_get_context_attr_ids (QUERY_CONTEXT's are the same numbers)
    pub const UVERBS_ATTR_GET_CONTEXT_NUM_COMP_VECTORS: u16 = 0;
    pub const UVERBS_ATTR_GET_CONTEXT_CORE_SUPPORT: u16 = 1;

    // enum uverbs_attrs_query_gid_table_cmd_attr_ids
    pub const UVERBS_ATTR_QUERY_GID_TABLE_ENTRY_SIZE: u16 = 0;
    pub const UVERBS_ATTR_QUERY_GID_TABLE_FLAGS: u16 = 1;
    pub const UVERBS_ATTR_QUERY_GID_TABLE_RESP_ENTRIES: u16 = 2;
    pub const UVERBS_ATTR_QUERY_GID_TABLE_RESP_NUM_ENTRIES: u16 = 3;

    // enum uverbs_attrs_query_gid_entry_cmd_attr_ids
    pub const UVERBS_ATTR_QUERY_GID_ENTRY_PORT: u16 = 0;
    pub const UVERBS_ATTR_QUERY_GID_ENTRY_GID_INDEX: u16 = 1;
    pub const UVERBS_ATTR_QUERY_GID_ENTRY_FLAGS: u16 = 2;
    pub const UVERBS_ATTR_QUERY_GID_ENTRY_RESP_ENTRY: u16 = 3;

    // enum uverbs_methods_async_event / uverbs_attrs_async_event_create
    pub const UVERBS_METHOD_ASYNC_EVENT_ALLOC: u16 = 0;
    pub const UVERBS_ATTR_ASYNC_EVENT_ALLOC_FD_HANDLE: u16 = 0;

    // enum uverbs_methods_pd / _mr / _cq / _qp / _srq: the destroy methods the kernel offers
    // beside the write commands (not served here: libibverbs falls back to the write command).
    pub const UVERBS_METHOD_PD_DESTROY: u16 = 0;
    pub const UVERBS_METHOD_CQ_CREATE: u16 = 0;
    pub const UVERBS_METHOD_CQ_DESTROY: u16 = 1;
    pub const UVERBS_METHOD_QP_CREATE: u16 = 0;
    pub const UVERBS_METHOD_QP_DESTROY: u16 = 1;
    pub const UVERBS_METHOD_MR_DESTROY: u16 = 1;
    pub const UVERBS_METHOD_QUERY_MR: u16 = 3;
    // enum uverbs_methods_flow, enum uverbs_attrs_flow_destroy_ids
    pub const UVERBS_METHOD_FLOW_DESTROY: u16 = 0;
    pub const UVERBS_ATTR_DESTROY_FLOW_HANDLE: u16 = 0;
}

/// mlx5 ids (`mlx5_user_ioctl_cmds.h`).
pub mod mlx5_ids {
    // enum mlx5_ib_objects
    pub const MLX5_IB_OBJECT_DEVX: u16 = 0x1000;
    pub const MLX5_IB_OBJECT_DEVX_OBJ: u16 = 0x1001;
    pub const MLX5_IB_OBJECT_DEVX_UMEM: u16 = 0x1002;
    pub const MLX5_IB_OBJECT_FLOW_MATCHER: u16 = 0x1003;
    pub const MLX5_IB_OBJECT_DEVX_ASYNC_CMD_FD: u16 = 0x1004;
    pub const MLX5_IB_OBJECT_DEVX_ASYNC_EVENT_FD: u16 = 0x1005;
    pub const MLX5_IB_OBJECT_VAR: u16 = 0x1006;
    pub const MLX5_IB_OBJECT_PP: u16 = 0x1007;
    pub const MLX5_IB_OBJECT_UAR: u16 = 0x1008;
    pub const MLX5_IB_OBJECT_STEERING_ANCHOR: u16 = 0x1009;

    // enum mlx5_ib_devx_methods
    pub const MLX5_IB_METHOD_DEVX_OTHER: u16 = 0x1000;
    pub const MLX5_IB_METHOD_DEVX_QUERY_UAR: u16 = 0x1001;
    pub const MLX5_IB_METHOD_DEVX_QUERY_EQN: u16 = 0x1002;
    pub const MLX5_IB_METHOD_DEVX_SUBSCRIBE_EVENT: u16 = 0x1003;
    pub const MLX5_IB_ATTR_DEVX_OTHER_CMD_IN: u16 = 0x1000;
    pub const MLX5_IB_ATTR_DEVX_OTHER_CMD_OUT: u16 = 0x1001;
    pub const MLX5_IB_ATTR_DEVX_QUERY_UAR_USER_IDX: u16 = 0x1000;
    pub const MLX5_IB_ATTR_DEVX_QUERY_UAR_DEV_IDX: u16 = 0x1001;
    pub const MLX5_IB_ATTR_DEVX_QUERY_EQN_USER_VEC: u16 = 0x1000;
    pub const MLX5_IB_ATTR_DEVX_QUERY_EQN_DEV_EQN: u16 = 0x1001;
    pub const MLX5_IB_ATTR_DEVX_SUBSCRIBE_EVENT_FD_HANDLE: u16 = 0x1000;
    pub const MLX5_IB_ATTR_DEVX_SUBSCRIBE_EVENT_OBJ_HANDLE: u16 = 0x1001;
    pub const MLX5_IB_ATTR_DEVX_SUBSCRIBE_EVENT_TYPE_NUM_LIST: u16 = 0x1002;
    pub const MLX5_IB_ATTR_DEVX_SUBSCRIBE_EVENT_FD_NUM: u16 = 0x1003;
    pub const MLX5_IB_ATTR_DEVX_SUBSCRIBE_EVENT_COOKIE: u16 = 0x1004;

    // enum mlx5_ib_devx_obj_methods and their attributes
    pub const MLX5_IB_METHOD_DEVX_OBJ_CREATE: u16 = 0x1000;
    pub const MLX5_IB_METHOD_DEVX_OBJ_DESTROY: u16 = 0x1001;
    pub const MLX5_IB_METHOD_DEVX_OBJ_MODIFY: u16 = 0x1002;
    pub const MLX5_IB_METHOD_DEVX_OBJ_QUERY: u16 = 0x1003;
    pub const MLX5_IB_METHOD_DEVX_OBJ_ASYNC_QUERY: u16 = 0x1004;
    // enum mlx5_ib_flow_matcher_methods, _create_attrs, _destroy_attrs
    pub const MLX5_IB_METHOD_FLOW_MATCHER_CREATE: u16 = 0x1000;
    pub const MLX5_IB_METHOD_FLOW_MATCHER_DESTROY: u16 = 0x1001;
    pub const MLX5_IB_ATTR_FLOW_MATCHER_CREATE_HANDLE: u16 = 0x1000;
    pub const MLX5_IB_ATTR_FLOW_MATCHER_MATCH_MASK: u16 = 0x1001;
    pub const MLX5_IB_ATTR_FLOW_MATCHER_FLOW_TYPE: u16 = 0x1002;
    pub const MLX5_IB_ATTR_FLOW_MATCHER_MATCH_CRITERIA: u16 = 0x1003;
    pub const MLX5_IB_ATTR_FLOW_MATCHER_FLOW_FLAGS: u16 = 0x1004;
    pub const MLX5_IB_ATTR_FLOW_MATCHER_FT_TYPE: u16 = 0x1005;
    pub const MLX5_IB_ATTR_FLOW_MATCHER_DESTROY_HANDLE: u16 = 0x1000;
    // enum mlx5_ib_flow_methods, mlx5_ib_create_flow_attrs (on UVERBS_OBJECT_FLOW)
    pub const MLX5_IB_METHOD_CREATE_FLOW: u16 = 0x1000;
    pub const MLX5_IB_ATTR_CREATE_FLOW_HANDLE: u16 = 0x1000;
    pub const MLX5_IB_ATTR_CREATE_FLOW_MATCH_VALUE: u16 = 0x1001;
    pub const MLX5_IB_ATTR_CREATE_FLOW_DEST_QP: u16 = 0x1002;
    pub const MLX5_IB_ATTR_CREATE_FLOW_DEST_DEVX: u16 = 0x1003;
    pub const MLX5_IB_ATTR_CREATE_FLOW_MATCHER: u16 = 0x1004;
    pub const MLX5_IB_ATTR_CREATE_FLOW_ARR_FLOW_ACTIONS: u16 = 0x1005;
    pub const MLX5_IB_ATTR_CREATE_FLOW_TAG: u16 = 0x1006;
    pub const MLX5_IB_ATTR_CREATE_FLOW_ARR_COUNTERS_DEVX: u16 = 0x1007;
    pub const MLX5_IB_ATTR_CREATE_FLOW_ARR_COUNTERS_DEVX_OFFSET: u16 = 0x1008;
    pub const MLX5_IB_ATTR_CREATE_FLOW_FLAGS: u16 = 0x1009;
    /// `MLX5_IB_UAPI_FLOW_TABLE_TYPE_NIC_RX`.
    pub const MLX5_IB_UAPI_FLOW_TABLE_TYPE_NIC_RX: u64 = 0x0;
    pub const MLX5_IB_ATTR_DEVX_OBJ_HANDLE: u16 = 0x1000;
    pub const MLX5_IB_ATTR_DEVX_OBJ_CMD_IN: u16 = 0x1001;
    pub const MLX5_IB_ATTR_DEVX_OBJ_CMD_OUT: u16 = 0x1002;
    pub const MLX5_IB_ATTR_DEVX_OBJ_QUERY_ASYNC_FD: u16 = 0x1002;
    pub const MLX5_IB_ATTR_DEVX_OBJ_QUERY_ASYNC_WR_ID: u16 = 0x1003;
    pub const MLX5_IB_ATTR_DEVX_OBJ_QUERY_ASYNC_OUT_LEN: u16 = 0x1004;

    // enum mlx5_ib_devx_umem_methods and their attributes
    pub const MLX5_IB_METHOD_DEVX_UMEM_REG: u16 = 0x1000;
    pub const MLX5_IB_METHOD_DEVX_UMEM_DEREG: u16 = 0x1001;
    pub const MLX5_IB_ATTR_DEVX_UMEM_REG_HANDLE: u16 = 0x1000;
    pub const MLX5_IB_ATTR_DEVX_UMEM_REG_ADDR: u16 = 0x1001;
    pub const MLX5_IB_ATTR_DEVX_UMEM_REG_LEN: u16 = 0x1002;
    pub const MLX5_IB_ATTR_DEVX_UMEM_REG_ACCESS: u16 = 0x1003;
    pub const MLX5_IB_ATTR_DEVX_UMEM_REG_OUT_ID: u16 = 0x1004;
    pub const MLX5_IB_ATTR_DEVX_UMEM_REG_PGSZ_BITMAP: u16 = 0x1005;
    pub const MLX5_IB_ATTR_DEVX_UMEM_REG_DMABUF_FD: u16 = 0x1006;
    pub const MLX5_IB_ATTR_DEVX_UMEM_DEREG_HANDLE: u16 = 0x1000;

    // Async command and event fds.
    pub const MLX5_IB_METHOD_DEVX_ASYNC_CMD_FD_ALLOC: u16 = 0x1000;
    pub const MLX5_IB_ATTR_DEVX_ASYNC_CMD_FD_ALLOC_HANDLE: u16 = 0x1000;
    pub const MLX5_IB_METHOD_DEVX_ASYNC_EVENT_FD_ALLOC: u16 = 0x1000;
    pub const MLX5_IB_ATTR_DEVX_ASYNC_EVENT_FD_ALLOC_HANDLE: u16 = 0x1000;
    pub const MLX5_IB_ATTR_DEVX_ASYNC_EVENT_FD_ALLOC_FLAGS: u16 = 0x1001;
    /// `MLX5_IB_UAPI_DEVX_CR_EV_CH_FLAGS_OMIT_DATA`: event records carry the cookie only.
    pub const MLX5_IB_UAPI_DEVX_CR_EV_CH_FLAGS_OMIT_DATA: u32 = 1;

    // enum mlx5_ib_uar_obj_methods and their attributes
    pub const MLX5_IB_METHOD_UAR_OBJ_ALLOC: u16 = 0x1000;
    pub const MLX5_IB_METHOD_UAR_OBJ_DESTROY: u16 = 0x1001;
    pub const MLX5_IB_ATTR_UAR_OBJ_ALLOC_HANDLE: u16 = 0x1000;
    pub const MLX5_IB_ATTR_UAR_OBJ_ALLOC_TYPE: u16 = 0x1001;
    pub const MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_OFFSET: u16 = 0x1002;
    pub const MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_LENGTH: u16 = 0x1003;
    pub const MLX5_IB_ATTR_UAR_OBJ_ALLOC_PAGE_ID: u16 = 0x1004;
    pub const MLX5_IB_ATTR_UAR_OBJ_DESTROY_HANDLE: u16 = 0x1000;

    // The mlx5 methods of core objects.
    /// `MLX5_IB_METHOD_PD_QUERY` (on `UVERBS_OBJECT_PD`).
    pub const MLX5_IB_METHOD_PD_QUERY: u16 = 0x1000;
    pub const MLX5_IB_ATTR_QUERY_PD_HANDLE: u16 = 0x1000;
    pub const MLX5_IB_ATTR_QUERY_PD_RESP_PDN: u16 = 0x1001;
    /// `MLX5_IB_METHOD_QUERY_PORT` (on `UVERBS_OBJECT_DEVICE`, `mlx5dv_query_port`).
    pub const MLX5_IB_METHOD_QUERY_PORT: u16 = 0x1000;
    pub const MLX5_IB_ATTR_QUERY_PORT_PORT_NUM: u16 = 0x1000;
    pub const MLX5_IB_ATTR_QUERY_PORT: u16 = 0x1001;
    /// `MLX5_IB_ATTR_QUERY_CONTEXT_RESP_UCTX` (QUERY_CONTEXT's driver answer).
    pub const MLX5_IB_ATTR_QUERY_CONTEXT_RESP_UCTX: u16 = 0x1000;
}
