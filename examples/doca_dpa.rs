//! DOCA DPA's samples (DOCA 2.6 `samples/doca_dpa`: `dpa_kernel_launch`,
//! `dpa_wait_kernel_launch`, `dpa_binary_tree`, `dpa_diamond_tree`, `dpa_rdma_copy`), the
//! seed's hello-world DPA thread, and DOCA's ping-pong, basic initiator / target and
//! initiator / target (two connections) of DPA-posted RDMA, in Rust over [`mlx5_dpa::doca`].
//!
//! ```text
//! cargo run --example doca_dpa -- kernel-launch                 # on the device model
//! cargo run --example doca_dpa -- binary-tree --device mlx5_0   # on a BlueField-3
//! ```
//!
//! The device side is `fw-blobs/src/doca_kernels.c` (`hello_world`, `binary_tree_kernel`,
//! `diamond_kernel`, with the samples' signatures; `doca26_kernels.c` for RDMA copy, on DOCA
//! 2.6's device API), or any build of the samples' own device
//! sources (`mlx5-dpa demo doca-dpa NAME --app-elf FILE`, e.g. DOCA's public
//! `dpa_binary_tree_kernels_dev.c` built with `mlx5-dpa cc`).
//!
//! | DOCA (C)                                              | here                                 |
//! |-------------------------------------------------------|--------------------------------------|
//! | `doca_dpa_create`, `doca_dpa_set_app`, `doca_dpa_start` | `Dpa::start(&dev, &app, &attr)`    |
//! | `doca_sync_event_create` + locations + `start`        | `dpa.sync_event(SyncEventAttr::..)`  |
//! | `doca_sync_event_export_to_dpa`                       | `event.dpa_handle()`                 |
//! | `doca_dpa_kernel_launch_update_set(dpa, wait, th, comp, val, n, &k, args..)` | `dpa.kernel_launch_update_set(Some((&wait, th)), Some((&comp, val)), n, "k", &args)` |
//! | `doca_sync_event_update_set`, `doca_sync_event_wait_gt` | `event.update_set(v)`, `event.wait_gt(v, mask, timeout)` |
//! | `doca_sync_event_destroy`, `doca_dpa_destroy`         | dropping them                        |
//!
//! Each prints the sample's `DOCA_LOG_INFO` lines (without DOCA's time and source prefix) and
//! the device's log lines where they belong, e.g. for `kernel-launch`:
//!
//! ```text
//! All DPA resources have been created
//! [DOCA][DPA DEVICE][INF] Hello from kernel
//! Kernel completion event has been signaled
//! ```
//!
//! The samples' host sleeps (5 s before the wait event in `wait-kernel-launch`, 2 s before the
//! root in `binary-tree`) are `delay` here.

use std::error::Error;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mlx5_dpa::devx::{self, Devx};
use mlx5_dpa::doca::{Dpa, DpaAttr, KernelArg, SyncEvent, SyncEventAttr};
use mlx5_dpa::dpa::app::App;
use mlx5_dpa::dpa::msg_stream::MsgOutput;

/// fw-blobs' DOCA kernels.
pub const DOCA_KERNELS_ELF: &[u8] = include_bytes!("../fw-blobs/bin/doca_kernels.elf");
/// fw-blobs' kernels written against DOCA 2.6's device API (the RDMA copy sample's).
pub const DOCA26_KERNELS_ELF: &[u8] = include_bytes!("../fw-blobs/bin/doca26_kernels.elf");

/// The samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sample {
    /// `hello_world` launched on one thread with a completion event (value 10).
    KernelLaunch,
    /// The same, waiting for an event (threshold 4) a second host thread sets to 5 later.
    WaitKernelLaunch,
    /// Seven kernels in a tree, each waiting in the kernel for its parent; the host sets the
    /// root's event later and waits for every completion event in turn.
    BinaryTree,
    /// A -> (B, C) -> D: A waits at launch for the host, B and C in the kernel for A, D for both.
    DiamondTree,
    /// The seed's hello world (`doca-dpa.txt`, "Procedure Steps"): a DPA thread that logs and
    /// sets the host's event, woken by an RPC through a notification completion.
    HelloWorld,
    /// DOCA's basic initiator / target: the target's RDMA completion wakes its DPA thread,
    /// which logs the completion and releases the host; RPCs post the receive and the send.
    BasicInitiatorTarget,
    /// DOCA's (advanced) initiator / target: the target's RDMA has two connections attached to
    /// one completion context, whose DPA thread takes the values 1, 2, 3, 4 the initiator sends
    /// over connections 0, 1, 0, 1, reposting each receive; with all four in it notifies a
    /// second DPA thread (a notification completion), which releases the host.
    InitiatorTarget,
    /// DOCA's ping-pong: two DPA threads, each woken by its RDMA's completion context,
    /// exchange the values 0 .. 99 with RDMA sends; each sets an event when all arrived.
    PingPong,
    /// DOCA 2.6's RDMA copy (`dpa_rdma_copy`): a kernel written against DOCA 2.6's device
    /// API copies the main thread's host buffer into a "remote" thread's with an RDMA write
    /// and sets the main thread's event through the RDMA.
    RdmaCopy,
}

