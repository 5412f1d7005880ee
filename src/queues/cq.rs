//! Completion queues over user-supplied ring memory.
//!
//! Init sequence (PRM "Completion Queue"; rdma-core `mlx5_alloc_cq_buf` / `mlx5_arm_cq`):
//! every CQE is written invalid/hardware-owned, the doorbell record zeroed, then CREATE_CQ names
//! the ring and record UMEMs, the UAR page and the EQ. Polling reads `op_own` of the entry at
//! the consumer index; when it is software's ([`super::ring::cqe_is_sw_owned`]) a read barrier
//! precedes reading the rest. The consumer index goes to `dbrec[0]`. Arming writes
//! `sn << 28 | cmd | ci` to `dbrec[1]`, then to UAR + 0x20 together with the CQN.

pub use crate::mlx5::ids::Cqn;
use std::sync::Arc;

use super::ring::{CQE_INIT_OP_OWN, CQE_OPCODE_INVALID, CQ_CI_MASK};
use super::shared::{host_queue, CqRing, CqeRef, HostQueue};
use super::{MemPlace, QueueError, QueueMemory};
use crate::devx::{self, Devx, DevxObj, EventChannel};
use crate::mlx5::cmd::{CqEventTarget, CreateCq, ModifyCqModeration, RingMem};
use crate::mlx5::wire::cqe::{
    at, decode_words, send_recv, word, Completion, CompletionError, Cqe, CQE_SIZE, OP_OWN_HOT_MASK,
};
use crate::uar::{barrier, DoorbellRecord, UarPage, CQ_ARM_DB, CQ_SET_CI};

/// The cold arm of [`Cq::decode_entry`]: an opcode other than REQ / RESP_SEND, in an entry
/// found software's (and after the read barrier); out of line and taking the entry by value,
/// so the hot loop does not keep a closure's captures in memory for it.
#[cold]
#[inline(never)]
fn decode_other_entry(entry: CqeRef, w7: [u8; 8]) -> Result<Completion, CompletionError> {
    decode_words(w7, |i| entry.word(i))
}

/// Where a CQ's completion events go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CqEvents {
    /// The EQ serving completion vector `n` (QUERY_EQN); events reach an event channel the CQ
    /// is subscribed to ([`Cq::subscribe`]).
    Vector(u32),
    /// An EQ by number.
    Eq(u32),
    /// A DPA thread (`apu_cq`, element type THREAD).
    DpaThread(u32),
    /// A DPA EQ (`apu_cq`, element type EQ).
    DpaEq(u32),
}

/// CQE size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CqeSize {
    B64,
    B128,
}

impl CqeSize {
    /// Bytes.
    pub fn bytes(self) -> usize {
        match self {
            CqeSize::B64 => 64,
            CqeSize::B128 => 128,
        }
    }
}

/// How to create a CQ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CqConfig {
    /// log2 of the number of CQEs.
    pub log_size: u8,
    pub cqe_size: CqeSize,
    pub events: CqEvents,
    /// Moderation: raise the event after this many microseconds ...
    pub moderation_period_us: u16,
    /// ... or this many CQEs (0: every CQE).
    pub moderation_count: u16,
    /// Overrun ignore (`oi`): the device may overwrite unpolled CQEs instead of failing.
    pub overrun_ignore: bool,
    /// Collapsed (`cc`): the device writes every CQE to entry 0, rewriting it each time, and
    /// the CQ never overruns. A consumer sees the latest completion there (its `wqe_counter`),
    /// as GPUNetIO's collapsed polls read it; [`Cq::poll`] sees each CQE only if it polls
    /// before the next one arrives. See [`CqConfig::collapsed`].
    pub collapsed: bool,
}

impl CqConfig {
    /// A CQ of `2^log_size` 64-byte CQEs on vector 0, without moderation.
    pub fn new(log_size: u8) -> CqConfig {
        CqConfig {
            log_size,
            cqe_size: CqeSize::B64,
            events: CqEvents::Vector(0),
            moderation_period_us: 0,
            moderation_count: 0,
            overrun_ignore: false,
            collapsed: false,
        }
    }

    /// A collapsed CQ: one 64-byte entry that every completion rewrites (PRM `cc`), for a send
    /// queue whose owner waits for its latest completion only.
    pub fn collapsed() -> CqConfig {
        CqConfig {
            collapsed: true,
            ..CqConfig::new(0)
        }
    }

