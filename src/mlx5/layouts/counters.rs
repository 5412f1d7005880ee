//! Counters: Q counters (a queue's drops, as `out_of_buffer`) and flow counters (the packets
//! and bytes of the flow entries that name them).
//!
//! Declarations generated once from the named public header by `tools/ifc-check/gen_layout.py`,
//! then reviewed; `tests/driver/ifc_reference.rs` checks every field against the public headers.

use crate::layout;

layout! {
    /// `alloc_q_counter_in`; offsets and widths as in DPDK `drivers/common/mlx5/mlx5_prm.h`.
    pub alloc_q_counter_in: 0x80 {
        opcode @ 0x0 : 0x10,
        uid @ 0x10 : 0x10,
        op_mod @ 0x30 : 0x10,
    }
}

layout! {
    /// `alloc_q_counter_out`; offsets and widths as in DPDK `drivers/common/mlx5/mlx5_prm.h`.
    pub alloc_q_counter_out: 0x80 {
        status @ 0x0 : 0x8,
        syndrome @ 0x20 : 0x20,
        counter_set_id @ 0x58 : 0x8,
    }
}

layout! {
    /// `dealloc_q_counter_in`; offsets and widths as in rdma-core `providers/mlx5/mlx5_ifc.h`.
    pub dealloc_q_counter_in: 0x80 {
        opcode @ 0x0 : 0x10,
        uid @ 0x10 : 0x10,
        op_mod @ 0x30 : 0x10,
        counter_set_id @ 0x58 : 0x8,
    }
}

layout! {
    /// `query_q_counter_in`; offsets and widths as in DPDK `drivers/common/mlx5/mlx5_prm.h`.
    pub query_q_counter_in: 0x100 {
        opcode @ 0x0 : 0x10,
        uid @ 0x10 : 0x10,
        op_mod @ 0x30 : 0x10,
        clear @ 0xc0 : 0x1,
        counter_set_id @ 0xf8 : 0x8,
    }
}

layout! {
    /// `query_q_counter_out` (the receive-queue counters the model keeps); offsets and widths
    /// as in DPDK `drivers/common/mlx5/mlx5_prm.h`.
    pub query_q_counter_out: 0x800 {
        status @ 0x0 : 0x8,
        syndrome @ 0x20 : 0x20,
        out_of_buffer @ 0x180 : 0x20,
        out_of_sequence @ 0x1c0 : 0x20,
        resp_local_length_error @ 0x3c0 : 0x20,
        cq_overflow @ 0x5c0 : 0x20,
    }
}

layout! {
    /// `alloc_flow_counter_in`; offsets and widths as in DPDK `drivers/common/mlx5/mlx5_prm.h`.
    pub alloc_flow_counter_in: 0x80 {
        opcode @ 0x0 : 0x10,
        uid @ 0x10 : 0x10,
        op_mod @ 0x30 : 0x10,
        pd @ 0x48 : 0x18,
        flow_counter_bulk_log_size @ 0x73 : 0x5,
        flow_counter_bulk @ 0x78 : 0x8,
    }
}

layout! {
    /// `alloc_flow_counter_out`; offsets and widths as in DPDK `drivers/common/mlx5/mlx5_prm.h`.
    pub alloc_flow_counter_out: 0x80 {
        status @ 0x0 : 0x8,
        syndrome @ 0x20 : 0x20,
        flow_counter_id @ 0x40 : 0x20,
    }
}

layout! {
    /// `dealloc_flow_counter_in`; offsets and widths as in DPDK `drivers/common/mlx5/mlx5_prm.h`.
    pub dealloc_flow_counter_in: 0x80 {
        opcode @ 0x0 : 0x10,
        uid @ 0x10 : 0x10,
        op_mod @ 0x30 : 0x10,
        flow_counter_id @ 0x40 : 0x20,
    }
}

layout! {
    /// `query_flow_counter_in`; offsets and widths as in DPDK `drivers/common/mlx5/mlx5_prm.h`.
    pub query_flow_counter_in: 0x100 {
        opcode @ 0x0 : 0x10,
        uid @ 0x10 : 0x10,
        op_mod @ 0x30 : 0x10,
        mkey @ 0x60 : 0x20,
        address @ 0x80 : 0x40,
        clear @ 0xc0 : 0x1,
        dump_to_memory @ 0xc1 : 0x1,
        num_of_counters @ 0xc2 : 0x1e,
        flow_counter_id @ 0xe0 : 0x20,
    }
}

layout! {
    /// `traffic_counter`: packets and bytes; offsets and widths as in DPDK
    /// `drivers/common/mlx5/mlx5_prm.h`.
    pub traffic_counter: 0x80 {
        packets @ 0x0 : 0x40,
        octets @ 0x40 : 0x40,
    }
}

layout! {
    /// `query_flow_counter_out`; offsets and widths as in DPDK `drivers/common/mlx5/mlx5_prm.h`.
    /// `flow_statistics` holds one [`traffic_counter`] per counter queried.
    pub query_flow_counter_out: 0x80 {
        status @ 0x0 : 0x8,
        syndrome @ 0x20 : 0x20,
        flow_statistics @ 0x80 : [0x80; flex],
    }
}

layout! {
    /// `flow_counter_list`: an entry of a flow entry's counter list (after its destinations);
    /// offsets and widths as in rdma-core `providers/mlx5/mlx5_ifc.h`.
    pub flow_counter_list: 0x40 {
        flow_counter_id @ 0x0 : 0x20,
    }
}
