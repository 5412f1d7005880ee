//! `mlx5-dpa demo ...`: the crate's examples, run on the device the global options pick.
//!
//! The demo code is the examples' own (`examples/eth_loopback.rs`, `examples/rdma_rc.rs`,
//! `examples/flexio_rpc.rs`, `examples/flexio_window.rs`, `examples/flexio_multithread.rs`,
//! `examples/flexio_packet_processor.rs`, `examples/gpunetio.rs` with feature `gpu`),
//! included here so that what the CLI runs is exactly what a reader
//! of the examples sees.

use std::sync::Arc;

use mlx5_dpa::devx::Devx;
use mlx5_dpa::dpa::app::{app_names, App};
use mlx5_dpa::dpa::AppSelectAttr;

#[path = "../../examples/doca_dpa.rs"]
#[allow(dead_code)]
mod doca_dpa;
#[path = "../../examples/eth_loopback.rs"]
#[allow(dead_code)]
pub(crate) mod eth_loopback;
#[path = "../../examples/flexio_multithread.rs"]
#[allow(dead_code)]
mod flexio_multithread;
#[path = "../../examples/flexio_packet_processor.rs"]
#[allow(dead_code)]
pub mod flexio_packet_processor;
#[path = "../../examples/flexio_rpc.rs"]
#[allow(dead_code)]
pub(crate) mod flexio_rpc;
#[path = "../../examples/flexio_window.rs"]
#[allow(dead_code)]
mod flexio_window;
#[cfg(feature = "gpu")]
#[path = "../../examples/gpunetio.rs"]
#[allow(dead_code)]
mod gpunetio;
#[path = "../../examples/rdma_rc.rs"]
#[allow(dead_code)]
pub(crate) mod rdma_rc;