    /// Ring bytes this CQ needs.
    pub fn ring_bytes(&self) -> usize {
        (1usize << self.log_size.min(24)) * self.cqe_size.bytes()
    }
}

/// How to arm a CQ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arm {
    /// An event for the next completion (`MLX5_CQ_DB_REQ_NOT`).
    Next,
    /// An event for the next solicited completion or error (`MLX5_CQ_DB_REQ_NOT_SOL`).
    Solicited,
}

/// The firmware object and the memory behind it. Queues that report to this CQ hold it, so the
/// CQ is destroyed after them whatever order the user drops things in.
pub(crate) struct CqObj {
    pub(crate) obj: DevxObj,
    pub(crate) cqn: Cqn,
    _mem: Box<dyn QueueMemory>,
    _uar: Arc<UarPage>,
}

impl std::fmt::Debug for CqObj {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CqObj").field("cqn", &self.cqn).finish()
    }
}

/// A CQ that other queues can report to: a host [`Cq`], or a CQ whose ring lives in DPA
/// memory (`crate::dpa::queues::DpaCq`).
pub trait CqTarget {
    /// The CQ number.
    fn target_cqn(&self) -> Cqn;
    /// The firmware object, held by the queues reporting to it so that it is destroyed after
    /// them.
    fn keep_alive(&self) -> Arc<dyn std::any::Any + Send + Sync>;
}

impl CqTarget for Cq {
    fn target_cqn(&self) -> Cqn {
        self.cqn()
    }
    fn keep_alive(&self) -> Arc<dyn std::any::Any + Send + Sync> {
        Arc::clone(&self.shared) as Arc<dyn std::any::Any + Send + Sync>
    }
}

/// A completion queue.
#[derive(Debug)]
pub struct Cq {
    pub(crate) shared: Arc<CqObj>,
    ring: CqRing,
    log_size: u8,
    cqe_bytes: usize,
    collapsed: bool,
    /// The consumer index; `ring`'s cursor is kept at it (`CqRing::advance` / `seek`).
    ci: u32,
    arm_sn: u32,
    dbr: DoorbellRecord,
    uar: Arc<UarPage>,
    pub(crate) ring_place: MemPlace,
    pub(crate) dbr_place: MemPlace,
}

impl Cq {
    /// Creates a CQ over `mem`, ringing through `uar`.
    ///
    /// # Errors
    /// A configuration out of range, memory too small or not host-accessible, or the device
    /// refused CREATE_CQ (or QUERY_EQN).
    pub fn create(
        dev: &Arc<dyn Devx>,
        uar: &Arc<UarPage>,
        mem: impl QueueMemory,
        cfg: &CqConfig,
    ) -> Result<Cq, QueueError> {
        if cfg.log_size > 22 {
            return Err(QueueError::Config(format!(
                "log_size {} (at most 22 here; the device's limit is log_max_cq_sz)",
                cfg.log_size
            )));
        }
        let ring_bytes = cfg.ring_bytes();
        let HostQueue {
            ring_place,
            ring,
            dbr_place,
            dbr,
        } = host_queue(&mem, "CQ memory", ring_bytes)?;
        let cqe_bytes = cfg.cqe_size.bytes();
        let ring = ring
            .ring(0, ring_bytes)
            .and_then(|r| CqRing::new(r, cfg.log_size, cqe_bytes))
            .ok_or_else(|| QueueError::Config("CQ ring size".into()))?;
        ring.init(CQE_INIT_OP_OWN);
        let target = match cfg.events {
            CqEvents::Vector(n) => CqEventTarget::Eq(dev.query_eqn(n)?),
            CqEvents::Eq(n) => CqEventTarget::Eq(n),
            CqEvents::DpaThread(n) => CqEventTarget::DpaThread(n),
            CqEvents::DpaEq(n) => CqEventTarget::DpaEq(n),
        };
        let cmd = CreateCq {
            log_cq_size: cfg.log_size,
            cqe_sz: u8::from(cfg.cqe_size == super::cq::CqeSize::B128),
            uar_page: uar.page_id(),
            target,
            mem: RingMem {
                umem_id: ring_place.umem_id,
                umem_offset: ring_place.umem_offset,
                dbr_umem_id: dbr_place.umem_id,
                dbr_offset: dbr_place.umem_offset,
            },
            cq_period: cfg.moderation_period_us,
            cq_max_count: cfg.moderation_count,
            oi: cfg.overrun_ignore,
            cc: cfg.collapsed,
            cqe_comp: false,
        };
        let (obj, cqn) = devx::create(dev, &cmd)?;
        Ok(Cq {
            shared: Arc::new(CqObj {
                obj,
                cqn,
                _mem: Box::new(mem),
                _uar: Arc::clone(uar),
            }),
            ring,
            log_size: cfg.log_size,
            cqe_bytes,
            collapsed: cfg.collapsed,
            ci: 0,
            arm_sn: 0,
            dbr,
            uar: Arc::clone(uar),
            ring_place,
            dbr_place,
        })
    }

