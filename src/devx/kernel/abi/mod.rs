//! The uverbs ioctl ABI as data: ids, and the exact bytes of an `RDMA_VERBS_IOCTL` buffer.
//!
//! Sources (docs/sources.md §1): rdma-core `kernel-headers/rdma/rdma_user_ioctl_cmds.h`
//! (`ib_uverbs_ioctl_hdr`, `ib_uverbs_attr`), `kernel-headers/rdma/mlx5_user_ioctl_cmds.h`
//! (mlx5 object / method / attribute ids), `kernel-headers/rdma/ib_user_ioctl_cmds.h` (core
//! ids), `libibverbs/cmd_ioctl.h` (how each attribute kind is filled).
//!
//! This module is pure: [`IoctlBuf::build`] turns a method call into bytes, which the golden
//! tests compare with vectors derived by hand from the ABI. Pointers are plain `u64` values here.

/// `RDMA_VERBS_IOCTL = _IOWR(0x1b, 1, struct ib_uverbs_ioctl_hdr)` (24-byte header).
pub const RDMA_VERBS_IOCTL: u64 = 0xc018_1b01;
/// `RDMA_DRIVER_MLX5`.
pub const RDMA_DRIVER_MLX5: u32 = 1;
/// `UVERBS_ATTR_F_MANDATORY`.
pub const UVERBS_ATTR_F_MANDATORY: u16 = 1;
/// `UVERBS_ATTR_F_VALID_OUTPUT`: set by the kernel on outputs it wrote.
pub const UVERBS_ATTR_F_VALID_OUTPUT: u16 = 2;
/// Size of `ib_uverbs_ioctl_hdr`.
pub const HDR_LEN: usize = 24;
/// Size of `ib_uverbs_attr`.
pub const ATTR_LEN: usize = 16;

pub mod ids;
pub mod mlx5;
pub mod write;

pub use ids::{core_ids, mlx5_ids};

/// How one attribute is filled (rdma-core `cmd_ioctl.h` `fill_attr_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attr {
    /// Input buffer: inlined in `data` when at most 8 bytes, else a pointer.
    In {
        id: u16,
        addr: u64,
        len: u16,
        inline: Option<[u8; 8]>,
    },
    /// Output buffer the kernel writes: pointer and length.
    Out { id: u16, addr: u64, len: u16 },
    /// A u32 constant, inlined (`fill_attr_in_uint32`).
    U32 { id: u16, value: u32 },
    /// A u64 constant, inlined (`fill_attr_in_uint64` / `fill_attr_const_in`).
    U64 { id: u16, value: u64 },
    /// An existing object handle (`fill_attr_in_obj`), or 0 for a new one (`fill_attr_out_obj`).
    Obj { id: u16, handle: u32 },
    /// A file descriptor input (`fill_attr_in_fd`) or a new fd output (value 0).
    Fd { id: u16, fd: i32 },
}

impl Attr {
    /// Input from a byte slice at `addr` (the caller keeps it alive for the ioctl).
    pub fn input(id: u16, bytes: &[u8]) -> Attr {
        let len = bytes.len().min(u16::MAX as usize) as u16;
        let inline = (bytes.len() <= 8).then(|| {
            let mut d = [0u8; 8];
            d[..bytes.len()].copy_from_slice(bytes);
            d
        });
        Attr::In {
            id,
            addr: bytes.as_ptr() as u64,
            len,
            inline,
        }
    }

    fn encode(&self, out: &mut [u8; ATTR_LEN]) {
        let (id, len, data): (u16, u16, [u8; 8]) = match *self {
            Attr::In {
                id,
                addr,
                len,
                inline,
            } => (id, len, inline.unwrap_or(addr.to_ne_bytes())),
            Attr::Out { id, addr, len } => (id, len, addr.to_ne_bytes()),
            Attr::U32 { id, value } => {
                let mut d = [0u8; 8];
                d[..4].copy_from_slice(&value.to_ne_bytes());
                (id, 4, d)
            }
            Attr::U64 { id, value } => (id, 8, value.to_ne_bytes()),
            Attr::Obj { id, handle } => (id, 0, u64::from(handle).to_ne_bytes()),
            Attr::Fd { id, fd } => (id, 0, i64::from(fd).to_ne_bytes()),
        };
        out[0..2].copy_from_slice(&id.to_ne_bytes());
        out[2..4].copy_from_slice(&len.to_ne_bytes());
        out[4..6].copy_from_slice(&UVERBS_ATTR_F_MANDATORY.to_ne_bytes());
        out[6..8].copy_from_slice(&0u16.to_ne_bytes());
        out[8..16].copy_from_slice(&data);
    }
}

