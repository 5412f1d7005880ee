//! Event queue entries: `struct mlx5_eqe` and the event data the model and the driver use
//! (kernel `include/linux/mlx5/device.h`: `mlx5_eqe_comp`, `mlx5_eqe_cq_err`,
//! `mlx5_eqe_qp_srq`, `mlx5_eqe_port_state`).
//!
//! A DevX event channel delivers the EQE of an event it subscribed to; [`Event::parse`] reads
//! it, [`Event::emit`] writes one (the device model does).

use super::{wire_view, ShortBuffer};
use crate::layout;

layout! {
    /// `mlx5_eqe`; offsets as in the kernel's `include/linux/mlx5/device.h` (`type` is named
    /// `event_type` here; `data` is the 28-byte union of the event kinds declared below).
    pub mlx5_eqe: 0x200 {
        event_type @ 0x8 : 0x8,
        sub_type @ 0x18 : 0x8,
        data @ 0x100 : [0x20; 7],
        signature @ 0x1f0 : 0x8,
        owner @ 0x1f8 : 0x8,
    }
}

layout! {
    /// `mlx5_eqe_comp` (kernel `device.h`), at `mlx5_eqe.data`.
    pub mlx5_eqe_comp: 0xe0 {
        cqn @ 0xc0 : 0x20,
    }
}

layout! {
    /// `mlx5_eqe_cq_err` (kernel `device.h`), at `mlx5_eqe.data`.
    pub mlx5_eqe_cq_err: 0xe0 {
        cqn @ 0x0 : 0x20,
        syndrome @ 0x58 : 0x8,
    }
}

layout! {
    /// `mlx5_eqe_qp_srq` (kernel `device.h`, where `type_` is `type`), at `mlx5_eqe.data`.
    pub mlx5_eqe_qp_srq: 0xe0 {
        type_ @ 0xa0 : 0x8,
        qp_srq_n @ 0xc0 : 0x20,
    }
}

layout! {
    /// `mlx5_eqe_port_state` (kernel `device.h`), at `mlx5_eqe.data`.
    pub mlx5_eqe_port_state: 0xe0 {
        port @ 0x40 : 0x8,
    }
}

/// Size of an EQE.
pub const EQE_SIZE: usize = 64;
/// Where `data` starts.
const DATA: usize = super::byte_at(super::first(mlx5_eqe::data));

/// EQ event types (PRM; kernel `enum mlx5_event`).
pub mod event_type {
    pub const COMP: u8 = 0x00;
    pub const PATH_MIG: u8 = 0x01;
    pub const COMM_EST: u8 = 0x02;
    pub const SQ_DRAINED: u8 = 0x03;
    pub const CQ_ERROR: u8 = 0x04;
    pub const WQ_CATAS_ERROR: u8 = 0x05;
    pub const PATH_MIG_FAILED: u8 = 0x07;
    pub const INTERNAL_ERROR: u8 = 0x08;
    pub const PORT_CHANGE: u8 = 0x09;
    pub const WQ_INVAL_REQ_ERROR: u8 = 0x10;
    pub const WQ_ACCESS_ERROR: u8 = 0x11;
    pub const SRQ_CATAS_ERROR: u8 = 0x12;
    pub const SRQ_LAST_WQE: u8 = 0x13;
    pub const SRQ_RQ_LIMIT: u8 = 0x14;
}

/// A decoded event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// A CQ has a new completion (`mlx5_eqe_comp.cqn`).
    Completion { cqn: u32 },
    /// A CQ failed (overrun, access error): `mlx5_eqe_cq_err`.
    CqError { cqn: u32, syndrome: u8 },
    /// A QP / SRQ affiliated event (`mlx5_eqe_qp_srq`): path migration, last WQE, errors.
    QpSrq {
        event_type: u8,
        /// `type`: 0 = QP, 1 = SRQ.
        resource_type: u8,
        qp_srq_n: u32,
    },
    /// Port state change (`mlx5_eqe_port_state.port`, bits 7:4).
    PortChange { sub_type: u8, port: u8 },
    /// Anything else, undecoded.
    Other { event_type: u8, sub_type: u8 },
}

