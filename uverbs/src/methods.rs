//! The ioctl methods the server serves, each with its attribute specification (checked by
//! [`Call::check`] before it runs) and what it does. Methods and attributes are those of Linux
//! `drivers/infiniband/core/uverbs_std_types_device.c` (core) and
//! `drivers/infiniband/hw/mlx5/{devx,main,std_types}.c` (mlx5); a method not in [`METHODS`] is
//! `EPROTONOSUPPORT`, which tells libibverbs to fall back to the write command where one exists.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use mlx5_dpa::devx::kernel::abi::ids::{core_ids::*, mlx5_ids::*};
use mlx5_dpa::devx::kernel::abi::mlx5 as m;
use mlx5_dpa::devx::{Devx, UarKind, UmemAccess};
use nix::errno::Errno;
use zerocopy::IntoBytes;

use crate::config::trace;
use crate::context::{errno_of, DevxChannel, DevxRaw, Obj, Ucontext, UserUmem};
use crate::device::{self, PortInfo};
use crate::event::EventFile;
use crate::fds;
use crate::ioctl::{input_range, may, must, output, Call, Kind, Spec, UHW, UHW_OUT};

type Run = fn(&Ucontext, &Call) -> Result<i32, Errno>;

struct Method {
    object: u16,
    method: u16,
    spec: &'static [Spec],
    run: Run,
}

const fn exact(n: u16) -> Kind {
    Kind::Out { min: n, max: n }
}

/// A constant input: 1 to 8 bytes, inline.
const CONST: Kind = input_range(1, 8);
/// A DevX mailbox: at least its 16-byte header.
const MAILBOX_IN: Kind = input_range(16, u16::MAX);
const MAILBOX_OUT: Kind = output(16);