/// An `RDMA_VERBS_IOCTL` argument: header followed by the attributes, 8-byte aligned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IoctlBuf {
    words: Vec<u64>,
}

impl IoctlBuf {
    /// Builds the buffer for `object.method(attrs)`.
    pub fn build(object_id: u16, method_id: u16, attrs: &[Attr]) -> IoctlBuf {
        let len = HDR_LEN + ATTR_LEN * attrs.len();
        let mut bytes = vec![0u8; len];
        bytes[0..2].copy_from_slice(&(len as u16).to_ne_bytes());
        bytes[2..4].copy_from_slice(&object_id.to_ne_bytes());
        bytes[4..6].copy_from_slice(&method_id.to_ne_bytes());
        bytes[6..8].copy_from_slice(&(attrs.len() as u16).to_ne_bytes());
        // reserved1 (u64) stays 0.
        bytes[16..20].copy_from_slice(&RDMA_DRIVER_MLX5.to_ne_bytes());
        // reserved2 (u32) stays 0.
        for (i, a) in attrs.iter().enumerate() {
            let mut raw = [0u8; ATTR_LEN];
            a.encode(&mut raw);
            let s = HDR_LEN + i * ATTR_LEN;
            bytes[s..s + ATTR_LEN].copy_from_slice(&raw);
        }
        let words = bytes
            .chunks_exact(8)
            .map(|c| u64::from_ne_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
            .collect();
        IoctlBuf { words }
    }

    /// The bytes, as the kernel reads them.
    pub fn bytes(&self) -> Vec<u8> {
        self.words.iter().flat_map(|w| w.to_ne_bytes()).collect()
    }

    /// Pointer for the ioctl (8-byte aligned).
    pub fn as_mut_ptr(&mut self) -> *mut u64 {
        self.words.as_mut_ptr()
    }

    /// The `data` word of attribute `i` after the kernel wrote it (new handles and fds).
    pub fn attr_data(&self, i: usize) -> Option<u64> {
        self.words.get((HDR_LEN + i * ATTR_LEN) / 8 + 1).copied()
    }

    /// The `flags` of attribute `i` (the kernel sets `UVERBS_ATTR_F_VALID_OUTPUT`).
    pub fn attr_flags(&self, i: usize) -> Option<u16> {
        let w = self.words.get((HDR_LEN + i * ATTR_LEN) / 8)?;
        let b = w.to_ne_bytes();
        Some(u16::from_ne_bytes([b[4], b[5]]))
    }
}

/// `struct ib_uverbs_ioctl_hdr` (24 bytes), as the kernel reads it from the ioctl's argument.
#[allow(non_camel_case_types)]
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    zerocopy::FromBytes,
    zerocopy::IntoBytes,
    zerocopy::Immutable,
    zerocopy::KnownLayout,
)]
#[repr(C)]
pub struct ib_uverbs_ioctl_hdr {
    pub length: u16,
    pub object_id: u16,
    pub method_id: u16,
    pub num_attrs: u16,
    pub reserved1: u64,
    pub driver_id: u32,
    pub reserved2: u32,
}
const _: () = assert!(core::mem::size_of::<ib_uverbs_ioctl_hdr>() == HDR_LEN);

/// `struct ib_uverbs_attr` (16 bytes): `attr_data` is the union of `enum_data` (`elem_id` in the
/// low byte) and `reserved`.
#[allow(non_camel_case_types)]
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    zerocopy::FromBytes,
    zerocopy::IntoBytes,
    zerocopy::Immutable,
    zerocopy::KnownLayout,
)]
#[repr(C)]
pub struct ib_uverbs_attr {
    pub attr_id: u16,
    pub len: u16,
    pub flags: u16,
    pub attr_data: u16,
    pub data: u64,
}
const _: () = assert!(core::mem::size_of::<ib_uverbs_attr>() == ATTR_LEN);

/// Largest `RDMA_VERBS_IOCTL` argument the kernel takes (`hdr.length > PAGE_SIZE` is refused).
pub const MAX_IOCTL_LEN: usize = 4096;

