//! The legacy encrypted I/O queue: VeraCrypt 1.26's EncryptedIoQueue architecture, the
//! compatibility path and the baseline of every speed-up.
//!
//! Owns: per volume, a main thread (takes granted requests, splits them into fragments,
//! encrypts write fragments into two alternating preallocated fragment buffers, which a
//! read-only volume does not allocate), an I/O
//! thread (synchronous host reads/writes one fragment at a time, with a one-fragment
//! read-ahead for sequential reads) and a completion thread (decrypts read fragments and
//! finishes requests). The item pool bounds requests in process (default 8), the request
//! pool bounds fragments in flight (default 16). Crypto is split across the encryption pool;
//! a single data unit runs inline.
//! Never: completes upper requests itself (`completion` does, from work items) or decides
//! ordering (`barrier` granted the request before it arrives here).
//! Hands to: the `Finisher` it was started with, each request once its last fragment is done.
//!
//! An IOCTL_DISK_VERIFY routed here is cut into fragments as a read is; the I/O thread reads
//! each into its read-ahead buffer (allocated at mount) and discards it, nothing decrypted.
//!
//! Reads go straight into the caller's buffer and are decrypted there, as VeraCrypt does:
//! each fragment owns its piece of the caller's buffer (an [`IoBuf`] split), so the I/O thread
//! can read fragment k+1 while the completion thread decrypts fragment k.

use alloc::sync::Arc;
use alloc::vec::Vec;

use crate::crypto::{Cipher, DATA_UNIT};
use crate::faults::{self, Fault};
use crate::io::{
    try_vec, AlignedBuffer, Counters, Finisher, IoJob, JobKind, JobQueue, Next, PathContext,
    Purpose, SegmentLimits, WriteGeneration,
};
use crate::platform::{
    HostDevice, IoBuf, Lock, Platform, Semaphore, ThreadRole, UpperRequest, WorkQueue,
};
use crate::registry::Tunables;
use crate::Status;

/// What the main thread sends the I/O thread, and the I/O thread the completion thread.
enum FragmentMsg<B> {
    Fragment(Fragment<B>),
    Stop,
}

enum FragmentData<B> {
    /// A piece of the caller's buffer to read into.
    Read(B),
    /// A piece of a VERIFY's range: the I/O thread reads it into its read-ahead buffer and
    /// discards it.
    Verify,
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
    /// Read pieces returned so far, joined in order (or the whole buffer of a write; none
    /// for a VERIFY).
    assembled: Option<R::Buf>,
    /// The part of a read's buffer that was never issued.
    tail: Option<R::Buf>,
}

/// True when the request of item `idx` was cancelled (docs/review.md R2: checked before each
/// fragment, beside the key block).
fn item_cancelled<R: UpperRequest>(items: &Items<R>, idx: usize) -> bool {
    items.slots[idx]
        .as_ref()
        .is_some_and(|item| item.request.is_cancelled())
}

struct Items<R: UpperRequest> {
    slots: Vec<Option<Item<R>>>,
    free: Vec<usize>,
}

/// The legacy queue of one volume.
pub(crate) struct LegacyQueue<P: Platform> {
    context: Arc<PathContext<P>>,
    /// Granted requests waiting for the main thread (where a cancel routine finds them).
    pub(crate) input: JobQueue<P>,
    to_io: WorkQueue<P, FragmentMsg<<P::Request as UpperRequest>::Buf>>,
    to_completion: WorkQueue<P, FragmentMsg<<P::Request as UpperRequest>::Buf>>,
    item_permits: P::Semaphore,
    request_permits: P::Semaphore,
    fragment_buffers: WorkQueue<P, AlignedBuffer>,
    items: P::Lock<Items<P::Request>>,
    fragment_size: u32,
}