static METHODS: &[Method] = &[
    Method {
        object: UVERBS_OBJECT_DEVICE,
        method: UVERBS_METHOD_INVOKE_WRITE,
        spec: &[
            must(UVERBS_ATTR_CORE_IN, input_range(4, u16::MAX)),
            may(UVERBS_ATTR_CORE_OUT, output(0)),
            must(UVERBS_ATTR_WRITE_CMD, CONST),
            may(UVERBS_ATTR_UHW_IN, UHW),
            may(UVERBS_ATTR_UHW_OUT, UHW_OUT),
        ],
        run: crate::write::invoke,
    },
    Method {
        object: UVERBS_OBJECT_DEVICE,
        method: UVERBS_METHOD_GET_CONTEXT,
        spec: &[
            may(UVERBS_ATTR_GET_CONTEXT_NUM_COMP_VECTORS, output(4)),
            may(UVERBS_ATTR_GET_CONTEXT_CORE_SUPPORT, output(8)),
            may(UVERBS_ATTR_UHW_IN, UHW),
            may(UVERBS_ATTR_UHW_OUT, UHW_OUT),
        ],
        run: get_context,
    },
    Method {
        object: UVERBS_OBJECT_DEVICE,
        method: UVERBS_METHOD_QUERY_PORT,
        spec: &[
            must(UVERBS_ATTR_QUERY_PORT_PORT_NUM, CONST),
            must(UVERBS_ATTR_QUERY_PORT_RESP, exact(48)),
        ],
        run: query_port,
    },
    Method {
        object: UVERBS_OBJECT_DEVICE,
        method: UVERBS_METHOD_QUERY_GID_TABLE,
        spec: &[
            must(UVERBS_ATTR_QUERY_GID_TABLE_ENTRY_SIZE, CONST),
            may(UVERBS_ATTR_QUERY_GID_TABLE_FLAGS, CONST),
            must(UVERBS_ATTR_QUERY_GID_TABLE_RESP_ENTRIES, output(0)),
            must(UVERBS_ATTR_QUERY_GID_TABLE_RESP_NUM_ENTRIES, output(8)),
        ],
        run: query_gid_table,
    },
    Method {
        object: UVERBS_OBJECT_DEVICE,
        method: UVERBS_METHOD_QUERY_GID_ENTRY,
        spec: &[
            must(UVERBS_ATTR_QUERY_GID_ENTRY_PORT, CONST),
            must(UVERBS_ATTR_QUERY_GID_ENTRY_GID_INDEX, CONST),
            may(UVERBS_ATTR_QUERY_GID_ENTRY_FLAGS, CONST),
            must(UVERBS_ATTR_QUERY_GID_ENTRY_RESP_ENTRY, exact(32)),
        ],
        run: query_gid_entry,
    },
    Method {
        object: UVERBS_OBJECT_DEVICE,
        method: MLX5_IB_METHOD_QUERY_PORT,
        spec: &[
            must(MLX5_IB_ATTR_QUERY_PORT_PORT_NUM, CONST),
            must(MLX5_IB_ATTR_QUERY_PORT, exact(40)),
        ],
        run: mlx5_query_port,
    },
    Method {
        object: UVERBS_OBJECT_ASYNC_EVENT,
        method: UVERBS_METHOD_ASYNC_EVENT_ALLOC,
        spec: &[must(UVERBS_ATTR_ASYNC_EVENT_ALLOC_FD_HANDLE, Kind::Fd)],
        run: async_event_alloc,
    },
    Method {
        object: UVERBS_OBJECT_PD,
        method: MLX5_IB_METHOD_PD_QUERY,
        spec: &[
            must(MLX5_IB_ATTR_QUERY_PD_HANDLE, Kind::Obj),
            must(MLX5_IB_ATTR_QUERY_PD_RESP_PDN, exact(4)),
        ],
        run: pd_query,
    },
    Method {
        object: MLX5_IB_OBJECT_DEVX,
        method: MLX5_IB_METHOD_DEVX_OTHER,
        spec: &[
            must(MLX5_IB_ATTR_DEVX_OTHER_CMD_IN, MAILBOX_IN),
            must(MLX5_IB_ATTR_DEVX_OTHER_CMD_OUT, MAILBOX_OUT),
        ],
        run: devx_other,
    },
    Method {
        object: MLX5_IB_OBJECT_DEVX,
        method: MLX5_IB_METHOD_DEVX_QUERY_UAR,
        spec: &[
            must(MLX5_IB_ATTR_DEVX_QUERY_UAR_USER_IDX, CONST),
            must(MLX5_IB_ATTR_DEVX_QUERY_UAR_DEV_IDX, exact(4)),
        ],
        run: devx_query_uar,
    },
    Method {
        object: MLX5_IB_OBJECT_DEVX,
        method: MLX5_IB_METHOD_DEVX_QUERY_EQN,
        spec: &[
            must(MLX5_IB_ATTR_DEVX_QUERY_EQN_USER_VEC, CONST),
            must(MLX5_IB_ATTR_DEVX_QUERY_EQN_DEV_EQN, exact(4)),
        ],
        run: devx_query_eqn,
    },
    Method {
        object: MLX5_IB_OBJECT_DEVX,
        method: MLX5_IB_METHOD_DEVX_SUBSCRIBE_EVENT,
        spec: &[
            must(MLX5_IB_ATTR_DEVX_SUBSCRIBE_EVENT_FD_HANDLE, Kind::Fd),
            may(MLX5_IB_ATTR_DEVX_SUBSCRIBE_EVENT_OBJ_HANDLE, Kind::Obj),
            must(
                MLX5_IB_ATTR_DEVX_SUBSCRIBE_EVENT_TYPE_NUM_LIST,
                input_range(2, u16::MAX),
            ),
            may(MLX5_IB_ATTR_DEVX_SUBSCRIBE_EVENT_FD_NUM, CONST),
            may(MLX5_IB_ATTR_DEVX_SUBSCRIBE_EVENT_COOKIE, CONST),
        ],
        run: devx_subscribe,
    },
    Method {
        object: MLX5_IB_OBJECT_DEVX_OBJ,
        method: MLX5_IB_METHOD_DEVX_OBJ_CREATE,
        spec: &[
            must(MLX5_IB_ATTR_DEVX_OBJ_HANDLE, Kind::Obj),
            must(MLX5_IB_ATTR_DEVX_OBJ_CMD_IN, MAILBOX_IN),
            must(MLX5_IB_ATTR_DEVX_OBJ_CMD_OUT, MAILBOX_OUT),
        ],
        run: devx_obj_create,
    },
    Method {
        object: MLX5_IB_OBJECT_DEVX_OBJ,
        method: MLX5_IB_METHOD_DEVX_OBJ_DESTROY,
        spec: &[must(MLX5_IB_ATTR_DEVX_OBJ_HANDLE, Kind::Obj)],
        run: devx_obj_destroy,
    },
    Method {
        object: MLX5_IB_OBJECT_DEVX_OBJ,
        method: MLX5_IB_METHOD_DEVX_OBJ_MODIFY,
        spec: &[
            must(MLX5_IB_ATTR_DEVX_OBJ_HANDLE, Kind::Obj),
            must(MLX5_IB_ATTR_DEVX_OBJ_CMD_IN, MAILBOX_IN),
            must(MLX5_IB_ATTR_DEVX_OBJ_CMD_OUT, MAILBOX_OUT),
        ],
        run: |c, call| devx_obj_cmd(c, call, false),
    },
    Method {
        object: MLX5_IB_OBJECT_DEVX_OBJ,
        method: MLX5_IB_METHOD_DEVX_OBJ_QUERY,
        spec: &[
            must(MLX5_IB_ATTR_DEVX_OBJ_HANDLE, Kind::Obj),
            must(MLX5_IB_ATTR_DEVX_OBJ_CMD_IN, MAILBOX_IN),
            must(MLX5_IB_ATTR_DEVX_OBJ_CMD_OUT, MAILBOX_OUT),
        ],
        run: |c, call| devx_obj_cmd(c, call, true),
    },
    Method {
        object: MLX5_IB_OBJECT_DEVX_OBJ,
        method: MLX5_IB_METHOD_DEVX_OBJ_ASYNC_QUERY,
        spec: &[
            must(MLX5_IB_ATTR_DEVX_OBJ_HANDLE, Kind::Obj),
            must(MLX5_IB_ATTR_DEVX_OBJ_CMD_IN, MAILBOX_IN),
            must(MLX5_IB_ATTR_DEVX_OBJ_QUERY_ASYNC_FD, Kind::Fd),
            must(MLX5_IB_ATTR_DEVX_OBJ_QUERY_ASYNC_WR_ID, CONST),
            must(MLX5_IB_ATTR_DEVX_OBJ_QUERY_ASYNC_OUT_LEN, CONST),
        ],
        run: devx_obj_async_query,
    },
    Method {
        object: MLX5_IB_OBJECT_DEVX_UMEM,
        method: MLX5_IB_METHOD_DEVX_UMEM_REG,
        spec: &[
            must(MLX5_IB_ATTR_DEVX_UMEM_REG_HANDLE, Kind::Obj),
            must(MLX5_IB_ATTR_DEVX_UMEM_REG_ADDR, CONST),
            must(MLX5_IB_ATTR_DEVX_UMEM_REG_LEN, CONST),
            must(MLX5_IB_ATTR_DEVX_UMEM_REG_ACCESS, CONST),
            must(MLX5_IB_ATTR_DEVX_UMEM_REG_OUT_ID, exact(4)),
            may(MLX5_IB_ATTR_DEVX_UMEM_REG_PGSZ_BITMAP, CONST),
            may(MLX5_IB_ATTR_DEVX_UMEM_REG_DMABUF_FD, Kind::Fd),
        ],
        run: devx_umem_reg,
    },
    Method {
        object: MLX5_IB_OBJECT_DEVX_UMEM,
        method: MLX5_IB_METHOD_DEVX_UMEM_DEREG,
        spec: &[must(MLX5_IB_ATTR_DEVX_UMEM_DEREG_HANDLE, Kind::Obj)],
        run: devx_umem_dereg,
    },
    Method {
        object: MLX5_IB_OBJECT_DEVX_ASYNC_CMD_FD,
        method: MLX5_IB_METHOD_DEVX_ASYNC_CMD_FD_ALLOC,
        spec: &[must(MLX5_IB_ATTR_DEVX_ASYNC_CMD_FD_ALLOC_HANDLE, Kind::Fd)],
        run: devx_cmd_fd_alloc,
    },
    Method {
        object: MLX5_IB_OBJECT_DEVX_ASYNC_EVENT_FD,
        method: MLX5_IB_METHOD_DEVX_ASYNC_EVENT_FD_ALLOC,
        spec: &[
            must(MLX5_IB_ATTR_DEVX_ASYNC_EVENT_FD_ALLOC_HANDLE, Kind::Fd),
            must(MLX5_IB_ATTR_DEVX_ASYNC_EVENT_FD_ALLOC_FLAGS, CONST),
        ],
        run: devx_event_fd_alloc,
    },
    Method {
        object: MLX5_IB_OBJECT_FLOW_MATCHER,
        method: MLX5_IB_METHOD_FLOW_MATCHER_CREATE,
        spec: &[
            must(MLX5_IB_ATTR_FLOW_MATCHER_CREATE_HANDLE, Kind::Obj),
            must(
                MLX5_IB_ATTR_FLOW_MATCHER_MATCH_MASK,
                input_range(1, u16::MAX),
            ),
            // An enum attribute: IBV_FLOW_ATTR_NORMAL (elem_id 0) with the priority inline.
            must(MLX5_IB_ATTR_FLOW_MATCHER_FLOW_TYPE, input_range(0, 8)),
            must(MLX5_IB_ATTR_FLOW_MATCHER_MATCH_CRITERIA, input_range(1, 1)),
            may(MLX5_IB_ATTR_FLOW_MATCHER_FLOW_FLAGS, CONST),
            may(MLX5_IB_ATTR_FLOW_MATCHER_FT_TYPE, CONST),
        ],
        run: crate::flow::matcher_create,
    },
    Method {
        object: MLX5_IB_OBJECT_FLOW_MATCHER,
        method: MLX5_IB_METHOD_FLOW_MATCHER_DESTROY,
        spec: &[must(MLX5_IB_ATTR_FLOW_MATCHER_DESTROY_HANDLE, Kind::Obj)],
        run: crate::flow::matcher_destroy,
    },
    Method {
        object: UVERBS_OBJECT_FLOW,
        method: MLX5_IB_METHOD_CREATE_FLOW,
        spec: &[
            must(MLX5_IB_ATTR_CREATE_FLOW_HANDLE, Kind::Obj),
            must(
                MLX5_IB_ATTR_CREATE_FLOW_MATCH_VALUE,
                input_range(1, u16::MAX),
            ),
            must(MLX5_IB_ATTR_CREATE_FLOW_MATCHER, Kind::Obj),
            may(MLX5_IB_ATTR_CREATE_FLOW_DEST_QP, Kind::Obj),
            may(MLX5_IB_ATTR_CREATE_FLOW_DEST_DEVX, Kind::Obj),
            // Object arrays: read as inputs, refused by the method.
            may(
                MLX5_IB_ATTR_CREATE_FLOW_ARR_FLOW_ACTIONS,
                input_range(0, u16::MAX),
            ),
            may(MLX5_IB_ATTR_CREATE_FLOW_TAG, CONST),
            may(
                MLX5_IB_ATTR_CREATE_FLOW_ARR_COUNTERS_DEVX,
                input_range(0, u16::MAX),
            ),
            may(
                MLX5_IB_ATTR_CREATE_FLOW_ARR_COUNTERS_DEVX_OFFSET,
                input_range(0, u16::MAX),
            ),
            may(MLX5_IB_ATTR_CREATE_FLOW_FLAGS, CONST),
        ],
        run: crate::flow::flow_create,
    },
    Method {
        object: UVERBS_OBJECT_FLOW,
        method: UVERBS_METHOD_FLOW_DESTROY,
        spec: &[must(UVERBS_ATTR_DESTROY_FLOW_HANDLE, Kind::Obj)],
        run: crate::flow::flow_destroy,
    },
    Method {
        object: MLX5_IB_OBJECT_UAR,
        method: MLX5_IB_METHOD_UAR_OBJ_ALLOC,
        spec: &[
            must(MLX5_IB_ATTR_UAR_OBJ_ALLOC_HANDLE, Kind::Obj),
            must(MLX5_IB_ATTR_UAR_OBJ_ALLOC_TYPE, CONST),
            must(MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_OFFSET, exact(8)),
            must(MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_LENGTH, exact(4)),
            must(MLX5_IB_ATTR_UAR_OBJ_ALLOC_PAGE_ID, exact(4)),
        ],
        run: uar_alloc,
    },
    Method {
        object: MLX5_IB_OBJECT_UAR,
        method: MLX5_IB_METHOD_UAR_OBJ_DESTROY,
        spec: &[must(MLX5_IB_ATTR_UAR_OBJ_DESTROY_HANDLE, Kind::Obj)],
        run: uar_destroy,
    },
];

