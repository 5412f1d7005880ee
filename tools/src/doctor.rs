//! `mlx5-dpa doctor`: what of the project works on this device, as a graded checklist from
//! harmless to involved. Each step builds on the ones before it; the first failure stops the
//! run, with the firmware's status and syndrome (and, on the model, the check that refused)
//! and what to look at.
//!
//! ```text
//! $ mlx5-dpa doctor --device mlx5_0
//! mlx5-dpa doctor: mlx5_0 (...)
//!  1. open the device (DevX)                    ok      ...
//!  2. query the HCA capabilities                ok      ...
//!  ...
//! 11 of 11 steps passed
//! ```
//!
//! `--json`: one object `{"device", "steps": [{"step", "name", "ok", "detail", "status",
//! "syndrome", "check", "hint"}], "passed", "total"}`. Exit status 0 when every step passed,
//! 1 otherwise.

use std::error::Error;
use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use mlx5_dpa::devx::{self, Devx, UarKind};
use mlx5_dpa::dpa::caps::DpaCaps;
use mlx5_dpa::dpa::{Process, ProcessAttr};
use mlx5_dpa::mem::{Access, DmaBuf, Pd, Umem};
use mlx5_dpa::mlx5::cmd::CmdError;
use mlx5_dpa::queues::steering::{Tis, TransportDomain};
use mlx5_dpa::queues::{Cq, CqConfig, EthSq, EthSqConfig, HostQueueMem};
use mlx5_dpa::uar::UarPage;

use crate::demo::{eth_loopback, rdma_rc};

type StepResult = Result<String, Box<dyn Error>>;

/// What the steps share: the device, and what earlier steps made.
struct Bench<'a> {
    ctx: &'a Arc<dyn Devx>,
    pd: Option<Arc<Pd>>,
    uar: Option<Arc<UarPage>>,
    cq: Option<Cq>,
    process: Option<Process>,
}

/// One step of `--json`'s `steps`: a failed step also carries the firmware's status and
/// syndrome, the model's check and the hint (null when unknown).
#[derive(serde::Serialize)]
struct Row {
    step: usize,
    name: &'static str,
    ok: bool,
    detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<Option<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    syndrome: Option<Option<u32>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    check: Option<Option<&'static str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    hint: Option<&'static str>,
}

impl Row {
    fn passed(step: usize, name: &'static str, detail: String) -> Row {
        Row {
            step,
            name,
            ok: true,
            detail,
            status: None,
            syndrome: None,
            check: None,
            hint: None,
        }
    }
}

/// `doctor --json`'s object.
#[derive(serde::Serialize)]
struct Report<'a> {
    device: &'a str,
    steps: &'a [Row],
    passed: usize,
    total: usize,
}