wire_view! {
    /// A 64-byte EQE (`struct mlx5_eqe`) over any byte buffer.
    Eqe over mlx5_eqe, "EQE", EQE_SIZE;
    /// `type`: see [`event_type`].
    event_type / set_event_type: u8,
    /// `sub_type`.
    sub_type / set_sub_type: u8,
    /// `signature`.
    signature / set_signature: u8,
    /// `owner` (bit 0).
    owner / set_owner: u8,
}

/// `data` read as one of the event kinds: `$layout`'s field at `data`'s offset.
macro_rules! data_field {
    ($layout:ident :: $field:ident) => {
        DATA + super::byte_at($layout::$field)
    };
}

const COMP_CQN: usize = data_field!(mlx5_eqe_comp::cqn);
const CQ_ERR_CQN: usize = data_field!(mlx5_eqe_cq_err::cqn);
const CQ_ERR_SYNDROME: usize = data_field!(mlx5_eqe_cq_err::syndrome);
const QP_SRQ_TYPE: usize = data_field!(mlx5_eqe_qp_srq::type_);
const QP_SRQ_N: usize = data_field!(mlx5_eqe_qp_srq::qp_srq_n);
const PORT_STATE_PORT: usize = data_field!(mlx5_eqe_port_state::port);

fn be32(b: &[u8], at: usize) -> u32 {
    <u32 as super::Be>::get(b, at)
}

impl Eqe<[u8; EQE_SIZE]> {
    /// A copy of the first 64 bytes of `b`.
    ///
    /// # Errors
    /// `b` is shorter than 64 bytes.
    #[inline]
    pub fn copy_from(b: &[u8]) -> Result<Self, ShortBuffer> {
        super::check_len("EQE", b, EQE_SIZE)?;
        let mut a = [0u8; EQE_SIZE];
        a.copy_from_slice(&b[..EQE_SIZE]);
        Ok(Eqe::new_unchecked(a))
    }
}

impl<T: AsRef<[u8]>> Eqe<T> {
    /// Decodes the event data by type ([`Event::parse`]).
    #[inline]
    pub fn decode(&self) -> Event {
        Event::parse(self)
    }
}

impl Event {
    /// Reads the event an EQE reports.
    pub fn parse<T: AsRef<[u8]>>(eqe: &Eqe<T>) -> Event {
        let b = eqe.as_bytes();
        match eqe.event_type() {
            event_type::COMP => Event::Completion {
                cqn: be32(b, COMP_CQN) & 0xff_ffff,
            },
            event_type::CQ_ERROR => Event::CqError {
                cqn: be32(b, CQ_ERR_CQN) & 0xff_ffff,
                syndrome: b[CQ_ERR_SYNDROME],
            },
            t @ (event_type::PATH_MIG
            | event_type::COMM_EST
            | event_type::SQ_DRAINED
            | event_type::WQ_CATAS_ERROR
            | event_type::PATH_MIG_FAILED
            | event_type::WQ_INVAL_REQ_ERROR
            | event_type::WQ_ACCESS_ERROR
            | event_type::SRQ_CATAS_ERROR
            | event_type::SRQ_LAST_WQE
            | event_type::SRQ_RQ_LIMIT) => Event::QpSrq {
                event_type: t,
                resource_type: b[QP_SRQ_TYPE],
                qp_srq_n: be32(b, QP_SRQ_N) & 0xff_ffff,
            },
            event_type::PORT_CHANGE => Event::PortChange {
                sub_type: eqe.sub_type(),
                port: b[PORT_STATE_PORT] >> 4,
            },
            event_type => Event::Other {
                event_type,
                sub_type: eqe.sub_type(),
            },
        }
    }

