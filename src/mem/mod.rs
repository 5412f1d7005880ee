//! DMA memory: page-aligned buffers, UMEM registration, protection domains and memory keys.
//!
//! Who owns what, and for how long:
//!
//! - [`DmaBuf`] owns an anonymous mapping (4 KiB pages, or huge pages on request). It is the
//!   memory a device reads and writes; the driver never makes a Rust reference into it, only
//!   copies in and out ([`DmaBuf::write`], [`DmaBuf::read`]) and volatile accesses in the rings.
//! - [`Umem`] registers (part of) a `DmaBuf` with the device and holds the buffer in an `Arc`,
//!   so the memory stays mapped for as long as the device may touch it. Dropping the last
//!   handle deregisters, then the buffer may be unmapped.
//! - [`Pd`] is a protection domain, allocated here or imported by number.
//! - [`Mkey`] is a memory key over a `Umem` in a `Pd` (lkey = rkey); it holds its `Umem`.
//! - [`MemoryRegion`] bundles the three for the common case (`ibv_reg_mr` over fresh memory).
//!
//! Objects are destroyed in reverse order of creation by construction: each holds what it
//! depends on.

pub use crate::mlx5::ids::Pdn;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::devx::{self, Devx, DevxError, DevxObj};
use crate::mlx5::cmd::{AllocPd, CreateMkey, MkeyAccess};

pub use crate::devx::UmemAccess as Access;

/// Errors of the memory layer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MemError {
    /// Mapping memory failed.
    #[error("mapping {len} bytes{}: {source}", if *huge { " of huge pages" } else { "" })]
    Map {
        len: usize,
        huge: bool,
        #[source]
        source: std::io::Error,
    },
    /// A zero-length buffer, registration or key.
    #[error("zero-length {0}")]
    Empty(&'static str),
    /// An access outside a buffer.
    #[error("{what}: {offset:#x}+{len:#x} is outside {size:#x} bytes")]
    OutOfBounds {
        what: &'static str,
        offset: usize,
        len: usize,
        size: usize,
    },
    /// The device refused or the transport failed.
    #[error(transparent)]
    Devx(#[from] DevxError),
}

/// What backs a [`DmaBuf`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backing {
    /// Ordinary 4 KiB pages.
    Pages,
    /// 2 MiB huge pages (`MAP_HUGETLB`); needs reserved huge pages (`vm.nr_hugepages`).
    HugePages2M,
}

impl Backing {
    /// The page size in bytes.
    pub fn page_size(self) -> usize {
        match self {
            Backing::Pages => 4096,
            Backing::HugePages2M => 2 << 20,
        }
    }
}

/// A page-aligned, zeroed buffer for DMA; unmapped when dropped.
pub struct DmaBuf {
    // Kept for its Drop (munmap); never dereferenced as a slice.
    _map: memmap2::MmapMut,
    ptr: NonNull<u8>,
    len: usize,
    backing: Backing,
}

impl std::fmt::Debug for DmaBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DmaBuf")
            .field("addr", &format_args!("{:#x}", self.addr()))
            .field("len", &self.len)
            .field("backing", &self.backing)
            .finish()
    }
}

// SAFETY: the buffer is an anonymous mapping owned by this value; it is accessed only through
// raw-pointer copies and volatile accesses (no references), as memory shared with a device.
unsafe impl Send for DmaBuf {}
// SAFETY: as above; `&self` methods copy bytes and never hand out references.
unsafe impl Sync for DmaBuf {}

impl DmaBuf {
    /// Maps `len` bytes (rounded up to whole pages) of zeroed 4 KiB pages.
    ///
    /// # Errors
    /// `len` is 0, or the mapping failed.
    pub fn new(len: usize) -> Result<Arc<DmaBuf>, MemError> {
        DmaBuf::with_backing(len, Backing::Pages)
    }

    /// Maps `len` bytes (rounded up to whole pages) with the given backing.
    ///
    /// # Errors
    /// `len` is 0, or the mapping failed (for huge pages: none reserved).
    pub fn with_backing(len: usize, backing: Backing) -> Result<Arc<DmaBuf>, MemError> {
        if len == 0 {
            return Err(MemError::Empty("DMA buffer"));
        }
        let page = backing.page_size();
        let len = len
            .checked_next_multiple_of(page)
            .ok_or(MemError::OutOfBounds {
                what: "DMA buffer size",
                offset: 0,
                len,
                size: usize::MAX,
            })?;
        let mut opts = memmap2::MmapOptions::new();
        opts.len(len);
        if backing == Backing::HugePages2M {
            opts.huge(Some(21));
        }
        let huge = backing != Backing::Pages;
        let mut map = opts
            .map_anon()
            .map_err(|source| MemError::Map { len, huge, source })?;
        let ptr = NonNull::new(map.as_mut_ptr()).ok_or(MemError::Map {
            len,
            huge,
            source: std::io::Error::other("mmap returned null"),
        })?;
        Ok(Arc::new(DmaBuf {
            _map: map,
            ptr,
            len,
            backing,
        }))
    }