/// Runs the ioctl at the client's address `arg` on context `ctx`.
///
/// # Errors
/// The kernel's errno.
pub(crate) fn dispatch(ctx: &Ucontext, arg: u64) -> Result<i32, Errno> {
    let call = Call::read(arg)?;
    let (o, mth) = (call.hdr.object_id, call.hdr.method_id);
    let Some(m) = METHODS.iter().find(|x| x.object == o && x.method == mth) else {
        trace(format_args!(
            "ioctl object {o:#x} method {mth:#x} not served"
        ));
        return Err(Errno::EPROTONOSUPPORT);
    };
    let r = call.check(m.spec).and_then(|()| {
        let opens = mth == UVERBS_METHOD_GET_CONTEXT && o == UVERBS_OBJECT_DEVICE;
        if !opens && ctx.lock().devx.is_none() {
            return Err(Errno::EINVAL);
        }
        (m.run)(ctx, &call)
    });
    if let Err(e) = r {
        trace(format_args!("ioctl object {o:#x} method {mth:#x}: {e}"));
    }
    r
}

fn value(call: &Call, id: u16) -> Result<u64, Errno> {
    call.value(id).ok_or(Errno::EINVAL)
}

fn u32_value(call: &Call, id: u16) -> Result<u32, Errno> {
    u32::try_from(value(call, id)?).map_err(|_| Errno::EINVAL)
}

