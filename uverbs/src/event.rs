//! Event files: the file descriptors the kernel gives for completion channels, the async event
//! queue and DevX event channels, each a queue of whole records read one per `read()`.
//!
//! The fd is a real `eventfd` in semaphore mode, so `poll`, `epoll` and `O_NONBLOCK` behave as
//! on a kernel event file: it counts the records queued. The records themselves live here, and
//! the interposed `read()` hands them out: it takes one count from the eventfd (blocking, or
//! `EAGAIN` when the fd is non-blocking and nothing is queued), then the oldest record. As in
//! the kernel's `ib_uverbs_event_read` (Linux `drivers/infiniband/core/uverbs_main.c`), a read
//! shorter than the record is `EINVAL` and leaves it queued, and reading a record is what counts
//! it as reported (`comp_events_reported` of DESTROY_CQ).

use std::collections::VecDeque;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use mlx5_dpa::sync::lock;
use nix::errno::Errno;

/// Records an event file keeps before it drops the oldest (the kernel's event queues are
/// bounded by memory; the DevX event channel reports an overflow the same way).
pub const MAX_QUEUED: usize = 8192;

/// One queued record.
#[derive(Debug)]
struct Record {
    bytes: Vec<u8>,
    /// Whose record it is (a CQ's handle), so destroying the object removes what is unread.
    tag: u64,
    /// Counted when the record is read.
    counter: Option<Arc<AtomicU32>>,
}

/// An event file. The eventfd is closed when the client closes its descriptor (the interposed
/// `close` forgets the file, then closes the fd).
#[derive(Debug)]
pub struct EventFile {
    fd: RawFd,
    queue: Mutex<VecDeque<Record>>,
    /// Records dropped because the queue was full.
    pub dropped: AtomicU32,
}

impl EventFile {
    /// A new event file: the eventfd is created here and handed to the client.
    ///
    /// # Errors
    /// The eventfd could not be created.
    pub fn new(cloexec: bool) -> Result<Arc<EventFile>, Errno> {
        let mut flags = libc::EFD_SEMAPHORE;
        if cloexec {
            flags |= libc::EFD_CLOEXEC;
        }
        // SAFETY: eventfd has no memory-safety preconditions; the result is checked.
        let fd = unsafe { libc::eventfd(0, flags) };
        if fd < 0 {
            return Err(Errno::last());
        }
        Ok(Arc::new(EventFile {
            fd,
            queue: Mutex::new(VecDeque::new()),
            dropped: AtomicU32::new(0),
        }))
    }

    /// The descriptor the client holds.
    pub fn fd(&self) -> RawFd {
        self.fd
    }

