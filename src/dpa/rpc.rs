//! RPC (FlexIO `flexio_process_call`) as FlexIO does it (docs/sources.md section 9): the host packs
//! the arguments into an argument buffer in DPA memory; on the device an unpack function
//! `uint64_t unpack(void *arg_buf, void *func)` reads them and calls the function. A call runs
//! on a thread of its own, created for it and destroyed after it, which starts at the
//! runtime's [`RPC_ENTRY`] with the address of the call (fw-blobs `struct mlx5_dpa_rpc_call`:
//! unpack, func, ret, reserved, then the argument buffer) in a block of DPA memory the process
//! keeps for this.

use std::time::Duration;

use super::process::{
    lock, DpaError, Process, StepExt, MAX_RPC_ARGS, MAX_RPC_ARG_BUF, RPC_CALL_HEADER, RPC_ENTRY,
    RPC_GENERIC_UNPACK, RPC_TIMEOUT,
};
use super::thread::EventHandlerAttr;

impl Process {
    /// Calls the device function `symbol` with up to eight u64 arguments (FlexIO
    /// `flexio_process_call` of a `__dpa_rpc__` function) and returns its result. The
    /// arguments are packed as eight little-endian words (zero-padded) and unpacked by the
    /// runtime's generic unpack ([`RPC_GENERIC_UNPACK`]), so any function of up to eight
    /// integer or pointer parameters is callable with no generated code in the program.
    ///
    /// # Errors
    /// [`DpaError::BadArgs`] for more than [`MAX_RPC_ARGS`] arguments;
    /// [`DpaError::UnknownSymbol`] when the program lacks `symbol`, or lacks [`RPC_ENTRY`] /
    /// [`RPC_GENERIC_UNPACK`] (it was not linked with this project's device runtime);
    /// [`DpaError::ProcessFault`] when the call fails the process, [`DpaError::Timeout`].
    pub fn call(&self, symbol: &str, args: &[u64]) -> Result<u64, DpaError> {
        if args.len() > MAX_RPC_ARGS {
            return Err(DpaError::BadArgs(format!(
                "{} RPC arguments (at most {MAX_RPC_ARGS})",
                args.len()
            )));
        }
        let mut arg_buf = [0u8; 8 * MAX_RPC_ARGS];
        for (w, a) in arg_buf.chunks_exact_mut(8).zip(args) {
            w.copy_from_slice(&a.to_le_bytes());
        }
        self.call_packed(symbol, RPC_GENERIC_UNPACK, &arg_buf)
    }

    /// Calls `symbol` through the program's own unpack function `unpack` with an argument
    /// buffer the caller packed (FlexIO `flexio_func_pup_register` with a user pack function,
    /// as snap registers `vrdma_dpa_rpc_unpack_func`): the device runs
    /// `unpack(arg_buf, symbol)` and its return value is the result. The buffer is copied
    /// 8-byte aligned into DPA memory.
    ///
    /// # Errors
    /// [`DpaError::BadArgs`] for a buffer over [`MAX_RPC_ARG_BUF`] bytes; otherwise as
    /// [`Process::call`].
    pub fn call_packed(&self, symbol: &str, unpack: &str, arg_buf: &[u8]) -> Result<u64, DpaError> {
        if arg_buf.len() > MAX_RPC_ARG_BUF {
            return Err(DpaError::BadArgs(format!(
                "an RPC argument buffer of {} bytes (at most {MAX_RPC_ARG_BUF})",
                arg_buf.len()
            )));
        }
        let inner = self.inner();
        let func = inner.symbol(symbol)?;
        let unpack = inner.symbol(unpack)?;
        inner.symbol(RPC_ENTRY)?;
        let block = lock(&inner.rpc);
        let mut call = vec![0u8; RPC_CALL_HEADER + arg_buf.len()];
        call[0..8].copy_from_slice(&unpack.to_le_bytes());
        call[8..16].copy_from_slice(&func.to_le_bytes());
        call[RPC_CALL_HEADER..].copy_from_slice(arg_buf);
        self.copy_to_dev(*block, &call)
            .step("writing the RPC call and its arguments")?;
        self.run_once(RPC_ENTRY, *block)
    }

    /// Runs `symbol` once with `a0` = `arg` and returns what it returned: a function
    /// registered without packing (FlexIO `flexio_func_register`: one u64 argument), or any
    /// entry of the program.
    ///
    /// # Errors
    /// As [`Process::call`].
    pub fn call_raw(&self, symbol: &str, arg: u64) -> Result<u64, DpaError> {
        self.run_once(symbol, arg)
    }

    /// The id of the outbox RPC threads get (over the process's UAR), made on first use.
    fn rpc_outbox_id(&self) -> Result<u32, DpaError> {
        let inner = self.inner();
        let mut slot = lock(&inner.rpc_outbox);
        if let Some((_, id)) = &*slot {
            return Ok(*id);
        }
        let (obj, id) = crate::devx::create(
            &inner.dev,
            &crate::mlx5::cmd::CreateGeneralObject(crate::mlx5::cmd::DpaOutboxAttr {
                dpa_process_id: inner.id,
                uar: self.uar().page_id(),
            }),
        )
        .step("creating the outbox of RPC threads")?;
        *slot = Some((obj, id));
        Ok(id)
    }

    fn run_once(&self, entry: &str, arg: u64) -> Result<u64, DpaError> {
        self.run_once_within(entry, arg, RPC_TIMEOUT)
    }

    /// Runs `entry` once on a thread of its own with `a0` = `arg`, waits at most `timeout`
    /// and returns what it returned (every RPC, and the runtime's own entries).
    pub(crate) fn run_once_within(
        &self,
        entry: &str,
        arg: u64,
        timeout: Duration,
    ) -> Result<u64, DpaError> {
        let outbox = self.rpc_outbox_id()?;
        let thread = self
            .event_handler(&EventHandlerAttr {
                default_outbox_id: outbox,
                ..EventHandlerAttr::new(entry, arg)
            })
            .step("creating the thread of the call")?;
        thread.run(arg).step("starting the thread of the call")?;
        let r = thread.wait_done(timeout);
        if r.is_err() {
            // Withdraw a queued run before the thread is destroyed: a failed withdrawal
            // (it is running) only means the destroy waits for the activation to end.
            let _ = thread.finish();
        }
        let info = r.step("waiting for the call to return")?;
        thread.destroy().step("destroying the thread of the call")?;
        Ok(info.return_value)
    }
}
