//! Queues in DPA memory through the driver's API only, on the model: an SQ in DPA memory rung
//! by a DPA program through an outbox, completing into a CQ the host polls; argument checks;
//! teardown. (The RQ / CQ-bound-to-a-thread path is `tests/dpa/dpa_packet_processor.rs`, the RC QP
//! path `tests/dpa/dpa_msg_stream.rs`.)

use crate::dpa_common::bf3;

use std::sync::Arc;
use std::time::Duration;

use mlx5_dpa::devx::Devx;
use mlx5_dpa::dpa::queues::{DpaCq, DpaEthSq, DpaMkey, DpaQueueMem};
use mlx5_dpa::dpa::thread::ThreadState;
use mlx5_dpa::dpa::{DpaError, Process, ProcessAttr};
use mlx5_dpa::mem::Access;
use mlx5_dpa::mlx5::wire::cqe::{self, Cqe64};
use mlx5_dpa::mlx5::wire::wqe::{self, CtrlSegRepr};
use mlx5_dpa::queues::steering::{Tis, TransportDomain};
use mlx5_dpa::queues::{CompletionKind, Cq, CqConfig, CqEvents, HostQueueMem};

type R = Result<(), Box<dyn std::error::Error>>;

const SELFTEST: &[u8] = include_bytes!("../../fw-blobs/bin/selftest.elf");
/// `ST_OUTBOX_KEEP` and the SXD doorbell register of the outbox page (fw-blobs selftest.h,
/// flexio_dev_dpa_arch.h).
const ST_OUTBOX_KEEP: u32 = 0xffff_ffff;
const OUTBOX_SXD_DB: u32 = 0x1c0;
/// A NOP send WQE asking for a CQE (PRM ctrl segment: opcode 0 = `MLX5_OPCODE_NOP`).
fn nop(sqn: u32, index: u16) -> [u8; 64] {
    let mut w = [0u8; 64];
    let ctrl = CtrlSegRepr {
        opcode: wqe::opcode::NOP,
        opmod: 0,
        wqe_index: index,
        qpn: sqn,
        ds: 1,
        fm_ce_se: wqe::CTRL_CQ_UPDATE,
        imm: 0,
    };
    w[..wqe::SEG].copy_from_slice(&ctrl.to_bytes());
    w
}

/// A selftest process with an outbox, and an SQ of 8 WQEBBs in its memory completing into a
/// host CQ of 8 entries. Fields drop in declaration order (the SQ before its CQ and TIS).
struct SqRig {
    sq: DpaEthSq,
    cq: Cq,
    _tis: Arc<Tis>,
    _td: Arc<TransportDomain>,
    outbox: mlx5_dpa::dpa::outbox::Outbox,
    p: Process,
}

impl SqRig {
    fn new(ctx: &Arc<dyn Devx>) -> Result<SqRig, Box<dyn std::error::Error>> {
        let p = Process::create(ctx, SELFTEST, &ProcessAttr::default())?;
        let outbox = p.outbox(p.uar())?;
        let td = TransportDomain::alloc(ctx)?;
        let tis = Tis::create(ctx, &td, p.pd())?;
        let cqc = CqConfig::new(3);
        let cq = Cq::create(
            ctx,
            p.uar(),
            HostQueueMem::alloc(ctx, cqc.ring_bytes())?,
            &cqc,
        )?;
        let sq = DpaEthSq::create(&p, p.uar(), &tis, &cq, DpaQueueMem::alloc(&p, 64 * 8)?, 3)?;
        Ok(SqRig {
            sq,
            cq,
            _tis: tis,
            _td: td,
            outbox,
            p,
        })
    }
}