/// Why the kernel refuses an ioctl header before it looks at the method (`ib_uverbs_ioctl` in
/// Linux `drivers/infiniband/core/uverbs_ioctl.c`), with the errno it returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderError {
    /// `length` is over a page or is not 24 + 16 * `num_attrs`: `EINVAL`.
    Length,
    /// `reserved1` or `reserved2` is set: `EPROTONOSUPPORT`.
    Reserved,
    /// `driver_id` is not the device's (`ib_uverbs_cmd_verbs`): `EINVAL`.
    Driver,
}

impl ib_uverbs_ioctl_hdr {
    /// Reads a header and checks it as `ib_uverbs_ioctl` / `ib_uverbs_cmd_verbs` do.
    ///
    /// # Errors
    /// [`HeaderError`]; a buffer shorter than the header is [`HeaderError::Length`].
    pub fn parse(bytes: &[u8]) -> Result<ib_uverbs_ioctl_hdr, HeaderError> {
        use zerocopy::FromBytes;
        let (h, _) =
            ib_uverbs_ioctl_hdr::read_from_prefix(bytes).map_err(|_| HeaderError::Length)?;
        if usize::from(h.length) > MAX_IOCTL_LEN
            || usize::from(h.length) != HDR_LEN + ATTR_LEN * usize::from(h.num_attrs)
        {
            return Err(HeaderError::Length);
        }
        if h.reserved1 != 0 || h.reserved2 != 0 {
            return Err(HeaderError::Reserved);
        }
        if h.driver_id != RDMA_DRIVER_MLX5 {
            return Err(HeaderError::Driver);
        }
        Ok(h)
    }
}

/// The attributes that follow a header (`num_attrs` of them, 16 bytes each).
///
/// # Errors
/// `None` when `bytes` holds fewer than `n` attributes.
pub fn parse_attrs(bytes: &[u8], n: usize) -> Option<Vec<ib_uverbs_attr>> {
    use zerocopy::FromBytes;
    let need = n.checked_mul(ATTR_LEN)?;
    let b = bytes.get(..need)?;
    b.chunks_exact(ATTR_LEN)
        .map(|c| ib_uverbs_attr::read_from_bytes(c).ok())
        .collect()
}

/// `struct mlx5_ib_alloc_ucontext_req_v2` (32 bytes) as rdma-core sends it for DevX
/// ([`mlx5::devx_ucontext_req`]).
pub fn alloc_ucontext_req() -> [u8; 32] {
    use zerocopy::IntoBytes;
    let mut r = [0u8; 32];
    r.copy_from_slice(mlx5::devx_ucontext_req().as_bytes());
    r
}

/// Size of `struct mlx5_ib_alloc_ucontext_resp` (rdma-core `kernel-headers/rdma/mlx5-abi.h`).
pub const ALLOC_UCONTEXT_RESP_LEN: usize =
    core::mem::size_of::<mlx5::mlx5_ib_alloc_ucontext_resp>();

/// `struct mlx5_ib_uapi_devx_async_event_hdr`: a u64 cookie, then the EQE.
pub const ASYNC_EVENT_HDR_LEN: usize = 8;

#[cfg(test)]
mod tests {
    use super::mlx5_ids::*;
    use super::*;

