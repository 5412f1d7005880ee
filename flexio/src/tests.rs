//! The C API's checks, without a device: what every entry point refuses, and the
//! application registry. The calls on a device are flexio/tests/c/api.c's (run by
//! tools/tests/real_clients.rs under `mlx5-dpa run`).

use std::ffi::{c_void, CStr, CString};
use std::ptr;

use super::*;

fn elf() -> Vec<u8> {
    std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../fw-blobs/bin/rpc_calc.elf"
    ))
    .expect("rpc_calc.elf")
}

fn create(name: &str, bytes: &mut [u8]) -> (FlexioStatus, *mut FlexioApp) {
    let name = CString::new(name).unwrap();
    let mut attr = FlexioAppAttr {
        app_name: name.as_ptr(),
        app_ptr: bytes.as_mut_ptr().cast(),
        app_bsize: bytes.len(),
        app_sig_sec_name: ptr::null_mut(),
    };
    let mut app = ptr::null_mut();
    // SAFETY: valid attributes over `bytes`, a writable out-pointer.
    let st = unsafe { flexio_app_create(&mut attr, &mut app) };
    (st, app)
}

extern "C" fn stub() {}

#[test]
fn an_application_keeps_its_elf_and_checks_its_functions() {
    let mut bytes = elf();
    let (st, app) = create("calc_test", &mut bytes);
    assert_eq!(st, FLEXIO_STATUS_SUCCESS);
    let len = bytes.len();
    bytes.fill(0); // the library has its own copy
                   // SAFETY: a live application; the buffers below are large enough or checked.
    unsafe {
        assert_eq!(
            CStr::from_ptr(flexio_app_get_name(app)).to_str().unwrap(),
            "calc_test"
        );
        assert_eq!(flexio_app_get_elf_size(app), len);
        let mut copy = vec![0u64; len.div_ceil(8)];
        assert_eq!(
            flexio_app_get_elf(app, copy.as_mut_ptr(), len),
            FLEXIO_STATUS_SUCCESS
        );
        assert_eq!(&bytemuck(&copy)[..4], b"\x7fELF");
        assert_eq!(
            flexio_app_get_elf(app, copy.as_mut_ptr(), len - 1),
            FLEXIO_STATUS_FAILED
        );

        let f = CString::new("rpc_calculate").unwrap();
        let unpack = CString::new("mlx5_dpa_rpc_unpack_u64").unwrap();
        let s = stub as *const c_void;
        let pack = stub as *const c_void;
        assert_eq!(
            flexio_func_pup_register(app, f.as_ptr(), unpack.as_ptr(), s, 16, pack),
            FLEXIO_STATUS_SUCCESS
        );
        // Twice, too large a buffer, an unknown unpack, a NULL pack: refused.
        assert_eq!(
            flexio_func_pup_register(app, f.as_ptr(), unpack.as_ptr(), s, 16, pack),
            FLEXIO_STATUS_FAILED
        );
        let other = (stub as *const c_void as usize + 1) as *const c_void;
        assert_eq!(
            flexio_func_pup_register(app, f.as_ptr(), unpack.as_ptr(), other, 1 << 20, pack),
            FLEXIO_STATUS_FAILED
        );
        let nope = CString::new("no_unpack").unwrap();
        assert_eq!(
            flexio_func_pup_register(app, f.as_ptr(), nope.as_ptr(), other, 16, pack),
            FLEXIO_STATUS_FAILED
        );
        assert_eq!(
            flexio_func_pup_register(app, f.as_ptr(), unpack.as_ptr(), other, 16, ptr::null()),
            FLEXIO_STATUS_FAILED
        );

        let mut pup = 9u32;
        let mut name = [0 as std::ffi::c_char; FLEXIO_MAX_NAME_LEN + 1];
        let mut unpack_name = [0 as std::ffi::c_char; FLEXIO_MAX_NAME_LEN + 1];
        let mut size = 0usize;
        let mut dev_addr = 0u64;
        assert_eq!(
            flexio_func_get_register_info(
                app,
                s,
                &mut pup,
                name.as_mut_ptr(),
                unpack_name.as_mut_ptr(),
                name.len(),
                &mut size,
                ptr::null_mut(),
                &mut dev_addr,
                ptr::null_mut(),
            ),
            FLEXIO_STATUS_SUCCESS
        );
        assert_eq!(pup, 1);
        assert_eq!(size, 16);
        assert_eq!(
            CStr::from_ptr(name.as_ptr()).to_str().unwrap(),
            "rpc_calculate"
        );
        assert_eq!(
            CStr::from_ptr(unpack_name.as_ptr()).to_str().unwrap(),
            "mlx5_dpa_rpc_unpack_u64"
        );
        assert_ne!(dev_addr, 0, "the device function's address");

        let echo = CString::new("rpc_echo").unwrap();
        let mut h: *const c_void = ptr::null();
        assert_eq!(
            flexio_func_register(app, echo.as_ptr(), &mut h),
            FLEXIO_STATUS_SUCCESS
        );
        assert!(!h.is_null());
        let mut pup2 = 9u32;
        assert_eq!(
            flexio_func_get_register_info(
                app,
                h,
                &mut pup2,
                ptr::null_mut(),
                ptr::null_mut(),
                0,
                ptr::null_mut(),
                ptr::null_mut(),
                ptr::null_mut(),
                ptr::null_mut(),
            ),
            FLEXIO_STATUS_SUCCESS
        );
        assert_eq!(pup2, 0);

        assert_eq!(flexio_app_destroy(app), FLEXIO_STATUS_SUCCESS);
        assert_eq!(flexio_app_destroy(app), FLEXIO_STATUS_FAILED);
        assert!(flexio_app_get_name(app).is_null());
    }
}