/// GET_CONTEXT (`ib_uverbs_handler_UVERBS_METHOD_GET_CONTEXT`, `mlx5_ib_alloc_ucontext`).
fn get_context(ctx: &Ucontext, call: &Call) -> Result<i32, Errno> {
    let uhw = call.bytes(UVERBS_ATTR_UHW_IN)?.unwrap_or_default();
    if uhw.len() < 8 {
        return Err(Errno::EINVAL);
    }
    let mut b = [0u8; 32];
    let n = uhw.len().min(32);
    b[..n].copy_from_slice(&uhw[..n]);
    let req = <m::mlx5_ib_alloc_ucontext_req_v2 as zerocopy::FromBytes>::read_from_bytes(&b)
        .map_err(|_| Errno::EINVAL)?;
    let room = call.out_len(UVERBS_ATTR_UHW_OUT).unwrap_or(0);
    let resp = crate::verbs::alloc_ucontext(ctx, &req, room)?;
    let n = ctx.dev.with_profile_mut(|p| p.comp_vectors);
    call.out(UVERBS_ATTR_GET_CONTEXT_NUM_COMP_VECTORS, &n.to_ne_bytes())?;
    // IB_UVERBS_CORE_SUPPORT_OPTIONAL_MR_ACCESS.
    call.out(UVERBS_ATTR_GET_CONTEXT_CORE_SUPPORT, &1u64.to_ne_bytes())?;
    call.out(UVERBS_ATTR_UHW_OUT, resp.as_bytes())?;
    Ok(0)
}

