//! Process churn: creates a DPA process, calls it once and drops it, N times, on one model,
//! printing the resident set every M cycles and the model's DPA bookkeeping at the end; with
//! `doca`, a DOCA DPA context started, launched once and dropped instead. What issue 30
//! measured memory growth with (`docs/performance.md`, "Process churn").
//!
//! ```text
//! cargo run --release --example process_churn -- [CYCLES] [EVERY] [doca]
//! ```

use mlx5_dpa::doca::{Dpa, DpaAttr, KernelArg, SyncEventAttr};
use mlx5_dpa::dpa::app::App;
use mlx5_dpa::dpa::{Process, ProcessAttr};

const RPC_CALC: &[u8] = include_bytes!("../fw-blobs/bin/rpc_calc.elf");
const KERNELS: &[u8] = include_bytes!("../fw-blobs/bin/doca_kernels.elf");

/// The resident set of this process, in KiB (`VmRSS` of /proc/self/status; 0 where there is
/// none).
fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// Creates, calls and drops DPA processes (or DOCA DPA contexts), printing the resident set.
#[derive(clap::Parser)]
struct Args {
    /// Cycles
    #[arg(default_value_t = 1000)]
    cycles: u64,
    /// Print the resident set every this many cycles
    #[arg(default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..))]
    every: u64,
    /// Churn DOCA DPA contexts instead of FlexIO processes
    #[arg(value_parser = ["doca"])]
    doca: Option<String>,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let Args {
        cycles,
        every,
        doca,
    } = clap::Parser::parse();
    let doca = doca.is_some();
    let app = App::from_device_elf("doca_kernels", KERNELS)?;
    let d = mlx5_sim::Device::with_profile("bf3").ok_or("no bf3 profile")?;
    d.start_engine();
    let ctx = d.open_devx();
    println!("cycle rss_kib");
    for i in 0..=cycles {
        if i % every == 0 {
            println!("{i} {}", rss_kib());
        }
        if i == cycles {
            break;
        }
        if doca {
            // A context, one kernel that sets an event, waited for.
            let dpa = Dpa::start(&ctx, &app, &DpaAttr::default())?;
            let ev = dpa.sync_event(SyncEventAttr::dpa_to_cpu())?;
            dpa.kernel_launch_update_set(
                None,
                None,
                1,
                "linear_kernel",
                &[KernelArg::U64(0), KernelArg::U64(ev.dpa_handle()?)],
            )?;
            ev.wait_gt(0, u64::MAX, std::time::Duration::from_secs(20))?;
        } else {
            let p = Process::create(&ctx, RPC_CALC, &ProcessAttr::default())?;
            let r = p.call("rpc_calculate", &[i, 1])?;
            assert_eq!(r, i + 1);
        }
    }
    let held = d.dpa_stats();
    println!(
        "code caches made {}, processes alive {}",
        held.code_caches_made,
        d.dpa_processes().len()
    );
    drop(ctx);
    d.stop_engine();
    Ok(())
}
