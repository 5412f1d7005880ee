//! Marks the tests whose programs are missing here as ignored (`build-support/tools.rs`): the
//! RC tests dissect captures with tshark.
include!("../build-support/tools.rs");

fn main() {
    require_program("tshark", "no_tshark");
}
