//! The kernel's flow steering methods for a context (Linux `drivers/infiniband/hw/mlx5/fs.c`):
//! flow matchers (`MLX5_IB_OBJECT_FLOW_MATCHER`) and the flows made in them
//! (`MLX5_IB_METHOD_CREATE_FLOW` on `UVERBS_OBJECT_FLOW`, destroyed with
//! `UVERBS_METHOD_FLOW_DESTROY`): what `mlx5dv_create_flow_matcher` / `mlx5dv_create_flow` and
//! rdma-core's `mlx5dv_dr` rules on a root table send.
//!
//! As the kernel does, the server keeps these rules in flow tables of its own (uid 0) on the
//! NIC RX side: one table (at the matcher's priority) and one flow group (the matcher's mask
//! and criteria) per matcher, one entry per flow, forwarding to a TIR the client made with
//! DevX (or dropping), with an optional flow tag.
//! The model steers a frame through its NIC RX tables in order (docs/model.md), so these rules
//! sit beside the ones clients make with DevX. Served: NIC RX matchers of outer headers;
//! destinations a DevX TIR; a flow tag; a DevX flow counter (the COUNT action); drop rules.
//! Refused with `EOPNOTSUPP`, as a device without them would: other table types, a verbs QP
//! as destination, flow actions, counters at an offset of a bulk, default-miss flows.

use std::sync::{Arc, Mutex};

use mlx5_dpa::devx::kernel::abi::ids::{core_ids::*, mlx5_ids::*};
use mlx5_dpa::mlx5::cmd::{self, CreateFlowTable};
use mlx5_dpa::mlx5::layout::{Layout, ViewMut};
use mlx5_dpa::mlx5::layouts as l;
use mlx5_dpa::mlx5::Opcode;
use mlx5_sim::{Device, ObjRef};
use nix::errno::Errno;

use crate::context::{Flow, FlowMatcher, Obj, Ucontext, FLOW_NIC_RX};
use crate::ioctl::Call;

/// Entries of a matcher's table: log2.
const LOG_TABLE_SIZE: u8 = 10;
/// `match_criteria_enable` bit of the outer headers, the only criteria the model matches.
const OUTER_HEADERS: u8 = 0x1;
/// `MLX5_IB_ATTR_CREATE_FLOW_FLAGS` bits (`enum mlx5_ib_create_flow_flags`).
const FLOW_FLAGS_DEFAULT_MISS: u64 = 1 << 0;
const FLOW_FLAGS_DROP: u64 = 1 << 1;

/// Runs `inbox` as the kernel; the object it made, or the errno the kernel would give. Recorded
/// in the program's capture when it has one.
fn kernel(dev: &Device, inbox: &[u8], out_len: usize) -> Result<(Option<ObjRef>, Vec<u8>), Errno> {
    let mut out = vec![0u8; out_len.max(16)];
    let r = dev.kernel_command(inbox, &mut out);
    crate::config::record_kernel_create(inbox, &out, r.is_ok());
    match r {
        Ok(o) => Ok((o, out)),
        // The kernel's flow code answers a firmware refusal with EINVAL.
        Err(_) => Err(Errno::EINVAL),
    }
}

/// `fte_match_param` bytes of an input attribute (at most its size).
fn match_param(call: &Call, id: u16) -> Result<Vec<u8>, Errno> {
    let b = call.bytes(id)?.ok_or(Errno::EINVAL)?;
    if b.len() > l::fte_match_param::Layout::SIZE_BYTES {
        return Err(Errno::EINVAL);
    }
    Ok(b)
}

