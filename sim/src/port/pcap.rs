//! Classic libpcap capture files (not pcapng).
//!
//! [`PcapWriter`] records Ethernet frames with nanosecond timestamps, in the format that
//! `tcpdump -r`, `tshark -r` and Wireshark read. [`read_pcap`] is a small, strict reader for
//! checking what was written; it accepts the little-endian microsecond and nanosecond variants
//! and rejects anything malformed with a [`PcapError`] instead of panicking.
//!
//! File layout (all fields little-endian here):
//!
//! ```text
//! global header, 24 bytes: magic u32, version_major u16, version_minor u16,
//!                          thiszone i32, sigfigs u32, snaplen u32, linktype u32
//! per record,    16 bytes: ts_sec u32, ts_frac u32, incl_len u32, orig_len u32
//!                          followed by incl_len bytes of frame
//! ```

use std::io::{self, Write};
use std::time::Duration;

/// Magic number of a file whose record timestamps carry microseconds.
pub const MAGIC_MICROS: u32 = 0xa1b2_c3d4;
/// Magic number of a file whose record timestamps carry nanoseconds (what [`PcapWriter`] writes).
pub const MAGIC_NANOS: u32 = 0xa1b2_3c4d;
/// Format version written in the global header: 2.4.
pub const VERSION: (u16, u16) = (2, 4);
/// Largest number of bytes of one frame that [`PcapWriter`] stores; longer frames are cut.
pub const SNAPLEN: u32 = 65_535;
/// `LINKTYPE_ETHERNET`: every record is an Ethernet II frame, starting at the destination MAC.
pub const LINKTYPE_ETHERNET: u32 = 1;
/// Size of the global file header in bytes.
pub const GLOBAL_HEADER_LEN: usize = 24;
/// Size of the header in front of every record, in bytes.
pub const RECORD_HEADER_LEN: usize = 16;

/// Writes a classic pcap file (nanosecond timestamps, Ethernet link type) to any [`Write`].
///
/// The global header is written by [`PcapWriter::new`]; each [`write_frame`](Self::write_frame)
/// appends one record. Wrap files in a [`std::io::BufWriter`]: every record is two writes.
#[derive(Debug)]
pub struct PcapWriter<W: Write> {
    inner: W,
}

impl<W: Write> PcapWriter<W> {
    /// Writes the 24-byte global header to `w` and returns a writer for the records.
    ///
    /// # Errors
    ///
    /// Any error from writing the header to `w`.
    pub fn new(mut w: W) -> io::Result<Self> {
        let mut header = [0u8; GLOBAL_HEADER_LEN];
        header[0..4].copy_from_slice(&MAGIC_NANOS.to_le_bytes());
        header[4..6].copy_from_slice(&VERSION.0.to_le_bytes());
        header[6..8].copy_from_slice(&VERSION.1.to_le_bytes());
        // thiszone (8..12) and sigfigs (12..16) stay 0: timestamps are UTC, accuracy unknown.
        header[16..20].copy_from_slice(&SNAPLEN.to_le_bytes());
        header[20..24].copy_from_slice(&LINKTYPE_ETHERNET.to_le_bytes());
        w.write_all(&header)?;
        Ok(Self { inner: w })
    }

    /// Appends one frame captured at `ts` (time since the UNIX epoch).
    ///
    /// Frames longer than [`SNAPLEN`] are stored cut to [`SNAPLEN`] bytes, with their full
    /// length recorded as the original length.
    ///
    /// # Errors
    ///
    /// [`io::ErrorKind::InvalidInput`] if `ts` does not fit the format's 32-bit seconds field
    /// (after February 2106) or the frame is 4 GiB or longer; nothing is written then.
    /// Otherwise any error from the underlying writer, after which the file may hold a partial
    /// record.
    pub fn write_frame(&mut self, ts: Duration, frame: &[u8]) -> io::Result<()> {
        let ts_sec = u32::try_from(ts.as_secs()).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("pcap timestamp {ts:?} does not fit in 32-bit seconds"),
            )
        })?;
        let orig_len = u32::try_from(frame.len()).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("frame of {} bytes is too long for pcap", frame.len()),
            )
        })?;
        let incl_len = orig_len.min(SNAPLEN);

        let mut header = [0u8; RECORD_HEADER_LEN];
        header[0..4].copy_from_slice(&ts_sec.to_le_bytes());
        header[4..8].copy_from_slice(&ts.subsec_nanos().to_le_bytes());
        header[8..12].copy_from_slice(&incl_len.to_le_bytes());
        header[12..16].copy_from_slice(&orig_len.to_le_bytes());
        self.inner.write_all(&header)?;
        // incl_len <= frame.len(), so the slice is in bounds; `get` keeps that panic-free.
        let stored = frame.get(..incl_len as usize).unwrap_or(frame);
        self.inner.write_all(stored)
    }

    /// Flushes the underlying writer.
    ///
    /// # Errors
    ///
    /// Any error from flushing the underlying writer.
    pub fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }

    /// Borrows the underlying writer.
    pub fn get_ref(&self) -> &W {
        &self.inner
    }

    /// Returns the underlying writer without flushing it.
    pub fn into_inner(self) -> W {
        self.inner
    }
}

