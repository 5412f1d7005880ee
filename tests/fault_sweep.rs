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

#[path = "../examples/flexio_window.rs"]
#[allow(dead_code)]
mod window_sample;

#[path = "../examples/flexio_packet_processor.rs"]
#[allow(dead_code)]
mod pp;

const RPC_CALC: &[u8] = include_bytes!("../fw-blobs/bin/rpc_calc.elf");
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

const SELFTEST: &[u8] = include_bytes!("../fw-blobs/bin/selftest.elf");

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
        AsyncOps, CompletionContext, DocaError, Dpa, DpaAttr, DpaMmap, DpaRdma, DpaRdmaSrq,
        DpaThread, NotificationCompletion, SyncEvent, SyncEventAttr,
    };
    use mlx5_dpa::dpa::msg_stream::MsgOutput;
    use mlx5_dpa::dpa::DpaBuf;

    const KERNELS: &[u8] = include_bytes!("../fw-blobs/bin/doca_kernels.elf");
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
        let app = mlx5_dpa::dpa::app::App::from_device_elf("doca_kernels", KERNELS)
            .map_err(|e| DocaError::InvalidValue(e.to_string()))?;
        let attr = DpaAttr {
            log_output: MsgOutput::Collect,
            ..DpaAttr::default()
        };
        let dpa = Dpa::start(ctx, &app, &attr)?;
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
    use mlx5_dpa::doca::{CompletionContext, DocaError, Dpa, DpaAttr, DpaRdma};
    use mlx5_dpa::dpa::msg_stream::MsgOutput;

    const KERNELS: &[u8] = include_bytes!("../fw-blobs/bin/doca_kernels.elf");
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
        let app = mlx5_dpa::dpa::app::App::from_device_elf("doca_kernels", KERNELS)
            .map_err(|e| DocaError::InvalidValue(e.to_string()))?;
        let attr = DpaAttr {
            log_output: MsgOutput::Collect,
            ..DpaAttr::default()
        };
        let base = Dpa::start(ctx, &app, &attr)?;
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
