//! Embeds fw-blobs' RPC sample program as application `calc`, with typed handles to two of
//! its RPCs and one entry run as an event handler (checked against the ELF's symbols here: a
//! misspelt name fails the build), and its signature: `rpc_calc.elf.sig`, made with the test
//! key of `tests/data/auth` (`mlx5-dpa sign fw-blobs/bin/rpc_calc.elf --key
//! tests/data/auth/leaf.key.pem --cert tests/data/auth/root.der --cert tests/data/auth/leaf.der
//! -o crates/dpa-embed-example/rpc_calc.elf.sig`; RSA PKCS#1 v1.5 signatures are
//! deterministic, so that command gives these bytes again; a rebuilt ELF needs it rerun, and
//! the build says so).

use mlx5_dpa::dpa::embed::{embed, EmbeddedApp};

fn main() {
    let apps = [EmbeddedApp::new("calc", "../../fw-blobs/bin/rpc_calc.elf")
        .rpc("rpc_calculate", 2)
        .rpc("rpc_digits8", 8)
        .handler("rpc_echo")
        .signature("rpc_calc.elf.sig")];
    if let Err(e) = embed(&apps) {
        panic!("embedding the DPA applications: {e}");
    }
}