impl Sample {
    /// By its command-line name.
    pub fn from_name(name: &str) -> Option<Sample> {
        Some(match name {
            "kernel-launch" => Sample::KernelLaunch,
            "wait-kernel-launch" => Sample::WaitKernelLaunch,
            "binary-tree" => Sample::BinaryTree,
            "diamond-tree" => Sample::DiamondTree,
            "hello-world" => Sample::HelloWorld,
            "ping-pong" => Sample::PingPong,
            "basic-initiator-target" => Sample::BasicInitiatorTarget,
            "initiator-target" => Sample::InitiatorTarget,
            "rdma-copy" => Sample::RdmaCopy,
            _ => return None,
        })
    }

    /// fw-blobs' device program for it.
    pub fn default_elf(self) -> &'static [u8] {
        match self {
            Sample::RdmaCopy => DOCA26_KERNELS_ELF,
            _ => DOCA_KERNELS_ELF,
        }
    }
}

/// How long the host waits for any one event.
const WAIT: Duration = Duration::from_secs(60);
/// DOCA's `SYNC_EVENT_MASK_FFS`.
const MASK: u64 = u64::MAX;

/// Runs `sample` with device program `app` (fw-blobs' kernels when `None`,
/// [`Sample::default_elf`]) on `dev`, the host's
/// sleeps shortened to `delay`; writes the sample's lines to `out`.
///
/// # Errors
/// No DPA, a firmware refusal, a DPA fault (the context's error state), a timeout.
pub fn run(
    dev: &Arc<dyn Devx>,
    sample: Sample,
    app: Option<&App>,
    delay: Duration,
    out: &mut dyn Write,
) -> Result<(), Box<dyn Error>> {
    run_with(dev, sample, app, delay, out, &mut |_, _| Ok(()))
}

/// As [`run`], calling `on_process` with the DPA context's process (and `out`) once it is
/// started (`mlx5-dpa demo doca-dpa --gdb` attaches a debugger there).
///
/// # Errors
/// As [`run`], and what `on_process` returns.
#[allow(clippy::type_complexity)]
pub fn run_with(
    dev: &Arc<dyn Devx>,
    sample: Sample,
    app: Option<&App>,
    delay: Duration,
    out: &mut dyn Write,
    on_process: &mut dyn FnMut(
        &mlx5_dpa::dpa::Process,
        &mut dyn Write,
    ) -> Result<(), Box<dyn Error>>,
) -> Result<(), Box<dyn Error>> {
    let app = match app {
        Some(a) => a.clone(),
        None => App::from_device_elf("dpa_sample_app", sample.default_elf())?,
    };
    // Device log lines are collected and written out after the step that made them, so that
    // they land among the host's lines where the sample's output has them.
    let log = Arc::new(Mutex::new(Vec::<u8>::new()));
    let attr = DpaAttr {
        log_output: MsgOutput::Writer(log.clone()),
        ..DpaAttr::default()
    };
    let dpa = Dpa::start(dev, &app, &attr)?;
    on_process(dpa.process(), out)?;
    let device_lines = |out: &mut dyn Write| -> Result<(), Box<dyn Error>> {
        dpa.flush_log(Duration::from_millis(200))?;
        let bytes = std::mem::take(&mut *log.lock().map_err(|_| "log poisoned")?);
        out.write_all(&bytes)?;
        Ok(())
    };
    match sample {
        Sample::KernelLaunch => {
            let comp = dpa.sync_event(SyncEventAttr::dpa_to_cpu())?;
            writeln!(out, "All DPA resources have been created")?;
            dpa.kernel_launch_update_set(None, Some((&comp, 10)), 1, "hello_world", &[])?;
            comp.wait_gt(9, MASK, WAIT)?;
            device_lines(out)?;
            writeln!(out, "Kernel completion event has been signaled")?;
        }
        Sample::WaitKernelLaunch => {
            let wait = Arc::new(dpa.sync_event(SyncEventAttr::cpu_to_dpa())?);
            let comp = dpa.sync_event(SyncEventAttr::dpa_to_cpu())?;
            writeln!(out, "All DPA resources have been created")?;
            dpa.kernel_launch_update_set(
                Some((&wait, 4)),
                Some((&comp, 10)),
                1,
                "hello_world",
                &[],
            )?;
            // The wait event is set by another host thread, later.
            let setter = {
                let wait = Arc::clone(&wait);
                std::thread::spawn(move || {
                    std::thread::sleep(delay);
                    wait.update_set(5)
                })
            };
            comp.wait_gt(9, MASK, WAIT)?;
            setter.join().map_err(|_| "the setter thread panicked")??;
            device_lines(out)?;
            writeln!(out, "Kernel completion event has been signaled")?;
        }
        Sample::BinaryTree => binary_tree(&dpa, delay, out)?,
        Sample::DiamondTree => diamond_tree(&dpa, out)?,
        Sample::HelloWorld => hello_world(&dpa, &device_lines, out)?,
        Sample::PingPong => ping_pong(&dpa, out)?,
        Sample::BasicInitiatorTarget => basic_initiator_target(&dpa, &device_lines, out)?,
        Sample::InitiatorTarget => initiator_target(&dpa, &device_lines, out)?,
        Sample::RdmaCopy => rdma_copy(&dpa, out)?,
    }
    dpa.stop()?;
    Ok(())
}

