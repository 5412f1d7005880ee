//! One `RDMA_VERBS_IOCTL` call: its header and attributes read from the client, checked against
//! the method's attribute specification the way the kernel checks them, and the accessors the
//! method handlers use.
//!
//! The rules are those of Linux `drivers/infiniband/core/uverbs_ioctl.c`
//! (`uverbs_process_attr`, `uverbs_set_attr`, `ib_uverbs_run_method`): an attribute the method
//! does not know is ignored unless marked mandatory (`EPROTONOSUPPORT`); a duplicate is
//! `EINVAL`; an object or fd attribute must have `len` 0 and no `attr_data`; a pointer attribute
//! must be at least its minimum length and at most its length, except an input whose extra bytes
//! are all zero (`EOPNOTSUPP` otherwise); a missing mandatory attribute is `EINVAL`. Outputs are
//! copied with `copy_to_user` semantics (`EFAULT`) and flagged `UVERBS_ATTR_F_VALID_OUTPUT`; a new
//! object's handle and a new fd are written back into the attribute's `data`.

use mlx5_dpa::devx::kernel::abi::{
    ib_uverbs_attr, ib_uverbs_ioctl_hdr, parse_attrs, HeaderError, ATTR_LEN, HDR_LEN,
    UVERBS_ATTR_F_MANDATORY, UVERBS_ATTR_F_VALID_OUTPUT,
};
use nix::errno::Errno;

use crate::user;

/// What kind of attribute a method expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Input bytes: at least `min`, at most `max` (more only if the extra bytes are zero).
    In { min: u16, max: u16 },
    /// Output buffer: at least `min` bytes, at most `max` (`u16::MAX`: any).
    Out { min: u16, max: u16 },
    /// An existing object handle (or a new one, for the creating attribute).
    Obj,
    /// A file descriptor (in, or a new one out).
    Fd,
}

/// One attribute of a method's specification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spec {
    pub id: u16,
    pub kind: Kind,
    pub mandatory: bool,
}

/// A mandatory attribute.
pub const fn must(id: u16, kind: Kind) -> Spec {
    Spec {
        id,
        kind,
        mandatory: true,
    }
}

/// An optional attribute.
pub const fn may(id: u16, kind: Kind) -> Spec {
    Spec {
        id,
        kind,
        mandatory: false,
    }
}

/// An input of `min` to `max` bytes.
pub const fn input_range(min: u16, max: u16) -> Kind {
    Kind::In { min, max }
}

/// An output of at least `n` bytes.
pub const fn output(n: u16) -> Kind {
    Kind::Out {
        min: n,
        max: u16::MAX,
    }
}

/// A driver-data input (`UVERBS_ATTR_UHW_IN`): any length.
pub const UHW: Kind = Kind::In {
    min: 0,
    max: u16::MAX,
};
/// A driver-data output (`UVERBS_ATTR_UHW_OUT`): any length.
pub const UHW_OUT: Kind = Kind::Out {
    min: 0,
    max: u16::MAX,
};

/// The call as read from the client.
#[derive(Debug)]
pub struct Call {
    /// The client's address of the header (attributes follow it).
    pub arg: u64,
    pub hdr: ib_uverbs_ioctl_hdr,
    pub attrs: Vec<ib_uverbs_attr>,
}

impl Call {
    /// Reads the header and attributes at the client's address `arg`.
    ///
    /// # Errors
    /// `EFAULT` for unreadable memory; the header errors of `ib_uverbs_ioctl`.
    pub fn read(arg: u64) -> Result<Call, Errno> {
        let head = user::read(arg, HDR_LEN)?;
        let hdr = ib_uverbs_ioctl_hdr::parse(&head).map_err(|e| match e {
            HeaderError::Length | HeaderError::Driver => Errno::EINVAL,
            HeaderError::Reserved => Errno::EPROTONOSUPPORT,
        })?;
        let n = usize::from(hdr.num_attrs);
        let raw = user::read(arg + HDR_LEN as u64, n * ATTR_LEN)?;
        let attrs = parse_attrs(&raw, n).ok_or(Errno::EFAULT)?;
        Ok(Call { arg, hdr, attrs })
    }