impl<P: Platform> LegacyQueue<P> {
    /// The queue of a volume; `writable`: the volume takes writes (a read-only one never
    /// needs the fragment buffers writes are encrypted into).
    /// Fails with STATUS_INSUFFICIENT_RESOURCES when its buffers or tables cannot be allocated.
    pub(crate) fn new(
        context: Arc<PathContext<P>>,
        tunables: &Tunables,
        writable: bool,
    ) -> Result<Self, Status> {
        let limits = context.host.limits();
        let item_count = tunables.item_count.max(1) as usize;
        let fragment_buffers = WorkQueue::with_capacity(2)?;
        // Two alternating fragment buffers, preallocated at mount (with room to align them).
        for _ in 0..if writable { 2 } else { 0 } {
            fragment_buffers.push(AlignedBuffer::new(
                tunables.fragment_size as usize,
                &limits,
                &context.memory,
                Purpose::LegacyFragments,
            )?);
        }
        let mut slots = try_vec(item_count)?;
        slots.resize_with(item_count, || None);
        let mut free = try_vec(item_count)?;
        free.extend((0..item_count).rev());
        Ok(LegacyQueue {
            context,
            input: JobQueue::new()?,
            to_io: WorkQueue::with_capacity(tunables.io_request_count as usize)?,
            to_completion: WorkQueue::with_capacity(tunables.io_request_count as usize)?,
            item_permits: P::Semaphore::new(item_count)?,
            request_permits: P::Semaphore::new(tunables.io_request_count.max(1) as usize)?,
            fragment_buffers,
            items: P::Lock::new(Items { slots, free }),
            fragment_size: tunables.fragment_size,
        })
    }

    /// Starts the main, I/O and completion threads. They give every request back to
    /// `finisher`. Each thread is handed to `keep` as soon as it runs, so when a later one
    /// fails to start the owner's [`stop`](Self::stop) and join end the ones that did (each
    /// passes the stop on to the next stage and returns).
    pub(crate) fn start<F: Finisher<P>>(
        self: &Arc<Self>,
        finisher: &Arc<F>,
        keep: &mut dyn FnMut(P::Thread),
    ) -> Result<(), Status> {
        let platform = &self.context.platform;
        let (queue, main_finisher) = (Arc::clone(self), Arc::clone(finisher));
        keep(platform.spawn(
            ThreadRole::LegacyMain,
            platform.try_box(move || main_thread(&queue, &*main_finisher))?,
        )?);
        // The I/O thread's buffers, allocated here (at mount, counted in the volume's memory):
        // the read-ahead, and for caller buffers the host cannot take (unaligned) a buffer to
        // read into and copy from, which a host that takes any address never needs.
        let limits = self.context.host.limits();
        let fragment = self.fragment_size as usize;
        let memory = &self.context.memory;
        let read_ahead = AlignedBuffer::new(fragment, &limits, memory, Purpose::LegacyReadAhead)?;
        let unaligned = match limits.alignment_mask != 0 {
            true => Some(AlignedBuffer::new(
                fragment,
                &limits,
                memory,
                Purpose::LegacyUnaligned,
            )?),
            false => None,
        };
        let queue = Arc::clone(self);
        keep(platform.spawn(
            ThreadRole::LegacyIo,
            platform.try_box(move || io_thread(&queue, read_ahead, unaligned))?,
        )?);
        let (queue, completion_finisher) = (Arc::clone(self), Arc::clone(finisher));
        keep(platform.spawn(
            ThreadRole::LegacyCompletion,
            platform.try_box(move || completion_thread(&queue, &*completion_finisher))?,
        )?);
        Ok(())
    }

    /// Queues a granted request for the main thread.
    /// Queues `job` (its cancel hook armed); hands it back when it was already cancelled.
    pub(crate) fn submit(&self, job: IoJob<P::Request>) -> Result<(), IoJob<P::Request>> {
        self.input.push(job)
    }

    /// Ends the three threads after everything queued before.
    pub(crate) fn stop(&self) {
        self.input.stop();
    }
}

fn unit_of<P: Platform>(context: &PathContext<P>, offset: u64) -> u64 {
    (context.geometry.data_offset + offset) / DATA_UNIT as u64
}

