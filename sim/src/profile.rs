//! Capability profiles: what the model says it is when asked with QUERY_HCA_CAP.
//!
//! A profile is the capability pages themselves (built with the driver's PRM layouts) plus
//! the few facts the pages do not carry (DPA topology, MAC and IPv4 address). The firmware
//! model reads its limits from the pages, so a test can shrink a limit with
//! [`Profile::set_general`] and watch the model refuse.
//!
//! Values are the model's, chosen to be BlueField-3-like (or ConnectX-7-like): they are not
//! read from a real device. The DPA page values are provisional like the page layout.

use mlx5_dpa::mlx5::layout::{Field, View, ViewMut};
use mlx5_dpa::mlx5::layouts::{
    atomic_caps, cmd_hca_cap, cmd_hca_cap_2, dpa::obj_type, dpa_cap, flow_table_nic_cap,
    flow_table_prop_layout, per_protocol_networking_offload_caps, roce_caps,
};

/// Bytes of one capability page (the `capability` field of `query_hca_cap_out`).
pub const CAP_PAGE_BYTES: usize = 0x1000;

/// A device identity and its capability pages.
#[derive(Debug, Clone)]
pub struct Profile {
    /// Profile name (`bf3`, `cx7`).
    pub name: &'static str,
    /// General device capabilities (type 0).
    pub general: Vec<u8>,
    /// General device capabilities 2 (type 0x20).
    pub general_2: Vec<u8>,
    /// Ethernet offloads (type 0x1, `per_protocol_networking_offload_caps`).
    pub eth_offloads: Vec<u8>,
    /// RoCE (type 0x4, `roce_caps`).
    pub roce: Vec<u8>,
    /// Atomic operations (type 0x3, `atomic_caps`).
    pub atomic: Vec<u8>,
    /// Device memory (type 0xf, `device_mem_cap`): none, so the page is zero.
    pub device_mem: Vec<u8>,
    /// NIC flow tables (type 0x7, `flow_table_nic_cap`).
    pub flow_table_nic: Vec<u8>,
    /// DPA capabilities (type 0x24), when the device has a DPA.
    pub dpa: Option<Vec<u8>>,
    /// DPA cores.
    pub dpa_cores: u32,
    /// Execution units (harts) per DPA core.
    pub dpa_eus_per_core: u32,
    /// Completion vectors (EQs) that QUERY_EQN can name.
    pub comp_vectors: u32,
    /// The port's MAC address.
    pub mac: [u8; 6],
    /// The port's IPv4 address: RoCE v2 source address and GID table entry 0 (as
    /// `::ffff:a.b.c.d`).
    pub ipv4: [u8; 4],
    /// This function's vhca_id.
    pub vhca_id: u16,
    /// Instructions one DPA activation may retire before the watchdog stops it (the model's
    /// setting; tests lower it).
    pub dpa_insn_budget: u64,
    /// DPA Application Authentication (seed: "DPA Authentication Enablement"): the root
    /// certificates (DER) the device trusts, as its owner loads them. Empty (the default):
    /// authentication disabled, any image runs; otherwise DPA_PROCESS creation requires a
    /// signature that [`mlx5_dpa::image::auth::verify`] finds valid against one of them.
    pub dpa_auth_roots: Vec<Vec<u8>>,
}

/// The general object types the model implements (bit N of `general_obj_types`).
pub const MODEL_OBJ_TYPES_DPA: [u16; 8] = [
    obj_type::DPA_MEM,
    obj_type::DPA_PROCESS,
    obj_type::DPA_THREAD,
    obj_type::DPA_OUTBOX,
    obj_type::DB_CQ_MAPPING,
    obj_type::DPA_EQ,
    obj_type::DPA_WINDOW,
    obj_type::DPA_UAR,
];

