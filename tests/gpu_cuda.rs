//! Feature `gpu`: CUDA through cudarc. Everywhere: the probe answers with a typed error, never
//! a panic, where there is no driver or no GPU. On a GPU machine (docs/sources.md section 10), CUDA
//! kernels compiled with NVRTC against the GPUNetIO headers drive the device model's queues
//! (`examples/gpunetio.rs`, also `mlx5-dpa demo gpu-send | gpu-recv | gpu-verbs`): frames sent
//! through an exported SQ (CPU proxy and kernel-rung doorbells), received through an exported
//! RQ with a semaphore telling the CPU, and puts with signals over an RC QP, each checked.
//! Without a GPU the kernel tests are reported *ignored*, with the probe's reason, never ok.

use libtest_mimic::{Arguments, Failed, Trial};
use mlx5_dpa::gpu::cuda::{probe, Gpu};
use mlx5_dpa::gpu::{GpuError, NicHandler};

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn without_a_gpu_the_probe_says_why() {
    match probe() {
        Ok(info) => {
            assert!(info.devices >= 1 && !info.name.is_empty(), "{info:?}");
            eprintln!("GPU: {info:?}");
        }
        Err(e @ (GpuError::NoDriver(_) | GpuError::NoDevice(_))) => {
            assert!(!e.to_string().is_empty());
            // Opening says the same, without a panic from the CUDA library.
            let open = Gpu::open(0).expect_err("no GPU to open");
            assert_eq!(
                std::mem::discriminant(&open),
                std::mem::discriminant(&e),
                "{open} / {e}"
            );
            eprintln!("no GPU here ({e}): the kernel tests are ignored");
        }
        Err(other) => panic!("a probe error of the wrong kind: {other}"),
    }
}

#[path = "../examples/gpunetio.rs"]
#[allow(dead_code)]
mod gpunetio;

/// The model for a GPU run (the harness runs the kernel tests only where the probe found one).
fn model() -> (
    mlx5_sim::Device,
    std::sync::Arc<dyn mlx5_dpa::devx::Devx>,
    [u8; 6],
) {
    let dev = mlx5_sim::Device::with_profile("bf3").expect("bf3");
    dev.set_port_address([0x02, 0, 0x5e, 0, 0, 1], [10, 0, 0, 1]);
    dev.start_engine();
    let ctx = dev.open_devx();
    let mac = dev.with_profile_mut(|p| p.mac);
    (dev, ctx, mac)
}

fn a_cuda_kernel_sends_frames_rung_by_the_cpu_proxy() -> TestResult {
    let (_dev, ctx, mac) = model();
    let mut out = Vec::new();
    let r = gpunetio::send(&ctx, mac, 512, NicHandler::CpuProxy, &mut out)?;
    eprintln!("{}", String::from_utf8_lossy(&out));
    assert_eq!(r.count, 512);
    assert!(r.proxy_doorbells > 0, "the proxy rang");
    Ok(())
}

fn a_cuda_kernel_sends_frames_ringing_the_doorbell_itself() -> TestResult {
    let (_dev, ctx, mac) = model();
    let mut out = Vec::new();
    let r = gpunetio::send(&ctx, mac, 512, NicHandler::GpuSmDb, &mut out)?;
    eprintln!("{}", String::from_utf8_lossy(&out));
    assert_eq!(r.count, 512);
    Ok(())
}

fn a_cuda_kernel_receives_and_reports_through_a_semaphore() -> TestResult {
    let (_dev, ctx, mac) = model();
    let mut out = Vec::new();
    let r = gpunetio::recv(&ctx, mac, 300, &mut out)?;
    eprintln!("{}", String::from_utf8_lossy(&out));
    assert_eq!(r.count, 300);
    Ok(())
}

fn a_cuda_kernel_puts_with_signals() -> TestResult {
    let (_dev, ctx, _) = model();
    let mut out = Vec::new();
    let r = gpunetio::verbs(&ctx, 48, NicHandler::CpuProxy, &mut out)?;
    eprintln!("{}", String::from_utf8_lossy(&out));
    assert_eq!(r.count, 48);
    Ok(())
}

fn main() {
    let args = Arguments::from_args();
    let no_gpu = probe().err().map(|e| e.to_string());
    let kernel = |name: &str, f: fn() -> TestResult| {
        let t = Trial::test(name, move || f().map_err(|e| Failed::from(e.to_string())));
        t.with_ignored_flag(no_gpu.is_some())
    };
    let trials = vec![
        Trial::test("without_a_gpu_the_probe_says_why", || {
            without_a_gpu_the_probe_says_why();
            Ok(())
        }),
        kernel(
            "a_cuda_kernel_sends_frames_rung_by_the_cpu_proxy",
            a_cuda_kernel_sends_frames_rung_by_the_cpu_proxy,
        ),
        kernel(
            "a_cuda_kernel_sends_frames_ringing_the_doorbell_itself",
            a_cuda_kernel_sends_frames_ringing_the_doorbell_itself,
        ),
        kernel(
            "a_cuda_kernel_receives_and_reports_through_a_semaphore",
            a_cuda_kernel_receives_and_reports_through_a_semaphore,
        ),
        kernel(
            "a_cuda_kernel_puts_with_signals",
            a_cuda_kernel_puts_with_signals,
        ),
    ];
    if let Some(why) = &no_gpu {
        eprintln!("gpu_cuda: 4 test(s) skipped: no GPU ({why})");
    }
    libtest_mimic::run(&args, trials).exit();
}
