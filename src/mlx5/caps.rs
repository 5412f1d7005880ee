//! Device capabilities decoded from QUERY_HCA_CAP pages.
//!
//! [`Caps`] holds the fields later layers need, decoded from the current values of the general
//! page (type 0), the general page 2 (type 0x20) and, when the device has one, the DPA page
//! (type 0x24). The raw pages are kept so that any other field can be read by name with a
//! [`View`].

use super::cmd::QueryHcaCap;

/// How long a DPA activation (a DOCA kernel) may run before the DPA's watchdog stops it.
/// Provisional: the DPA guide states a limit exists but no public source gives BlueField-3's
/// value. DOCA reports it (`doca_dpa_get_kernel_max_run_time`); the device model's watchdog
/// is the matching instruction budget (50,000,000, one instruction a nanosecond). Here, below
/// both, so that the driver and the model share one number.
pub const DPA_KERNEL_MAX_RUN_TIME: std::time::Duration = std::time::Duration::from_millis(50);
use super::layout::{Layout, LayoutError, View};
use super::layouts::{cmd_hca_cap, cmd_hca_cap_2, dpa_cap, obj_type};

/// General device capabilities (`cmd_hca_cap`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GeneralCaps {
    /// `general_obj_types`: bit N = general object type N supported.
    pub general_obj_types: u64,
    /// The DPA is present (`apu` at 0x688).
    pub apu: bool,
    pub log_max_cq: u8,
    pub log_max_cq_sz: u8,
    pub log_max_eq: u8,
    pub log_max_eq_sz: u8,
    pub log_max_sq: u8,
    pub log_max_rq: u8,
    pub log_max_qp: u8,
    pub log_max_qp_sz: u8,
    pub log_max_wq_sz: u8,
    pub log_max_pd: u8,
    pub log_max_mkey: u8,
    pub log_max_tis: u8,
    pub log_max_tir: u8,
    pub log_max_rmp: u8,
    pub log_max_rqt: u8,
    pub log_max_transport_domain: u8,
    /// Number of UARs (`uar_sz` is log2 of UAR page size in 4 KiB units).
    pub uar_sz: u8,
    pub log_bf_reg_size: u8,
    pub bf: bool,
    pub cqe_version: u8,
    pub port_type: u8,
    pub num_ports: u8,
    pub vhca_id: u16,
    pub log_max_msg: u8,
}

/// Capabilities of the DPA page (`dpa_cap`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DpaCaps {
    pub max_dpa_processes: u16,
    pub log_max_dpa_thread: u8,
    pub log_max_dpa_process: u8,
    pub log_max_dpa_threads_per_process: u8,
    pub log_max_dpa_outbox: u8,
    pub log_max_dpa_window: u8,
    pub log_max_dpa_mem: u8,
    pub dpa_mem_block_size: u32,
    pub log_max_num_dpa_mem_blocks: u8,
    pub max_num_dpa_thread_per_group: u16,
    pub thread_affinity_single_hart: bool,
    pub thread_affinity_hart_group: bool,
    pub dpa_coredump_type: u8,
    pub dpa_platform_version: u16,
    pub dpa_os_api_version: u32,
}

impl DpaCaps {
    /// DPA memory available to one process: `dpa_mem_block_size << log_max_num_dpa_mem_blocks`
    /// (snap-rdma `snap_dpa.c`; docs/sources.md §3).
    pub fn process_mem_bytes(&self) -> u64 {
        u64::from(self.dpa_mem_block_size) << self.log_max_num_dpa_mem_blocks.min(63)
    }
}

/// Everything QUERY_HCA_CAP told us.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caps {
    pub general: GeneralCaps,
    /// `cmd_hca_cap_2.general_obj_types_127_64`: bit N-64 = type N supported.
    pub general_obj_types_127_64: u64,
    /// Present when the device reports a DPA (`apu`) and answered the DPA page.
    pub dpa: Option<DpaCaps>,
    /// The raw pages, for fields not decoded here.
    pub raw_general: Vec<u8>,
    pub raw_general_2: Option<Vec<u8>>,
    pub raw_dpa: Option<Vec<u8>>,
}

impl Caps {
    /// Queries to send: general page, page 2, and the DPA page (the DPA one only makes sense
    /// when the general page reports `apu`).
    pub const QUERIES: [QueryHcaCap; 3] = [
        QueryHcaCap {
            cap_type: QueryHcaCap::GENERAL,
            current: true,
        },
        QueryHcaCap {
            cap_type: QueryHcaCap::GENERAL_2,
            current: true,
        },
        QueryHcaCap {
            cap_type: QueryHcaCap::DPA,
            current: true,
        },
    ];