/// The demos.
#[derive(clap::Subcommand, Debug)]
pub enum Demo {
    /// Ethernet frames of varied sizes out of an SQ, back through steering into an RQ,
    /// compared byte for byte.
    EthLoopback {
        /// Frames to send (progress and the rate are printed every second; Ctrl-C stops
        /// sending, collects what is in flight and prints the summary).
        #[arg(long, default_value_t = 16, value_parser = crate::input::num::<usize>)]
        packets: usize,
        /// Record the model's port to this pcap file (device model only).
        #[arg(long, value_name = "FILE")]
        pcap: Option<std::path::PathBuf>,
    },
    /// Every RC operation (SEND, SEND_IMM, WRITE, WRITE_IMM, READ, CAS, FAA) between two QPs,
    /// each result checked.
    Rdma {
        /// On the model: two linked model instances talking RoCEv2 instead of two QPs of one
        /// device in force-loopback.
        #[arg(long)]
        linked: bool,
        /// Record the (first) model's port to this pcap file (device model only).
        #[arg(long, value_name = "FILE")]
        pcap: Option<std::path::PathBuf>,
    },
    /// FlexIO's RPC sample: a DPA process from `rpc_calc.elf` adds A and B on the DPA
    /// (`flexio_process_call`) and prints `Result: A+B`.
    Rpc {
        /// First operand (decimal, 0x hex, or negative).
        #[arg(value_parser = number, allow_hyphen_values = true)]
        a: u64,
        /// Second operand.
        #[arg(value_parser = number, allow_hyphen_values = true)]
        b: u64,
        /// Another device build of the sample (e.g. FlexIO's public `flexio_rpc_dev.c` built
        /// with `mlx5-dpa cc`) instead of fw-blobs' `rpc_calc.elf`: a device ELF, or a host
        /// program carrying it (`cc --package-into`), whose copy for the device's hardware
        /// model is taken as `flexio_app_get` takes it.
        #[arg(long, value_name = "FILE")]
        app_elf: Option<std::path::PathBuf>,
        /// The application's name in a host program given to --app-elf that carries several.
        #[arg(long, value_name = "NAME", requires = "app_elf")]
        app: Option<String>,
        /// Debug the DPA process with GDB (device model): prints its debug token, serves GDB's
        /// remote protocol on HOST:PORT (port 0: any; the port is printed on standard error)
        /// and holds the call at its first DPA instruction until GDB continues it.
        #[arg(long, value_name = "HOST:PORT", value_parser = crate::gdb::host_port)]
        gdb: Option<String>,
    },
    /// FlexIO's multithread sample: two 5x5 matrices multiplied on the DPA, one command-queue
    /// task per cell of the product, spread over worker threads; checked against the host.
    Multithread {
        /// Worker threads of the command queue.
        #[arg(long, default_value_t = 4, value_parser = crate::input::num::<u32>)]
        workers: u32,
        /// Debug the sample's DPA process with GDB (device model), as `demo rpc --gdb`.
        #[arg(long, value_name = "HOST:PORT", value_parser = crate::gdb::host_port)]
        gdb: Option<String>,
    },
    /// FlexIO's window sample: the DPA overwrites a host buffer through a window (an mkey over
    /// host memory); the host prints the buffer before and after.
    Window {
        /// Debug the sample's DPA process with GDB (device model), as `demo rpc --gdb`.
        #[arg(long, value_name = "HOST:PORT", value_parser = crate::gdb::host_port)]
        gdb: Option<String>,
    },
    /// FlexIO's packet-processor sample: a UDP frame is injected; a DPA event handler on an RQ
    /// in DPA memory swaps its MACs, rewrites the payload's digits and sends it back; both
    /// frames are printed as hex dumps.
    PacketProcessor {
        /// Record the model's port to this pcap file (device model only).
        #[arg(long, value_name = "FILE")]
        pcap: Option<std::path::PathBuf>,
        /// Another device build of FlexIO's sample (e.g. the public
        /// `flexio_packet_processor_dev.c` + `com_dev.c` built with `mlx5-dpa cc`) instead of
        /// fw-blobs' `pp_sample.elf`: a device ELF, or a host program carrying it, as for
        /// `demo rpc`.
        #[arg(long, value_name = "FILE")]
        app_elf: Option<std::path::PathBuf>,
        /// The application's name in a host program given to --app-elf that carries several.
        #[arg(long, value_name = "NAME", requires = "app_elf")]
        app: Option<String>,
        /// Debug the sample's DPA process with GDB (device model), as `demo rpc --gdb`.
        #[arg(long, value_name = "HOST:PORT", value_parser = crate::gdb::host_port)]
        gdb: Option<String>,
    },
    /// DOCA DPA's kernel-launch samples (DOCA 2.6 `samples/doca_dpa`): kernels launched with
    /// wait and completion sync events, in chains and trees.
    DocaDpa {
        /// Which sample.
        #[arg(value_enum)]
        sample: DocaSample,
        /// Another device build of the sample's kernels (e.g. DOCA's public
        /// `dpa_binary_tree_kernels_dev.c` built with `mlx5-dpa cc`) instead of fw-blobs'
        /// `doca_kernels.elf`: a device ELF, or a host program carrying it.
        #[arg(long, value_name = "FILE")]
        app_elf: Option<std::path::PathBuf>,
        /// The application's name in a host program given to --app-elf that carries several.
        #[arg(long, value_name = "NAME", requires = "app_elf")]
        app: Option<String>,
        /// How long the host waits before setting the event that starts the kernels (the
        /// samples sleep 2 or 5 seconds).
        #[arg(long, value_name = "MS", default_value_t = 500, value_parser = crate::input::num::<u64>)]
        delay_ms: u64,
        /// Debug the sample's DPA process with GDB (device model), as `demo rpc --gdb`.
        #[arg(long, value_name = "HOST:PORT", value_parser = crate::gdb::host_port)]
        gdb: Option<String>,
    },
    /// GPUNetIO: a CUDA kernel sends frames through an SQ of the model (its threads sharing
    /// the queue), every frame checked at the RQ. Needs an NVIDIA GPU and a tool built with
    /// `--features gpu`.
    GpuSend {
        /// Frames (1 to 1024).
        #[arg(long, default_value_t = 512, value_parser = crate::input::num::<usize>)]
        frames: usize,
        /// The CPU proxy rings the doorbells (otherwise the kernel does, when it can reach
        /// the UAR page).
        #[arg(long)]
        cpu_proxy: bool,
    },
    /// GPUNetIO: the host sends frames; a CUDA kernel receives them into an RQ's strides and
    /// reports each batch through a semaphore; the CPU checks every packet. Needs a GPU.
    GpuRecv {
        /// Frames (1 to 100000).
        #[arg(long, default_value_t = 512, value_parser = crate::input::num::<usize>)]
        frames: usize,
    },
    /// GPUNetIO Verbs: 16 CUDA threads put 1 KiB chunks with a signal each into a peer's
    /// memory over an RC QP of the model; bytes and counter checked. Needs a GPU.
    GpuVerbs {
        /// Chunks (1 to 48).
        #[arg(long, default_value_t = 48, value_parser = crate::input::num::<usize>)]
        chunks: usize,
        /// The CPU proxy rings the doorbells.
        #[arg(long)]
        cpu_proxy: bool,
    },
}

