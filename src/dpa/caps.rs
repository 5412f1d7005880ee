//! What the DPA offers (FlexIO reads the same from the device before `flexio_process_create`).
//!
//! [`DpaCaps::query`] sends QUERY_HCA_CAP for the general page and, when the general page's
//! `apu` bit (the PRM's `dpa`, docs/sources.md §3) is set, the DPA page (type 0x24). A device without
//! the bit, or without the DPA general object types, is [`DpaError::NotSupported`].
//!
//! # EU topology (an assumption)
//!
//! No public field of the DPA capability page gives the number of cores or of EUs per core.
//! FlexIO documents BlueField-3's DPA as 16 cores x 16 EUs (256 EUs, 2 of them reserved for
//! the OS, docs/sources.md §4), and the model's `bf3` profile runs the same 16 x 16. [`EuTopology`]
//! is therefore [`EuTopology::BLUEFIELD3`] whenever `dpa_platform_version` is 1 (the only
//! version seen); a capture of the real page that names the topology corrects this here.

use std::sync::Arc;

use crate::devx::{self, Devx};
use crate::mlx5::caps::DpaCaps as RawDpaCaps;

use super::DpaError;

/// Cores and execution units of the DPA.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EuTopology {
    pub cores: u32,
    pub eus_per_core: u32,
    /// EUs the DPA OS keeps for itself (not available to [`super::thread::Affinity::Strict`]).
    pub reserved_eus: u32,
}

impl EuTopology {
    /// BlueField-3: 16 cores x 16 EUs, 2 reserved (FlexIO; docs/sources.md §4). Assumed, see the
    /// module documentation.
    pub const BLUEFIELD3: EuTopology = EuTopology {
        cores: 16,
        eus_per_core: 16,
        reserved_eus: 2,
    };

    /// All EUs.
    pub fn total_eus(&self) -> u32 {
        self.cores * self.eus_per_core
    }

    /// EUs a thread may be placed on.
    pub fn usable_eus(&self) -> u32 {
        self.total_eus().saturating_sub(self.reserved_eus)
    }
}

/// The DPA's limits, decoded from the DPA capability page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DpaCaps {
    pub topology: EuTopology,
    /// Processes at once (`max_dpa_processes`).
    pub max_processes: u32,
    /// Threads in one process (`1 << log_max_dpa_threads_per_process`).
    pub max_threads_per_process: u64,
    /// Threads on the device (`1 << log_max_dpa_thread`).
    pub max_threads: u64,
    /// Outboxes (`1 << log_max_dpa_outbox`).
    pub max_outboxes: u64,
    /// Windows (`1 << log_max_dpa_window`).
    pub max_windows: u64,
    /// DPA_MEM allocation granule (`dpa_mem_block_size`).
    pub mem_block_size: u64,
    /// Memory one process may use: data, heap and DPA_MEM blocks
    /// (`dpa_mem_block_size << log_max_num_dpa_mem_blocks`).
    pub process_mem_bytes: u64,
    /// Threads per EU group (`max_num_dpa_thread_per_group`).
    pub max_threads_per_group: u32,
    /// Affinity to one EU / to an EU group is supported.
    pub affinity_strict: bool,
    pub affinity_group: bool,
    pub platform_version: u16,
    pub os_api_version: u32,
    /// The function queried (`cmd_hca_cap.vhca_id`; 0 when decoded from a page alone).
    pub vhca_id: u16,
    /// The page as decoded by [`crate::mlx5::caps`].
    pub raw: RawDpaCaps,
}

fn pow2(log: u8) -> u64 {
    1u64 << log.min(63)
}

impl DpaCaps {
    /// Queries the device.
    ///
    /// # Errors
    /// [`DpaError::NotSupported`] without a DPA; transport or firmware errors.
    pub fn query(dev: &Arc<dyn Devx>) -> Result<DpaCaps, DpaError> {
        let caps = devx::query_caps(dev.as_ref())?;
        if !caps.general.apu {
            return Err(DpaError::NotSupported(
                "the device reports no DPA (apu = 0)",
            ));
        }
        if !caps.has_dpa() {
            return Err(DpaError::NotSupported(
                "the device lacks the DPA capability page or the DPA object types",
            ));
        }
        let Some(d) = caps.dpa else {
            return Err(DpaError::NotSupported("no DPA capability page"));
        };
        Ok(DpaCaps {
            vhca_id: caps.general.vhca_id,
            ..DpaCaps::from_raw(d)
        })
    }

    /// Derives the limits from a decoded page.
    pub fn from_raw(d: RawDpaCaps) -> DpaCaps {
        DpaCaps {
            topology: EuTopology::BLUEFIELD3,
            max_processes: u32::from(d.max_dpa_processes),
            max_threads_per_process: pow2(d.log_max_dpa_threads_per_process),
            max_threads: pow2(d.log_max_dpa_thread),
            max_outboxes: pow2(d.log_max_dpa_outbox),
            max_windows: pow2(d.log_max_dpa_window),
            mem_block_size: u64::from(d.dpa_mem_block_size),
            process_mem_bytes: d.process_mem_bytes(),
            max_threads_per_group: u32::from(d.max_num_dpa_thread_per_group),
            affinity_strict: d.thread_affinity_single_hart,
            affinity_group: d.thread_affinity_hart_group,
            platform_version: d.dpa_platform_version,
            os_api_version: d.dpa_os_api_version,
            vhca_id: 0,
            raw: d,
        }
    }
}