fn handle(e: &SyncEvent) -> Result<u64, Box<dyn Error>> {
    Ok(e.dpa_handle()?)
}

/// DOCA's binary tree: node i waits on event i and sets events 2i + 1 and 2i + 2 and its
/// completion event; the host sets event 0.
fn binary_tree(dpa: &Dpa, delay: Duration, out: &mut dyn Write) -> Result<(), Box<dyn Error>> {
    const HEIGHT: u32 = 3;
    const NODES: usize = (1 << HEIGHT) - 1;
    const EVENTS: usize = (1 << (HEIGHT + 1)) - 1;
    let mut wait = Vec::with_capacity(EVENTS);
    let mut comp = Vec::with_capacity(EVENTS);
    for i in 0..EVENTS {
        wait.push(dpa.sync_event(if i == 0 {
            SyncEventAttr::cpu_to_dpa()
        } else {
            SyncEventAttr::dpa_to_dpa()
        })?);
        comp.push(dpa.sync_event(SyncEventAttr::dpa_to_cpu())?);
    }
    writeln!(out, "All DPA resources have been created")?;
    for l in [
        "     A  ",
        "   /   \\",
        "  B     C  ",
        " / \\   / \\ ",
        "D   E F   G",
    ] {
        writeln!(out, "{l}")?;
    }
    for i in 0..NODES {
        let label = char::from(b'A' + i as u8);
        writeln!(out, "Launching kernel {label}")?;
        // struct binary_tree_kernel_args {wait_event, wait_thresh, left_event, right_event,
        // comp_event, comp_val}: 48 bytes, by value.
        let mut args = Vec::with_capacity(48);
        for v in [
            handle(&wait[i])?,
            1,
            handle(&wait[2 * i + 1])?,
            handle(&wait[2 * i + 2])?,
            handle(&comp[i])?,
            1,
        ] {
            args.extend_from_slice(&v.to_le_bytes());
        }
        dpa.kernel_launch_update_set(
            None,
            None,
            1,
            "binary_tree_kernel",
            &[KernelArg::Bytes(args)],
        )?;
    }
    writeln!(out, "Triggering kernel A wait event in {delay:?}")?;
    std::thread::sleep(delay);
    wait[0].update_set(1)?;
    for (i, c) in comp.iter().take(NODES).enumerate() {
        let label = char::from(b'A' + i as u8);
        writeln!(
            out,
            "Waiting for completion event of kernel {label} to be signaled"
        )?;
        c.wait_gt(0, MASK, WAIT)?;
        writeln!(out, "Completion event kernel {label} has been signaled")?;
    }
    Ok(())
}

