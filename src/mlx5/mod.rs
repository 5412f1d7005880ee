//! The PRM as data: layouts, opcodes, status codes, typed commands and capabilities.
//!
//! Everything here is pure: it turns attribute structs into inbox bytes and outbox bytes into
//! typed results, and never performs I/O. There is no `unsafe` in this module tree. The one
//! piece of global state is the table of run-time corrections to provisional layouts (kept by
//! [`layout`], checked and installed by [`overrides`]), empty unless a user installs one.

pub mod caps;
pub mod cmd;
pub mod decode;
pub mod enums;
#[doc(hidden)]
pub mod fuzzing;
pub mod ids;
pub mod layout;
pub mod layouts;
pub mod opcode;
pub mod overrides;
pub mod status;
pub mod wire;

pub use enums::{PortType, QpServiceType, QpState, UnknownValue, WqState, WqType};
pub use ids::{Cqn, Pdn, Qpn, Rqn, Sqn};
pub use layout::{Field, Layout, LayoutDesc, LayoutError, View, ViewMut};
pub use opcode::{DevxMethod, Opcode};
pub use status::Status;