    /// Length in bytes (whole pages).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Never true: buffers have at least one page.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The virtual address of the first byte (what mkeys and descriptors name).
    pub fn addr(&self) -> u64 {
        self.ptr.as_ptr() as u64
    }

    /// The backing page kind.
    pub fn backing(&self) -> Backing {
        self.backing
    }

    /// A raw pointer to byte `offset`, checked to leave room for `len` bytes.
    ///
    /// # Errors
    /// The range leaves the buffer.
    #[inline]
    pub fn ptr(&self, offset: usize, len: usize) -> Result<NonNull<u8>, MemError> {
        self.check(offset, len, "DMA buffer access")?;
        // SAFETY: `offset + len <= self.len` (checked), so the pointer stays in the mapping.
        Ok(unsafe { NonNull::new_unchecked(self.ptr.as_ptr().add(offset)) })
    }

    /// The 8 bytes at `offset` as an atomic, for words the host and the device both update
    /// (a counter the device writes while the host waits on it).
    ///
    /// # Errors
    /// The range leaves the buffer, or `offset` is not a multiple of 8
    /// ([`MemError::OutOfBounds`] names the access either way).
    pub fn atomic_u64(&self, offset: usize) -> Result<&AtomicU64, MemError> {
        if !offset.is_multiple_of(8) {
            return Err(MemError::OutOfBounds {
                what: "atomic u64 (misaligned)",
                offset,
                len: 8,
                size: self.len,
            });
        }
        let p = self.ptr(offset, 8)?;
        // SAFETY: the 8 bytes lie inside the mapping (checked by `ptr`), which lives as long as
        // `self` and therefore as long as the returned reference; the mapping is page-aligned,
        // so `offset` being a multiple of 8 makes the address 8-aligned as AtomicU64 requires; AtomicU64 has
        // the layout of u64, and every access through it is atomic, so concurrent device DMA
        // or other threads' accesses to these bytes are not data races on the host side.
        Ok(unsafe { &*p.as_ptr().cast::<AtomicU64>() })
    }

    #[inline]
    fn check(&self, offset: usize, len: usize, what: &'static str) -> Result<(), MemError> {
        match offset.checked_add(len) {
            Some(end) if end <= self.len => Ok(()),
            _ => Err(MemError::OutOfBounds {
                what,
                offset,
                len,
                size: self.len,
            }),
        }
    }

    /// Copies `data` into the buffer at `offset`.
    ///
    /// The device may be reading or writing other parts of the buffer at the same time; the
    /// caller's protocol (completions) says when these bytes are the host's to write.
    ///
    /// # Errors
    /// The range leaves the buffer.
    #[inline]
    pub fn write(&self, offset: usize, data: &[u8]) -> Result<(), MemError> {
        let dst = self.ptr(offset, data.len())?;
        // SAFETY: the destination range is inside the mapping (checked by `ptr`), `data` is a
        // separate Rust slice, and no reference into the mapping exists.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), dst.as_ptr(), data.len()) };
        Ok(())
    }

    /// Copies `buf.len()` bytes from `offset` into `buf`.
    ///
    /// # Errors
    /// The range leaves the buffer.
    #[inline]
    pub fn read(&self, offset: usize, buf: &mut [u8]) -> Result<(), MemError> {
        let src = self.ptr(offset, buf.len())?;
        // SAFETY: as for `write`, in the other direction.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), buf.as_mut_ptr(), buf.len()) };
        Ok(())
    }

    /// Fills `len` bytes at `offset` with `byte`.
    ///
    /// # Errors
    /// The range leaves the buffer.
    pub fn fill(&self, offset: usize, len: usize, byte: u8) -> Result<(), MemError> {
        let dst = self.ptr(offset, len)?;
        // SAFETY: the range is inside the mapping (checked by `ptr`).
        unsafe { std::ptr::write_bytes(dst.as_ptr(), byte, len) };
        Ok(())
    }

