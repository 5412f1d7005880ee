//! Kernel launches: argument encoding (the RISC-V calling convention), the launch block the
//! runtime's `__doca_dpa_kernel_entry` reads (`fw-blobs/include/mlx5_dpa_doca.h`), and the
//! context's launcher thread.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::dpa::thread::{EventHandler, EventHandlerAttr, ThreadState};
use crate::dpa::{DpaBuf, Process, StepExt};
use crate::sync::lock;

use super::shared::Shared;
use super::sync_event::EventSlot;
use super::DocaError;

/// One kernel argument, as the kernel's C signature has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KernelArg {
    /// Any integer or pointer argument (a sync-event handle, a DPA address, a count): one
    /// register.
    U64(u64),
    /// A struct passed by value, as its bytes in DPA layout (little-endian, C alignment). Up to
    /// 8 bytes it takes one register, up to 16 two; a larger one is copied into DPA memory
    /// next to the launch block and passed by reference, as the RISC-V LP64 convention says.
    Bytes(Vec<u8>),
}

impl From<u64> for KernelArg {
    fn from(v: u64) -> KernelArg {
        KernelArg::U64(v)
    }
}

impl From<u32> for KernelArg {
    fn from(v: u32) -> KernelArg {
        KernelArg::U64(u64::from(v))
    }
}

/// Argument registers of a kernel (`a0..a7`); more (or an aggregate split between the last
/// register and the stack) is refused.
pub const MAX_ARG_REGS: usize = 8;

/// Offsets of `struct doca_dpa_launch` (mlx5_dpa_doca.h).
mod block {
    pub(super) const FUNC: usize = 0x00;
    pub(super) const REGS: usize = 0x08;
    pub(super) const NUM_THREADS: usize = 0x48;
    pub(super) const COMP_OP: usize = 0x54;
    pub(super) const COMP_EVENT: usize = 0x58;
    pub(super) const COMP_COUNT: usize = 0x60;
    pub(super) const DONE_HADDR: usize = 0x68;
    pub(super) const DONE_VALUE: usize = 0x70;
    /// The block's size rounded to the 16-byte alignment of what follows it.
    pub(super) const SIZE: usize = 0x80;
}

/// `comp_op` of a launch block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CompOp {
    Set = 1,
    Add = 2,
}

/// Arguments laid out as registers, with the by-reference copies still to be placed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Encoded {
    regs: [u64; MAX_ARG_REGS],
    /// (register, bytes): the register gets the DPA address of its copy.
    by_ref: Vec<(usize, Vec<u8>)>,
}

impl Encoded {
    /// Bytes of DPA memory the launch needs: the block and the copies.
    fn block_len(&self) -> usize {
        block::SIZE
            + self
                .by_ref
                .iter()
                .map(|(_, b)| b.len().next_multiple_of(16))
                .sum::<usize>()
    }
}

/// Lays `args` out as the kernel expects them.
///
/// # Errors
/// [`DocaError::InvalidValue`]: an empty aggregate, or more than [`MAX_ARG_REGS`] registers.
pub(crate) fn encode(args: &[KernelArg]) -> Result<Encoded, DocaError> {
    struct Regs {
        regs: [u64; MAX_ARG_REGS],
        n: usize,
    }
    impl Regs {
        fn put(&mut self, v: u64) -> Result<usize, DocaError> {
            let Some(slot) = self.regs.get_mut(self.n) else {
                return Err(DocaError::InvalidValue(format!(
                    "kernel arguments need more than the {MAX_ARG_REGS} argument registers (no \
                     arguments on the stack)"
                )));
            };
            *slot = v;
            self.n += 1;
            Ok(self.n - 1)
        }
    }
    let word = |b: &[u8]| {
        let mut w = [0u8; 8];
        w[..b.len()].copy_from_slice(b);
        u64::from_le_bytes(w)
    };
    let mut r = Regs {
        regs: [0; MAX_ARG_REGS],
        n: 0,
    };
    let mut by_ref = Vec::new();
    for (i, a) in args.iter().enumerate() {
        match a {
            KernelArg::U64(v) => {
                r.put(*v)?;
            }
            KernelArg::Bytes(b) if b.is_empty() => {
                return Err(DocaError::InvalidValue(format!(
                    "kernel argument {i}: an empty aggregate"
                )))
            }
            KernelArg::Bytes(b) if b.len() <= 8 => {
                r.put(word(b))?;
            }
            KernelArg::Bytes(b) if b.len() <= 16 => {
                // Two registers; with only one left the convention would put the second half
                // on the stack, which the entry does not pass.
                if r.n + 2 > MAX_ARG_REGS {
                    return Err(DocaError::InvalidValue(format!(
                        "kernel argument {i}: a {}-byte aggregate needs two registers, {} left",
                        b.len(),
                        MAX_ARG_REGS - r.n
                    )));
                }
                let (lo, hi) = b.split_at(8);
                r.put(word(lo))?;
                r.put(word(hi))?;
            }
            KernelArg::Bytes(b) => {
                let at = r.put(0)?;
                by_ref.push((at, b.clone()));
            }
        }
    }
    Ok(Encoded {
        regs: r.regs,
        by_ref,
    })
}