fn main_thread<P: Platform, F: Finisher<P>>(queue: &LegacyQueue<P>, finisher: &F) {
    let context = &*queue.context;
    let limits = SegmentLimits::fragments(queue.fragment_size, context.geometry.sector_size);
    loop {
        // An item first, then the request: a request waiting for one of the 8 items stays in
        // the queue, where its cancel routine can still take it out.
        queue.item_permits.acquire();
        let job = match queue.input.next(finisher) {
            Next::Stop => {
                // Both fragment buffers are back: every admitted request finished before stop.
                while !queue.fragment_buffers.is_empty() {
                    drop(queue.fragment_buffers.pop());
                }
                queue.to_io.push(FragmentMsg::Stop);
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
        // Reads and writes carry their buffer (dispatch checked it, R14); a VERIFY has none.
        let mut buf = buf;
        if request.is_cancelled() {
            queue.item_permits.release();
            finisher.finish(request, buf, ticket, kind, Status::Cancelled, 0);
            continue;
        }
        // W7: mapped now that the main thread has taken it; a mapping failure issues nothing.
        if let Some(Err(status)) = buf.as_mut().map(|b| b.map().map(|_| ())) {
            queue.item_permits.release();
            finisher.finish(request, buf, ticket, kind, status, 0);
            continue;
        }
        // A VERIFY counts as a read of this path (its fragments in `legacy_fragments`, no
        // bytes: nothing reaches the caller).
        Counters::add(
            if kind == JobKind::Write {
                &context.counters.legacy_writes
            } else {
                &context.counters.legacy_reads
            },
            1,
        );
        let idx = queue.items.with(|items| {
            let idx = items
                .free
                .pop()
                .expect("an item permit guarantees a free item");
            items.slots[idx] = Some(Item {
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
            // docs/review.md R2: no new fragment once the key block is set.
            if context.key.is_blocked() && !(faults::is_on(Fault::R2CheckBlockOnce) && pos > 0) {
                failure = Some(Status::DeviceBusy);
                break;
            }
            // R2: nor once the request is cancelled (its fragments already issued finish).
            if pos > 0 && queue.items.with(|items| item_cancelled(items, idx)) {
                failure = Some(Status::Cancelled);
                break;
            }
            let n = limits.next_len(total - pos, 0);
            let data = match (kind, buf.as_mut()) {
                (JobKind::Verify, _) => FragmentData::Verify,
                (JobKind::Read, Some(buf)) => FragmentData::Read(buf.split_to(n)),
                (JobKind::Write, Some(buf)) => {
                    // Mapped above (W7); `mapped` fails the request rather than index past an
                    // unmapped buffer.
                    let source = match buf.mapped() {
                        Ok(bytes) => &bytes[pos..pos + n],
                        Err(status) => {
                            failure = Some(status);
                            break;
                        }
                    };
                    let mut fragment_buffer = queue.fragment_buffers.pop();
                    fragment_buffer.window(n).copy_from_slice(source);
                    let unit = unit_of(context, offset + pos as u64);
                    if context
                        .crypto_pool
                        .run(
                            &context.platform,
                            &context.key,
                            Cipher::Encrypt,
                            fragment_buffer.window(n),
                            unit,
                        )
                        .is_err()
                    {
                        // W5: the refused fragment's plaintext is wiped now, not at dismount.
                        zeroize::Zeroize::zeroize(fragment_buffer.window(n));
                        queue.fragment_buffers.push(fragment_buffer);
                        failure = Some(Status::DeviceBusy);
                        break;
                    }
                    FragmentData::Write(Some(fragment_buffer))
                }
                // Unreachable: dispatch gave every read and write its buffer (R14) and sends
                // flushes to the direct path.
                _ => {
                    failure = Some(Status::InvalidUserBuffer);
                    break;
                }
            };
            queue.request_permits.acquire();
            queue.items.with(|items| {
                if let Some(item) = items.slots[idx].as_mut() {
                    item.outstanding += 1;
                }
            });
            queue.to_io.push(FragmentMsg::Fragment(Fragment {
                item: idx,
                offset: offset + pos as u64,
                length: n,
                data,
                status: Status::Success,
            }));
            pos += n;
        }
        let done = queue.items.with(|items| {
            let item = items.slots[idx].as_mut().expect("live item");
            item.issuing_done = true;
            if let Some(s) = failure {
                if item.status.is_success() {
                    item.status = s;
                }
            }
            if kind == JobKind::Read {
                item.tail = buf;
            } else {
                item.assembled = buf;
            }
            if item.outstanding == 0 {
                items.free.push(idx);
                items.slots[idx].take()
            } else {
                None
            }
        });
        if let Some(item) = done {
            finish_item(queue, finisher, item);
        }
    }
}

fn io_thread<P: Platform>(
    queue: &LegacyQueue<P>,
    read_ahead: AlignedBuffer,
    mut unaligned: Option<AlignedBuffer>,
) {
    let context = &*queue.context;
    let alignment_mask = context.host.limits().alignment_mask as usize;
    let mut read_ahead = ReadAhead {
        buf: read_ahead,
        valid: false,
        offset: 0,
        length: 0,
        generation: 0,
    };
    loop {
        let mut frag = match queue.to_io.pop() {
            FragmentMsg::Stop => {
                // Dropping the buffers zeroizes them.
                queue.to_completion.push(FragmentMsg::Stop);
                return;
            }
            FragmentMsg::Fragment(fragment) => fragment,
        };
        let (item_status, cancelled) = queue.items.with(|items| {
            (
                items.slots[frag.item].as_ref().map(|item| item.status),
                item_cancelled(items, frag.item),
            )
        });
        let host_offset = context.geometry.data_offset + frag.offset;
        if let Some(s) = item_status.filter(|s| !s.is_success()) {
            // An earlier fragment of this request failed: issue nothing more for it.
            frag.status = s;
        } else if cancelled {
            // R2: the request was cancelled: no more of its fragments reach the host.
            frag.status = Status::Cancelled;
        } else if context.key.is_blocked() && !faults::is_on(Fault::R2CheckBlockOnce) {
            frag.status = Status::DeviceBusy;
        } else {
            Counters::add(&context.counters.legacy_fragments, 1);
            match &mut frag.data {
                FragmentData::Read(piece) => {
                    let n = frag.length;
                    let unaligned_piece = piece.address() & alignment_mask != 0;
                    match piece.mapped() {
                        // A piece of a buffer the main thread did not map: nothing is read
                        // into it, the request fails.
                        Err(status) => frag.status = status,
                        Ok(bytes) if read_ahead.matches(&context.writes, frag.offset, n) => {
                            bytes.copy_from_slice(read_ahead.buf.window(n));
                        }
                        Ok(bytes) => match unaligned.as_mut().filter(|_| unaligned_piece) {
                            // For a caller buffer the host cannot take (unaligned): the legacy
                            // path reads into its own buffer and copies, as the direct path's
                            // eligibility rule promises (only a host with a mask has one).
                            Some(bounce) => {
                                let window = bounce.window(n);
                                frag.status = read_exact(&context.host, host_offset, window);
                                if frag.status.is_success() {
                                    bytes.copy_from_slice(window);
                                }
                            }
                            None => frag.status = read_exact(&context.host, host_offset, bytes),
                        },
                    }
                    read_ahead.valid = false;
                    let next = frag.offset + n as u64;
                    if frag.status.is_success()
                        && queue.to_io.is_empty()
                        && !context.key.is_blocked()
                        && next + n as u64 <= context.geometry.data_size
                        && n <= queue.fragment_size as usize
                    {
                        read_ahead.fill(context, next, n);
                    }
                }
                FragmentData::Verify => {
                    // Read into the read-ahead buffer (a fragment at most, allocated at
                    // mount: W6) and discarded; the read-ahead no longer holds its range.
                    read_ahead.valid = false;
                    let n = frag.length;
                    let result = context.host.read(host_offset, read_ahead.buf.window(n));
                    frag.status = crate::io::verify_read_status(result, n);
                }
                FragmentData::Write(fragment_buffer) => {
                    read_ahead.valid = false;
                    let fragment_buffer = fragment_buffer
                        .as_mut()
                        .expect("a write fragment carries its buffer");
                    frag.status = write_exact(
                        &context.host,
                        host_offset,
                        fragment_buffer.window(frag.length),
                    );
                }
            }
            if !frag.status.is_success() {
                // Fail the request now, so no later fragment of it is issued (W12).
                queue.items.with(|items| {
                    if let Some(item) = items.slots[frag.item].as_mut() {
                        if item.status.is_success() {
                            item.status = frag.status;
                        }
                    }
                });
            }
        }
        if let FragmentData::Write(fragment_buffer) = &mut frag.data {
            // The fragment buffer is free again for the main thread (VeraCrypt's free event).
            if let Some(fragment_buffer) = fragment_buffer.take() {
                queue.fragment_buffers.push(fragment_buffer);
            }
        }
        queue.to_completion.push(FragmentMsg::Fragment(frag));
    }
}

/// A host write that moved fewer bytes than asked is an error (W12), as a short read is.
fn write_exact<H: HostDevice>(host: &H, offset: u64, buf: &[u8]) -> Status {
    match host.write(offset, buf) {
        Ok(n) if n == buf.len() => Status::Success,
        Ok(_) => Status::EndOfFile,
        Err(s) => s,
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
    fn matches(&self, writes: &WriteGeneration, offset: u64, length: usize) -> bool {
        self.valid
            && self.offset == offset
            && self.length == length
            && self.generation == writes.current()
    }

    fn fill<P: Platform>(&mut self, context: &PathContext<P>, offset: u64, length: usize) {
        let generation = context.writes.current();
        if context.writes.writes_in_flight() != 0 {
            return;
        }
        let host_offset = context.geometry.data_offset + offset;
        if read_exact(&context.host, host_offset, self.buf.window(length)).is_success() {
            self.valid = true;
            self.offset = offset;
            self.length = length;
            self.generation = generation;
        }
    }
}

fn completion_thread<P: Platform, F: Finisher<P>>(queue: &LegacyQueue<P>, finisher: &F) {
    let context = &*queue.context;
    loop {
        let mut frag = match queue.to_completion.pop() {
            FragmentMsg::Stop => return,
            FragmentMsg::Fragment(fragment) => fragment,
        };
        queue.request_permits.release();
        if let FragmentData::Read(piece) = &mut frag.data {
            if frag.status.is_success() {
                let unit = unit_of(context, frag.offset);
                // docs/review.md R3: a read whose host I/O finished after the key block is failed,
                // never decrypted with erased keys.
                match piece.mapped() {
                    Err(status) => frag.status = status,
                    Ok(bytes) => {
                        if context
                            .crypto_pool
                            .run(
                                &context.platform,
                                &context.key,
                                Cipher::Decrypt,
                                bytes,
                                unit,
                            )
                            .is_err()
                        {
                            frag.status = Status::DeviceBusy;
                        }
                    }
                }
            }
        }
        let done = queue.items.with(|items| {
            let item = items.slots[frag.item].as_mut().expect("live item");
            item.outstanding -= 1;
            if !frag.status.is_success() && item.status.is_success() {
                item.status = frag.status;
            }
            if let FragmentData::Read(piece) = frag.data {
                match item.assembled.as_mut() {
                    Some(assembled) => assembled.unsplit(piece),
                    None => item.assembled = Some(piece),
                }
            }
            if item.issuing_done && item.outstanding == 0 {
                items.free.push(frag.item);
                items.slots[frag.item].take()
            } else {
                None
            }
        });
        if let Some(item) = done {
            finish_item(queue, finisher, item);
        }
    }
}

fn finish_item<P: Platform, F: Finisher<P>>(
    queue: &LegacyQueue<P>,
    finisher: &F,
    item: Item<P::Request>,
) {
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
    // A read or write item keeps its buffer; a VERIFY has none.
    let buf = match (assembled, tail) {
        (Some(mut assembled), Some(tail)) => {
            assembled.unsplit(tail);
            Some(assembled)
        }
        (assembled, None) => assembled,
        (None, tail) => tail,
    };
    let information = if status.is_success() && kind != JobKind::Verify {
        Counters::add(&queue.context.counters.legacy_bytes, u64::from(length));
        length as usize
    } else {
        0
    };
    queue.item_permits.release();
    finisher.finish(request, buf, ticket, kind, status, information);
}