    /// Loads the byte at `offset` with a volatile load: for a byte the device writes while the
    /// host polls it (an ownership byte), so every call reads memory again.
    ///
    /// # Errors
    /// The offset leaves the buffer.
    #[inline]
    pub fn load_u8(&self, offset: usize) -> Result<u8, MemError> {
        let src = self.ptr(offset, 1)?;
        // SAFETY: inside the mapping (checked by `ptr`); a byte load has no alignment needs.
        Ok(unsafe { std::ptr::read_volatile(src.as_ptr()) })
    }

    /// Stores `v` big-endian at `offset` (4-byte aligned) with one volatile 32-bit store: for
    /// a word the device reads while the host writes it (a doorbell record), so it is never
    /// torn or merged with other stores.
    ///
    /// # Errors
    /// The offset leaves the buffer or is not 4-byte aligned.
    #[inline]
    pub fn store_be32(&self, offset: usize, v: u32) -> Result<(), MemError> {
        let dst = self.ptr(offset, 4)?;
        if !offset.is_multiple_of(4) {
            return Err(MemError::OutOfBounds {
                what: "aligned 32-bit store",
                offset,
                len: 4,
                size: self.len,
            });
        }
        // SAFETY: inside the mapping (checked by `ptr`) and 4-byte aligned (the mapping is
        // page-aligned and `offset` a multiple of 4).
        unsafe { std::ptr::write_volatile(dst.as_ptr().cast::<u32>(), v.to_be()) };
        Ok(())
    }

    /// Reads `len` bytes at `offset` into a new vector (a convenience for checks and tests).
    ///
    /// # Errors
    /// The range leaves the buffer.
    pub fn to_vec(&self, offset: usize, len: usize) -> Result<Vec<u8>, MemError> {
        let mut v = vec![0u8; len];
        self.read(offset, &mut v)?;
        Ok(v)
    }
}

/// A UMEM id as firmware knows it (`*_umem_id` fields).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct UmemId(pub u32);

/// A UMEM registration over a range of a [`DmaBuf`]; deregistered when dropped.
pub struct Umem {
    dev: Arc<dyn Devx>,
    reg: devx::Umem,
    buf: Arc<DmaBuf>,
    offset: usize,
    len: usize,
    access: Access,
}

impl std::fmt::Debug for Umem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Umem")
            .field("umem_id", &self.reg.umem_id)
            .field("addr", &format_args!("{:#x}", self.addr()))
            .field("len", &self.len)
            .field("access", &self.access)
            .finish()
    }
}

impl Umem {
    /// Registers the whole buffer.
    ///
    /// # Errors
    /// The backend refused the registration.
    pub fn register(
        dev: &Arc<dyn Devx>,
        buf: &Arc<DmaBuf>,
        access: Access,
    ) -> Result<Arc<Umem>, MemError> {
        Umem::register_range(dev, buf, 0, buf.len(), access)
    }

    /// Registers `len` bytes of `buf` from `offset` (page-aligned offsets give the device the
    /// most freedom; any offset is accepted).
    ///
    /// # Errors
    /// An empty or out-of-bounds range, or the backend refused the registration.
    pub fn register_range(
        dev: &Arc<dyn Devx>,
        buf: &Arc<DmaBuf>,
        offset: usize,
        len: usize,
        access: Access,
    ) -> Result<Arc<Umem>, MemError> {
        if len == 0 {
            return Err(MemError::Empty("UMEM"));
        }
        let ptr = buf.ptr(offset, len)?;
        // Page sizes the device may use to map the range: 4 KiB up to the backing page size
        // (`MLX5_IB_ATTR_DEVX_UMEM_REG_PGSZ_BITMAP`).
        let page = buf.backing().page_size() as u64;
        let pgsz_bitmap = ((page << 1) - 1) & !0xfff;
        // SAFETY: `ptr..ptr+len` is inside `buf`'s mapping, which this registration keeps alive
        // (it holds the `Arc`) until `umem_dereg` in `drop`.
        let reg = unsafe { dev.umem_reg(ptr.as_ptr(), len, access, pgsz_bitmap)? };
        Ok(Arc::new(Umem {
            dev: Arc::clone(dev),
            reg,
            buf: Arc::clone(buf),
            offset,
            len,
            access,
        }))
    }

    /// The id firmware knows.
    pub fn id(&self) -> UmemId {
        UmemId(self.reg.umem_id)
    }