/// DOCA's diamond: A (waiting at launch for the host) adds to B's and C's events; B and C wait
/// for theirs and add to D's; D waits for two and sets the completion event.
fn diamond_tree(dpa: &Dpa, out: &mut dyn Write) -> Result<(), Box<dyn Error>> {
    const NODES: usize = 4;
    let mut ev = Vec::with_capacity(NODES);
    for i in 0..NODES {
        ev.push(dpa.sync_event(if i == 0 {
            SyncEventAttr::cpu_to_dpa()
        } else {
            SyncEventAttr::dpa_to_dpa()
        })?);
    }
    let done = dpa.sync_event(SyncEventAttr::dpa_to_cpu())?;
    for l in ["    A", "   / \\", "  C   B", "  \\  /", "    D"] {
        writeln!(out, "{l}")?;
    }
    writeln!(out, "All DPA resources have been created")?;
    let args = |w: u64, th: u64, c1: u64, c2: u64| [w, th, c1, c2].map(KernelArg::U64).to_vec();
    writeln!(out, "Launching kernel A")?;
    dpa.kernel_launch_update_set(
        Some((&ev[0], 0)),
        None,
        1,
        "diamond_kernel",
        &args(0, 0, handle(&ev[1])?, handle(&ev[2])?),
    )?;
    for (i, e) in ev.iter().enumerate().take(NODES - 1).skip(1) {
        writeln!(out, "Launching kernel {}", char::from(b'A' + i as u8))?;
        dpa.kernel_launch_update_set(
            None,
            None,
            1,
            "diamond_kernel",
            &args(handle(e)?, 1, handle(&ev[NODES - 1])?, 0),
        )?;
    }
    writeln!(out, "Launching Kernel D")?;
    dpa.kernel_launch_update_set(
        None,
        None,
        1,
        "diamond_kernel",
        &args(handle(&ev[NODES - 1])?, 2, handle(&done)?, 0),
    )?;
    writeln!(out, "Signaling Kernel A wait event")?;
    ev[0].update_set(1)?;
    writeln!(out, "Waiting for Kernel D completion event to be signaled")?;
    done.wait_gt(0, MASK, WAIT)?;
    writeln!(out, "Kernel D completion event has been signaled")?;
    Ok(())
}

/// Writes the device log lines that have arrived.
type DeviceLines<'a> = dyn Fn(&mut dyn Write) -> Result<(), Box<dyn Error>> + 'a;

/// The seed's hello world, printing its console lines. The device's two lines come through
/// the log stream; they are written once the thread has set the host's event, so that they
/// stand where the seed shows them, before the "Waiting" line.
fn hello_world(
    dpa: &Dpa,
    device_lines: &DeviceLines<'_>,
    out: &mut dyn Write,
) -> Result<(), Box<dyn Error>> {
    writeln!(out, "----> Open DOCA Device")?;
    writeln!(out, "----> Initialize DOCA DPA Context")?;
    writeln!(out, "----> Initialize DOCA Sync Event")?;
    let cpu_se = dpa.sync_event(SyncEventAttr::dpa_to_cpu())?;
    writeln!(out, "----> Initialize DOCA DPA Thread")?;
    let mut thread = dpa.thread_create();
    thread.set_func_arg("hello_world_thread_kernel", cpu_se.dpa_handle()?)?;
    thread.start()?;
    writeln!(out, "----> Initialize DOCA DPA Notification Completion")?;
    let notify = dpa.notification_completion_create(&mut thread)?;
    writeln!(out, "----> Run DOCA DPA Thread")?;
    thread.run()?;
    writeln!(out, "----> Trigger DPA RPC")?;
    dpa.rpc("hello_world_thread_notify_rpc", &[notify.dpa_handle()])?;
    cpu_se.wait_gt(0, MASK, WAIT)?;
    device_lines(out)?;
    writeln!(out, "----> Waiting For hello_world_thread_kernel To Finish")?;
    writeln!(out, "----> Destroy DOCA DPA Notification Completion")?;
    drop(notify);
    writeln!(out, "----> Destroy DOCA DPA Thread")?;
    thread.stop();
    writeln!(out, "----> Destroy DOCA DPA event")?;
    drop(cpu_se);
    writeln!(out, "----> Destroy DOCA DPA context")?;
    writeln!(out, "----> Destroy DOCA device")?;
    writeln!(out, "----> DONE!")?;
    Ok(())
}

