//! PRM enumerations that fields of the layouts hold: one Rust enum each, with the values of
//! `mlx5_ifc.h` (the names in each doc comment; docs/sources.md section 1).
//!
//! A layout declares such a field `state @ 0x..: 4 as QpState`; [`View::value`] then reads a
//! `Result<QpState, UnknownValue>` (a device may report a value this driver does not know) and
//! [`ViewMut::set_value`] writes one. The driver's commands and the model's firmware share
//! these types, so both halves name a state the same way.
//!
//! ```
//! use mlx5_dpa::layout;
//! use mlx5_dpa::mlx5::enums::{PortType, UnknownValue};
//! use mlx5_dpa::mlx5::{View, ViewMut};
//!
//! layout! {
//!     /// A made-up layout with one enumerated field.
//!     pub example: 0x20 {
//!         port_type @ 0x1e : 0x2 as PortType,
//!     }
//! }
//!
//! fn main() {
//!     let mut b = [0u8; 4];
//!     let mut w = ViewMut::<example::Layout>::new(&mut b).unwrap();
//!     w.set_value(example::port_type, PortType::Eth);
//!     assert_eq!(b, [0, 0, 0, 1]);
//!     let v = View::<example::Layout>::new(&b).unwrap();
//!     assert_eq!(v.value(example::port_type), Ok(PortType::Eth));
//!     b[3] = 2;
//!     let v = View::<example::Layout>::new(&b).unwrap();
//!     let unknown = UnknownValue { enumeration: "PortType", value: 2 };
//!     assert_eq!(v.value(example::port_type), Err(unknown));
//! }
//! ```
//!
//! An enumeration narrower than its field is refused at compile time:
//!
//! ```compile_fail
//! use mlx5_dpa::layout;
//! use mlx5_dpa::mlx5::enums::PortType;
//! layout! {
//!     pub example: 0x20 {
//!         port_type @ 0x1c : 0x4 as PortType,
//!     }
//! }
//! # fn main() {}
//! ```
//!
//! [`View::value`]: super::View::value
//! [`ViewMut::set_value`]: super::ViewMut::set_value

use core::fmt;

use super::layout::FieldType;

/// A field held a value its enumeration does not name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{value:#x} is not a known {enumeration}")]
pub struct UnknownValue {
    /// The enumeration's Rust name (`QpState`).
    pub enumeration: &'static str,
    /// The field's bits.
    pub value: u64,
}

