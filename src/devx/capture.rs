//! DevX captures: every mailbox call of a program (or of this driver) with what came back and
//! its timing, as JSON lines, one object per call, written and flushed as the call returns:
//!
//! ```text
//! {"seq":3,"call":"obj_create","t_ns":81234,"dur_ns":5120,"in":"0400...","out":"0000...","ret":0,"errno":0,"obj":3}
//! ```
//!
//! `seq` counts calls from 1; `t_ns` is when the call began, from the first record; `in` and
//! `out` are the inbox and the outbox after the call, as hex (empty for calls without
//! mailboxes); `ret` is the call's result (0 or the backend's error code; for `obj_create` and
//! `umem_reg` 0 when a handle came back, -1 otherwise) and `errno` the errno after a failure;
//! `obj` names the object an `obj_*` call acts on by the `seq` of the call that created it (for
//! a create: its own `seq`, if it succeeded); `umem_reg` records `size` and `access`.
//!
//! Three writers: [`CaptureDevx`] around this driver's own context (`mlx5-dpa --capture
//! FILE`), the same around each context of the model's uverbs server (the mailboxes a kernel
//! would send for a program's verbs, `mlx5-dpa --capture FILE run -- PROGRAM`), and the
//! `mlx5-dpa-capture` library preloaded under rdma-core's `mlx5dv_devx_*`. `mlx5-dpa capture
//! show / diff` reads them.

use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{Devx, DevxError, EventChannel, ObjHandle, Uar, UarKind, Umem, UmemAccess, UmemHandle};

/// The DevX calls a capture records.
pub const CALLS: [&str; 7] = [
    "general_cmd",
    "obj_create",
    "obj_query",
    "obj_modify",
    "obj_destroy",
    "umem_reg",
    "umem_dereg",
];

/// One recorded call: one JSON line of a capture file (`in` and `out` as hex strings; `size`
/// and `access` only on `umem_reg`).
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct Record {
    pub seq: u64,
    /// One of [`CALLS`].
    pub call: String,
    pub t_ns: u64,
    pub dur_ns: u64,
    #[serde(rename = "in", with = "hex_field")]
    pub inbox: Vec<u8>,
    #[serde(rename = "out", with = "hex_field")]
    pub outbox: Vec<u8>,
    pub ret: i64,
    pub errno: i32,
    /// The object acted on, by the `seq` of its create.
    #[serde(default)]
    pub obj: Option<u64>,
    /// `umem_reg`: bytes and access flags.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access: Option<u32>,
}

/// Byte strings as the records write them: hex digits, two a byte.
mod hex_field {
    pub fn serialize<S: serde::Serializer>(b: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&super::hex(b))
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let s: &str = serde::Deserialize::deserialize(d)?;
        super::unhex(s)
            .ok_or_else(|| serde::de::Error::custom(format!("{s:?} is not a hex string")))
    }
}

/// Why a capture line could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based line number.
    pub line: usize,
    pub reason: String,
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line, self.reason)
    }
}

impl std::error::Error for ParseError {}

/// `b` as lower-case hex digits, two a byte (the records' byte format).
pub fn hex(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        s.push_str(&format!("{x:02x}"));
    }
    s
}

/// The bytes of hex digits `s` (two a byte); `None` if `s` is not that.
pub fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

impl Record {
    /// The record as its JSON line (without the newline).
    pub fn to_line(&self) -> String {
        // A record holds only strings and numbers: serializing it cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Reads one JSON line.
    ///
    /// # Errors
    /// A [`ParseError`] naming the field that is missing or malformed.
    pub fn parse(line_no: usize, line: &str) -> Result<Record, ParseError> {
        let err = |reason: String| ParseError {
            line: line_no,
            reason,
        };
        let r: Record = serde_json::from_str(line).map_err(|e| err(e.to_string()))?;
        if !CALLS.contains(&r.call.as_str()) {
            return Err(err(format!("no known \"call\" ({:?})", r.call)));
        }
        Ok(r)
    }
}

/// Reads a whole capture (blank lines skipped).
///
/// # Errors
/// The first line that is not a record.
pub fn parse(text: &str) -> Result<Vec<Record>, ParseError> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| Record::parse(i + 1, l))
        .collect()
}

