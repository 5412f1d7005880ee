//! The firmware model command by command: success, and every validation failure class a
//! command can produce, asserted by its exact check (`status` and the model's syndrome from
//! `mlx5_sim::fw::check`). Then the state machines, the reference rules (what may be destroyed
//! when), the kernel DevX layer's rules, fault injection, capacity limits and the inventory.
//!
//! Everything goes through the driver's typed commands (`mlx5_dpa::mlx5::cmd`) and the DevX
//! trait, as driver code would; invalid mailboxes are typed mailboxes patched afterwards.

mod harness;

mod faults;
mod general;
mod objects;
mod queries;
mod rules;