/// Why [`read_pcap`] rejected its input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PcapError {
    /// The input is shorter than the 24-byte global header.
    #[error("pcap global header truncated: {len} of {GLOBAL_HEADER_LEN} bytes")]
    TruncatedHeader {
        /// Length of the whole input.
        len: usize,
    },
    /// The first four bytes are not a little-endian classic pcap magic number.
    #[error(
        "bad pcap magic {magic:#010x} (expected little-endian {MAGIC_MICROS:#010x} or \
         {MAGIC_NANOS:#010x})"
    )]
    BadMagic {
        /// The magic number read as a little-endian u32.
        magic: u32,
    },
    /// The file's link type is not Ethernet.
    #[error("pcap link type {linktype} is not LINKTYPE_ETHERNET ({LINKTYPE_ETHERNET})")]
    UnsupportedLinkType {
        /// The link type from the global header.
        linktype: u32,
    },
    /// A record header or its frame bytes run past the end of the input.
    #[error(
        "pcap record {index} at byte {offset} truncated: needs {needed} bytes, {available} left"
    )]
    TruncatedRecord {
        /// Zero-based number of the record.
        index: usize,
        /// Byte offset of the record header in the input.
        offset: usize,
        /// Bytes the record needs from `offset` on (header, or header plus frame).
        needed: usize,
        /// Bytes left in the input from `offset` on.
        available: usize,
    },
    /// A record's stored length is larger than its original length.
    #[error("pcap record {index}: stored length {incl_len} exceeds original length {orig_len}")]
    BadLength {
        /// Zero-based number of the record.
        index: usize,
        /// Stored length from the record header.
        incl_len: u32,
        /// Original length from the record header.
        orig_len: u32,
    },
    /// A record's sub-second timestamp field is not below one second.
    #[error("pcap record {index}: sub-second timestamp field {frac} out of range")]
    BadTimestamp {
        /// Zero-based number of the record.
        index: usize,
        /// The sub-second field (micro- or nanoseconds, depending on the magic).
        frac: u32,
    },
}