/// Writes records to a capture file: numbered, timed from the first, one flushed line each.
/// Shared by threads.
#[derive(Debug)]
pub struct Recorder {
    file: Mutex<File>,
    seq: AtomicU64,
    start: Instant,
}

/// A call being recorded: from [`Recorder::begin`] to [`Recorder::end`].
#[derive(Debug)]
pub struct Pending {
    /// The number the call's record will carry.
    pub seq: u64,
    t_ns: u64,
    began: Instant,
}

impl Recorder {
    /// A recorder writing to `file` (created, or truncated).
    ///
    /// # Errors
    /// The file cannot be created.
    pub fn create(path: &std::path::Path) -> std::io::Result<Recorder> {
        Ok(Recorder {
            file: Mutex::new(File::create(path)?),
            seq: AtomicU64::new(0),
            start: Instant::now(),
        })
    }

    /// Numbers a call and notes when it began.
    pub fn begin(&self) -> Pending {
        let began = Instant::now();
        Pending {
            seq: self.seq.fetch_add(1, Ordering::Relaxed) + 1,
            t_ns: u64::try_from(began.duration_since(self.start).as_nanos()).unwrap_or(u64::MAX),
            began,
        }
    }

    /// Writes the record of a call that began with `p`; `rec`'s `seq`, `t_ns` and `dur_ns` are
    /// set here. Returns the `seq`. A write error is dropped: capturing never fails the call.
    pub fn end(&self, p: Pending, mut rec: Record) -> u64 {
        rec.seq = p.seq;
        rec.t_ns = p.t_ns;
        rec.dur_ns = u64::try_from(p.began.elapsed().as_nanos()).unwrap_or(u64::MAX);
        let mut line = rec.to_line();
        line.push('\n');
        let mut f = self.file.lock().unwrap_or_else(|e| e.into_inner());
        let _ = f.write_all(line.as_bytes());
        let _ = f.flush();
        p.seq
    }
}

/// A [`Devx`] that records every mailbox call of the one it wraps, in the capture format.
pub struct CaptureDevx {
    inner: Arc<dyn Devx>,
    rec: Arc<Recorder>,
    /// Capture object ids (the create's `seq`) by handle.
    objects: Mutex<HashMap<u64, u64>>,
    umems: Mutex<HashMap<u64, u64>>,
}

impl CaptureDevx {
    /// Wraps `inner`, recording to `path` (created or truncated).
    ///
    /// # Errors
    /// The file cannot be created.
    pub fn new(inner: Arc<dyn Devx>, path: &Path) -> std::io::Result<CaptureDevx> {
        Ok(Self::with_recorder(
            inner,
            Arc::new(Recorder::create(path)?),
        ))
    }

    /// Wraps `inner`, recording into `rec`, which other contexts may share (one capture of a
    /// whole program).
    pub fn with_recorder(inner: Arc<dyn Devx>, rec: Arc<Recorder>) -> CaptureDevx {
        CaptureDevx {
            inner,
            rec,
            objects: Mutex::new(HashMap::new()),
            umems: Mutex::new(HashMap::new()),
        }
    }

    fn errno_of(e: &DevxError) -> i32 {
        match e {
            DevxError::Os { errno, .. } => *errno as i32,
            DevxError::Command { errno, .. } => errno.map_or(0, |e| e as i32),
            _ => 0,
        }
    }

    fn mailbox(
        &self,
        call: &str,
        obj: Option<u64>,
        inbox: &[u8],
        outbox: &mut [u8],
        f: impl FnOnce(&mut [u8]) -> Result<(), DevxError>,
    ) -> Result<(), DevxError> {
        let p = self.rec.begin();
        let r = f(outbox);
        self.rec.end(
            p,
            Record {
                call: call.into(),
                inbox: inbox.to_vec(),
                outbox: outbox.to_vec(),
                ret: i64::from(r.is_err()),
                errno: r.as_ref().err().map_or(0, Self::errno_of),
                obj,
                ..Default::default()
            },
        );
        r
    }

    fn lookup(map: &Mutex<HashMap<u64, u64>>, h: u64) -> Option<u64> {
        map.lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&h)
            .copied()
    }
}

