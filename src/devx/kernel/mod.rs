//! The kernel's DevX interface, spoken directly: `RDMA_VERBS_IOCTL` on `/dev/infiniband/uverbsN`
//! and `mmap` of that fd for UAR pages. No C library is involved.
//!
//! Opening a device allocates a DevX user context (GET_CONTEXT with the mlx5 request and the
//! DEVX flag, [`abi::alloc_ucontext_req`]); every later call is one ioctl built by
//! [`abi::IoctlBuf`]. The kernel owns object lifetimes: destroying a handle makes it send the
//! destroy command it derived at create time, and closing the fd destroys whatever is left.

pub mod abi;

use std::fs::{File, OpenOptions};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use nix::errno::Errno;

use self::abi::{core_ids, mlx5_ids::*, Attr, IoctlBuf};
use super::discovery::{self, DeviceInfo};
use super::{
    Devx, DevxError, DevxEvent, EventChannel, ObjHandle, Uar, UarKind, Umem, UmemAccess, UmemHandle,
};

/// A device opened through the kernel's uverbs interface with a DevX context.
#[derive(Debug)]
pub struct KernelDevx {
    file: File,
    info: DeviceInfo,
}

fn ioctl(fd: RawFd, buf: &mut IoctlBuf, op: &'static str) -> Result<(), DevxError> {
    // SAFETY: `buf` is a complete, 8-byte aligned `ib_uverbs_ioctl_hdr` followed by
    // `num_attrs` attributes whose pointers reference buffers the caller keeps alive for the
    // duration of this call; the kernel reads and writes only within those lengths.
    let rc = unsafe { nix::libc::ioctl(fd, abi::RDMA_VERBS_IOCTL as _, buf.as_mut_ptr()) };
    Errno::result(rc)
        .map(drop)
        .map_err(|errno| DevxError::Os { op, errno })
}

impl KernelDevx {
    /// Opens the named device, or the first mlx5 device.
    ///
    /// # Errors
    /// [`DevxError::NoDevice`] / [`DevxError::UnknownDevice`] when nothing matches; system call
    /// errors opening the device or creating the DevX context.
    pub fn open(name: Option<&str>) -> Result<Arc<KernelDevx>, DevxError> {
        let devices = discovery::list_devices();
        let info = match name {
            Some(n) => devices
                .iter()
                .find(|d| d.name == n)
                .cloned()
                .ok_or_else(|| DevxError::UnknownDevice {
                    name: n.to_string(),
                    found: if devices.is_empty() {
                        "none".into()
                    } else {
                        devices
                            .iter()
                            .map(|d| d.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    },
                })?,
            None => devices
                .first()
                .cloned()
                .ok_or_else(|| DevxError::NoDevice {
                    searched: discovery::searched(),
                })?,
        };
        Self::open_info(info).map(Arc::new)
    }

    fn open_info(info: DeviceInfo) -> Result<KernelDevx, DevxError> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&info.uverbs_path)
            .map_err(|e| DevxError::Os {
                op: "open uverbs device",
                errno: Errno::from_raw(e.raw_os_error().unwrap_or(0)),
            })?;
        let dev = KernelDevx { file, info };
        dev.alloc_context()?;
        Ok(dev)
    }

    fn fd(&self) -> RawFd {
        self.file.as_raw_fd()
    }

    /// GET_CONTEXT with the mlx5 DevX request.
    fn alloc_context(&self) -> Result<(), DevxError> {
        let req = abi::alloc_ucontext_req();
        let mut resp = [0u8; abi::ALLOC_UCONTEXT_RESP_LEN];
        let mut buf = IoctlBuf::build(
            core_ids::UVERBS_OBJECT_DEVICE,
            core_ids::UVERBS_METHOD_GET_CONTEXT,
            &[
                Attr::input(core_ids::UVERBS_ATTR_UHW_IN, &req),
                Attr::Out {
                    id: core_ids::UVERBS_ATTR_UHW_OUT,
                    addr: resp.as_mut_ptr() as u64,
                    len: resp.len() as u16,
                },
            ],
        );
        ioctl(self.fd(), &mut buf, "GET_CONTEXT (DevX ucontext)")
    }

    /// The device this context is on.
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn handle_out(buf: &IoctlBuf, attr_index: usize, op: &'static str) -> Result<u32, DevxError> {
        let v = buf
            .attr_data(attr_index)
            .ok_or(DevxError::BadMailbox(format!("{op}: no handle attribute")))?;
        u32::try_from(v)
            .map_err(|_| DevxError::BadMailbox(format!("{op}: handle {v:#x} out of range")))
    }

    fn cmd_attrs(
        inbox: &[u8],
        outbox: &mut [u8],
        in_id: u16,
        out_id: u16,
    ) -> Result<[Attr; 2], DevxError> {
        let too_long = |what: &str, n: usize| {
            DevxError::BadMailbox(format!(
                "{what} of {n} bytes: DevX carries at most {}",
                crate::devx::MAX_MAILBOX_LEN
            ))
        };
        let in_len = u16::try_from(inbox.len()).map_err(|_| too_long("inbox", inbox.len()))?;
        let out_len = u16::try_from(outbox.len()).map_err(|_| too_long("outbox", outbox.len()))?;
        // Command mailboxes are never inlined: DevX always takes them by pointer (`PTR_IN` with
        // `UVERBS_ATTR_MIN_SIZE` of the command header, larger than 8 bytes).
        Ok([
            Attr::In {
                id: in_id,
                addr: inbox.as_ptr() as u64,
                len: in_len,
                inline: None,
            },
            Attr::Out {
                id: out_id,
                addr: outbox.as_mut_ptr() as u64,
                len: out_len,
            },
        ])
    }
}