    /// The CQ number.
    pub fn cqn(&self) -> Cqn {
        self.shared.cqn
    }

    /// log2 of the number of CQEs.
    pub fn log_size(&self) -> u8 {
        self.log_size
    }

    /// The consumer index (24 bits significant).
    pub fn consumer_index(&self) -> u32 {
        self.ci & CQ_CI_MASK
    }

    /// The UAR page the CQ rings.
    pub fn uar(&self) -> &Arc<UarPage> {
        &self.uar
    }

    /// The DevX handle (for event subscription and queries).
    pub fn obj(&self) -> &DevxObj {
        &self.shared.obj
    }

    /// Loads word 7 of `entry` (bytes 0x38..0x40, `op_own` last) and returns it if the entry
    /// is software's in the pass whose owner bit is `parity`; then the rest of the entry may be
    /// loaded.
    #[inline(always)]
    fn owned_word7(entry: CqeRef, parity: u8) -> Option<[u8; 8]> {
        let w7 = entry.word(word::QPN);
        // `ring::cqe_is_sw_owned`, with the pass parity given.
        let op_own = w7[at::OP_OWN % 8];
        if (op_own & 1) != parity || (op_own >> 4) == CQE_OPCODE_INVALID {
            return None;
        }
        // ORDERING: the word holding the owner byte was loaded before any other word of the
        // entry is. Using the other bytes of that same aligned 8-byte load (QPN, WQE counter)
        // is sound: an aligned 8-byte load is single-copy atomic, and the device writes the
        // CQE before (or with) its owner byte; DPDK's vectorised mlx5 RX takes its fields
        // from the same load as `op_own` likewise.
        barrier::dma_rmb();
        Some(w7)
    }

    /// Reads and decodes the 64-byte CQE at `entry` if it is software's in the pass whose owner
    /// bit is `parity`: `op_own` (its last byte) first, then, after the read barrier, word 7
    /// and only the other words the opcode needs (word 5 for a send or receive). Neither
    /// advances the consumer index nor publishes it.
    #[inline(always)]
    fn decode_entry(entry: CqeRef, parity: u8) -> Option<Result<Completion, CompletionError>> {
        let op_own = entry.op_own();
        // ORDERING (both arms): `op_own` was loaded, and found software's, before the read
        // barrier; every other load of the entry (word 7 again included: its QPN and WQE
        // counter are taken from the load after the barrier) follows it, as in rdma-core's
        // `mlx5_get_next_cqe` / `udma_from_device_barrier`. A byte load and its test are
        // fewer instructions than extracting the byte from the word.
        if (op_own ^ parity) & OP_OWN_HOT_MASK == 0 {
            // Software's (owner bit equal to `parity`), and a REQ or RESP_SEND: one test for
            // both (`OP_OWN_HOT_MASK`; neither opcode is INVALID).
            barrier::dma_rmb();
            // Each field by a load of its own width and a byte swap (fewer instructions than
            // cutting them out of 8-byte words); software's until the index is published.
            Some(Ok(send_recv(
                op_own,
                entry.be32(at::SOP_DROP_QPN),
                entry.be16(at::WQE_COUNTER),
                entry.be32(at::BYTE_CNT),
            )))
        } else if (op_own & 1) == parity && (op_own >> 4) != CQE_OPCODE_INVALID {
            // `ring::cqe_is_sw_owned`, with the pass parity given: another opcode. Both arms
            // are marked cold: with the hints, the register allocator puts the spills around
            // the out-of-line call here instead of in the hot loop of a caller polling one CQE
            // at a time (`benches/queues.rs` "summary poll": 1.35x of the floor with them and
            // the ring's cursor; about 1.7x with either alone).
            std::hint::cold_path();
            barrier::dma_rmb();
            let w7 = entry.word(word::QPN);
            Some(decode_other_entry(entry, w7))
        } else {
            std::hint::cold_path();
            None
        }
    }

