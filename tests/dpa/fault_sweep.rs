//! Fault injection over every multi-step flow (`mlx5_sim::testing::fault_sweep`): each firmware command
//! of the set-up fails in turn, then each command of the teardown, on a fresh model each time.
//! Every failure is a `DpaError::Step` naming its step with the injected firmware status
//! underneath; a command whose failure a flow survives is declared optional, with its reason;
//! nothing panics or hangs; the model holds nothing once the context closes.

use std::sync::Arc;
use std::time::Duration;

use mlx5_dpa::devx::{Devx, UarKind};
use mlx5_dpa::dpa::{DpaError, Process, ProcessAttr, StepExt};
use mlx5_dpa::mem::{Access, MemoryRegion, Pd};
use mlx5_dpa::mlx5::cmd::{OuterMatch, QueryNicVportContext};
use mlx5_dpa::mlx5::{Opcode, Status};
use mlx5_dpa::queues::steering::{RxFlow, Tis, TransportDomain};
use mlx5_dpa::queues::{
    Cq, CqConfig, EthSq, EthSqConfig, HostQueueMem, QpConfig, RcConnect, RcPeer, RcQp, RemoteAddr,
    Rq, RqConfig, SendOp, SendWr,
};
use mlx5_dpa::uar::UarPage;
use mlx5_sim::testing::fault_sweep::{sweep, Sweep, SweepReport};

use crate::flexio_window as window_sample;

use crate::flexio_packet_processor as pp;

const RPC_CALC: &[u8] = include_bytes!("../../fw-blobs/bin/rpc_calc.elf");
const T: Duration = Duration::from_secs(10);

/// The optional command every DPA flow may survive: the second general capability page,
/// which older firmware lacks (`Caps::decode` takes it as absent).
const CAP_PAGE_2: (Opcode, Option<u16>, &str) = (
    Opcode::QUERY_HCA_CAP,
    Some(0x41),
    "cmd_hca_cap_2 (QUERY_HCA_CAP op_mod 0x20 | current) is optional: older firmware lacks it",
);

/// A failure is a named step with the injected status under it.
fn judge(e: &DpaError, status: Status) -> Result<String, String> {
    let step = e.step().ok_or("no step named")?;
    let root = format!("{:?}", e.root());
    if !root.contains(&format!("status: {status:?}")) {
        return Err(format!("step {step:?} does not carry the injected status"));
    }
    Ok(step.to_string())
}

/// Runs the sweep and prints its report (visible with `--nocapture`).
fn run<T>(s: &Sweep<'_, T, DpaError>) -> SweepReport {
    let r = sweep(s);
    eprintln!(
        "{}: {} set-up commands, {} teardown commands, {} targets not reached; steps {:?}; teardown errors {}; tolerated {:?}",
        s.name,
        r.setup_commands,
        r.teardown_commands,
        r.not_reached,
        r.setup_steps,
        r.teardown_errors,
        r.tolerated
    );
    assert!(r.setup_commands > 0 && r.teardown_commands > 0, "{r:?}");
    r
}

/// The next completion of `cq` (bounded wait); an error completion is the step's error.
fn completion(cq: &mut Cq, step: &'static str) -> Result<mlx5_dpa::queues::Completion, DpaError> {
    cq.poll_timeout(T).step(step).and_then(|c| cqe(c, step))
}

/// An error completion, as the step's error.
fn cqe<T>(
    r: Result<T, mlx5_dpa::queues::CompletionError>,
    step: &'static str,
) -> Result<T, DpaError> {
    r.map_err(|e| DpaError::Step {
        step,
        source: Box::new(DpaError::Device(format!("error completion: {e}"))),
    })
}

fn drop_it<T>(t: T) -> Result<(), DpaError> {
    drop(t);
    Ok(())
}

/// The Ethernet loopback of `examples/eth_loopback.rs`: a queue set, a flow rule, and frames
/// out and back.
struct Eth {
    _flow: RxFlow,
    _rq: Rq,
    _sq: EthSq,
    _cqs: (Cq, Cq),
    _mrs: (MemoryRegion, MemoryRegion),
}

fn eth_loopback(ctx: &Arc<dyn Devx>) -> Result<Eth, DpaError> {
    let mac = mlx5_dpa::devx::exec(ctx.as_ref(), &QueryNicVportContext)
        .step("querying the port's MAC address")?
        .mac;
    let pd = Pd::alloc(ctx).step("allocating the PD")?;
    let uar = UarPage::alloc(ctx, UarKind::NonCached).step("allocating the UAR")?;
    let td = TransportDomain::alloc(ctx).step("allocating the transport domain")?;
    let tis = Tis::create(ctx, &td, &pd).step("creating the TIS")?;
    let cqc = CqConfig::new(5);
    let cq = |what| {
        let mem = HostQueueMem::alloc(ctx, cqc.ring_bytes()).step(what)?;
        Cq::create(ctx, &uar, mem, &cqc).step(what)
    };
    let mut tx_cq = cq("creating the send CQ")?;
    let mut rx_cq = cq("creating the receive CQ")?;
    let sqc = EthSqConfig {
        log_size: 5,
        signal_every: 1,
    };
    let sq_mem = HostQueueMem::alloc(ctx, sqc.ring_bytes()).step("creating the SQ")?;
    let mut sq =
        EthSq::create(ctx, &pd, &uar, &tis, &tx_cq, sq_mem, &sqc).step("creating the SQ")?;
    let rqc = RqConfig {
        log_size: 4,
        max_sge: 1,
    };
    let rq_mem = HostQueueMem::alloc(ctx, rqc.ring_bytes()).step("creating the RQ")?;
    let mut rq = Rq::create(ctx, &pd, &uar, &rx_cq, rq_mem, &rqc).step("creating the RQ")?;
    let flow = RxFlow::to_rq(
        ctx,
        &td,
        &rq,
        OuterMatch {
            dmac: Some(mac),
            ..Default::default()
        },
        0,
    )
    .step("steering the port's MAC to the RQ")?;
    let tx = MemoryRegion::alloc(ctx, &pd, 16 * 256, Access::LOCAL_WRITE)
        .step("registering the send buffers")?;
    let rx = MemoryRegion::alloc(ctx, &pd, 16 * 256, Access::LOCAL_WRITE)
        .step("registering the receive buffers")?;
    // Four frames out and back, byte for byte.
    for i in 0..4 {
        rq.post_recv(&[rx.sge(i * 256, 256).step("posting receives")?], i as u64)
            .step("posting receives")?;
    }
    rq.ring_doorbell();
    for i in 0..4usize {
        let mut f = mac.to_vec();
        f.extend_from_slice(&[2, 0, 0, 0, 0, 1, 0x88, 0xb5]);
        f.resize(64 + i, i as u8);
        tx.buf().write(i * 256, &f).step("sending frames")?;
        let rest = tx.sge(i * 256 + 18, f.len() - 18).step("sending frames")?;
        sq.post_send(&f[..18], &[rest], i as u64)
            .step("sending frames")?;
    }
    sq.ring_doorbell();
    for i in 0..4usize {
        let c = completion(&mut rx_cq, "receiving frames")?;
        let slot = rq.complete(c.wqe_counter).step("receiving frames")? as usize;
        let got = rx
            .buf()
            .to_vec(slot * 256, c.byte_len as usize)
            .step("receiving frames")?;
        assert_eq!(got, tx.buf().to_vec(i * 256, 64 + i).unwrap(), "frame {i}");
        let s = completion(&mut tx_cq, "completing sends")?;
        sq.complete(&s).step("completing sends")?;
    }
    Ok(Eth {
        _flow: flow,
        _rq: rq,
        _sq: sq,
        _cqs: (tx_cq, rx_cq),
        _mrs: (tx, rx),
    })
}

