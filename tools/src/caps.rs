//! `mlx5-dpa caps`: the device's capabilities, decoded.

use super::*;

/// A capability's value, as shown.
pub(crate) enum Cap {
    /// A plain number.
    Num(u64),
    /// A log2 field: shown with the number it stands for.
    Log(u8),
    /// A bit.
    Flag(bool),
}

impl Cap {
    fn text(&self) -> String {
        match *self {
            Cap::Num(v) => v.to_string(),
            Cap::Log(l) => match 1u64.checked_shl(u32::from(l)) {
                Some(n) => format!("{l} (2^{l} = {n})"),
                None => format!("{l} (2^{l})"),
            },
            Cap::Flag(b) => if b { "yes" } else { "no" }.to_string(),
        }
    }
}

/// In `--json` a capability is its raw value: the number, the log2 field, or the bit.
impl serde::Serialize for Cap {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match *self {
            Cap::Num(v) => s.serialize_u64(v),
            Cap::Log(l) => s.serialize_u8(l),
            Cap::Flag(b) => s.serialize_bool(b),
        }
    }
}

/// Capability rows as one JSON object, by name.
fn obj<'a>(rows: &'a [(&'static str, Cap)]) -> json::Object<&'static str, &'a Cap> {
    json::Object(rows.iter().map(|(n, v)| (*n, v)).collect())
}

/// `caps --json`.
#[derive(serde::Serialize)]
struct CapsJson<'a> {
    device: String,
    general: json::Object<&'static str, &'a Cap>,
    general_obj_types: String,
    general_obj_types_127_64: String,
    obj_types: Vec<String>,
    dpa: Option<DpaJson<'a>>,
    model: Option<ModelJson>,
}

/// The DPA capabilities by name, then what they add up to.
#[derive(serde::Serialize)]
struct DpaJson<'a> {
    #[serde(flatten)]
    caps: json::Object<&'static str, &'a Cap>,
    process_mem_bytes: u64,
    usable: bool,
}

/// The model's profile, when the device is the model.
#[derive(serde::Serialize)]
struct ModelJson {
    profile: &'static str,
    dpa_cores: u32,
    dpa_eus_per_core: u32,
    comp_vectors: u32,
    mac: String,
}

/// The general capabilities this driver reads, by their mlx5_ifc names.
pub(crate) fn general_caps(g: &mlx5_dpa::mlx5::caps::GeneralCaps) -> Vec<(&'static str, Cap)> {
    use Cap::*;
    vec![
        ("apu", Flag(g.apu)),
        ("log_max_cq", Log(g.log_max_cq)),
        ("log_max_cq_sz", Log(g.log_max_cq_sz)),
        ("log_max_eq", Log(g.log_max_eq)),
        ("log_max_eq_sz", Log(g.log_max_eq_sz)),
        ("log_max_sq", Log(g.log_max_sq)),
        ("log_max_rq", Log(g.log_max_rq)),
        ("log_max_qp", Log(g.log_max_qp)),
        ("log_max_qp_sz", Log(g.log_max_qp_sz)),
        ("log_max_wq_sz", Log(g.log_max_wq_sz)),
        ("log_max_pd", Log(g.log_max_pd)),
        ("log_max_mkey", Log(g.log_max_mkey)),
        ("log_max_tis", Log(g.log_max_tis)),
        ("log_max_tir", Log(g.log_max_tir)),
        ("log_max_rmp", Log(g.log_max_rmp)),
        ("log_max_rqt", Log(g.log_max_rqt)),
        ("log_max_transport_domain", Log(g.log_max_transport_domain)),
        ("log_max_msg", Log(g.log_max_msg)),
        ("uar_sz", Num(u64::from(g.uar_sz))),
        ("log_bf_reg_size", Log(g.log_bf_reg_size)),
        ("bf", Flag(g.bf)),
        ("cqe_version", Num(u64::from(g.cqe_version))),
        ("port_type", Num(u64::from(g.port_type))),
        ("num_ports", Num(u64::from(g.num_ports))),
        ("vhca_id", Num(u64::from(g.vhca_id))),
    ]
}

/// The DPA page's capabilities, by their names.
pub(crate) fn dpa_caps(d: &mlx5_dpa::mlx5::caps::DpaCaps) -> Vec<(&'static str, Cap)> {
    use Cap::*;
    vec![
        ("max_dpa_processes", Num(u64::from(d.max_dpa_processes))),
        ("log_max_dpa_process", Log(d.log_max_dpa_process)),
        ("log_max_dpa_thread", Log(d.log_max_dpa_thread)),
        (
            "log_max_dpa_threads_per_process",
            Log(d.log_max_dpa_threads_per_process),
        ),
        ("log_max_dpa_outbox", Log(d.log_max_dpa_outbox)),
        ("log_max_dpa_window", Log(d.log_max_dpa_window)),
        ("log_max_dpa_mem", Log(d.log_max_dpa_mem)),
        ("dpa_mem_block_size", Num(u64::from(d.dpa_mem_block_size))),
        (
            "log_max_num_dpa_mem_blocks",
            Log(d.log_max_num_dpa_mem_blocks),
        ),
        (
            "max_num_dpa_thread_per_group",
            Num(u64::from(d.max_num_dpa_thread_per_group)),
        ),
        (
            "thread_affinity_single_hart",
            Flag(d.thread_affinity_single_hart),
        ),
        (
            "thread_affinity_hart_group",
            Flag(d.thread_affinity_hart_group),
        ),
        ("dpa_coredump_type", Num(u64::from(d.dpa_coredump_type))),
        (
            "dpa_platform_version",
            Num(u64::from(d.dpa_platform_version)),
        ),
        ("dpa_os_api_version", Num(u64::from(d.dpa_os_api_version))),
    ]
}

