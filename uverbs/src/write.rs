//! Write commands: the legacy `write()` framing and `UVERBS_METHOD_INVOKE_WRITE`, both reduced
//! to one [`WriteIo`] and one table of commands ([`COMMANDS`]).
//!
//! The size rules are the kernel's (`verify_hdr`, `ib_uverbs_write` in Linux
//! `drivers/infiniband/core/uverbs_main.c`, `UVERBS_HANDLER(UVERBS_METHOD_INVOKE_WRITE)` in
//! `uverbs_std_types_device.c`): a request shorter than the command's core request, or a
//! response buffer shorter than its core response, is `ENOSPC`; a command the device does not
//! serve is `EOPNOTSUPP`. A legacy command's driver data follows its core request, and its
//! driver response follows the core response at the request's `response` address.

use mlx5_dpa::devx::kernel::abi::write::{
    self as w, cmd, FrameError, WriteFrame, IB_USER_VERBS_CMD_FLAG_EXTENDED,
};
use nix::errno::Errno;

use crate::config::trace;
use crate::context::Ucontext;
use crate::ioctl::Call;
use crate::user;
use crate::wio::WriteIo;

type Handler = fn(&Ucontext, &WriteIo<'_>) -> Result<(), Errno>;

/// One write command the server serves.
pub(crate) struct Command {
    pub(crate) cmd: u32,
    pub(crate) extended: bool,
    /// Core request size (the kernel's `req_size`; legacy ones include `response`).
    pub(crate) req: usize,
    /// Core response size (`resp_size`); 0 for commands without one.
    pub(crate) resp: usize,
    /// The request has a `response` word first (legacy commands with a response).
    pub(crate) has_resp: bool,
    pub(crate) run: Handler,
}

const fn legacy(cmd: u32, req: usize, resp: usize, run: Handler) -> Command {
    Command {
        cmd,
        extended: false,
        req,
        resp,
        has_resp: resp > 0,
        run,
    }
}

const fn ex(cmd: u32, req: usize, resp: usize, run: Handler) -> Command {
    Command {
        cmd,
        extended: true,
        req,
        resp,
        has_resp: false,
        run,
    }
}

use core::mem::size_of as sz;

/// Every write command served, with the sizes of `UAPI_DEF_WRITE_*` in Linux
/// `drivers/infiniband/core/uverbs_uapi.c` / `uverbs_cmd.c`.
pub(crate) static COMMANDS: &[Command] = &[
    legacy(
        cmd::GET_CONTEXT,
        sz::<w::ib_uverbs_get_context>(),
        sz::<w::ib_uverbs_get_context_resp>(),
        crate::verbs::get_context,
    ),
    legacy(
        cmd::QUERY_DEVICE,
        sz::<w::ib_uverbs_query_device>(),
        sz::<w::ib_uverbs_query_device_resp>(),
        crate::verbs::query_device,
    ),
    legacy(
        cmd::QUERY_PORT,
        sz::<w::ib_uverbs_query_port>(),
        sz::<w::ib_uverbs_query_port_resp>(),
        crate::verbs::query_port,
    ),
    legacy(
        cmd::ALLOC_PD,
        sz::<w::ib_uverbs_alloc_pd>(),
        sz::<w::ib_uverbs_alloc_pd_resp>(),
        crate::verbs::alloc_pd,
    ),
    legacy(
        cmd::DEALLOC_PD,
        sz::<w::ib_uverbs_dealloc_pd>(),
        0,
        crate::verbs::dealloc_pd,
    ),
    legacy(
        cmd::CREATE_AH,
        sz::<w::ib_uverbs_create_ah>(),
        sz::<w::ib_uverbs_create_ah_resp>(),
        crate::verbs::create_ah,
    ),
    legacy(
        cmd::DESTROY_AH,
        sz::<w::ib_uverbs_destroy_ah>(),
        0,
        crate::verbs::destroy_ah,
    ),
    legacy(
        cmd::REG_MR,
        sz::<w::ib_uverbs_reg_mr>(),
        sz::<w::ib_uverbs_reg_mr_resp>(),
        crate::verbs::reg_mr,
    ),
    legacy(
        cmd::REREG_MR,
        sz::<w::ib_uverbs_rereg_mr>(),
        sz::<w::ib_uverbs_rereg_mr_resp>(),
        crate::verbs::rereg_mr,
    ),
    legacy(
        cmd::DEREG_MR,
        sz::<w::ib_uverbs_dereg_mr>(),
        0,
        crate::verbs::dereg_mr,
    ),
    legacy(
        cmd::CREATE_COMP_CHANNEL,
        sz::<w::ib_uverbs_create_comp_channel>(),
        sz::<w::ib_uverbs_create_comp_channel_resp>(),
        crate::verbs::create_comp_channel,
    ),
    legacy(
        cmd::CREATE_CQ,
        sz::<w::ib_uverbs_create_cq>(),
        sz::<w::ib_uverbs_create_cq_resp>(),
        crate::verbs::create_cq,
    ),
    legacy(
        cmd::DESTROY_CQ,
        sz::<w::ib_uverbs_destroy_cq>(),
        sz::<w::ib_uverbs_destroy_cq_resp>(),
        crate::verbs::destroy_cq,
    ),
    legacy(
        cmd::CREATE_QP,
        sz::<w::ib_uverbs_create_qp>(),
        sz::<w::ib_uverbs_create_qp_resp>(),
        crate::verbs::create_qp,
    ),
    legacy(
        cmd::QUERY_QP,
        sz::<w::ib_uverbs_query_qp>(),
        sz::<w::ib_uverbs_query_qp_resp>(),
        crate::verbs::query_qp,
    ),
    legacy(
        cmd::MODIFY_QP,
        sz::<w::ib_uverbs_modify_qp>(),
        0,
        crate::verbs::modify_qp,
    ),
    legacy(
        cmd::DESTROY_QP,
        sz::<w::ib_uverbs_destroy_qp>(),
        sz::<w::ib_uverbs_destroy_qp_resp>(),
        crate::verbs::destroy_qp,
    ),
    legacy(
        cmd::CREATE_SRQ,
        sz::<w::ib_uverbs_create_srq>(),
        sz::<w::ib_uverbs_create_srq_resp>(),
        crate::verbs::create_srq,
    ),
    legacy(
        cmd::CREATE_XSRQ,
        sz::<w::ib_uverbs_create_xsrq>(),
        sz::<w::ib_uverbs_create_srq_resp>(),
        crate::verbs::create_xsrq,
    ),
    legacy(
        cmd::MODIFY_SRQ,
        sz::<w::ib_uverbs_modify_srq>(),
        0,
        crate::verbs::modify_srq,
    ),
    legacy(
        cmd::QUERY_SRQ,
        sz::<w::ib_uverbs_query_srq>(),
        sz::<w::ib_uverbs_query_srq_resp>(),
        crate::verbs::query_srq,
    ),
    legacy(
        cmd::DESTROY_SRQ,
        sz::<w::ib_uverbs_destroy_srq>(),
        sz::<w::ib_uverbs_destroy_srq_resp>(),
        crate::verbs::destroy_srq,
    ),
    // Extended: core sizes up to the `_last_member` of `UAPI_DEF_WRITE_IO_EX`.
    ex(
        cmd::QUERY_DEVICE,
        sz::<w::ib_uverbs_ex_query_device>(),
        184,
        crate::verbs::ex_query_device,
    ),
    ex(
        cmd::CREATE_CQ,
        sz::<w::ib_uverbs_ex_create_cq>(),
        sz::<w::ib_uverbs_ex_create_cq_resp>(),
        crate::verbs::ex_create_cq,
    ),
    ex(
        cmd::CREATE_QP,
        52,
        sz::<w::ib_uverbs_ex_create_qp_resp>(),
        crate::verbs::ex_create_qp,
    ),
    ex(
        cmd::MODIFY_QP,
        sz::<w::ib_uverbs_modify_qp>(),
        sz::<w::ib_uverbs_ex_modify_qp_resp>(),
        crate::verbs::ex_modify_qp,
    ),
];

fn find(command: u32) -> Result<&'static Command, Errno> {
    let extended = command & IB_USER_VERBS_CMD_FLAG_EXTENDED != 0;
    let n = command & !IB_USER_VERBS_CMD_FLAG_EXTENDED;
    if n > 0xff {
        return Err(Errno::EINVAL);
    }
    COMMANDS
        .iter()
        .find(|c| c.cmd == n && c.extended == extended)
        .ok_or(Errno::EOPNOTSUPP)
}