/// Reads a little-endian classic pcap file of Ethernet frames.
///
/// Returns each record's timestamp (since the UNIX epoch) and its stored bytes, which are cut
/// to the writer's snap length if the frame was longer. Both the microsecond
/// ([`MAGIC_MICROS`]) and the nanosecond ([`MAGIC_NANOS`]) variants are accepted.
///
/// # Errors
///
/// A [`PcapError`] for a short or foreign header, a non-Ethernet link type, or a record that
/// is truncated or inconsistent. Never panics, whatever the input.
pub fn read_pcap(bytes: &[u8]) -> Result<Vec<(Duration, Vec<u8>)>, PcapError> {
    let header = bytes
        .get(..GLOBAL_HEADER_LEN)
        .ok_or(PcapError::TruncatedHeader { len: bytes.len() })?;
    let magic = le_u32(header, 0);
    let nanos = match magic {
        MAGIC_NANOS => true,
        MAGIC_MICROS => false,
        _ => return Err(PcapError::BadMagic { magic }),
    };
    let linktype = le_u32(header, 20);
    if linktype != LINKTYPE_ETHERNET {
        return Err(PcapError::UnsupportedLinkType { linktype });
    }

    let mut frames = Vec::new();
    let mut offset = GLOBAL_HEADER_LEN;
    while offset < bytes.len() {
        let index = frames.len();
        let rest = bytes.get(offset..).unwrap_or_default();
        let truncated = |needed: usize| PcapError::TruncatedRecord {
            index,
            offset,
            needed,
            available: rest.len(),
        };
        let rec = rest
            .get(..RECORD_HEADER_LEN)
            .ok_or_else(|| truncated(RECORD_HEADER_LEN))?;
        let ts_sec = le_u32(rec, 0);
        let frac = le_u32(rec, 4);
        let incl_len = le_u32(rec, 8);
        let orig_len = le_u32(rec, 12);

        if incl_len > orig_len {
            return Err(PcapError::BadLength {
                index,
                incl_len,
                orig_len,
            });
        }
        let sub = if nanos {
            (frac < 1_000_000_000).then(|| Duration::from_nanos(u64::from(frac)))
        } else {
            (frac < 1_000_000).then(|| Duration::from_micros(u64::from(frac)))
        };
        let sub = sub.ok_or(PcapError::BadTimestamp { index, frac })?;
        let ts = Duration::from_secs(u64::from(ts_sec)) + sub;

        let needed = usize::try_from(incl_len)
            .ok()
            .and_then(|n| n.checked_add(RECORD_HEADER_LEN))
            .unwrap_or(usize::MAX);
        let data = rest
            .get(RECORD_HEADER_LEN..needed)
            .ok_or_else(|| truncated(needed))?;
        frames.push((ts, data.to_vec()));
        offset += needed;
    }
    Ok(frames)
}