    /// The registered buffer.
    pub fn buf(&self) -> &Arc<DmaBuf> {
        &self.buf
    }

    /// Offset of the registration in its buffer.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// Registered length.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Never true.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Virtual address of the first registered byte.
    pub fn addr(&self) -> u64 {
        self.buf.addr() + self.offset as u64
    }

    /// Access rights given at registration.
    pub fn access(&self) -> Access {
        self.access
    }

    /// The device this registration lives on.
    pub fn device(&self) -> &Arc<dyn Devx> {
        &self.dev
    }
}

impl Drop for Umem {
    /// Deregisters. A refused deregistration (an object firmware would not destroy still
    /// uses the UMEM) means the device may still reach the memory: the buffer is then handed
    /// to the context ([`Devx::retain_until_close`]) instead of being unmapped, and counted in
    /// [`retained`].
    fn drop(&mut self) {
        if self.dev.umem_dereg(self.reg.handle).is_err() {
            RETAINED_BUFFERS.fetch_add(1, Ordering::Relaxed);
            RETAINED_BYTES.fetch_add(self.buf.len() as u64, Ordering::Relaxed);
            self.dev.retain_until_close(Box::new(Arc::clone(&self.buf)));
        }
    }
}

static RETAINED_BUFFERS: AtomicU64 = AtomicU64::new(0);
static RETAINED_BYTES: AtomicU64 = AtomicU64::new(0);

/// Buffers kept alive because their UMEM deregistration was refused (since the process
/// started); see [`retained`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Retained {
    /// Buffers handed to their context instead of being unmapped.
    pub buffers: u64,
    /// Their bytes.
    pub bytes: u64,
}

/// How much memory was kept from the system because the device could still reach it: a
/// [`Umem`] dropped while firmware refused its deregistration (after a refused destroy of an
/// object using it). Such memory is held by its DevX context ([`Devx::retain_until_close`])
/// and never unmapped while a registration may exist. Non-zero means a teardown went wrong;
/// tools report it.
pub fn retained() -> Retained {
    Retained {
        buffers: RETAINED_BUFFERS.load(Ordering::Relaxed),
        bytes: RETAINED_BYTES.load(Ordering::Relaxed),
    }
}

/// A protection domain: allocated here (freed on drop) or imported by number.
#[derive(Debug)]
pub struct Pd {
    pdn: Pdn,
    _obj: Option<DevxObj>,
}

impl Pd {
    /// ALLOC_PD.
    ///
    /// # Errors
    /// Firmware or transport errors.
    pub fn alloc(dev: &Arc<dyn Devx>) -> Result<Arc<Pd>, MemError> {
        let (obj, pdn) = devx::create(dev, &AllocPd)?;
        Ok(Arc::new(Pd {
            pdn,
            _obj: Some(obj),
        }))
    }

    /// A PD created elsewhere (by rdma-core, the kernel, another process of the same context),
    /// known only by number; never freed here.
    pub fn import(pdn: u32) -> Arc<Pd> {
        Arc::new(Pd {
            pdn: Pdn(pdn),
            _obj: None,
        })
    }

    /// The PD number.
    pub fn pdn(&self) -> Pdn {
        self.pdn
    }
}

/// The rights of an mkey (`mkc.lr` / `lw` / `rr` / `rw` / `a`) for `access`; local read is
/// always granted.
pub(crate) fn mkey_access(access: Access) -> MkeyAccess {
    MkeyAccess {
        local_read: true,
        local_write: access.contains(Access::LOCAL_WRITE),
        remote_read: access.contains(Access::REMOTE_READ),
        remote_write: access.contains(Access::REMOTE_WRITE),
        atomic: access.contains(Access::REMOTE_ATOMIC),
    }
}

/// A local key (names memory in the local WQEs of queues in the key's PD).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Lkey(pub u32);

/// A remote key (names memory in a peer's RDMA and atomic requests).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Rkey(pub u32);

/// A memory key over a whole [`Umem`]; destroyed when dropped.
#[derive(Debug)]
pub struct Mkey {
    obj: DevxObj,
    key: u32,
    umem: Arc<Umem>,
    _pd: Arc<Pd>,
    access: Access,
}