fn query_port(ctx: &Ucontext, call: &Call) -> Result<i32, Errno> {
    let port =
        u8::try_from(value(call, UVERBS_ATTR_QUERY_PORT_PORT_NUM)?).map_err(|_| Errno::EINVAL)?;
    let p = PortInfo::of(ctx, port)?;
    let ex = mlx5_dpa::devx::kernel::abi::write::ib_uverbs_query_port_resp_ex {
        legacy_resp: p.resp(),
        port_cap_flags2: 0,
        reserved: [0; 4],
    };
    call.out(UVERBS_ATTR_QUERY_PORT_RESP, ex.as_bytes())?;
    Ok(0)
}

fn query_gid_table(ctx: &Ucontext, call: &Call) -> Result<i32, Errno> {
    let entry = value(call, UVERBS_ATTR_QUERY_GID_TABLE_ENTRY_SIZE)? as usize;
    if call.value(UVERBS_ATTR_QUERY_GID_TABLE_FLAGS).unwrap_or(0) != 0 {
        return Err(Errno::EINVAL);
    }
    let room = call
        .out_len(UVERBS_ATTR_QUERY_GID_TABLE_RESP_ENTRIES)
        .unwrap_or(0);
    if entry == 0 || room / entry == 0 {
        return Err(Errno::EINVAL);
    }
    let max = room / entry;
    let mut out = Vec::new();
    let mut n = 0u64;
    for i in 0..device::GID_TABLE_LEN {
        if n as usize == max {
            break;
        }
        if let Some(e) = device::gid_entry(ctx, i) {
            let mut b = e.as_bytes().to_vec();
            b.resize(entry, 0);
            out.extend_from_slice(&b);
            n += 1;
        }
    }
    call.out(UVERBS_ATTR_QUERY_GID_TABLE_RESP_ENTRIES, &out)?;
    call.out(
        UVERBS_ATTR_QUERY_GID_TABLE_RESP_NUM_ENTRIES,
        &n.to_ne_bytes(),
    )?;
    Ok(0)
}

fn query_gid_entry(ctx: &Ucontext, call: &Call) -> Result<i32, Errno> {
    let port = value(call, UVERBS_ATTR_QUERY_GID_ENTRY_PORT)?;
    let idx = u32_value(call, UVERBS_ATTR_QUERY_GID_ENTRY_GID_INDEX)?;
    if call.value(UVERBS_ATTR_QUERY_GID_ENTRY_FLAGS).unwrap_or(0) != 0 || port != 1 {
        return Err(Errno::EINVAL);
    }
    let e = device::gid_entry(ctx, idx).ok_or(Errno::EINVAL)?;
    call.out(UVERBS_ATTR_QUERY_GID_ENTRY_RESP_ENTRY, e.as_bytes())?;
    Ok(0)
}

/// `mlx5dv_query_port` (`MLX5_IB_METHOD_QUERY_PORT`, `fill_vport_vhca_id` ...).
fn mlx5_query_port(ctx: &Ucontext, call: &Call) -> Result<i32, Errno> {
    let port = value(call, MLX5_IB_ATTR_QUERY_PORT_PORT_NUM)?;
    if port != 1 {
        return Err(Errno::EINVAL);
    }
    let vhca = device::Caps::of(ctx)?.get(mlx5_dpa::mlx5::layouts::cmd_hca_cap::vhca_id);
    let q = m::mlx5_ib_uapi_query_port {
        // MLX5_IB_UAPI_QUERY_PORT_VPORT | _VPORT_VHCA_ID | _ESW_OWNER_VHCA_ID
        flags: 1 | 2 | 0x20,
        vport: 0,
        vport_vhca_id: vhca as u16,
        esw_owner_vhca_id: vhca as u16,
        ..Default::default()
    };
    call.out(MLX5_IB_ATTR_QUERY_PORT, q.as_bytes())?;
    Ok(0)
}

fn async_event_alloc(ctx: &Ucontext, call: &Call) -> Result<i32, Errno> {
    let f = crate::verbs::async_file(ctx)?;
    call.set_data(UVERBS_ATTR_ASYNC_EVENT_ALLOC_FD_HANDLE, f.fd() as u64)?;
    Ok(0)
}

fn pd_query(ctx: &Ucontext, call: &Call) -> Result<i32, Errno> {
    let h = call
        .handle(MLX5_IB_ATTR_QUERY_PD_HANDLE)
        .ok_or(Errno::EINVAL)?;
    let Some(Obj::Pd(pd)) = ctx.get(h) else {
        return Err(Errno::ENOENT);
    };
    call.out(MLX5_IB_ATTR_QUERY_PD_RESP_PDN, &pd.pdn.to_ne_bytes())?;
    Ok(0)
}

/// DevX needs a context created with `MLX5_IB_ALLOC_UCTX_DEVX` (`devx_get_uid`).
fn devx_of(ctx: &Ucontext) -> Result<Arc<dyn Devx>, Errno> {
    let s = ctx.lock();
    if !s.devx_enabled {
        return Err(Errno::EINVAL);
    }
    s.devx.clone().ok_or(Errno::EINVAL)
}

