//! The server driven by bytes from outside (feature `test-utils`): a [`Sandbox`] that opens
//! one context of the process's served device and calls `ioctl`, `write`, `mmap` on it as a
//! program would, and [`fuzz_uverbs`], which reads a whole program of such calls from arbitrary
//! bytes. Used by the fuzz target `fuzz/fuzz_targets/uverbs.rs` and the property tests in
//! `uverbs/tests/bad_input.rs`.
//!
//! The client's memory is an arena at a fixed address ([`ARENA`], so inputs can hold pointers
//! into it), with an inaccessible page on each side; the server is confined to it
//! ([`crate::user::confine`]), so a pointer anywhere else is `EFAULT`, as an unmapped one is to
//! the kernel. What must hold after any input: no panic, every call answered (a value or an
//! errno), and, once the context is closed, nothing left on the model ([`Sandbox::close`]
//! returns the model's inventory).

use std::os::fd::RawFd;
use std::sync::OnceLock;

use mlx5_dpa::devx::kernel::abi::ids::{core_ids as c, mlx5_ids};
use mlx5_dpa::devx::kernel::abi::write::{cmd, WriteFrame};
use mlx5_dpa::devx::kernel::abi::{
    alloc_ucontext_req, Attr, IoctlBuf, RDMA_VERBS_IOCTL, UVERBS_ATTR_F_MANDATORY,
};
use mlx5_sim::Inventory;
use nix::errno::Errno;

use crate::server::server;

/// Where the arena is mapped (when that address is free; see [`Sandbox::base`]).
pub const ARENA: usize = 0x5a5a_0000_0000;
/// The arena's size: 1 MiB of client memory.
pub const ARENA_LEN: usize = 1 << 20;
/// Where calls put the ioctl argument and the write command in the arena.
const CALL_AT: usize = 0;
/// Room for the call's own bytes.
const CALL_ROOM: usize = 64 << 10;

/// The arena's address (mapped once per process, with a guard page on each side).
fn arena() -> Option<usize> {
    static BASE: OnceLock<Option<usize>> = OnceLock::new();
    *BASE.get_or_init(|| {
        let page = crate::user::page_size();
        let total = ARENA_LEN + 2 * page;
        let want = ARENA - page;
        // SAFETY: a new anonymous mapping, not replacing anything (MAP_FIXED_NOREPLACE); if the
        // address is taken the kernel places it elsewhere.
        let mut p = unsafe {
            libc::mmap(
                want as *mut libc::c_void,
                total,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED_NOREPLACE,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            // SAFETY: as above, anywhere.
            p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    total,
                    libc::PROT_NONE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
        }
        if p == libc::MAP_FAILED {
            return None;
        }
        let base = p as usize + page;
        // SAFETY: the middle of the mapping made above becomes read-write.
        let rc = unsafe {
            libc::mprotect(
                base as *mut libc::c_void,
                ARENA_LEN,
                libc::PROT_READ | libc::PROT_WRITE,
            )
        };
        (rc == 0).then_some(base)
    })
}

/// An existing file to open as the device node (the server opens it `O_PATH`).
fn node() -> Option<&'static std::ffi::CStr> {
    static NODE: OnceLock<Option<std::ffi::CString>> = OnceLock::new();
    NODE.get_or_init(|| {
        let p = std::env::temp_dir().join(format!("mlx5-uverbs-fuzz-{}", std::process::id()));
        std::fs::write(&p, b"").ok()?;
        std::ffi::CString::new(p.into_os_string().into_encoded_bytes()).ok()
    })
    .as_deref()
}

/// One context of the served device, with client memory in the arena.
pub struct Sandbox {
    fd: RawFd,
    base: usize,
    maps: Vec<(usize, usize)>,
}

impl Sandbox {
    /// Opens a context; the arena is zeroed and the server confined to it.
    ///
    /// # Errors
    /// `ENOMEM` without the arena, `ENOENT` without a node file, else the open's errno.
    pub fn open() -> Result<Sandbox, Errno> {
        let base = arena().ok_or(Errno::ENOMEM)?;
        // SAFETY: the arena is this module's own read-write mapping of ARENA_LEN bytes; no
        // context is open on it (each Sandbox closes its context before the next opens).
        unsafe { std::ptr::write_bytes(base as *mut u8, 0, ARENA_LEN) };
        crate::user::confine(base, ARENA_LEN);
        let fd = server().open(0, node().ok_or(Errno::ENOENT)?, libc::O_CLOEXEC)?;
        Ok(Sandbox {
            fd,
            base,
            maps: Vec::new(),
        })
    }