impl Devx for KernelDevx {
    fn describe(&self) -> String {
        format!(
            "{} ({}, kernel DevX)",
            self.info.name,
            self.info.uverbs_path.display()
        )
    }

    fn general_cmd(&self, inbox: &[u8], outbox: &mut [u8]) -> Result<(), DevxError> {
        let [a, b] = Self::cmd_attrs(
            inbox,
            outbox,
            MLX5_IB_ATTR_DEVX_OTHER_CMD_IN,
            MLX5_IB_ATTR_DEVX_OTHER_CMD_OUT,
        )?;
        let mut buf = IoctlBuf::build(MLX5_IB_OBJECT_DEVX, MLX5_IB_METHOD_DEVX_OTHER, &[a, b]);
        ioctl(self.fd(), &mut buf, "DEVX_OTHER")
    }

    fn obj_create(&self, inbox: &[u8], outbox: &mut [u8]) -> Result<ObjHandle, DevxError> {
        let [a, b] = Self::cmd_attrs(
            inbox,
            outbox,
            MLX5_IB_ATTR_DEVX_OBJ_CMD_IN,
            MLX5_IB_ATTR_DEVX_OBJ_CMD_OUT,
        )?;
        let mut buf = IoctlBuf::build(
            MLX5_IB_OBJECT_DEVX_OBJ,
            MLX5_IB_METHOD_DEVX_OBJ_CREATE,
            &[
                Attr::Obj {
                    id: MLX5_IB_ATTR_DEVX_OBJ_HANDLE,
                    handle: 0,
                },
                a,
                b,
            ],
        );
        ioctl(self.fd(), &mut buf, "DEVX_OBJ_CREATE")?;
        Ok(ObjHandle(u64::from(Self::handle_out(
            &buf,
            0,
            "DEVX_OBJ_CREATE",
        )?)))
    }

    fn obj_modify(&self, obj: ObjHandle, inbox: &[u8], outbox: &mut [u8]) -> Result<(), DevxError> {
        self.obj_cmd(
            MLX5_IB_METHOD_DEVX_OBJ_MODIFY,
            "DEVX_OBJ_MODIFY",
            obj,
            inbox,
            outbox,
        )
    }

    fn obj_query(&self, obj: ObjHandle, inbox: &[u8], outbox: &mut [u8]) -> Result<(), DevxError> {
        self.obj_cmd(
            MLX5_IB_METHOD_DEVX_OBJ_QUERY,
            "DEVX_OBJ_QUERY",
            obj,
            inbox,
            outbox,
        )
    }

