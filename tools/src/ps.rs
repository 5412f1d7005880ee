//! The model's DPA process table: `mlx5-dpa sim --ps` prints it at the end of a run, GDB's
//! `monitor ps` on a `--gdb` server prints it with each process's debug token, and
//! `mlx5-dpa ps --connect HOST:PORT` asks a running program's server for it.
//!
//! A device lists no processes to programs other than their owner (DevX shows a program only
//! its own objects) and the model lives inside the program that runs it, so another program
//! reaches the table through that program's GDB server, as `dpa-gdbserver` reaches a
//! device's processes by token.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use mlx5_dpa_capture::{hex, unhex};

/// How long `ps --connect` waits for the server, all told.
const WAIT: Duration = Duration::from_secs(10);
/// The most a reply may hold (the table of many processes is a few KiB).
const MAX_REPLY: usize = 1 << 20;

/// What the table shows beside the model's own state.
#[derive(Debug, Default, Clone, Copy)]
pub struct Marks<'a> {
    /// Each process's debug token.
    pub tokens: bool,
    /// The process a debugger is attached to.
    pub attached: Option<u32>,
    /// The process waiting for its debugger.
    pub waiting: Option<u32>,
    /// Threads stopped by the debugger.
    pub stopped: &'a [u32],
}

/// The table's lines: processes, their threads, and the DPA counters.
pub fn table(dev: &mlx5_sim::Device, marks: Marks<'_>) -> Vec<String> {
    let procs = dev.dpa_processes();
    let mut v = vec![format!("DPA processes: {}", procs.len())];
    for p in &procs {
        let token = if marks.tokens {
            format!(", token {:#x}", crate::gdb::debug_token(p.id))
        } else {
            String::new()
        };
        let mark = if marks.attached == Some(p.id) {
            ", debugger attached"
        } else if marks.waiting == Some(p.id) {
            ", waiting for its debugger"
        } else {
            ""
        };
        v.push(format!(
            "  process {:#x} on vHCA {}: {}, {} KiB of data and heap, {} thread(s){token}{mark}",
            p.id,
            p.vhca,
            p.status,
            p.memory / 1024,
            p.threads.len()
        ));
        for t in &p.threads {
            let stopped = if marks.attached == Some(p.id) && marks.stopped.contains(&t.id) {
                ", stopped by the debugger"
            } else {
                ""
            };
            v.push(format!(
                "    thread {:#x}: {}{}, affinity {}, entry {:#x}, {} activation(s){stopped}",
                t.id,
                t.state,
                match (t.state, t.eu) {
                    ("running", Some(e)) => format!(" on EU {e}"),
                    (_, Some(e)) => format!(" (last on EU {e})"),
                    _ => String::new(),
                },
                t.affinity,
                t.entry,
                t.activations
            ));
        }
    }
    let s = dev.dpa_stats();
    v.push(format!(
        "DPA counters: {} activations, {} instructions, {} faults, {} watchdogs, {} doorbells, \
         {} RTOS calls, {} dropped events, {} code caches made",
        s.activations,
        s.instructions,
        s.faults,
        s.watchdogs,
        s.doorbells,
        s.rtos_calls,
        s.dropped_events,
        s.code_caches_made
    ));
    v
}

/// Why `ps --connect` failed.
#[derive(Debug, thiserror::Error)]
pub enum PsError {
    #[error("ps: cannot reach the GDB server at {addr}: {source}")]
    Connect {
        addr: String,
        source: std::io::Error,
    },
    #[error("ps: the connection to {addr} failed: {source}")]
    Io {
        addr: String,
        source: std::io::Error,
    },
    #[error("ps: the server at {addr} answered {what}")]
    Protocol { addr: String, what: String },
    #[error("ps: no answer from {addr} within {secs} s")]
    Timeout { addr: String, secs: u64 },
    #[error("ps: the gdbserver at {addr} is busy: {why}")]
    Busy { addr: String, why: String },
}

/// One remote-protocol packet: `$payload#checksum`.
fn packet(payload: &str) -> Vec<u8> {
    let sum = payload.bytes().fold(0u8, u8::wrapping_add);
    format!("${payload}#{sum:02x}").into_bytes()
}