/// `MLX5_IB_METHOD_FLOW_MATCHER_CREATE`.
pub(crate) fn matcher_create(ctx: &Ucontext, call: &Call) -> Result<i32, Errno> {
    let ft_type = call
        .value(MLX5_IB_ATTR_FLOW_MATCHER_FT_TYPE)
        .unwrap_or(MLX5_IB_UAPI_FLOW_TABLE_TYPE_NIC_RX);
    if ft_type != MLX5_IB_UAPI_FLOW_TABLE_TYPE_NIC_RX
        || call
            .value(MLX5_IB_ATTR_FLOW_MATCHER_FLOW_FLAGS)
            .unwrap_or(0)
            != 0
    {
        return Err(Errno::EOPNOTSUPP);
    }
    let criteria = u8::try_from(
        call.value(MLX5_IB_ATTR_FLOW_MATCHER_MATCH_CRITERIA)
            .ok_or(Errno::EINVAL)?,
    )
    .map_err(|_| Errno::EINVAL)?;
    if criteria & !OUTER_HEADERS != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    let mask = match_param(call, MLX5_IB_ATTR_FLOW_MATCHER_MATCH_MASK)?;
    // The matcher's priority (the FLOW_TYPE attribute's data for IB_FLOW_ATTR_NORMAL; lower
    // first). The kernel keeps each priority in a flow table of its own in the NIC RX bypass
    // namespace, searched in priority order; here the table's level is the priority, and the
    // model searches root tables by level (`datapath::steering::compute_roots`). So DPDK's
    // specific rules (IPv4 / UDP, to RSS TIRs) win over its catch-all Ethernet rule.
    let priority = call.value(MLX5_IB_ATTR_FLOW_MATCHER_FLOW_TYPE).unwrap_or(0);
    let level = u8::try_from(priority).map_err(|_| Errno::EINVAL)?;
    let dev = ctx.dev.clone();
    let table_in = cmd::encode_inbox(&CreateFlowTable {
        level,
        log_size: LOG_TABLE_SIZE,
    })
    .map_err(|_| Errno::EINVAL)?;
    let (t, _) = kernel(&dev, &table_in, 16)?;
    let Some(ObjRef::FlowTable { id: table, .. }) = t else {
        return Err(Errno::EINVAL);
    };
    let group = match make_group(&dev, table, criteria, &mask) {
        Ok(g) => g,
        Err(e) => {
            let _ = dev.kernel_destroy(ObjRef::FlowTable {
                table_type: FLOW_NIC_RX,
                id: table,
            });
            return Err(e);
        }
    };
    let m = Arc::new(FlowMatcher {
        dev,
        table,
        group,
        used: Mutex::new(vec![false; 1 << LOG_TABLE_SIZE]),
    });
    let h = ctx.insert(Obj::FlowMatcher(m));
    if let Err(e) = call.set_data(MLX5_IB_ATTR_FLOW_MATCHER_CREATE_HANDLE, u64::from(h)) {
        let _ = ctx.remove(u64::from(h), |_| true);
        return Err(e);
    }
    Ok(0)
}

/// CREATE_FLOW_GROUP over the whole table with the matcher's mask and criteria.
fn make_group(dev: &Device, table: u32, criteria: u8, mask: &[u8]) -> Result<u32, Errno> {
    use l::create_flow_group_in as g;
    let mut inb = vec![0u8; g::Layout::SIZE_BYTES];
    let mut v = ViewMut::<g::Layout>::new(&mut inb).map_err(|_| Errno::EINVAL)?;
    v.set(g::opcode, u64::from(Opcode::CREATE_FLOW_GROUP.0));
    v.set(g::table_type, u64::from(FLOW_NIC_RX));
    v.set(g::table_id, u64::from(table));
    v.set(g::start_flow_index, 0);
    v.set(g::end_flow_index, (1 << LOG_TABLE_SIZE) - 1);
    v.set(g::match_criteria_enable, u64::from(criteria));
    let at = (g::match_criteria.offset() / 8) as usize;
    inb[at..at + mask.len()].copy_from_slice(mask);
    match kernel(dev, &inb, l::create_flow_group_out::Layout::SIZE_BYTES)? {
        (Some(ObjRef::FlowGroup { id, .. }), _) => Ok(id),
        _ => Err(Errno::EINVAL),
    }
}

/// `MLX5_IB_METHOD_FLOW_MATCHER_DESTROY`: `EBUSY` while flows use it, as the kernel.
pub(crate) fn matcher_destroy(ctx: &Ucontext, call: &Call) -> Result<i32, Errno> {
    let h = call
        .handle(MLX5_IB_ATTR_FLOW_MATCHER_DESTROY_HANDLE)
        .ok_or(Errno::EINVAL)?;
    ctx.remove(h, |o| matches!(o, Obj::FlowMatcher(_)))?;
    Ok(0)
}

