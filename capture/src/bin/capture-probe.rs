//! A program that makes three DevX calls the way an rdma-core program does, finding the
//! functions by name at run time: with the capture library preloaded they are its (and, with no
//! rdma-core behind it, fail with ENOSYS, recorded). Without it nothing defines them: exit 2.
//! `tests/preload.rs` runs it.

use std::ffi::{c_int, c_void};

type CmdFn = unsafe extern "C" fn(*mut c_void, *const c_void, usize, *mut c_void, usize) -> c_int;
type CreateFn =
    unsafe extern "C" fn(*mut c_void, *const c_void, usize, *mut c_void, usize) -> *mut c_void;
type UmemRegFn = unsafe extern "C" fn(*mut c_void, *mut c_void, usize, u32) -> *mut c_void;

fn sym(name: &'static [u8]) -> Option<*mut c_void> {
    // SAFETY: a NUL-terminated literal; RTLD_DEFAULT searches the loaded objects in order.
    let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr().cast()) };
    (!p.is_null()).then_some(p)
}

fn main() {
    let (Some(cmd), Some(create), Some(umem)) = (
        sym(b"mlx5dv_devx_general_cmd\0"),
        sym(b"mlx5dv_devx_obj_create\0"),
        sym(b"mlx5dv_devx_umem_reg\0"),
    ) else {
        eprintln!("no mlx5dv_devx_* functions: the capture library is not preloaded");
        std::process::exit(2);
    };
    // QUERY_HCA_CAP (0x100), op_mod 1 (general caps, current).
    let query: [u8; 16] = [1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0];
    let mut out = [0u8; 16];
    // CREATE_CQ (0x400) header only.
    let create_cq: [u8; 16] = [4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    let mut buf = vec![0u8; 4096];
    // SAFETY: each pointer is the function of that name (C types of rdma-core's mlx5dv.h);
    // buffers are valid for the lengths given.
    unsafe {
        let cmd: CmdFn = std::mem::transmute::<*mut c_void, CmdFn>(cmd);
        let create: CreateFn = std::mem::transmute::<*mut c_void, CreateFn>(create);
        let umem: UmemRegFn = std::mem::transmute::<*mut c_void, UmemRegFn>(umem);
        let r = cmd(
            std::ptr::null_mut(),
            query.as_ptr().cast(),
            query.len(),
            out.as_mut_ptr().cast(),
            out.len(),
        );
        println!("general_cmd: {r}");
        let o = create(
            std::ptr::null_mut(),
            create_cq.as_ptr().cast(),
            create_cq.len(),
            out.as_mut_ptr().cast(),
            out.len(),
        );
        println!(
            "obj_create: {}",
            if o.is_null() { "null" } else { "object" }
        );
        let u = umem(std::ptr::null_mut(), buf.as_mut_ptr().cast(), buf.len(), 1);
        println!("umem_reg: {}", if u.is_null() { "null" } else { "umem" });
    }
}