    fn obj_destroy(&self, obj: ObjHandle) -> Result<(), DevxError> {
        let h = Attr::Obj {
            id: MLX5_IB_ATTR_DEVX_OBJ_HANDLE,
            handle: obj.0 as u32,
        };
        let mut buf = IoctlBuf::build(
            MLX5_IB_OBJECT_DEVX_OBJ,
            MLX5_IB_METHOD_DEVX_OBJ_DESTROY,
            &[h],
        );
        ioctl(self.fd(), &mut buf, "DEVX_OBJ_DESTROY")
    }

    unsafe fn umem_reg(
        &self,
        addr: *mut u8,
        len: usize,
        access: UmemAccess,
        pgsz_bitmap: u64,
    ) -> Result<Umem, DevxError> {
        let mut umem_id = 0u32;
        let mut attrs = vec![
            Attr::U64 {
                id: MLX5_IB_ATTR_DEVX_UMEM_REG_ADDR,
                value: addr as u64,
            },
            Attr::U64 {
                id: MLX5_IB_ATTR_DEVX_UMEM_REG_LEN,
                value: len as u64,
            },
            Attr::U32 {
                id: MLX5_IB_ATTR_DEVX_UMEM_REG_ACCESS,
                value: access.bits(),
            },
        ];
        if pgsz_bitmap != 0 {
            attrs.push(Attr::U64 {
                id: MLX5_IB_ATTR_DEVX_UMEM_REG_PGSZ_BITMAP,
                value: pgsz_bitmap,
            });
        }
        attrs.push(Attr::Out {
            id: MLX5_IB_ATTR_DEVX_UMEM_REG_OUT_ID,
            addr: (&raw mut umem_id) as u64,
            len: 4,
        });
        attrs.push(Attr::Obj {
            id: MLX5_IB_ATTR_DEVX_UMEM_REG_HANDLE,
            handle: 0,
        });
        let handle_index = attrs.len() - 1;
        let mut buf = IoctlBuf::build(
            MLX5_IB_OBJECT_DEVX_UMEM,
            MLX5_IB_METHOD_DEVX_UMEM_REG,
            &attrs,
        );
        ioctl(self.fd(), &mut buf, "DEVX_UMEM_REG")?;
        let handle = Self::handle_out(&buf, handle_index, "DEVX_UMEM_REG")?;
        Ok(Umem {
            handle: UmemHandle(u64::from(handle)),
            umem_id,
        })
    }

    fn umem_dereg(&self, umem: UmemHandle) -> Result<(), DevxError> {
        let h = Attr::Obj {
            id: MLX5_IB_ATTR_DEVX_UMEM_DEREG_HANDLE,
            handle: umem.0 as u32,
        };
        let mut buf = IoctlBuf::build(
            MLX5_IB_OBJECT_DEVX_UMEM,
            MLX5_IB_METHOD_DEVX_UMEM_DEREG,
            &[h],
        );
        ioctl(self.fd(), &mut buf, "DEVX_UMEM_DEREG")
    }

    fn uar_alloc(&self, kind: UarKind) -> Result<Uar, DevxError> {
        let mut mmap_offset = 0u64;
        let mut mmap_len = 0u32;
        let mut page_id = 0u32;
        let mut buf = IoctlBuf::build(
            MLX5_IB_OBJECT_UAR,
            MLX5_IB_METHOD_UAR_OBJ_ALLOC,
            &[
                Attr::Obj {
                    id: MLX5_IB_ATTR_UAR_OBJ_ALLOC_HANDLE,
                    handle: 0,
                },
                Attr::U64 {
                    id: MLX5_IB_ATTR_UAR_OBJ_ALLOC_TYPE,
                    value: kind as u64,
                },
                Attr::Out {
                    id: MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_OFFSET,
                    addr: (&raw mut mmap_offset) as u64,
                    len: 8,
                },
                Attr::Out {
                    id: MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_LENGTH,
                    addr: (&raw mut mmap_len) as u64,
                    len: 4,
                },
                Attr::Out {
                    id: MLX5_IB_ATTR_UAR_OBJ_ALLOC_PAGE_ID,
                    addr: (&raw mut page_id) as u64,
                    len: 4,
                },
            ],
        );
        ioctl(self.fd(), &mut buf, "UAR_OBJ_ALLOC")?;
        let handle = u64::from(Self::handle_out(&buf, 0, "UAR_OBJ_ALLOC")?);
        let len = mmap_len as usize;
        let map = (|| {
            let nz = std::num::NonZeroUsize::new(len).ok_or(Errno::EINVAL)?;
            let off = nix::libc::off_t::try_from(mmap_offset).map_err(|_| Errno::EOVERFLOW)?;
            // SAFETY: mapping a fresh region chosen by the kernel (no address hint) of the
            // length and at the offset the kernel returned for this UAR; nothing else refers to
            // it until `uar_free` unmaps it.
            unsafe {
                nix::sys::mman::mmap(
                    None,
                    nz,
                    nix::sys::mman::ProtFlags::PROT_WRITE,
                    nix::sys::mman::MapFlags::MAP_SHARED,
                    &self.file,
                    off,
                )
            }
        })();
        match map {
            Ok(p) => Ok(Uar {
                handle,
                page_id,
                base: p.cast::<u8>(),
                len,
            }),
            Err(errno) => {
                let _ = self.destroy_uar_handle(handle);
                Err(DevxError::Os {
                    op: "mmap UAR page",
                    errno,
                })
            }
        }
    }