    /// What the kernel backend emits, the server parses back: every kind of attribute.
    #[test]
    fn built_buffers_parse_back() {
        let payload = [7u8; 40];
        let attrs = [
            Attr::Obj {
                id: MLX5_IB_ATTR_DEVX_OBJ_HANDLE,
                handle: 0,
            },
            Attr::input(MLX5_IB_ATTR_DEVX_OBJ_CMD_IN, &payload),
            Attr::input(0x1003, &[1, 2, 3]),
            Attr::Out {
                id: MLX5_IB_ATTR_DEVX_OBJ_CMD_OUT,
                addr: 0x5000,
                len: 0x100,
            },
            Attr::U32 {
                id: 7,
                value: 0xdead_beef,
            },
            Attr::U64 {
                id: 8,
                value: u64::MAX,
            },
            Attr::Fd { id: 9, fd: 3 },
        ];
        let buf = IoctlBuf::build(
            MLX5_IB_OBJECT_DEVX_OBJ,
            MLX5_IB_METHOD_DEVX_OBJ_CREATE,
            &attrs,
        );
        let bytes = buf.bytes();
        let h = ib_uverbs_ioctl_hdr::parse(&bytes).unwrap();
        assert_eq!(
            (h.object_id, h.method_id, h.num_attrs, usize::from(h.length)),
            (
                MLX5_IB_OBJECT_DEVX_OBJ,
                MLX5_IB_METHOD_DEVX_OBJ_CREATE,
                7,
                bytes.len()
            )
        );
        let got = parse_attrs(&bytes[HDR_LEN..], 7).unwrap();
        assert_eq!(got[0].attr_id, MLX5_IB_ATTR_DEVX_OBJ_HANDLE);
        assert_eq!((got[0].len, got[0].data), (0, 0));
        assert_eq!((got[1].len, got[1].data), (40, payload.as_ptr() as u64));
        // Three bytes are inlined, little-endian in `data`.
        assert_eq!((got[2].len, got[2].data), (3, 0x03_02_01));
        assert_eq!((got[3].len, got[3].data), (0x100, 0x5000));
        assert_eq!((got[4].len, got[4].data), (4, 0xdead_beef));
        assert_eq!((got[5].len, got[5].data), (8, u64::MAX));
        assert_eq!((got[6].len, got[6].data), (0, 3));
        assert!(got.iter().all(|a| a.flags == UVERBS_ATTR_F_MANDATORY));
        assert!(parse_attrs(&bytes[HDR_LEN..], 8).is_none());
    }

    #[test]
    fn headers_the_kernel_refuses() {
        let ok = IoctlBuf::build(0, 3, &[]).bytes();
        assert!(ib_uverbs_ioctl_hdr::parse(&ok).is_ok());
        let mut b = ok.clone();
        b[0] = 23; // length not 24 + 16 n
        assert_eq!(ib_uverbs_ioctl_hdr::parse(&b), Err(HeaderError::Length));
        let mut b = ok.clone();
        b[8] = 1; // reserved1
        assert_eq!(ib_uverbs_ioctl_hdr::parse(&b), Err(HeaderError::Reserved));
        let mut b = ok.clone();
        b[16] = 4; // driver_id
        assert_eq!(ib_uverbs_ioctl_hdr::parse(&b), Err(HeaderError::Driver));
        assert_eq!(
            ib_uverbs_ioctl_hdr::parse(&ok[..10]),
            Err(HeaderError::Length)
        );
        // 300 attributes would be over a page.
        let mut b = ok.clone();
        b[0..2].copy_from_slice(&((24 + 16 * 300) as u16).to_ne_bytes());
        b[6..8].copy_from_slice(&300u16.to_ne_bytes());
        assert_eq!(ib_uverbs_ioctl_hdr::parse(&b), Err(HeaderError::Length));
    }

    /// Hand-derived little-endian bytes (x86_64 and aarch64 are both little-endian).
    fn le16(v: u16) -> [u8; 2] {
        v.to_le_bytes()
    }

    fn header(len: u16, obj: u16, method: u16, n: u16) -> Vec<u8> {
        let mut h = Vec::new();
        h.extend(le16(len));
        h.extend(le16(obj));
        h.extend(le16(method));
        h.extend(le16(n));
        h.extend([0u8; 8]);
        h.extend([1, 0, 0, 0]);
        h.extend([0u8; 4]);
        h
    }

    fn attr(id: u16, len: u16, data: [u8; 8]) -> Vec<u8> {
        let mut a = Vec::new();
        a.extend(le16(id));
        a.extend(le16(len));
        a.extend([1, 0, 0, 0]); // flags MANDATORY, attr_data 0
        a.extend(data);
        a
    }

    #[cfg(target_endian = "little")]
    #[test]
    fn golden_devx_other() {
        let inbox = [0u8; 16];
        let b = IoctlBuf::build(
            MLX5_IB_OBJECT_DEVX,
            MLX5_IB_METHOD_DEVX_OTHER,
            &[
                Attr::In {
                    id: MLX5_IB_ATTR_DEVX_OTHER_CMD_IN,
                    addr: 0x1111_2222_3333_4440,
                    len: 16,
                    inline: None,
                },
                Attr::Out {
                    id: MLX5_IB_ATTR_DEVX_OTHER_CMD_OUT,
                    addr: 0x5555_6666_7777_8880,
                    len: 0x1010,
                },
            ],
        );
        let mut want = header(24 + 32, 0x1000, 0x1000, 2);
        want.extend(attr(
            0x1000,
            16,
            [0x40, 0x44, 0x33, 0x33, 0x22, 0x22, 0x11, 0x11],
        ));
        want.extend(attr(
            0x1001,
            0x1010,
            [0x80, 0x88, 0x77, 0x77, 0x66, 0x66, 0x55, 0x55],
        ));
        assert_eq!(b.bytes(), want);
        assert_eq!(inbox.len(), 16);
    }

