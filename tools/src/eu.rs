//! `mlx5-dpa eu`: the DPA's execution-unit partitions and groups, as NVIDIA's `dpaeumgmt`
//! manages them (seed: "Execution Unit Partitions"), through the EU registers
//! (`NIC_DPA_EU_PARTITION_REG`, `NIC_DPA_EUG_REG`; provisional layouts, all in
//! `src/mlx5/layouts/dpa.rs`, handled by `mlx5_dpa::dpa::eu`).
//!
//! ```text
//! mlx5-dpa eu show
//! mlx5-dpa eu partition create --eus 16-31 --vhca 3 --max-groups 4     # prints its id
//! mlx5-dpa eu group create rx --eus 16-19 --partition 1
//! mlx5-dpa eu group destroy 1 && mlx5-dpa eu partition destroy 1
//! mlx5-dpa --sim eu batch ops.txt       # several operations in one run (one per line)
//! ```
//!
//! The handles are kept (`keep`): what `create` makes is not destroyed by the tool, only by
//! `destroy`. How long the device keeps it is the device's rule: the model (provisionally)
//! releases what a DevX context made when the context closes, and lives one run of the tool
//! anyway, so on it a sequence of operations goes through `eu batch` (a file, or `-` for
//! standard input, of `eu` operations, one per line; `#` starts a comment). Partitions are
//! written by the partition manager (the physical function) only.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use clap::{Parser, Subcommand};
use mlx5_dpa::devx::Devx;
use mlx5_dpa::dpa::caps::DpaCaps;
use mlx5_dpa::dpa::eu::{self, EuGroup, EuPartition, GroupInfo, PartitionInfo};
use mlx5_dpa::dpa::DpaError;

/// `eu` subcommands.
#[derive(Subcommand, Debug)]
pub enum EuCmd {
    /// The DPA's EUs, and the partitions and groups on the device (ids read back up to
    /// --max-id).
    Show {
        #[arg(long, default_value_t = 64, value_parser = crate::input::num::<u16>)]
        max_id: u16,
        /// One JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// EU partitions: EUs given to functions.
    Partition {
        #[command(subcommand)]
        what: PartitionCmd,
    },
    /// EU groups: named sets of EUs threads may be bound to.
    Group {
        #[command(subcommand)]
        what: GroupCmd,
    },
    /// Several operations in one run, one per line (FILE, or - for standard input).
    Batch { file: PathBuf },
}

/// `eu partition` subcommands.
#[derive(Subcommand, Debug)]
pub enum PartitionCmd {
    /// Create a partition; prints its id.
    Create {
        /// EUs: numbers and ranges, e.g. 0-15,20.
        #[arg(long, value_name = "LIST")]
        eus: String,
        /// The functions (vHCA ids) it is given to, e.g. 2,3.
        #[arg(long, value_name = "LIST", value_delimiter = ',', required = true, value_parser = crate::input::num::<u16>)]
        vhca: Vec<u16>,
        /// Most groups that may be made in it (0: no limit).
        #[arg(long, default_value_t = 0, value_parser = crate::input::num::<u16>)]
        max_groups: u16,
    },
    /// Destroy a partition.
    Destroy {
        #[arg(value_parser = crate::input::num::<u16>)]
        id: u16,
    },
    /// Read a partition back.
    Show {
        #[arg(value_parser = crate::input::num::<u16>)]
        id: u16,
    },
}

/// `eu group` subcommands.
#[derive(Subcommand, Debug)]
pub enum GroupCmd {
    /// Create a group; prints its id.
    Create {
        /// At most 16 bytes.
        name: String,
        /// EUs: numbers and ranges, e.g. 0-3,8.
        #[arg(long, value_name = "LIST")]
        eus: String,
        /// Make it in this partition.
        #[arg(long, value_parser = crate::input::num::<u16>)]
        partition: Option<u16>,
    },
    /// Destroy a group.
    Destroy {
        #[arg(value_parser = crate::input::num::<u16>)]
        id: u16,
    },
    /// Read a group back.
    Show {
        #[arg(value_parser = crate::input::num::<u16>)]
        id: u16,
    },
}

/// One line of `eu batch`.
#[derive(Parser, Debug)]
#[command(name = "eu", no_binary_name = true)]
struct BatchLine {
    #[command(subcommand)]
    cmd: EuCmd,
}

/// Why an `eu` command failed.
#[derive(Debug, thiserror::Error)]
pub enum EuCmdError {
    #[error("EU list {0:?}: numbers and ranges like 0-15,20")]
    BadList(String),
    #[error(transparent)]
    Dpa(#[from] DpaError),
    #[error("{file} line {line}: {reason}")]
    Batch {
        file: String,
        line: usize,
        reason: String,
    },
    #[error(transparent)]
    Read(#[from] crate::input::InputError),
}

/// Parses `0-15,20,22-23`.
fn parse_list(s: &str) -> Result<Vec<u32>, EuCmdError> {
    let bad = || EuCmdError::BadList(s.to_string());
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (u32, u32) = (
                    a.trim().parse().map_err(|_| bad())?,
                    b.trim().parse().map_err(|_| bad())?,
                );
                if a > b || b - a > 4096 {
                    return Err(bad());
                }
                out.extend(a..=b);
            }
            None => out.push(part.parse().map_err(|_| bad())?),
        }
    }
    if out.is_empty() {
        return Err(bad());
    }
    Ok(out)
}

