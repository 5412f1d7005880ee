//! The command line of the benches that are plain programs, not criterion's: the filter that
//! `cargo bench [FILTER]` passes, and criterion's own options, accepted so that one
//! `cargo bench -- --save-baseline main` or `-- --quick` runs every bench of the workspace.
//! The plain benches take their rounds from their own constants, so those options change
//! nothing here. The list is criterion 0.8's (`Criterion::configure_from_args`).

use std::path::PathBuf;

use clap::Parser;

#[derive(Parser)]
#[command(about = "One of mlx5-dpa's plain benches; `cargo bench [FILTER]` runs it")]
struct BenchArgs {
    /// Run only when the bench's name contains this.
    filter: Option<String>,
    #[command(flatten)]
    criterion: CriterionOptions,
}

/// Criterion's options, accepted and not used.
#[derive(clap::Args)]
#[allow(dead_code)]
struct CriterionOptions {
    #[arg(long, hide = true)]
    bench: bool,
    #[arg(long, hide = true)]
    test: bool,
    #[arg(long, hide = true)]
    nocapture: bool,
    #[arg(long, hide = true)]
    show_output: bool,
    #[arg(long, hide = true)]
    include_ignored: bool,
    #[arg(long, hide = true)]
    ignored: bool,
    #[arg(long, hide = true)]
    exact: bool,
    #[arg(long, hide = true)]
    list: bool,
    #[arg(long, hide = true)]
    quick: bool,
    #[arg(short, long, hide = true)]
    verbose: bool,
    #[arg(long, hide = true)]
    quiet: bool,
    #[arg(short, long, hide = true)]
    noplot: bool,
    #[arg(long, hide = true)]
    discard_baseline: bool,
    #[arg(short, long, hide = true, alias = "colour")]
    color: Option<String>,
    #[arg(short, long, hide = true)]
    save_baseline: Option<String>,
    #[arg(short, long, hide = true)]
    baseline: Option<String>,
    #[arg(long, hide = true)]
    baseline_lenient: Option<String>,
    #[arg(long, hide = true)]
    load_baseline: Option<PathBuf>,
    #[arg(long, hide = true)]
    format: Option<String>,
    #[arg(long, hide = true)]
    output_format: Option<String>,
    #[arg(long, hide = true)]
    plotting_backend: Option<String>,
    #[arg(long, hide = true)]
    profile_time: Option<f64>,
    #[arg(long, hide = true)]
    sample_size: Option<usize>,
    #[arg(long, hide = true)]
    warm_up_time: Option<f64>,
    #[arg(long, hide = true)]
    measurement_time: Option<f64>,
    #[arg(long, hide = true)]
    nresamples: Option<usize>,
    #[arg(long, hide = true)]
    noise_threshold: Option<f64>,
    #[arg(long, hide = true)]
    confidence_level: Option<f64>,
    #[arg(long, hide = true)]
    significance_level: Option<f64>,
}

/// Whether the bench named `name` runs: with no filter, or when its name contains the filter.
/// A command line criterion would refuse is refused here too (exit status 2).
pub fn selected(name: &str) -> bool {
    let args = BenchArgs::parse();
    args.filter.is_none_or(|f| name.contains(f.as_str()))
}