/// Declares a PRM enumeration: the enum, `from_raw` / `raw` / `name`, `Display` with the PRM
/// name, and [`FieldType`] so a layout field can hold it.
macro_rules! prm_enum {
    (
        $(#[doc = $doc:literal])*
        $name:ident: $bits:literal {
            $( $(#[doc = $vdoc:literal])* $variant:ident = $value:literal => $prm:literal ),* $(,)?
        }
    ) => {
        $(#[doc = $doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[repr(u8)]
        pub enum $name {
            $( $(#[doc = $vdoc])* #[doc = concat!("`", $prm, "`")] $variant = $value ),*
        }

        impl $name {
            /// Every value, in PRM order.
            pub const ALL: &'static [$name] = &[$($name::$variant),*];

            /// The enumeration value of raw field bits, if it is one.
            pub const fn from_raw(v: u64) -> Option<$name> {
                match v {
                    $( $value => Some($name::$variant), )*
                    _ => None,
                }
            }

            /// The field bits of this value.
            pub const fn raw(self) -> u8 {
                self as u8
            }

            /// The `mlx5_ifc.h` name of this value.
            pub const fn name(self) -> &'static str {
                match self {
                    $( $name::$variant => $prm, )*
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }

        impl From<$name> for u64 {
            fn from(v: $name) -> u64 {
                u64::from(v as u8)
            }
        }

        impl FieldType for $name {
            type Value = Result<$name, UnknownValue>;
            const BITS: u32 = $bits;
            fn from_bits(bits: u64) -> Self::Value {
                $name::from_raw(bits).ok_or(UnknownValue {
                    enumeration: stringify!($name),
                    value: bits,
                })
            }
            fn to_bits(self) -> u64 {
                u64::from(self)
            }
        }
    };
}

prm_enum! {
    /// QP states (`qpc.state`, `MLX5_QPC_STATE_*`).
    QpState: 4 {
        Rst = 0x0 => "MLX5_QPC_STATE_RST",
        Init = 0x1 => "MLX5_QPC_STATE_INIT",
        Rtr = 0x2 => "MLX5_QPC_STATE_RTR",
        Rts = 0x3 => "MLX5_QPC_STATE_RTS",
        SqEr = 0x4 => "MLX5_QPC_STATE_SQER",
        Err = 0x6 => "MLX5_QPC_STATE_ERR",
        /// Send queue drained; the model does not enter it.
        Sqd = 0x7 => "MLX5_QPC_STATE_SQD",
        /// Suspended; the model does not enter it.
        Suspended = 0x9 => "MLX5_QPC_STATE_SUSPENDED",
    }
}

prm_enum! {
    /// QP service types (`qpc.st`, `MLX5_QPC_ST_*`).
    QpServiceType: 8 {
        Rc = 0x0 => "MLX5_QPC_ST_RC",
        Uc = 0x1 => "MLX5_QPC_ST_UC",
        Ud = 0x2 => "MLX5_QPC_ST_UD",
        Xrc = 0x3 => "MLX5_QPC_ST_XRC",
        Dci = 0x5 => "MLX5_QPC_ST_DCI",
        Qp0 = 0x7 => "MLX5_QPC_ST_QP0",
        Qp1 = 0x8 => "MLX5_QPC_ST_QP1",
        RawDatagram = 0x9 => "MLX5_QPC_ST_RAW_DATAGRAM",
        RegUmr = 0xc => "MLX5_QPC_ST_REG_UMR",
    }
}

prm_enum! {
    /// Work queue states (`sqc.state`, `rqc.state`, `rmpc.state`; `MLX5_SQC_STATE_*`,
    /// `MLX5_RQC_STATE_*`, `MLX5_RMPC_STATE_*`, which share their values).
    WqState: 4 {
        Rst = 0x0 => "MLX5_SQC_STATE_RST",
        Rdy = 0x1 => "MLX5_SQC_STATE_RDY",
        Err = 0x3 => "MLX5_SQC_STATE_ERR",
    }
}

prm_enum! {
    /// Work queue types (`wq.wq_type`, `MLX5_WQ_TYPE_*`).
    WqType: 4 {
        /// Each WQE begins with a next segment naming its successor (SRQs, RMPs).
        LinkedList = 0x0 => "MLX5_WQ_TYPE_LINKED_LIST",
        Cyclic = 0x1 => "MLX5_WQ_TYPE_CYCLIC",
        LinkedListStridingRq = 0x2 => "MLX5_WQ_TYPE_LINKED_LIST_STRIDING_RQ",
        CyclicStridingRq = 0x3 => "MLX5_WQ_TYPE_CYCLIC_STRIDING_RQ",
    }
}

prm_enum! {
    /// Port types (`cmd_hca_cap.port_type`, `MLX5_CAP_PORT_TYPE_*`).
    PortType: 2 {
        Ib = 0x0 => "MLX5_CAP_PORT_TYPE_IB",
        Eth = 0x1 => "MLX5_CAP_PORT_TYPE_ETH",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_values_round_trip_and_unknown_ones_are_refused() {
        for s in QpState::ALL {
            assert_eq!(QpState::from_raw(u64::from(*s)), Some(*s));
        }
        assert_eq!(QpState::from_raw(0x5), None);
        assert_eq!(
            <QpState as FieldType>::from_bits(0x5),
            Err(UnknownValue {
                enumeration: "QpState",
                value: 0x5
            })
        );
        assert_eq!(WqState::Rdy.to_string(), "MLX5_SQC_STATE_RDY");
        assert_eq!(
            QpServiceType::from_raw(0x9),
            Some(QpServiceType::RawDatagram)
        );
    }
}
