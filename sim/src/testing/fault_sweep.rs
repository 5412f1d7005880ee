//! Fault injection over a whole flow: every firmware command of its set-up fails in turn,
//! then every command of its teardown, each on a fresh model.
//!
//! A flow is a set-up (`&Arc<dyn Devx>` to a value or an error) and a teardown (the value to
//! `Ok` or an error). [`sweep`] first runs it cleanly and records the commands of each phase,
//! then fails each command of the set-up in turn and asks:
//!
//! - the set-up failed with an error that [`Judge`] accepts: it names the step, and the
//!   injected firmware status is underneath it (not some later symptom);
//! - or it succeeded, and the failed command is one the flow declares optional
//!   ([`Sweep::optional`]): a command whose failure a flow survives must be named, never
//!   swallowed by a polling loop unnoticed;
//!
//! and then sets up cleanly and fails each command of the teardown in turn: an error (from an explicit close) must also be accepted by the judge; a
//! teardown by drop has nowhere to report, so only what follows is checked. After every run
//! the context is closed and the model must hold nothing, and no run may panic. Hangs are
//! bounded by the flows' own timeouts, and a timeout is no firmware status: the judge refuses
//! it.

use std::collections::BTreeSet;
use std::sync::Arc;

use mlx5_dpa::devx::Devx;
use mlx5_dpa::mlx5::{Opcode, Status};

use crate::Device;

/// The status injected: a resource error, which no flow here meets otherwise.
pub const INJECTED: Status = Status::BAD_RES;

/// Accepts or refuses an error of a flow for a failed command: `Ok(step)` when it names the
/// step and carries the injected status underneath, `Err(why)` otherwise.
pub type Judge<'a, E> = &'a dyn Fn(&E, Status) -> Result<String, String>;

/// A flow's set-up: a working flow on the context, or why not.
pub type Setup<'a, T, E> = &'a dyn Fn(&Arc<dyn Devx>) -> Result<T, E>;

/// A flow to sweep.
pub struct Sweep<'a, T, E> {
    /// For messages.
    pub name: &'static str,
    /// The model profile each run starts from.
    pub profile: &'static str,
    /// Everything up to a working flow (traffic included when the flow's point is traffic).
    pub setup: Setup<'a, T, E>,
    /// Everything after: an explicit close, or a drop (`|t| { drop(t); Ok(()) }`).
    pub teardown: &'a dyn Fn(T) -> Result<(), E>,
    pub judge: Judge<'a, E>,
    /// Commands the set-up may survive failing, by opcode and `op_mod` (`None`: any), with
    /// the reason; anything else that fails without failing the set-up is a defect.
    pub optional: &'a [(Opcode, Option<u16>, &'static str)],
}

/// What a sweep saw.
#[derive(Debug, Default)]
pub struct SweepReport {
    pub setup_commands: u64,
    pub teardown_commands: u64,
    /// The steps set-up failures were reported in.
    pub setup_steps: BTreeSet<String>,
    /// The steps teardown failures were reported in (explicit closes only).
    pub teardown_steps: BTreeSet<String>,
    /// Failed set-up commands the flow survived, as declared optional.
    pub tolerated: Vec<(Opcode, u16)>,
    /// Targets a run did not reach (a polling query that was not needed that time).
    pub not_reached: u64,
    /// Teardown runs that reported their failure as an error (not only by leaving objects
    /// to the context's release).
    pub teardown_errors: u64,
}

thread_local! {
    static RUNNING: std::cell::RefCell<Option<Device>> = const { std::cell::RefCell::new(None) };
}

/// The model the sweep's current run is on, for set-ups that open more than the context they
/// are given (a sub-function's, [`Device::open_function`]). Only during a sweep, on its thread.
///
/// # Panics
/// Outside a sweep.
pub fn running_device() -> Device {
    RUNNING.with(|r| {
        r.borrow()
            .clone()
            .expect("running_device outside a fault sweep")
    })
}

/// A fresh model of `profile` with its engine running, and a context on it.
fn fresh(profile: &str) -> (Device, Arc<dyn Devx>) {
    let d = Device::with_profile(profile).unwrap_or_else(|| panic!("no profile {profile}"));
    d.start_engine();
    let ctx = d.open_devx();
    RUNNING.with(|r| *r.borrow_mut() = Some(d.clone()));
    (d, ctx)
}

/// Closes the context, stops the model and checks it holds nothing.
fn close(what: &str, d: Device, ctx: Arc<dyn Devx>) {
    RUNNING.with(|r| r.borrow_mut().take());
    drop(ctx);
    d.stop_engine();
    let inv = d.inventory();
    assert!(
        inv.is_empty(),
        "{what}: left after the context closed: {inv}"
    );
}

