//! RPC (FlexIO `flexio_process_call`): a call runs on a thread of its own, created for it and
//! destroyed after it, with its arguments in a block of DPA memory the process keeps for this.

use std::time::Duration;

use super::process::{
    lock, DpaError, Process, StepExt, MAX_RPC_ARGS, RPC_STUB_SUFFIX, RPC_TIMEOUT,
};
use super::thread::EventHandlerAttr;

impl Process {
    /// Calls the RPC `symbol` with up to six arguments (FlexIO `flexio_process_call`): the
    /// arguments go into an argument block in DPA memory (`[0]` result, `[1..]` arguments),
    /// and a thread runs `<symbol>_rpc_stub` (or `symbol` itself when it already names a
    /// stub) with the block's address; its result is returned.
    ///
    /// # Errors
    /// [`DpaError::UnknownSymbol`], more than [`MAX_RPC_ARGS`] arguments,
    /// [`DpaError::ProcessFault`] when the call fails the process, [`DpaError::Timeout`].
    pub fn call(&self, symbol: &str, args: &[u64]) -> Result<u64, DpaError> {
        if args.len() > MAX_RPC_ARGS {
            return Err(DpaError::BadArgs(format!(
                "{} RPC arguments (at most {MAX_RPC_ARGS})",
                args.len()
            )));
        }
        let stub = if symbol.ends_with(RPC_STUB_SUFFIX) {
            symbol.to_string()
        } else {
            format!("{symbol}{RPC_STUB_SUFFIX}")
        };
        self.inner().symbol(&stub)?;
        let block = lock(&self.inner().rpc);
        let mut bytes = vec![0u8; 8 * (1 + args.len())];
        for (i, a) in args.iter().enumerate() {
            bytes[8 * (i + 1)..8 * (i + 2)].copy_from_slice(&a.to_le_bytes());
        }
        self.copy_to_dev(*block, &bytes)
            .step("writing the RPC arguments")?;
        self.run_once(&stub, *block)
    }

    /// Runs `symbol` once with `a0` = `arg` and returns what it returned (a one-argument RPC
    /// called directly).
    ///
    /// # Errors
    /// As [`Process::call`].
    pub fn call_raw(&self, symbol: &str, arg: u64) -> Result<u64, DpaError> {
        self.run_once(symbol, arg)
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
        let thread = self
            .event_handler(&EventHandlerAttr::new(entry, arg))
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