/// DOCA's basic initiator / target sample (`dpa_basic_initiator_target`), both endpoints in
/// this context: the target's RDMA is attached to a completion context whose DPA thread logs
/// the completion of the receive and sets the host's event.
fn basic_initiator_target(
    dpa: &Dpa,
    device_lines: &DeviceLines<'_>,
    out: &mut dyn Write,
) -> Result<(), Box<dyn Error>> {
    let tls = dpa.mem_alloc(24)?;
    let mut thread = dpa.thread_create();
    thread.set_func_arg("target_thread", 0)?;
    thread.set_local_storage(tls.daddr())?;
    thread.start()?;
    let mut tcomp = dpa.completion_create(16)?;
    tcomp.set_thread(&mut thread)?;
    tcomp.start()?;
    let mut target = dpa.rdma_create(8)?;
    target.attach(&tcomp)?;
    target.start()?;
    let mut icomp = dpa.completion_create(16)?;
    icomp.start()?;
    let mut initiator = dpa.rdma_create(8)?;
    initiator.attach(&icomp)?;
    initiator.start()?;
    initiator.connect(&mut target)?;
    let buf = dpa.mem_alloc(16)?;
    let map = dpa.mmap_dpa(&buf)?;
    let done = dpa.sync_event(SyncEventAttr::dpa_to_cpu())?;
    let words = [tcomp.dpa_handle()?, buf.daddr() + 8, done.dpa_handle()?];
    dpa.h2d_memcpy(
        tls.daddr(),
        &words
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect::<Vec<u8>>(),
    )?;
    // The initiator sends 10 from the first word into the target's receive at the second.
    dpa.h2d_memcpy(buf.daddr(), &10u64.to_le_bytes())?;
    writeln!(out, "All DPA resources have been created")?;
    thread.run()?;
    writeln!(out, "Target: posting an RDMA receive (RPC)")?;
    dpa.rpc(
        "rdma_post_receive_rpc",
        &[target.dpa_handle()?, map.dpa_handle(), buf.daddr() + 8, 8],
    )?;
    writeln!(out, "Initiator: posting an RDMA send (RPC)")?;
    dpa.rpc(
        "rdma_post_send_rpc",
        &[initiator.dpa_handle()?, map.dpa_handle(), buf.daddr(), 8],
    )?;
    done.wait_gt(0, MASK, WAIT)?;
    device_lines(out)?;
    writeln!(out, "The target's DPA thread has set the completion event")?;
    drop(initiator);
    drop(target);
    drop((icomp, tcomp));
    thread.stop();
    Ok(())
}

