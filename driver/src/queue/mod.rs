//! The legacy encrypted I/O queue: VeraCrypt 1.26's EncryptedIoQueue architecture, the
//! compatibility path and the baseline of every speed-up.
//!
//! Owns: per volume, a main thread (takes granted requests, splits them into fragments,
//! encrypts write fragments into two alternating preallocated fragment buffers), an I/O
//! thread (synchronous host reads/writes one fragment at a time, with a one-fragment
//! read-ahead for sequential reads) and a completion thread (decrypts read fragments and
//! finishes requests). The item pool bounds requests in process (default 8), the request
//! pool bounds fragments in flight (default 16). Crypto is split across the encryption pool;
//! a single data unit runs inline.
//! Never: completes upper requests itself (`completion` does, from work items) or decides
//! ordering (`barrier` granted the request before it arrives here).
//!
//! Reads go straight into the caller's buffer and are decrypted there, as VeraCrypt does:
//! each fragment owns its piece of the caller's buffer (an [`IoBuf`] split), so the I/O thread
//! can read fragment k+1 while the completion thread decrypts fragment k.

use alloc::boxed::Box;
use alloc::sync::Arc;
use alloc::vec::Vec;

use crate::crypto::{Cipher, DATA_UNIT};
use crate::faults::{self, Fault};
use crate::platform::{
    HostDevice, HostLimits, IoBuf, Lock, Platform, Semaphore, ThreadRole, UpperRequest, WorkQueue,
};
use crate::registry::Tunables;
use crate::volume::buffer::AlignedBuffer;
use crate::volume::job_queue::{JobQueue, Next};
use crate::volume::segment::SegmentLimits;
use crate::volume::{Counters, IoJob, JobKind, Volume};
use crate::Status;

enum Msg<T> {
    Work(T),
    Stop,
}

enum FragmentData<B> {
    /// A piece of the caller's buffer to read into.
    Read(B),
    /// A fragment buffer holding encrypted data to write (taken back after the write).
    Write(Option<AlignedBuffer>),
}

struct Fragment<B> {
    item: usize,
    /// Byte offset within the volume.
    offset: u64,
    length: usize,
    data: FragmentData<B>,
    status: Status,
}

struct Item<R: UpperRequest> {
    request: R,
    ticket: crate::barrier::Ticket,
    kind: JobKind,
    length: u32,
    outstanding: u32,
    issuing_done: bool,
    status: Status,
    /// Read pieces returned so far, joined in order (or the whole buffer of a write).
    assembled: Option<R::Buf>,
    /// The part of a read's buffer that was never issued.
    tail: Option<R::Buf>,
}

struct Items<R: UpperRequest> {
    slots: Vec<Option<Item<R>>>,
    free: Vec<usize>,
}

/// The legacy queue of one volume.
pub(crate) struct LegacyQueue<P: Platform> {
    /// Granted requests waiting for the main thread (where a cancel routine finds them).
    pub(crate) input: JobQueue<P>,
    to_io: WorkQueue<P, Msg<Fragment<<P::Request as UpperRequest>::Buf>>>,
    to_completion: WorkQueue<P, Msg<Fragment<<P::Request as UpperRequest>::Buf>>>,
    item_permits: P::Semaphore,
    request_permits: P::Semaphore,
    fragment_buffers: WorkQueue<P, AlignedBuffer>,
    items: P::Lock<Items<P::Request>>,
    fragment_size: u32,
}

impl<P: Platform> LegacyQueue<P> {
    pub(crate) fn new(t: &Tunables, limits: &HostLimits) -> Self {
        let item_count = t.item_count.max(1) as usize;
        let fragment_buffers = WorkQueue::with_capacity(2);
        // Two alternating fragment buffers, preallocated at mount (with room to align them).
        fragment_buffers.push(AlignedBuffer::new(t.fragment_size as usize, limits));
        fragment_buffers.push(AlignedBuffer::new(t.fragment_size as usize, limits));
        LegacyQueue {
            input: JobQueue::new(),
            to_io: WorkQueue::with_capacity(t.io_request_count as usize),
            to_completion: WorkQueue::with_capacity(t.io_request_count as usize),
            item_permits: P::Semaphore::new(item_count),
            request_permits: P::Semaphore::new(t.io_request_count.max(1) as usize),
            fragment_buffers,
            items: P::Lock::new(Items {
                slots: (0..item_count).map(|_| None).collect(),
                free: (0..item_count).rev().collect(),
            }),
            fragment_size: t.fragment_size,
        }
    }

