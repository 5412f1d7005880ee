//! The model's DPA, through raw DevX commands (`mlx5_sim::testing::dpa_rig`): ELF loading, RPC-style
//! runs with return values, the thread context, every FlexIO-OS call, outbox doorbells,
//! windows into host memory, isolation between processes, the watchdog, coredumps,
//! activation by CQ completions, EU affinity, the worker pool, and queues whose rings live in
//! DPA memory.
//!
//! Device programs: `fw-blobs/bin/selftest.elf` (C, built by fw-blobs/build.sh; argument
//! blocks in fw-blobs/src/selftest.h), and small programs assembled here with
//! `dpa_rig::asm` where a test needs something selftest does not do.

use std::sync::Arc;

use mlx5_dpa::devx::{self, Devx, DevxError, UmemAccess};
use mlx5_dpa::dpa::coredump::{Access, Cause, MemError, RegionKind};
use mlx5_dpa::mlx5::cmd::{
    AllocTransportDomain, CmdError, CqEventTarget, CreateCq, CreateMkey, CreateSq, CreateTis,
    DpaAffinity, DpaThreadModify, MkeyAccess, ModifySq, RingMem, WqAttr, WqState,
};
use mlx5_dpa::mlx5::layouts::{self as l, dpa_process_status as ps, dpa_thread_state as ts};
use mlx5_dpa::mlx5::wire::cqe::{self, Cqe64, CQE_SIZE};
use mlx5_dpa::mlx5::wire::wqe::{self, CtrlSegRepr};
use mlx5_sim::dpa::{device_code, error_syndrome, map};
use mlx5_sim::fw::check::{self, Check};
use mlx5_sim::profile::Profile;
use mlx5_sim::testing::dpa_rig::asm::{r, Asm};
use mlx5_sim::testing::dpa_rig::elf::ElfSpec;
use mlx5_sim::testing::dpa_rig::{DpaRig, ThreadSpec};
use mlx5_sim::Device;

const SELFTEST: &[u8] = include_bytes!("../../../fw-blobs/bin/selftest.elf");

/// selftest.h values.
const ST_STORE_VALUE: u64 = 0x0123_4567_89ab_cdef;
const ST_FAILED: u64 = u64::MAX;
const ST_OUTBOX_KEEP: u32 = 0xffff_ffff;

#[track_caller]
fn ok<T, E: std::fmt::Debug>(r: Result<T, E>) -> T {
    r.unwrap_or_else(|e| panic!("unexpected error: {e:?}"))
}

/// Asserts that firmware refused with exactly `want`.
#[track_caller]
fn refused<T: std::fmt::Debug>(r: Result<T, DevxError>, want: Check) {
    match r {
        Err(DevxError::Command {
            source: CmdError::Firmware {
                status, syndrome, ..
            },
            ..
        }) => assert_eq!(
            (status, syndrome),
            (want.status, want.syndrome),
            "refused with {:?}, expected {}",
            Check::by_syndrome(syndrome),
            want
        ),
        other => panic!("expected {want}, got {other:?}"),
    }
}

fn device() -> (Device, Arc<dyn Devx>) {
    let dev = Device::new(Profile::bf3());
    let ctx = dev.open_devx();
    (dev, ctx)
}

fn selftest(ctx: &Arc<dyn Devx>) -> DpaRig {
    ok(DpaRig::new(Arc::clone(ctx), SELFTEST, 1 << 20))
}

fn sym(rig: &DpaRig, name: &str) -> u64 {
    rig.symbol(name)
        .unwrap_or_else(|| panic!("selftest.elf has no {name}"))
}

fn thread(rig: &mut DpaRig, entry: &str) -> u32 {
    let entry = sym(rig, entry);
    ok(rig.thread(ThreadSpec {
        entry,
        ..ThreadSpec::default()
    }))
}

/// Runs `thread` once with `arg` and steps the device until idle; returns the thread's info.
fn call(
    dev: &Device,
    rig: &DpaRig,
    thread: u32,
    arg: u64,
) -> mlx5_sim::testing::dpa_rig::ThreadInfo {
    ok(rig.run(thread, Some(arg)));
    dev.run_until_idle();
    ok(rig.thread_info(thread))
}

/// A DPA_MEM block of the rig's process (its DPA address).
fn scratch(rig: &mut DpaRig, size: u64) -> u64 {
    ok(rig.dpa_mem(size)).1
}

#[test]
fn rpc_returns_a_value_and_counts_activations() {
    let (dev, ctx) = device();
    let mut rig = selftest(&ctx);
    let t = thread(&mut rig, "st_add");
    let before = ok(rig.thread_info(t));
    assert_eq!((before.state, before.activations), (ts::IDLE, 0));
    let info = call(&dev, &rig, t, 41);
    assert_eq!(info.return_value, 42);
    assert_eq!(info.state, ts::FINISHED);
    assert_eq!(info.activations, 1);
    // A finished thread runs again when the host runs it (the next process_call).
    let info = call(&dev, &rig, t, 99);
    assert_eq!((info.return_value, info.activations), (100, 2));
    let s = dev.dpa_stats();
    assert_eq!(s.activations, 2);
    assert!(s.instructions >= 2);
    assert_eq!((s.faults, s.watchdogs), (0, 0));
    assert_eq!(ok(rig.process_info()).status, ps::OK);
}

#[test]
fn elf_segments_load_at_their_link_addresses() {
    let (dev, ctx) = device();
    let mut rig = selftest(&ctx);
    // .data and .rodata hold their link-time values, .bss accumulates across activations.
    let t = thread(&mut rig, "st_gp_global");
    assert_eq!(call(&dev, &rig, t, 5).return_value, 5);
    assert_eq!(call(&dev, &rig, t, 7).return_value, 12);
    // The text is where the ELF says, byte for byte.
    let elf = mlx5_dpa::dpa::elf::Elf::parse_device(SELFTEST).unwrap();
    for s in elf.load_segments() {
        let got = ok(dev.dpa_read(rig.process, s.vaddr, s.data.len()));
        assert_eq!(got, s.data, "segment at {:#x}", s.vaddr);
    }
    // 7 KiB of stack are there (the seed's 8184 bytes, less st_stack's own frame).
    let t = thread(&mut rig, "st_stack");
    let want: u64 = (0..7 * 1024u64).map(|i| i & 0xff).sum();
    assert_eq!(call(&dev, &rig, t, 7 * 1024).return_value, want);
}

/// Threads get the 8184-byte stack the seed states (`dpa-development-flexio-sdk.txt`, memory
/// model), with a guard under it: a thread that uses more faults, and its coredump names a
/// stack overflow at an address below the stack. (Before: a 64 KiB stack, and 12 KiB ran.)
#[test]
fn a_thread_that_outgrows_its_8184_byte_stack_faults_with_a_stack_overflow() {
    let (dev, ctx) = device();
    for bytes in [8 * 1024, 12 * 1024, 60 * 1024] {
        let (rig, t) = failing(&dev, &ctx, "st_stack", bytes);
        let d = ok(rig.coredump());
        let slot_stack_lo = d
            .regions
            .iter()
            .find(|r| r.kind == RegionKind::Stack)
            .map(|r| (r.base, r.size))
            .expect("a stack region");
        assert_eq!(slot_stack_lo.1, 8184, "the stack region's size");
        match d.cause {
            Cause::StackOverflow { access, .. } => assert_eq!(access, Access::Store),
            other => panic!("{bytes}: expected a stack overflow, got {other:?}"),
        }
        assert!(
            d.fault_addr < slot_stack_lo.0 && d.gpr[2] < slot_stack_lo.0,
            "{bytes}: fault at {:#x}, sp {:#x}, stack from {:#x}",
            d.fault_addr,
            d.gpr[2],
            slot_stack_lo.0
        );
        assert!(format!("{d}").contains("a stack overflow"), "{d}");
        assert_eq!(d.dpa_thread_id, t);
    }
}