fn bytemuck(v: &[u64]) -> Vec<u8> {
    v.iter().flat_map(|w| w.to_le_bytes()).collect()
}

#[test]
fn bad_applications_and_handles_are_refused() {
    let mut garbage = vec![0x55u8; 256];
    assert_eq!(create("junk", &mut garbage).0, FLEXIO_STATUS_FAILED);
    let mut empty: Vec<u8> = Vec::new();
    assert_eq!(create("empty", &mut empty).0, FLEXIO_STATUS_FAILED);
    let long = "x".repeat(FLEXIO_MAX_NAME_LEN + 1);
    assert_eq!(create(&long, &mut elf()).0, FLEXIO_STATUS_FAILED);
    // SAFETY: every call below takes any pointer and checks it.
    unsafe {
        let mut app = ptr::null_mut();
        assert_eq!(
            flexio_app_create(ptr::null_mut(), &mut app),
            FLEXIO_STATUS_FAILED
        );
        let bogus = 0x1000 as *mut FlexioApp;
        assert!(flexio_app_get_name(bogus).is_null());
        assert_eq!(flexio_app_get_elf_size(ptr::null_mut()), 0);
        let mut process = ptr::null_mut();
        assert_eq!(
            flexio_process_create(ptr::null_mut(), bogus, ptr::null(), &mut process),
            FLEXIO_STATUS_FAILED
        );
        assert_eq!(
            flexio_process_destroy(ptr::null_mut()),
            FLEXIO_STATUS_SUCCESS
        );
        let bogus_p = 0x2000 as *mut FlexioProcess;
        assert_eq!(flexio_process_destroy(bogus_p), FLEXIO_STATUS_FAILED);
        assert_eq!(flexio_err_status_get(ptr::null_mut()), FLEXIO_DEV_NO_ERROR);
        assert_eq!(flexio_err_status_get(bogus_p), FLEXIO_DEV_FATAL_ERROR);
        assert_eq!(flexio_process_get_dumem_id(bogus_p), u32::MAX);
        assert!(flexio_process_get_uar(bogus_p).is_null());
        let mut daddr = 7u64;
        assert_eq!(
            flexio_buf_dev_alloc(bogus_p, 64, &mut daddr),
            FLEXIO_STATUS_FAILED
        );
        assert_eq!(daddr, 0, "the address is 0 on failure");
        assert_eq!(flexio_msg_stream_get_id(ptr::null_mut()), -1);
        assert_eq!(flexio_outbox_get_id(ptr::null_mut()), u32::MAX);
        assert_eq!(flexio_event_handler_get_obj_id(ptr::null_mut()), u32::MAX);
        assert_eq!(flexio_app_list_free(ptr::null_mut()), FLEXIO_STATUS_FAILED);
    }
}

#[test]
fn a_panic_becomes_a_failure() {
    assert_eq!(entry("test", || panic!("boom")), FLEXIO_STATUS_FAILED);
    assert_eq!(getter("test", 5u32, || panic!("boom")), 5);
}

#[test]
fn the_log_level_is_set_and_the_previous_one_returned() {
    let before = flexio_log_lvl_set(FLEXIO_LOG_LVL_DBG);
    assert_eq!(flexio_log_lvl_set(99), FLEXIO_LOG_LVL_DBG);
    assert_eq!(
        flexio_log_lvl_set(before),
        FLEXIO_LOG_LVL_DBG,
        "99 is taken as DBG"
    );
}