/// `0-3,8` for a sorted list.
fn show_list(v: &[u32]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            v[i].to_string()
        } else {
            format!("{}-{}", v[i], v[j])
        });
        i = j + 1;
    }
    if parts.is_empty() {
        "none".into()
    } else {
        parts.join(",")
    }
}

fn partition_line(p: &PartitionInfo) -> String {
    let vhcas: Vec<String> = p.vhca_ids.iter().map(u16::to_string).collect();
    // max_num_eug 0 sets no limit (the model's reading, docs/model-dpa.md "EU partitions and groups").
    let groups = match p.max_groups {
        0 => "groups without limit".to_string(),
        n => format!("at most {n} groups"),
    };
    format!(
        "partition {}: EUs {} ({}), functions {}, {groups}",
        p.id,
        show_list(&p.members),
        p.members.len(),
        vhcas.join(","),
    )
}

fn group_line(g: &GroupInfo) -> String {
    format!(
        "group {} {:?}: EUs {} ({}){}",
        g.id,
        g.name,
        show_list(&g.members),
        g.members.len(),
        g.partition
            .map(|p| format!(", in partition {p}"))
            .unwrap_or_default()
    )
}

/// Runs an `eu` subcommand on `dev`.
pub fn run(cmd: &EuCmd, dev: &Arc<dyn Devx>) -> Result<(), EuCmdError> {
    let mut out = std::io::stdout().lock();
    match cmd {
        EuCmd::Show { max_id, json } => {
            let caps = DpaCaps::query(dev)?;
            let t = caps.topology;
            let parts: Vec<PartitionInfo> = (1..=*max_id)
                .filter_map(|id| eu::read_partition(dev.as_ref(), id).ok())
                .collect();
            let groups: Vec<GroupInfo> = (1..=*max_id)
                .filter_map(|id| eu::read_group(dev.as_ref(), id).ok())
                .collect();
            if *json {
                /// `eu show --json`'s object.
                #[derive(serde::Serialize)]
                struct Show<'a> {
                    cores: u32,
                    eus_per_core: u32,
                    eus: u32,
                    reserved_eus: u32,
                    partitions: &'a [PartitionInfo],
                    groups: &'a [GroupInfo],
                }
                let show = Show {
                    cores: t.cores,
                    eus_per_core: t.eus_per_core,
                    eus: t.total_eus(),
                    reserved_eus: t.reserved_eus,
                    partitions: &parts,
                    groups: &groups,
                };
                let _ = writeln!(out, "{}", serde_json::to_string(&show).unwrap_or_default());
            } else {
                let _ = writeln!(
                    out,
                    "DPA: {} cores x {} EUs = {} EUs ({} kept by the DPA OS)",
                    t.cores,
                    t.eus_per_core,
                    t.total_eus(),
                    t.reserved_eus
                );
                for p in &parts {
                    let _ = writeln!(out, "{}", partition_line(p));
                }
                for g in &groups {
                    let _ = writeln!(out, "{}", group_line(g));
                }
                if parts.is_empty() && groups.is_empty() {
                    let _ = writeln!(out, "no partitions or groups (ids 1..={max_id})");
                }
            }
        }
        EuCmd::Partition { what } => match what {
            PartitionCmd::Create {
                eus,
                vhca,
                max_groups,
            } => {
                let p = EuPartition::create(dev, &parse_list(eus)?, *max_groups, vhca)?;
                let id = p.keep();
                let info = eu::read_partition(dev.as_ref(), id)?;
                let _ = writeln!(out, "created {}", partition_line(&info));
            }
            PartitionCmd::Destroy { id } => {
                eu::destroy_partition(dev.as_ref(), *id)?;
                let _ = writeln!(out, "destroyed partition {id}");
            }
            PartitionCmd::Show { id } => {
                let _ = writeln!(
                    out,
                    "{}",
                    partition_line(&eu::read_partition(dev.as_ref(), *id)?)
                );
            }
        },
        EuCmd::Group { what } => match what {
            GroupCmd::Create {
                name,
                eus,
                partition,
            } => {
                let members = parse_list(eus)?;
                let id = match partition {
                    None => EuGroup::create(dev, name, &members)?.keep(),
                    Some(pid) => {
                        // A group in a partition that exists on the device already: the group
                        // names it; nothing of the partition is destroyed here.
                        let info = eu::read_partition(dev.as_ref(), *pid)?;
                        EuGroup::create_in_id(dev, name, &members, info.id)?.keep()
                    }
                };
                let _ = writeln!(
                    out,
                    "created {}",
                    group_line(&eu::read_group(dev.as_ref(), id)?)
                );
            }
            GroupCmd::Destroy { id } => {
                eu::destroy_group(dev.as_ref(), *id)?;
                let _ = writeln!(out, "destroyed group {id}");
            }
            GroupCmd::Show { id } => {
                let _ = writeln!(out, "{}", group_line(&eu::read_group(dev.as_ref(), *id)?));
            }
        },
        EuCmd::Batch { file } => {
            drop(out);
            let shown = file.display().to_string();
            // Bounded: `eu batch /dev/zero` is refused, an endless pipe stops at the limit.
            let text = crate::input::read_text(file, crate::input::MAX_BATCH_FILE)?;
            for (i, raw) in text.lines().enumerate() {
                let line = raw.split('#').next().unwrap_or("").trim();
                if line.is_empty() {
                    continue;
                }
                let fail = |reason: String| EuCmdError::Batch {
                    file: shown.clone(),
                    line: i + 1,
                    reason,
                };
                let parsed = BatchLine::try_parse_from(line.split_whitespace())
                    .map_err(|e| fail(e.to_string().lines().next().unwrap_or("").to_string()))?;
                if matches!(parsed.cmd, EuCmd::Batch { .. }) {
                    return Err(fail("a batch runs no batch".into()));
                }
                run(&parsed.cmd, dev).map_err(|e| fail(e.to_string()))?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eu_lists_parse_and_print_as_ranges() {
        assert_eq!(parse_list("0-3,8, 10-11").unwrap(), [0, 1, 2, 3, 8, 10, 11]);
        assert_eq!(show_list(&[0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
        for bad in ["", "3-1", "a", "1-", "0-100000"] {
            assert!(parse_list(bad).is_err(), "{bad:?}");
        }
    }
}
