//! `mlx5-dpa sim`: the model as a small host on a TAP interface (or in loopback).

use super::*;

/// `mlx5-dpa sim`: the model as a host on a TAP interface.
pub(crate) fn sim(
    cli: &Cli,
    &SimArgs {
        ref tap,
        ip,
        seconds,
        ref pcap,
        app,
        ps,
        ref gdb,
    }: &SimArgs,
) -> Result<(), ToolError> {
    let (tap, pcap, gdb) = (tap.as_deref(), pcap.as_deref(), gdb.as_deref());
    // Ctrl-C ends the run early, with its summary: caught from the start, so that one during
    // set-up (after a client saw the GDB server's line, say) ends it cleanly too.
    signals::catch_sigint();
    use demo::flexio_packet_processor as pp;
    use mlx5_sim::{responder::Responder, Device, PortMode};
    let name = cli.sim.as_deref().unwrap_or(DEFAULT_PROFILE);
    let dev = Device::with_profile(name).ok_or_else(|| ToolError::UnknownProfile {
        name: name.to_owned(),
    })?;
    let mac = dev.with_profile_mut(|p| p.mac);
    match tap {
        Some(t) => {
            let tap = mlx5_sim::port::tap::Tap::open(t)
                .map_err(|e| ToolError::Input(format!("cannot attach to TAP {t:?}: {e}")))?;
            println!("model port attached to TAP {}", tap.name());
            dev.set_port(PortMode::Tap(tap));
        }
        None => println!("model port in internal loopback (use --tap NAME to reach the kernel)"),
    }
    if let Some(path) = pcap {
        let f = std::fs::File::create(path)
            .map_err(|e| ToolError::Input(format!("cannot create {}: {e}", path.display())))?;
        dev.capture(std::io::BufWriter::new(f))
            .map_err(|e| ToolError::Input(format!("pcap {}: {e}", path.display())))?;
    }
    // The application's rule is made first, so it is tried before the responder's catch-all.
    let app_ctx = dev.open_devx();
    let mut processor = None;
    if app == Some(SimApp::PacketProcessor) {
        // Set-up copies into DPA memory need the engine running; the responder also steps it.
        dev.start_engine();
        let p = pp::PacketProcessor::setup(&app_ctx, &pp::Options::default())
            .and_then(|p| p.wait_ready(std::time::Duration::from_secs(5)).map(|()| p))
            .map_err(|e| ToolError::Input(format!("packet processor: {e}")))?;
        let (rqn, _, sqn, _) = p.queues();
        println!(
            "packet processor on the DPA (process {:#x}, RQ {rqn:#x}, SQ {sqn:#x}): IPv4/UDP frames to this MAC come back with MACs swapped and payload digits as letters",
            p.process().id()
        );
        if gdb.is_some() {
            println!(
                "Use the token >>> {:#018x} <<< for debugging",
                crate::gdb::debug_token(p.process().id())
            );
        }
        processor = Some(p);
    }
    let _gdb_server = match gdb {
        Some(addr) => Some(
            crate::gdb::dpa::serve(&dev, None, addr)
                .map_err(|e| ToolError::Input(e.to_string()))?,
        ),
        None => None,
    };
    let mut r = Responder::new(&dev, ip, mac).map_err(|e| ToolError::Input(e.to_string()))?;
    let mac_s: Vec<String> = mac.iter().map(|b| format!("{b:02x}")).collect();
    println!(
        "answering ARP and ping for {ip} as {} for {seconds} s ({})",
        mac_s.join(":"),
        dev.describe()
    );
    r.run(
        signals::interrupted(),
        Some(std::time::Duration::from_secs(seconds)),
    );
    if signals::was_interrupted() {
        println!("interrupted");
    }
    let st = r.stats;
    let port = dev.stats().port;
    println!(
        "received {} frames: {} ARP replies, {} echo replies, {} other",
        st.received, st.arp_replies, st.echo_replies, st.other
    );
    println!(
        "port: tx {} frames / {} bytes, rx {} frames, {} delivered, {} steering drops, {} no buffer",
        port.tx_frames,
        port.tx_bytes,
        port.rx_frames,
        port.rx_delivered,
        port.rx_steering_drops,
        port.rx_no_buffer
    );
    if let Some(p) = &processor {
        let s = p
            .stats()
            .map_err(|e| ToolError::Input(format!("packet processor: {e}")))?;
        println!(
            "packet processor: rx {} frames, tx {}, rewritten {}, dropped {}, {} activations",
            s.rx_packets,
            s.tx_packets,
            s.rewritten,
            s.rx_dropped + s.tx_dropped,
            s.activations
        );
    }
    if ps {
        print_dpa_ps(&dev);
    }
    drop(processor);
    dev.stop_engine();
    drop(r);
    dev.stop_captures().map_err(|e| {
        let path = pcap.map(|p| p.display().to_string()).unwrap_or_default();
        ToolError::Input(format!("pcap {path}: {e}"))
    })?;
    Ok(())
}

/// The model's DPA processes and threads, and its DPA counters (`sim --ps`).
pub(crate) fn print_dpa_ps(dev: &mlx5_sim::Device) {
    for line in ps::table(dev, ps::Marks::default()) {
        println!("{line}");
    }
}