    /// Checks the attributes against a method's specification.
    ///
    /// # Errors
    /// The kernel's errno for the first attribute it would refuse.
    pub fn check(&self, spec: &[Spec]) -> Result<(), Errno> {
        let mut seen: Vec<u16> = Vec::with_capacity(self.attrs.len());
        for a in &self.attrs {
            let Some(s) = spec.iter().find(|s| s.id == a.attr_id) else {
                if a.flags & UVERBS_ATTR_F_MANDATORY != 0 {
                    return Err(Errno::EPROTONOSUPPORT);
                }
                continue;
            };
            if seen.contains(&a.attr_id) {
                return Err(Errno::EINVAL);
            }
            seen.push(a.attr_id);
            match s.kind {
                Kind::Obj | Kind::Fd => {
                    if a.len != 0 || a.attr_data != 0 {
                        return Err(Errno::EINVAL);
                    }
                }
                Kind::In { min, max } => {
                    if a.len < min || a.attr_data != 0 {
                        return Err(Errno::EINVAL);
                    }
                    if a.len > max && !self.trailing_zero(a, max)? {
                        return Err(Errno::EOPNOTSUPP);
                    }
                }
                Kind::Out { min, max } => {
                    if a.len < min || a.len > max || a.attr_data != 0 {
                        return Err(Errno::EINVAL);
                    }
                }
            }
        }
        if spec.iter().any(|s| s.mandatory && !seen.contains(&s.id)) {
            return Err(Errno::EINVAL);
        }
        Ok(())
    }

    fn trailing_zero(&self, a: &ib_uverbs_attr, from: u16) -> Result<bool, Errno> {
        let bytes = self.in_bytes(a)?;
        Ok(bytes[usize::from(from)..].iter().all(|&b| b == 0))
    }

    fn in_bytes(&self, a: &ib_uverbs_attr) -> Result<Vec<u8>, Errno> {
        if usize::from(a.len) <= 8 {
            Ok(a.data.to_ne_bytes()[..usize::from(a.len)].to_vec())
        } else {
            user::read(a.data, usize::from(a.len))
        }
    }

    fn find(&self, id: u16) -> Option<(usize, &ib_uverbs_attr)> {
        self.attrs.iter().enumerate().find(|(_, a)| a.attr_id == id)
    }

    /// Whether attribute `id` is present.
    pub fn has(&self, id: u16) -> bool {
        self.find(id).is_some()
    }

    /// The bytes of input attribute `id` (inline up to 8 bytes, else read from the client).
    ///
    /// # Errors
    /// `EFAULT` for an unreadable pointer.
    pub fn bytes(&self, id: u16) -> Result<Option<Vec<u8>>, Errno> {
        match self.find(id) {
            Some((_, a)) => self.in_bytes(a).map(Some),
            None => Ok(None),
        }
    }

    /// A constant input (`u8` .. `u64`, inline), zero-extended.
    pub fn value(&self, id: u16) -> Option<u64> {
        let (_, a) = self.find(id)?;
        let b = a.data.to_ne_bytes();
        Some(match a.len {
            1 => u64::from(b[0]),
            2 => u64::from(u16::from_ne_bytes([b[0], b[1]])),
            4 => u64::from(u32::from_ne_bytes([b[0], b[1], b[2], b[3]])),
            _ => a.data,
        })
    }

    /// An object-handle or fd attribute's value.
    pub fn handle(&self, id: u16) -> Option<u64> {
        self.find(id).map(|(_, a)| a.data)
    }

    /// An fd attribute (its `data` is an `s64`).
    pub fn fd(&self, id: u16) -> Option<i32> {
        self.find(id)
            .and_then(|(_, a)| i32::try_from(a.data as i64).ok())
    }

    /// The length of output attribute `id`.
    pub fn out_len(&self, id: u16) -> Option<usize> {
        self.find(id).map(|(_, a)| usize::from(a.len))
    }

    fn set_flags(&self, index: usize, flags: u16) -> Result<(), Errno> {
        let at = self.arg + (HDR_LEN + index * ATTR_LEN + 4) as u64;
        user::write(at, &flags.to_ne_bytes())
    }

    /// Copies `data` into output attribute `id` (at most its length; the rest of the buffer is
    /// zeroed, as `uverbs_copy_to_struct_or_zero`) and flags it written. Absent: nothing.
    ///
    /// # Errors
    /// `EFAULT`.
    pub fn out(&self, id: u16, data: &[u8]) -> Result<(), Errno> {
        let Some((i, a)) = self.find(id) else {
            return Ok(());
        };
        let len = usize::from(a.len);
        let mut buf = data[..data.len().min(len)].to_vec();
        buf.resize(len, 0);
        user::write(a.data, &buf)?;
        self.set_flags(i, a.flags | UVERBS_ATTR_F_VALID_OUTPUT)
    }