    fn uar_free(&self, uar: Uar) -> Result<(), DevxError> {
        // SAFETY: `uar.base`/`uar.len` are exactly the mapping made in `uar_alloc`, and `Uar`
        // is consumed here so no copy of the pointer is used afterwards by safe code.
        let unmapped = unsafe { nix::sys::mman::munmap(uar.base.cast(), uar.len) };
        let destroyed = self.destroy_uar_handle(uar.handle);
        unmapped.map_err(|errno| DevxError::Os {
            op: "munmap UAR page",
            errno,
        })?;
        destroyed
    }

    fn query_eqn(&self, vector: u32) -> Result<u32, DevxError> {
        let mut eqn = 0u32;
        let mut buf = IoctlBuf::build(
            MLX5_IB_OBJECT_DEVX,
            MLX5_IB_METHOD_DEVX_QUERY_EQN,
            &[
                Attr::U32 {
                    id: MLX5_IB_ATTR_DEVX_QUERY_EQN_USER_VEC,
                    value: vector,
                },
                Attr::Out {
                    id: MLX5_IB_ATTR_DEVX_QUERY_EQN_DEV_EQN,
                    addr: (&raw mut eqn) as u64,
                    len: 4,
                },
            ],
        );
        ioctl(self.fd(), &mut buf, "DEVX_QUERY_EQN")?;
        Ok(eqn)
    }

    fn event_channel(&self) -> Result<Box<dyn EventChannel>, DevxError> {
        let mut buf = IoctlBuf::build(
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
        ioctl(self.fd(), &mut buf, "DEVX_ASYNC_EVENT_FD_ALLOC")?;
        let raw = buf
            .attr_data(0)
            .ok_or(DevxError::BadMailbox("no fd attribute".into()))?;
        let fd = i32::try_from(raw)
            .map_err(|_| DevxError::BadMailbox(format!("event fd {raw:#x} out of range")))?;
        // SAFETY: the kernel just created this fd for us (FD_NEW attribute); nothing else owns it.
        let owned = unsafe { OwnedFd::from_raw_fd(fd) };
        let dup = self.file.try_clone().map_err(|e| DevxError::Os {
            op: "dup uverbs fd",
            errno: Errno::from_raw(e.raw_os_error().unwrap_or(0)),
        })?;
        Ok(Box::new(KernelEventChannel {
            fd: owned,
            uverbs: dup,
        }))
    }
}

impl KernelDevx {
    /// MODIFY / QUERY on an object handle: same attributes, different method.
    fn obj_cmd(
        &self,
        method: u16,
        op: &'static str,
        obj: ObjHandle,
        inbox: &[u8],
        outbox: &mut [u8],
    ) -> Result<(), DevxError> {
        let [a, b] = Self::cmd_attrs(
            inbox,
            outbox,
            MLX5_IB_ATTR_DEVX_OBJ_CMD_IN,
            MLX5_IB_ATTR_DEVX_OBJ_CMD_OUT,
        )?;
        let h = Attr::Obj {
            id: MLX5_IB_ATTR_DEVX_OBJ_HANDLE,
            handle: obj.0 as u32,
        };
        let mut buf = IoctlBuf::build(MLX5_IB_OBJECT_DEVX_OBJ, method, &[h, a, b]);
        ioctl(self.fd(), &mut buf, op)
    }