/// The little-endian u32 at `at` in `b`; callers have checked that `b` holds `at + 4` bytes.
fn le_u32(b: &[u8], at: usize) -> u32 {
    let mut v = [0u8; 4];
    if let Some(src) = b.get(at..at + 4) {
        v.copy_from_slice(src);
    }
    u32::from_le_bytes(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A frame whose bytes depend on `seed`, so mixed-up records are noticed.
    fn frame(len: usize, seed: u8) -> Vec<u8> {
        (0..len)
            .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
            .collect()
    }

    fn sample_file() -> (Vec<u8>, Vec<(Duration, Vec<u8>)>) {
        let records = vec![
            (Duration::new(1_700_000_000, 123_456_789), frame(60, 1)),
            (Duration::new(1_700_000_001, 0), frame(1514, 2)),
            (Duration::new(0, 999_999_999), Vec::new()),
            (Duration::new(u64::from(u32::MAX), 1), frame(9000, 3)),
        ];
        let mut w = PcapWriter::new(Vec::new()).unwrap();
        for (ts, f) in &records {
            w.write_frame(*ts, f).unwrap();
        }
        w.flush().unwrap();
        (w.into_inner(), records)
    }

    #[test]
    fn global_header_layout() {
        let bytes = PcapWriter::new(Vec::new()).unwrap().into_inner();
        assert_eq!(
            bytes,
            [
                0x4d, 0x3c, 0xb2, 0xa1, // magic, nanosecond resolution
                2, 0, 4, 0, // version 2.4
                0, 0, 0, 0, // thiszone
                0, 0, 0, 0, // sigfigs
                0xff, 0xff, 0, 0, // snaplen 65535
                1, 0, 0, 0, // LINKTYPE_ETHERNET
            ]
        );
        assert_eq!(read_pcap(&bytes), Ok(Vec::new()));
    }

    #[test]
    fn round_trip() {
        let (bytes, records) = sample_file();
        let expected_len: usize = GLOBAL_HEADER_LEN
            + records
                .iter()
                .map(|(_, f)| RECORD_HEADER_LEN + f.len())
                .sum::<usize>();
        assert_eq!(bytes.len(), expected_len);
        assert_eq!(read_pcap(&bytes).unwrap(), records);

        // The first record header, byte for byte.
        let rec = &bytes[GLOBAL_HEADER_LEN..GLOBAL_HEADER_LEN + RECORD_HEADER_LEN];
        assert_eq!(le_u32(rec, 0), 1_700_000_000);
        assert_eq!(le_u32(rec, 4), 123_456_789);
        assert_eq!(le_u32(rec, 8), 60);
        assert_eq!(le_u32(rec, 12), 60);
    }

    #[test]
    fn reads_microsecond_files() {
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&MAGIC_MICROS.to_le_bytes());
        bytes.extend_from_slice(&[2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        bytes.extend_from_slice(&SNAPLEN.to_le_bytes());
        bytes.extend_from_slice(&LINKTYPE_ETHERNET.to_le_bytes());
        for v in [5u32, 250_000, 3, 3] {
            bytes.extend_from_slice(&v.to_le_bytes());
        }
        bytes.extend_from_slice(&[0xaa, 0xbb, 0xcc]);
        assert_eq!(
            read_pcap(&bytes).unwrap(),
            vec![(Duration::new(5, 250_000_000), vec![0xaa, 0xbb, 0xcc])]
        );

        // 1_000_000 microseconds is not a valid fraction.
        bytes[GLOBAL_HEADER_LEN + 4..GLOBAL_HEADER_LEN + 8]
            .copy_from_slice(&1_000_000u32.to_le_bytes());
        assert_eq!(
            read_pcap(&bytes),
            Err(PcapError::BadTimestamp {
                index: 0,
                frac: 1_000_000
            })
        );
    }

    #[test]
    fn truncated_input_errors() {
        let (bytes, records) = sample_file();

        assert_eq!(read_pcap(&[]), Err(PcapError::TruncatedHeader { len: 0 }));
        assert_eq!(
            read_pcap(&bytes[..GLOBAL_HEADER_LEN - 1]),
            Err(PcapError::TruncatedHeader {
                len: GLOBAL_HEADER_LEN - 1
            })
        );

        // Cut inside the first record header.
        let cut = GLOBAL_HEADER_LEN + 10;
        assert_eq!(
            read_pcap(&bytes[..cut]),
            Err(PcapError::TruncatedRecord {
                index: 0,
                offset: GLOBAL_HEADER_LEN,
                needed: RECORD_HEADER_LEN,
                available: 10,
            })
        );

        // Cut inside the second record's frame bytes.
        let second = GLOBAL_HEADER_LEN + RECORD_HEADER_LEN + records[0].1.len();
        let cut = second + RECORD_HEADER_LEN + 100;
        assert_eq!(
            read_pcap(&bytes[..cut]),
            Err(PcapError::TruncatedRecord {
                index: 1,
                offset: second,
                needed: RECORD_HEADER_LEN + 1514,
                available: RECORD_HEADER_LEN + 100,
            })
        );

        // Every prefix is either a clean record boundary (a prefix of the records) or an
        // error; none panics.
        for len in 0..bytes.len() {
            match read_pcap(&bytes[..len]) {
                Ok(got) => assert_eq!(got[..], records[..got.len()], "prefix {len}"),
                Err(PcapError::TruncatedHeader { .. } | PcapError::TruncatedRecord { .. }) => {}
                Err(e) => panic!("prefix {len}: unexpected error {e}"),
            }
        }
    }

    #[test]
    fn bad_headers_and_records_error() {
        let (bytes, _) = sample_file();

        let mut big_endian = bytes.clone();
        big_endian[..4].copy_from_slice(&MAGIC_NANOS.to_be_bytes());
        assert_eq!(
            read_pcap(&big_endian),
            Err(PcapError::BadMagic {
                magic: MAGIC_NANOS.swap_bytes()
            })
        );
        // pcapng's section header block type.
        let mut pcapng = bytes.clone();
        pcapng[..4].copy_from_slice(&0x0a0d_0d0au32.to_le_bytes());
        assert!(matches!(
            read_pcap(&pcapng),
            Err(PcapError::BadMagic { magic: 0x0a0d_0d0a })
        ));

        let mut raw_ip = bytes.clone();
        raw_ip[20..24].copy_from_slice(&101u32.to_le_bytes());
        assert_eq!(
            read_pcap(&raw_ip),
            Err(PcapError::UnsupportedLinkType { linktype: 101 })
        );

        let mut huge = bytes.clone();
        let r = GLOBAL_HEADER_LEN;
        huge[r + 8..r + 12].copy_from_slice(&u32::MAX.to_le_bytes());
        huge[r + 12..r + 16].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(matches!(
            read_pcap(&huge),
            Err(PcapError::TruncatedRecord { index: 0, .. })
        ));

        let mut inconsistent = bytes.clone();
        inconsistent[r + 12..r + 16].copy_from_slice(&59u32.to_le_bytes());
        assert_eq!(
            read_pcap(&inconsistent),
            Err(PcapError::BadLength {
                index: 0,
                incl_len: 60,
                orig_len: 59
            })
        );

        let mut bad_ns = bytes;
        bad_ns[r + 4..r + 8].copy_from_slice(&1_000_000_000u32.to_le_bytes());
        assert_eq!(
            read_pcap(&bad_ns),
            Err(PcapError::BadTimestamp {
                index: 0,
                frac: 1_000_000_000
            })
        );
    }

    #[test]
    fn snaplen_truncation() {
        let long = frame(70_000, 7);
        let exact = frame(SNAPLEN as usize, 8);
        let ts = Duration::new(10, 20);
        let mut w = PcapWriter::new(Vec::new()).unwrap();
        w.write_frame(ts, &long).unwrap();
        w.write_frame(ts, &exact).unwrap();
        let bytes = w.into_inner();

        let rec = &bytes[GLOBAL_HEADER_LEN..GLOBAL_HEADER_LEN + RECORD_HEADER_LEN];
        assert_eq!(
            le_u32(rec, 8),
            SNAPLEN,
            "incl_len is cut to the snap length"
        );
        assert_eq!(le_u32(rec, 12), 70_000, "orig_len keeps the wire length");

        let got = read_pcap(&bytes).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0], (ts, long[..SNAPLEN as usize].to_vec()));
        assert_eq!(got[1], (ts, exact));
    }

    #[test]
    fn rejects_timestamps_past_2106() {
        let mut w = PcapWriter::new(Vec::new()).unwrap();
        let err = w
            .write_frame(Duration::from_secs(u64::from(u32::MAX) + 1), &[1, 2, 3])
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        assert_eq!(w.get_ref().len(), GLOBAL_HEADER_LEN, "nothing written");
    }

    /// Finds `prog` on `PATH`, like `which`.
    fn which(prog: &str) -> Option<std::path::PathBuf> {
        let path = std::env::var_os("PATH")?;
        std::env::split_paths(&path)
            .map(|dir| dir.join(prog))
            .find(|p| p.is_file())
    }

    /// Has tshark or tcpdump (whichever is installed) decode a written file.
    #[test]
    fn external_reader_counts_frames() {
        let Some((tool, path)) = ["tshark", "tcpdump"]
            .iter()
            .find_map(|t| which(t).map(|p| (*t, p)))
        else {
            eprintln!("skipped: neither tshark nor tcpdump is installed");
            return;
        };

        // Plain broadcast frames with ordinary timestamps: nothing for the tool to object to.
        let count = 3;
        let mut w = PcapWriter::new(Vec::new()).unwrap();
        for i in 0..count {
            let mut f = vec![0xff; 6];
            f.extend_from_slice(&[0x02, 0, 0, 0, 0, 0x01, 0x88, 0xb5]); // local experimental
            f.resize(60, i);
            w.write_frame(Duration::new(1_700_000_000 + u64::from(i), 500), &f)
                .unwrap();
        }
        let bytes = w.into_inner();
        let file = std::env::temp_dir().join(format!(
            "mlx5-sim-pcap-test-{}-{:?}.pcap",
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::write(&file, &bytes).unwrap();
        let mut cmd = std::process::Command::new(&path);
        match tool {
            // One line per frame: its number.
            "tshark" => cmd.args(["-n", "-T", "fields", "-e", "frame.number", "-r"]),
            // One line per frame; "reading from file" goes to stderr.
            _ => cmd.args(["-n", "-r"]),
        };
        let out = cmd.arg(&file).output();
        let _ = std::fs::remove_file(&file);
        let out = out.unwrap_or_else(|e| panic!("running {}: {e}", path.display()));
        assert!(
            out.status.success(),
            "{tool} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        let lines = stdout.lines().filter(|l| !l.trim().is_empty()).count();
        assert_eq!(lines, usize::from(count), "{tool} output:\n{stdout}");
    }
}
