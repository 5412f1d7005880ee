//! CQ, SQ, RQ and RC QP rings owned by the user: WQE builders, CQE parsing, arming.
//!
//! Not implemented yet: this layer arrives with the queue work. The firmware side of every
//! queue (`cqc`, `sqc`, `rqc`, `wq`, `qpc`, and their create / modify / query commands) is in
//! [`crate::mlx5`].
