//! RDMA over RC queue pairs through the driver's queues: SEND, SEND with immediate, RDMA
//! WRITE, WRITE with immediate, RDMA READ, compare-and-swap and fetch-and-add between two QPs,
//! every result checked.
//!
//! ```text
//! cargo run --example rdma_rc                          # two QPs on one model, force-loopback
//! cargo run --example rdma_rc -- --linked --pcap /tmp/rc.pcap   # two linked models, RoCEv2
//! cargo run --example rdma_rc -- --device mlx5_0       # two QPs on one hardware port
//! ```
//!
//! `mlx5-dpa demo rdma` runs this file's [`run`].

use std::error::Error;
use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use mlx5_dpa::devx::{self, Devx, UarKind};
use mlx5_dpa::mem::{Access, MemoryRegion, Pd};
use mlx5_dpa::mlx5::cmd::QueryNicVportContext;
use mlx5_dpa::queues::{
    Completion, CompletionKind, Cq, CqConfig, HostQueueMem, QpConfig, RcConnect, RcPeer, RcQp,
    RemoteAddr, SendOp, SendWr,
};
use mlx5_dpa::uar::UarPage;

/// How long to wait for one completion.
const TIMEOUT: Duration = Duration::from_secs(5);
/// Bytes of each side's registered buffer.
const REGION: usize = 64 * 1024;
/// Bytes moved by the RDMA WRITE and READ (several MTU-sized packets).
const BULK: usize = 5000;
/// Offset of the atomic counter in the responder's region.
const ATOMIC_AT: usize = 60 * 1024;

/// One end: its QP, CQs and a registered region.
pub struct Side {
    pub qp: RcQp,
    pub send_cq: Cq,
    pub recv_cq: Cq,
    pub mr: MemoryRegion,
    pub ctx: Arc<dyn Devx>,
}

impl Side {
    /// Creates the objects of one end on `ctx`.
    ///
    /// # Errors
    /// Driver or device errors.
    pub fn new(ctx: &Arc<dyn Devx>) -> Result<Side, Box<dyn Error>> {
        let pd = Pd::alloc(ctx)?;
        let uar = UarPage::alloc(ctx, UarKind::NonCached)?;
        let cqc = CqConfig::new(6);
        let send_cq = Cq::create(ctx, &uar, HostQueueMem::alloc(ctx, cqc.ring_bytes())?, &cqc)?;
        let recv_cq = Cq::create(ctx, &uar, HostQueueMem::alloc(ctx, cqc.ring_bytes())?, &cqc)?;
        let qpc = QpConfig::new(6, 5);
        let qp = RcQp::create(
            ctx,
            &pd,
            &uar,
            &send_cq,
            &recv_cq,
            HostQueueMem::alloc(ctx, qpc.ring_bytes())?,
            &qpc,
        )?;
        let access = Access::LOCAL_WRITE
            | Access::REMOTE_READ
            | Access::REMOTE_WRITE
            | Access::REMOTE_ATOMIC;
        let mr = MemoryRegion::alloc(ctx, &pd, REGION, access)?;
        Ok(Side {
            qp,
            send_cq,
            recv_cq,
            mr,
            ctx: Arc::clone(ctx),
        })
    }

    fn remote(&self, offset: usize) -> RemoteAddr {
        RemoteAddr {
            addr: self.mr.addr() + offset as u64,
            rkey: self.mr.rkey(),
        }
    }

    /// Posts one receive of `len` bytes at `offset`.
    fn recv(&mut self, offset: usize, len: usize, wr_id: u64) -> Result<(), Box<dyn Error>> {
        self.qp.post_recv(&[self.mr.sge(offset, len)?], wr_id)?;
        self.qp.ring_recv_doorbell();
        Ok(())
    }

    /// Posts one send WQE and rings.
    fn send(&mut self, wr: &SendWr<'_>) -> Result<(), Box<dyn Error>> {
        self.qp.post_send(wr)?;
        self.qp.ring_send_doorbell();
        Ok(())
    }

    /// Waits for the send completion and retires it.
    fn send_done(&mut self) -> Result<Completion, Box<dyn Error>> {
        let c = self.send_cq.poll_timeout(TIMEOUT)??;
        self.qp.complete_send(c.wqe_counter)?;
        Ok(c)
    }

    /// Waits for a receive completion and retires it.
    fn recv_done(&mut self) -> Result<Completion, Box<dyn Error>> {
        let c = self.recv_cq.poll_timeout(TIMEOUT)??;
        self.qp.complete_recv(c.wqe_counter)?;
        Ok(c)
    }
}