#[test]
fn a_dpa_sq_rung_by_the_dpa_completes_into_a_host_cq() -> R {
    let (d, ctx) = bf3();
    {
        let SqRig {
            sq,
            mut cq,
            outbox,
            p,
            ..
        } = SqRig::new(&ctx)?;
        let desc = sq.descriptor();
        assert_eq!(desc.num, sq.sqn().0);
        assert_eq!(desc.sq_ring_addr, sq.ring_daddr());
        assert_eq!(desc.send_cq, cq.cqn().0);
        assert_eq!(desc.ring_umem_id, p.dumem().0);
        // The host writes three NOPs into the DPA ring (it can, through copies) but rings
        // nothing; the DPA rings the SXD doorbell with producer counter 3.
        let mut ring = Vec::new();
        for i in 0..3 {
            ring.extend_from_slice(&nop(sq.sqn().0, i));
        }
        p.copy_to_dev(sq.ring_daddr(), &ring)?;
        let args = p.alloc(16)?;
        let mut a = [0u8; 16];
        a[0..4].copy_from_slice(&ST_OUTBOX_KEEP.to_le_bytes());
        a[4..8].copy_from_slice(&OUTBOX_SXD_DB.to_le_bytes());
        a[8..16].copy_from_slice(&(3u64 | u64::from(sq.sqn().0) << 32).to_le_bytes());
        p.copy_to_dev(args.daddr(), &a)?;
        let h = p.event_handler(&mlx5_dpa::dpa::thread::EventHandlerAttr {
            default_outbox_id: outbox.id(),
            ..mlx5_dpa::dpa::thread::EventHandlerAttr::new("st_outbox_db", args.daddr())
        })?;
        h.run(args.daddr())?;
        for i in 0..3u16 {
            let c = cq.poll_timeout(Duration::from_secs(5))??;
            assert_eq!(c.wqe_counter, i);
            assert!(
                matches!(c.kind, CompletionKind::Send { wqe_opcode: 0 }),
                "{c:?}"
            );
        }
        assert!(cq.poll().is_none(), "three NOPs, three CQEs");
        // The doorbell record in DPA memory moved to the counter the doorbell carried.
        let mut dbr = [0u8; 8];
        p.copy_from_dev(sq.dbr_daddr(), &mut dbr)?;
        assert_eq!(dbr[4..8], 3u32.to_be_bytes());
        let s = d.dpa_stats();
        assert_eq!((s.doorbells, s.violations), (1, 0));
        drop(h);
        drop(sq);
        drop(cq);
        drop(outbox);
    }
    drop(ctx);
    d.stop_engine();
    assert!(d.inventory().is_empty(), "left: {}", d.inventory());
    Ok(())
}

/// Device code often checks only a CQE's owner bit (FlexIO's samples do: docs/sources.md section 9).
/// That works because every CQE starts owner = 1 (`op_own = 0xf1`, DPDK `MLX5_CQE_INVALIDATE`,
/// FlexIO's `mlx5dv_set_cqe_owner(cqe, 1)`), the opposite of what the device writes on the
/// first pass. Read as such code reads it, a fresh 4-entry host CQ holds no completion, and
/// after three NOPs exactly three.
#[test]
fn a_consumer_checking_only_the_owner_bit_sees_exactly_the_completions() -> R {
    let (d, ctx) = bf3();
    {
        let p = Process::create(&ctx, SELFTEST, &ProcessAttr::default())?;
        let outbox = p.outbox(p.uar())?;
        let td = TransportDomain::alloc(&ctx)?;
        let tis = Tis::create(&ctx, &td, p.pd())?;
        let cqc = CqConfig::new(2);
        let buf = Arc::new(mlx5_dpa::mem::DmaBuf::new(4096)?);
        let umem = mlx5_dpa::mem::Umem::register(&ctx, &buf, Access::LOCAL_WRITE)?;
        // SAFETY: the ring (0..256) and the record (2048..2056) are used by this CQ only.
        let mem = unsafe { HostQueueMem::carve(umem, 0, cqc.ring_bytes(), 2048)? };
        let cq = Cq::create(&ctx, p.uar(), mem, &cqc)?;
        // What owner-only device code takes for completions: entries from ci 0 whose owner bit
        // equals the pass parity, up to a full ring.
        let owner_only = || -> Result<usize, mlx5_dpa::mem::MemError> {
            let mut n = 0;
            while n < 4 {
                let op_own = buf.load_u8(n * 64 + cqe::at::OP_OWN)?;
                if op_own & 1 != 0 {
                    break;
                }
                n += 1;
            }
            Ok(n)
        };
        for i in 0..4 {
            assert_eq!(buf.load_u8(i * 64 + cqe::at::OP_OWN)?, 0xf1, "CQE {i}");
        }
        assert_eq!(owner_only()?, 0, "a fresh CQ holds no completion");
        let sq = DpaEthSq::create(&p, p.uar(), &tis, &cq, DpaQueueMem::alloc(&p, 64 * 8)?, 3)?;
        let mut ring = Vec::new();
        for i in 0..3 {
            ring.extend_from_slice(&nop(sq.sqn().0, i));
        }
        p.copy_to_dev(sq.ring_daddr(), &ring)?;
        let args = p.alloc(16)?;
        let mut a = [0u8; 16];
        a[0..4].copy_from_slice(&ST_OUTBOX_KEEP.to_le_bytes());
        a[4..8].copy_from_slice(&OUTBOX_SXD_DB.to_le_bytes());
        a[8..16].copy_from_slice(&(3u64 | u64::from(sq.sqn().0) << 32).to_le_bytes());
        p.copy_to_dev(args.daddr(), &a)?;
        let h = p.event_handler(&mlx5_dpa::dpa::thread::EventHandlerAttr {
            default_outbox_id: outbox.id(),
            ..mlx5_dpa::dpa::thread::EventHandlerAttr::new("st_outbox_db", args.daddr())
        })?;
        h.run(args.daddr())?;
        // Bounded wait for the third CQE, through the driver's own (owner + opcode) check.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while buf.load_u8(2 * 64 + cqe::at::OP_OWN)? >> 4 == cqe::opcode::INVALID {
            assert!(std::time::Instant::now() < deadline, "no third CQE");
            std::thread::yield_now();
        }
        assert_eq!(owner_only()?, 3, "three NOPs, three completions");
        for i in 0..3 {
            assert_eq!(
                buf.load_u8(i * 64 + cqe::at::OP_OWN)? & 1,
                0,
                "CQE {i}: pass 0"
            );
        }
        drop(h);
        drop(sq);
        drop(cq);
        drop(outbox);
    }
    drop(ctx);
    d.stop_engine();
    assert!(d.inventory().is_empty(), "left: {}", d.inventory());
    Ok(())
}