    /// Writes a new object's handle (or a new fd) into attribute `id`'s `data`.
    ///
    /// # Errors
    /// `EFAULT`.
    pub fn set_data(&self, id: u16, value: u64) -> Result<(), Errno> {
        let Some((i, _)) = self.find(id) else {
            return Err(Errno::EINVAL);
        };
        let at = self.arg + (HDR_LEN + i * ATTR_LEN + 8) as u64;
        user::write(at, &value.to_ne_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mlx5_dpa::devx::kernel::abi::{Attr, IoctlBuf};

    const fn input(n: u16) -> Kind {
        Kind::In { min: n, max: n }
    }

    fn call_of(buf: &mut IoctlBuf) -> Call {
        Call::read(buf.as_mut_ptr() as u64).unwrap()
    }

    const SPEC: &[Spec] = &[
        must(0x1000, Kind::Obj),
        must(0x1001, input_range(16, 64)),
        may(0x1002, output(16)),
        may(0x1003, input(4)),
    ];

    #[test]
    fn the_kernels_attribute_rules() {
        let cmd = [0u8; 20];
        let mut out = [0u8; 32];
        let ok = |extra: &[Attr]| {
            let mut attrs = vec![
                Attr::Obj {
                    id: 0x1000,
                    handle: 0,
                },
                Attr::input(0x1001, &cmd),
            ];
            attrs.extend_from_slice(extra);
            let mut b = IoctlBuf::build(0x1001, 0x1000, &attrs);
            call_of(&mut b).check(SPEC)
        };
        assert_eq!(ok(&[]), Ok(()));
        // An unknown mandatory attribute: the method is not supported.
        assert_eq!(
            ok(&[Attr::U32 {
                id: 0x1009,
                value: 1
            }]),
            Err(Errno::EPROTONOSUPPORT)
        );
        // A duplicate.
        assert_eq!(ok(&[Attr::input(0x1001, &cmd)]), Err(Errno::EINVAL));
        // Too short an output.
        let short = Attr::Out {
            id: 0x1002,
            addr: out.as_mut_ptr() as u64,
            len: 8,
        };
        assert_eq!(ok(&[short]), Err(Errno::EINVAL));
        // A constant of the wrong size.
        // A longer input than the method knows: fine if the extra bytes are zero, else not.
        assert_eq!(
            ok(&[Attr::U64 {
                id: 0x1003,
                value: 1
            }]),
            Ok(())
        );
        assert_eq!(
            ok(&[Attr::U64 {
                id: 0x1003,
                value: 1 << 40
            }]),
            Err(Errno::EOPNOTSUPP)
        );
        // A missing mandatory attribute.
        let mut b = IoctlBuf::build(0x1001, 0x1000, &[Attr::input(0x1001, &cmd)]);
        assert_eq!(call_of(&mut b).check(SPEC), Err(Errno::EINVAL));
        // An input pointer to nowhere.
        let mut b = IoctlBuf::build(
            0x1001,
            0x1000,
            &[
                Attr::Obj {
                    id: 0x1000,
                    handle: 0,
                },
                Attr::In {
                    id: 0x1001,
                    addr: 16,
                    len: 100,
                    inline: None,
                },
            ],
        );
        assert_eq!(call_of(&mut b).check(SPEC), Err(Errno::EFAULT));
    }

    #[test]
    fn outputs_are_flagged_and_handles_written_back() {
        let mut out = [0xa5u8; 24];
        let mut b = IoctlBuf::build(
            0x1001,
            0x1000,
            &[
                Attr::Obj {
                    id: 0x1000,
                    handle: 0,
                },
                Attr::Out {
                    id: 0x1002,
                    addr: out.as_mut_ptr() as u64,
                    len: 24,
                },
            ],
        );
        let c = call_of(&mut b);
        c.out(0x1002, &[1, 2, 3]).unwrap();
        c.set_data(0x1000, 42).unwrap();
        assert_eq!(&out[..4], &[1, 2, 3, 0]);
        assert!(out[3..].iter().all(|&x| x == 0));
        assert_eq!(b.attr_data(0), Some(42));
        assert_eq!(
            b.attr_flags(1),
            Some(UVERBS_ATTR_F_MANDATORY | UVERBS_ATTR_F_VALID_OUTPUT)
        );
    }
}
