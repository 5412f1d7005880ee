//! Command status codes (PRM "Command Return Status"; `MLX5_CMD_STAT_*` in rdma-core
//! `providers/mlx5/mlx5_ifc.h` and the kernel's `include/linux/mlx5/device.h`).

use core::fmt;

/// The `status` byte of a command output mailbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Status(pub u8);

impl Status {
    pub const OK: Status = Status(0x0);
    pub const INT_ERR: Status = Status(0x1);
    pub const BAD_OP: Status = Status(0x2);
    pub const BAD_PARAM: Status = Status(0x3);
    pub const BAD_SYS_STATE: Status = Status(0x4);
    pub const BAD_RES: Status = Status(0x5);
    pub const RES_BUSY: Status = Status(0x6);
    pub const NOT_READY: Status = Status(0x7);
    pub const LIM_ERR: Status = Status(0x8);
    pub const BAD_RES_STATE: Status = Status(0x9);
    pub const IX_ERR: Status = Status(0xa);
    pub const NO_RES: Status = Status(0xf);
    pub const BAD_QP_STATE: Status = Status(0x10);
    pub const BAD_PKT: Status = Status(0x30);
    pub const BAD_SIZE_OUTS_CQES: Status = Status(0x40);
    pub const BAD_INP_LEN: Status = Status(0x50);
    pub const BAD_OUTP_LEN: Status = Status(0x51);

    /// Every status the PRM names, for tables and tests.
    pub const ALL: [Status; 17] = [
        Self::OK,
        Self::INT_ERR,
        Self::BAD_OP,
        Self::BAD_PARAM,
        Self::BAD_SYS_STATE,
        Self::BAD_RES,
        Self::RES_BUSY,
        Self::NOT_READY,
        Self::LIM_ERR,
        Self::BAD_RES_STATE,
        Self::IX_ERR,
        Self::NO_RES,
        Self::BAD_QP_STATE,
        Self::BAD_PKT,
        Self::BAD_SIZE_OUTS_CQES,
        Self::BAD_INP_LEN,
        Self::BAD_OUTP_LEN,
    ];

    /// PRM name without the `MLX5_CMD_STAT_` prefix, or `None` for an unknown value.
    pub const fn name(self) -> Option<&'static str> {
        Some(match self.0 {
            0x0 => "OK",
            0x1 => "INT_ERR",
            0x2 => "BAD_OP",
            0x3 => "BAD_PARAM",
            0x4 => "BAD_SYS_STATE",
            0x5 => "BAD_RES",
            0x6 => "RES_BUSY",
            0x7 => "NOT_READY",
            0x8 => "LIM_ERR",
            0x9 => "BAD_RES_STATE",
            0xa => "IX_ERR",
            0xf => "NO_RES",
            0x10 => "BAD_QP_STATE",
            0x30 => "BAD_PKT",
            0x40 => "BAD_SIZE_OUTS_CQES",
            0x50 => "BAD_INP_LEN",
            0x51 => "BAD_OUTP_LEN",
            _ => return None,
        })
    }

    /// Looks a status up by its PRM name (with or without `MLX5_CMD_STAT_`).
    pub fn from_name(name: &str) -> Option<Status> {
        let n = name.strip_prefix("MLX5_CMD_STAT_").unwrap_or(name);
        Self::ALL.into_iter().find(|s| s.name() == Some(n))
    }

    pub const fn is_ok(self) -> bool {
        self.0 == 0
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) => write!(f, "{n} ({:#x})", self.0),
            None => write!(f, "UNKNOWN ({:#x})", self.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn names_round_trip() {
        for s in Status::ALL {
            assert_eq!(Status::from_name(s.name().unwrap()), Some(s));
        }
        assert_eq!(Status(0x77).name(), None);
        assert_eq!(Status::BAD_PARAM.to_string(), "BAD_PARAM (0x3)");
    }
}