/// Runs a mailbox and copies the outbox back: also on a firmware error, which is `EREMOTEIO`
/// with the status and syndrome in the outbox (newer kernels' `devx` answer).
fn mailbox(
    call: &Call,
    in_id: u16,
    out_id: u16,
    f: impl FnOnce(&[u8], &mut [u8]) -> Result<(), mlx5_dpa::devx::DevxError>,
) -> Result<i32, Errno> {
    let inbox = call.bytes(in_id)?.ok_or(Errno::EINVAL)?;
    let mut outbox = vec![0u8; call.out_len(out_id).ok_or(Errno::EINVAL)?];
    let r = f(&inbox, &mut outbox);
    match r {
        Ok(()) => {
            call.out(out_id, &outbox)?;
            Ok(0)
        }
        Err(e) => {
            let errno = errno_of(e);
            if errno == Errno::EREMOTEIO {
                call.out(out_id, &outbox)?;
                trace(format_args!(
                    "DevX command {:#06x} op_mod {:#x}: status {:#x} syndrome {:#010x}",
                    u16::from_be_bytes([inbox[0], inbox[1]]),
                    u16::from_be_bytes([inbox[6], inbox[7]]),
                    outbox[0],
                    u32::from_be_bytes([outbox[4], outbox[5], outbox[6], outbox[7]])
                ));
            }
            Err(errno)
        }
    }
}

fn devx_other(ctx: &Ucontext, call: &Call) -> Result<i32, Errno> {
    let devx = devx_of(ctx)?;
    mailbox(
        call,
        MLX5_IB_ATTR_DEVX_OTHER_CMD_IN,
        MLX5_IB_ATTR_DEVX_OTHER_CMD_OUT,
        |i, o| devx.general_cmd(i, o),
    )
}

fn devx_query_uar(ctx: &Ucontext, call: &Call) -> Result<i32, Errno> {
    devx_of(ctx)?;
    let _ = value(call, MLX5_IB_ATTR_DEVX_QUERY_UAR_USER_IDX)?;
    // `mlx5_ib_devx_query_uar`: a bfreg index of the context's static UARs; this context has
    // none (dynamic UARs only), so every index is out of range.
    Err(Errno::EINVAL)
}

fn devx_query_eqn(ctx: &Ucontext, call: &Call) -> Result<i32, Errno> {
    let devx = devx_of(ctx)?;
    let v = u32_value(call, MLX5_IB_ATTR_DEVX_QUERY_EQN_USER_VEC)?;
    let eqn = devx.query_eqn(v).map_err(errno_of)?;
    call.out(MLX5_IB_ATTR_DEVX_QUERY_EQN_DEV_EQN, &eqn.to_ne_bytes())?;
    Ok(0)
}

/// The model's handle of an object a DevX call names (raw DevX objects, and the firmware
/// objects behind verbs CQs, QPs, SRQs).
fn model_handle(o: &Obj) -> Option<mlx5_dpa::devx::ObjHandle> {
    Some(match o {
        Obj::Devx(d) => d.handle,
        Obj::Cq(c) => c.obj.handle(),
        Obj::Qp(q) => q.obj.handle(),
        Obj::Srq(s) => s.obj.handle(),
        _ => return None,
    })
}

fn devx_subscribe(ctx: &Ucontext, call: &Call) -> Result<i32, Errno> {
    devx_of(ctx)?;
    let fd = call
        .fd(MLX5_IB_ATTR_DEVX_SUBSCRIBE_EVENT_FD_HANDLE)
        .ok_or(Errno::EINVAL)?;
    let ch = ctx
        .lock()
        .devx_channels
        .get(&fd)
        .cloned()
        .ok_or(Errno::EINVAL)?;
    if call.has(MLX5_IB_ATTR_DEVX_SUBSCRIBE_EVENT_FD_NUM) {
        // Signalling an eventfd instead of queueing: not offered by this device.
        return Err(Errno::EOPNOTSUPP);
    }
    let obj = match call.handle(MLX5_IB_ATTR_DEVX_SUBSCRIBE_EVENT_OBJ_HANDLE) {
        Some(h) => Some(
            ctx.get(h)
                .as_ref()
                .and_then(model_handle)
                .ok_or(Errno::EINVAL)?,
        ),
        None => None,
    };
    let list = call
        .bytes(MLX5_IB_ATTR_DEVX_SUBSCRIBE_EVENT_TYPE_NUM_LIST)?
        .ok_or(Errno::EINVAL)?;
    if list.len() % 2 != 0 {
        return Err(Errno::EINVAL);
    }
    let types: Vec<u16> = list
        .chunks_exact(2)
        .map(|c| u16::from_ne_bytes([c[0], c[1]]))
        .collect();
    let cookie = call
        .value(MLX5_IB_ATTR_DEVX_SUBSCRIBE_EVENT_COOKIE)
        .unwrap_or(0);
    ch.chan.subscribe(obj, &types, cookie).map_err(errno_of)?;
    Ok(0)
}