    /// Reads the whole CQE at the consumer index if it is software's, and advances past it.
    /// Does not update the doorbell record.
    #[inline]
    fn take(&mut self) -> Option<Cqe> {
        let (entry, parity) = self.ring.at_cursor();
        let w7 = Self::owned_word7(entry, parity)?;
        let mut bytes = [0u8; CQE_SIZE];
        for (i, chunk) in bytes.chunks_exact_mut(8).enumerate() {
            // Words other than 7 are software's until the index is published. Volatile
            // 8-byte loads: a volatile `[u8; 64]` load compiles to 64 byte loads.
            let w = if i == 7 { w7 } else { entry.word(i) };
            chunk.copy_from_slice(&w);
        }
        self.ci = self.ci.wrapping_add(1);
        self.ring.advance();
        Some(Cqe::from_array(bytes))
    }

    #[inline(always)]
    fn publish_ci(&self) {
        // ORDERING: the loads of the consumed CQEs complete before the record lets the device
        // write those slots again (`dmb oshld` orders loads before later stores on aarch64).
        barrier::dma_rmb();
        self.dbr.store(CQ_SET_CI, self.ci & CQ_CI_MASK);
    }

    /// Polls one completion: `None` when the CQ is empty.
    #[inline(always)]
    pub fn poll(&mut self) -> Option<Result<Completion, CompletionError>> {
        let (entry, parity) = self.ring.at_cursor();
        let op_own = entry.op_own();
        if (op_own ^ parity) & OP_OWN_HOT_MASK == 0 {
            // `decode_entry`'s first arm, with the index moved and published in the arm: the
            // caller's loop then continues from here with the completion known `Ok` (when
            // the arms joined first, it tested the joined result's discriminant per CQE).
            // ORDERING: as there.
            barrier::dma_rmb();
            let c = send_recv(
                op_own,
                entry.be32(at::SOP_DROP_QPN),
                entry.be16(at::WQE_COUNTER),
                entry.be32(at::BYTE_CNT),
            );
            self.consume_one();
            return Some(Ok(c));
        }
        std::hint::cold_path();
        let c = Self::decode_entry(entry, parity)?;
        self.consume_one();
        Some(c)
    }

    /// Moves past the CQE at the cursor and publishes the consumer index.
    #[inline(always)]
    fn consume_one(&mut self) {
        self.ring.advance();
        self.ci = self.ci.wrapping_add(1);
        self.publish_ci();
    }

    /// Polls one raw CQE (for callers that decode themselves).
    #[inline]
    pub fn poll_raw(&mut self) -> Option<Cqe> {
        let cqe = self.take()?;
        self.publish_ci();
        Some(cqe)
    }