    /// Starts the main, I/O and completion threads.
    pub(crate) fn start(volume: &Arc<Volume<P>>) -> Result<Vec<P::Thread>, Status> {
        let mut threads = Vec::with_capacity(3);
        let v = Arc::clone(volume);
        threads.push(
            volume
                .env
                .spawn(ThreadRole::LegacyMain, Box::new(move || main_thread(&v)))?,
        );
        let v = Arc::clone(volume);
        threads.push(
            volume
                .env
                .spawn(ThreadRole::LegacyIo, Box::new(move || io_thread(&v)))?,
        );
        let v = Arc::clone(volume);
        threads.push(volume.env.spawn(
            ThreadRole::LegacyCompletion,
            Box::new(move || completion_thread(&v)),
        )?);
        Ok(threads)
    }

    /// Queues a granted request for the main thread.
    pub(crate) fn submit(&self, job: IoJob<P::Request>) {
        self.input.push(job);
    }

    /// Ends the three threads after everything queued before.
    pub(crate) fn stop(&self) {
        self.input.stop();
    }
}

fn unit_of<P: Platform>(v: &Volume<P>, offset: u64) -> u64 {
    (v.params.data_offset + offset) / DATA_UNIT as u64
}

fn main_thread<P: Platform>(v: &Arc<Volume<P>>) {
    let q = &v.legacy;
    let limits = SegmentLimits::fragments(q.fragment_size, v.params.sector_size);
    loop {
        // An item first, then the request: a request waiting for one of the 8 items stays in
        // the queue, where its cancel routine can still take it out.
        q.item_permits.acquire();
        let job = match q.input.next(v) {
            Next::Stop => {
                // Both fragment buffers are back: every admitted request finished before stop.
                while !q.fragment_buffers.is_empty() {
                    drop(q.fragment_buffers.pop());
                }
                q.to_io.push(Msg::Stop);
                return;
            }
            Next::Job(job) => job,
        };
        let IoJob {
            request,
            buf,
            kind,
            offset,
            length,
            ticket,
            ..
        } = job;
        let mut buf = buf.expect("legacy reads and writes carry a buffer");
        if request.is_cancelled() {
            q.item_permits.release();
            v.finish(request, Some(buf), ticket, kind, Status::Cancelled, 0);
            continue;
        }
        Counters::add(
            if kind == JobKind::Write {
                &v.counters.legacy_writes
            } else {
                &v.counters.legacy_reads
            },
            1,
        );
        let idx = q.items.with(|t| {
            let idx = t.free.pop().expect("an item permit guarantees a free item");
            t.slots[idx] = Some(Item {
                request,
                ticket,
                kind,
                length,
                outstanding: 0,
                issuing_done: false,
                status: Status::Success,
                assembled: None,
                tail: None,
            });
            idx
        });
        let total = length as usize;
        let mut pos = 0usize;
        let mut failure = None;
        while pos < total {
            // REVIEW.md R2: no new fragment once the key block is set.
            if v.key.is_blocked() && !(faults::is_on(Fault::R2CheckBlockOnce) && pos > 0) {
                failure = Some(Status::DeviceBusy);
                break;
            }
            let n = limits.next_len(total - pos, 0);
            let data = if kind == JobKind::Read {
                FragmentData::Read(buf.split_to(n))
            } else {
                let mut fb = q.fragment_buffers.pop();
                fb.window(n).copy_from_slice(&buf.bytes()[pos..pos + n]);
                let unit = unit_of(v, offset + pos as u64);
                if v.crypto_pool
                    .run(&v.env, &v.key, Cipher::Encrypt, fb.window(n), unit)
                    .is_err()
                {
                    // W5: the refused fragment's plaintext is wiped now, not at dismount.
                    zeroize::Zeroize::zeroize(fb.window(n));
                    q.fragment_buffers.push(fb);
                    failure = Some(Status::DeviceBusy);
                    break;
                }
                FragmentData::Write(Some(fb))
            };
            q.request_permits.acquire();
            q.items.with(|t| {
                if let Some(item) = t.slots[idx].as_mut() {
                    item.outstanding += 1;
                }
            });
            q.to_io.push(Msg::Work(Fragment {
                item: idx,
                offset: offset + pos as u64,
                length: n,
                data,
                status: Status::Success,
            }));
            pos += n;
        }
        let done = q.items.with(|t| {
            let item = t.slots[idx].as_mut().expect("live item");
            item.issuing_done = true;
            if let Some(s) = failure {
                if item.status.is_success() {
                    item.status = s;
                }
            }
            if kind == JobKind::Read {
                item.tail = Some(buf);
            } else {
                item.assembled = Some(buf);
            }
            if item.outstanding == 0 {
                t.free.push(idx);
                t.slots[idx].take()
            } else {
                None
            }
        });
        if let Some(item) = done {
            finish_item(v, item);
        }
    }
}