/// Connects `a` and `b`: force-loopback when they share a device, RoCEv2 otherwise (the
/// addresses come from each device's GID table entry 0 and NIC vport context).
///
/// # Errors
/// Driver or device errors.
pub fn connect(a: &mut Side, b: &mut Side, same_device: bool) -> Result<(), Box<dyn Error>> {
    // Each side sends from its RoCE v2 IPv4 GID to the other's.
    let peer_of = |from: &Side, to: &Side| -> Result<RcPeer, Box<dyn Error>> {
        if same_device {
            return Ok(RcPeer::Loopback {
                remote_qpn: to.qp.qpn(),
            });
        }
        let (gid_index, _) = devx::roce_v2_ipv4_address(from.ctx.as_ref())?;
        let (_, remote) = devx::roce_v2_ipv4_address(to.ctx.as_ref())?;
        let mac = devx::exec(to.ctx.as_ref(), &QueryNicVportContext)?.mac;
        Ok(RcPeer::Remote {
            remote_qpn: to.qp.qpn(),
            mac,
            gid: remote.gid,
            gid_index,
            hop_limit: 64,
        })
    };
    let (pa, pb) = (peer_of(a, b)?, peer_of(b, a)?);
    let mut ca = RcConnect::new(pa);
    let mut cb = RcConnect::new(pb);
    ca.send_psn = 0x100;
    cb.recv_psn = 0x100;
    cb.send_psn = 0x200;
    ca.recv_psn = 0x200;
    a.qp.connect(&ca)?;
    b.qp.connect(&cb)?;
    Ok(())
}

/// What was checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Report {
    pub operations: usize,
    pub verified: usize,
}

fn check(
    out: &mut dyn Write,
    report: &mut Report,
    what: &str,
    ok: bool,
    detail: String,
) -> Result<(), Box<dyn Error>> {
    report.operations += 1;
    if !ok {
        return Err(format!("{what}: {detail}").into());
    }
    report.verified += 1;
    writeln!(out, "{what:<34} {detail}  verified")?;
    Ok(())
}

/// Runs every RC operation from `a` to `b` and checks the results.
///
/// # Errors
/// Driver or device errors, timeouts, or a result that is not what was sent.
pub fn run(a: &mut Side, b: &mut Side, out: &mut dyn Write) -> Result<Report, Box<dyn Error>> {
    let mut r = Report::default();
    writeln!(out, "QP {:#x} -> QP {:#x}", a.qp.qpn().0, b.qp.qpn().0)?;

    // SEND: a message into a posted receive.
    let msg = b"hello over RC, from the requester";
    a.mr.write(0, msg)?;
    b.recv(0, 256, 1)?;
    a.send(&SendWr::new(
        10,
        SendOp::Send {
            sges: &[a.mr.sge(0, msg.len())?],
            imm: None,
        },
    ))?;
    a.send_done()?;
    let c = b.recv_done()?;
    let got = b.mr.buf().to_vec(0, c.byte_len as usize)?;
    check(
        out,
        &mut r,
        "SEND",
        c.kind == CompletionKind::Recv && got == msg,
        format!("{} bytes {:?}", got.len(), String::from_utf8_lossy(&got)),
    )?;

    // SEND with immediate, inline.
    let msg = b"inline";
    b.recv(256, 256, 2)?;
    a.send(&SendWr::new(
        11,
        SendOp::SendInline {
            data: msg,
            imm: Some(0xC0FFEE),
        },
    ))?;
    a.send_done()?;
    let c = b.recv_done()?;
    let got = b.mr.buf().to_vec(256, c.byte_len as usize)?;
    check(
        out,
        &mut r,
        "SEND_IMM (inline)",
        c.kind == CompletionKind::RecvImm && c.imm == Some(0xC0FFEE) && got == msg,
        format!(
            "imm {:#x}, {:?}",
            c.imm.unwrap_or(0),
            String::from_utf8_lossy(&got)
        ),
    )?;

    // RDMA WRITE of several packets.
    let bulk: Vec<u8> = (0..BULK).map(|i| (i * 7 + 3) as u8).collect();
    a.mr.write(4096, &bulk)?;
    a.send(&SendWr::new(
        12,
        SendOp::Write {
            sges: &[a.mr.sge(4096, BULK)?],
            remote: b.remote(8192),
            imm: None,
        },
    ))?;
    a.send_done()?;
    let got = b.mr.buf().to_vec(8192, BULK)?;
    check(
        out,
        &mut r,
        "RDMA_WRITE",
        got == bulk,
        format!("{BULK} bytes to {:#x}", b.remote(8192).addr),
    )?;

    // RDMA WRITE with immediate: data plus a receive completion.
    let small = b"write with immediate";
    a.mr.write(0, small)?;
    b.recv(512, 0, 3)?;
    a.send(&SendWr::new(
        13,
        SendOp::Write {
            sges: &[a.mr.sge(0, small.len())?],
            remote: b.remote(1024),
            imm: Some(7),
        },
    ))?;
    a.send_done()?;
    let c = b.recv_done()?;
    let got = b.mr.buf().to_vec(1024, small.len())?;
    check(
        out,
        &mut r,
        "RDMA_WRITE_IMM",
        c.kind == CompletionKind::RecvRdmaWriteImm && c.imm == Some(7) && got == small,
        format!("imm {}, {} bytes", c.imm.unwrap_or(0), c.byte_len),
    )?;

    // RDMA READ back what was written.
    a.mr.buf().fill(16384, BULK, 0)?;
    a.send(&SendWr::new(
        14,
        SendOp::Read {
            sges: &[a.mr.sge(16384, BULK)?],
            remote: b.remote(8192),
        },
    ))?;
    let c = a.send_done()?;
    let got = a.mr.buf().to_vec(16384, BULK)?;
    check(
        out,
        &mut r,
        "RDMA_READ",
        c.byte_len as usize == BULK && got == bulk,
        format!("{} bytes from {:#x}", c.byte_len, b.remote(8192).addr),
    )?;

    // Atomics on an 8-byte word in host byte order.
    b.mr.write(ATOMIC_AT, &40u64.to_ne_bytes())?;
    a.send(&SendWr::new(
        15,
        SendOp::CompareSwap {
            local: a.mr.sge(32768, 8)?,
            remote: b.remote(ATOMIC_AT),
            compare: 40,
            swap: 1000,
        },
    ))?;
    a.send_done()?;
    let old = u64::from_ne_bytes(
        a.mr.buf()
            .to_vec(32768, 8)?
            .try_into()
            .map_err(|_| "8 bytes")?,
    );
    let now = u64::from_ne_bytes(
        b.mr.buf()
            .to_vec(ATOMIC_AT, 8)?
            .try_into()
            .map_err(|_| "8 bytes")?,
    );
    check(
        out,
        &mut r,
        "ATOMIC compare-and-swap",
        old == 40 && now == 1000,
        format!("40 == 40 -> 1000 (returned {old}, now {now})"),
    )?;

    a.send(&SendWr::new(
        16,
        SendOp::FetchAdd {
            local: a.mr.sge(32768, 8)?,
            remote: b.remote(ATOMIC_AT),
            add: 5,
        },
    ))?;
    a.send_done()?;
    let old = u64::from_ne_bytes(
        a.mr.buf()
            .to_vec(32768, 8)?
            .try_into()
            .map_err(|_| "8 bytes")?,
    );
    let now = u64::from_ne_bytes(
        b.mr.buf()
            .to_vec(ATOMIC_AT, 8)?
            .try_into()
            .map_err(|_| "8 bytes")?,
    );
    check(
        out,
        &mut r,
        "ATOMIC fetch-and-add",
        old == 1000 && now == 1005,
        format!("1000 + 5 (returned {old}, now {now})"),
    )?;

    writeln!(out, "{} operations, {} verified", r.operations, r.verified)?;
    Ok(r)
}