/// DOCA's initiator / target sample (`dpa_initiator_target`), both endpoints in this
/// context: two connections from the initiator's RDMA to the target's, whose completion
/// context wakes `it_target_thread`; that thread notifies `it_release_thread` (through a
/// notification completion) once the values 1 ..= 4 are in, which sets the host's event.
fn initiator_target(
    dpa: &Dpa,
    device_lines: &DeviceLines<'_>,
    out: &mut dyn Write,
) -> Result<(), Box<dyn Error>> {
    const VALUES: u64 = 4;
    const SLOTS: u64 = 4;
    let done = dpa.sync_event(SyncEventAttr::dpa_to_cpu())?;
    // Thread #2, released by a notification.
    let mut release = dpa.thread_create();
    release.set_func_arg("it_release_thread", done.dpa_handle()?)?;
    release.start()?;
    let notify = dpa.notification_completion_create(&mut release)?;
    // Thread #1, woken by the target RDMA's completions.
    let state = dpa.mem_alloc(0x60)?;
    let mut target_thread = dpa.thread_create();
    target_thread.set_func_arg("it_target_thread", 0)?;
    target_thread.set_local_storage(state.daddr())?;
    target_thread.start()?;
    let mut tcomp = dpa.completion_create(32)?;
    tcomp.set_thread(&mut target_thread)?;
    tcomp.start()?;
    let mut target = dpa.rdma_create(8)?;
    target.set_max_connections(2)?;
    target.attach(&tcomp)?;
    target.start()?;
    let mut icomp = dpa.completion_create(32)?;
    icomp.start()?;
    let mut initiator = dpa.rdma_create(8)?;
    initiator.set_max_connections(2)?;
    initiator.attach(&icomp)?;
    initiator.start()?;
    for _ in 0..2 {
        initiator.connect(&mut target)?;
    }
    // Receive slots, then the values the initiator sends from.
    let buf = dpa.mem_alloc(8 * (SLOTS + VALUES))?;
    let map = dpa.mmap_dpa(&buf)?;
    let values = buf.daddr() + 8 * SLOTS;
    let words = [
        tcomp.dpa_handle()?,
        target.dpa_handle()?,
        map.dpa_handle(),
        buf.daddr(),
        SLOTS,
        notify.dpa_handle(),
        VALUES,
        0,
        0,
        0,
        0,
        0,
    ];
    dpa.h2d_memcpy(
        state.daddr(),
        &words
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect::<Vec<u8>>(),
    )?;
    dpa.h2d_memcpy(
        values,
        &(1..=VALUES).flat_map(u64::to_le_bytes).collect::<Vec<u8>>(),
    )?;
    writeln!(out, "All DPA resources have been created")?;
    release.run()?;
    target_thread.run()?;
    writeln!(out, "Target: posting the initial RDMA receives (RPC)")?;
    dpa.rpc("it_post_receives_rpc", &[state.daddr()])?;
    for v in 1..=VALUES {
        let conn = (v - 1) % 2;
        writeln!(
            out,
            "Initiator: connection #{conn} posts an RDMA send of value {v} (RPC)"
        )?;
        dpa.rpc(
            "it_send_rpc",
            &[
                initiator.dpa_handle()?,
                conn,
                map.dpa_handle(),
                values + 8 * (v - 1),
            ],
        )?;
    }
    done.wait_gt(0, MASK, WAIT)?;
    device_lines(out)?;
    let mut st = [0u8; 0x60];
    dpa.d2h_memcpy(&mut st, state.daddr())?;
    let word = |i: usize| u64::from_le_bytes(st[8 * i..8 * i + 8].try_into().unwrap_or([0; 8]));
    let (received, per_conn) = (word(7), [word(10), word(11)]);
    if received != 0b11110 || per_conn != [2, 2] {
        return Err(format!(
            "the target thread took values {received:#b}, {per_conn:?} per connection"
        )
        .into());
    }
    writeln!(
        out,
        "The target's DPA thread #2 has set the completion event: values 1, 2, 3, 4 received, two over each connection"
    )?;
    drop(initiator);
    drop(target);
    drop((icomp, tcomp));
    drop(notify);
    target_thread.stop();
    release.stop();
    Ok(())
}

/// The values each ping-pong endpoint receives.
const PING_PONG_ROUNDS: u64 = 100;

/// DOCA's ping-pong sample (`dpa_ping_pong`): two RDMAs of the context connected to each
/// other, each attached to a completion context whose DPA thread (`pingpong_rdma_thread`)
/// answers; an RPC starts each endpoint.
fn ping_pong(dpa: &Dpa, out: &mut dyn Write) -> Result<(), Box<dyn Error>> {
    struct End {
        rdma: mlx5_dpa::doca::DpaRdma,
        comp: mlx5_dpa::doca::CompletionContext,
        thread: mlx5_dpa::doca::DpaThread,
        state: mlx5_dpa::dpa::DpaBuf,
        _map: (mlx5_dpa::doca::DpaMmap, mlx5_dpa::dpa::DpaBuf),
        done: SyncEvent,
    }
    let end = |is_ping: bool| -> Result<End, Box<dyn Error>> {
        let state = dpa.mem_alloc(80)?;
        let mut thread = dpa.thread_create();
        thread.set_func_arg("pingpong_rdma_thread", 0)?;
        thread.set_local_storage(state.daddr())?;
        thread.start()?;
        let mut comp = dpa.completion_create(64)?;
        comp.set_thread(&mut thread)?;
        comp.start()?;
        let mut rdma = dpa.rdma_create(16)?;
        rdma.attach(&comp)?;
        rdma.start()?;
        let buf = dpa.mem_alloc(16)?;
        let map = dpa.mmap_dpa(&buf)?;
        let done = dpa.sync_event(SyncEventAttr::dpa_to_cpu())?;
        let words = [
            rdma.dpa_handle()?,
            comp.dpa_handle()?,
            map.dpa_handle(),
            buf.daddr(),
            buf.daddr() + 8,
            done.dpa_handle()?,
            u64::from(is_ping),
            PING_PONG_ROUNDS,
            0,
            0,
        ];
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        dpa.h2d_memcpy(state.daddr(), &bytes)?;
        Ok(End {
            rdma,
            comp,
            thread,
            state,
            _map: (map, buf),
            done,
        })
    };
    let mut ping = end(true)?;
    let mut pong = end(false)?;
    ping.rdma.connect(&mut pong.rdma)?;
    writeln!(out, "All DPA resources have been created")?;
    ping.thread.run()?;
    pong.thread.run()?;
    // The pong listens before the ping sends its first value.
    dpa.rpc("pingpong_start_rpc", &[pong.state.daddr()])?;
    dpa.rpc("pingpong_start_rpc", &[ping.state.daddr()])?;
    for (name, e) in [("ping", &ping), ("pong", &pong)] {
        e.done.wait_gt(0, MASK, WAIT)?;
        let mut st = [0u8; 16];
        dpa.d2h_memcpy(&mut st, e.state.daddr() + 64)?;
        let received = u64::from_le_bytes(st[..8].try_into()?);
        let errors = u64::from_le_bytes(st[8..].try_into()?);
        writeln!(
            out,
            "{name} thread received {received} values, {errors} out of order"
        )?;
        if received != PING_PONG_ROUNDS || errors != 0 {
            return Err(format!("{name}: {received} values, {errors} out of order").into());
        }
    }
    // Queues before their completion contexts, contexts before their threads.
    for e in [ping, pong] {
        drop(e.rdma);
        drop(e.comp);
        e.thread.stop();
    }
    Ok(())
}