/// `demo gpu-*`: the example's run, or why it cannot run here.
#[allow(unused_variables)]
fn gpu_demo(
    demo: &Demo,
    ctx: &Arc<dyn Devx>,
    model: Option<&mlx5_sim::Device>,
    out: &mut dyn std::io::Write,
) -> Result<(), DemoError> {
    let Some(m) = model else {
        return Err(DemoError(
            "the GPU demos check their traffic on the device model's loopback port; use --sim"
                .into(),
        ));
    };
    #[cfg(feature = "gpu")]
    {
        use mlx5_dpa::gpu::NicHandler;
        let handler = |proxy: bool| {
            if proxy {
                NicHandler::CpuProxy
            } else {
                NicHandler::GpuSmDb
            }
        };
        m.set_port_address([0x02, 0, 0x5e, 0, 0, 1], [10, 0, 0, 1]);
        let mac = m.with_profile_mut(|p| p.mac);
        let r = match demo {
            Demo::GpuSend { frames, cpu_proxy } => {
                gpunetio::send(ctx, mac, *frames, handler(*cpu_proxy), out)
            }
            Demo::GpuRecv { frames } => gpunetio::recv(ctx, mac, *frames, out),
            Demo::GpuVerbs { chunks, cpu_proxy } => {
                gpunetio::verbs(ctx, *chunks, handler(*cpu_proxy), out)
            }
            _ => return Err(DemoError("not a GPU demo".into())),
        };
        r.map(|_| ()).map_err(Into::into)
    }
    #[cfg(not(feature = "gpu"))]
    Err(DemoError(
        "this mlx5-dpa was built without GPU support: cargo build --release -p mlx5-dpa-tools --features gpu".into(),
    ))
}

/// The application `--app-elf FILE [--app NAME]` names: the file itself when it is a device
/// ELF; from a host program (`.dpa_bin_` sections), the copy of application `NAME` (or of its
/// only application) for the device's hardware model, as `flexio_app_get` with
/// `FLEXIO_HW_MODEL_DEF` selects it. Its signature is the host program's signature section,
/// or else `FILE.sig` beside the file when there is one (as `verify` finds it), so a device
/// that requires signed images (`--sim-trust`) runs it.
pub(crate) fn device_image(
    ctx: &Arc<dyn Devx>,
    path: &std::path::Path,
    name: Option<&str>,
) -> Result<App, DemoError> {
    let bytes = crate::input::read_bounded(path, crate::input::MAX_ELF_FILE)
        .map_err(|e| DemoError(e.to_string()))?;
    let shown = path.display();
    let apps = App::all_in_elf("app", &bytes).map_err(|e| DemoError(format!("{shown}: {e}")))?;
    let names = app_names(&apps);
    let name = match (name, names.as_slice()) {
        (Some(n), _) => n.to_string(),
        (None, [only]) => only.clone(),
        (None, _) => {
            return Err(DemoError(format!(
                "{shown} carries applications {}: name one with --app",
                names.join(", ")
            )))
        }
    };
    let app = mlx5_dpa::dpa::app_get(ctx, apps, &AppSelectAttr::new(&name))
        .map_err(|e| DemoError(format!("{shown}: {e}")))?;
    if app.crypto_data().is_some() {
        return Ok(app);
    }
    let sig = crate::input::sig_beside(path);
    if !sig.is_file() {
        return Ok(app);
    }
    let blob =
        crate::input::read_bounded(&sig, MAX_SIG_FILE).map_err(|e| DemoError(e.to_string()))?;
    app.with_signature_file(&sig.display().to_string(), &blob)
        .map_err(|e| DemoError(format!("{}: {e}", sig.display())))
}