/// `MLX5_IB_METHOD_CREATE_FLOW`.
pub(crate) fn flow_create(ctx: &Ucontext, call: &Call) -> Result<i32, Errno> {
    for unsupported in [
        MLX5_IB_ATTR_CREATE_FLOW_DEST_QP,
        MLX5_IB_ATTR_CREATE_FLOW_ARR_FLOW_ACTIONS,
    ] {
        if call.has(unsupported) {
            return Err(Errno::EOPNOTSUPP);
        }
    }
    // Flags: DROP (a rule that drops what it matches, no destination); DEFAULT_MISS (back to
    // the kernel's own steering) is not served.
    let drop = match call.value(MLX5_IB_ATTR_CREATE_FLOW_FLAGS).unwrap_or(0) {
        0 => false,
        FLOW_FLAGS_DROP => true,
        f if f & !(FLOW_FLAGS_DROP | FLOW_FLAGS_DEFAULT_MISS) != 0 => return Err(Errno::EINVAL),
        _ => return Err(Errno::EOPNOTSUPP),
    };
    // An offset into a bulk of counters: the model allocates counters one by one.
    if let Some(off) = call.bytes(MLX5_IB_ATTR_CREATE_FLOW_ARR_COUNTERS_DEVX_OFFSET)? {
        if off.iter().any(|&b| b != 0) {
            return Err(Errno::EOPNOTSUPP);
        }
    }
    let m = call
        .handle(MLX5_IB_ATTR_CREATE_FLOW_MATCHER)
        .and_then(|h| ctx.get(h))
        .and_then(|o| match o {
            Obj::FlowMatcher(m) => Some(m),
            _ => None,
        })
        .ok_or(Errno::EINVAL)?;
    let value = match_param(call, MLX5_IB_ATTR_CREATE_FLOW_MATCH_VALUE)?;
    let sim = ctx.lock().sim.clone().ok_or(Errno::EINVAL)?;
    // A drop rule has no destination; any other names a DevX TIR.
    let (dest, tirn) = match (drop, call.handle(MLX5_IB_ATTR_CREATE_FLOW_DEST_DEVX)) {
        (true, None) => (None, None),
        (true, Some(_)) | (false, None) => return Err(Errno::EINVAL),
        (false, Some(h)) => {
            let dest = ctx.get(h).ok_or(Errno::EINVAL)?;
            let Obj::Devx(raw) = &dest else {
                return Err(Errno::EINVAL);
            };
            let Some(ObjRef::Tir(tirn)) = sim.object(raw.handle) else {
                // Other destinations (a flow table) are not served yet.
                return Err(Errno::EOPNOTSUPP);
            };
            (Some(dest), Some(tirn))
        }
    };
    // The COUNT action: exactly one DevX flow counter (`mlx5_ib_devx_is_flow_counter`).
    let counter = match call.bytes(MLX5_IB_ATTR_CREATE_FLOW_ARR_COUNTERS_DEVX)? {
        None => None,
        Some(b) if b.len() == 4 => {
            let h = u32::from_ne_bytes([b[0], b[1], b[2], b[3]]);
            let obj = ctx.get(u64::from(h)).ok_or(Errno::EINVAL)?;
            let id = match &obj {
                Obj::Devx(c) => match sim.object(c.handle) {
                    Some(ObjRef::FlowCounter(id)) => id,
                    _ => return Err(Errno::EINVAL),
                },
                _ => return Err(Errno::EINVAL),
            };
            Some((obj, id))
        }
        Some(_) => return Err(Errno::EINVAL),
    };
    let tag = match call.value(MLX5_IB_ATTR_CREATE_FLOW_TAG) {
        Some(t) if t >= 1 << 24 => return Err(Errno::EINVAL),
        Some(t) => t,
        None => 0,
    };
    let index = {
        let mut used = m
            .used
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let i = used.iter().position(|u| !u).ok_or(Errno::ENOSPC)?;
        used[i] = true;
        i as u32
    };
    let flow = Flow {
        matcher: Arc::clone(&m),
        index,
        _dest: dest,
        _counter: counter.as_ref().map(|c| c.0.clone()),
    };
    // On failure the flow goes, and with it its index.
    set_fte(&m, index, &value, tirn, tag, counter.map(|c| c.1))?;
    let h = ctx.insert(Obj::Flow(Arc::new(flow)));
    if let Err(e) = call.set_data(MLX5_IB_ATTR_CREATE_FLOW_HANDLE, u64::from(h)) {
        let _ = ctx.remove(u64::from(h), |_| true);
        return Err(e);
    }
    Ok(0)
}