    fn destroy_uar_handle(&self, handle: u64) -> Result<(), DevxError> {
        let h = Attr::Obj {
            id: MLX5_IB_ATTR_UAR_OBJ_DESTROY_HANDLE,
            handle: handle as u32,
        };
        let mut buf = IoctlBuf::build(MLX5_IB_OBJECT_UAR, MLX5_IB_METHOD_UAR_OBJ_DESTROY, &[h]);
        ioctl(self.fd(), &mut buf, "UAR_OBJ_DESTROY")
    }
}

/// An async event fd (`MLX5_IB_OBJECT_DEVX_ASYNC_EVENT_FD`).
struct KernelEventChannel {
    fd: OwnedFd,
    uverbs: File,
}

impl EventChannel for KernelEventChannel {
    fn subscribe(
        &self,
        obj: Option<ObjHandle>,
        event_types: &[u16],
        cookie: u64,
    ) -> Result<(), DevxError> {
        let types: Vec<u8> = event_types.iter().flat_map(|t| t.to_ne_bytes()).collect();
        let mut attrs = vec![
            Attr::Fd {
                id: MLX5_IB_ATTR_DEVX_SUBSCRIBE_EVENT_FD_HANDLE,
                fd: self.fd.as_raw_fd(),
            },
            Attr::U64 {
                id: MLX5_IB_ATTR_DEVX_SUBSCRIBE_EVENT_COOKIE,
                value: cookie,
            },
        ];
        if let Some(o) = obj {
            attrs.push(Attr::Obj {
                id: MLX5_IB_ATTR_DEVX_SUBSCRIBE_EVENT_OBJ_HANDLE,
                handle: o.0 as u32,
            });
        }
        attrs.push(Attr::input(
            MLX5_IB_ATTR_DEVX_SUBSCRIBE_EVENT_TYPE_NUM_LIST,
            &types,
        ));
        let mut buf = IoctlBuf::build(
            MLX5_IB_OBJECT_DEVX,
            MLX5_IB_METHOD_DEVX_SUBSCRIBE_EVENT,
            &attrs,
        );
        ioctl(self.uverbs.as_raw_fd(), &mut buf, "DEVX_SUBSCRIBE_EVENT")
    }

    fn read_event(&self, timeout: Duration) -> Result<Option<DevxEvent>, DevxError> {
        use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
        let ms = u16::try_from(timeout.as_millis()).unwrap_or(u16::MAX);
        let mut fds = [PollFd::new(
            std::os::fd::AsFd::as_fd(&self.fd),
            PollFlags::POLLIN,
        )];
        let n = poll(&mut fds, PollTimeout::from(ms)).map_err(|errno| DevxError::Os {
            op: "poll event fd",
            errno,
        })?;
        if n == 0 {
            return Ok(None);
        }
        let mut rec = [0u8; abi::ASYNC_EVENT_HDR_LEN + 64];
        let got = nix::unistd::read(&self.fd, &mut rec).map_err(|errno| DevxError::Os {
            op: "read event fd",
            errno,
        })?;
        if got < abi::ASYNC_EVENT_HDR_LEN {
            return Err(DevxError::BadMailbox(format!(
                "event record of {got} bytes is shorter than its 8-byte header"
            )));
        }
        let cookie = u64::from_ne_bytes(rec[..8].try_into().unwrap_or([0; 8]));
        Ok(Some(DevxEvent {
            cookie,
            data: rec[8..got].to_vec(),
        }))
    }
}

/// Where the kernel backend looks; see [`discovery`].
pub fn uverbs_path(index: u32) -> PathBuf {
    PathBuf::from(format!("/dev/infiniband/uverbs{index}"))
}

const _: () = {
    const fn is_send_sync<T: Send + Sync>() {}
    is_send_sync::<KernelDevx>();
};
