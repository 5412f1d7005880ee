//! `mlx5-dpa run [--sim=PROFILE] [--ip ADDR] [--link udp:LOCAL,PEER] [--pcap FILE] -- PROGRAM
//! ARGS...`: runs a program on its own device model, which it sees as `mlx5_0` through the
//! kernel's uverbs ABI (`mlx5_sim_uverbs`): a private mount namespace shows the device's sysfs
//! tree and `/dev/infiniband/uverbs0`, and the preloaded `libmlx5_sim_preload.so` serves it.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use mlx5_sim_uverbs::config::{Config, DEFAULT_IP};

/// `mlx5-dpa run`'s arguments.
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// The port's IPv4 address (its GID 1 is `::ffff:ADDR`; its MAC `02:00:` and the address).
    #[arg(long, default_value_t = DEFAULT_IP)]
    pub ip: std::net::Ipv4Addr,
    /// Link the port to another runner's: `udp:LOCAL_IP:PORT,PEER_IP:PORT` (frames as UDP
    /// datagrams between the two addresses, e.g. on 127.0.0.1).
    #[arg(long, value_name = "udp:LOCAL,PEER")]
    pub link: Option<String>,
    /// Record every frame of the port to this pcap file.
    #[arg(long, value_name = "FILE")]
    pub pcap: Option<PathBuf>,
    /// The program and its arguments.
    #[arg(trailing_var_arg = true, required = true, value_name = "PROGRAM")]
    pub program: Vec<std::ffi::OsString>,
}

/// Why `run` could not start the program.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("{0}")]
    Config(String),
    #[error(
        "cannot find {name}: build it with `cargo build -p mlx5-sim-preload` (it is looked for \
         beside this program, in its deps/ folder, and at ${env})",
        name = PRELOAD_NAME,
        env = PRELOAD_ENV
    )]
    NoPreload,
    #[error("{0}")]
    Namespace(#[from] mlx5_sim_uverbs::ns::NsError),
    #[error("cannot start {program}: {err}")]
    Spawn {
        program: String,
        err: std::io::Error,
    },
}

/// The preloaded library's file name.
pub const PRELOAD_NAME: &str = "libmlx5_sim_preload.so";
/// Where to find it if not beside this program.
pub const PRELOAD_ENV: &str = "MLX5_SIM_PRELOAD";

/// The preload library: `$MLX5_SIM_PRELOAD`, or beside the running program (or in its `deps/`,
/// where `cargo test` leaves it).
pub fn find_preload() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(PRELOAD_ENV) {
        let p = PathBuf::from(p);
        return p.is_file().then_some(p);
    }
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?;
    let candidates = [
        dir.join(PRELOAD_NAME),
        dir.join("deps").join(PRELOAD_NAME),
        dir.parent()
            .map(|p| p.join(PRELOAD_NAME))
            .unwrap_or_default(),
    ];
    candidates.into_iter().find(|p| p.is_file())
}

fn config(args: &RunArgs, profile: &str, capture: Option<&Path>) -> Result<Config, RunError> {
    Ok(Config {
        profile: profile.to_string(),
        ip: args.ip,
        link: args
            .link
            .as_deref()
            .map(Config::parse_link)
            .transpose()
            .map_err(RunError::Config)?,
        pcap: args.pcap.clone(),
        // Absolute: the program may change its working directory before it opens the device.
        capture: capture.map(|p| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())),
        netdev: None,
    })
}

/// Runs the program; its exit status is the runner's (128 + the signal that ended it).
///
/// # Errors
/// [`RunError`] when the program could not be started on the model.
pub fn run(args: &RunArgs, profile: &str, capture: Option<&Path>) -> Result<ExitCode, RunError> {
    let mut cfg = config(args, profile, capture)?;
    let preload = find_preload().ok_or(RunError::NoPreload)?;
    let preload = std::fs::canonicalize(&preload).unwrap_or(preload);
    // The port's network interface, held until the program ends. Programs that only use
    // verbs do not need it, so a machine without TUN/TAP runs them all the same.
    let netdev = match mlx5_sim_uverbs::netdev::Netdev::create(cfg.mac(), cfg.ip) {
        Ok(n) => Some(n),
        Err(e) => {
            eprintln!("mlx5-dpa run: the port has no network interface ({e})");
            None
        }
    };
    cfg.netdev = netdev.as_ref().map(|n| n.name().to_owned());
    mlx5_sim_uverbs::ns::enter(&cfg)?;
    let status = spawn(&args.program, &cfg, &preload)?;
    drop(netdev);
    use std::os::unix::process::ExitStatusExt;
    let code = match (status.code(), status.signal()) {
        (Some(c), _) => c,
        (None, Some(s)) => 128 + s,
        _ => 1,
    };
    Ok(ExitCode::from(code.clamp(0, 255) as u8))
}

fn spawn(
    program: &[std::ffi::OsString],
    cfg: &Config,
    preload: &Path,
) -> Result<std::process::ExitStatus, RunError> {
    let (prog, rest) = program.split_first().ok_or_else(|| RunError::Spawn {
        program: String::new(),
        err: std::io::Error::from(std::io::ErrorKind::InvalidInput),
    })?;
    let mut ld = preload.as_os_str().to_os_string();
    if let Some(old) = std::env::var_os("LD_PRELOAD").filter(|v| !v.is_empty()) {
        ld.push(":");
        ld.push(old);
    }
    let mut cmd = std::process::Command::new(prog);
    cmd.args(rest).env("LD_PRELOAD", ld);
    for (k, v) in cfg.to_env() {
        cmd.env(k, v);
    }
    if cfg.pcap.is_none() {
        cmd.env_remove(mlx5_sim_uverbs::config::ENV_PCAP);
    }
    if cfg.capture.is_none() {
        cmd.env_remove(mlx5_sim_uverbs::config::ENV_CAPTURE);
    }
    if cfg.link.is_none() {
        cmd.env_remove(mlx5_sim_uverbs::config::ENV_LINK);
    }
    cmd.status().map_err(|err| RunError::Spawn {
        program: prog.to_string_lossy().into_owned(),
        err,
    })
}
