//! Embeds fw-blobs' RPC sample program as application `calc`, with typed handles to two of
//! its RPCs and one entry run as an event handler (checked against the ELF's symbols here: a
//! misspelt name fails the build).

use mlx5_dpa::dpa::embed::{embed, EmbeddedApp};

fn main() {
    let apps = [EmbeddedApp::new("calc", "../../fw-blobs/bin/rpc_calc.elf")
        .rpc("rpc_calculate", 2)
        .rpc("rpc_digits8", 8)
        .handler("rpc_echo")];
    if let Err(e) = embed(&apps) {
        panic!("embedding the DPA applications: {e}");
    }
}