/// The value of the main thread's buffer (the sample's `LOCAL_BUF_VALUE`).
const LOCAL_BUF_VALUE: u64 = 10;

/// DOCA 2.6's RDMA copy sample: the main thread and a "remote" thread (of this process, as in
/// the sample) each make an RDMA on the DPA datapath and a DOCA buffer over 8 bytes of host
/// memory; they step each other along with a sync event that DPA kernels set
/// (`update_event_kernel`). The main thread launches `dpa_rdma_write_and_signal`, which writes
/// its buffer into the remote one and sets the main thread's event over the RDMA. Here one
/// `DpaRdma::connect` joins both ends, made by the main thread once the remote thread has
/// handed its RDMA over.
fn rdma_copy(dpa: &Dpa, out: &mut dyn Write) -> Result<(), Box<dyn Error>> {
    use mlx5_dpa::doca::{CompletionContext, DpaBufArray, DpaMmap, DpaRdma};
    type Res<T> = Result<T, Box<dyn Error + Send + Sync>>;
    struct End {
        rdma: DpaRdma,
        _comp: CompletionContext,
        map: DpaMmap,
        arr: DpaBufArray,
    }
    let end = |dpa: &Dpa, value: u64| -> Res<End> {
        let mut comp = dpa.completion_create(16)?;
        comp.start()?;
        let mut rdma = dpa.rdma_create(16)?;
        rdma.attach(&comp)?;
        rdma.start()?;
        let map = dpa.mmap_host(8)?;
        map.host_memory()
            .ok_or("a host map")?
            .buf()
            .write(0, &value.to_le_bytes())?;
        let mut arr = dpa.buf_arr_create(1)?;
        arr.set_params(&map, 8, 0)?;
        arr.start()?;
        Ok(End {
            rdma,
            _comp: comp,
            map,
            arr,
        })
    };
    let read = |e: &End| -> Res<u64> {
        let mut w = [0u8; 8];
        e.map
            .host_memory()
            .ok_or("a host map")?
            .buf()
            .read(0, &mut w)?;
        Ok(u64::from_le_bytes(w))
    };
    // The thread event, set by update_event_kernel and waited on by both host threads; each
    // update is a launch whose completion event the updating thread waits for.
    let thread_event = dpa.sync_event(SyncEventAttr::dpa_to_cpu())?;
    let kernel_comp = dpa.sync_event(SyncEventAttr::dpa_to_cpu())?;
    let launches = std::sync::atomic::AtomicU64::new(0);
    let lock = Mutex::new(());
    let update = |val: u64| -> Res<()> {
        let _one_at_a_time = lock.lock().map_err(|_| "poisoned")?;
        let n = launches.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        dpa.kernel_launch_update_set(
            None,
            Some((&kernel_comp, n)),
            1,
            "update_event_kernel",
            &[thread_event.dpa_handle()?, val].map(KernelArg::U64),
        )?;
        kernel_comp.wait_gt(n - 1, MASK, WAIT)?;
        Ok(())
    };
    let wait = |val: u64| -> Res<()> {
        thread_event.wait_gt(val - 1, MASK, WAIT)?;
        Ok(())
    };
    let put_signal = dpa.sync_event(SyncEventAttr {
        publisher_remote: true,
        subscriber_cpu: true,
        ..SyncEventAttr::default()
    })?;
    let remote_put_signal = dpa.remote_event(put_signal.export_remote()?)?;

    let lines = Mutex::new(Vec::<String>::new());
    let say = |s: String| {
        if let Ok(mut l) = lines.lock() {
            l.push(s);
        }
    };
    let (to_main, from_remote) = std::sync::mpsc::channel::<End>();
    let result: Res<()> = std::thread::scope(|scope| {
        let remote = scope.spawn(|| -> Res<()> {
            wait(1)?;
            let e = end(dpa, 0)?;
            say("Remote thread finished allocating all DPA resources, signaling to main thread".into());
            to_main.send(e).map_err(|_| "the main thread is gone")?;
            update(2)?;
            wait(3)?;
            say("Remote thread finished connecting to the main thread's rdma instances, signaling to main thread".into());
            update(4)?;
            wait(5)?;
            Ok(())
        });
        let main = (|| -> Res<()> {
            let mut local = end(dpa, LOCAL_BUF_VALUE)?;
            say(
                "Main thread finished allocating all DPA resources, signaling to remote thread"
                    .into(),
            );
            update(1)?;
            wait(2)?;
            let mut remote_end = from_remote.recv_timeout(WAIT)?;
            local.rdma.connect(&mut remote_end.rdma)?;
            say("Main thread finished connecting to remote thread's endpoint, signaling to remote thread".into());
            update(3)?;
            wait(4)?;
            say("Main thread launching kernel to copy local buffer to remote buffer".into());
            say(format!(
                "Before copying: local buffer = {}, remote buffer = {}",
                read(&local)?,
                read(&remote_end)?
            ));
            dpa.kernel_launch_update_set(
                None,
                None,
                1,
                "dpa_rdma_write_and_signal",
                &[
                    local.rdma.dpa_handle()?,
                    remote_end.arr.dpa_handle()?,
                    local.arr.dpa_handle()?,
                    8,
                    remote_put_signal.dpa_handle(),
                    1,
                ]
                .map(KernelArg::U64),
            )?;
            put_signal.wait_gt(0, MASK, WAIT)?;
            say("Main thread finished copying local buffer to remote buffer, signaling to remote thread".into());
            let (l, r) = (read(&local)?, read(&remote_end)?);
            say(format!(
                "After copying: local buffer = {l}, remote buffer = {r}"
            ));
            update(5)?;
            if r != l {
                return Err(format!("the remote buffer holds {r}, not {l}").into());
            }
            // RDMAs before their completion contexts.
            drop(local.rdma);
            drop(remote_end.rdma);
            Ok(())
        })();
        let remote = remote.join().map_err(|_| "the remote thread panicked")?;
        main.and(remote)
    });
    for l in lines.into_inner().map_err(|_| "poisoned")? {
        writeln!(out, "{l}")?;
    }
    result.map_err(|e| -> Box<dyn Error> { e.to_string().into() })
}