    #[cfg(target_endian = "little")]
    #[test]
    fn golden_obj_create_destroy_modify_query() {
        let b = IoctlBuf::build(
            MLX5_IB_OBJECT_DEVX_OBJ,
            MLX5_IB_METHOD_DEVX_OBJ_CREATE,
            &[
                Attr::Obj {
                    id: MLX5_IB_ATTR_DEVX_OBJ_HANDLE,
                    handle: 0,
                },
                Attr::In {
                    id: MLX5_IB_ATTR_DEVX_OBJ_CMD_IN,
                    addr: 0x1000,
                    len: 0x110,
                    inline: None,
                },
                Attr::Out {
                    id: MLX5_IB_ATTR_DEVX_OBJ_CMD_OUT,
                    addr: 0x2000,
                    len: 0x10,
                },
            ],
        );
        let mut want = header(72, 0x1001, 0x1000, 3);
        want.extend(attr(0x1000, 0, [0; 8]));
        want.extend(attr(0x1001, 0x110, [0x00, 0x10, 0, 0, 0, 0, 0, 0]));
        want.extend(attr(0x1002, 0x10, [0x00, 0x20, 0, 0, 0, 0, 0, 0]));
        assert_eq!(b.bytes(), want);

        let b = IoctlBuf::build(
            MLX5_IB_OBJECT_DEVX_OBJ,
            MLX5_IB_METHOD_DEVX_OBJ_DESTROY,
            &[Attr::Obj {
                id: 0x1000,
                handle: 7,
            }],
        );
        let mut want = header(40, 0x1001, 0x1001, 1);
        want.extend(attr(0x1000, 0, [7, 0, 0, 0, 0, 0, 0, 0]));
        assert_eq!(b.bytes(), want);

        for method in [
            MLX5_IB_METHOD_DEVX_OBJ_MODIFY,
            MLX5_IB_METHOD_DEVX_OBJ_QUERY,
        ] {
            let b = IoctlBuf::build(
                MLX5_IB_OBJECT_DEVX_OBJ,
                method,
                &[
                    Attr::Obj {
                        id: 0x1000,
                        handle: 9,
                    },
                    Attr::In {
                        id: 0x1001,
                        addr: 0x3000,
                        len: 0x20,
                        inline: None,
                    },
                    Attr::Out {
                        id: 0x1002,
                        addr: 0x4000,
                        len: 0x220,
                    },
                ],
            );
            let mut want = header(72, 0x1001, method, 3);
            want.extend(attr(0x1000, 0, [9, 0, 0, 0, 0, 0, 0, 0]));
            want.extend(attr(0x1001, 0x20, [0x00, 0x30, 0, 0, 0, 0, 0, 0]));
            want.extend(attr(0x1002, 0x220, [0x00, 0x40, 0, 0, 0, 0, 0, 0]));
            assert_eq!(b.bytes(), want);
        }
    }