    /// Polls up to `max` completions, handing each to `f`, and publishes the consumer index
    /// once. Returns how many were polled.
    #[inline(always)]
    pub fn poll_batch(
        &mut self,
        max: usize,
        mut f: impl FnMut(Result<Completion, CompletionError>),
    ) -> usize {
        // The walk lives in locals for the batch (fields would be stored back after every
        // volatile load and reloaded after every call of `f`): runs of the ring up to the wrap
        // (or `max`), each a pointer stepped by the CQE size (`CqRing::run`), with the owner
        // bit of the run's pass; per CQE only the pointer moves.
        let size = 1u32 << self.log_size;
        let mut n = 0usize;
        'batch: while n < max {
            let ci = self.ci.wrapping_add(n as u32);
            // `ring::owner_parity` of the run's first index, as a mask test.
            let parity = u8::from(ci & size != 0);
            let mut run = self.ring.run(ci, max - n);
            while let Some(entry) = run.next() {
                let Some(c) = Self::decode_entry(entry, parity) else {
                    n += run.taken() - 1;
                    break 'batch;
                };
                f(c);
            }
            n += run.taken();
        }
        if n > 0 {
            // Modulo 2^32 like the index itself.
            self.ci = self.ci.wrapping_add(n as u32);
            self.ring.seek(self.ci);
            self.publish_ci();
        }
        n
    }

    /// Waits at most `timeout` for one completion, polling and, between polls, waiting on the
    /// device's activity ([`devx::wait_for`]: a yield on hardware, a sleep until the model's
    /// next pass that did work on the model).
    ///
    /// # Errors
    /// [`crate::devx::DevxError::Timeout`] when nothing arrived.
    pub fn poll_timeout(
        &mut self,
        timeout: std::time::Duration,
    ) -> Result<Result<Completion, CompletionError>, QueueError> {
        crate::sync::traced_wait("a completion", || {
            let dev = Arc::clone(self.uar.device());
            match devx::wait_for(dev.as_ref(), timeout, || Ok::<_, QueueError>(self.poll()))? {
                Some(c) => Ok(c),
                None => Err(devx::DevxError::Timeout(timeout, "a completion").into()),
            }
        })
    }

    /// Requests one completion event (PRM CQ arm doorbell).
    pub fn arm(&mut self, how: Arm) {
        let cmd: u32 = match how {
            Arm::Next => 0,
            Arm::Solicited => 1 << 24,
        };
        let word = ((self.arm_sn & 3) << 28) | cmd | (self.ci & CQ_CI_MASK);
        self.dbr.store(CQ_ARM_DB, word);
        self.uar.cq_doorbell(word, self.cqn().0);
    }

    /// Records that a completion event for this CQ was received: the next arm carries the next
    /// command sequence number (rdma-core `mlx5_cq_event`).
    pub fn event_received(&mut self) {
        self.arm_sn = self.arm_sn.wrapping_add(1);
    }

    /// Subscribes the CQ's completion events to `channel`, tagged with `cookie`.
    ///
    /// # Errors
    /// Backend errors.
    pub fn subscribe(&self, channel: &dyn EventChannel, cookie: u64) -> Result<(), QueueError> {
        channel.subscribe(
            Some(self.shared.obj.handle()),
            &[u16::from(crate::mlx5::wire::eqe::event_type::COMP)],
            cookie,
        )?;
        Ok(())
    }

    /// Changes moderation (MODIFY_CQ).
    ///
    /// # Errors
    /// Firmware refused.
    pub fn set_moderation(&self, period_us: u16, count: u16) -> Result<(), QueueError> {
        devx::modify(
            &self.shared.obj,
            &ModifyCqModeration {
                cqn: self.cqn(),
                cq_period: period_us,
                cq_max_count: count,
            },
        )?;
        Ok(())
    }

    /// The CQ's descriptor for an external engine (see [`super::descriptor`]).
    pub fn descriptor(&self) -> super::descriptor::CqDescriptor {
        super::descriptor::CqDescriptor {
            cqn: self.cqn().0,
            log_cqe_cnt: u32::from(self.log_size),
            cqe_size: self.cqe_bytes as u32,
            consumer_index: self.ci & CQ_CI_MASK,
            cq_ring_addr: self.ring_place.device_addr,
            cq_dbr_addr: self.dbr_place.device_addr,
            uar_page_id: self.uar.page_id(),
            _reserved: 0,
            uar_arm_addr: self.uar.base() as u64 + crate::uar::CQ_DOORBELL_OFFSET as u64,
            arm_sn: self.arm_sn & 3,
            flags: if self.collapsed {
                super::descriptor::CQ_FLAG_COLLAPSED
            } else {
                0
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queues::shared::test_ring::{over, Line};
    use proptest::prelude::*;

    proptest! {
        /// The poll path's decode (one byte load, then the hot fields or the cold decode) gives
        /// what the whole-CQE decode gives, for any bytes, in both passes and both entry sizes;
        /// and nothing for an entry the device still owns or an INVALID one.
        #[test]
        fn the_poll_decode_is_the_cqe_decode(
            words in prop::array::uniform8(any::<u64>()),
            op_own in any::<u8>(),
            parity in 0u8..2,
            big in any::<bool>(),
        ) {
            let mut bytes = [0u8; CQE_SIZE];
            for (chunk, w) in bytes.chunks_exact_mut(8).zip(words) {
                chunk.copy_from_slice(&w.to_ne_bytes());
            }
            bytes[at::OP_OWN] = op_own;
            let cqe = Cqe::from_array(bytes);
            let want = (cqe.owner() == parity && !cqe.is_invalid()).then(|| cqe.decode());

            let mut lines: Vec<Line> = (0..4).map(|_| Line([0; 8])).collect();
            // Entry 1: its CQE is the entry's last 64 bytes.
            let stride = if big { 128 } else { 64 };
            let at_line = (stride + stride - CQE_SIZE) / 64;
            for (i, w) in bytes.chunks_exact(8).enumerate() {
                lines[at_line].0[i] = u64::from_ne_bytes(w.try_into().unwrap());
            }
            let mut ring = CqRing::new(over(&mut lines), 1, stride).expect("ring");
            ring.seek(1);
            let (entry, _) = ring.at_cursor();
            prop_assert_eq!(Cq::decode_entry(entry, parity), want);
        }
    }
}