    /// The arena's address ([`ARENA`] unless that was taken).
    pub fn base(&self) -> u64 {
        self.base as u64
    }

    /// Copies `bytes` into the arena at `off` (cut at its end); their address.
    pub fn put(&self, off: usize, bytes: &[u8]) -> u64 {
        let off = off.min(ARENA_LEN);
        let n = bytes.len().min(ARENA_LEN - off);
        // SAFETY: `off + n` is within the arena, this module's own mapping.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), (self.base + off) as *mut u8, n);
        }
        (self.base + off) as u64
    }

    /// Reads `n` bytes of the arena at `off` (cut at its end).
    pub fn get(&self, off: usize, n: usize) -> Vec<u8> {
        let off = off.min(ARENA_LEN);
        let n = n.min(ARENA_LEN - off);
        // SAFETY: within the arena, this module's own mapping.
        unsafe { std::slice::from_raw_parts((self.base + off) as *const u8, n).to_vec() }
    }

    /// `ioctl(fd, request, arg)` with `arg` as given.
    ///
    /// # Errors
    /// The server's errno.
    pub fn ioctl_at(&self, request: u64, arg: u64) -> Result<i32, Errno> {
        server().ioctl(self.fd, request, arg)
    }

    /// `RDMA_VERBS_IOCTL` with `buf` placed at the start of the arena.
    ///
    /// # Errors
    /// The server's errno.
    pub fn ioctl(&self, buf: &[u8]) -> Result<i32, Errno> {
        let at = self.put(CALL_AT, &buf[..buf.len().min(CALL_ROOM)]);
        self.ioctl_at(RDMA_VERBS_IOCTL, at)
    }

    /// `write(fd, cmd, len)` with `cmd` placed at the start of the arena.
    ///
    /// # Errors
    /// The server's errno.
    pub fn write(&self, cmd: &[u8]) -> Result<usize, Errno> {
        let at = self.put(CALL_AT, &cmd[..cmd.len().min(CALL_ROOM)]);
        server().write(self.fd, at, cmd.len())
    }

    /// `write(fd, addr, len)` with any address.
    ///
    /// # Errors
    /// The server's errno.
    pub fn write_at(&self, addr: u64, len: usize) -> Result<usize, Errno> {
        server().write(self.fd, addr, len)
    }

    /// `mmap(NULL, len, prot, flags, fd, offset)`; a mapping made is undone at close.
    ///
    /// # Errors
    /// The server's errno.
    pub fn mmap(&mut self, len: usize, prot: i32, flags: i32, offset: i64) -> Result<usize, Errno> {
        let a = server().mmap(self.fd, len, prot, flags, offset)?;
        self.maps.push((a, len));
        Ok(a)
    }

    /// GET_CONTEXT as libmlx5 sends it (DevX, dynamic UARs), its output in the arena.
    ///
    /// # Errors
    /// The server's errno.
    pub fn get_context(&self) -> Result<(), Errno> {
        let req = alloc_ucontext_req();
        let req_at = self.put(CALL_ROOM, &req);
        let buf = IoctlBuf::build(
            c::UVERBS_OBJECT_DEVICE,
            c::UVERBS_METHOD_GET_CONTEXT,
            &[
                Attr::In {
                    id: c::UVERBS_ATTR_UHW_IN,
                    addr: req_at,
                    len: req.len() as u16,
                    inline: None,
                },
                Attr::Out {
                    id: c::UVERBS_ATTR_UHW_OUT,
                    addr: self.base() + CALL_ROOM as u64 + 64,
                    len: 256,
                },
            ],
        );
        self.ioctl(&buf.bytes()).map(drop)
    }

    /// Closes the context as a program would at exit: mappings undone, the event files the
    /// server handed out closed, then the device file. What the model still holds afterwards
    /// (empty unless something leaked).
    pub fn close(mut self) -> Inventory {
        for (a, l) in self.maps.drain(..) {
            if server().munmap(a, l).is_none() {
                // SAFETY: a mapping the server made for this sandbox and nothing else uses.
                unsafe { libc::munmap(a as *mut libc::c_void, l) };
            }
        }
        for fd in crate::fds::all() {
            if fd != self.fd && server().close(fd) {
                // SAFETY: a descriptor the server created for this sandbox's context.
                unsafe { crate::real::close(fd) };
            }
        }
        server().close(self.fd);
        // SAFETY: the context's own descriptor, opened by `open`.
        unsafe { crate::real::close(self.fd) };
        server().model().map(|d| d.inventory()).unwrap_or_default()
    }
}