    /// Writes this event into `eqe`: the type, the sub-type where the event has one, and the
    /// event data [`Event::parse`] reads (other bytes are left as they are).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, eqe: &mut Eqe<T>) {
        match *self {
            Event::Completion { cqn } => {
                eqe.set_event_type(event_type::COMP);
                (cqn & 0xff_ffff).put_at(eqe, COMP_CQN);
            }
            Event::CqError { cqn, syndrome } => {
                eqe.set_event_type(event_type::CQ_ERROR);
                (cqn & 0xff_ffff).put_at(eqe, CQ_ERR_CQN);
                eqe.as_bytes_mut()[CQ_ERR_SYNDROME] = syndrome;
            }
            Event::QpSrq {
                event_type,
                resource_type,
                qp_srq_n,
            } => {
                eqe.set_event_type(event_type);
                eqe.as_bytes_mut()[QP_SRQ_TYPE] = resource_type;
                (qp_srq_n & 0xff_ffff).put_at(eqe, QP_SRQ_N);
            }
            Event::PortChange { sub_type, port } => {
                eqe.set_event_type(event_type::PORT_CHANGE);
                eqe.set_sub_type(sub_type);
                let b = eqe.as_bytes_mut();
                b[PORT_STATE_PORT] = (b[PORT_STATE_PORT] & 0x0f) | (port << 4);
            }
            Event::Other {
                event_type,
                sub_type,
            } => {
                eqe.set_event_type(event_type);
                eqe.set_sub_type(sub_type);
            }
        }
    }

    /// A fresh 64-byte EQE image holding this event (zeros elsewhere).
    pub fn to_eqe(&self) -> [u8; EQE_SIZE] {
        let mut e = Eqe::new_unchecked([0u8; EQE_SIZE]);
        self.emit(&mut e);
        e.into_inner()
    }
}

trait PutAt {
    fn put_at<T: AsRef<[u8]> + AsMut<[u8]>>(self, eqe: &mut Eqe<T>, at: usize);
}

impl PutAt for u32 {
    fn put_at<T: AsRef<[u8]> + AsMut<[u8]>>(self, eqe: &mut Eqe<T>, at: usize) {
        <u32 as super::Be>::put(self, eqe.as_bytes_mut(), at);
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::poisoned;
    use super::*;

    #[test]
    fn completion_eqe_names_the_cq() {
        let mut b = [0u8; 64];
        b[1] = event_type::COMP;
        b[0x38..0x3c].copy_from_slice(&0x0000_0401u32.to_be_bytes());
        assert_eq!(
            Eqe::copy_from(&b).unwrap().decode(),
            Event::Completion { cqn: 0x401 }
        );
    }

    #[test]
    fn short_input_is_an_error() {
        assert!(Eqe::copy_from(&[]).is_err());
        assert!(Eqe::new_checked(&[0u8; 63][..]).is_err());
    }

    #[test]
    fn events_round_trip_through_a_poisoned_eqe() {
        let events = [
            Event::Completion { cqn: 0x12_3456 },
            Event::CqError {
                cqn: 0x00_0401,
                syndrome: 1,
            },
            Event::QpSrq {
                event_type: event_type::WQ_CATAS_ERROR,
                resource_type: 0,
                qp_srq_n: 0xab_cdef,
            },
            Event::QpSrq {
                event_type: event_type::SRQ_LAST_WQE,
                resource_type: 1,
                qp_srq_n: 0x77,
            },
            Event::PortChange {
                sub_type: 4,
                port: 1,
            },
            Event::Other {
                event_type: 0x0a,
                sub_type: 0x33,
            },
        ];
        for ev in events {
            let mut e = Eqe::new_checked(poisoned::<64>()).unwrap();
            ev.emit(&mut e);
            assert_eq!(Event::parse(&e), ev);
            assert_eq!(Event::parse(&Eqe::new_unchecked(ev.to_eqe())), ev);
        }
    }
}