impl Profile {
    /// Profile names, for `--sim=NAME`.
    pub const NAMES: [&'static str; 2] = ["bf3", "cx7"];

    /// Looks a profile up by name.
    pub fn by_name(name: &str) -> Option<Profile> {
        match name {
            "bf3" => Some(Self::bf3()),
            "cx7" => Some(Self::cx7()),
            _ => None,
        }
    }

    /// A BlueField-3-like device: ConnectX-7 class NIC plus a DPA of 16 cores x 16 EUs.
    pub fn bf3() -> Profile {
        let mut p = Self::nic("bf3", true);
        let mut dpa = vec![0u8; CAP_PAGE_BYTES];
        {
            let mut v = ViewMut::<dpa_cap::Layout>::new(&mut dpa).expect("cap page size");
            use dpa_cap as d;
            v.set(d::thread_affinity_single_hart, 1);
            v.set(d::thread_affinity_hart_group, 1);
            // 2^8 blocks of 1 MiB: 256 MiB per process.
            v.set(d::log_max_num_dpa_mem_blocks, 8);
            v.set(d::dpa_mem_block_size, 1 << 20);
            v.set(d::process_win_primary, 1);
            v.set(d::log_max_dpa_mem, 28);
            v.set(d::log_max_dpa_threads_per_process, 8);
            v.set(d::log_max_dpa_process, 6);
            v.set(d::max_dpa_processes, 64);
            // "DPA threads are an actual hardware resource and are, therefore, limited in number
            // to 256" (DPA Subsystem guide, DOCA DPA limitations).
            v.set(d::log_max_dpa_thread, 8);
            v.set(d::log_max_dpa_outbox, 10);
            v.set(d::max_num_dpa_thread_per_group, 16);
            v.set(d::log_max_dpa_window, 10);
            v.set(d::dpa_platform_version, 1);
            v.set(d::dpa_os_api_version, 1);
        }
        p.dpa = Some(dpa);
        p.dpa_cores = 16;
        p.dpa_eus_per_core = 16;
        p
    }

    /// A ConnectX-7-like NIC without a DPA.
    pub fn cx7() -> Profile {
        Self::nic("cx7", false)
    }

    fn nic(name: &'static str, dpa: bool) -> Profile {
        let mut general = vec![0u8; CAP_PAGE_BYTES];
        {
            let mut v = ViewMut::<cmd_hca_cap::Layout>::new(&mut general).expect("cap page size");
            use cmd_hca_cap as c;
            for (f, val) in [
                (c::hca_cap_2.untyped(), 1),
                (c::log_max_srq_sz.untyped(), 15),
                (c::log_max_qp_sz.untyped(), 15),
                (c::log_max_qp.untyped(), 17),
                (c::log_max_cq_sz.untyped(), 22),
                (c::log_max_cq.untyped(), 18),
                (c::log_max_eq_sz.untyped(), 22),
                (c::log_max_eq.untyped(), 7),
                (c::log_max_mkey.untyped(), 20),
                (c::log_max_mrw_sz.untyped(), 48),
                (c::log_max_klm_list_size.untyped(), 16),
                (c::log_max_ra_req_qp.untyped(), 4),
                (c::log_max_ra_res_qp.untyped(), 4),
                // RTS2RTS takes a UDP source port (opt_param_mask_95_32; fw/queues.rs).
                (c::rts2rts_qp_udp_sport.untyped(), 1),
                (c::cq_oi.untyped(), 1),
                (c::cq_moderation.untyped(), 1),
                (c::cq_period_mode_modify.untyped(), 1),
                // CQE compression of 64-byte receive CQEs, hash-format mini CQEs
                // (datapath/cq.rs); sessions of up to 64 CQEs (the model's choice).
                (c::cqe_compression.untyped(), 1),
                (c::cqe_compression_max_num.untyped(), 64),
                (c::max_qp_cnt.untyped(), 64),
                // Flow counters, one per ALLOC_FLOW_COUNTER (no bulk allocation): 2^24.
                (c::max_flow_counter_31_16.untyped(), 0x100),
                (c::nic_flow_table.untyped(), 1),
                (c::port_type.untyped(), 1), // Ethernet
                (c::num_ports.untyped(), 1),
                (c::log_max_msg.untyped(), 30),
                (c::cqe_version.untyped(), 1),
                (c::eth_net_offloads.untyped(), 1),
                (c::roce.untyped(), 1),
                (c::rc.untyped(), 1),
                // Send queues take WAIT WQEs: on data (RC, datapath/rc/wqe.rs) and on time
                // (Ethernet and RC, datapath/eth.rs).
                (c::wait_on_data.untyped(), 1),
                (c::wait_on_time.untyped(), 1),
                (c::ud.untyped(), 1),
                // QPs may block their own multicast loopback: the model has no multicast, so
                // none ever comes back.
                (c::block_lb_mc.untyped(), 1),
                (c::uar_4k.untyped(), 1),
                (c::log_pg_sz.untyped(), 12),
                (c::bf.untyped(), 1),
                (c::log_bf_reg_size.untyped(), 9),
                (c::max_wqe_sz_sq.untyped(), 1024),
                (c::max_wqe_sz_rq.untyped(), 1024),
                (c::log_max_transport_domain.untyped(), 16),
                (c::log_max_pd.untyped(), 20),
                (c::log_max_rq.untyped(), 17),
                (c::log_max_sq.untyped(), 17),
                (c::log_max_tir.untyped(), 16),
                (c::log_max_tis.untyped(), 16),
                (c::basic_cyclic_rcv_wqe.untyped(), 1),
                (c::log_max_rmp.untyped(), 17),
                (c::log_max_rqt.untyped(), 16),
                (c::log_max_rqt_size.untyped(), 9),
                (c::log_max_tis_per_sq.untyped(), 0),
                (c::log_max_stride_sz_rq.untyped(), 13),
                (c::log_min_stride_sz_rq.untyped(), 4),
                (c::log_max_stride_sz_sq.untyped(), 6),
                (c::log_min_stride_sz_sq.untyped(), 6),
                (c::log_max_wq_sz.untyped(), 17),
                (c::log_uar_page_sz.untyped(), 0),
                (c::num_of_uars_per_page.untyped(), 1),
                (c::max_num_eqs.untyped(), 128),
                (c::device_frequency_mhz.untyped(), 1000),
                (c::vhca_id.untyped(), 2),
                (c::apu.untyped(), u64::from(dpa)),
            ] {
                v.set(f, val);
            }
            let mut types = 0u64;
            if dpa {
                for t in MODEL_OBJ_TYPES_DPA {
                    if t < 64 {
                        types |= 1 << t;
                    }
                }
            }
            v.set(c::general_obj_types, types);
        }
        let mut general_2 = vec![0u8; CAP_PAGE_BYTES];
        {
            let mut v =
                ViewMut::<cmd_hca_cap_2::Layout>::new(&mut general_2).expect("cap page size");
            let mut types = 0u64;
            if dpa {
                for t in MODEL_OBJ_TYPES_DPA {
                    if t >= 64 {
                        types |= 1 << (t - 64);
                    }
                }
            }
            v.set(cmd_hca_cap_2::general_obj_types_127_64, types);
            v.set(cmd_hca_cap_2::cross_vhca_object_to_object_supported, 1);
        }
        Profile {
            name,
            general,
            general_2,
            eth_offloads: Self::eth_offloads_page(),
            roce: Self::roce_page(),
            atomic: Self::atomic_page(),
            device_mem: vec![0u8; CAP_PAGE_BYTES],
            flow_table_nic: Self::flow_table_nic_page(),
            dpa: None,
            dpa_cores: 0,
            dpa_eus_per_core: 0,
            comp_vectors: 4,
            mac: [0x02, 0x00, 0x5e, 0x00, 0x00, 0x01],
            // TEST-NET-1 (RFC 5737): an address that belongs to no real network.
            ipv4: [192, 0, 2, 1],
            vhca_id: 2,
            // The watchdog bound DOCA reports (`mlx5_dpa::mlx5::caps::DPA_KERNEL_MAX_RUN_TIME`,
            // provisional), at one instruction per nanosecond.
            dpa_insn_budget: mlx5_dpa::mlx5::caps::DPA_KERNEL_MAX_RUN_TIME.as_nanos() as u64,
            dpa_auth_roots: Vec::new(),
        }
    }

    /// The Ethernet offloads the datapath models: none of the checksum, LSO, LRO, VLAN or
    /// multi-packet send offloads (`datapath/eth.rs` sends a frame as its segments lay it out),
    /// so a client such as DPDK takes its plain paths. Headers need not be inlined.
    fn eth_offloads_page() -> Vec<u8> {
        use per_protocol_networking_offload_caps as e;
        let mut page = vec![0u8; CAP_PAGE_BYTES];
        let mut v = ViewMut::<e::Layout>::new(&mut page).expect("cap page size");
        // 2: MLX5_CAP_INLINE_MODE_NOT_REQUIRED (DPDK `mlx5_prm.h`), as on ConnectX-5 and later.
        v.set(e::wqe_inline_mode, 2);
        page
    }

    /// RoCE: the source UDP port range RoCE v2 frames use (`datapath/rc`; IANA's 4791 is the
    /// destination).
    fn roce_page() -> Vec<u8> {
        let mut page = vec![0u8; CAP_PAGE_BYTES];
        let mut v = ViewMut::<roce_caps::Layout>::new(&mut page).expect("cap page size");
        v.set(roce_caps::r_roce_min_src_udp_port, 0xc000);
        v.set(roce_caps::r_roce_max_src_udp_port, 0xffff);
        page
    }

    /// Atomics as the RC responder performs them (`datapath/rc/responder.rs`): 8-byte
    /// compare-and-swap and fetch-and-add on the target in host byte order
    /// (`atomic_req_8B_endianness_mode` 1, Linux `MLX5_ATOMIC_REQ_MODE_HOST_ENDIANNESS`).
    fn atomic_page() -> Vec<u8> {
        let mut page = vec![0u8; CAP_PAGE_BYTES];
        let mut v = ViewMut::<atomic_caps::Layout>::new(&mut page).expect("cap page size");
        v.set(atomic_caps::atomic_req_8B_endianness_mode, 1);
        v.set(atomic_caps::supported_atomic_req_8B_endianness_mode_1, 1);
        v.set(atomic_caps::atomic_operations, 0b11);
        v.set(atomic_caps::atomic_size_qp, 1 << 3);
        page
    }

    /// NIC flow tables: receive tables as `fw/steering.rs` models them (flow tags, a settable
    /// root, up to 16 destinations, a flow counter, no software ownership); no transmit tables.
    fn flow_table_nic_page() -> Vec<u8> {
        use flow_table_nic_cap as n;
        use flow_table_prop_layout as p;
        let mut page = vec![0u8; CAP_PAGE_BYTES];
        let mut v = ViewMut::<n::Layout>::new(&mut page).expect("cap page size");
        let rx = n::flow_table_properties_nic_receive;
        for (f, val) in [
            (p::ft_support.untyped(), 1),
            (p::flow_tag.untyped(), 1),
            (p::flow_counter.untyped(), 1),
            (p::modify_root.untyped(), 1),
            (p::log_max_ft_size.untyped(), 24),
            (p::max_ft_level.untyped(), 63),
            (p::log_max_ft_num.untyped(), 16),
            (p::log_max_destination.untyped(), 4),
            (p::log_max_flow.untyped(), 24),
            (p::log_max_flow_counter.untyped(), 24),
        ] {
            v.set(rx.at(f), val);
        }
        page
    }

    /// A general capability value.
    pub fn cap<T>(&self, f: Field<cmd_hca_cap::Layout, T>) -> u64 {
        View::<cmd_hca_cap::Layout>::new(&self.general)
            .map(|v| v.get(f))
            .unwrap_or(0)
    }

    /// Changes a general capability value (tests shrink limits with this).
    pub fn set_general<T>(&mut self, f: Field<cmd_hca_cap::Layout, T>, value: u64) {
        if let Ok(mut v) = ViewMut::<cmd_hca_cap::Layout>::new(&mut self.general) {
            v.set(f, value);
        }
    }

    /// A DPA capability value (0 without a DPA).
    pub fn dpa_cap<T>(&self, f: Field<dpa_cap::Layout, T>) -> u64 {
        self.dpa
            .as_deref()
            .and_then(|p| View::<dpa_cap::Layout>::new(p).ok())
            .map(|v| v.get(f))
            .unwrap_or(0)
    }

    /// Changes a DPA capability value.
    pub fn set_dpa<T>(&mut self, f: Field<dpa_cap::Layout, T>, value: u64) {
        if let Some(p) = self.dpa.as_deref_mut() {
            if let Ok(mut v) = ViewMut::<dpa_cap::Layout>::new(p) {
                v.set(f, value);
            }
        }
    }

    /// Whether general object type `t` is supported.
    pub fn supports_obj_type(&self, t: u16) -> bool {
        if t < 64 {
            self.cap(cmd_hca_cap::general_obj_types) >> t & 1 == 1
        } else if t < 128 {
            View::<cmd_hca_cap_2::Layout>::new(&self.general_2)
                .map(|v| v.get(cmd_hca_cap_2::general_obj_types_127_64) >> (t - 64) & 1 == 1)
                .unwrap_or(false)
        } else {
            false
        }
    }

    /// Number of DPA execution units.
    pub fn dpa_eus(&self) -> u32 {
        self.dpa_cores * self.dpa_eus_per_core
    }

    /// Bytes of DPA memory one process may use (block size x 2^blocks, docs/sources.md §3).
    pub fn dpa_process_memory(&self) -> u64 {
        self.dpa_cap(dpa_cap::dpa_mem_block_size)
            << self.dpa_cap(dpa_cap::log_max_num_dpa_mem_blocks)
    }
}
