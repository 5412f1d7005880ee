//! UAR pages, doorbell records, MMIO doorbell writes and the device barriers that order them.
//!
//! Not implemented yet: this layer arrives with the queue work. UAR allocation and mapping are
//! already available from [`crate::devx::Devx::uar_alloc`].