/// The largest `.sig` file read beside an application (firmware takes at most 64 KiB).
const MAX_SIG_FILE: u64 = 64 << 10;

/// `--gdb ADDR` of a DPA demo: prints the process's debug token as FlexIO's samples do and
/// serves GDB the process (the device model's; its activations wait until GDB continues).
fn gdb_hook(
    gdb: Option<&str>,
    model: Option<&mlx5_sim::Device>,
    p: &mlx5_dpa::dpa::Process,
    out: &mut dyn std::io::Write,
    server: &mut Option<std::thread::JoinHandle<()>>,
) -> Result<(), Box<dyn std::error::Error>> {
    let Some(addr) = gdb else {
        return Ok(());
    };
    let Some(m) = model else {
        return Err("--gdb debugs the device model's DPA (use --sim)".into());
    };
    writeln!(
        out,
        "Use the token >>> {:#018x} <<< for debugging",
        crate::gdb::debug_token(p.id())
    )?;
    out.flush()?;
    *server = Some(crate::gdb::dpa::serve(m, Some(p.id()), addr)?);
    Ok(())
}

/// `demo doca-dpa` samples.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum DocaSample {
    /// `hello_world` on one thread, with a completion event.
    KernelLaunch,
    /// The same, started when another host thread sets its wait event.
    WaitKernelLaunch,
    /// Seven kernels in a tree, each waiting in the kernel for its parent.
    BinaryTree,
    /// A -> (B, C) -> D, D waiting for both.
    DiamondTree,
    /// The seed's hello world: a DPA thread woken by an RPC through a notification completion.
    HelloWorld,
    /// DOCA's ping-pong: two DPA threads exchange 100 values with RDMA posted by the DPA.
    PingPong,
    /// DOCA's basic initiator / target: an RDMA completion wakes the target's DPA thread.
    BasicInitiatorTarget,
    /// DOCA's initiator / target: two connections into one completion context wake the
    /// target's DPA thread, which then notifies a second thread.
    InitiatorTarget,
    /// DOCA 2.6's RDMA copy: a kernel on DOCA 2.6's device API writes one host buffer into
    /// another over a DPA RDMA and signals the host.
    RdmaCopy,
}

/// A number as the tool takes numbers everywhere: decimal, `0x` hex, or negative (two's
/// complement).
fn number(s: &str) -> Result<u64, String> {
    crate::vm::parse_arg(s).map_err(|e| e.to_string())
}

/// A demo failure, as a sentence.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct DemoError(pub String);

impl From<Box<dyn std::error::Error>> for DemoError {
    fn from(e: Box<dyn std::error::Error>) -> Self {
        DemoError(e.to_string())
    }
}

impl From<std::io::Error> for DemoError {
    fn from(e: std::io::Error) -> Self {
        DemoError(e.to_string())
    }
}

