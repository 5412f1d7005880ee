//! Writes the uverbs fuzz target's seed (`mlx5_sim_uverbs::fuzzing::seed_program`: a program
//! of calls that all succeed) to standard output; `fuzz/seed.sh` puts it in the corpus.
use std::io::Write;

fn main() -> std::io::Result<()> {
    std::io::stdout().write_all(&mlx5_sim_uverbs::fuzzing::seed_program())
}