    /// Decodes the pages.
    ///
    /// # Errors
    /// A page shorter than its layout.
    pub fn decode(
        general: &[u8],
        general_2: Option<&[u8]>,
        dpa: Option<&[u8]>,
    ) -> Result<Caps, LayoutError> {
        let g = View::<cmd_hca_cap::Layout>::new(general)?;
        let b = |v: u64| v != 0;
        let u8_ = |v: u64| v as u8;
        let general_caps = GeneralCaps {
            general_obj_types: g.get(cmd_hca_cap::general_obj_types),
            apu: b(g.get(cmd_hca_cap::apu)),
            log_max_cq: u8_(g.get(cmd_hca_cap::log_max_cq)),
            log_max_cq_sz: u8_(g.get(cmd_hca_cap::log_max_cq_sz)),
            log_max_eq: u8_(g.get(cmd_hca_cap::log_max_eq)),
            log_max_eq_sz: u8_(g.get(cmd_hca_cap::log_max_eq_sz)),
            log_max_sq: u8_(g.get(cmd_hca_cap::log_max_sq)),
            log_max_rq: u8_(g.get(cmd_hca_cap::log_max_rq)),
            log_max_qp: u8_(g.get(cmd_hca_cap::log_max_qp)),
            log_max_qp_sz: u8_(g.get(cmd_hca_cap::log_max_qp_sz)),
            log_max_wq_sz: u8_(g.get(cmd_hca_cap::log_max_wq_sz)),
            log_max_pd: u8_(g.get(cmd_hca_cap::log_max_pd)),
            log_max_mkey: u8_(g.get(cmd_hca_cap::log_max_mkey)),
            log_max_tis: u8_(g.get(cmd_hca_cap::log_max_tis)),
            log_max_tir: u8_(g.get(cmd_hca_cap::log_max_tir)),
            log_max_rmp: u8_(g.get(cmd_hca_cap::log_max_rmp)),
            log_max_rqt: u8_(g.get(cmd_hca_cap::log_max_rqt)),
            log_max_transport_domain: u8_(g.get(cmd_hca_cap::log_max_transport_domain)),
            uar_sz: u8_(g.get(cmd_hca_cap::uar_sz)),
            log_bf_reg_size: u8_(g.get(cmd_hca_cap::log_bf_reg_size)),
            bf: b(g.get(cmd_hca_cap::bf)),
            cqe_version: u8_(g.get(cmd_hca_cap::cqe_version)),
            port_type: u8_(g.get(cmd_hca_cap::port_type)),
            num_ports: u8_(g.get(cmd_hca_cap::num_ports)),
            vhca_id: g.value(cmd_hca_cap::vhca_id),
            log_max_msg: u8_(g.get(cmd_hca_cap::log_max_msg)),
        };
        let types_hi = match general_2 {
            Some(p) => {
                View::<cmd_hca_cap_2::Layout>::new(p)?.get(cmd_hca_cap_2::general_obj_types_127_64)
            }
            None => 0,
        };
        let dpa_caps = match dpa {
            Some(p) if general_caps.apu => {
                let d = View::<dpa_cap::Layout>::new(p)?;
                Some(DpaCaps {
                    max_dpa_processes: d.value(dpa_cap::max_dpa_processes),
                    log_max_dpa_thread: u8_(d.get(dpa_cap::log_max_dpa_thread)),
                    log_max_dpa_process: u8_(d.get(dpa_cap::log_max_dpa_process)),
                    log_max_dpa_threads_per_process: u8_(
                        d.get(dpa_cap::log_max_dpa_threads_per_process)
                    ),
                    log_max_dpa_outbox: u8_(d.get(dpa_cap::log_max_dpa_outbox)),
                    log_max_dpa_window: u8_(d.get(dpa_cap::log_max_dpa_window)),
                    log_max_dpa_mem: u8_(d.get(dpa_cap::log_max_dpa_mem)),
                    dpa_mem_block_size: d.value(dpa_cap::dpa_mem_block_size),
                    log_max_num_dpa_mem_blocks: u8_(d.get(dpa_cap::log_max_num_dpa_mem_blocks)),
                    max_num_dpa_thread_per_group: d.get(dpa_cap::max_num_dpa_thread_per_group)
                        as u16,
                    thread_affinity_single_hart: b(d.get(dpa_cap::thread_affinity_single_hart)),
                    thread_affinity_hart_group: b(d.get(dpa_cap::thread_affinity_hart_group)),
                    dpa_coredump_type: u8_(d.get(dpa_cap::dpa_coredump_type)),
                    dpa_platform_version: d.value(dpa_cap::dpa_platform_version),
                    dpa_os_api_version: d.value(dpa_cap::dpa_os_api_version),
                })
            }
            _ => None,
        };
        Ok(Caps {
            general: general_caps,
            general_obj_types_127_64: types_hi,
            dpa: dpa_caps,
            raw_general: general[..cmd_hca_cap::Layout::SIZE_BYTES].to_vec(),
            raw_general_2: general_2.map(<[u8]>::to_vec),
            raw_dpa: dpa.map(<[u8]>::to_vec),
        })
    }

    /// Whether general object type `t` is supported.
    pub fn supports_obj_type(&self, t: u16) -> bool {
        match t {
            0..=63 => self.general.general_obj_types >> t & 1 == 1,
            64..=127 => self.general_obj_types_127_64 >> (t - 64) & 1 == 1,
            _ => false,
        }
    }

    /// Whether the device has a usable DPA: the `apu` bit, the DPA page, and the process,
    /// thread and memory object types (snap-rdma `snap_dpa_enabled` checks the same types).
    pub fn has_dpa(&self) -> bool {
        self.dpa.is_some()
            && [
                obj_type::DPA_MEM,
                obj_type::DPA_PROCESS,
                obj_type::DPA_THREAD,
            ]
            .into_iter()
            .all(|t| self.supports_obj_type(t))
    }
}