/// RC queue pairs: SEND, WRITE, READ and atomics between two QPs.
#[derive(clap::Parser)]
struct Args {
    /// Two linked device models talking RoCEv2, instead of force-loopback in one
    #[arg(long)]
    linked: bool,
    /// Record the model's port to a pcap file
    #[arg(long, value_name = "FILE")]
    pcap: Option<String>,
    /// An RDMA device (e.g. mlx5_0); without it, the device model
    #[arg(long, value_name = "NAME")]
    device: Option<String>,
}

#[allow(dead_code)] // `mlx5-dpa demo` includes this file for `run`, `Side` and `connect` only.
fn main() -> Result<(), Box<dyn Error>> {
    let Args {
        linked,
        pcap,
        device,
    } = clap::Parser::parse();
    let mut models = Vec::new();
    let (ca, cb): (Arc<dyn Devx>, Arc<dyn Devx>) = match device {
        Some(name) => {
            if linked || pcap.is_some() {
                return Err("--linked and --pcap are features of the device model".into());
            }
            let k: Arc<dyn Devx> = devx::kernel::KernelDevx::open(Some(&name))?;
            (Arc::clone(&k), k)
        }
        None => {
            let a = mlx5_sim::Device::with_profile("bf3").ok_or("no bf3 profile")?;
            a.set_port_address([0x02, 0x00, 0x5e, 0x00, 0x00, 0x01], [10, 0, 0, 1]);
            let ca = a.open_devx();
            let cb = if linked {
                let b = mlx5_sim::Device::with_profile("bf3").ok_or("no bf3 profile")?;
                b.set_port_address([0x02, 0x00, 0x5e, 0x00, 0x00, 0x02], [10, 0, 0, 2]);
                mlx5_sim::Device::link(&a, &b);
                let cb = b.open_devx();
                models.push(b);
                cb
            } else {
                Arc::clone(&ca)
            };
            if let Some(path) = &pcap {
                let f = std::fs::File::create(path).map_err(|e| format!("pcap {path}: {e}"))?;
                a.capture(f).map_err(|e| format!("pcap {path}: {e}"))?;
            }
            models.insert(0, a);
            for m in &models {
                m.start_engine();
            }
            (ca, cb)
        }
    };
    let same = Arc::ptr_eq(&ca, &cb);
    let res = (|| {
        let mut a = Side::new(&ca)?;
        let mut b = Side::new(&cb)?;
        connect(&mut a, &mut b, same)?;
        run(&mut a, &mut b, &mut std::io::stdout())
    })();
    for m in &models {
        m.stop_engine();
        m.stop_captures()?;
    }
    res.map(|_| ())
}