fn devx_obj_create(ctx: &Ucontext, call: &Call) -> Result<i32, Errno> {
    let devx = devx_of(ctx)?;
    let mut created = None;
    mailbox(
        call,
        MLX5_IB_ATTR_DEVX_OBJ_CMD_IN,
        MLX5_IB_ATTR_DEVX_OBJ_CMD_OUT,
        |i, o| {
            created = Some(devx.obj_create(i, o)?);
            Ok(())
        },
    )?;
    let handle = created.ok_or(Errno::EINVAL)?;
    let raw = Arc::new(DevxRaw::new(Arc::clone(&devx), handle));
    let h = ctx.insert(Obj::Devx(raw));
    if let Err(e) = call.set_data(MLX5_IB_ATTR_DEVX_OBJ_HANDLE, u64::from(h)) {
        let _ = ctx.remove(u64::from(h), |_| true);
        return Err(e);
    }
    Ok(0)
}

fn devx_obj_destroy(ctx: &Ucontext, call: &Call) -> Result<i32, Errno> {
    devx_of(ctx)?;
    let h = call
        .handle(MLX5_IB_ATTR_DEVX_OBJ_HANDLE)
        .ok_or(Errno::EINVAL)?;
    let Some(Obj::Devx(raw)) = ctx.get(h) else {
        return Err(Errno::ENOENT);
    };
    raw.destroy().map_err(errno_of)?;
    drop(raw);
    ctx.remove(h, |o| matches!(o, Obj::Devx(_)))?;
    Ok(0)
}

fn devx_obj_cmd(ctx: &Ucontext, call: &Call, query: bool) -> Result<i32, Errno> {
    let devx = devx_of(ctx)?;
    let h = call
        .handle(MLX5_IB_ATTR_DEVX_OBJ_HANDLE)
        .ok_or(Errno::EINVAL)?;
    // Any object of the context with a firmware object behind it: raw DevX objects and the
    // verbs CQs, QPs and SRQs (`UVERBS_IDR_ANY_OBJECT`; mlx5dv_devx_qp_modify and its kin). The
    // model checks that the mailbox names that object (`devx_is_valid_obj_id`).
    let target = ctx
        .get(h)
        .as_ref()
        .and_then(model_handle)
        .ok_or(Errno::ENOENT)?;
    mailbox(
        call,
        MLX5_IB_ATTR_DEVX_OBJ_CMD_IN,
        MLX5_IB_ATTR_DEVX_OBJ_CMD_OUT,
        |i, o| {
            if query {
                devx.obj_query(target, i, o)
            } else {
                devx.obj_modify(target, i, o)
            }
        },
    )
}

fn devx_obj_async_query(ctx: &Ucontext, call: &Call) -> Result<i32, Errno> {
    let devx = devx_of(ctx)?;
    let h = call
        .handle(MLX5_IB_ATTR_DEVX_OBJ_HANDLE)
        .ok_or(Errno::EINVAL)?;
    let Some(Obj::Devx(raw)) = ctx.get(h) else {
        return Err(Errno::ENOENT);
    };
    let fd = call
        .fd(MLX5_IB_ATTR_DEVX_OBJ_QUERY_ASYNC_FD)
        .ok_or(Errno::EINVAL)?;
    let file = ctx.lock().cmd_fds.get(&fd).cloned().ok_or(Errno::EINVAL)?;
    let wr_id = value(call, MLX5_IB_ATTR_DEVX_OBJ_QUERY_ASYNC_WR_ID)?;
    let out_len = value(call, MLX5_IB_ATTR_DEVX_OBJ_QUERY_ASYNC_OUT_LEN)? as usize;
    if !(16..=usize::from(u16::MAX)).contains(&out_len) {
        return Err(Errno::EINVAL);
    }
    let inbox = call
        .bytes(MLX5_IB_ATTR_DEVX_OBJ_CMD_IN)?
        .ok_or(Errno::EINVAL)?;
    let mut outbox = vec![0u8; out_len];
    if let Err(e) = devx.obj_query(raw.handle, &inbox, &mut outbox) {
        let errno = errno_of(e);
        if errno != Errno::EREMOTEIO {
            return Err(errno);
        }
    }
    // `mlx5_ib_uapi_devx_async_cmd_hdr`: wr_id, then the outbox.
    let mut rec = wr_id.to_ne_bytes().to_vec();
    rec.extend_from_slice(&outbox);
    file.push(rec, 0, None);
    Ok(0)
}

fn devx_umem_reg(ctx: &Ucontext, call: &Call) -> Result<i32, Errno> {
    let devx = devx_of(ctx)?;
    if call.has(MLX5_IB_ATTR_DEVX_UMEM_REG_DMABUF_FD) {
        // No dma-buf importers on this device.
        return Err(Errno::EOPNOTSUPP);
    }
    let addr = value(call, MLX5_IB_ATTR_DEVX_UMEM_REG_ADDR)?;
    let len = value(call, MLX5_IB_ATTR_DEVX_UMEM_REG_LEN)?;
    let access = u32_value(call, MLX5_IB_ATTR_DEVX_UMEM_REG_ACCESS)?;
    let known = UmemAccess::all().bits() | (1 << 20); // + IB_ACCESS_RELAXED_ORDERING
    if access & !known != 0 {
        return Err(Errno::EINVAL);
    }
    let pgsz = call
        .value(MLX5_IB_ATTR_DEVX_UMEM_REG_PGSZ_BITMAP)
        .unwrap_or(!0xfffu64);
    let umem = UserUmem::register_pgsz(
        &devx,
        addr,
        len,
        UmemAccess::from_bits_truncate(access),
        pgsz,
    )?;
    let id = umem.umem_id;
    let h = ctx.insert(Obj::Umem(Arc::new(umem)));
    let r = call
        .out(MLX5_IB_ATTR_DEVX_UMEM_REG_OUT_ID, &id.to_ne_bytes())
        .and_then(|()| call.set_data(MLX5_IB_ATTR_DEVX_UMEM_REG_HANDLE, u64::from(h)));
    if let Err(e) = r {
        let _ = ctx.remove(u64::from(h), |_| true);
        return Err(e);
    }
    Ok(0)
}