/// A cursor over the input.
struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn bytes(&mut self, n: usize) -> &[u8] {
        let n = n.min(self.0.len());
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        a
    }
    fn u8(&mut self) -> u8 {
        self.bytes(1).first().copied().unwrap_or(0)
    }
    fn u16(&mut self) -> u16 {
        let b = self.bytes(2);
        let mut w = [0u8; 2];
        w[..b.len()].copy_from_slice(b);
        u16::from_le_bytes(w)
    }
    fn u64(&mut self) -> u64 {
        let b = self.bytes(8);
        let mut w = [0u8; 8];
        w[..b.len()].copy_from_slice(b);
        u64::from_le_bytes(w)
    }
}

/// At most this many calls per input.
const MAX_CALLS: usize = 48;

/// Any bytes as a program of calls on one context; panics only if the model keeps something
/// after the context is closed. The format (little-endian): one byte of flags (bit 0: start
/// with a correct GET_CONTEXT), then calls, each a tag byte and its operands:
/// - `0` ioctl: object, method (u16 each), a header mode byte, an attribute count byte, and
///   per attribute its id, length, flags (u16 each), a kind byte and a u64 (inline data, an
///   arena offset, or a pointer to the guard page);
/// - `1` write: a length (u16) and that many command bytes;
/// - `2` arena: an offset (u16), a length byte and the bytes to put there;
/// - `3` mmap: length (u16 pages), prot, flags (bytes) and offset (u64);
/// - `4` ioctl with a raw request number and argument (u64 each).
pub fn fuzz_uverbs(data: &[u8]) -> Outcome {
    let mut done = Outcome::default();
    let Ok(mut sb) = Sandbox::open() else {
        return done;
    };
    let mut inp = Input(data);
    let mut tally = |ok: bool| {
        done.calls += 1;
        done.succeeded += usize::from(ok);
    };
    if inp.u8() & 1 != 0 {
        tally(sb.get_context().is_ok());
    }
    for _ in 0..MAX_CALLS {
        if inp.0.is_empty() {
            break;
        }
        match inp.u8() % 5 {
            0 => {
                let obj = inp.u16();
                let method = inp.u16();
                let mode = inp.u8();
                let n = usize::from(inp.u8() % 9);
                let mut attrs = Vec::with_capacity(n);
                for _ in 0..n {
                    let id = inp.u16();
                    let len = inp.u16();
                    let flags = inp.u16();
                    let kind = inp.u8();
                    let v = inp.u64();
                    let data = match kind % 3 {
                        0 => v,
                        1 => sb.base() + CALL_ROOM as u64 + v % (ARENA_LEN - CALL_ROOM) as u64,
                        _ => sb.base() - 64,
                    };
                    attrs.push((id, len, flags, data));
                }
                tally(sb.ioctl(&raw_ioctl(obj, method, mode, &attrs)).is_ok());
            }
            1 => {
                let len = usize::from(inp.u16());
                let cmd = inp.bytes(len).to_vec();
                tally(sb.write(&cmd).is_ok());
            }
            2 => {
                let off = usize::from(inp.u16());
                let n = usize::from(inp.u8());
                let b = inp.bytes(n).to_vec();
                sb.put(CALL_ROOM + off, &b);
            }
            3 => {
                let pages = usize::from(inp.u16() % 64) + 1;
                let prot = i32::from(inp.u8() & 7);
                let flags = if inp.u8() & 1 == 0 {
                    libc::MAP_SHARED
                } else {
                    libc::MAP_PRIVATE
                };
                let off = inp.u64() as i64;
                tally(
                    sb.mmap(pages * crate::user::page_size(), prot, flags, off)
                        .is_ok(),
                );
            }
            _ => {
                let req = inp.u64();
                let arg = inp.u64();
                tally(sb.ioctl_at(req, arg).is_ok());
            }
        }
    }
    let left = sb.close();
    assert!(left.is_empty(), "left on the model after close: {left}");
    done
}

/// What a program of calls did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    /// Calls made.
    pub calls: usize,
    /// Calls that succeeded.
    pub succeeded: usize,
}

/// ALLOC_PD as a legacy write command whose response goes to `resp`.
pub fn alloc_pd(resp: u64) -> Vec<u8> {
    WriteFrame {
        command: cmd::ALLOC_PD,
        extended: false,
        core_in: resp.to_ne_bytes().to_vec(),
        uhw_in: Vec::new(),
        response: resp,
        out_len: 8,
        uhw_out_len: 0,
    }
    .emit()
}