#[test]
fn process_creation_refuses_bad_images() {
    let (_dev, ctx) = device();
    let text = Asm::new().ret().bytes();
    let cases: Vec<(Vec<u8>, Check)> = vec![
        (vec![0u8; 4096], check::ELF_MALFORMED),
        (SELFTEST[..200].to_vec(), check::ELF_MALFORMED),
        (
            ElfSpec {
                machine: 62, // x86-64
                ..ElfSpec::new(text.clone())
            }
            .build(),
            check::ELF_NOT_RISCV,
        ),
        (
            // Text in neither layout's window.
            ElfSpec {
                text_addr: 0x0800_0000,
                ..ElfSpec::new(text.clone())
            }
            .build(),
            check::ELF_BAD_SEGMENT,
        ),
        (
            // Text of the current layout, data of the older one: no layout holds both.
            ElfSpec {
                data_addr: 0x2800_0000,
                ..ElfSpec::new(text.clone()).data(vec![1, 2, 3, 4], 0)
            }
            .build(),
            check::ELF_BAD_SEGMENT,
        ),
        (
            // Writable text.
            ElfSpec {
                text_flags: 7,
                ..ElfSpec::new(text.clone())
            }
            .build(),
            check::ELF_BAD_SEGMENT,
        ),
        (
            // Executable data.
            ElfSpec {
                data_flags: 7,
                ..ElfSpec::new(text.clone()).data(vec![1; 8], 0)
            }
            .build(),
            check::ELF_BAD_SEGMENT,
        ),
        (
            // No executable segment.
            ElfSpec {
                text_flags: 4,
                ..ElfSpec::new(text.clone())
            }
            .build(),
            check::ELF_NO_TEXT,
        ),
        (
            // A .bss larger than the process memory.
            ElfSpec::new(text.clone()).data(vec![1; 8], 1 << 30).build(),
            check::DPA_MEMORY_EXHAUSTED,
        ),
    ];
    for (image, want) in cases {
        match DpaRig::new(Arc::clone(&ctx), &image, 0) {
            Err(mlx5_sim::testing::rig::RigError::Devx(e)) => refused::<()>(Err(e), want),
            Err(e) => panic!("expected {want}, got {e}"),
            Ok(_) => panic!("expected {want}, the process was created"),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Queues the tests hang off processes: an SQ of NOPs and its CQ.

const SQ_RING: usize = 0;
const CQ_RING: usize = 0x1000;
const SQ_DBR: usize = 0x2000;
const CQ_DBR: usize = 0x2040;
const LOG_CQ: u8 = 6;

/// An SQ (16 WQEBBs, ring and doorbell record in a host buffer) whose NOPs each ask for a
/// CQE, and its CQ (64 CQEs, ring in host memory unless given).
struct Nops {
    buf: mlx5_sim::testing::dpa_rig::HostBuf,
    sqn: u32,
    cqn: u32,
    pi: u16,
    last_ctrl: [u8; 8],
}

fn nops(rig: &mut DpaRig, uar: u32, target: CqEventTarget, cq_mem: Option<RingMem>) -> Nops {
    let buf = ok(rig.host_buf(0x3000, UmemAccess::LOCAL_WRITE));
    for i in 0..(1usize << LOG_CQ) {
        rig.host_write(&buf, CQ_RING + i * CQE_SIZE + cqe::at::OP_OWN, &[0xf1]);
    }
    let ctx = Arc::clone(rig.ctx());
    let (td, tdn) = ok(devx::create(&ctx, &AllocTransportDomain));
    rig.keep(td);
    let (tis, tisn) = ok(devx::create(
        &ctx,
        &CreateTis {
            transport_domain: tdn,
            pd: mlx5_dpa::mlx5::Pdn(rig.pd),
        },
    ));
    rig.keep(tis);
    let mem = cq_mem.unwrap_or(RingMem {
        umem_id: buf.umem_id,
        umem_offset: CQ_RING as u64,
        dbr_umem_id: buf.umem_id,
        dbr_offset: CQ_DBR as u64,
    });
    let (cq, cqn) = ok(devx::create(
        &ctx,
        &CreateCq {
            log_cq_size: LOG_CQ,
            cqe_sz: 0,
            uar_page: uar,
            target,
            mem,
            cq_period: 0,
            cq_max_count: 0,
            oi: false,
            cc: false,
            cqe_comp: false,
        },
    ));
    rig.keep(cq);
    let (sq, sqn) = ok(devx::create(
        &ctx,
        &CreateSq {
            cqn,
            tisn,
            wq: WqAttr {
                pd: mlx5_dpa::mlx5::Pdn(rig.pd),
                uar_page: uar,
                log_wq_stride: 6,
                log_wq_sz: 4,
                mem: RingMem {
                    umem_id: buf.umem_id,
                    umem_offset: SQ_RING as u64,
                    dbr_umem_id: buf.umem_id,
                    dbr_offset: SQ_DBR as u64,
                },
            },
            flush_in_error_en: false,
        },
    ));
    ok(devx::modify(
        &sq,
        &ModifySq {
            sqn,
            from: WqState::Rst,
            to: WqState::Rdy,
        },
    ));
    rig.keep(sq);
    Nops {
        buf,
        sqn: sqn.0,
        cqn: cqn.0,
        pi: 0,
        last_ctrl: [0; 8],
    }
}

impl Nops {
    /// Writes the next NOP (CQE requested); no doorbell.
    fn post(&mut self, rig: &DpaRig) {
        let mut w = [0u8; 64];
        let ctrl = CtrlSegRepr {
            opcode: wqe::opcode::NOP,
            opmod: 0,
            wqe_index: self.pi,
            qpn: self.sqn,
            ds: 1,
            fm_ce_se: wqe::CTRL_CQ_UPDATE,
            imm: 0,
        };
        w[..wqe::SEG].copy_from_slice(&ctrl.to_bytes());
        let slot = usize::from(self.pi % 16);
        assert!(rig.host_write(&self.buf, SQ_RING + slot * 64, &w));
        self.last_ctrl.copy_from_slice(&w[..8]);
        self.pi = self.pi.wrapping_add(1);
    }

    /// The host's doorbell: record, then UAR + 0x800 (on the rig's UAR).
    fn ring(&self, rig: &DpaRig) {
        rig.host_write(&self.buf, SQ_DBR + 4, &u32::from(self.pi).to_be_bytes());
        rig.uar_write(0x800, self.last_ctrl);
    }

    /// `op_own` of host CQE `i`.
    fn op_own(&self, rig: &DpaRig, i: usize) -> u8 {
        rig.host_read(&self.buf, CQ_RING + i * CQE_SIZE + cqe::at::OP_OWN, 1)[0]
    }
}

// ---------------------------------------------------------------------------------------------
// Thread context and FlexIO-OS calls.

#[test]
fn thread_context_holds_the_configured_outbox_window_and_tls() {
    let (dev, ctx) = device();
    let mut rig = selftest(&ctx);
    let outbox = ok(rig.outbox(rig.uar_page));
    let window = ok(rig.window(rig.pd));
    let dump = scratch(&mut rig, 64);
    let tls = dump + 48;
    let t = ok(rig.thread(ThreadSpec {
        entry: sym(&rig, "st_ctx_dump"),
        outbox,
        window,
        tls,
        ..ThreadSpec::default()
    }));
    let info = call(&dev, &rig, t, dump);
    assert_eq!(info.return_value, 1, "context version");
    let c = ok(dev.dpa_read(rig.process, dump, 48));
    let u16_at = |o: usize| u64::from(u16::from_le_bytes([c[o], c[o + 1]]));
    let u32_at = |o: usize| u64::from(u32::from_le_bytes(c[o..o + 4].try_into().unwrap()));
    let u64_at = |o: usize| u64::from_le_bytes(c[o..o + 8].try_into().unwrap());
    assert_eq!(u32_at(0), 1);
    assert_eq!(u16_at(4), u64::from(outbox));
    assert_eq!(u16_at(6), u64::from(window));
    assert_eq!(u64_at(8), map::outbox(outbox));
    assert_eq!(u64_at(16), map::WINDOW_BASE);
    assert_eq!(u64_at(24), map::window_cfg(window));
    assert_eq!(u64_at(32), tls);
    assert_eq!(u32_at(40), 0);
    // TLS is the host's thread_local_storage_daddr, and per thread.
    let t1 = ok(rig.thread(ThreadSpec {
        entry: sym(&rig, "st_tls"),
        tls,
        ..ThreadSpec::default()
    }));
    assert_eq!(call(&dev, &rig, t1, 5).return_value, 5);
    assert_eq!(call(&dev, &rig, t1, 6).return_value, 11);
    // Without defaults, nothing is configured.
    let bare = thread(&mut rig, "st_ctx_dump");
    call(&dev, &rig, bare, dump);
    let c = ok(dev.dpa_read(rig.process, dump, 48));
    assert_eq!(&c[4..32], &[0u8; 28], "no outbox, no window");
    let t2 = thread(&mut rig, "st_tls");
    assert_eq!(call(&dev, &rig, t2, 1).return_value, ST_FAILED, "no TLS");
}

#[test]
fn rtos_calls_duar_gvmi_outbox_selection_and_finish() {
    let (dev, ctx) = device();
    let mut rig = selftest(&ctx);
    let duar = thread(&mut rig, "st_get_duar");
    assert_eq!(call(&dev, &rig, duar, 0).return_value, 0, "no DPA_UAR yet");
    let d = ok(rig.dpa_uar(rig.uar_page));
    assert_eq!(call(&dev, &rig, duar, 0).return_value, u64::from(d));
    // OUTBOX_SET_GVMI accepts this function's vhca_id only.
    let gvmi = thread(&mut rig, "st_outbox_gvmi");
    let vhca = u64::from(Profile::bf3().vhca_id);
    assert_eq!(call(&dev, &rig, gvmi, vhca).return_value, 0);
    assert_eq!(call(&dev, &rig, gvmi, vhca + 1).return_value, ST_FAILED);
    // OUTBOX_SET_CFG: an own outbox is selected (its page address comes back); another
    // process's outbox is refused and nothing is stored.
    let mut other = selftest(&ctx);
    let foreign = ok(other.outbox(other.uar_page));
    let mine = ok(rig.outbox(rig.uar_page));
    let args = scratch(&mut rig, 16);
    let db = thread(&mut rig, "st_outbox_db");
    let outbox_args = |id: u32, reg: u32, value: u64| {
        let mut b = [0u8; 16];
        b[0..4].copy_from_slice(&id.to_le_bytes());
        b[4..8].copy_from_slice(&reg.to_le_bytes());
        b[8..16].copy_from_slice(&value.to_le_bytes());
        b
    };
    // A CQ_DB naming no CQ: selected and stored, then dropped as a violation.
    ok(dev.dpa_write(rig.process, args, &outbox_args(mine, 0x100, 0x7f_fff0)));
    assert_eq!(call(&dev, &rig, db, args).return_value, map::outbox(mine));
    assert_eq!(dev.dpa_stats().violations, 1);
    ok(dev.dpa_write(rig.process, args, &outbox_args(foreign, 0x100, 0)));
    assert_eq!(call(&dev, &rig, db, args).return_value, ST_FAILED);
    assert_eq!(dev.dpa_stats().violations, 1, "nothing stored");
    // DUAR_HANDLER_RETURN(1) finishes the thread without a return value.
    let fin = thread(&mut rig, "st_finish");
    let info = call(&dev, &rig, fin, 0);
    assert_eq!((info.state, info.return_value), (ts::FINISHED, 0));
    assert!(dev.dpa_stats().rtos_calls >= 6);
    assert_eq!(ok(rig.process_info()).status, ps::OK);
}

#[test]
fn exit_process_records_the_status_and_stops_the_process() {
    let (dev, ctx) = device();
    let mut rig = selftest(&ctx);
    let exit = thread(&mut rig, "st_exit");
    let add = thread(&mut rig, "st_add");
    call(&dev, &rig, exit, 0x85);
    let p = ok(rig.process_info());
    assert_eq!(
        (p.status, p.exit_status, p.error_syndrome),
        (ps::EXITED, 0x85, 0)
    );
    assert_eq!(ok(rig.thread_info(exit)).state, ts::FINISHED);
    refused(rig.run(add, Some(1)), check::DPA_PROCESS_STATE);
    // An exit is no failure: there is no coredump.
    match rig.coredump() {
        Err(mlx5_sim::testing::dpa_rig::DumpError::Devx(e)) => {
            refused::<()>(Err(e), check::NO_COREDUMP)
        }
        other => panic!("expected NO_COREDUMP, got {other:?}"),
    }
}

#[test]
fn unknown_rtos_call_fails_the_process() {
    let (dev, ctx) = device();
    let mut a = Asm::new();
    a.li(r::A0, 7).os_call(99).ret();
    let elf = ElfSpec::new(a.bytes()).symbol("bad_call", 0).build();
    let mut rig = ok(DpaRig::new(Arc::clone(&ctx), &elf, 0));
    let t = thread(&mut rig, "bad_call");
    let info = call(&dev, &rig, t, 0);
    assert_eq!(info.state, ts::ERROR);
    let p = ok(rig.process_info());
    assert_eq!(
        (p.status, p.error_syndrome),
        (ps::BAD_RTOS_CALL, error_syndrome::BAD_RTOS_CALL)
    );
    let d = ok(rig.coredump());
    assert_eq!(d.cause, Cause::UnknownRtosCall { number: 99 });
    // The pc of the ecall: after `li a0, 7` and `li a7, 99` (one instruction each).
    assert_eq!(d.pc, map::TEXT_BASE + 8);
    assert_eq!(d.gpr[17], 99);
    assert_eq!(d.gpr[10], 7);
    assert_eq!(dev.dpa_stats().faults, 1);
    // Regression: the number was kept in a 32-bit field, so 0x1_0000_0002 showed as 2, a call
    // the RTOS knows (WINDOW_SET_CFG). It is kept whole.
    let mut a = Asm::new();
    a.os_call(0x1_0000_0002).ret();
    let elf = ElfSpec::new(a.bytes()).symbol("wide_call", 0).build();
    let mut rig = ok(DpaRig::new(Arc::clone(&ctx), &elf, 0));
    let t = thread(&mut rig, "wide_call");
    assert_eq!(call(&dev, &rig, t, 0).state, ts::ERROR);
    let d = ok(rig.coredump());
    assert_eq!(
        d.cause,
        Cause::UnknownRtosCall {
            number: 0x1_0000_0002
        }
    );
    assert_eq!(d.device_code, 0);
}

#[test]
fn thread_state_changes_are_checked() {
    let (dev, ctx) = device();
    let mut rig = selftest(&ctx);
    let t = thread(&mut rig, "st_add");
    let ill = thread(&mut rig, "st_illegal");
    let probe = thread(&mut rig, "st_add");
    let set = |s: u8| {
        rig.modify_thread(
            t,
            DpaThreadModify {
                user_arg: None,
                state: Some(s),
            },
        )
    };
    refused(set(ts::ERROR), check::BAD_STATE_FIELD);
    refused(set(4), check::BAD_STATE_FIELD);
    // RUNNING then FINISHED before a pass: the run is withdrawn.
    ok(set(ts::RUNNING));
    assert_eq!(ok(rig.thread_info(t)).state, ts::RUNNING);
    ok(set(ts::FINISHED));
    dev.run_until_idle();
    assert_eq!(ok(rig.thread_info(t)).activations, 0);
    // A refused state change leaves user_arg alone.
    call(&dev, &rig, ill, 0);
    refused(
        rig.modify_thread(
            probe,
            DpaThreadModify {
                user_arg: Some(5),
                state: Some(ts::RUNNING),
            },
        ),
        check::DPA_PROCESS_STATE,
    );
    assert_eq!(ok(rig.thread_info(probe)).user_arg, 0);
    refused(set(ts::IDLE), check::DPA_PROCESS_STATE);
}

// ---------------------------------------------------------------------------------------------
// Faults, isolation, watchdog and coredumps.

/// A fresh selftest process whose thread `entry` ran once with `arg`: returns the rig and
/// the thread.
fn failing(dev: &Device, ctx: &Arc<dyn Devx>, entry: &str, arg: u64) -> (DpaRig, u32) {
    let mut rig = selftest(ctx);
    let t = thread(&mut rig, entry);
    let info = call(dev, &rig, t, arg);
    assert_eq!(info.state, ts::ERROR, "{entry}({arg:#x}) should fail");
    (rig, t)
}

fn memory_fault(rig: &DpaRig) -> (Access, MemError, u64, u64) {
    let d = ok(rig.coredump());
    match d.cause {
        Cause::MemoryFault { access, error, .. } => (access, error, d.fault_addr, d.pc),
        other => panic!("expected a memory fault, got {other:?}"),
    }
}

#[test]
fn illegal_instruction_coredump_has_registers_regions_and_stack() {
    let (dev, ctx) = device();
    let mut rig = selftest(&ctx);
    let block = scratch(&mut rig, 4096);
    let t = thread(&mut rig, "st_illegal");
    refused(
        rig.coredump().map_err(|e| match e {
            mlx5_sim::testing::dpa_rig::DumpError::Devx(e) => e,
            other => panic!("{other}"),
        }),
        check::NO_COREDUMP,
    );
    call(&dev, &rig, t, 0x5eed);
    let p = ok(rig.process_info());
    assert_eq!(
        (p.status, p.error_syndrome),
        (ps::FAULT, error_syndrome::ILLEGAL_INSTRUCTION)
    );
    let d = ok(rig.coredump());
    assert_eq!(d.cause, Cause::IllegalInstruction);
    assert_eq!(d.insn, 0x0000_000b, "custom-0 encoding");
    assert_eq!(d.pc, sym(&rig, "st_illegal"));
    assert_eq!((d.dpa_process_id, d.dpa_thread_id), (rig.process, t));
    assert_eq!(d.activation, 1);
    assert_eq!(d.error_syndrome, error_syndrome::ILLEGAL_INSTRUCTION);
    assert_eq!(d.gpr[0], 0);
    assert_eq!(d.gpr[1], map::SENTINEL, "ra");
    assert_eq!(d.gpr[10], 0x5eed, "a0");
    let tp = d.gpr[4];
    assert_eq!(
        d.region_of(tp).map(|r| r.kind),
        Some(RegionKind::ThreadContext)
    );
    let sp = d.gpr[2];
    assert_eq!(d.region_of(sp - 8).map(|r| r.kind), Some(RegionKind::Stack));
    assert_eq!(sp % 16, 0);
    let text = d.region_of(d.pc).unwrap();
    assert_eq!(text.kind, RegionKind::Text);
    assert!(text.perms.execute && !text.perms.write);
    assert_eq!(
        d.region_of(map::DUMEM_BASE).map(|r| r.kind),
        Some(RegionKind::Data)
    );
    let b = d.region_of(block).unwrap();
    assert_eq!((b.kind, b.size), (RegionKind::DpaMem, 1 << 20));
    assert!(d.stack_addr <= sp);
    assert_eq!(
        d.stack.len() as u64,
        map::stack_top((tp - map::SLOTS_BASE).div_ceil(map::SLOT_STRIDE) as u32) - d.stack_addr
    );
    assert!(d.to_string().contains("an illegal instruction"), "{d}");
    // Another context may not read it.
    let other = dev.open_devx();
    let r = devx::exec(
        &*other,
        &mlx5_dpa::mlx5::cmd::DpaProcessCoredump {
            dpa_process_id: rig.process,
        },
    );
    refused(r, check::WRONG_UID);
}

#[test]
fn stores_to_text_and_loads_from_nowhere_fault() {
    let (dev, ctx) = device();
    let (rig, _) = failing(&dev, &ctx, "st_store", map::TEXT_BASE + 0x10);
    let (access, error, addr, pc) = memory_fault(&rig);
    assert_eq!(
        (access, error, addr),
        (Access::Store, MemError::Denied, map::TEXT_BASE + 0x10)
    );
    let store_at = sym(&rig, "st_store");
    assert!(
        pc >= store_at && pc < store_at + 0x20,
        "pc {pc:#x} in st_store"
    );
    assert_eq!(
        ok(rig.process_info()).error_syndrome,
        error_syndrome::STORE_FAULT
    );
    // The text is unchanged.
    let text = ok(dev.dpa_read(rig.process, map::TEXT_BASE + 0x10, 8));
    assert_ne!(u64::from_le_bytes(text.try_into().unwrap()), ST_STORE_VALUE);

    for addr in [
        0,
        8,
        map::DUMEM_BASE + (64 << 20),
        map::SLOTS_BASE + map::CONTEXT_PAGE,
    ] {
        let (rig, _) = failing(&dev, &ctx, "st_fault_load", addr);
        let (access, error, at, _) = memory_fault(&rig);
        assert_eq!(
            (access, error, at),
            (Access::Load, MemError::Unmapped, addr),
            "{addr:#x}"
        );
        assert_eq!(
            ok(rig.process_info()).error_syndrome,
            error_syndrome::LOAD_FAULT
        );
    }
    // A misaligned load.
    let (rig, _) = failing(&dev, &ctx, "st_fault_load", map::DUMEM_BASE + 3);
    assert_eq!(memory_fault(&rig).1, MemError::Misaligned);
    // Fetching data: a thread whose entry is in DUMEM.
    let mut rig = selftest(&ctx);
    let t = ok(rig.thread(ThreadSpec {
        entry: map::DUMEM_BASE,
        ..ThreadSpec::default()
    }));
    call(&dev, &rig, t, 0);
    let (access, error, at, _) = memory_fault(&rig);
    assert_eq!(
        (access, error, at),
        (Access::Fetch, MemError::Denied, map::DUMEM_BASE)
    );
    assert_eq!(
        ok(rig.process_info()).error_syndrome,
        error_syndrome::FETCH_FAULT
    );
    // ebreak.
    let (rig, _) = failing(&dev, &ctx, "st_ebreak", 0);
    assert_eq!(ok(rig.coredump()).cause, Cause::Ebreak);
    assert_eq!(dev.dpa_stats().faults, 8);
}

#[test]
fn processes_are_isolated() {
    let (dev, ctx) = device();
    // Process B keeps a secret in a DPA_MEM block.
    let mut b = selftest(&ctx);
    let (_, secret_at) = ok(b.dpa_mem(8 << 20));
    let secret_at = secret_at + (7 << 20);
    ok(dev.dpa_write(b.process, secret_at, &0x005e_c7e7_u64.to_le_bytes()));
    // Process A has no block there: the address is not mapped in A.
    let (a, _) = failing(&dev, &ctx, "st_fault_load", secret_at);
    let (access, error, at, _) = memory_fault(&a);
    assert_eq!(
        (access, error, at),
        (Access::Load, MemError::Unmapped, secret_at)
    );
    // A process with its own block at the same address reads its own bytes.
    let mut c = selftest(&ctx);
    let (_, c_at) = ok(c.dpa_mem(8 << 20));
    assert_eq!(c_at + (7 << 20), secret_at, "same layout");
    let t = thread(&mut c, "st_fault_load");
    assert_eq!(call(&dev, &c, t, secret_at).return_value, 0);
    // Another process's outbox page is not mapped either.
    let foreign = ok(b.outbox(b.uar_page));
    let (a2, _) = failing(&dev, &ctx, "st_store", map::outbox(foreign) + 0x100);
    assert_eq!(memory_fault(&a2).1, MemError::Unmapped);
    // Nor is anything of the process itself beyond its allocations.
    assert_eq!(
        dev.dpa_read(c.process, c_at + (8 << 20), 8),
        Err(mlx5_sim::DpaAccessError::Unmapped(c_at + (8 << 20)))
    );
    assert_eq!(
        dev.dpa_read(0x7fff, map::DUMEM_BASE, 8),
        Err(mlx5_sim::DpaAccessError::NoProcess(0x7fff))
    );
    // B is untouched by all this.
    assert_eq!(ok(b.process_info()).status, ps::OK);
    assert_eq!(
        ok(dev.dpa_read(b.process, secret_at, 8)),
        0x005e_c7e7_u64.to_le_bytes()
    );
}

/// Regression: decoded-instruction caches were keyed by (process id, text generation); ids are
/// reused and generations restarted at 0, so a process that got a destroyed process's id ran
/// the old process's code on the same EU, even from another DevX context. Two hand-assembled
/// programs with the same layout, returning different constants, one after the other.
#[test]
fn a_reused_process_id_never_runs_the_previous_processs_code() {
    const EU: u16 = 3;
    let dev = Device::new(Profile::bf3());
    let program = |v: u64| ElfSpec::new(Asm::new().li(r::A0, v).ret().bytes()).build();
    let run = |ctx: &Arc<dyn Devx>, v: u64| {
        let mut rig = ok(DpaRig::new(Arc::clone(ctx), &program(v), 0));
        let t = ok(rig.thread(ThreadSpec {
            entry: map::TEXT_BASE,
            affinity: DpaAffinity::Strict(EU),
            ..ThreadSpec::default()
        }));
        let info = call(&dev, &rig, t, 0);
        assert_eq!(info.last_eu, EU);
        (rig.process, info.return_value)
    };
    let ctx_a = dev.open_devx();
    let (id_a, x) = run(&ctx_a, 0x1111);
    assert_eq!(x, 0x1111);
    drop(ctx_a);
    let ctx_b = dev.open_devx();
    let (id_b, y) = run(&ctx_b, 0x2222);
    assert_eq!(id_b, id_a, "the model reuses the destroyed process's id");
    assert_eq!(y, 0x2222, "process {id_b:#x} ran its predecessor's code");
}

#[test]
fn watchdog_stops_a_spinning_thread_with_a_coredump() {
    let (dev, ctx) = device();
    const BUDGET: u64 = 20_000;
    dev.with_profile_mut(|p| p.dpa_insn_budget = BUDGET);
    let mut rig = selftest(&ctx);
    let spin = thread(&mut rig, "st_spin_forever");
    let add = thread(&mut rig, "st_add");
    let info = call(&dev, &rig, spin, 0);
    assert_eq!(info.state, ts::ERROR);
    let p = ok(rig.process_info());
    assert_eq!(
        (p.status, p.error_syndrome),
        (ps::WATCHDOG, error_syndrome::WATCHDOG)
    );
    let d = ok(rig.coredump());
    assert_eq!(d.cause, Cause::Watchdog);
    assert_eq!(d.instret, BUDGET);
    let at = sym(&rig, "st_spin_forever");
    assert!(
        d.pc >= at && d.pc < at + 8,
        "pc {:#x} is the spin loop at {at:#x}",
        d.pc
    );
    let s = dev.dpa_stats();
    assert_eq!((s.watchdogs, s.faults, s.instructions), (1, 0, BUDGET));
    // The failed process takes no more runs.
    refused(rig.run(add, Some(1)), check::DPA_PROCESS_STATE);
    refused(rig.run(spin, Some(1)), check::DPA_PROCESS_STATE);
    // Other processes are unaffected.
    let mut other = selftest(&ctx);
    let t = thread(&mut other, "st_add");
    assert_eq!(call(&dev, &other, t, 1).return_value, 2);
}

// ---------------------------------------------------------------------------------------------
// Windows into host memory.

/// st_window_rw's argument block.
fn window_args(window: u32, mkey: u32, haddr: u64, write: u64) -> [u8; 48] {
    let mut b = [0u8; 48];
    b[0..4].copy_from_slice(&window.to_le_bytes());
    b[4..8].copy_from_slice(&mkey.to_le_bytes());
    b[8..16].copy_from_slice(&haddr.to_le_bytes());
    b[16..24].copy_from_slice(&write.to_le_bytes());
    b
}

/// An mkey over a fresh host buffer of `rig` in `pd`, with local read / write as given.
fn host_key(
    rig: &mut DpaRig,
    pd: u32,
    lr: bool,
    lw: bool,
) -> (mlx5_sim::testing::dpa_rig::HostBuf, u32) {
    let buf = ok(rig.host_buf(8192, UmemAccess::LOCAL_WRITE));
    let (mk, key) = ok(devx::create(
        rig.ctx(),
        &CreateMkey {
            pd: mlx5_dpa::mlx5::Pdn(pd),
            start_addr: buf.addr,
            len: buf.len as u64,
            access: MkeyAccess {
                local_read: lr,
                local_write: lw,
                ..MkeyAccess::default()
            },
            umem_id: buf.umem_id,
            umem_offset: 0,
            key: 0x3c,
            log_page_size: 12,
        },
    ));
    rig.keep(mk);
    (buf, key)
}

#[test]
fn window_reads_and_writes_host_memory_through_an_mkey() {
    let (dev, ctx) = device();
    let mut rig = selftest(&ctx);
    let window = ok(rig.window(rig.pd));
    let pd = rig.pd;
    let (buf, key) = host_key(&mut rig, pd, true, true);
    assert!(rig.host_write(&buf, 0x100, &0x1111_2222_3333_4444u64.to_le_bytes()));
    let args = scratch(&mut rig, 64);
    let haddr = buf.addr + 0x100;
    ok(dev.dpa_write(
        rig.process,
        args,
        &window_args(window, key, haddr, 0xfeed_f00d),
    ));
    let t = thread(&mut rig, "st_window_rw");
    assert_eq!(call(&dev, &rig, t, args).return_value, 0xfeed_f00d);
    let out = ok(dev.dpa_read(rig.process, args, 48));
    let word = |o: usize| u64::from_le_bytes(out[o..o + 8].try_into().unwrap());
    assert_eq!(
        word(24),
        0x1111_2222_3333_4444,
        "old value read through the window"
    );
    assert_eq!(word(32), 0xfeed_f00d);
    assert_eq!(
        word(40),
        map::WINDOW_BASE + haddr,
        "window_base + host address"
    );
    assert_eq!(rig.host_read(&buf, 0x100, 8), 0xfeed_f00du64.to_le_bytes());
    // The mkey's UMEM was pinned only while the activation ran: it deregisters now.
    drop(rig);
    assert_eq!(dev.inventory().count("UMEM"), 0);
}

/// Runs st_window_rw on a fresh process and returns the fault's device code.
fn window_fault(
    dev: &Device,
    ctx: &Arc<dyn Devx>,
    setup: impl FnOnce(&mut DpaRig) -> (u32, u32, u64),
) -> u32 {
    let mut rig = selftest(ctx);
    let (window, key, haddr) = setup(&mut rig);
    let args = scratch(&mut rig, 64);
    ok(dev.dpa_write(rig.process, args, &window_args(window, key, haddr, 1)));
    let t = thread(&mut rig, "st_window_rw");
    let info = call(dev, &rig, t, args);
    assert_eq!(info.state, ts::ERROR);
    match memory_fault(&rig) {
        (_, MemError::Device(code), addr, _) => {
            assert_eq!(addr, map::WINDOW_BASE + haddr);
            code
        }
        other => panic!("expected a window fault, got {other:?}"),
    }
}

#[test]
fn window_accesses_are_checked_against_the_mkey() {
    let (dev, ctx) = device();
    // No such key.
    let code = window_fault(&dev, &ctx, |rig| {
        let w = ok(rig.window(rig.pd));
        (w, 0x1234_5600, 0x10_0000)
    });
    assert_eq!(code, device_code::WINDOW_BAD_MKEY);
    // A key of another PD: refused.
    let code = window_fault(&dev, &ctx, |rig| {
        let w = ok(rig.window(rig.pd));
        let other_pd = ok(rig.alloc_pd());
        let (buf, key) = host_key(rig, other_pd, true, true);
        (w, key, buf.addr)
    });
    assert_eq!(code, device_code::WINDOW_PD_MISMATCH);
    // Outside the key's range.
    let code = window_fault(&dev, &ctx, |rig| {
        let w = ok(rig.window(rig.pd));
        let pd = rig.pd;
        let (buf, key) = host_key(rig, pd, true, true);
        (w, key, buf.addr + buf.len as u64)
    });
    assert_eq!(code, device_code::WINDOW_BOUNDS);
    // A key without local read.
    let code = window_fault(&dev, &ctx, |rig| {
        let w = ok(rig.window(rig.pd));
        let pd = rig.pd;
        let (buf, key) = host_key(rig, pd, false, true);
        (w, key, buf.addr)
    });
    assert_eq!(code, device_code::WINDOW_ACCESS);
    // A key of another user context.
    let other = dev.open_devx();
    let mut foreign = selftest(&other);
    let fpd = foreign.pd;
    let (fbuf, fkey) = host_key(&mut foreign, fpd, true, true);
    let code = window_fault(&dev, &ctx, |rig| {
        let w = ok(rig.window(rig.pd));
        (w, fkey, fbuf.addr)
    });
    assert_eq!(code, device_code::WINDOW_BAD_MKEY);
    // Another process's window cannot be selected (st_window_rw fails before any access).
    let mut rig = selftest(&ctx);
    let mut other_process = selftest(&ctx);
    let theirs = ok(other_process.window(other_process.pd));
    let args = scratch(&mut rig, 64);
    ok(dev.dpa_write(rig.process, args, &window_args(theirs, 0, 0x1000, 1)));
    let t = thread(&mut rig, "st_window_rw");
    assert_eq!(call(&dev, &rig, t, args).return_value, ST_FAILED);
}

#[test]
fn window_without_mkey_or_configuration_faults() {
    let (dev, ctx) = device();
    // The thread's default window is configured, no key written yet.
    let mut rig = selftest(&ctx);
    let window = ok(rig.window(rig.pd));
    let t = ok(rig.thread(ThreadSpec {
        entry: sym(&rig, "st_fault_load"),
        window,
        ..ThreadSpec::default()
    }));
    call(&dev, &rig, t, map::WINDOW_BASE + 0x1000);
    assert_eq!(
        memory_fault(&rig).1,
        MemError::Device(device_code::WINDOW_NO_MKEY)
    );
    // No window at all.
    let (rig, _) = failing(&dev, &ctx, "st_fault_load", map::WINDOW_BASE + 0x1000);
    assert_eq!(
        memory_fault(&rig).1,
        MemError::Device(device_code::WINDOW_NOT_CONFIGURED)
    );
    // The mkey register of a window the thread did not configure is not mapped.
    let mut rig = selftest(&ctx);
    let w = ok(rig.window(rig.pd));
    let t = thread(&mut rig, "st_store");
    call(&dev, &rig, t, map::window_cfg(w));
    assert_eq!(memory_fault(&rig).1, MemError::Unmapped);
}

// ---------------------------------------------------------------------------------------------
// Outbox doorbells.

#[test]
fn outbox_send_doorbell_runs_an_sq_and_foreign_doorbells_are_dropped() {
    let (dev, ctx) = device();
    let mut rig = selftest(&ctx);
    let eqn = ok(ctx.query_eqn(0));
    let uar = rig.uar_page;
    let mut q = nops(&mut rig, uar, CqEventTarget::Eq(eqn), None);
    // An SQ on another UAR, which the outbox may not ring.
    let uar2 = ok(rig.alloc_uar());
    let mut q2 = nops(&mut rig, uar2.page_id, CqEventTarget::Eq(eqn), None);
    let outbox = ok(rig.outbox(uar));
    let args = scratch(&mut rig, 16);
    let t = ok(rig.thread(ThreadSpec {
        entry: sym(&rig, "st_outbox_db"),
        outbox,
        ..ThreadSpec::default()
    }));
    let ring = |qn: u32, pi: u16| {
        let mut b = [0u8; 16];
        b[0..4].copy_from_slice(&ST_OUTBOX_KEEP.to_le_bytes());
        b[4..8].copy_from_slice(&0x1c0u32.to_le_bytes());
        let v = u64::from(pi) | u64::from(qn) << 32;
        b[8..16].copy_from_slice(&v.to_le_bytes());
        b
    };
    // The host writes two NOPs but rings nothing; the DPA rings the SXD doorbell.
    q.post(&rig);
    q.post(&rig);
    q2.post(&rig);
    ok(dev.dpa_write(rig.process, args, &ring(q.sqn, 2)));
    assert_eq!(call(&dev, &rig, t, args).return_value, map::outbox(outbox));
    assert_eq!(q.op_own(&rig, 0) >> 4, 0x0, "CQE 0: REQ");
    assert_eq!(q.op_own(&rig, 1) >> 4, 0x0, "CQE 1: REQ");
    assert_eq!(q.op_own(&rig, 2), 0xf1, "no third CQE");
    // The doorbell record moved to the counter the doorbell carried.
    assert_eq!(rig.host_read(&q.buf, SQ_DBR + 4, 4), 2u32.to_be_bytes());
    let s = dev.dpa_stats();
    assert_eq!((s.doorbells, s.violations), (1, 0));
    // The same doorbell for the SQ on another UAR: dropped, counted, the SQ untouched.
    ok(dev.dpa_write(rig.process, args, &ring(q2.sqn, 1)));
    call(&dev, &rig, t, args);
    assert_eq!(q2.op_own(&rig, 0), 0xf1);
    assert_eq!(rig.host_read(&q2.buf, SQ_DBR + 4, 4), [0; 4]);
    // A queue of another user context on its own UAR: dropped too.
    let other = dev.open_devx();
    let mut theirs = selftest(&other);
    let their_uar = theirs.uar_page;
    let tq = nops(&mut theirs, their_uar, CqEventTarget::Eq(eqn), None);
    ok(dev.dpa_write(rig.process, args, &ring(tq.sqn, 1)));
    call(&dev, &rig, t, args);
    let s = dev.dpa_stats();
    assert_eq!((s.doorbells, s.violations), (1, 2));
    assert_eq!(
        ok(rig.process_info()).status,
        ps::OK,
        "violations are no faults"
    );
    // An outbox register the model does not implement faults.
    let mut b = ring(q.sqn, 3);
    b[4..8].copy_from_slice(&0x200u32.to_le_bytes());
    ok(dev.dpa_write(rig.process, args, &b));
    call(&dev, &rig, t, args);
    assert_eq!(
        memory_fault(&rig).1,
        MemError::Device(device_code::OUTBOX_REGISTER)
    );
}

// ---------------------------------------------------------------------------------------------
// Activation by CQ completions.

#[test]
fn each_armed_completion_activates_the_thread() {
    let (dev, ctx) = device();
    let mut rig = selftest(&ctx);
    let counter = scratch(&mut rig, 8);
    let t = ok(rig.thread(ThreadSpec {
        entry: sym(&rig, "st_counter"),
        arg: counter,
        ..ThreadSpec::default()
    }));
    let uar = rig.uar_page;
    let mut q = nops(&mut rig, uar, CqEventTarget::DpaThread(t), None);
    // st_counter does not re-arm: the host arms before each completion.
    for n in 1..=5u64 {
        rig.arm_cq(q.cqn, (n - 1) as u32);
        q.post(&rig);
        q.ring(&rig);
        dev.run_until_idle();
        let c = ok(dev.dpa_read(rig.process, counter, 8));
        assert_eq!(u64::from_le_bytes(c.try_into().unwrap()), n);
        let info = ok(rig.thread_info(t));
        assert_eq!((info.state, info.activations), (ts::IDLE, n));
    }
    // A completion on a disarmed CQ activates nothing.
    q.post(&rig);
    q.ring(&rig);
    dev.run_until_idle();
    assert_eq!(ok(rig.thread_info(t)).activations, 5);
    // A finished thread ignores events.
    ok(rig.modify_thread(
        t,
        DpaThreadModify {
            user_arg: None,
            state: Some(ts::FINISHED),
        },
    ));
    rig.arm_cq(q.cqn, 5);
    dev.run_until_idle();
    assert_eq!(ok(rig.thread_info(t)).activations, 5);
    assert_eq!(dev.dpa_stats().dropped_events, 1);
}

/// A handler that counts its activations and re-arms its CQ through the outbox:
/// a0 -> { counter u64 @0, cqn u32 @8, ci u32 @12 }; one CQE consumed per activation.
fn rearming_counter() -> Vec<u8> {
    let mut a = Asm::new();
    a.li(r::T0, 1)
        .amoadd_d(r::ZERO, r::T0, r::A0)
        .lwu(r::T1, r::A0, 12)
        .addi(r::T1, r::T1, 1)
        .sw(r::T1, r::A0, 12)
        .lwu(r::T2, r::A0, 8)
        .slli(r::T3, r::T1, 32)
        .or(r::T3, r::T3, r::T2)
        .ld(r::T4, r::TP, 8)
        .sd(r::T3, r::T4, 0x100)
        .li(r::A0, 0)
        .os_call(0);
    ElfSpec::new(a.bytes())
        .symbol("handler", 0)
        .data(vec![0; 8], 0)
        .build()
}

#[test]
fn handler_rearms_its_cq_in_dpa_memory_and_runs_once_per_completion() {
    const N: u16 = 12;
    let (dev, ctx) = device();
    let mut rig = ok(DpaRig::new(Arc::clone(&ctx), &rearming_counter(), 0));
    let outbox = ok(rig.outbox(rig.uar_page));
    let (_, ring_at) = ok(rig.dpa_mem(64 << LOG_CQ));
    let (_, args) = ok(rig.dpa_mem(4096));
    let t = ok(rig.thread(ThreadSpec {
        entry: ok(rig.symbol("handler").ok_or("handler")),
        arg: args,
        outbox,
        ..ThreadSpec::default()
    }));
    // The CQ ring and its doorbell record live in DPA memory (the process's DUMEM).
    for i in 0..(1u64 << LOG_CQ) {
        let at = i * CQE_SIZE as u64 + cqe::at::OP_OWN as u64;
        ok(dev.dpa_write(rig.process, ring_at + at, &[0xf1]));
    }
    let dumem = rig.dumem_id;
    let mem = RingMem {
        umem_id: dumem,
        umem_offset: rig.dumem_offset(ring_at),
        dbr_umem_id: dumem,
        dbr_offset: rig.dumem_offset(args + 64),
    };
    let uar = rig.uar_page;
    let mut q = nops(&mut rig, uar, CqEventTarget::DpaThread(t), Some(mem));
    let mut block = [0u8; 16];
    block[8..12].copy_from_slice(&q.cqn.to_le_bytes());
    ok(dev.dpa_write(rig.process, args, &block));
    // N completions at once; the host arms once, the handler re-arms after each.
    rig.arm_cq(q.cqn, 0);
    for _ in 0..N {
        q.post(&rig);
    }
    q.ring(&rig);
    dev.run_until_idle();
    let b = ok(dev.dpa_read(rig.process, args, 16));
    assert_eq!(
        u64::from_le_bytes(b[0..8].try_into().unwrap()),
        u64::from(N)
    );
    assert_eq!(
        u32::from_le_bytes(b[12..16].try_into().unwrap()),
        u32::from(N)
    );
    let info = ok(rig.thread_info(t));
    assert_eq!((info.activations, info.state), (u64::from(N), ts::IDLE));
    // The CQEs are in DPA memory, written by the datapath through the DUMEM.
    for i in 0..u64::from(N) {
        let cqe = Cqe64::new_checked(ok(dev.dpa_read(rig.process, ring_at + i * 64, 64))).unwrap();
        assert_eq!(cqe.opcode(), 0x0, "CQE {i} is a REQ completion");
        assert_eq!(cqe.wqe_counter(), i as u16);
    }
    assert_eq!(dev.dpa_stats().doorbells, u64::from(N));
    // The process's memory is in use by the CQ: it cannot go.
    let r = rig.destroy(l::dpa::obj_type::DPA_PROCESS, rig.process);
    refused(r, check::OBJECT_IN_USE);
}

#[test]
fn dpa_memory_as_umem_is_bounded_and_owned() {
    let (dev, ctx) = device();
    let mut rig = selftest(&ctx);
    let (_, block) = ok(rig.dpa_mem(4096));
    let eqn = ok(ctx.query_eqn(0));
    let uar = rig.uar_page;
    let cq = |umem_id: u32, off: u64| CreateCq {
        log_cq_size: 6,
        cqe_sz: 0,
        uar_page: uar,
        target: CqEventTarget::Eq(eqn),
        mem: RingMem {
            umem_id,
            umem_offset: off,
            dbr_umem_id: umem_id,
            dbr_offset: off,
        },
        cq_period: 0,
        cq_max_count: 0,
        oi: false,
        cc: false,
        cqe_comp: false,
    };
    // The block is 1 MiB (the block size): a ring at its end does not fit.
    let end = rig.dumem_offset(block) + (1 << 20);
    refused(
        devx::create(rig.ctx(), &cq(rig.dumem_id, end - 64 * 32)),
        check::BAD_UMEM_RANGE,
    );
    let (obj, _) = ok(devx::create(
        rig.ctx(),
        &cq(rig.dumem_id, rig.dumem_offset(block)),
    ));
    rig.keep(obj);
    // Another context cannot name this process's DUMEM.
    let other = dev.open_devx();
    let theirs = selftest(&other);
    refused(
        devx::create(
            &other,
            &CreateCq {
                uar_page: theirs.uar_page,
                ..cq(rig.dumem_id, 0)
            },
        ),
        check::WRONG_UID,
    );
}

// ---------------------------------------------------------------------------------------------
// EUs: affinity, the worker pool, the background engine.

fn eug(ctx: &Arc<dyn Devx>, members: &[u32]) -> u16 {
    let mut d = vec![0u8; <l::nic_dpa_eug_reg::Layout as mlx5_dpa::mlx5::Layout>::SIZE_BYTES];
    for &eu in members {
        let byte = 0x40 + (eu / 32) as usize * 4 + (3 - (eu % 32) as usize / 8);
        d[byte] |= 1 << (eu % 8);
    }
    let created = ok(devx::exec(
        &**ctx,
        &mlx5_dpa::mlx5::cmd::AccessRegisterUser {
            register_id: l::reg_id::NIC_DPA_EUG_REG,
            argument: 0,
            write: true,
            data: d,
        },
    ));
    u16::from_be_bytes([created[2], created[3]])
}

#[test]
fn affinity_picks_the_eu() {
    let (dev, ctx) = device();
    let mut rig = selftest(&ctx);
    let add = sym(&rig, "st_add");
    let strict = ok(rig.thread(ThreadSpec {
        entry: add,
        affinity: DpaAffinity::Strict(200),
        ..ThreadSpec::default()
    }));
    let group = eug(&ctx, &[17, 42]);
    let grouped: Vec<u32> = (0..3)
        .map(|_| {
            ok(rig.thread(ThreadSpec {
                entry: add,
                affinity: DpaAffinity::Group(group),
                ..ThreadSpec::default()
            }))
        })
        .collect();
    let any = ok(rig.thread(ThreadSpec {
        entry: add,
        ..ThreadSpec::default()
    }));
    assert_eq!(call(&dev, &rig, strict, 1).last_eu, 200);
    assert_eq!(
        call(&dev, &rig, any, 1).last_eu,
        200,
        "without affinity: the free EU where the process's code is decoded"
    );
    // Three group threads at once: EUs 17 and 42 in the first pass, the third waits for
    // one of them.
    for &t in &grouped {
        ok(rig.run(t, Some(1)));
    }
    assert!(dev.step() > 0);
    let eus: Vec<u16> = grouped
        .iter()
        .map(|&t| ok(rig.thread_info(t)).last_eu)
        .collect();
    assert_eq!(&eus[..2], &[17, 42]);
    assert_eq!(ok(rig.thread_info(grouped[2])).state, ts::RUNNING, "queued");
    dev.run_until_idle();
    let third = ok(rig.thread_info(grouped[2]));
    assert_eq!(third.state, ts::FINISHED);
    assert!(eus[..2].contains(&third.last_eu), "{}", third.last_eu);
}

/// More processes than an EU keeps code caches for (`EU_CODE_CACHES`, 8), their threads
/// without affinity, activated one at a time in turn: each finds its code where it ran
/// before instead of all taking turns on EU 0 and evicting each other's decoded code.
#[test]
fn many_processes_taking_turns_keep_their_code_decoded() {
    const PROCESSES: usize = 12;
    let (dev, ctx) = device();
    let mut rigs: Vec<DpaRig> = (0..PROCESSES).map(|_| selftest(&ctx)).collect();
    let threads: Vec<u32> = rigs.iter_mut().map(|r| thread(r, "st_add")).collect();
    for (rig, &t) in rigs.iter().zip(&threads) {
        assert_eq!(call(&dev, rig, t, 1).return_value, 2);
    }
    let first = dev.dpa_stats().code_caches_made;
    assert_eq!(
        first, PROCESSES as u64,
        "one per process at its first activation"
    );
    for round in 0..3u64 {
        for (rig, &t) in rigs.iter().zip(&threads) {
            let info = call(&dev, rig, t, round);
            assert_eq!(info.return_value, round + 1);
        }
    }
    assert_eq!(
        dev.dpa_stats().code_caches_made,
        first,
        "later activations found their code decoded"
    );
}

#[test]
fn many_threads_run_in_parallel_on_the_pool() {
    const THREADS: u64 = 96;
    let (dev, ctx) = device();
    let mut rig = selftest(&ctx);
    let add = sym(&rig, "st_add");
    let counter = scratch(&mut rig, 8);
    let adders: Vec<u32> = (0..THREADS)
        .map(|_| {
            ok(rig.thread(ThreadSpec {
                entry: add,
                ..ThreadSpec::default()
            }))
        })
        .collect();
    let counters: Vec<u32> = (0..THREADS)
        .map(|_| {
            ok(rig.thread(ThreadSpec {
                entry: sym(&rig, "st_counter"),
                arg: counter,
                ..ThreadSpec::default()
            }))
        })
        .collect();
    for (i, &t) in adders.iter().enumerate() {
        ok(rig.run(t, Some(1000 + i as u64)));
    }
    for &t in &counters {
        ok(rig.run(t, None));
    }
    // One pass dispatches all of them (192 EUs) and waits for the pool.
    dev.step();
    let mut eus = std::collections::BTreeSet::new();
    for (i, &t) in adders.iter().enumerate() {
        let info = ok(rig.thread_info(t));
        assert_eq!(info.return_value, 1001 + i as u64);
        eus.insert(info.last_eu);
    }
    for &t in &counters {
        let info = ok(rig.thread_info(t));
        assert_eq!((info.state, info.activations), (ts::IDLE, 1));
        eus.insert(info.last_eu);
    }
    assert_eq!(eus.len() as u64, 2 * THREADS, "every thread had its own EU");
    // The atomic increments of all EUs add up.
    let c = ok(dev.dpa_read(rig.process, counter, 8));
    assert_eq!(u64::from_le_bytes(c.try_into().unwrap()), THREADS);
    assert_eq!(dev.dpa_stats().activations, 2 * THREADS);
}

#[test]
fn background_engine_runs_activations() {
    let (dev, ctx) = device();
    let mut rig = selftest(&ctx);
    let t = thread(&mut rig, "st_add");
    dev.start_engine();
    ok(rig.run(t, Some(6)));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let info = loop {
        let info = ok(rig.thread_info(t));
        if info.state == ts::FINISHED {
            break info;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "thread did not finish: {info:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    };
    dev.stop_engine();
    assert_eq!(info.return_value, 7);
}

#[test]
fn destroying_everything_leaves_nothing() {
    let (dev, ctx) = device();
    {
        let mut rig = ok(DpaRig::new(Arc::clone(&ctx), &rearming_counter(), 1 << 20));
        let outbox = ok(rig.outbox(rig.uar_page));
        let window = ok(rig.window(rig.pd));
        let (_, args) = ok(rig.dpa_mem(4096));
        ok(rig.dpa_uar(rig.uar_page));
        let t = ok(rig.thread(ThreadSpec {
            entry: ok(rig.symbol("handler").ok_or("handler")),
            arg: args,
            outbox,
            window,
            ..ThreadSpec::default()
        }));
        ok(rig.run(t, None));
        dev.run_until_idle();
    }
    drop(ctx);
    assert!(dev.inventory().is_empty(), "{}", dev.inventory());
}

#[test]
fn fw_blobs_programs_run_their_self_checks() {
    let (dev, ctx) = device();
    // rpc_calc: the FlexIO RPC sample through the runtime's entry and generic unpack (a call:
    // unpack, func, ret, reserved, eight argument words).
    let mut rig = ok(DpaRig::new(
        Arc::clone(&ctx),
        include_bytes!("../../../fw-blobs/bin/rpc_calc.elf"),
        1 << 20,
    ));
    let args = scratch(&mut rig, 96);
    let mut block = [0u8; 96];
    block[0..8].copy_from_slice(&sym(&rig, "mlx5_dpa_rpc_unpack_u64").to_le_bytes());
    block[8..16].copy_from_slice(&sym(&rig, "rpc_calculate").to_le_bytes());
    block[32..40].copy_from_slice(&44u64.to_le_bytes());
    block[40..48].copy_from_slice(&55u64.to_le_bytes());
    ok(dev.dpa_write(rig.process, args, &block));
    let t = thread(&mut rig, "mlx5_dpa_rpc_entry");
    assert_eq!(call(&dev, &rig, t, args).return_value, 99);
    assert_eq!(
        ok(dev.dpa_read(rig.process, args + 16, 8)),
        99u64.to_le_bytes()
    );
    // matmul and packet_processor check themselves against golden results (0 = pass).
    for (elf, entry) in [
        (
            &include_bytes!("../../../fw-blobs/bin/matmul.elf")[..],
            "matmul_selfcheck",
        ),
        (
            &include_bytes!("../../../fw-blobs/bin/packet_processor.elf")[..],
            "pp_selfcheck",
        ),
    ] {
        let mut rig = ok(DpaRig::new(Arc::clone(&ctx), elf, 1 << 20));
        let t = thread(&mut rig, entry);
        let info = call(&dev, &rig, t, 0);
        assert_eq!(
            (info.state, info.return_value),
            (ts::FINISHED, 0),
            "{entry}"
        );
    }
}

#[test]
fn outbox_eq_doorbells_update_the_dpa_eq() {
    let (dev, ctx) = device();
    let mut rig = selftest(&ctx);
    let (_, ring) = ok(rig.dpa_mem(4096));
    let dumem = rig.dumem_id;
    let eq_attr = |uar_page: u32, umem_id: u32, umem_offset: u64| mlx5_dpa::mlx5::cmd::DpaEqAttr {
        log_umem_size: 6,
        uar_page,
        umem_id,
        umem_offset,
        oi: false,
    };
    let eq = ok(rig.create(eq_attr(rig.uar_page, dumem, rig.dumem_offset(ring))));
    let outbox = ok(rig.outbox(rig.uar_page));
    let args = scratch(&mut rig, 16);
    let t = ok(rig.thread(ThreadSpec {
        entry: sym(&rig, "st_outbox_db"),
        outbox,
        ..ThreadSpec::default()
    }));
    let mut b = [0u8; 16];
    b[0..4].copy_from_slice(&ST_OUTBOX_KEEP.to_le_bytes());
    b[4..8].copy_from_slice(&0x140u32.to_le_bytes());
    b[8..16].copy_from_slice(&(u64::from(eq) | 77 << 32).to_le_bytes());
    ok(dev.dpa_write(rig.process, args, &b));
    call(&dev, &rig, t, args);
    let q = ok(rig.query(
        l::dpa::obj_type::DPA_EQ,
        eq,
        <l::dpa_eq::Layout as mlx5_dpa::mlx5::Layout>::SIZE_BYTES,
    ));
    let v = ok(mlx5_dpa::mlx5::View::<l::dpa_eq::Layout>::new(&q));
    assert_eq!(v.get(l::dpa_eq::consumer_counter), 77);
    // An EQ on another UAR: dropped.
    let uar2 = ok(rig.alloc_uar());
    let eq2 = ok(rig.create(eq_attr(uar2.page_id, dumem, rig.dumem_offset(ring) + 1024)));
    b[4..8].copy_from_slice(&0x180u32.to_le_bytes());
    b[8..16].copy_from_slice(&(u64::from(eq2) | 5 << 32).to_le_bytes());
    ok(dev.dpa_write(rig.process, args, &b));
    call(&dev, &rig, t, args);
    let s = dev.dpa_stats();
    assert_eq!((s.doorbells, s.violations), (1, 1));
}