/// One step: its name, what to look at when it fails, and what it does.
struct Step {
    name: &'static str,
    hint: &'static str,
    run: fn(&mut Bench<'_>) -> StepResult,
}

const STEPS: &[Step] = &[
    Step {
        name: "query the HCA capabilities",
        hint: "DevX answers but QUERY_HCA_CAP fails: is the function's DevX enabled (a \
               privileged user or the uverbs device's permissions; mlx5_ib loaded)?",
        run: |b| {
            let c = devx::query_caps(b.ctx.as_ref())?;
            Ok(format!(
                "{} general object types, DPA {}",
                c.general.general_obj_types.count_ones() + c.general_obj_types_127_64.count_ones(),
                if c.dpa.is_some() { "present" } else { "absent" }
            ))
        },
    },
    Step {
        name: "allocate a protection domain",
        hint: "ALLOC_PD refused: the function may be out of PDs, or DevX lacks the uid it needs",
        run: |b| {
            let pd = Pd::alloc(b.ctx)?;
            let d = format!("pdn {:#x}", pd.pdn().0);
            b.pd = Some(pd);
            Ok(d)
        },
    },
    Step {
        name: "register memory with the device (UMEM)",
        hint: "UMEM registration pins pages: check `ulimit -l` (locked memory) and the IOMMU",
        run: |b| {
            let buf = DmaBuf::new(1 << 16)?;
            let umem = Umem::register(b.ctx, &buf, Access::LOCAL_WRITE)?;
            Ok(format!("64 KiB as UMEM {:#x}", umem.id().0))
        },
    },
    Step {
        name: "create a completion queue",
        hint: "CREATE_CQ refused: a UAR page, an EQ (completion vector 0) and the ring's UMEM \
               are needed; the syndrome names which",
        run: |b| {
            let uar = UarPage::alloc(b.ctx, UarKind::NonCached)?;
            let cfg = CqConfig::new(6);
            let cq = Cq::create(
                b.ctx,
                &uar,
                HostQueueMem::alloc(b.ctx, cfg.ring_bytes())?,
                &cfg,
            )?;
            let d = format!("CQ {:#x}, 64 entries", cq.cqn().0);
            b.uar = Some(uar);
            b.cq = Some(cq);
            Ok(d)
        },
    },
    Step {
        name: "create an Ethernet send queue",
        hint: "a transport domain, a TIS and an SQ in RDY: an Ethernet function (not \
               InfiniBand) is needed",
        run: |b| {
            let (Some(pd), Some(uar), Some(cq)) = (&b.pd, &b.uar, &b.cq) else {
                return Err("the earlier steps left no PD, UAR or CQ".into());
            };
            let td = TransportDomain::alloc(b.ctx)?;
            let tis = Tis::create(b.ctx, &td, pd)?;
            let cfg = EthSqConfig {
                log_size: 6,
                signal_every: 1,
            };
            let sq = EthSq::create(
                b.ctx,
                pd,
                uar,
                &tis,
                cq,
                HostQueueMem::alloc(b.ctx, cfg.ring_bytes())?,
                &cfg,
            )?;
            Ok(format!("SQ {:#x} over TIS {:#x}", sq.sqn().0, tis.tisn()))
        },
    },
    Step {
        name: "send frames to the port's own MAC and receive them",
        hint: "the frames left the port and did not come back: loopback inside the NIC needs \
               the vport's loopback enabled, or a cable looped back / a peer that reflects \
               them; steering (the flow rule to the RQ) is also checked here",
        run: |b| {
            let mut out = Vec::new();
            let opts = eth_loopback::Options {
                packets: 8,
                ..Default::default()
            };
            let r = eth_loopback::run(b.ctx, &mut out, &opts)?;
            if r.verified != opts.packets {
                return Err(
                    format!("{} of {} frames came back intact", r.verified, opts.packets).into(),
                );
            }
            Ok(format!("{} frames out and back, checked", r.verified))
        },
    },
    Step {
        name: "connect two RC queue pairs and move data",
        hint: "RST -> INIT -> RTR -> RTS on one port, force-loopback: RoCE must be enabled \
               on the port and the GID table hold an address (index 0)",
        run: |b| {
            let mut x = rdma_rc::Side::new(b.ctx)?;
            let mut y = rdma_rc::Side::new(b.ctx)?;
            rdma_rc::connect(&mut x, &mut y, true)?;
            let mut out = Vec::new();
            let r = rdma_rc::run(&mut x, &mut y, &mut out)?;
            if r.verified != r.operations {
                return Err(
                    format!("{} of {} RC operations verified", r.verified, r.operations).into(),
                );
            }
            Ok(format!("{} RC operations, each verified", r.operations))
        },
    },
    Step {
        name: "query the DPA capabilities",
        hint: "no DPA on this function: a BlueField-3 (or ConnectX-8) with the DPA enabled, \
               on the function that owns it",
        run: |b| {
            let c = DpaCaps::query(b.ctx)?;
            Ok(format!(
                "{} cores x {} EUs, {} processes",
                c.topology.cores, c.topology.eus_per_core, c.max_processes
            ))
        },
    },
    Step {
        name: "load a DPA process",
        hint: "DPA_PROCESS creation refused: the DPA object layouts are provisional (see \
               `mlx5-dpa prm layouts --json dpa_process`); a device with application \
               authentication enabled also refuses unsigned images",
        run: |b| {
            let p = Process::create(
                b.ctx,
                crate::demo::flexio_rpc::RPC_CALC_ELF,
                &ProcessAttr::default(),
            )?;
            let d = format!("process {:#x} from rpc_calc.elf", p.id());
            b.process = Some(p);
            Ok(d)
        },
    },
    Step {
        name: "call a function on the DPA (RPC)",
        hint: "the process loaded but the call failed or timed out: thread creation, the \
               event handler's CQ and EQ, or the RPC runtime; the process's coredump (`mlx5-dpa \
               coredump rpc`) says where it stopped",
        run: |b| {
            let Some(p) = &b.process else {
                return Err("no process from the step before".into());
            };
            let (x, y) = (0x1234_5678u64, 0x9abc_def0u64);
            let r = p.call("rpc_calculate", &[x, y])?;
            if r != x + y {
                return Err(format!("rpc_calculate({x:#x}, {y:#x}) returned {r:#x}").into());
            }
            Ok(format!("rpc_calculate({x:#x}, {y:#x}) = {r:#x}"))
        },
    },
];

/// The firmware's status and syndrome of the first command error in `e`'s chain.
fn firmware_refusal(e: &(dyn Error + 'static)) -> Option<(String, u32)> {
    let mut cur = Some(e);
    while let Some(err) = cur {
        if let Some(CmdError::Firmware {
            status, syndrome, ..
        }) = err.downcast_ref::<CmdError>()
        {
            return Some((status.to_string(), *syndrome));
        }
        cur = err.source();
    }
    None
}

/// Runs the checklist on `ctx` (`name` for the output; `model` when it is the device model,
/// whose refusals name their check).
pub fn run(
    ctx: &Arc<dyn Devx>,
    name: &str,
    model: Option<&mlx5_sim::Device>,
    as_json: bool,
) -> ExitCode {
    if let Some(m) = model {
        m.start_engine();
    }
    let mut bench = Bench {
        ctx,
        pd: None,
        uar: None,
        cq: None,
        process: None,
    };
    let mut rows = vec![Row::passed(1, "open the device (DevX)", ctx.describe())];
    let mut out = std::io::stdout().lock();
    if !as_json {
        let _ = writeln!(out, "mlx5-dpa doctor: {name}");
        let _ = writeln!(
            out,
            "{:>2}. {:<50} ok      {}",
            1,
            "open the device (DevX)",
            ctx.describe()
        );
    }
    let mut passed = 1;
    for (i, step) in STEPS.iter().enumerate() {
        let n = i + 2;
        match (step.run)(&mut bench) {
            Ok(detail) => {
                passed += 1;
                if !as_json {
                    let _ = writeln!(out, "{n:>2}. {:<50} ok      {detail}", step.name);
                }
                rows.push(Row::passed(n, step.name, detail));
            }
            Err(e) => {
                let refusal = firmware_refusal(e.as_ref());
                let check = refusal.as_ref().and_then(|(_, syn)| {
                    model.and(mlx5_sim::Check::by_syndrome(*syn).map(|c| c.what))
                });
                if !as_json {
                    let _ = writeln!(out, "{n:>2}. {:<50} FAILED  {e}", step.name);
                    if let Some((status, syndrome)) = &refusal {
                        let _ = writeln!(
                            out,
                            "    firmware: status {status}, syndrome {syndrome:#010x}{}",
                            check
                                .map(|c| format!(" (the model's check: {c})"))
                                .unwrap_or_default()
                        );
                    }
                    let _ = writeln!(out, "    look at: {}", step.hint);
                }
                rows.push(Row {
                    step: n,
                    name: step.name,
                    ok: false,
                    detail: e.to_string(),
                    status: Some(refusal.as_ref().map(|r| r.0.clone())),
                    syndrome: Some(refusal.as_ref().map(|r| r.1)),
                    check: Some(check),
                    hint: Some(step.hint),
                });
                break;
            }
        }
    }
    let total = STEPS.len() + 1;
    if as_json {
        let _ = writeln!(
            out,
            "{}",
            serde_json::to_string(&Report {
                device: name,
                steps: &rows,
                passed,
                total,
            })
            .unwrap_or_default()
        );
    } else if passed == total {
        let _ = writeln!(out, "{passed} of {total} steps passed");
    } else {
        let _ = writeln!(
            out,
            "{passed} of {total} steps passed; stopped at the first failure (the steps after \
             it build on it)"
        );
    }
    let _ = out.flush();
    drop(bench);
    if let Some(m) = model {
        m.stop_engine();
    }
    if passed == total {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
