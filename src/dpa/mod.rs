//! FlexIO semantics for the BlueField-3 DPA: processes, threads and event handlers, RPC,
//! windows, outboxes, DPA memory and DPA-resident queues.
//!
//! Not implemented yet: this layer arrives with the FlexIO work. The DPA general objects
//! (provisional layouts) and the DPA capability page are in [`crate::mlx5`].