#[test]
fn a_dpa_cq_starts_hardware_owned_and_describes_itself() -> R {
    let (d, ctx) = bf3();
    {
        let p = Process::create(&ctx, SELFTEST, &ProcessAttr::default())?;
        let h = p.event_handler(&mlx5_dpa::dpa::thread::EventHandlerAttr::new("st_add", 0))?;
        let cfg = CqConfig {
            events: CqEvents::DpaThread(h.id()),
            ..CqConfig::new(4)
        };
        let mem = DpaQueueMem::alloc(&p, cfg.ring_bytes())?;
        assert!(mem.ring_daddr().is_multiple_of(64) && mem.dbr_daddr() >= mem.ring_daddr() + 1024);
        // Dirty the memory first: creation must initialise it.
        p.memset(mem.ring_daddr(), 0x5a, 1024 + 8)?;
        let cq = DpaCq::create(&p, p.uar(), mem, &cfg)?;
        let mut ring = vec![0u8; 1024];
        p.copy_from_dev(cq.ring_daddr(), &mut ring)?;
        for (i, e) in ring.chunks(64).enumerate() {
            let c = Cqe64::new_checked(e).unwrap();
            assert_eq!(
                c.op_own(),
                0xf1,
                "CQE {i}: opcode INVALID, owner 1 (not the first pass's)"
            );
            assert!(
                e[..cqe::at::OP_OWN].iter().all(|&b| b == 0),
                "CQE {i} zeroed"
            );
        }
        let mut dbr = [0xffu8; 8];
        p.copy_from_dev(cq.dbr_daddr(), &mut dbr)?;
        assert_eq!(dbr, [0; 8]);
        let desc = cq.descriptor();
        assert_eq!(
            (
                desc.cqn,
                desc.log_cqe_cnt,
                desc.cqe_size,
                desc.cq_ring_addr,
                desc.cq_dbr_addr
            ),
            (cq.cqn().0, 4, 64, cq.ring_daddr(), cq.dbr_daddr())
        );
        // The CQ names the thread: destroying the thread first is refused.
        let r = h.destroy();
        assert!(r.is_err(), "a thread a CQ is bound to cannot go first");
        drop(cq);
    }
    drop(ctx);
    d.stop_engine();
    assert!(d.inventory().is_empty(), "left: {}", d.inventory());
    Ok(())
}

