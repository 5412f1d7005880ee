//! The port: frames out (loopback, a link to another model device, a TAP interface, or
//! nowhere), frames in, and pcap captures of both.

use std::time::SystemTime;

use crate::datapath::steering;
use crate::port::roce;
use crate::state::datapath::*;
use crate::state::Firmware;
use mlx5_dpa::sync::lock;

pub(crate) fn capture(dp: &mut Datapath, frame: &[u8]) {
    if dp.port.captures.is_empty() {
        return;
    }
    let ts = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    dp.port
        .captures
        .retain_mut(|c| match c.write_frame(ts, frame) {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(target: "mlx5_sim::engine", "pcap capture dropped: {e}");
                false
            }
        });
}

/// Sends a frame out of the port. `td` is the sender's transport domain (self-loopback).
pub(crate) fn transmit(fw: &mut Firmware, dp: &mut Datapath, frame: &[u8], td: Option<u32>) {
    dp.port.stats.tx_frames += 1;
    dp.port.stats.tx_bytes += frame.len() as u64;
    capture(dp, frame);
    match &dp.port.mode {
        // RC frames coming back are queued, not handled here: the RC receiver answers, and
        // its answers must not recurse into the sender.
        PortMode::Loopback if roce::is_for(frame, &fw.profile.mac, &fw.profile.ipv4) => {
            dp.enqueue_local(frame)
        }
        PortMode::Loopback => steering::receive(fw, dp, frame, td),
        PortMode::Link(end) => {
            let mut q = lock(&end.tx);
            if q.len() >= LINK_QUEUE {
                dp.port.stats.tx_dropped += 1;
            } else {
                q.push_back(frame.to_vec());
            }
        }
        PortMode::Tap(tap) => {
            if tap.send(frame).is_err() {
                dp.port.stats.tx_dropped += 1;
            }
        }
        // RoCE frames for this port itself loop back inside the NIC, as on hardware; the rest
        // goes on the wire.
        PortMode::Udp(_) if roce::is_for(frame, &fw.profile.mac, &fw.profile.ipv4) => {
            dp.enqueue_local(frame)
        }
        PortMode::Udp(port) => {
            if port.send(frame).is_err() {
                dp.port.stats.tx_dropped += 1;
            }
        }
        PortMode::Down => dp.port.stats.tx_dropped += 1,
    }
}