    #[cfg(target_endian = "little")]
    #[test]
    fn golden_umem_reg_dereg() {
        let b = IoctlBuf::build(
            MLX5_IB_OBJECT_DEVX_UMEM,
            MLX5_IB_METHOD_DEVX_UMEM_REG,
            &[
                Attr::U64 {
                    id: MLX5_IB_ATTR_DEVX_UMEM_REG_ADDR,
                    value: 0x7f00_0000_1000,
                },
                Attr::U64 {
                    id: MLX5_IB_ATTR_DEVX_UMEM_REG_LEN,
                    value: 0x2000,
                },
                Attr::U32 {
                    id: MLX5_IB_ATTR_DEVX_UMEM_REG_ACCESS,
                    value: 7,
                },
                Attr::U64 {
                    id: MLX5_IB_ATTR_DEVX_UMEM_REG_PGSZ_BITMAP,
                    value: 0x1000,
                },
                Attr::Out {
                    id: MLX5_IB_ATTR_DEVX_UMEM_REG_OUT_ID,
                    addr: 0x5000,
                    len: 4,
                },
                Attr::Obj {
                    id: MLX5_IB_ATTR_DEVX_UMEM_REG_HANDLE,
                    handle: 0,
                },
            ],
        );
        let mut want = header(24 + 96, 0x1002, 0x1000, 6);
        want.extend(attr(0x1001, 8, [0x00, 0x10, 0, 0, 0x00, 0x7f, 0, 0]));
        want.extend(attr(0x1002, 8, [0x00, 0x20, 0, 0, 0, 0, 0, 0]));
        want.extend(attr(0x1003, 4, [7, 0, 0, 0, 0, 0, 0, 0]));
        want.extend(attr(0x1005, 8, [0x00, 0x10, 0, 0, 0, 0, 0, 0]));
        want.extend(attr(0x1004, 4, [0x00, 0x50, 0, 0, 0, 0, 0, 0]));
        want.extend(attr(0x1000, 0, [0; 8]));
        assert_eq!(b.bytes(), want);

        let b = IoctlBuf::build(
            MLX5_IB_OBJECT_DEVX_UMEM,
            MLX5_IB_METHOD_DEVX_UMEM_DEREG,
            &[Attr::Obj {
                id: 0x1000,
                handle: 3,
            }],
        );
        let mut want = header(40, 0x1002, 0x1001, 1);
        want.extend(attr(0x1000, 0, [3, 0, 0, 0, 0, 0, 0, 0]));
        assert_eq!(b.bytes(), want);
    }

    #[cfg(target_endian = "little")]
    #[test]
    fn golden_uar_alloc_destroy() {
        let b = IoctlBuf::build(
            MLX5_IB_OBJECT_UAR,
            MLX5_IB_METHOD_UAR_OBJ_ALLOC,
            &[
                Attr::Obj {
                    id: MLX5_IB_ATTR_UAR_OBJ_ALLOC_HANDLE,
                    handle: 0,
                },
                Attr::U64 {
                    id: MLX5_IB_ATTR_UAR_OBJ_ALLOC_TYPE,
                    value: 1,
                },
                Attr::Out {
                    id: MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_OFFSET,
                    addr: 0x6000,
                    len: 8,
                },
                Attr::Out {
                    id: MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_LENGTH,
                    addr: 0x6008,
                    len: 4,
                },
                Attr::Out {
                    id: MLX5_IB_ATTR_UAR_OBJ_ALLOC_PAGE_ID,
                    addr: 0x600c,
                    len: 4,
                },
            ],
        );
        let mut want = header(24 + 80, 0x1008, 0x1000, 5);
        want.extend(attr(0x1000, 0, [0; 8]));
        want.extend(attr(0x1001, 8, [1, 0, 0, 0, 0, 0, 0, 0]));
        want.extend(attr(0x1002, 8, [0x00, 0x60, 0, 0, 0, 0, 0, 0]));
        want.extend(attr(0x1003, 4, [0x08, 0x60, 0, 0, 0, 0, 0, 0]));
        want.extend(attr(0x1004, 4, [0x0c, 0x60, 0, 0, 0, 0, 0, 0]));
        assert_eq!(b.bytes(), want);

        let b = IoctlBuf::build(
            MLX5_IB_OBJECT_UAR,
            MLX5_IB_METHOD_UAR_OBJ_DESTROY,
            &[Attr::Obj {
                id: 0x1000,
                handle: 2,
            }],
        );
        let mut want = header(40, 0x1008, 0x1001, 1);
        want.extend(attr(0x1000, 0, [2, 0, 0, 0, 0, 0, 0, 0]));
        assert_eq!(b.bytes(), want);
    }

