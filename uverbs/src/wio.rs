//! One write command's buffers, however the command arrived (a `write()` or
//! `UVERBS_METHOD_INVOKE_WRITE`): the core request and driver data in, and where the core and
//! driver responses go, copied with the kernel's `uverbs_request` / `uverbs_response` /
//! `ib_copy_to_udata` semantics (Linux `drivers/infiniband/core/uverbs_cmd.c`).

use nix::errno::Errno;
use zerocopy::{FromBytes, IntoBytes};

use crate::ioctl::Call;
use crate::user;

/// The request and answer buffers of one write command, however it arrived.
pub(crate) struct WriteIo<'a> {
    /// The core request (for legacy commands including the leading `response` word).
    pub(crate) core_in: Vec<u8>,
    /// Driver data in.
    pub(crate) uhw_in: Vec<u8>,
    pub(crate) core_out: Option<(u64, usize)>,
    pub(crate) uhw_out: Option<(u64, usize)>,
    /// Through INVOKE_WRITE: outputs are flagged in the call's attributes.
    pub(crate) call: Option<&'a Call>,
}

impl WriteIo<'_> {
    /// The core request as `T` (missing bytes zero; extra bytes must be zero, else
    /// `EOPNOTSUPP`, as `uverbs_request`).
    pub(crate) fn req<T: FromBytes + IntoBytes>(&self) -> Result<T, Errno> {
        zero_extend(&self.core_in)
    }

    /// The driver data as `T` (missing bytes zero: `ib_copy_from_udata` of what was given).
    pub(crate) fn uhw<T: FromBytes + IntoBytes>(&self) -> T {
        let mut b = vec![0u8; core::mem::size_of::<T>()];
        let n = b.len().min(self.uhw_in.len());
        b[..n].copy_from_slice(&self.uhw_in[..n]);
        T::read_from_bytes(&b).unwrap_or_else(|_| T::new_zeroed())
    }

    /// Bytes of driver data given.
    pub(crate) fn uhw_len(&self) -> usize {
        self.uhw_in.len()
    }

    /// Bytes of driver response the client has room for.
    pub(crate) fn uhw_out_len(&self) -> usize {
        self.uhw_out.map_or(0, |(_, l)| l)
    }

    /// Bytes of core response the client has room for.
    pub(crate) fn core_out_len(&self) -> usize {
        if let Some(c) = self.call {
            return c
                .out_len(mlx5_dpa::devx::kernel::abi::core_ids::UVERBS_ATTR_CORE_OUT)
                .unwrap_or(0);
        }
        self.core_out.map_or(0, |(_, l)| l)
    }

    /// Writes the core response (`uverbs_response`: as much as fits, the rest of the buffer
    /// zeroed).
    pub(crate) fn resp(&self, data: &[u8]) -> Result<(), Errno> {
        if let Some(c) = self.call {
            return c.out(
                mlx5_dpa::devx::kernel::abi::core_ids::UVERBS_ATTR_CORE_OUT,
                data,
            );
        }
        let Some((addr, len)) = self.core_out else {
            return Ok(());
        };
        let mut b = data[..data.len().min(len)].to_vec();
        b.resize(len, 0);
        user::write(addr, &b)
    }

    /// Writes the driver response (`ib_copy_to_udata`: as much as fits).
    pub(crate) fn uhw_resp(&self, data: &[u8]) -> Result<(), Errno> {
        if let Some(c) = self.call {
            return c.out(
                mlx5_dpa::devx::kernel::abi::core_ids::UVERBS_ATTR_UHW_OUT,
                data,
            );
        }
        let Some((addr, len)) = self.uhw_out else {
            return Ok(());
        };
        user::write(addr, &data[..data.len().min(len)])
    }
}

fn zero_extend<T: FromBytes + IntoBytes>(b: &[u8]) -> Result<T, Errno> {
    let size = core::mem::size_of::<T>();
    if b.len() > size && b[size..].iter().any(|&x| x != 0) {
        return Err(Errno::EOPNOTSUPP);
    }
    let mut v = vec![0u8; size];
    let n = size.min(b.len());
    v[..n].copy_from_slice(&b[..n]);
    T::read_from_bytes(&v).map_err(|_| Errno::EINVAL)
}