/// The launch block and its copies, for DPA address `daddr`.
fn block_bytes(l: &Pending, daddr: u64, done_haddr: u64, done_value: u64) -> Vec<u8> {
    let mut b = vec![0u8; l.args.block_len()];
    let mut regs = l.args.regs;
    let mut at = block::SIZE;
    for (r, bytes) in &l.args.by_ref {
        if let Some(reg) = regs.get_mut(*r) {
            *reg = daddr + at as u64;
        }
        b[at..at + bytes.len()].copy_from_slice(bytes);
        at += bytes.len().next_multiple_of(16);
    }
    let mut put = |off: usize, v: &[u8]| b[off..off + v.len()].copy_from_slice(v);
    put(block::FUNC, &l.func.to_le_bytes());
    for (i, r) in regs.iter().enumerate() {
        put(block::REGS + 8 * i, &r.to_le_bytes());
    }
    put(block::NUM_THREADS, &l.num_threads.to_le_bytes());
    if let Some((op, ev, count)) = &l.comp {
        put(block::COMP_OP, &(*op as u32).to_le_bytes());
        put(block::COMP_EVENT, &ev.haddr().to_le_bytes());
        put(block::COMP_COUNT, &count.to_le_bytes());
    }
    put(block::DONE_HADDR, &done_haddr.to_le_bytes());
    put(block::DONE_VALUE, &done_value.to_le_bytes());
    b
}

/// A launch not yet started.
#[derive(Debug)]
pub(crate) struct Pending {
    pub(crate) func: u64,
    pub(crate) args: Encoded,
    pub(crate) num_threads: u32,
    pub(crate) wait: Option<(Arc<EventSlot>, u64)>,
    pub(crate) comp: Option<(CompOp, Arc<EventSlot>, u64)>,
}

impl Pending {
    fn ready(&self) -> bool {
        match &self.wait {
            None => true,
            Some((ev, threshold)) => ev.counter().load(Ordering::Acquire) > *threshold,
        }
    }
}

/// A started launch.
struct Flight {
    seq: u64,
    done_slot: usize,
    handlers: Vec<EventHandler>,
    _block: DpaBuf,
    _comp: Option<Arc<EventSlot>>,
}

#[derive(Default)]
struct QState {
    pending: VecDeque<Pending>,
    stop: bool,
}

#[derive(Default)]
struct Queue {
    q: Mutex<QState>,
    cv: Condvar,
}

/// What the launcher thread needs of the context.
pub(crate) struct LaunchCtx {
    pub(crate) process: Process,
    pub(crate) shared: Arc<Shared>,
    pub(crate) outbox_id: u32,
    pub(crate) window_id: u32,
}

/// The context's launcher thread.
pub(crate) struct Launcher {
    queue: Arc<Queue>,
    thread: Option<JoinHandle<()>>,
}

/// How long the launcher sleeps between looks while launches wait or run.
const BUSY_POLL: Duration = Duration::from_micros(100);
/// How long it sleeps with nothing to do (a new launch or stop wakes it at once).
const IDLE_POLL: Duration = Duration::from_millis(100);

impl Launcher {
    pub(crate) fn start(ctx: LaunchCtx) -> Result<Launcher, DocaError> {
        let queue = Arc::new(Queue::default());
        let q = Arc::clone(&queue);
        let thread = std::thread::Builder::new()
            .name("doca-dpa-launcher".into())
            .spawn(move || run(&q, &ctx))
            .map_err(|e| DocaError::Fatal(format!("starting the launcher thread: {e}")))?;
        Ok(Launcher {
            queue,
            thread: Some(thread),
        })
    }

    pub(crate) fn submit(&self, p: Pending) {
        lock(&self.queue.q).pending.push_back(p);
        self.queue.cv.notify_all();
    }

