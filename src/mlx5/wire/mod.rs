//! Datapath formats, declared once: completion queue entries, event queue entries and the
//! segments of a work queue entry.
//!
//! In the manner of smoltcp's `wire`: each format is a `layout!` declaration (so the CLI can
//! decode it and `tests/driver/ifc_reference.rs` checks it against the public headers), a view over any
//! byte buffer (`Cqe64<T>`, `CtrlSeg<T>`, ...) whose length is checked once by `new_checked`,
//! with a getter and, for writable buffers, a setter per field; and, where a format carries a
//! meaning beyond its fields, a representation (`Completion`, `Event`, `CtrlSegRepr`, ...) with
//! `parse` from a view and `emit` into one. The driver, the device model's datapath, its RC
//! transport and every test rig read and write these bytes through this module only.
//!
//! Field names are those of rdma-core `providers/mlx5/mlx5dv.h` (`struct mlx5_cqe64`,
//! `mlx5_err_cqe`, `mlx5_wqe_*_seg`) and of the kernel's `include/linux/mlx5/device.h`
//! (`struct mlx5_eqe`); all multi-byte fields are big-endian.

pub mod cqe;
pub mod eqe;
pub mod wqe;

pub use cqe::{
    Completion, CompletionError, CompletionKind, Cqe, Cqe128, Cqe64, Syndrome, CQE128_SIZE,
    CQE_SIZE,
};
pub use eqe::{Eqe, Event, EQE_SIZE};
pub use wqe::{AtomicSeg, CtrlSeg, CtrlSegRepr, DataSeg, EthSeg, InlineSeg, RaddrSeg};

use super::layout::{ArrayField, Field, Layout};

/// A buffer too short for the format a view was asked to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{what} needs {need} bytes, got {got}")]
pub struct ShortBuffer {
    pub what: &'static str,
    pub need: usize,
    pub got: usize,
}

/// Checks that `buf` holds at least `need` bytes of `what`.
#[inline]
pub(crate) fn check_len(what: &'static str, buf: &[u8], need: usize) -> Result<(), ShortBuffer> {
    if buf.len() < need {
        Err(ShortBuffer {
            what,
            need,
            got: buf.len(),
        })
    } else {
        Ok(())
    }
}

/// The byte offset of a byte-aligned field whose width is a whole number of bytes; refuses (at
/// compile time, since every use is in a `const`) any other.
pub(crate) const fn byte_at<L: Layout, T>(f: Field<L, T>) -> usize {
    assert!(
        f.offset().is_multiple_of(8) && f.width().is_multiple_of(8),
        "wire fields are whole bytes"
    );
    (f.offset() / 8) as usize
}

/// The first element of an array field.
pub(crate) const fn first<L: Layout>(a: ArrayField<L>) -> Field<L> {
    match a.at(0) {
        Some(f) => f,
        None => panic!("empty array field"),
    }
}

/// Big-endian scalars of a wire format: read and written at a byte offset.
pub(crate) trait Be: Sized + Copy {
    const N: usize;
    fn get(b: &[u8], at: usize) -> Self;
    fn put(self, b: &mut [u8], at: usize);
}

macro_rules! be_impl {
    ($($t:ty),*) => {$(
        impl Be for $t {
            const N: usize = std::mem::size_of::<$t>();
            #[inline(always)]
            fn get(b: &[u8], at: usize) -> $t {
                let mut a = [0u8; std::mem::size_of::<$t>()];
                a.copy_from_slice(&b[at..at + Self::N]);
                <$t>::from_be_bytes(a)
            }
            #[inline(always)]
            fn put(self, b: &mut [u8], at: usize) {
                b[at..at + Self::N].copy_from_slice(&self.to_be_bytes());
            }
        }
    )*};
}
be_impl!(u8, u16, u32, u64);

/// Declares a view type over a layout: `new_checked` (length checked once), `new_unchecked`
/// for callers that checked already, `into_inner`, `as_bytes`, and one getter (and, for
/// mutable buffers, one `set_` setter) per listed field, each reading the field's bytes at the
/// offset its `layout!` declaration gives. Every listed field must be whole bytes of a scalar
/// width (8, 16, 32, 64 bits): checked at compile time.
macro_rules! wire_view {
    (
        $(#[$meta:meta])*
        $name:ident over $layout:ident, $what:literal, $size:expr;
        $( $(#[$fmeta:meta])* $field:ident / $setter:ident : $ty:ty ),* $(,)?
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct $name<T: AsRef<[u8]>> {
            buffer: T,
        }

        impl<T: AsRef<[u8]>> $name<T> {
            /// Bytes this view reads.
            pub const SIZE: usize = $size;

            /// A view over `buffer`, which must hold at least [`Self::SIZE`] bytes.
            ///
            /// # Errors
            /// The buffer is shorter.
            #[inline]
            pub fn new_checked(buffer: T) -> Result<Self, $crate::mlx5::wire::ShortBuffer> {
                $crate::mlx5::wire::check_len($what, buffer.as_ref(), $size)?;
                Ok($name { buffer })
            }

            /// A view over `buffer` without a length check: the accessors panic if it is
            /// shorter than [`Self::SIZE`]. For buffers whose size is fixed by their type.
            #[inline]
            pub const fn new_unchecked(buffer: T) -> Self {
                $name { buffer }
            }

            /// The buffer.
            #[inline]
            pub fn into_inner(self) -> T {
                self.buffer
            }

            /// The bytes of the format (the first [`Self::SIZE`] of the buffer).
            #[inline]
            pub fn as_bytes(&self) -> &[u8] {
                &self.buffer.as_ref()[..$size]
            }

            $(
                $(#[$fmeta])*
                #[inline]
                pub fn $field(&self) -> $ty {
                    const AT: usize = $crate::mlx5::wire::byte_at($layout::$field);
                    const _: () = assert!(
                        $layout::$field.width() as usize == 8 * std::mem::size_of::<$ty>()
                    );
                    <$ty as $crate::mlx5::wire::Be>::get(self.buffer.as_ref(), AT)
                }
            )*
        }

        impl<T: AsRef<[u8]> + AsMut<[u8]>> $name<T> {
            $(
                #[doc = concat!("Sets `", stringify!($field), "`.")]
                #[inline]
                pub fn $setter(&mut self, v: $ty) {
                    const AT: usize = $crate::mlx5::wire::byte_at($layout::$field);
                    <$ty as $crate::mlx5::wire::Be>::put(v, self.buffer.as_mut(), AT)
                }
            )*

            /// The bytes of the format, writable.
            #[inline]
            pub fn as_bytes_mut(&mut self) -> &mut [u8] {
                &mut self.buffer.as_mut()[..$size]
            }
        }
    };
}
pub(crate) use wire_view;

#[cfg(test)]
pub(crate) mod test_util {
    /// A buffer of `n` bytes, every one 0xa5: a field an emit forgets to write, or one a parse
    /// reads from the wrong place, shows up as 0xa5 instead of the value.
    pub fn poisoned<const N: usize>() -> [u8; N] {
        [0xa5; N]
    }
}