/// General object types this driver knows by name (`MLX5_OBJ_TYPE_*`, mlx5_ifc.h).
pub(crate) const OBJ_TYPE_NAMES: &[(u16, &str)] = {
    use mlx5_dpa::mlx5::layouts::dpa::obj_type as t;
    &[
        (t::DPA_MEM, "DPA_MEM"),
        (t::DPA_PROCESS, "DPA_PROCESS"),
        (t::DPA_THREAD, "DPA_THREAD"),
        (t::RESERVED_QPN, "RESERVED_QPN"),
        (t::DPA_OUTBOX, "DPA_OUTBOX"),
        (t::DB_CQ_MAPPING, "DB_CQ_MAPPING"),
        (t::DPA_EQ, "DPA_EQ"),
        (t::DPA_WINDOW, "DPA_WINDOW"),
        (t::EMULATED_DEV_EQ, "EMULATED_DEV_EQ"),
        (t::DPA_UAR, "DPA_UAR"),
    ]
};

/// The object types set in the two masks (bit N of `general_obj_types` = type N, bit N of
/// `general_obj_types_127_64` = type 64 + N): names where known, else `type 0xNN`.
pub(crate) fn obj_types(low: u64, high: u64) -> Vec<String> {
    (0u16..128)
        .filter(|&t| {
            let (word, bit) = if t < 64 { (low, t) } else { (high, t - 64) };
            word >> bit & 1 == 1
        })
        .map(|t| {
            OBJ_TYPE_NAMES
                .iter()
                .find(|(n, _)| *n == t)
                .map_or(format!("type {t:#04x}"), |(_, name)| (*name).to_string())
        })
        .collect()
}

pub(crate) fn caps(cli: &Cli, as_json: bool) -> Result<(), ToolError> {
    let opened = open_device(cli)?;
    let dev = &opened.devx;
    let c = devx::query_caps(dev.as_ref())?;
    let types = obj_types(c.general.general_obj_types, c.general_obj_types_127_64);
    let general = general_caps(&c.general);
    let dpa = c.dpa.as_ref().map(dpa_caps);
    let model = opened.model.as_ref().map(|m| {
        m.with_profile_mut(|p| {
            (
                p.name,
                p.dpa_cores,
                p.dpa_eus_per_core,
                p.comp_vectors,
                p.mac,
            )
        })
    });
    let mac = |m: [u8; 6]| {
        m.iter()
            .map(|b| format!("{b:02x}"))
            .collect::<Vec<_>>()
            .join(":")
    };
    if as_json {
        let doc = CapsJson {
            device: dev.describe(),
            general: obj(&general),
            general_obj_types: format!("{:#018x}", c.general.general_obj_types),
            general_obj_types_127_64: format!("{:#018x}", c.general_obj_types_127_64),
            obj_types: types,
            dpa: match (&c.dpa, &dpa) {
                (Some(d), Some(rows)) => Some(DpaJson {
                    caps: obj(rows),
                    process_mem_bytes: d.process_mem_bytes(),
                    usable: c.has_dpa(),
                }),
                _ => None,
            },
            model: model.map(|(name, cores, eus, vectors, m)| ModelJson {
                profile: name,
                dpa_cores: cores,
                dpa_eus_per_core: eus,
                comp_vectors: vectors,
                mac: mac(m),
            }),
        };
        println!("{}", json::line(&doc));
        return Ok(());
    }
    println!("device: {}", dev.describe());
    println!("general capabilities (cmd_hca_cap):");
    for (n, v) in &general {
        println!("  {n:<34} {}", v.text());
    }
    println!(
        "  {:<34} {:#018x} {:#018x} (127..64, 63..0)",
        "general_obj_types", c.general_obj_types_127_64, c.general.general_obj_types
    );
    println!("  {:<34} {}", "object types", types.join(", "));
    match (&c.dpa, &dpa) {
        (Some(d), Some(rows)) => {
            println!("DPA capabilities (dpa_cap):");
            for (n, v) in rows {
                println!("  {n:<34} {}", v.text());
            }
            println!("  {:<34} {} bytes", "process memory", d.process_mem_bytes());
            println!(
                "DPA usable (apu, DPA page, process/thread/memory object types): {}",
                if c.has_dpa() { "yes" } else { "no" }
            );
        }
        _ => println!("DPA: not present"),
    }
    if let Some((name, cores, eus, vectors, m)) = model {
        // What the capability pages do not carry: the model's topology.
        println!("model profile: {name}");
        if cores > 0 {
            println!(
                "model DPA: {cores} cores x {eus} execution units = {} harts",
                cores * eus
            );
        }
        println!("model completion vectors: {vectors}");
        println!("model MAC: {}", mac(m));
    }
    Ok(())
}
