//! DOCA DPA test helpers: a context's `rdma_kernel` launches and `poll_kernel` polls
//! (`fw-blobs/src/doca_kernels.c`), each waited for through a sync event.

use std::time::Duration;

use mlx5_dpa::doca::{CompletionContext, DocaError, Dpa, KernelArg, SyncEvent, SyncEventAttr};
use mlx5_dpa::dpa::DpaBuf;

/// How long one launch may take.
pub const WAIT: Duration = Duration::from_secs(20);
const ALL: u64 = u64::MAX;

/// A context's kernels and their events.
pub struct Side {
    pub dpa: Dpa,
    done: SyncEvent,
    polled: SyncEvent,
    out: DpaBuf,
    launched: u64,
    polls: u64,
}

impl Side {
    pub fn new(dpa: Dpa) -> Side {
        let done = dpa.sync_event(SyncEventAttr::dpa_to_cpu()).unwrap();
        let polled = dpa.sync_event(SyncEventAttr::dpa_to_cpu()).unwrap();
        let out = dpa.mem_alloc(32).unwrap();
        Side {
            dpa,
            done,
            polled,
            out,
            launched: 0,
            polls: 0,
        }
    }

    /// `rdma_kernel` once, waited for.
    pub fn op(&mut self, args: [u64; 8]) -> Result<(), DocaError> {
        self.launched += 1;
        self.dpa.kernel_launch_update_add(
            None,
            Some((&self.done, 1)),
            1,
            "rdma_kernel",
            &args.map(KernelArg::U64),
        )?;
        self.done.wait_gt(self.launched - 1, ALL, WAIT).map(|_| ())
    }

    /// One completion of `comp`: (type, immediate, user data, wr index).
    pub fn poll(&mut self, comp: &CompletionContext) -> [u64; 4] {
        self.polls += 1;
        self.dpa
            .kernel_launch_update_set(
                None,
                None,
                1,
                "poll_kernel",
                &[
                    comp.dpa_handle().unwrap(),
                    self.out.daddr(),
                    self.polled.dpa_handle().unwrap(),
                ]
                .map(KernelArg::U64),
            )
            .unwrap();
        self.polled.wait_gt(self.polls - 1, ALL, WAIT).unwrap();
        let mut b = [0u8; 32];
        self.dpa.d2h_memcpy(&mut b, self.out.daddr()).unwrap();
        std::array::from_fn(|i| u64::from_le_bytes(b[8 * i..8 * i + 8].try_into().unwrap()))
    }
}