/// DOCA DPA's public samples.
#[derive(clap::Parser)]
struct Args {
    /// The sample
    #[arg(default_value = "kernel-launch", value_parser = [
        "kernel-launch", "wait-kernel-launch", "binary-tree", "diamond-tree", "hello-world",
        "ping-pong", "basic-initiator-target", "initiator-target", "rdma-copy",
    ])]
    sample: String,
    /// An RDMA device (e.g. mlx5_0); without it, the device model
    #[arg(long, value_name = "NAME")]
    device: Option<String>,
}

#[allow(dead_code)] // `mlx5-dpa demo doca-dpa` includes this file for `run` only.
fn main() -> Result<(), Box<dyn Error>> {
    let Args { sample, device } = clap::Parser::parse();
    let sample = Sample::from_name(&sample).ok_or("unknown sample")?;
    let mut model = None;
    let dev: Arc<dyn Devx> = match device {
        Some(name) => devx::kernel::KernelDevx::open(Some(&name))?,
        None => {
            let m = mlx5_sim::Device::with_profile("bf3").ok_or("no bf3 profile")?;
            m.start_engine();
            let dev = m.open_devx();
            model = Some(m);
            dev
        }
    };
    let res = run(
        &dev,
        sample,
        None,
        Duration::from_secs(1),
        &mut std::io::stdout(),
    );
    drop(dev);
    if let Some(m) = model {
        m.stop_engine();
    }
    res
}