#[test]
fn ethernet_loopback() {
    run(&Sweep {
        name: "Ethernet loopback",
        profile: "bf3",
        setup: &eth_loopback,
        teardown: &drop_it,
        judge: &judge,
        optional: &[],
    });
}

/// One end of an RC connection: its CQs, QP and a registered buffer.
struct RcSide {
    qp: RcQp,
    send_cq: Cq,
    recv_cq: Cq,
    mr: MemoryRegion,
}

fn rc_side(ctx: &Arc<dyn Devx>, what: &'static str) -> Result<RcSide, DpaError> {
    let pd = Pd::alloc(ctx).step(what)?;
    let uar = UarPage::alloc(ctx, UarKind::NonCached).step(what)?;
    let cqc = CqConfig::new(5);
    let mem = HostQueueMem::alloc(ctx, cqc.ring_bytes()).step(what)?;
    let send_cq = Cq::create(ctx, &uar, mem, &cqc).step(what)?;
    let mem = HostQueueMem::alloc(ctx, cqc.ring_bytes()).step(what)?;
    let recv_cq = Cq::create(ctx, &uar, mem, &cqc).step(what)?;
    let qpc = QpConfig::new(5, 4);
    let mem = HostQueueMem::alloc(ctx, qpc.ring_bytes()).step(what)?;
    let qp = RcQp::create(ctx, &pd, &uar, &send_cq, &recv_cq, mem, &qpc).step(what)?;
    let access = Access::LOCAL_WRITE | Access::REMOTE_READ | Access::REMOTE_WRITE;
    let mr = MemoryRegion::alloc(ctx, &pd, 8192, access).step(what)?;
    Ok(RcSide {
        qp,
        send_cq,
        recv_cq,
        mr,
    })
}

/// Two RC QPs on one port connected by force-loopback, and a SEND and an RDMA WRITE between
/// them, checked byte for byte.
fn rc_connect(ctx: &Arc<dyn Devx>) -> Result<(RcSide, RcSide), DpaError> {
    let mut a = rc_side(ctx, "creating side A")?;
    let mut b = rc_side(ctx, "creating side B")?;
    let mut ca = RcConnect::new(RcPeer::Loopback {
        remote_qpn: b.qp.qpn(),
    });
    let mut cb = RcConnect::new(RcPeer::Loopback {
        remote_qpn: a.qp.qpn(),
    });
    ca.send_psn = 0x100;
    cb.recv_psn = 0x100;
    cb.send_psn = 0x200;
    ca.recv_psn = 0x200;
    a.qp.connect(&ca).step("connecting A")?;
    b.qp.connect(&cb).step("connecting B")?;
    const SEND: &str = "a SEND from A to B";
    a.mr.buf().write(0, b"hello over RC").step(SEND)?;
    b.qp.post_recv(&[b.mr.sge(4096, 64).step(SEND)?], 7)
        .step(SEND)?;
    b.qp.ring_recv_doorbell();
    let sg = [a.mr.sge(0, 13).step(SEND)?];
    a.qp.post_send(&SendWr::new(
        1,
        SendOp::Send {
            sges: &sg,
            imm: None,
        },
    ))
    .step(SEND)?;
    a.qp.ring_send_doorbell();
    let c = completion(&mut b.recv_cq, SEND)?;
    b.qp.complete_recv(c.wqe_counter).step(SEND)?;
    assert_eq!(
        b.mr.buf().to_vec(4096, c.byte_len as usize).unwrap(),
        b"hello over RC"
    );
    let c = completion(&mut a.send_cq, SEND)?;
    a.qp.complete_send(c.wqe_counter).step(SEND)?;
    const WRITE: &str = "an RDMA WRITE from B to A";
    b.mr.buf().write(0, &[0x5a; 100]).step(WRITE)?;
    let sg = [b.mr.sge(0, 100).step(WRITE)?];
    let remote = RemoteAddr {
        addr: a.mr.addr() + 2048,
        rkey: a.mr.rkey(),
    };
    b.qp.post_send(&SendWr::new(
        2,
        SendOp::Write {
            sges: &sg,
            remote,
            imm: None,
        },
    ))
    .step(WRITE)?;
    b.qp.ring_send_doorbell();
    let c = completion(&mut b.send_cq, WRITE)?;
    b.qp.complete_send(c.wqe_counter).step(WRITE)?;
    assert_eq!(a.mr.buf().to_vec(2048, 100).unwrap(), [0x5a; 100]);
    Ok((a, b))
}

#[test]
fn rc_connect_and_traffic() {
    run(&Sweep {
        name: "RC connect + traffic",
        profile: "bf3",
        setup: &rc_connect,
        teardown: &drop_it,
        judge: &judge,
        optional: &[],
    });
}

/// FlexIO's RPC sample: a process and one call.
fn rpc(ctx: &Arc<dyn Devx>) -> Result<Process, DpaError> {
    let p = Process::create(ctx, RPC_CALC, &ProcessAttr::default())?;
    let r = p.call("rpc_calculate", &[44, 55])?;
    assert_eq!(r, 99);
    Ok(p)
}

#[test]
fn rpc_process_and_call() {
    run(&Sweep {
        name: "RPC",
        profile: "bf3",
        setup: &rpc,
        teardown: &drop_it,
        judge: &judge,
        optional: &[CAP_PAGE_2],
    });
}