fn io_thread<P: Platform>(v: &Arc<Volume<P>>) {
    let q = &v.legacy;
    let limits = v.host.limits();
    let alignment_mask = limits.alignment_mask as usize;
    // For a caller buffer the host cannot take (unaligned): the legacy path reads into its
    // own buffer and copies, as the direct path's eligibility rule promises.
    let mut bounce = AlignedBuffer::new(q.fragment_size as usize, &limits);
    let mut read_ahead = ReadAhead {
        buf: AlignedBuffer::new(q.fragment_size as usize, &limits),
        valid: false,
        offset: 0,
        length: 0,
        generation: 0,
    };
    loop {
        let mut frag = match q.to_io.pop() {
            Msg::Stop => {
                // Dropping the buffers zeroizes them.
                q.to_completion.push(Msg::Stop);
                return;
            }
            Msg::Work(f) => f,
        };
        let item_status = q
            .items
            .with(|t| t.slots[frag.item].as_ref().map(|i| i.status));
        let host_offset = v.params.data_offset + frag.offset;
        if let Some(s) = item_status.filter(|s| !s.is_success()) {
            // An earlier fragment of this request failed: issue nothing more for it.
            frag.status = s;
        } else if v.key.is_blocked() && !faults::is_on(Fault::R2CheckBlockOnce) {
            frag.status = Status::DeviceBusy;
        } else {
            Counters::add(&v.counters.legacy_fragments, 1);
            match &mut frag.data {
                FragmentData::Read(piece) => {
                    let n = frag.length;
                    if read_ahead.matches(v, frag.offset, n) {
                        piece.bytes().copy_from_slice(read_ahead.buf.window(n));
                    } else if piece.address() & alignment_mask != 0 {
                        let window = bounce.window(n);
                        frag.status = read_exact(&v.host, host_offset, window);
                        if frag.status.is_success() {
                            piece.bytes().copy_from_slice(window);
                        }
                    } else {
                        frag.status = read_exact(&v.host, host_offset, piece.bytes());
                    }
                    read_ahead.valid = false;
                    let next = frag.offset + n as u64;
                    if frag.status.is_success()
                        && q.to_io.is_empty()
                        && !v.key.is_blocked()
                        && next + n as u64 <= v.params.data_size
                        && n <= q.fragment_size as usize
                    {
                        read_ahead.fill(v, next, n);
                    }
                }
                FragmentData::Write(fb) => {
                    read_ahead.valid = false;
                    let fb = fb.as_mut().expect("a write fragment carries its buffer");
                    frag.status = match v.host.write(host_offset, fb.window(frag.length)) {
                        Ok(_) => Status::Success,
                        Err(s) => s,
                    };
                }
            }
        }
        if let FragmentData::Write(fb) = &mut frag.data {
            // The fragment buffer is free again for the main thread (VeraCrypt's free event).
            if let Some(fb) = fb.take() {
                q.fragment_buffers.push(fb);
            }
        }
        q.to_completion.push(Msg::Work(frag));
    }
}