    fn add_token(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a local to an eventfd this file created; a failure (the
        // client closed it) only means nobody will read. A raw system call: the interposed
        // `write` would hand this descriptor back to the server.
        let _ = unsafe { crate::real::write(self.fd, (&raw const one).cast(), 8) };
    }

    fn take_token_nonblocking(&self) -> bool {
        let mut v: u64 = 0;
        // A non-blocking read of a blocking eventfd: its flags are switched around the read
        // (an eventfd has no per-call non-blocking read).
        let was = crate::real::fcntl(self.fd, libc::F_GETFL, 0);
        if was >= 0 && was & libc::O_NONBLOCK == 0 {
            crate::real::fcntl(self.fd, libc::F_SETFL, i64::from(was | libc::O_NONBLOCK));
        }
        // SAFETY: reads 8 bytes into a local (a raw system call, as in `add_token`).
        let n = unsafe { crate::real::read(self.fd, (&raw mut v).cast(), 8) };
        if was >= 0 && was & libc::O_NONBLOCK == 0 {
            crate::real::fcntl(self.fd, libc::F_SETFL, i64::from(was));
        }
        n == 8
    }

    /// Queues a record (the device delivered an event).
    pub fn push(&self, bytes: Vec<u8>, tag: u64, counter: Option<Arc<AtomicU32>>) {
        {
            let mut q = lock(&self.queue);
            if q.len() >= MAX_QUEUED {
                q.pop_front();
                self.dropped.fetch_add(1, Ordering::Relaxed);
                drop(q);
                self.take_token_nonblocking();
                q = lock(&self.queue);
            }
            q.push_back(Record {
                bytes,
                tag,
                counter,
            });
        }
        self.add_token();
    }

    /// Removes the unread records of `tag` (its object is being destroyed); returns how many.
    pub fn remove_tag(&self, tag: u64) -> usize {
        let removed = {
            let mut q = lock(&self.queue);
            let before = q.len();
            q.retain(|r| r.tag != tag);
            before - q.len()
        };
        for _ in 0..removed {
            // A reader may already hold the token of a removed record: it then finds no record
            // and waits for the next one, as the kernel's reader would.
            if !self.take_token_nonblocking() {
                break;
            }
        }
        removed
    }

    /// The interposed `read(fd, buf, count)`: one whole record into the client's buffer.
    ///
    /// # Errors
    /// `EAGAIN` (non-blocking, nothing queued), `EINVAL` (record longer than `count`), `EFAULT`
    /// (bad buffer; the record stays queued), or the eventfd's own error.
    pub fn read(&self, buf: u64, count: usize) -> Result<usize, Errno> {
        loop {
            let mut v: u64 = 0;
            // SAFETY: reads 8 bytes into a local from the eventfd: blocks or fails with EAGAIN
            // according to the flags the client set on it (a raw system call: the interposed
            // `read` would hand this descriptor back to the server).
            let n = unsafe { crate::real::read(self.fd, (&raw mut v).cast(), 8) };
            if n < 0 {
                return Err(Errno::last());
            }
            let mut q = lock(&self.queue);
            let Some(rec) = q.pop_front() else {
                // Its record was removed (the object was destroyed): wait for the next.
                continue;
            };
            let give_back = |q: &mut VecDeque<Record>, rec: Record| {
                q.push_front(rec);
            };
            if rec.bytes.len() > count {
                give_back(&mut q, rec);
                drop(q);
                self.add_token();
                return Err(Errno::EINVAL);
            }
            if let Err(e) = crate::user::write(buf, &rec.bytes) {
                give_back(&mut q, rec);
                drop(q);
                self.add_token();
                return Err(e);
            }
            if let Some(c) = &rec.counter {
                c.fetch_add(1, Ordering::AcqRel);
            }
            return Ok(rec.bytes.len());
        }
    }

    /// Records waiting.
    pub fn queued(&self) -> usize {
        lock(&self.queue).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Closes a test's event file descriptor (in a program the client closes it).
    struct Closer(RawFd);

    impl Drop for Closer {
        fn drop(&mut self) {
            // SAFETY: the descriptor of an event file this test made and nothing else uses.
            unsafe { crate::real::close(self.0) };
        }
    }

    fn read_into(f: &EventFile, n: usize) -> Result<Vec<u8>, Errno> {
        let mut b = vec![0u8; n];
        let got = f.read(b.as_mut_ptr() as u64, n)?;
        b.truncate(got);
        Ok(b)
    }

    fn set_nonblocking(fd: RawFd) {
        // SAFETY: flag change on a test's own eventfd.
        unsafe {
            let f = libc::fcntl(fd, libc::F_GETFL);
            libc::fcntl(fd, libc::F_SETFL, f | libc::O_NONBLOCK);
        }
    }

    #[test]
    fn records_come_out_whole_in_order_and_are_counted() {
        let f = EventFile::new(true).unwrap();
        let _owner = Closer(f.fd());
        set_nonblocking(f.fd());
        assert_eq!(read_into(&f, 8), Err(Errno::EAGAIN));
        let c = Arc::new(AtomicU32::new(0));
        f.push(vec![1; 8], 5, Some(Arc::clone(&c)));
        f.push(vec![2; 16], 6, None);
        // Too short a buffer: EINVAL, the record stays.
        assert_eq!(read_into(&f, 4), Err(Errno::EINVAL));
        assert_eq!(c.load(Ordering::Acquire), 0);
        assert_eq!(read_into(&f, 64).unwrap(), vec![1; 8]);
        assert_eq!(c.load(Ordering::Acquire), 1);
        // A bad buffer: EFAULT, the record stays.
        assert_eq!(f.read(8, 64), Err(Errno::EFAULT));
        assert_eq!(read_into(&f, 64).unwrap(), vec![2; 16]);
        assert_eq!(read_into(&f, 64), Err(Errno::EAGAIN));
    }

    #[test]
    fn removing_an_objects_records_keeps_the_count_right() {
        let f = EventFile::new(true).unwrap();
        let _owner = Closer(f.fd());
        set_nonblocking(f.fd());
        f.push(vec![1; 8], 1, None);
        f.push(vec![2; 8], 2, None);
        f.push(vec![3; 8], 1, None);
        assert_eq!(f.remove_tag(1), 2);
        assert_eq!(read_into(&f, 8).unwrap(), vec![2; 8]);
        // The eventfd no longer says readable.
        let mut pfd = libc::pollfd {
            fd: f.fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one pollfd of a test's own descriptor.
        assert_eq!(unsafe { libc::poll(&mut pfd, 1, 0) }, 0);
        assert_eq!(read_into(&f, 8), Err(Errno::EAGAIN));
    }

    #[test]
    fn a_full_queue_drops_the_oldest() {
        let f = EventFile::new(true).unwrap();
        let _owner = Closer(f.fd());
        set_nonblocking(f.fd());
        for i in 0..MAX_QUEUED + 3 {
            f.push((i as u64).to_ne_bytes().to_vec(), 0, None);
        }
        assert_eq!(f.queued(), MAX_QUEUED);
        assert_eq!(f.dropped.load(Ordering::Relaxed), 3);
        assert_eq!(read_into(&f, 8).unwrap(), 3u64.to_ne_bytes());
    }
}