const SELFTEST: &[u8] = include_bytes!("../../fw-blobs/bin/selftest.elf");

/// FlexIO's window sample: the DPA writes a host buffer through a window.
struct WindowFlow {
    window: mlx5_dpa::dpa::window::Window,
    _args: mlx5_dpa::dpa::DpaBuf,
    _mr: MemoryRegion,
    _process: Process,
}

fn window(ctx: &Arc<dyn Devx>) -> Result<WindowFlow, DpaError> {
    const LEN: usize = 256;
    let process = Process::create(
        ctx,
        window_sample::WINDOW_WRITER_ELF,
        &ProcessAttr::default(),
    )?;
    let mr = MemoryRegion::alloc(ctx, process.pd(), LEN, Access::LOCAL_WRITE)
        .step("registering the host buffer")?;
    let window = process.window(process.pd()).step("creating the window")?;
    let target = window
        .host_buf(mr.mkey(), 0, LEN)
        .step("describing the host buffer")?;
    let args = process.alloc(48).step("allocating the argument block")?;
    let a = window_sample::window_writer_args(&target, 3, 1);
    process
        .copy_to_dev(args.daddr(), &a)
        .step("writing the argument block")?;
    let written = process.call_raw("window_write", args.daddr())?;
    assert_eq!(written, LEN as u64);
    Ok(WindowFlow {
        window,
        _args: args,
        _mr: mr,
        _process: process,
    })
}

#[test]
fn window_flow() {
    run(&Sweep {
        name: "window",
        profile: "bf3",
        setup: &window,
        teardown: &|w: WindowFlow| {
            w.window.destroy().step("destroying the window")?;
            Ok(())
        },
        judge: &judge,
        optional: &[CAP_PAGE_2],
    });
}

/// A message stream and one message printed on the DPA, delivered to the host.
struct StreamFlow {
    stream: mlx5_dpa::dpa::msg_stream::MsgStream,
    _printer: mlx5_dpa::dpa::thread::EventHandler,
    _outbox: mlx5_dpa::dpa::outbox::Outbox,
    _process: Process,
}

fn message_stream(ctx: &Arc<dyn Devx>) -> Result<StreamFlow, DpaError> {
    use mlx5_dpa::dpa::msg_stream::{MsgLevel, MsgOutput, MsgStream, MsgStreamAttr, SyncMode};
    use mlx5_dpa::dpa::thread::EventHandlerAttr;
    let process = Process::create(ctx, SELFTEST, &ProcessAttr::default())?;
    let outbox = process.outbox(process.uar()).step("creating the outbox")?;
    let mut stream = MsgStream::create(
        &process,
        &MsgStreamAttr {
            sync_mode: SyncMode::Batch,
            ..MsgStreamAttr::new(0, MsgLevel::Info, MsgOutput::Collect)
        },
    )?;
    let printer = process
        .event_handler(&EventHandlerAttr {
            default_outbox_id: outbox.id(),
            ..EventHandlerAttr::new("st_print", 0)
        })
        .step("creating the printing thread")?;
    printer.run(7).step("printing")?;
    printer.wait_done(T).step("printing")?;
    let start = std::time::Instant::now();
    let mut got = Vec::new();
    while got.is_empty() {
        stream.poll().step("receiving the message")?;
        got = stream.take_messages();
        assert!(start.elapsed() < T, "no message arrived");
    }
    assert_eq!(got, ["selftest 7\n"]);
    Ok(StreamFlow {
        stream,
        _printer: printer,
        _outbox: outbox,
        _process: process,
    })
}

#[test]
fn message_stream_flow() {
    run(&Sweep {
        name: "message stream",
        profile: "bf3",
        setup: &message_stream,
        teardown: &|f: StreamFlow| f.stream.close(),
        judge: &judge,
        optional: &[CAP_PAGE_2],
    });
}

/// A command queue of two workers running four tasks that each store to DPA memory.
struct CmdqFlow {
    _q: mlx5_dpa::dpa::cmdq::CmdQueue,
    _out: mlx5_dpa::dpa::DpaBuf,
    _process: Process,
}

fn command_queue(ctx: &Arc<dyn Devx>) -> Result<CmdqFlow, DpaError> {
    use mlx5_dpa::dpa::cmdq::{CmdqAttr, CmdqState};
    let process = Process::create(ctx, SELFTEST, &ProcessAttr::default())?;
    let out = process.alloc(64).step("allocating the results")?;
    let mut q = process.cmdq(&CmdqAttr::new(2, 2, CmdqState::Running))?;
    for i in 0..4 {
        q.task_add("st_store", out.daddr() + 8 * i)
            .step("adding tasks")?;
    }
    q.wait_empty(T).step("waiting for the tasks")?;
    let mut b = [0u8; 32];
    process
        .copy_from_dev(out.daddr(), &mut b)
        .step("reading the results")?;
    assert!(b
        .chunks(8)
        .all(|w| w == 0x0123_4567_89ab_cdef_u64.to_le_bytes()));
    Ok(CmdqFlow {
        _q: q,
        _out: out,
        _process: process,
    })
}

#[test]
fn command_queue_flow() {
    run(&Sweep {
        name: "command queue",
        profile: "bf3",
        setup: &command_queue,
        teardown: &drop_it,
        judge: &judge,
        optional: &[CAP_PAGE_2],
    });
}

/// FlexIO's packet-processor sample in its own protocol (`host2dev_packet_processor_data`):
/// every firmware command of the set-up failed in turn.
#[test]
fn packet_processor_sample_protocol_flow() {
    let r = run(&Sweep {
        name: "packet processor (sample protocol)",
        profile: "bf3",
        setup: &|ctx| pp::Sample::setup(ctx, pp::PP_SAMPLE_ELF),
        teardown: &drop_it,
        judge: &judge,
        optional: &[CAP_PAGE_2],
    });
    for step in [
        "creating the DPA process",
        "creating the message stream",
        "allocating the RQ and SQ data buffers",
        "creating the key over the data buffers",
        "creating the outbox",
        "creating the event handler",
        "creating the RQ's CQ in DPA memory",
        "creating the RQ in DPA memory",
        "creating the SQ's CQ in DPA memory",
        "allocating the transport domain",
        "creating the TIS",
        "creating the SQ in DPA memory",
        "steering frames from the sample's source MAC to the RQ",
        "running the event handler",
    ] {
        assert!(
            r.setup_steps.contains(step),
            "no failure in {step:?}: {r:?}"
        );
    }
}