/// Runs `demo` on `ctx`; `model` is the device model behind `ctx`, if it is one.
pub fn run(
    demo: &Demo,
    ctx: &Arc<dyn Devx>,
    model: Option<&mlx5_sim::Device>,
    device_name: &str,
) -> Result<(), DemoError> {
    let pcap = match demo {
        Demo::EthLoopback { pcap, .. }
        | Demo::Rdma { pcap, .. }
        | Demo::PacketProcessor { pcap, .. } => pcap.as_deref(),
        Demo::Rpc { .. }
        | Demo::Window { .. }
        | Demo::Multithread { .. }
        | Demo::DocaDpa { .. }
        | Demo::GpuSend { .. }
        | Demo::GpuRecv { .. }
        | Demo::GpuVerbs { .. } => None,
    };
    if pcap.is_some() && model.is_none() {
        return Err(DemoError(
            "--pcap records the device model's port; on hardware capture with tcpdump".into(),
        ));
    }
    let mut extra = Vec::new();
    if let Demo::Rdma { linked: true, .. } = demo {
        let Some(a) = model else {
            return Err(DemoError(
                "--linked links two device models; it needs --sim".into(),
            ));
        };
        let b = mlx5_sim::Device::new(a.with_profile_mut(|p| p.clone()));
        a.set_port_address([0x02, 0x00, 0x5e, 0x00, 0x00, 0x01], [10, 0, 0, 1]);
        b.set_port_address([0x02, 0x00, 0x5e, 0x00, 0x00, 0x02], [10, 0, 0, 2]);
        mlx5_sim::Device::link(a, &b);
        extra.push(b);
    }
    if let (Some(m), Some(path)) = (model, pcap) {
        let pcap_err = |e: std::io::Error| DemoError(format!("pcap {}: {e}", path.display()));
        m.capture(std::fs::File::create(path).map_err(pcap_err)?)
            .map_err(pcap_err)?;
    }
    for m in model.into_iter().chain(extra.iter()) {
        m.start_engine();
    }
    let res = run_on(
        demo,
        ctx,
        model,
        device_name,
        &extra,
        &mut std::io::stdout(),
    );
    for m in model.into_iter().chain(extra.iter()) {
        m.stop_engine();
    }
    if let Some(m) = model {
        m.stop_captures().map_err(|e| {
            let path = pcap.map(|p| p.display().to_string()).unwrap_or_default();
            DemoError(format!("pcap {path}: {e}"))
        })?;
        if let Some(p) = pcap {
            println!("pcap written to {}", p.display());
        }
    }
    res
}

/// What a sample calls once its DPA process exists (the GDB hook of `--gdb`).
type OnProcess<'a> = dyn FnMut(
        &mlx5_dpa::dpa::Process,
        &mut dyn std::io::Write,
    ) -> Result<(), Box<dyn std::error::Error>>
    + 'a;

