//! Protection domains, transport domains and memory keys.
//!
//! Declarations generated once from the named public header by `tools/ifc-check/gen_layout.py`,
//! then reviewed; `tests/driver/ifc_reference.rs` checks every field against the public headers.

use crate::layout;

layout! {
    /// `alloc_pd_in`; offsets and widths as in rdma-core `providers/mlx5/mlx5_ifc.h`.
    pub alloc_pd_in: 0x80 {
        opcode @ 0x0 : 0x10,
        uid @ 0x10 : 0x10,
        op_mod @ 0x30 : 0x10,
    }
}

layout! {
    /// `alloc_pd_out`; offsets and widths as in rdma-core `providers/mlx5/mlx5_ifc.h`.
    pub alloc_pd_out: 0x80 {
        status @ 0x0 : 0x8,
        syndrome @ 0x20 : 0x20,
        pd @ 0x48 : 0x18,
    }
}

layout! {
    /// `dealloc_pd_in`; offsets and widths as in rdma-core `providers/mlx5/mlx5_ifc.h`.
    pub dealloc_pd_in: 0x80 {
        opcode @ 0x0 : 0x10,
        uid @ 0x10 : 0x10,
        op_mod @ 0x30 : 0x10,
        pd @ 0x48 : 0x18,
    }
}

layout! {
    /// `alloc_transport_domain_in`; offsets and widths as in DPDK `drivers/common/mlx5/mlx5_prm.h`.
    pub alloc_transport_domain_in: 0x80 {
        opcode @ 0x0 : 0x10,
        uid @ 0x10 : 0x10,
        op_mod @ 0x30 : 0x10,
    }
}

layout! {
    /// `alloc_transport_domain_out`; offsets and widths as in DPDK `drivers/common/mlx5/mlx5_prm.h`.
    pub alloc_transport_domain_out: 0x80 {
        status @ 0x0 : 0x8,
        syndrome @ 0x20 : 0x20,
        transport_domain @ 0x48 : 0x18,
    }
}

layout! {
    /// `mkc`; offsets and widths as in snap-rdma `src/mlx5_ifc.h`.
    pub mkc: 0x200 {
        free @ 0x1 : 0x1,
        access_mode_4_2 @ 0x3 : 0x3,
        relaxed_ordering_write @ 0xd : 0x1,
        small_fence_on_rdma_read_response @ 0xf : 0x1,
        umr_en @ 0x10 : 0x1,
        a @ 0x11 : 0x1,
        rw @ 0x12 : 0x1,
        rr @ 0x13 : 0x1,
        lw @ 0x14 : 0x1,
        lr @ 0x15 : 0x1,
        access_mode_1_0 @ 0x16 : 0x2,
        qpn @ 0x20 : 0x18,
        mkey_7_0 @ 0x38 : 0x8,
        length64 @ 0x60 : 0x1,
        bsf_en @ 0x61 : 0x1,
        sync_umr @ 0x62 : 0x1,
        expected_sigerr_count @ 0x65 : 0x1,
        en_rinval @ 0x67 : 0x1,
        pd @ 0x68 : 0x18,
        start_addr @ 0x80 : 0x40,
        len @ 0xc0 : 0x40,
        bsf_octword_size @ 0x100 : 0x20,
        bsf_handle_47_32 @ 0x130 : 0x10,
        bsf_handle_31_0 @ 0x140 : 0x20,
        crossing_target_vhca_id @ 0x180 : 0x10,
        translations_octword_size_crossing_target_mkey @ 0x1a0 : 0x20,
        relaxed_ordering_read @ 0x1d9 : 0x1,
        // 6 bits in MLNX_OFED 24.01 and the current kernel; older headers have the low 5 at 0x1db.
        log_page_size @ 0x1da : 0x6,
        crypto_en @ 0x1e3 : 0x2,
        generation_counter @ 0x1f0 : 0x10,
    }
}

layout! {
    /// `create_mkey_in`; offsets and widths as in DPDK `drivers/common/mlx5/mlx5_prm.h`.
    pub create_mkey_in: 0x880 {
        opcode @ 0x0 : 0x10,
        uid @ 0x10 : 0x10,
        op_mod @ 0x30 : 0x10,
        pg_access @ 0x60 : 0x1,
        /// The mkey is backed by a UMEM (rdma-core `providers/mlx5/mlx5_ifc.h`).
        mkey_umem_valid @ 0x61 : 0x1,
        memory_key_mkey_entry @ 0x80 : mkc,
        translations_octword_actual_size @ 0x300 : 0x20,
        mkey_umem_id @ 0x320 : 0x20,
        mkey_umem_offset @ 0x340 : 0x40,
        klm_pas_mtt @ 0x880 : [0x20; flex],
    }
}

layout! {
    /// `create_mkey_out`; offsets and widths as in rdma-core `providers/mlx5/mlx5_ifc.h`.
    pub create_mkey_out: 0x80 {
        status @ 0x0 : 0x8,
        syndrome @ 0x20 : 0x20,
        mkey_index @ 0x48 : 0x18,
    }
}