#[test]
fn bad_queue_memory_and_keys_are_typed_errors() -> R {
    let (d, ctx) = bf3();
    {
        let p = Process::create(&ctx, SELFTEST, &ProcessAttr::default())?;
        assert!(matches!(
            DpaQueueMem::alloc(&p, 0),
            Err(DpaError::BadArgs(_))
        ));
        // A CQ of 64 entries does not fit a 1 KiB ring.
        let small = DpaQueueMem::alloc(&p, 1024)?;
        let r = DpaCq::create(&p, p.uar(), small, &CqConfig::new(6));
        assert!(matches!(r, Err(DpaError::BadArgs(_))), "{r:?}");
        let r = DpaCq::create(&p, p.uar(), DpaQueueMem::alloc(&p, 64)?, &CqConfig::new(23));
        assert!(matches!(r, Err(DpaError::BadArgs(_))), "{r:?}");
        // Keys: below the process memory, empty, or past what the process has.
        let (_, base) = p.dumem();
        for (addr, len) in [(base - 64, 64), (base, 0), (u64::MAX - 8, 64)] {
            let r = DpaMkey::create(&p, addr, len, Access::LOCAL_WRITE);
            assert!(
                matches!(r, Err(DpaError::BadArgs(_))),
                "{addr:#x}+{len}: {r:?}"
            );
        }
        let r = DpaMkey::create(&p, base, 1 << 40, Access::LOCAL_WRITE);
        assert!(
            matches!(r, Err(DpaError::Devx(_))),
            "firmware refuses: {r:?}"
        );
        let buf = p.alloc(4096)?;
        let k = DpaMkey::over(&p, &buf, Access::LOCAL_WRITE)?;
        assert_eq!(k.range(), (buf.daddr(), buf.len()));
    }
    drop(ctx);
    d.stop_engine();
    assert!(d.inventory().is_empty(), "left: {}", d.inventory());
    Ok(())
}

/// DPA memory and the NIC under `DpaCoherency::Hardware` (DPA Subsystem guide: "DPA thread ->
/// NIC engine: not coherent"): a WQE the DPA writes into its SQ ring and rings without a
/// memory write-back is not what the NIC executes (it reads the ring as it was: here a NOP the
/// host left that asks for no CQE); written back, it is.
#[test]
fn a_wqe_rung_without_a_write_back_is_not_what_the_nic_reads() -> R {
    let (d, ctx) = bf3();
    d.set_dpa_coherency(mlx5_sim::DpaCoherency::Hardware);
    {
        let SqRig {
            sq,
            mut cq,
            outbox,
            p,
            ..
        } = SqRig::new(&ctx)?;
        let sqn = sq.sqn().0;
        // The host's NOPs in slots 0 and 1, asking for no CQE (fm_ce_se 0).
        for slot in 0..2u16 {
            let mut quiet = nop(sqn, slot);
            quiet[wqe::at::FM_CE_SE] = 0; // no CQE
            p.copy_to_dev(sq.ring_daddr() + 64 * u64::from(slot), &quiet)?;
        }
        let args = p.alloc(32)?;
        let run = |slot: u64, writeback: bool| -> R {
            let mut a = [0u8; 32];
            a[0..4].copy_from_slice(&sqn.to_le_bytes());
            a[4..8].copy_from_slice(&(slot as u32).to_le_bytes());
            a[8..16].copy_from_slice(&(sq.ring_daddr() + 64 * slot).to_le_bytes());
            a[16..24].copy_from_slice(&u64::from(writeback).to_le_bytes());
            p.copy_to_dev(args.daddr(), &a)?;
            let h = p.event_handler(&mlx5_dpa::dpa::thread::EventHandlerAttr {
                default_outbox_id: outbox.id(),
                ..mlx5_dpa::dpa::thread::EventHandlerAttr::new("st_wqe_nop", args.daddr())
            })?;
            h.run(args.daddr())?;
            let start = std::time::Instant::now();
            while h.info()?.activations < 1 || h.info()?.state == ThreadState::Running {
                assert!(start.elapsed() < Duration::from_secs(10));
                std::thread::sleep(Duration::from_millis(1));
            }
            Ok(())
        };
        // Slot 0 without a write-back: the NIC runs the host's NOP, no CQE.
        run(0, false)?;
        assert!(
            cq.poll_timeout(Duration::from_millis(300)).is_err(),
            "the NIC executed a WQE it could not yet see"
        );
        // Slot 1 written back: the DPA's NOP, which asks for a CQE.
        run(1, true)?;
        let c = cq.poll_timeout(Duration::from_secs(10))??;
        assert_eq!(c.wqe_counter, 1);
        assert!(cq.poll().is_none(), "one CQE, for the written-back WQE");
        drop(sq);
        drop(cq);
        drop(outbox);
    }
    drop(ctx);
    d.stop_engine();
    assert!(d.inventory().is_empty(), "left: {}", d.inventory());
    Ok(())
}
