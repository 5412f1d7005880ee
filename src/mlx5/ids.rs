//! Object numbers as firmware gives them out, one type per kind of object, so a CQ number
//! cannot be passed where an SQ number belongs. Command attributes take these; the queue and
//! memory layers hand them out.

use std::fmt;

macro_rules! ids {
    ($($(#[$m:meta])* $name:ident: $what:literal;)*) => {$(
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(pub u32);

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!($what, " {:#x}"), self.0)
            }
        }

        impl From<$name> for u64 {
            fn from(v: $name) -> u64 {
                u64::from(v.0)
            }
        }
    )*};
}

ids! {
    /// A CQ number (`cqn`, 24 bits).
    Cqn: "CQ";
    /// An SQ number (`sqn`, 24 bits).
    Sqn: "SQ";
    /// An RQ number (`rqn`, 24 bits).
    Rqn: "RQ";
    /// A QP number (`qpn`, 24 bits).
    Qpn: "QP";
    /// A protection domain number (`pd`, 24 bits).
    Pdn: "PD";
}