/// A packet's payload with the protocol's run-length encoding (`X*n`: `n - 29` more `X`s)
/// and escapes (`}` then the byte XOR 0x20) undone; `None` past `limit` bytes (the encoding
/// multiplies up to 98 times).
fn expand(raw: &[u8], limit: usize) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(raw.len().min(limit));
    let mut i = 0;
    while i < raw.len() {
        if out.len() > limit {
            return None;
        }
        match raw[i] {
            b'*' if i + 1 < raw.len() => {
                if let Some(&last) = out.last() {
                    let n = usize::from(raw[i + 1].saturating_sub(29));
                    if out.len() + n > limit {
                        return None;
                    }
                    out.extend(std::iter::repeat_n(last, n));
                }
                i += 2;
            }
            b'}' if i + 1 < raw.len() => {
                out.push(raw[i + 1] ^ 0x20);
                i += 2;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    (out.len() <= limit).then_some(out)
}

/// At most this much of an unexpected packet goes into an error message.
const ECHO: usize = 80;

/// An unexpected packet as an error shows it: its start, and its length when cut.
fn shown(p: &str) -> String {
    match p.char_indices().nth(ECHO) {
        Some((at, _)) => format!("{:?}... ({} bytes)", &p[..at], p.len()),
        None => format!("{p:?}"),
    }
}

/// Reads packets from `conn` (acknowledging each) and hands their payloads to `each` until it
/// says done; bounded by `deadline`, and by [`MAX_REPLY`] bytes in all, received or expanded
/// (`budget` is what is left of it over the whole exchange).
fn read_packets(
    conn: &mut TcpStream,
    addr: &str,
    deadline: Instant,
    budget: &mut usize,
    mut each: impl FnMut(&str) -> Result<bool, PsError>,
) -> Result<(), PsError> {
    let too_much = || PsError::Protocol {
        addr: addr.to_string(),
        what: format!("more than {MAX_REPLY} bytes"),
    };
    let io = |source| PsError::Io {
        addr: addr.to_string(),
        source,
    };
    let mut buf: Vec<u8> = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        // Whole packets in the buffer first.
        while let Some(start) = buf.iter().position(|&b| b == b'$') {
            let Some(hash) = buf[start..].iter().position(|&b| b == b'#') else {
                break;
            };
            let end = start + hash + 3;
            if buf.len() < end {
                break;
            }
            let raw = &buf[start + 1..start + hash];
            let expanded = expand(raw, *budget).ok_or_else(too_much)?;
            *budget -= expanded.len();
            let payload = String::from_utf8_lossy(&expanded).into_owned();
            buf.drain(..end);
            conn.write_all(b"+").map_err(io)?;
            if each(&payload)? {
                return Ok(());
            }
        }
        if buf.len() > *budget {
            return Err(too_much());
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(PsError::Timeout {
                addr: addr.to_string(),
                secs: WAIT.as_secs(),
            });
        }
        conn.set_read_timeout(Some(left)).map_err(io)?;
        match conn.read(&mut chunk) {
            Ok(0) => {
                return Err(PsError::Protocol {
                    addr: addr.to_string(),
                    what: "nothing: it closed the connection".into(),
                })
            }
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                continue
            }
            Err(e) => return Err(io(e)),
        }
    }
}

/// Asks the GDB server at `addr` (a program run with `--gdb`) for its device's process table
/// (`monitor ps`), in extended mode so that nothing is attached or let go by asking.
///
/// # Errors
/// The server cannot be reached, answers something else, or not in time.
pub fn remote_table(addr: &str) -> Result<String, PsError> {
    let deadline = Instant::now() + WAIT;
    let mut conn = std::net::ToSocketAddrs::to_socket_addrs(addr)
        .map_err(|source| PsError::Connect {
            addr: addr.to_string(),
            source,
        })?
        .find_map(|a| TcpStream::connect_timeout(&a, WAIT).ok())
        .ok_or_else(|| PsError::Connect {
            addr: addr.to_string(),
            source: std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused"),
        })?;
    let _ = conn.set_nodelay(true);
    let io = |source| PsError::Io {
        addr: addr.to_string(),
        source,
    };
    let unexpected = |what: &str| match what.strip_prefix("E.busy: ") {
        Some(why) => PsError::Busy {
            addr: addr.to_string(),
            why: shown(why).trim_matches('"').to_string(),
        },
        None => PsError::Protocol {
            addr: addr.to_string(),
            what: shown(what),
        },
    };
    let mut budget = MAX_REPLY;
    // Extended mode: a process waiting for its debugger stays waiting.
    conn.write_all(&packet("!")).map_err(io)?;
    read_packets(&mut conn, addr, deadline, &mut budget, |p| {
        if p == "OK" {
            Ok(true)
        } else {
            Err(unexpected(p))
        }
    })?;
    conn.write_all(&packet(&format!("qRcmd,{}", hex(b"ps"))))
        .map_err(io)?;
    let mut text = String::new();
    read_packets(&mut conn, addr, deadline, &mut budget, |p| match p {
        "OK" => Ok(true),
        p if p.starts_with('O') => {
            let bytes = unhex(&p[1..]).ok_or_else(|| unexpected(p))?;
            text.push_str(&String::from_utf8_lossy(&bytes));
            Ok(false)
        }
        p => Err(unexpected(p)),
    })?;
    // Leave as GDB does; in extended mode with nothing attached this lets nothing go.
    conn.write_all(&packet("D")).map_err(io)?;
    read_packets(&mut conn, addr, deadline, &mut budget, |p| Ok(p == "OK"))?;
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packets_carry_their_checksum_and_hex_round_trips() {
        // GDB's own: `$?#3f`, `$!#21`.
        assert_eq!(packet("?"), b"$?#3f");
        assert_eq!(packet("!"), b"$!#21");
        assert_eq!(hex(b"ps"), "7073");
        assert_eq!(unhex("7073").as_deref(), Some(&b"ps"[..]));
        assert_eq!(unhex("707"), None);
        assert_eq!(unhex("zz"), None);
        // gdbstub's run-length encoding: "0* " is "0" and 3 more; an escaped '#'.
        assert_eq!(expand(b"a0* b", 64).unwrap(), b"a0000b");
        assert_eq!(expand(b"}\x03x", 64).unwrap(), b"#x");
        // Bounded: 'a' and 97 more, twice, is 196 bytes.
        assert_eq!(expand(b"a*~a*~", 196).map(|v| v.len()), Some(196));
        assert_eq!(expand(b"a*~a*~", 195), None);
        assert_eq!(shown("OK"), "\"OK\"");
        let long = "x".repeat(1000);
        assert_eq!(shown(&long), format!("{:?}... (1000 bytes)", &long[..80]));
    }
}