impl Mkey {
    /// CREATE_MKEY translating the whole UMEM at its virtual address, with local read and
    /// the rights in `access` (which must be a subset of the UMEM's).
    ///
    /// # Errors
    /// Firmware or transport errors.
    pub fn create(
        dev: &Arc<dyn Devx>,
        pd: &Arc<Pd>,
        umem: &Arc<Umem>,
        access: Access,
    ) -> Result<Mkey, MemError> {
        let page = umem.buf().backing().page_size();
        let cmd = CreateMkey {
            pd: pd.pdn(),
            start_addr: umem.addr(),
            len: umem.len() as u64,
            access: mkey_access(access),
            umem_id: umem.id().0,
            umem_offset: 0,
            key: 0,
            log_page_size: page.trailing_zeros() as u8,
        };
        let (obj, key) = devx::create(dev, &cmd)?;
        Ok(Mkey {
            obj,
            key,
            umem: Arc::clone(umem),
            _pd: Arc::clone(pd),
            access,
        })
    }

    /// The local key.
    pub fn lkey(&self) -> Lkey {
        Lkey(self.key)
    }

    /// The remote key (the same number on mlx5).
    pub fn rkey(&self) -> Rkey {
        Rkey(self.key)
    }

    /// The UMEM translated.
    pub fn umem(&self) -> &Arc<Umem> {
        &self.umem
    }

    /// Rights granted.
    pub fn access(&self) -> Access {
        self.access
    }

    /// The DevX handle.
    pub fn obj(&self) -> &DevxObj {
        &self.obj
    }
}

/// A scatter/gather element: `len` bytes at `addr` under `lkey`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sge {
    pub addr: u64,
    pub len: u32,
    pub lkey: Lkey,
}

/// A buffer, its UMEM and an mkey over it: the common case of `ibv_reg_mr` over new memory.
/// Fields drop in order: key, registration, buffer.
#[derive(Debug)]
pub struct MemoryRegion {
    mkey: Mkey,
    buf: Arc<DmaBuf>,
}

impl MemoryRegion {
    /// Maps `len` bytes, registers them and creates a key with `access` (local read implied).
    ///
    /// # Errors
    /// Mapping, registration or key creation failed; what was made is released in reverse.
    pub fn alloc(
        dev: &Arc<dyn Devx>,
        pd: &Arc<Pd>,
        len: usize,
        access: Access,
    ) -> Result<MemoryRegion, MemError> {
        let buf = DmaBuf::new(len)?;
        MemoryRegion::over(dev, pd, &buf, access)
    }

    /// Registers an existing buffer and creates a key over it.
    ///
    /// # Errors
    /// Registration or key creation failed.
    pub fn over(
        dev: &Arc<dyn Devx>,
        pd: &Arc<Pd>,
        buf: &Arc<DmaBuf>,
        access: Access,
    ) -> Result<MemoryRegion, MemError> {
        let umem = Umem::register(dev, buf, access | Access::LOCAL_WRITE)?;
        let mkey = Mkey::create(dev, pd, &umem, access)?;
        Ok(MemoryRegion {
            mkey,
            buf: Arc::clone(buf),
        })
    }

    /// The buffer.
    pub fn buf(&self) -> &Arc<DmaBuf> {
        &self.buf
    }

    /// The key.
    pub fn mkey(&self) -> &Mkey {
        &self.mkey
    }

    /// The local key.
    pub fn lkey(&self) -> Lkey {
        self.mkey.lkey()
    }

    /// The remote key.
    pub fn rkey(&self) -> Rkey {
        self.mkey.rkey()
    }

    /// Virtual address of byte 0.
    pub fn addr(&self) -> u64 {
        self.buf.addr()
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// Never true.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// An SGE for `len` bytes at `offset`.
    ///
    /// # Errors
    /// The range leaves the region or `len` exceeds 32 bits.
    pub fn sge(&self, offset: usize, len: usize) -> Result<Sge, MemError> {
        self.buf.ptr(offset, len)?;
        let len32 = u32::try_from(len).map_err(|_| MemError::OutOfBounds {
            what: "SGE length",
            offset,
            len,
            size: u32::MAX as usize,
        })?;
        Ok(Sge {
            addr: self.addr() + offset as u64,
            len: len32,
            lkey: self.lkey(),
        })
    }

    /// Copies `data` in at `offset`.
    ///
    /// # Errors
    /// The range leaves the region.
    #[inline]
    pub fn write(&self, offset: usize, data: &[u8]) -> Result<(), MemError> {
        self.buf.write(offset, data)
    }

    /// Copies out to `out` from `offset`.
    ///
    /// # Errors
    /// The range leaves the region.
    pub fn read(&self, offset: usize, out: &mut [u8]) -> Result<(), MemError> {
        self.buf.read(offset, out)
    }
}