fn devx_umem_dereg(ctx: &Ucontext, call: &Call) -> Result<i32, Errno> {
    devx_of(ctx)?;
    let h = call
        .handle(MLX5_IB_ATTR_DEVX_UMEM_DEREG_HANDLE)
        .ok_or(Errno::EINVAL)?;
    let Some(Obj::Umem(u)) = ctx.get(h) else {
        return Err(Errno::ENOENT);
    };
    u.dereg()?;
    drop(u);
    ctx.remove(h, |o| matches!(o, Obj::Umem(_)))?;
    Ok(0)
}

fn devx_cmd_fd_alloc(ctx: &Ucontext, call: &Call) -> Result<i32, Errno> {
    devx_of(ctx)?;
    let f = EventFile::new(true)?;
    fds::add_event(&f)?;
    ctx.lock().cmd_fds.insert(f.fd(), Arc::clone(&f));
    call.set_data(MLX5_IB_ATTR_DEVX_ASYNC_CMD_FD_ALLOC_HANDLE, f.fd() as u64)?;
    Ok(0)
}

fn devx_event_fd_alloc(ctx: &Ucontext, call: &Call) -> Result<i32, Errno> {
    devx_of(ctx)?;
    let flags = u32_value(call, MLX5_IB_ATTR_DEVX_ASYNC_EVENT_FD_ALLOC_FLAGS)?;
    if flags & !MLX5_IB_UAPI_DEVX_CR_EV_CH_FLAGS_OMIT_DATA != 0 {
        return Err(Errno::EINVAL);
    }
    let sim = ctx.lock().sim.clone().ok_or(Errno::EINVAL)?;
    let f = EventFile::new(true)?;
    let ch = Arc::new(DevxChannel {
        chan: sim.shared_event_channel(),
        file: Arc::clone(&f),
        omit_data: flags & MLX5_IB_UAPI_DEVX_CR_EV_CH_FLAGS_OMIT_DATA != 0,
        stop: Default::default(),
    });
    crate::pump::start_devx(&ch)?;
    fds::add_event(&f)?;
    ctx.lock().devx_channels.insert(f.fd(), ch);
    call.set_data(MLX5_IB_ATTR_DEVX_ASYNC_EVENT_FD_ALLOC_HANDLE, f.fd() as u64)?;
    Ok(0)
}

fn uar_alloc(ctx: &Ucontext, call: &Call) -> Result<i32, Errno> {
    let kind = match value(call, MLX5_IB_ATTR_UAR_OBJ_ALLOC_TYPE)? {
        0 => UarKind::BlueFlame,
        1 => UarKind::NonCached,
        _ => return Err(Errno::EINVAL),
    };
    let u = ctx.alloc_uar(kind)?;
    let page = crate::user::page_size() as u64;
    let h = ctx.insert(Obj::Uar(Arc::clone(&u)));
    let r = call
        .out(
            MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_OFFSET,
            &(u.pgoff * page).to_ne_bytes(),
        )
        .and_then(|()| {
            call.out(
                MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_LENGTH,
                &(u.len as u32).to_ne_bytes(),
            )
        })
        .and_then(|()| call.out(MLX5_IB_ATTR_UAR_OBJ_ALLOC_PAGE_ID, &u.page_id.to_ne_bytes()))
        .and_then(|()| call.set_data(MLX5_IB_ATTR_UAR_OBJ_ALLOC_HANDLE, u64::from(h)));
    if let Err(e) = r {
        if let Ok(Obj::Uar(u)) = ctx.remove(u64::from(h), |_| true) {
            ctx.destroy_uar(&u);
        }
        return Err(e);
    }
    Ok(0)
}

fn uar_destroy(ctx: &Ucontext, call: &Call) -> Result<i32, Errno> {
    let h = call
        .handle(MLX5_IB_ATTR_UAR_OBJ_DESTROY_HANDLE)
        .ok_or(Errno::EINVAL)?;
    let Some(Obj::Uar(u)) = ctx.get(h) else {
        return Err(Errno::ENOENT);
    };
    // Queues on the page hold it in firmware: the destroy waits for them, as the kernel's.
    drop(u);
    let o = ctx.remove(h, |o| matches!(o, Obj::Uar(_)))?;
    if let Obj::Uar(u) = o {
        ctx.destroy_uar(&u);
    }
    let _ = Ordering::Relaxed;
    Ok(0)
}