    /// Stops the thread (launches not yet started are dropped) and waits for it: it ends
    /// within one poll, then destroys its threads (each destroy bounded by
    /// `dpa::thread::DESTROY_DRAIN_TIMEOUT`).
    pub(crate) fn stop(&mut self) {
        lock(&self.queue.q).stop = true;
        self.queue.cv.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Launcher {
    fn drop(&mut self) {
        self.stop();
    }
}

fn run(queue: &Queue, ctx: &LaunchCtx) {
    let mut idle: Vec<EventHandler> = Vec::new();
    let mut flights: Vec<Flight> = Vec::new();
    let mut seq = 0u64;
    loop {
        // Finished launches give their threads and slots back.
        let mut i = 0;
        while i < flights.len() {
            let f = &flights[i];
            if ctx.shared.done_word(f.done_slot).load(Ordering::Acquire) == f.seq {
                let f = flights.swap_remove(i);
                ctx.shared.give_done_slot(f.done_slot);
                idle.extend(f.handlers);
            } else {
                i += 1;
            }
        }
        let next = {
            let mut q = lock(&queue.q);
            if q.stop {
                break;
            }
            if ctx.shared.failure().is_some() {
                q.pending.clear();
            }
            if q.pending.front().is_some_and(Pending::ready) {
                q.pending.pop_front()
            } else {
                let wait = if q.pending.is_empty() && flights.is_empty() {
                    IDLE_POLL
                } else {
                    BUSY_POLL
                };
                let (q, _) = queue
                    .cv
                    .wait_timeout(q, wait)
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                drop(q);
                None
            }
        };
        if let Some(p) = next {
            seq += 1;
            match dispatch(ctx, &mut idle, p, seq) {
                Ok(f) => flights.push(f),
                Err(e) => ctx.shared.fail(format!("starting a kernel launch: {e}")),
            }
        }
    }
    // Threads still running finish on their own or are stopped by the watchdog; each
    // handler's drop waits (bounded) for that before destroying it.
    drop(flights);
    drop(idle);
}

fn dispatch(
    ctx: &LaunchCtx,
    idle: &mut Vec<EventHandler>,
    p: Pending,
    seq: u64,
) -> Result<Flight, DocaError> {
    let done_slot = ctx.shared.take_done_slot()?;
    let result = (|| {
        let done = ctx.shared.done_word(done_slot);
        done.store(0, Ordering::Release);
        let buf = ctx
            .process
            .alloc(p.args.block_len() as u64)
            .step("allocating the launch block")?;
        let bytes = block_bytes(&p, buf.daddr(), ctx.shared.done_haddr(done_slot), seq);
        ctx.process
            .copy_to_dev(buf.daddr(), &bytes)
            .step("writing the launch block")?;
        let mut handlers = Vec::with_capacity(p.num_threads as usize);
        while handlers.len() < p.num_threads as usize {
            let h = match take_idle(idle)? {
                Some(h) => h,
                None => ctx
                    .process
                    .event_handler(&EventHandlerAttr {
                        default_outbox_id: ctx.outbox_id,
                        default_window_id: ctx.window_id,
                        ..EventHandlerAttr::new(KERNEL_ENTRY, 0)
                    })
                    .step("creating a kernel thread")?,
            };
            handlers.push(h);
        }
        for h in &handlers {
            h.run(buf.daddr()).step("running the kernel threads")?;
        }
        Ok::<_, DocaError>(Flight {
            seq,
            done_slot,
            handlers,
            _block: buf,
            _comp: p.comp.as_ref().map(|(_, ev, _)| Arc::clone(ev)),
        })
    })();
    if result.is_err() {
        ctx.shared.give_done_slot(done_slot);
    }
    result
}

/// The runtime's entry every launch thread runs.
pub(crate) const KERNEL_ENTRY: &str = "__doca_dpa_kernel_entry";

/// An idle pooled thread (one whose last activation has ended), if any.
///
/// # Errors
/// A refused state query: the launch fails with it rather than guess.
fn take_idle(idle: &mut Vec<EventHandler>) -> Result<Option<EventHandler>, DocaError> {
    for i in 0..idle.len() {
        let st = idle[i].state().step("querying a pooled kernel thread")?;
        if st == ThreadState::Idle {
            return Ok(Some(idle.swap_remove(i)));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_follow_the_lp64_convention() {
        let e = encode(&[
            KernelArg::U64(7),
            KernelArg::Bytes(vec![1, 2, 3]),
            KernelArg::Bytes((1..=16).collect()),
            KernelArg::Bytes(vec![9; 48]),
        ])
        .unwrap();
        assert_eq!(e.regs[0], 7);
        assert_eq!(e.regs[1], 0x0003_0201);
        assert_eq!(e.regs[2], u64::from_le_bytes([1, 2, 3, 4, 5, 6, 7, 8]));
        assert_eq!(
            e.regs[3],
            u64::from_le_bytes([9, 10, 11, 12, 13, 14, 15, 16])
        );
        assert_eq!(e.by_ref, [(4, vec![9; 48])]);
        assert_eq!(e.block_len(), block::SIZE + 48);

        // Nine registers, an aggregate split over the last register, an empty aggregate.
        let nine: Vec<KernelArg> = (0..9u64).map(KernelArg::U64).collect();
        assert!(matches!(encode(&nine), Err(DocaError::InvalidValue(_))));
        let mut seven: Vec<KernelArg> = (0..7u64).map(KernelArg::U64).collect();
        seven.push(KernelArg::Bytes(vec![0; 12]));
        assert!(matches!(encode(&seven), Err(DocaError::InvalidValue(_))));
        assert!(matches!(
            encode(&[KernelArg::Bytes(Vec::new())]),
            Err(DocaError::InvalidValue(_))
        ));
        assert!(encode(&(0..8u64).map(KernelArg::U64).collect::<Vec<_>>()).is_ok());
    }
}