/// Runs `f` with the `--gdb` hook for `gdb`, and ends the GDB server it may have started.
fn with_gdb<T>(
    gdb: Option<&str>,
    model: Option<&mlx5_sim::Device>,
    f: impl FnOnce(&mut OnProcess<'_>) -> T,
) -> T {
    let mut server = None;
    let r = {
        let mut on_process = |p: &mlx5_dpa::dpa::Process, out: &mut dyn std::io::Write| {
            gdb_hook(gdb, model, p, out, &mut server)
        };
        f(&mut on_process)
    };
    drop(server);
    r
}

/// The demo itself, on started engines; `extra` holds the second model of `rdma --linked`.
fn run_on(
    demo: &Demo,
    ctx: &Arc<dyn Devx>,
    model: Option<&mlx5_sim::Device>,
    device_name: &str,
    extra: &[mlx5_sim::Device],
    out: &mut std::io::Stdout,
) -> Result<(), DemoError> {
    match demo {
        Demo::GpuSend { .. } | Demo::GpuRecv { .. } | Demo::GpuVerbs { .. } => {
            gpu_demo(demo, ctx, model, out)
        }
        Demo::EthLoopback { packets, .. } => {
            // Long runs show progress and a rate; Ctrl-C stops sending and reports.
            crate::signals::catch_sigint();
            let opts = eth_loopback::Options {
                packets: *packets,
                progress: Some(std::time::Duration::from_secs(1)),
                stop: Some(crate::signals::interrupted()),
                ..Default::default()
            };
            eth_loopback::run(ctx, out, &opts)
                .map(|_| ())
                .map_err(Into::into)
        }
        Demo::Rdma { .. } => (|| {
            let cb = extra
                .first()
                .map_or_else(|| Arc::clone(ctx), |b| b.open_devx());
            let mut a = rdma_rc::Side::new(ctx)?;
            let mut b = rdma_rc::Side::new(&cb)?;
            rdma_rc::connect(&mut a, &mut b, extra.is_empty())?;
            rdma_rc::run(&mut a, &mut b, out).map(|_| ())
        })()
        .map_err(Into::into),
        Demo::Rpc {
            a,
            b,
            app_elf,
            app,
            gdb,
        } => {
            let app = match app_elf {
                Some(p) => device_image(ctx, p, app.as_deref())?,
                None => App::from_device_elf("rpc_calc", flexio_rpc::RPC_CALC_ELF)
                    .map_err(|e| DemoError(e.to_string()))?,
            };
            let attr = mlx5_dpa::dpa::ProcessAttr::for_app(&app);
            with_gdb(gdb.as_deref(), model, |hook| {
                flexio_rpc::run_with(ctx, device_name, (*a, *b), app.image(), &attr, out, hook)
            })
            .map(|_| ())
            .map_err(DemoError::from)
        }
        Demo::Multithread { workers, gdb } => with_gdb(gdb.as_deref(), model, |hook| {
            flexio_multithread::run_with(ctx, *workers, out, hook)
        })
        .map(|_| ())
        .map_err(Into::into),
        Demo::Window { gdb } => with_gdb(gdb.as_deref(), model, |hook| {
            flexio_window::run_with(ctx, out, hook)
        })
        .map(|_| ())
        .map_err(Into::into),
        Demo::DocaDpa {
            sample,
            app_elf,
            app,
            delay_ms,
            gdb,
        } => {
            let image = match app_elf {
                Some(p) => Some(device_image(ctx, p, app.as_deref())?),
                None => None,
            };
            let delay = std::time::Duration::from_millis(*delay_ms);
            with_gdb(gdb.as_deref(), model, |hook| {
                doca_dpa::run_with(ctx, doca_sample(*sample), image.as_ref(), delay, out, hook)
            })
            .map_err(|e| DemoError(e.to_string()))
        }
        Demo::PacketProcessor {
            app_elf, app, gdb, ..
        } => {
            let app = match app_elf {
                Some(p) => device_image(ctx, p, app.as_deref())?,
                None => App::from_device_elf("pp_sample", flexio_packet_processor::PP_SAMPLE_ELF)
                    .map_err(|e| DemoError(e.to_string()))?,
            };
            let attr = mlx5_dpa::dpa::ProcessAttr::for_app(&app);
            with_gdb(gdb.as_deref(), model, |hook| {
                flexio_packet_processor::run_sample_with(
                    ctx,
                    device_name,
                    app.image(),
                    &attr,
                    out,
                    hook,
                )
            })
            .map(|_| ())
            .map_err(DemoError::from)
        }
    }
}

/// The DOCA DPA sample a `demo doca-dpa` argument names.
fn doca_sample(s: DocaSample) -> doca_dpa::Sample {
    match s {
        DocaSample::KernelLaunch => doca_dpa::Sample::KernelLaunch,
        DocaSample::WaitKernelLaunch => doca_dpa::Sample::WaitKernelLaunch,
        DocaSample::BinaryTree => doca_dpa::Sample::BinaryTree,
        DocaSample::DiamondTree => doca_dpa::Sample::DiamondTree,
        DocaSample::HelloWorld => doca_dpa::Sample::HelloWorld,
        DocaSample::PingPong => doca_dpa::Sample::PingPong,
        DocaSample::BasicInitiatorTarget => doca_dpa::Sample::BasicInitiatorTarget,
        DocaSample::InitiatorTarget => doca_dpa::Sample::InitiatorTarget,
        DocaSample::RdmaCopy => doca_dpa::Sample::RdmaCopy,
    }
}
