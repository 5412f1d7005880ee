//! Compiles the C part of the library: `flexio_process_call`, which takes C variadic
//! arguments (a stable-Rust function cannot), and hands a user pack function its `va_list`.

fn main() {
    println!("cargo:rerun-if-changed=src/call.c");
    cc::Build::new()
        .file("src/call.c")
        .warnings(true)
        .extra_warnings(true)
        .compile("flexio_call");
}