/// FlexIO's packet-processor sample, set up and ready (its own test sends frames).
#[test]
fn packet_processor_flow() {
    let r = run(&Sweep {
        name: "packet processor",
        profile: "bf3",
        setup: &|ctx| {
            let p = pp::PacketProcessor::setup(ctx, &pp::Options::default())?;
            p.wait_ready(T).step("waiting for the handler")?;
            Ok(p)
        },
        teardown: &drop_it,
        judge: &judge,
        optional: &[CAP_PAGE_2],
    });
    // Every step that talks to firmware was hit by some failure. (The context block comes
    // out of a DPA_MEM block the process already has, so its step issues no command.)
    for step in [
        "querying the port's MAC address",
        "creating the DPA process",
        "allocating packet buffers in DPA memory",
        "creating the key over the packet buffers",
        "creating the outbox",
        "creating the event handler",
        "creating the RQ's CQ in DPA memory",
        "creating the RQ in DPA memory",
        "creating the SQ's CQ in DPA memory",
        "allocating the transport domain",
        "creating the TIS",
        "creating the SQ in DPA memory",
        "steering the flow to the RQ",
        "running the event handler",
    ] {
        assert!(
            r.setup_steps.contains(step),
            "no failure in {step:?}: {r:?}"
        );
    }
    assert_eq!(
        r.tolerated.len(),
        1,
        "only the optional capability page: {r:?}"
    );
}

/// A DOCA DPA flow's failure: a step error, or the context's error state naming the launch
/// step that failed and the injected status.
/// A DOCA DPA context of `fw-blobs/src/doca_kernels.c`, its device log collected.
fn doca_start(ctx: &Arc<dyn Devx>) -> Result<mlx5_dpa::doca::Dpa, mlx5_dpa::doca::DocaError> {
    use mlx5_dpa::doca::{DocaError, Dpa, DpaAttr};
    const KERNELS: &[u8] = include_bytes!("../../fw-blobs/bin/doca_kernels.elf");
    let app = mlx5_dpa::dpa::app::App::from_device_elf("doca_kernels", KERNELS)
        .map_err(|e| DocaError::InvalidValue(e.to_string()))?;
    let attr = DpaAttr {
        log_output: mlx5_dpa::dpa::msg_stream::MsgOutput::Collect,
        ..DpaAttr::default()
    };
    Dpa::start(ctx, &app, &attr)
}

fn judge_doca(e: &mlx5_dpa::doca::DocaError, status: Status) -> Result<String, String> {
    use mlx5_dpa::doca::DocaError;
    match e {
        DocaError::Dpa(e) => judge(e, status),
        DocaError::Fatal(why) => {
            let step = why
                .strip_prefix("starting a kernel launch: ")
                .and_then(|rest| rest.split(": ").next())
                .ok_or_else(|| format!("a fatal error naming no launch step: {why}"))?;
            if !why.contains(&status.to_string()) {
                return Err(format!("{why:?} does not carry the injected status"));
            }
            Ok(format!("launch: {step}"))
        }
        other => Err(format!("not a step error: {other:?}")),
    }
}

/// A DOCA DPA context, one kernel launch to its completion event, a DPA thread woken by an RPC
/// through a notification completion, and a memcpy by async ops into a completion context
/// (`mlx5_dpa::doca`): the
/// context's set-up steps fail as `DocaError::Dpa` naming the step; a launch the launcher
/// could not start puts the context in the error state, and the wait for its completion
/// returns that (`DocaError::Fatal`), naming the launch step and the firmware status.
#[test]
fn doca_dpa_kernel_launch() {
    use mlx5_dpa::doca::{
        AsyncOps, CompletionContext, DocaError, Dpa, DpaMmap, DpaRdma, DpaRdmaSrq, DpaThread,
        NotificationCompletion, SyncEvent, SyncEventAttr,
    };

    use mlx5_dpa::dpa::DpaBuf;

    type Copy = (
        AsyncOps,
        (DpaRdma, DpaRdma, DpaRdma, DpaRdmaSrq),
        CompletionContext,
        DpaMmap,
        DpaBuf,
        SyncEvent,
    );
    type Flow = (
        Dpa,
        SyncEvent,
        NotificationCompletion,
        DpaThread,
        SyncEvent,
        Copy,
    );
    fn setup(ctx: &Arc<dyn Devx>) -> Result<Flow, DocaError> {
        let dpa = doca_start(ctx)?;
        let comp = dpa.sync_event(SyncEventAttr::dpa_to_cpu())?;
        dpa.kernel_launch_update_set(None, Some((&comp, 1)), 2, "hello_world", &[])?;
        comp.wait_gt(0, u64::MAX, T)?;
        // A DPA thread woken by an RPC through a notification completion (the seed's hello
        // world).
        let done = dpa.sync_event(SyncEventAttr::dpa_to_cpu())?;
        let mut thread = dpa.thread_create();
        thread.set_func_arg("hello_world_thread_kernel", done.dpa_handle()?)?;
        thread.start()?;
        let notify = dpa.notification_completion_create(&mut thread)?;
        thread.run()?;
        dpa.rpc("hello_world_thread_notify_rpc", &[notify.dpa_handle()])?;
        done.wait_gt(0, u64::MAX, T)?;
        // A memcpy by async ops into a completion context, polled by a kernel.
        let mut cc = dpa.completion_create(8)?;
        cc.start()?;
        let mut ops = dpa.async_ops_create(8, 5)?;
        ops.attach(&cc)?;
        ops.start()?;
        let buf = dpa.mem_alloc(128)?;
        let map = dpa.mmap_dpa(&buf)?;
        let copied = dpa.sync_event(SyncEventAttr::dpa_to_cpu())?;
        let args = [
            ops.dpa_handle()?,
            cc.dpa_handle()?,
            map.dpa_handle(),
            buf.daddr() + 64,
            map.dpa_handle(),
            buf.daddr(),
            64,
            copied.dpa_handle()?,
        ]
        .map(mlx5_dpa::doca::KernelArg::U64);
        dpa.kernel_launch_update_set(None, None, 1, "memcpy_kernel", &args)?;
        copied.wait_gt(0, u64::MAX, T)?;
        // A DPA RDMA with two connections: to a second RDMA, and to a third that receives
        // from a shared receive queue.
        let mut r1 = dpa.rdma_create(4)?;
        r1.set_max_connections(2)?;
        r1.attach(&cc)?;
        r1.start()?;
        let mut r2 = dpa.rdma_create(4)?;
        r2.attach(&cc)?;
        r2.start()?;
        r1.connect(&mut r2)?;
        let srq = dpa.rdma_srq_create(4)?;
        let mut r3 = dpa.rdma_create_with_srq(&srq, 4)?;
        r3.attach(&cc)?;
        r3.start()?;
        r1.connect(&mut r3)?;
        Ok((
            dpa,
            comp,
            notify,
            thread,
            done,
            (ops, (r1, r2, r3, srq), cc, map, buf, copied),
        ))
    }
    fn teardown(
        (dpa, comp, notify, thread, done, (ops, rdmas, cc, map, buf, copied)): Flow,
    ) -> Result<(), DocaError> {
        drop((ops, rdmas, cc, map, buf, copied));
        drop(notify);
        thread.stop();
        drop((comp, done));
        dpa.stop()
    }
    let r = sweep(&Sweep {
        name: "DOCA DPA kernel launch",
        profile: "bf3",
        setup: &setup,
        teardown: &teardown,
        judge: &judge_doca,
        optional: &[CAP_PAGE_2],
    });
    eprintln!("{r:?}");
    assert!(r.setup_commands > 0 && r.teardown_commands > 0, "{r:?}");
    for step in [
        "creating the DPA process",
        "creating the context's window",
        "launch: creating a kernel thread",
        "launch: running the kernel threads",
        "creating the DPA thread",
        "creating the notification queues",
        "running the DPA thread to arm its CQ",
        "creating the completion context's CQ",
        "creating the async ops' queues",
        "connecting the async ops' QPs",
        "creating the map's key",
        "creating the RDMA's QP",
        "connecting the RDMA QPs",
        "creating the shared receive queue",
        "allocating the RDMA's scratch words",
    ] {
        assert!(r.setup_steps.contains(step), "{step}: {:?}", r.setup_steps);
    }
}