/// An ioctl call in the fuzz format: attributes as (id, length, kind, value), mandatory.
fn ioctl_call(p: &mut Vec<u8>, obj: u16, method: u16, attrs: &[(u16, u16, u8, u64)]) {
    p.push(0);
    p.extend_from_slice(&obj.to_le_bytes());
    p.extend_from_slice(&method.to_le_bytes());
    p.push(0);
    p.push(attrs.len() as u8);
    for &(id, len, kind, v) in attrs {
        p.extend_from_slice(&id.to_le_bytes());
        p.extend_from_slice(&len.to_le_bytes());
        p.extend_from_slice(&UVERBS_ATTR_F_MANDATORY.to_le_bytes());
        p.push(kind);
        p.extend_from_slice(&v.to_le_bytes());
    }
}

/// A program of calls that all succeed: GET_CONTEXT, ALLOC_PD (a write, its response in the
/// arena), QUERY_PORT, UAR_OBJ_ALLOC and the UAR's mmap: the seed the mutations start from.
pub fn seed_program() -> Vec<u8> {
    let base = ARENA as u64;
    let mut p = vec![1u8];
    let pd = alloc_pd(base + 0x2_0000);
    p.push(1);
    p.extend_from_slice(&(pd.len() as u16).to_le_bytes());
    p.extend_from_slice(&pd);
    // QUERY_PORT with its port inline and its output at an arena offset.
    ioctl_call(
        &mut p,
        c::UVERBS_OBJECT_DEVICE,
        c::UVERBS_METHOD_QUERY_PORT,
        &[
            (c::UVERBS_ATTR_QUERY_PORT_PORT_NUM, 4, 0, 1),
            (c::UVERBS_ATTR_QUERY_PORT_RESP, 48, 1, 0x100),
        ],
    );
    // UAR_OBJ_ALLOC (a new handle, type 0 = BF), its offset, length and page id in the arena;
    // then mmap of it (the first dynamic UAR's offset: page 1 << 16).
    ioctl_call(
        &mut p,
        mlx5_ids::MLX5_IB_OBJECT_UAR,
        mlx5_ids::MLX5_IB_METHOD_UAR_OBJ_ALLOC,
        &[
            (mlx5_ids::MLX5_IB_ATTR_UAR_OBJ_ALLOC_HANDLE, 0, 0, 0),
            (mlx5_ids::MLX5_IB_ATTR_UAR_OBJ_ALLOC_TYPE, 4, 0, 0),
            (
                mlx5_ids::MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_OFFSET,
                8,
                1,
                0x200,
            ),
            (
                mlx5_ids::MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_LENGTH,
                4,
                1,
                0x208,
            ),
            (mlx5_ids::MLX5_IB_ATTR_UAR_OBJ_ALLOC_PAGE_ID, 4, 1, 0x20c),
        ],
    );
    p.push(3);
    p.extend_from_slice(&0u16.to_le_bytes());
    p.push(3);
    p.push(0);
    p.extend_from_slice(&((1u64 << 16) * 4096).to_le_bytes());
    p
}

/// An ioctl buffer as a fuzz input describes it; `mode` spoils the header on purpose (0: a
/// correct header, 1: a wrong length, 2: a wrong attribute count, 3: reserved bits set, 4: a
/// wrong driver id).
fn raw_ioctl(obj: u16, method: u16, mode: u8, attrs: &[(u16, u16, u16, u64)]) -> Vec<u8> {
    use mlx5_dpa::devx::kernel::abi::{ATTR_LEN, HDR_LEN, RDMA_DRIVER_MLX5};
    let len = HDR_LEN + ATTR_LEN * attrs.len();
    let mut b = vec![0u8; len];
    let mut hlen = len as u16;
    let mut count = attrs.len() as u16;
    let mut driver = RDMA_DRIVER_MLX5;
    match mode % 8 {
        1 => hlen = hlen.wrapping_add(u16::from(mode)),
        2 => count = count.wrapping_add(1),
        3 => b[8] = mode,
        4 => driver = u32::from(mode),
        _ => {}
    }
    b[0..2].copy_from_slice(&hlen.to_ne_bytes());
    b[2..4].copy_from_slice(&obj.to_ne_bytes());
    b[4..6].copy_from_slice(&method.to_ne_bytes());
    b[6..8].copy_from_slice(&count.to_ne_bytes());
    b[16..20].copy_from_slice(&driver.to_ne_bytes());
    for (i, &(id, alen, flags, data)) in attrs.iter().enumerate() {
        let s = HDR_LEN + i * ATTR_LEN;
        b[s..s + 2].copy_from_slice(&id.to_ne_bytes());
        b[s + 2..s + 4].copy_from_slice(&alen.to_ne_bytes());
        b[s + 4..s + 6].copy_from_slice(&flags.to_ne_bytes());
        b[s + 8..s + 16].copy_from_slice(&data.to_ne_bytes());
    }
    b
}