/// SET_FLOW_TABLE_ENTRY: `value` forwarded to TIR `tirn` (dropped without one), with `tag`,
/// counted to `counter` (the COUNT action, its counter listed after the destination, as
/// `mlx5_cmd_set_fte` lists counters).
fn set_fte(
    m: &FlowMatcher,
    index: u32,
    value: &[u8],
    tirn: Option<u32>,
    tag: u64,
    counter: Option<u32>,
) -> Result<(), Errno> {
    use l::flow_context as fc;
    use l::set_fte_in as s;
    let dest_len = l::dest_format_struct::Layout::SIZE_BYTES * usize::from(tirn.is_some());
    let list_len = l::flow_counter_list::Layout::SIZE_BYTES * usize::from(counter.is_some());
    let mut inb = vec![0u8; s::Layout::SIZE_BYTES + dest_len + list_len];
    let mut v = ViewMut::<s::Layout>::new(&mut inb).map_err(|_| Errno::EINVAL)?;
    v.set(s::opcode, u64::from(Opcode::SET_FLOW_TABLE_ENTRY.0));
    v.set(s::table_type, u64::from(FLOW_NIC_RX));
    v.set(s::table_id, u64::from(m.table));
    v.set(s::flow_index, u64::from(index));
    let c = s::flow_context;
    v.set(c.at(fc::group_id), u64::from(m.group));
    v.set(c.at(fc::flow_tag), tag);
    let forward = if tirn.is_some() {
        cmd::FLOW_ACTION_FWD_DEST
    } else {
        cmd::FLOW_ACTION_DROP
    };
    v.set(
        c.at(fc::action),
        forward
            | if counter.is_some() {
                cmd::FLOW_ACTION_COUNT
            } else {
                0
            },
    );
    v.set(c.at(fc::destination_list_size), u64::from(tirn.is_some()));
    v.set(
        c.at(fc::flow_counter_list_size),
        u64::from(counter.is_some()),
    );
    let at = ((s::flow_context.offset() + fc::match_value.offset()) / 8) as usize;
    inb[at..at + value.len()].copy_from_slice(value);
    let d = s::Layout::SIZE_BYTES;
    if let Some(tirn) = tirn {
        let mut dv = ViewMut::<l::dest_format_struct::Layout>::new(&mut inb[d..])
            .map_err(|_| Errno::EINVAL)?;
        dv.set(l::dest_format_struct::destination_type, cmd::FLOW_DEST_TIR);
        dv.set(l::dest_format_struct::destination_id, u64::from(tirn));
    }
    if let Some(id) = counter {
        let mut cv = ViewMut::<l::flow_counter_list::Layout>::new(&mut inb[d + dest_len..])
            .map_err(|_| Errno::EINVAL)?;
        cv.set(l::flow_counter_list::flow_counter_id, u64::from(id));
    }
    kernel(&m.dev, &inb, 16).map(drop)
}

/// `UVERBS_METHOD_FLOW_DESTROY`.
pub(crate) fn flow_destroy(ctx: &Ucontext, call: &Call) -> Result<i32, Errno> {
    let h = call
        .handle(UVERBS_ATTR_DESTROY_FLOW_HANDLE)
        .ok_or(Errno::EINVAL)?;
    ctx.remove(h, |o| matches!(o, Obj::Flow(_)))?;
    Ok(0)
}