/// A DOCA DPA context extended to sub-function 1 (`Dpa::device_extend`) with an RDMA there,
/// connected to one of the base context: every set-up and teardown command fails in turn, as
/// a step error naming the step, and nothing is left on either function once the contexts
/// close.
#[test]
fn doca_dpa_extended_context() {
    use mlx5_dpa::doca::{CompletionContext, DocaError, Dpa, DpaRdma};

    type Flow = (
        (DpaRdma, DpaRdma, CompletionContext, CompletionContext),
        Dpa,
        Dpa,
        Arc<dyn Devx>,
    );
    fn setup(ctx: &Arc<dyn Devx>) -> Result<Flow, DocaError> {
        let sf = mlx5_sim::testing::fault_sweep::running_device()
            .open_function(1)
            .map_err(DocaError::InvalidValue)?;
        let base = doca_start(ctx)?;
        let ext = base.device_extend(&sf)?;
        let mut ec = ext.completion_create(8)?;
        ec.start()?;
        let mut er = ext.rdma_create(4)?;
        er.attach(&ec)?;
        er.start()?;
        let mut bc = base.completion_create(8)?;
        bc.start()?;
        let mut br = base.rdma_create(4)?;
        br.attach(&bc)?;
        br.start()?;
        er.connect(&mut br)?;
        Ok(((er, br, ec, bc), ext, base, sf))
    }
    fn teardown((objs, ext, base, sf): Flow) -> Result<(), DocaError> {
        drop(objs);
        drop(ext);
        let r = base.stop();
        drop(sf);
        r
    }
    let r = sweep(&Sweep {
        name: "DOCA DPA extended context",
        profile: "bf3",
        setup: &setup,
        teardown: &teardown,
        judge: &judge_doca,
        optional: &[CAP_PAGE_2],
    });
    eprintln!("{r:?}");
    for step in [
        "querying the other function's vhca_id",
        "granting the other function access to the process",
        "aliasing the process on the other function",
        "allocating the other function's PD",
        "extending a UAR of the other function to the process",
        "creating the completion context's CQ",
        "creating the RDMA's QP",
        "connecting the RDMA QPs",
    ] {
        assert!(r.setup_steps.contains(step), "{step}: {:?}", r.setup_steps);
    }
}

// ---------------------------------------------------------------------------------------------
// Issue 30: the flows the sweep lacked.