/// The commands of a trace as targets: (opcode, `op_mod`, which occurrence of that pair).
fn targets(trace: &[(Opcode, u16)]) -> Vec<(Opcode, u16, u64)> {
    let mut seen: std::collections::HashMap<(u16, u16), u64> = Default::default();
    trace
        .iter()
        .map(|&(op, m)| {
            let k = seen.entry((op.0, m)).or_default();
            *k += 1;
            (op, m, *k)
        })
        .collect()
}

/// The name of a target in messages.
fn target_name(flow: &str, phase: &str, i: usize, (op, op_mod, k): (Opcode, u16, u64)) -> String {
    format!(
        "{flow}: {phase} command {} ({op}, op_mod {op_mod:#x}, #{k} of its kind)",
        i + 1
    )
}

/// The step a failure was reported in; panics unless an injected fault caused it and the
/// judge accepts it.
fn judged<T, E: std::fmt::Debug>(
    s: &Sweep<'_, T, E>,
    what: &str,
    injected: bool,
    e: &E,
    trace: bool,
) -> String {
    assert!(injected, "{what}: an error without a failed command: {e:?}");
    let step = (s.judge)(e, INJECTED).unwrap_or_else(|why| panic!("{what}: {why}: {e:?}"));
    if trace {
        eprintln!("{what} -> {step}");
    }
    step
}

/// Runs the sweep; panics (naming the flow, phase and command) on the first defect.
///
/// Commands are targeted as "the k-th command with this opcode and `op_mod`", not by their
/// position: how many times a wait polls differs from run to run, and a target by position
/// would land on different commands. A target a run does not reach (a poll that was not
/// needed this time) is counted in [`SweepReport::not_reached`].
/// With `SWEEP_TRACE` set in the environment, each target and the step it failed in are
/// printed on stderr.
pub fn sweep<T, E: std::fmt::Debug>(s: &Sweep<'_, T, E>) -> SweepReport {
    let trace = std::env::var_os("SWEEP_TRACE").is_some();
    let mut report = SweepReport::default();
    // A clean run records the commands of each phase.
    let (d, ctx) = fresh(s.profile);
    d.record_commands(true);
    let t = (s.setup)(&ctx).unwrap_or_else(|e| panic!("{}: clean set-up failed: {e:?}", s.name));
    let setup_trace = d.record_commands(true);
    (s.teardown)(t).unwrap_or_else(|e| panic!("{}: clean teardown failed: {e:?}", s.name));
    let teardown_trace = d.record_commands(false);
    report.setup_commands = setup_trace.len() as u64;
    report.teardown_commands = teardown_trace.len() as u64;
    // (A clean run may see refusals it handles itself: a destroy or run of a thread that is
    // on an EU is refused until the activation ends, and waited out.)
    close(&format!("{} (clean run)", s.name), d, ctx);

    for (i, target) in targets(&setup_trace).into_iter().enumerate() {
        let (op, op_mod, k) = target;
        let what = target_name(s.name, "set-up", i, target);
        let (d, ctx) = fresh(s.profile);
        d.fail_nth_of(op, Some(op_mod), k, INJECTED);
        let r = (s.setup)(&ctx);
        let hit = d.injected_faults();
        d.clear_faults();
        match r {
            Err(e) => {
                let step = judged(s, &what, !hit.is_empty(), &e, trace);
                report.setup_steps.insert(step);
            }
            Ok(t) => {
                if hit.is_empty() {
                    report.not_reached += 1;
                } else {
                    let declared = s
                        .optional
                        .iter()
                        .any(|&(o, m, _)| o == op && m.is_none_or(|m| m == op_mod));
                    assert!(declared, "{what}: failed, and the set-up went on as if not");
                    report.tolerated.push((op, op_mod));
                }
                (s.teardown)(t).unwrap_or_else(|e| panic!("{what}: teardown failed: {e:?}"));
            }
        }
        close(&what, d, ctx);
    }

    for (i, target) in targets(&teardown_trace).into_iter().enumerate() {
        let (op, op_mod, k) = target;
        let what = target_name(s.name, "teardown", i, target);
        let (d, ctx) = fresh(s.profile);
        let t = (s.setup)(&ctx).unwrap_or_else(|e| panic!("{what}: set-up failed: {e:?}"));
        d.fail_nth_of(op, Some(op_mod), k, INJECTED);
        let r = (s.teardown)(t);
        let hit = d.injected_faults();
        d.clear_faults();
        if hit.is_empty() {
            report.not_reached += 1;
        }
        if let Err(e) = r {
            let step = judged(s, &what, !hit.is_empty(), &e, trace);
            report.teardown_steps.insert(step);
            report.teardown_errors += 1;
        }
        close(&what, d, ctx);
    }
    report
}