fn run(ctx: &Ucontext, c: &Command, io: &WriteIo<'_>) -> Result<(), Errno> {
    if c.cmd != cmd::GET_CONTEXT && ctx.lock().devx.is_none() {
        // No context yet (`ib_uverbs_get_ucontext` fails).
        return Err(Errno::EINVAL);
    }
    (c.run)(ctx, io)
}

/// A `write()` of `len` bytes at the client's `buf`.
pub(crate) fn write(ctx: &Ucontext, buf: u64, len: usize) -> Result<usize, Errno> {
    if len < 8 {
        return Err(Errno::EINVAL);
    }
    let bytes = user::read(buf, len)?;
    let f = WriteFrame::parse(&bytes).map_err(|e| match e {
        FrameError::Short | FrameError::Length | FrameError::Reserved => Errno::EINVAL,
    })?;
    let command = if f.extended {
        f.command | IB_USER_VERBS_CMD_FLAG_EXTENDED
    } else {
        f.command
    };
    let c = find(command).inspect_err(|_| {
        trace(format_args!("write command {command:#x} not served"));
    })?;
    let io = if !c.extended {
        if f.core_in.len() < c.req {
            return Err(Errno::ENOSPC);
        }
        if f.out_len < c.resp {
            return Err(Errno::ENOSPC);
        }
        let (core, uhw) = f.core_in.split_at(c.req);
        let response = if c.has_resp { f.response } else { 0 };
        WriteIo {
            core_in: core.to_vec(),
            uhw_in: uhw.to_vec(),
            core_out: c.has_resp.then_some((response, c.resp)),
            uhw_out: (c.has_resp && f.out_len > c.resp)
                .then(|| (response + c.resp as u64, f.out_len - c.resp)),
            call: None,
        }
    } else {
        if f.core_in.len() < c.req {
            return Err(Errno::ENOSPC);
        }
        if f.response != 0 {
            if f.out_len == 0 && f.uhw_out_len == 0 {
                return Err(Errno::EINVAL);
            }
            if f.out_len < c.resp {
                return Err(Errno::ENOSPC);
            }
        } else if f.out_len != 0 || f.uhw_out_len != 0 {
            return Err(Errno::EINVAL);
        }
        WriteIo {
            core_in: f.core_in,
            uhw_in: f.uhw_in,
            core_out: (f.response != 0).then_some((f.response, f.out_len)),
            uhw_out: (f.response != 0 && f.uhw_out_len > 0)
                .then(|| (f.response + f.out_len as u64, f.uhw_out_len)),
            call: None,
        }
    };
    run(ctx, c, &io).inspect_err(|e| {
        trace(format_args!("write command {command:#x}: {e}"));
    })?;
    Ok(len)
}