impl Devx for CaptureDevx {
    fn describe(&self) -> String {
        format!("{} (captured)", self.inner.describe())
    }
    fn general_cmd(&self, inbox: &[u8], outbox: &mut [u8]) -> Result<(), DevxError> {
        self.mailbox("general_cmd", None, inbox, outbox, |o| {
            self.inner.general_cmd(inbox, o)
        })
    }
    fn obj_create(&self, inbox: &[u8], outbox: &mut [u8]) -> Result<ObjHandle, DevxError> {
        let p = self.rec.begin();
        let r = self.inner.obj_create(inbox, outbox);
        let seq = self.rec.end(
            p,
            Record {
                call: "obj_create".into(),
                inbox: inbox.to_vec(),
                outbox: outbox.to_vec(),
                ret: if r.is_ok() { 0 } else { -1 },
                errno: r.as_ref().err().map_or(0, Self::errno_of),
                ..Default::default()
            },
        );
        if let Ok(h) = &r {
            self.objects
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(h.0, seq);
        }
        r
    }
    fn obj_modify(&self, obj: ObjHandle, inbox: &[u8], outbox: &mut [u8]) -> Result<(), DevxError> {
        let id = Self::lookup(&self.objects, obj.0);
        self.mailbox("obj_modify", id, inbox, outbox, |o| {
            self.inner.obj_modify(obj, inbox, o)
        })
    }
    fn obj_query(&self, obj: ObjHandle, inbox: &[u8], outbox: &mut [u8]) -> Result<(), DevxError> {
        let id = Self::lookup(&self.objects, obj.0);
        self.mailbox("obj_query", id, inbox, outbox, |o| {
            self.inner.obj_query(obj, inbox, o)
        })
    }
    fn obj_destroy(&self, obj: ObjHandle) -> Result<(), DevxError> {
        let id = Self::lookup(&self.objects, obj.0);
        self.mailbox("obj_destroy", id, &[], &mut [], |_| {
            self.inner.obj_destroy(obj)
        })
    }
    unsafe fn umem_reg(
        &self,
        addr: *mut u8,
        len: usize,
        access: UmemAccess,
        pgsz_bitmap: u64,
    ) -> Result<Umem, DevxError> {
        let p = self.rec.begin();
        // SAFETY: the caller's contract for `addr..addr+len`, passed on unchanged.
        let r = unsafe { self.inner.umem_reg(addr, len, access, pgsz_bitmap) };
        let seq = self.rec.end(
            p,
            Record {
                call: "umem_reg".into(),
                ret: if r.is_ok() { 0 } else { -1 },
                errno: r.as_ref().err().map_or(0, Self::errno_of),
                size: Some(len as u64),
                access: Some(access.bits()),
                ..Default::default()
            },
        );
        if let Ok(u) = &r {
            self.umems
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(u.handle.0, seq);
        }
        r
    }
    fn umem_dereg(&self, umem: UmemHandle) -> Result<(), DevxError> {
        let id = Self::lookup(&self.umems, umem.0);
        self.mailbox("umem_dereg", id, &[], &mut [], |_| {
            self.inner.umem_dereg(umem)
        })
    }
    fn uar_alloc(&self, kind: UarKind) -> Result<Uar, DevxError> {
        self.inner.uar_alloc(kind)
    }
    fn uar_free(&self, uar: Uar) -> Result<(), DevxError> {
        self.inner.uar_free(uar)
    }
    fn query_eqn(&self, vector: u32) -> Result<u32, DevxError> {
        self.inner.query_eqn(vector)
    }
    fn event_channel(&self) -> Result<Box<dyn EventChannel>, DevxError> {
        self.inner.event_channel()
    }
    fn retain_until_close(&self, mem: Box<dyn std::any::Any + Send + Sync>) {
        self.inner.retain_until_close(mem);
    }
    fn doorbell_rung(&self) {
        self.inner.doorbell_rung();
    }
    fn activity(&self) -> u64 {
        self.inner.activity()
    }
    fn wait_activity(&self, seen: u64, timeout: Duration) -> bool {
        self.inner.wait_activity(seen, timeout)
    }
}