/// A handler's activation count reaching `n`, bounded.
fn activations(h: &mlx5_dpa::dpa::thread::EventHandler, n: u64) -> Result<u16, DpaError> {
    let start = std::time::Instant::now();
    loop {
        let info = h.info().step("waiting for the handler")?;
        if info.activations >= n && info.state != mlx5_dpa::dpa::thread::ThreadState::Running {
            return Ok(info.last_eu);
        }
        if start.elapsed() > T {
            return Err(DpaError::Timeout {
                what: "the handler's activation",
                after: T,
            });
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// EU groups and partitions, with handlers bound to them: the physical function makes a
/// partition for sub-function 1 and a group of its own; a handler of the group runs on it, and
/// a process of the sub-function runs in the partition. A teardown fault on a register's
/// destroy (a drop has nowhere to report it) must leave nothing past the context's close
/// (regression, issue 30, defect 6: `EUG=1` was left).
#[test]
fn eu_groups_partitions_and_a_sub_function() {
    use mlx5_dpa::dpa::caps::DpaCaps;
    use mlx5_dpa::dpa::eu::{EuGroup, EuPartition};
    use mlx5_dpa::dpa::thread::{Affinity, EventHandler, EventHandlerAttr};
    type Flow = (
        (EventHandler, Process, EventHandler, Process),
        EuGroup,
        EuPartition,
        Arc<dyn Devx>,
    );
    fn setup(ctx: &Arc<dyn Devx>) -> Result<Flow, DpaError> {
        let sf = mlx5_sim::testing::fault_sweep::running_device()
            .open_function(1)
            .map_err(DpaError::BadArgs)?;
        let sf_vhca = DpaCaps::query(&sf)
            .step("querying the sub-function")?
            .vhca_id;
        let members: Vec<u32> = (64..80).collect();
        let part =
            EuPartition::create(ctx, &members, 2, &[sf_vhca]).step("creating the EU partition")?;
        let group = EuGroup::create(ctx, "pair", &[5, 6]).step("creating the EU group")?;
        let p = Process::create(ctx, SELFTEST, &ProcessAttr::default())?;
        let h = p
            .event_handler(&EventHandlerAttr {
                affinity: Affinity::Group(group.id()),
                ..EventHandlerAttr::new("st_add", 1)
            })
            .step("creating the grouped handler")?;
        h.run(1).step("running the grouped handler")?;
        let eu = activations(&h, 1)?;
        assert!(eu == 5 || eu == 6, "ran on EU {eu}");
        let ps = Process::create(&sf, SELFTEST, &ProcessAttr::default())?;
        let hs = ps
            .event_handler(&EventHandlerAttr::new("st_add", 1))
            .step("creating the sub-function's handler")?;
        hs.run(1).step("running the sub-function's handler")?;
        let eu = activations(&hs, 1)?;
        assert!(members.contains(&u32::from(eu)), "ran on EU {eu}");
        Ok(((hs, ps, h, p), group, part, sf))
    }
    let r = run(&Sweep {
        name: "EU groups, partitions and a sub-function",
        profile: "bf3",
        setup: &setup,
        teardown: &drop_it,
        judge: &judge,
        optional: &[CAP_PAGE_2],
    });
    for step in [
        "creating the EU partition",
        "creating the EU group",
        "running the grouped handler",
    ] {
        assert!(r.setup_steps.contains(step), "{step}: {:?}", r.setup_steps);
    }
}

/// A signed image on a device that requires signatures (`--sim-trust`), its NIC counters
/// configured and sampled, a debugger attached while it is called, and the coredump of a
/// faulting call retrieved.
#[test]
fn signed_image_nic_counters_debugger_and_coredump() {
    use mlx5_dpa::dpa::auth;
    const LEAF_KEY: &str = include_str!("../data/auth/leaf.key.pem");
    const LEAF: &[u8] = include_bytes!("../data/auth/leaf.der");
    const ROOT: &[u8] = include_bytes!("../data/auth/root.der");
    /// Signed once (RSA signing is slow in a debug build).
    fn signature() -> Vec<u8> {
        static SIG: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
        SIG.get_or_init(|| {
            let key = auth::private_key_from_pem(LEAF_KEY).expect("key");
            auth::sign(SELFTEST, &key, &[ROOT.to_vec(), LEAF.to_vec()]).expect("sign")
        })
        .clone()
    }
    type Flow = (Process, mlx5_dpa::dpa::DpaBuf);
    fn setup(ctx: &Arc<dyn Devx>) -> Result<Flow, DpaError> {
        let d = mlx5_sim::testing::fault_sweep::running_device();
        d.with_profile_mut(|p| p.dpa_auth_roots = vec![ROOT.to_vec()]);
        let attr = ProcessAttr {
            signature: Some(signature()),
            ..ProcessAttr::default()
        };
        let p = Process::create(ctx, SELFTEST, &attr)?;
        // `struct st_nic_args`: op 0 (configure), two counters (port 0 TX / RX bytes).
        const NIC: &str = "configuring the NIC counters";
        let a = p.alloc(136).step(NIC)?;
        let mut args = vec![0u8; 136];
        args[4..8].copy_from_slice(&2u32.to_le_bytes());
        args[8..12].copy_from_slice(&0x20u32.to_le_bytes());
        args[12..16].copy_from_slice(&0x10u32.to_le_bytes());
        p.copy_to_dev(a.daddr(), &args).step(NIC)?;
        assert_eq!(p.call_raw("st_nic_counters", a.daddr()).step(NIC)?, 0);
        const SAMPLE: &str = "sampling the NIC counters";
        p.copy_to_dev(a.daddr(), &1u32.to_le_bytes()).step(SAMPLE)?;
        assert_eq!(p.call_raw("st_nic_counters", a.daddr()).step(SAMPLE)?, 0);
        // A debugger attached (the model's, as GDB's server uses it) while it is called.
        let dbg = d
            .dpa_debug(p.id())
            .map_err(|e| DpaError::BadArgs(e.to_string()))?;
        assert_eq!(
            p.call_raw("st_add", 41).step("a call under the debugger")?,
            42
        );
        drop(dbg);
        // A faulting call, and its coredump.
        match p.call_raw("st_fault_load", 0x10).step("a faulting call") {
            Err(DpaError::ProcessFault { .. }) => {}
            Err(e) => return Err(e),
            Ok(v) => panic!("st_fault_load returned {v:#x}"),
        }
        let dump = p.coredump().step("retrieving the coredump")?;
        assert_eq!(dump.fault_addr, 0x10);
        Ok((p, a))
    }
    let r = run(&Sweep {
        name: "signed image, NIC counters, debugger, coredump",
        profile: "bf3",
        setup: &setup,
        teardown: &drop_it,
        judge: &judge,
        optional: &[
            CAP_PAGE_2,
            (
                Opcode::MODIFY_GENERAL_OBJECT,
                Some(0x2b),
                "withdrawing the thread of a call that failed (the fault): a refusal only \
                 means the thread's destroy waits for its activation (`dpa::rpc`)",
            ),
            (
                Opcode::DESTROY_GENERAL_OBJECT,
                Some(0x2b),
                "destroying the thread of a call that failed (the fault) as the error returns: \
                 a drop has nowhere to report, the context's close releases the thread",
            ),
        ],
    });
    assert!(
        r.setup_steps.contains("retrieving the coredump"),
        "{:?}",
        r.setup_steps
    );
}

/// Host RC between two linked models, the receiving side (the swept one) taking its messages
/// from a shared receive queue (the host SRQ API).
#[test]
fn linked_rc_into_a_host_srq() {
    use mlx5_dpa::devx;
    use mlx5_dpa::queues::Srq;
    type Flow = (
        (RcQp, Cq, Cq, Srq, MemoryRegion),
        RcSide,
        Arc<dyn Devx>,
        mlx5_sim::Device,
    );
    fn peer(to: &Arc<dyn Devx>, qpn: mlx5_dpa::queues::Qpn) -> Result<RcPeer, DpaError> {
        const S: &str = "querying the peer's address";
        let (gid_index, entry) = devx::roce_v2_ipv4_address(to.as_ref()).step(S)?;
        let mac = devx::exec(to.as_ref(), &QueryNicVportContext).step(S)?.mac;
        Ok(RcPeer::Remote {
            remote_qpn: qpn,
            mac,
            gid: entry.gid,
            gid_index,
            hop_limit: 64,
        })
    }
    fn setup(ctx: &Arc<dyn Devx>) -> Result<Flow, DpaError> {
        let d = mlx5_sim::testing::fault_sweep::running_device();
        d.set_port_address([0x02, 0, 0x5e, 0, 0, 1], [10, 0, 0, 1]);
        let other = mlx5_sim::Device::with_profile("bf3").expect("bf3");
        other.set_port_address([0x02, 0, 0x5e, 0, 0, 2], [10, 0, 0, 2]);
        other.start_engine();
        mlx5_sim::Device::link(&d, &other);
        let octx = other.open_devx();
        let mut sender = rc_side(&octx, "creating the sender")?;
        const RX: &str = "creating the receiver";
        let pd = Pd::alloc(ctx).step(RX)?;
        let uar = UarPage::alloc(ctx, UarKind::NonCached).step(RX)?;
        let cqc = CqConfig::new(5);
        let send_cq = Cq::create(
            ctx,
            &uar,
            HostQueueMem::alloc(ctx, cqc.ring_bytes()).step(RX)?,
            &cqc,
        )
        .step(RX)?;
        let mut recv_cq = Cq::create(
            ctx,
            &uar,
            HostQueueMem::alloc(ctx, cqc.ring_bytes()).step(RX)?,
            &cqc,
        )
        .step(RX)?;
        let rqc = RqConfig {
            log_size: 3,
            max_sge: 1,
        };
        const SRQ: &str = "creating the shared receive queue";
        let mut srq = Srq::create(
            ctx,
            &pd,
            &uar,
            HostQueueMem::alloc(ctx, rqc.ring_bytes()).step(SRQ)?,
            &rqc,
        )
        .step(SRQ)?;
        let qpc = QpConfig {
            log_rq_size: None,
            ..QpConfig::new(5, 0)
        };
        let mut qp = RcQp::create_with_srq(
            ctx,
            &pd,
            &uar,
            &send_cq,
            &recv_cq,
            &srq,
            HostQueueMem::alloc(ctx, qpc.ring_bytes()).step(RX)?,
            &qpc,
        )
        .step(RX)?;
        let mr = MemoryRegion::alloc(ctx, &pd, 4096, Access::LOCAL_WRITE).step(RX)?;
        sender
            .qp
            .connect(&RcConnect::new(peer(ctx, qp.qpn())?))
            .step("connecting the sender")?;
        qp.connect(&RcConnect::new(peer(&octx, sender.qp.qpn())?))
            .step("connecting the receiver")?;
        const SEND: &str = "a SEND into the SRQ";
        srq.post_recv(&[mr.sge(0, 4096).step(SEND)?], 9)
            .step(SEND)?;
        srq.ring_doorbell();
        sender.mr.buf().write(0, b"over the cable").step(SEND)?;
        let sg = [sender.mr.sge(0, 14).step(SEND)?];
        sender
            .qp
            .post_send(&SendWr::new(
                1,
                SendOp::Send {
                    sges: &sg,
                    imm: None,
                },
            ))
            .step(SEND)?;
        sender.qp.ring_send_doorbell();
        let c = completion(&mut recv_cq, SEND)?;
        assert_eq!(srq.complete(c.wqe_counter).step(SEND)?, 9);
        assert_eq!(mr.buf().to_vec(0, 14).unwrap(), b"over the cable");
        let c = completion(&mut sender.send_cq, SEND)?;
        sender.qp.complete_send(c.wqe_counter).step(SEND)?;
        Ok(((qp, send_cq, recv_cq, srq, mr), sender, octx, other))
    }
    fn teardown((local, sender, octx, other): Flow) -> Result<(), DpaError> {
        drop(local);
        drop((sender, octx));
        other.stop_engine();
        Ok(())
    }
    let r = run(&Sweep {
        name: "linked RC into a host SRQ",
        profile: "bf3",
        setup: &setup,
        teardown: &teardown,
        judge: &judge,
        optional: &[],
    });
    for step in [
        "querying the peer's address",
        "creating the receiver",
        "creating the shared receive queue",
        "connecting the receiver",
    ] {
        assert!(r.setup_steps.contains(step), "{step}: {:?}", r.setup_steps);
    }
}

/// DOCA DPA buffer arrays (over host and DPA memory), a hash table filled by kernel threads,
/// and a thread group whose members are notified by a kernel.
#[test]
fn doca_dpa_buffers_hash_table_and_thread_group() {
    use mlx5_dpa::doca::{
        DocaError, Dpa, DpaBufArray, DpaHashTable, DpaMmap, DpaThread, DpaThreadGroup, KernelArg,
        NotificationCompletion, SyncEvent, SyncEventAttr,
    };

    type Flow = (
        (DpaBufArray, DpaBufArray, DpaMmap),
        (DpaHashTable, mlx5_dpa::dpa::DpaBuf, SyncEvent),
        (
            DpaThreadGroup,
            Vec<NotificationCompletion>,
            Vec<DpaThread>,
            SyncEvent,
        ),
        Dpa,
    );
    fn setup(ctx: &Arc<dyn Devx>) -> Result<Flow, DocaError> {
        let dpa = doca_start(ctx)?;
        // Buffer arrays: four buffers over host memory, one left for DPA code to fill.
        let host = dpa.mmap_host(4096)?;
        let mut harr = dpa.buf_arr_create(4)?;
        harr.set_params(&host, 256, 512)?;
        harr.start()?;
        let mut darr = dpa.buf_arr_create(1)?;
        darr.start()?;
        // A hash table, two kernel threads adding, removing and finding 4 keys each.
        let ht = dpa.hash_table_create(16)?;
        let out = dpa.mem_alloc(16)?;
        let done = dpa.sync_event(SyncEventAttr::dpa_to_cpu())?;
        dpa.kernel_launch_update_set(
            None,
            Some((&done, 1)),
            2,
            "hash_kernel",
            &[ht.dpa_handle(), 1000, 4, out.daddr()].map(KernelArg::U64),
        )?;
        done.wait_gt(0, u64::MAX, T)?;
        // A thread group of two, each notified once by a kernel.
        let ev = dpa.sync_event(SyncEventAttr::dpa_to_cpu())?;
        let mut tg = dpa.thread_group_create(2)?;
        let (mut threads, mut ncs) = (Vec::new(), Vec::new());
        for _ in 0..2 {
            let mut t = dpa.thread_create();
            t.set_func_arg("group_thread", ev.dpa_handle()?)?;
            t.start()?;
            ncs.push(dpa.notification_completion_create(&mut t)?);
            threads.push(t);
        }
        for (rank, t) in threads.iter().enumerate() {
            tg.set_thread(t, rank as u32)?;
        }
        tg.start()?;
        for t in &threads {
            t.run()?;
        }
        for nc in &ncs {
            dpa.kernel_launch_update_set(
                None,
                None,
                1,
                "notify_kernel",
                &[nc.dpa_handle(), 1].map(KernelArg::U64),
            )?;
        }
        let want = 0b11 + ((2 * 2) << 32);
        assert_eq!(ev.wait_gt(want - 1, u64::MAX, T)?, want);
        Ok((
            (harr, darr, host),
            (ht, out, done),
            (tg, ncs, threads, ev),
            dpa,
        ))
    }
    fn teardown((arrays, table, (tg, ncs, threads, ev), dpa): Flow) -> Result<(), DocaError> {
        drop((arrays, table, tg, ncs));
        for t in threads {
            t.stop();
        }
        drop(ev);
        dpa.stop()
    }
    let r = run_doca(&Sweep {
        name: "DOCA DPA buffers, hash table, thread group",
        profile: "bf3",
        setup: &setup,
        teardown: &teardown,
        judge: &judge_doca,
        optional: &[CAP_PAGE_2],
    });
    assert!(!r.setup_steps.is_empty(), "{r:?}");
}

/// DOCA DPA RDMA between two linked models (`export` / `connect_to`), and a sync event of
/// the other model set by this one's kernels through it (a remote publisher).
#[test]
fn doca_dpa_linked_rdma_and_a_remote_publisher() {
    use mlx5_dpa::doca::{
        CompletionContext, DocaError, Dpa, DpaRdma, KernelArg, RemoteSyncEvent, SyncEvent,
        SyncEventAttr,
    };

    type Side = (DpaRdma, CompletionContext);
    type Flow = (
        (RemoteSyncEvent, SyncEvent, SyncEvent),
        (Side, Dpa),
        (Side, Dpa, mlx5_sim::Device),
    );
    fn side(dpa: &Dpa) -> Result<Side, DocaError> {
        let mut comp = dpa.completion_create(32)?;
        comp.start()?;
        let mut rdma = dpa.rdma_create(16)?;
        rdma.attach(&comp)?;
        rdma.start()?;
        Ok((rdma, comp))
    }
    fn setup(ctx: &Arc<dyn Devx>) -> Result<Flow, DocaError> {
        let d = mlx5_sim::testing::fault_sweep::running_device();
        d.set_port_address([0x02, 0, 0x5e, 0, 0, 1], [10, 0, 0, 1]);
        let other = mlx5_sim::Device::with_profile("bf3").expect("bf3");
        other.set_port_address([0x02, 0, 0x5e, 0, 0, 2], [10, 0, 0, 2]);
        other.start_engine();
        mlx5_sim::Device::link(&d, &other);
        let ob = doca_start(&other.open_devx())?;
        let (mut orx, ocomp) = side(&ob)?;
        let a = doca_start(ctx)?;
        let (mut rdma, comp) = side(&a)?;
        let (ea, eb) = (rdma.export()?, orx.export()?);
        rdma.connect_to(&ea, &eb.details())?;
        orx.connect_to(&eb, &ea.details())?;
        // The other model's event, set to 40 by this model's kernel over the connection.
        let ev = ob.sync_event(SyncEventAttr {
            publisher_remote: true,
            subscriber_cpu: true,
            ..SyncEventAttr::default()
        })?;
        let remote = a.remote_event(ev.export_remote()?)?;
        let done = a.sync_event(SyncEventAttr::dpa_to_cpu())?;
        a.kernel_launch_update_set(
            None,
            Some((&done, 1)),
            1,
            "rdma_kernel",
            &[rdma.dpa_handle()?, 7, 0, 0, 0, remote.dpa_handle(), 0, 40].map(KernelArg::U64),
        )?;
        done.wait_gt(0, u64::MAX, T)?;
        assert_eq!(ev.wait_gt(39, u64::MAX, T)?, 40);
        Ok((
            (remote, ev, done),
            ((rdma, comp), a),
            ((orx, ocomp), ob, other),
        ))
    }
    fn teardown((events, (mine, a), (theirs, ob, other)): Flow) -> Result<(), DocaError> {
        drop((mine, theirs));
        drop(events);
        let r = a.stop();
        let _ = ob.stop();
        other.stop_engine();
        r
    }
    let r = run_doca(&Sweep {
        name: "DOCA DPA linked RDMA and a remote publisher",
        profile: "bf3",
        setup: &setup,
        teardown: &teardown,
        judge: &judge_doca,
        optional: &[CAP_PAGE_2],
    });
    assert!(!r.setup_steps.is_empty(), "{r:?}");
}

/// [`run`] for DOCA flows.
fn run_doca<T>(s: &Sweep<'_, T, mlx5_dpa::doca::DocaError>) -> SweepReport {
    let r = sweep(s);
    eprintln!(
        "{}: {} set-up commands, {} teardown commands, steps {:?}, tolerated {:?}",
        s.name, r.setup_commands, r.teardown_commands, r.setup_steps, r.tolerated
    );
    assert!(r.setup_commands > 0 && r.teardown_commands > 0, "{r:?}");
    r
}

/// The Ethernet loopback's queues handed over to a GPU (GPUNetIO exports: the SQ with the CPU
/// proxy ringing its doorbell, the RQ with its packet buffer cut into strides), a proxy pass,
/// and the exports' teardown, which destroys the queues in order.
#[test]
fn gpu_exports_and_the_cpu_proxy() {
    use mlx5_dpa::gpu::{EthRxq, EthTxq, NicHandler};
    type Flow = (EthTxq, EthRxq, RxFlow, MemoryRegion);
    fn setup(ctx: &Arc<dyn Devx>) -> Result<Flow, DpaError> {
        let Eth {
            _flow: flow,
            _rq: rq,
            _sq: sq,
            _cqs: (tx_cq, rx_cq),
            _mrs: (tx, rx),
        } = eth_loopback(ctx)?;
        let export = |e: String| DpaError::Step {
            step: "exporting the queues",
            source: Box::new(DpaError::Device(e)),
        };
        let mut txq =
            EthTxq::export(sq, tx_cq, NicHandler::CpuProxy).map_err(|e| export(e.to_string()))?;
        let rxq = EthRxq::export(rq, rx_cq, rx, 256).map_err(|e| export(e.to_string()))?;
        // Nothing posted by the GPU yet: the proxy rings nothing.
        assert!(!txq.cpu_proxy_progress());
        Ok((txq, rxq, flow, tx))
    }
    run(&Sweep {
        name: "GPU exports and the CPU proxy",
        profile: "bf3",
        setup: &setup,
        teardown: &drop_it,
        judge: &judge,
        optional: &[],
    });
}