/// `UVERBS_METHOD_INVOKE_WRITE`: the same commands as ioctl attributes.
pub(crate) fn invoke(ctx: &Ucontext, call: &Call) -> Result<i32, Errno> {
    use mlx5_dpa::devx::kernel::abi::core_ids::*;
    let command = call.value(UVERBS_ATTR_WRITE_CMD).ok_or(Errno::EINVAL)?;
    let command = u32::try_from(command).map_err(|_| Errno::EINVAL)?;
    let c = find(command)?;
    let core_in = call.bytes(UVERBS_ATTR_CORE_IN)?.unwrap_or_default();
    let out_len = call.out_len(UVERBS_ATTR_CORE_OUT).unwrap_or(0);
    if core_in.len() < c.req || out_len < c.resp {
        return Err(Errno::ENOSPC);
    }
    let uhw_in = call.bytes(UVERBS_ATTR_UHW_IN)?.unwrap_or_default();
    let io = WriteIo {
        core_in,
        uhw_in,
        core_out: None,
        uhw_out: call.out_len(UVERBS_ATTR_UHW_OUT).map(|l| (0, l)),
        call: Some(call),
    };
    run(ctx, c, &io).inspect_err(|e| {
        trace(format_args!("INVOKE_WRITE {command:#x}: {e}"));
    })?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_is_served_once() {
        for (i, a) in COMMANDS.iter().enumerate() {
            for b in &COMMANDS[i + 1..] {
                assert!(
                    !(a.cmd == b.cmd && a.extended == b.extended),
                    "command {} twice",
                    a.cmd
                );
            }
            assert!(a.req > 0);
        }
        assert_eq!(find(cmd::POLL_CQ).err(), Some(Errno::EOPNOTSUPP));
        assert_eq!(find(0x100).err(), Some(Errno::EINVAL));
    }
}