fn read_exact<H: HostDevice>(host: &H, offset: u64, buf: &mut [u8]) -> Status {
    match host.read(offset, buf) {
        Ok(n) if n == buf.len() => Status::Success,
        Ok(_) => Status::EndOfFile,
        Err(s) => s,
    }
}

/// The I/O thread's one-fragment read-ahead. Valid only while no write was granted or
/// finished since it was read (either path), so it can never return stale data.
struct ReadAhead {
    buf: AlignedBuffer,
    valid: bool,
    offset: u64,
    length: usize,
    generation: u64,
}

impl ReadAhead {
    fn matches<P: Platform>(&self, v: &Volume<P>, offset: u64, length: usize) -> bool {
        self.valid
            && self.offset == offset
            && self.length == length
            && self.generation
                == v.write_generation
                    .load(core::sync::atomic::Ordering::Acquire)
    }

    fn fill<P: Platform>(&mut self, v: &Volume<P>, offset: u64, length: usize) {
        use core::sync::atomic::Ordering;
        let generation = v.write_generation.load(Ordering::Acquire);
        if v.writes_in_flight.load(Ordering::Acquire) != 0 {
            return;
        }
        let host_offset = v.params.data_offset + offset;
        if read_exact(&v.host, host_offset, self.buf.window(length)).is_success() {
            self.valid = true;
            self.offset = offset;
            self.length = length;
            self.generation = generation;
        }
    }
}

fn completion_thread<P: Platform>(v: &Arc<Volume<P>>) {
    let q = &v.legacy;
    loop {
        let mut frag = match q.to_completion.pop() {
            Msg::Stop => return,
            Msg::Work(f) => f,
        };
        q.request_permits.release();
        if let FragmentData::Read(piece) = &mut frag.data {
            if frag.status.is_success() {
                let unit = unit_of(v, frag.offset);
                // REVIEW.md R3: a read whose host I/O finished after the key block is failed,
                // never decrypted with erased keys.
                if v.crypto_pool
                    .run(&v.env, &v.key, Cipher::Decrypt, piece.bytes(), unit)
                    .is_err()
                {
                    frag.status = Status::DeviceBusy;
                }
            }
        }
        let done = q.items.with(|t| {
            let item = t.slots[frag.item].as_mut().expect("live item");
            item.outstanding -= 1;
            if !frag.status.is_success() && item.status.is_success() {
                item.status = frag.status;
            }
            if let FragmentData::Read(piece) = frag.data {
                match item.assembled.as_mut() {
                    Some(a) => a.unsplit(piece),
                    None => item.assembled = Some(piece),
                }
            }
            if item.issuing_done && item.outstanding == 0 {
                t.free.push(frag.item);
                t.slots[frag.item].take()
            } else {
                None
            }
        });
        if let Some(item) = done {
            finish_item(v, item);
        }
    }
}

fn finish_item<P: Platform>(v: &Arc<Volume<P>>, item: Item<P::Request>) {
    let Item {
        request,
        ticket,
        kind,
        length,
        status,
        assembled,
        tail,
        ..
    } = item;
    let buf = match (assembled, tail) {
        (Some(mut a), Some(t)) => {
            a.unsplit(t);
            a
        }
        (Some(a), None) => a,
        (None, Some(t)) => t,
        (None, None) => unreachable!("an item always keeps its buffer"),
    };
    let information = if status.is_success() {
        Counters::add(&v.counters.legacy_bytes, u64::from(length));
        length as usize
    } else {
        0
    };
    v.legacy.item_permits.release();
    v.finish(request, Some(buf), ticket, kind, status, information);
}
