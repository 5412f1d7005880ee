//! DMA memory: page-aligned buffers, UMEM registration, protection domains and memory keys.
//!
//! Not implemented yet: this layer arrives with the queue work (issue "User-owned rings").
//! The PRM layouts and commands it will use (`create_mkey_in` / `mkc`, `alloc_pd_in`) are in
//! [`crate::mlx5`], and UMEM registration is a method of [`crate::devx::Devx`].