    #[cfg(target_endian = "little")]
    #[test]
    fn golden_query_eqn_events_and_context() {
        let b = IoctlBuf::build(
            MLX5_IB_OBJECT_DEVX,
            MLX5_IB_METHOD_DEVX_QUERY_EQN,
            &[
                Attr::U32 {
                    id: MLX5_IB_ATTR_DEVX_QUERY_EQN_USER_VEC,
                    value: 2,
                },
                Attr::Out {
                    id: MLX5_IB_ATTR_DEVX_QUERY_EQN_DEV_EQN,
                    addr: 0x7000,
                    len: 4,
                },
            ],
        );
        let mut want = header(56, 0x1000, 0x1002, 2);
        want.extend(attr(0x1000, 4, [2, 0, 0, 0, 0, 0, 0, 0]));
        want.extend(attr(0x1001, 4, [0x00, 0x70, 0, 0, 0, 0, 0, 0]));
        assert_eq!(b.bytes(), want);

        let b = IoctlBuf::build(
            MLX5_IB_OBJECT_DEVX_ASYNC_EVENT_FD,
            MLX5_IB_METHOD_DEVX_ASYNC_EVENT_FD_ALLOC,
            &[
                Attr::Fd {
                    id: MLX5_IB_ATTR_DEVX_ASYNC_EVENT_FD_ALLOC_HANDLE,
                    fd: 0,
                },
                Attr::U32 {
                    id: MLX5_IB_ATTR_DEVX_ASYNC_EVENT_FD_ALLOC_FLAGS,
                    value: 0,
                },
            ],
        );
        let mut want = header(56, 0x1005, 0x1000, 2);
        want.extend(attr(0x1000, 0, [0; 8]));
        want.extend(attr(0x1001, 4, [0; 8]));
        assert_eq!(b.bytes(), want);

        // Two event types (u16 each): 4 bytes, inlined in data.
        let types = [0x0u16.to_ne_bytes(), 0x1au16.to_ne_bytes()].concat();
        let b = IoctlBuf::build(
            MLX5_IB_OBJECT_DEVX,
            MLX5_IB_METHOD_DEVX_SUBSCRIBE_EVENT,
            &[
                Attr::Fd {
                    id: MLX5_IB_ATTR_DEVX_SUBSCRIBE_EVENT_FD_HANDLE,
                    fd: 5,
                },
                Attr::U64 {
                    id: MLX5_IB_ATTR_DEVX_SUBSCRIBE_EVENT_COOKIE,
                    value: 0xc00c1e,
                },
                Attr::Obj {
                    id: MLX5_IB_ATTR_DEVX_SUBSCRIBE_EVENT_OBJ_HANDLE,
                    handle: 4,
                },
                Attr::input(MLX5_IB_ATTR_DEVX_SUBSCRIBE_EVENT_TYPE_NUM_LIST, &types),
            ],
        );
        let mut want = header(88, 0x1000, 0x1003, 4);
        want.extend(attr(0x1000, 0, [5, 0, 0, 0, 0, 0, 0, 0]));
        want.extend(attr(0x1004, 8, [0x1e, 0x0c, 0xc0, 0, 0, 0, 0, 0]));
        want.extend(attr(0x1001, 0, [4, 0, 0, 0, 0, 0, 0, 0]));
        want.extend(attr(0x1002, 4, [0, 0, 0x1a, 0, 0, 0, 0, 0]));
        assert_eq!(b.bytes(), want);

        let b = IoctlBuf::build(
            core_ids::UVERBS_OBJECT_DEVICE,
            core_ids::UVERBS_METHOD_GET_CONTEXT,
            &[
                Attr::In {
                    id: core_ids::UVERBS_ATTR_UHW_IN,
                    addr: 0x8000,
                    len: 32,
                    inline: None,
                },
                Attr::Out {
                    id: core_ids::UVERBS_ATTR_UHW_OUT,
                    addr: 0x9000,
                    len: 72,
                },
            ],
        );
        let mut want = header(56, 0, 3, 2);
        want.extend(attr(0x1000, 32, [0x00, 0x80, 0, 0, 0, 0, 0, 0]));
        want.extend(attr(0x1001, 72, [0x00, 0x90, 0, 0, 0, 0, 0, 0]));
        assert_eq!(b.bytes(), want);
    }

    #[test]
    fn ucontext_request_bytes() {
        let r = alloc_ucontext_req();
        assert_eq!(u32::from_ne_bytes(r[0..4].try_into().unwrap()), 16);
        assert_eq!(u32::from_ne_bytes(r[8..12].try_into().unwrap()), 1);
        assert_eq!(r[16], 1);
        assert_eq!(u64::from_ne_bytes(r[24..32].try_into().unwrap()), 3);
    }

    #[test]
    fn ioctl_number_matches_iowr() {
        // _IOWR(type, nr, size) = (3 << 30) | (size << 16) | (type << 8) | nr
        let v = (3u64 << 30) | ((HDR_LEN as u64) << 16) | (0x1b << 8) | 1;
        assert_eq!(v, RDMA_VERBS_IOCTL);
    }
}
