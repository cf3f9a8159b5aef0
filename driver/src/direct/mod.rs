//! The direct path: admission, 8 workers, at most 8 requests in flight, segmentation by the
//! host's limits.
//!
//! Owns: the per-volume FIFO of granted direct requests, the 8 workers (one request each, so
//! the 8 workers are the 8 slots), the volume's cap on host operations in flight
//! ([`HostOps`], 8), the workers' preallocated write bounce buffers and the detached slots'
//! (only when direct writes are effective: each worker's a window per segment of the largest
//! request, each slot's [`DETACHED_MAX`] bytes).
//! A queued job can be cancelled (its cancel routine takes it out of the FIFO: STATUS_CANCELLED,
//! nothing issued); a worker claims a job before it starts it (`Finisher::claim`).
//! Never: decides eligibility or ordering (`volume` and `barrier` did, once, at dispatch:
//! a request never changes path because of load, docs/review.md R12), or completes requests
//! (`completion` does).
//! Hands to: the `Finisher` it was started with, each job once it is done.
//!
//! A small request (one segment, at most [`DETACHED_MAX`] bytes, hardware AES) is issued
//! without a waiter (`detached.rs`): by the thread that dispatched it when nothing is queued
//! before it and a host permit is free now (`DirectPath::issue_here`), otherwise by a worker
//! that then takes its next job at once; the host's completion context decrypts a read and
//! finishes the request. Under load its host permit goes with the request's completion work
//! item, which issues the oldest small job with it before the upper routine runs
//! (`DirectPath::issue_carried`), instead of waking a worker for it; a worker takes a host
//! permit before it takes a job, so none holds a job while it waits for one and the work item
//! overtakes nobody. Any other request is waited for by its worker: it keeps several
//! segments in flight together, within the volume's cap of 8 host operations. Reads go
//! straight into the caller's buffer and each segment is decrypted in place as it arrives
//! (oldest first); writes are encrypted per segment into a window of the worker's own buffer
//! (never into the caller's) and written through. A request alone on the volume's direct path
//! splits that crypto, both ways, across the driver's shared encryption pool (the worker runs
//! the pieces no pool thread has taken), so a lone 1 MiB transfer is not one core's work.
//! Before issuing every segment the worker checks cancellation and the key block
//! (docs/review.md R2); after a failure it issues nothing more. Every child request completes before its upper request does, so none is ever
//! abandoned (R13). An IOCTL_DISK_VERIFY routed here (only where direct writes give the
//! workers a bounce buffer) is read by a worker into that buffer, window by window, and
//! discarded (`verify`).

mod detached;
mod host_ops;

pub use detached::{HandedOver, Handoff, DETACHED_MAX, DISPATCH_STACK_NEEDED};
pub use host_ops::{HostOps, CARRIED_MAX, HOST_OPS};

use detached::{Parked, Slots};

use alloc::sync::Arc;
use core::sync::atomic::{AtomicU64, Ordering};

use crate::crypto::{Cipher, CryptoPool, DATA_UNIT};
use crate::faults::{self, Fault};
use crate::io::{
    verify_read_status, AlignedBuffer, Counters, Finisher, IoJob, JobKind, JobQueue, Next,
    PathContext, Purpose, SegmentLimits, MAX_DIRECT_REQUEST,
};
use crate::platform::{
    Detached, DetachedDone, HostDevice, HostIo, HostRead, IoBuf, Origin, Platform, ThreadRole,
    UpperRequest,
};
use crate::Status;

/// Workers (and so requests in flight) per volume.
pub const WORKERS: usize = 8;

/// Write segments of one request a worker keeps in flight together at most (a bounce window
/// each): with a 128 KiB maximum transfer a 1 MiB write goes out in two rounds of 4. Reads
/// need no window (they land in the caller's buffer).
pub const WRITE_WINDOWS: usize = 4;

/// The direct path of one volume.
pub(crate) struct DirectPath<P: Platform> {
    context: Arc<PathContext<P>>,
    /// Granted jobs waiting for a worker (where a cancel routine finds them).
    pub(crate) ready: JobQueue<P>,
    busy: AtomicU64,
    workers: AtomicU64,
    /// Host operations in flight, at most [`HOST_OPS`], shared by the workers and the
    /// requests issued without a waiter.
    ops: HostOps<P>,
    /// Requests issued without a waiter (by the dispatching thread or a worker), until the
    /// host reports their end.
    detached: Slots<P>,
    /// Direct writes are effective: the slots have bounce buffers.
    writes: bool,
    /// Jobs a completion work item issued with the permit it carried (part of `detached`;
    /// not in the status reply).
    carried: AtomicU64,
}

impl<P: Platform> DirectPath<P> {
    /// The direct path of a volume (its FIFO allocates nothing per request, used or not; its
    /// two semaphores are made here, and with `writes` (direct writes are effective) a bounce
    /// buffer of [`DETACHED_MAX`] bytes per detached slot: STATUS_INSUFFICIENT_RESOURCES when
    /// that fails, W6).
    pub(crate) fn new(context: Arc<PathContext<P>>, writes: bool) -> Result<Self, Status> {
        let limits = context.host.limits();
        let detached = Slots::new(|| match writes {
            true => AlignedBuffer::new(
                DETACHED_MAX as usize,
                &limits,
                &context.memory,
                Purpose::DirectBounce,
            )
            .map(Some),
            false => Ok(None),
        })?;
        Ok(DirectPath {
            context,
            ready: JobQueue::new()?,
            busy: AtomicU64::new(0),
            workers: AtomicU64::new(0),
            ops: HostOps::new(HOST_OPS)?,
            detached,
            writes,
            carried: AtomicU64::new(0),
        })
    }

    /// The limits every segment of this volume is cut by: the workers cut by them, and the
    /// write bounce buffers are sized by them ([`SegmentLimits::largest_aligned`]).
    fn segment_limits(&self) -> SegmentLimits {
        SegmentLimits::direct(
            &self.context.host.limits(),
            self.context.geometry.sector_size,
        )
    }

    /// The most host operations the workers had in flight at once (never above [`HOST_OPS`]).
    pub(crate) fn host_ops_max(&self) -> usize {
        self.ops.max_held()
    }

    /// A write segment's window in a worker's bounce buffer: the longest write segment (cut at
    /// page offset 0) rounded up to the buffer alignment, so every window starts aligned; and
    /// how many a worker has: as many as a request of [`MAX_DIRECT_REQUEST`] bytes has
    /// segments, at most [`WRITE_WINDOWS`].
    fn write_windows(&self) -> (usize, usize) {
        let limits = self.segment_limits();
        let align = AlignedBuffer::alignment_for(&self.context.host.limits());
        let longest = limits.next_len(MAX_DIRECT_REQUEST as usize, 0);
        let stride = longest.div_ceil(align) * align;
        let needed = (MAX_DIRECT_REQUEST as usize).div_ceil(longest);
        (stride, needed.min(WRITE_WINDOWS))
    }

    /// Starts the 8 workers. With `writes` (direct writes are effective), each gets a bounce
    /// buffer allocated now (at mount), a window per segment of the largest request;
    /// without, none (reads decrypt in the caller's buffer). They give every job back to
    /// `finisher`. Each worker is handed to `keep` (and counted for [`stop`](Self::stop)) as
    /// soon as it runs, so when a later one fails to start the owner's stop and join end the
    /// ones that did.
    pub(crate) fn start<F: Finisher<P> + DetachedDone>(
        self: &Arc<Self>,
        finisher: &Arc<F>,
        writes: bool,
        keep: &mut dyn FnMut(P::Thread),
    ) -> Result<(), Status> {
        let limits = self.context.host.limits();
        let (stride, windows) = self.write_windows();
        let bounce_len = stride * windows;
        for _ in 0..WORKERS {
            let direct = Arc::clone(self);
            let finisher = Arc::clone(finisher);
            let bounce = match writes {
                true => Some(AlignedBuffer::new(
                    bounce_len,
                    &limits,
                    &self.context.memory,
                    Purpose::DirectBounce,
                )?),
                false => None,
            };
            let platform = &self.context.platform;
            keep(platform.spawn(
                ThreadRole::DirectWorker,
                platform.try_box(move || worker(&direct, &finisher, bounce))?,
            )?);
            self.workers.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Admits a granted request: a free worker takes it, or it waits in FIFO order for one.
    /// Hands `job` back, not queued, when it was already cancelled (its hook is armed as it is
    /// queued).
    pub(crate) fn submit(&self, job: IoJob<P::Request>) -> Result<(), IoJob<P::Request>> {
        let queued = self.ready.len() as u64;
        if self.busy.load(Ordering::Acquire) + queued >= WORKERS as u64 {
            Counters::add(&self.context.counters.slot_waits, 1);
        }
        // Paging I/O is never marked: a completion work item runs at the system worker pool's
        // priority, below the page writer's (W8); the workers serve it.
        let small = self.may_detach(&job) && !job.request.is_paging_io();
        self.ready.push_marked(job, small)
    }

    /// Jobs ever queued in the direct FIFO, and ever taken out (the simulator's check that a
    /// read issued on the dispatching thread overtakes none queued before it, R12).
    pub(crate) fn fifo_counts(&self) -> (u64, u64) {
        self.ready.counts()
    }

    /// Issues a granted small read or write on the calling (dispatching) thread, when it
    /// may: the request is one segment of at most [`DETACHED_MAX`] bytes on hardware AES (a
    /// write: direct writes are effective), no job waits in the direct FIFO and no worker for
    /// a host permit (one is free now: R12, nothing is overtaken), and the platform lets this
    /// thread issue host I/O (PASSIVE_LEVEL, enough stack, the mounting user's context for
    /// the call: R11). The host's completion then finishes it
    /// ([`detached_ended`](Self::detached_ended)). Hands the job back when it may not: the caller queues
    /// it for the workers as before. The job was never queued, so its cancel hook was never
    /// armed: no cancel routine can see it half-issued.
    pub(crate) fn issue_here<F: Finisher<P> + DetachedDone>(
        &self,
        job: IoJob<P::Request>,
        finisher: &Arc<F>,
    ) -> Result<(), IoJob<P::Request>> {
        if !self.may_detach(&job) || job.request.is_paging_io() {
            return Err(job);
        }
        let permit = if faults::is_on(Fault::R12DispatchOvertakes) {
            self.ops.try_take_now()
        } else {
            self.ready
                .when_empty(|| self.ops.try_take_now())
                .unwrap_or(false)
        };
        if !permit {
            return Err(job);
        }
        let mut job = Some(job);
        let issued = self.context.platform.issue_here(DISPATCH_STACK_NEEDED, || {
            job.take().map(|job| self.issue(job, finisher, true))
        });
        match (issued.flatten(), job) {
            (Some(Ok(())), _) => Ok(()),
            (Some(Err(job)), _) | (None, Some(job)) => {
                self.ops.give();
                Err(job)
            }
            // `issue` ran and kept the job only when it returned `Ok`.
            (None, None) => Ok(()),
        }
    }

    /// A job that may be issued without a waiter (see [`Slots::may_take`]).
    fn may_detach(&self, job: &IoJob<P::Request>) -> bool {
        if !self.context.platform.detach_requests() {
            return false;
        }
        let segment = match &job.buf {
            Some(buf) => self
                .segment_limits()
                .next_len(job.length as usize, buf.address()),
            None => return false,
        };
        Slots::<P>::may_take(
            job.kind,
            job.length,
            segment,
            self.writes,
            self.context.key.hardware_aes(),
        )
    }

    /// Issues `job` on this thread (holding a permit; `dispatching`: the thread that
    /// dispatched it, counted in `dispatch_issued`) without waiting for it; `Err` when
    /// nothing was issued and a worker must serve it the waiting way (the caller gives the
    /// permit back). A request that fails before it is issued (its buffer cannot be mapped,
    /// cancelled, the key blocked) is finished here, permit given back.
    fn issue<F: Finisher<P> + DetachedDone>(
        &self,
        job: IoJob<P::Request>,
        finisher: &Arc<F>,
        dispatching: bool,
    ) -> Result<(), IoJob<P::Request>> {
        let context = &*self.context;
        let IoJob {
            request,
            buf,
            kind,
            offset,
            length,
            ticket,
            path,
        } = job;
        let Some(mut buf) = buf else {
            self.ops.give();
            self.count_finished(kind, Status::InvalidUserBuffer, length);
            finisher.finish(request, None, ticket, kind, Status::InvalidUserBuffer, 0);
            return Ok(());
        };
        let memory = buf.origin();
        let priority = request.priority_hint();
        let host_offset = context.geometry.data_offset + offset;
        let unit = host_offset / DATA_UNIT as u64;
        let fail = |request, buf, status: Status| {
            self.ops.give();
            self.count_finished(kind, status, length);
            finisher.finish(request, Some(buf), ticket, kind, status, 0);
        };
        // W7: mapped now that this thread serves it; a failure issues nothing.
        if let Err(status) = buf.map() {
            fail(request, buf, status);
            return Ok(());
        }
        let (index, mut bounce) = match self.detached.park(Parked {
            request: None,
            kind,
            ticket,
            length,
            unit,
            buf: None,
            result: None,
        }) {
            Ok(reserved) => reserved,
            Err(_) => return Err(rebuilt(request, buf, kind, offset, length, ticket, path)),
        };
        // A write is encrypted into the slot's bounce buffer, as a worker's segment is.
        if kind == JobKind::Write {
            let status = match (bounce.as_mut(), buf.mapped()) {
                (Some(bounce), Ok(data)) => encrypt_segment::<P, true>(
                    context,
                    CryptoPool::small(),
                    bounce.window(data.len()),
                    data,
                    unit,
                ),
                (None, _) => Status::InsufficientResources,
                (_, Err(status)) => status,
            };
            if !status.is_success() {
                self.detached.unpark(index, bounce);
                fail(request, buf, status);
                return Ok(());
            }
        }
        // R2: cancellation and the key block are checked right before the start, as a
        // worker checks them before each segment.
        let status = may_issue(context, &request, 0);
        if !status.is_success() {
            if let Some(out) = bounce.as_mut() {
                zeroize::Zeroize::zeroize(out.window(length as usize));
            }
            self.detached.unpark(index, bounce);
            fail(request, buf, status);
            return Ok(());
        }
        let done: Arc<dyn DetachedDone> = finisher.clone();
        let then = Detached { done, tag: index };
        let started = match (kind, bounce.as_mut(), buf.mapped()) {
            (JobKind::Write, Some(out), Ok(_)) => context.host.start_write_detached(
                host_offset,
                out.window(length as usize),
                Origin {
                    priority,
                    memory: None,
                },
                then,
            ),
            (_, _, Ok(data)) => context.host.start_read_detached(
                host_offset,
                data,
                Origin { priority, memory },
                then,
            ),
            (_, _, Err(status)) => Err(status),
        };
        if started.is_err() {
            self.detached.unpark(index, bounce);
            return Err(rebuilt(request, buf, kind, offset, length, ticket, path));
        }
        Counters::add(&context.counters.direct_segments, 1);
        Counters::add(&context.counters.detached, 1);
        if dispatching {
            Counters::add(&context.counters.dispatch_issued, 1);
        }
        // The host may have reported already: then this thread finishes the request.
        if let Some(parked) = self.detached.started(index, request, buf, bounce) {
            self.finish_detached(parked, &**finisher, false);
        }
        Ok(())
    }

    /// The host reported the end of the detached request `tag` (its completion context: may
    /// be DISPATCH_LEVEL). Finishes it when the issuer has parked it already.
    pub(crate) fn detached_ended<F: Finisher<P>>(
        &self,
        tag: usize,
        result: Result<usize, Status>,
        finisher: &F,
    ) {
        if let Some(parked) = self.detached.ended(tag, result) {
            self.finish_detached(parked, finisher, true);
        }
    }

    /// Finishes a detached request that ended: a read is decrypted (`decrypt_segment`); the
    /// permit goes back and the request to `finisher`. Never waits.
    fn finish_detached<F: Finisher<P>>(
        &self,
        parked: Parked<P::Request>,
        finisher: &F,
        completion_context: bool,
    ) {
        let context = &*self.context;
        let Parked {
            request,
            kind,
            ticket,
            length,
            unit,
            buf,
            result,
        } = parked;
        // Both are parked before anyone finishes the request.
        let Some(request) = request else { return };
        let mut buf = buf;
        let mut status = match result {
            Some(result) => settle(Status::Success, result, length as usize),
            None => Status::IoDeviceError,
        };
        if status.is_success() && kind == JobKind::Read {
            status = match buf.as_mut().map(|b| b.mapped()) {
                Some(Ok(data)) => {
                    decrypt_segment::<P, true>(context, CryptoPool::small(), data, unit)
                }
                Some(Err(status)) => status,
                None => Status::InvalidUserBuffer,
            };
        }
        let information = self.count_finished(kind, status, length);
        // In the host's completion context (a thread that may block finishes its own request
        // otherwise: it is back for the next job at once), with more jobs waiting than idle
        // workers waiting for a permit and no worker in the middle of a request waiting for
        // one, the permit goes with the request's completion work item, which issues the
        // oldest job (`issue_carried`) instead of waking a worker for it, when that job is a
        // small one (a large one is left to the workers, and the permit to them).
        let carry = completion_context && {
            let (queued, small_next) = self.ready.len_and_head_marked();
            small_next && self.ops.try_carry(queued)
        };
        if carry {
            finisher.finish_carrying(request, buf, ticket, kind, status, information);
        } else {
            self.ops.give();
            finisher.finish(request, buf, ticket, kind, status, information);
        }
    }

    /// Jobs completion work items issued with the permits they carried.
    pub(crate) fn carried(&self) -> u64 {
        self.carried.load(Ordering::Relaxed)
    }

    /// Host permits held now (by workers, requests in flight and completion work items that
    /// carry one): 0 once the path is idle.
    pub(crate) fn permits_held(&self) -> usize {
        self.ops.held()
    }

    /// Gives back a host permit a finished job's completion could not carry.
    pub(crate) fn give_carried_permit(&self) {
        self.ops.give_carried();
    }

    /// A completion work item carries a host permit (`finish_detached`): a worker in the
    /// middle of a request that waits for a permit gets it; otherwise, when this thread may
    /// issue (`Platform::issue_here`: PASSIVE_LEVEL, stack, the mounting user's context for
    /// the call) and the oldest job is marked small, issues that job with it; otherwise gives
    /// it back (to an idle worker waiting for one). Never waits. An idle worker takes a permit
    /// before it takes a job (`worker`), so taking the oldest job overtakes no worker
    /// (docs/review.md R12). The rare job the host then refuses goes back to the FIFO's head.
    pub(crate) fn issue_carried<F: Finisher<P> + DetachedDone>(&self, finisher: &Arc<F>) {
        if self.ready.len() == 0 {
            if !faults::is_on(Fault::CarriedPermitLost) {
                self.ops.give_carried();
            }
            return;
        }
        // A worker in the middle of a request waiting for a permit gets it instead.
        if !self.ops.use_carried() {
            return;
        }
        let issued = self.context.platform.issue_here(DISPATCH_STACK_NEEDED, || {
            let job = self.ready.try_take_marked(&**finisher)?;
            Some(self.issue(job, finisher, false))
        });
        match issued.flatten() {
            Some(Ok(())) => Counters::add(&self.carried, 1),
            None if faults::is_on(Fault::CarriedPermitLost) => {}
            None => self.ops.give(),
            // Not issued after all (rare: the host refused the start): the job goes back to
            // the FIFO's head, where it was (its cancel hook armed again), and only then the
            // permit, so the worker it wakes takes this job before those queued after it (R12;
            // while it was out, a worker or a dispatching thread may have started another, as
            // beside any carried start).
            Some(Err(job)) => {
                let requeued = self.ready.push_front(job);
                self.ops.give();
                if let Err(job) = requeued {
                    self.count_finished(job.kind, Status::Cancelled, job.length);
                    finisher.finish(
                        job.request,
                        job.buf,
                        job.ticket,
                        job.kind,
                        Status::Cancelled,
                        0,
                    );
                }
            }
        }
    }

    /// Counts a finished direct request; the bytes it reports.
    fn count_finished(&self, kind: JobKind, status: Status, length: u32) -> usize {
        let counters = &*self.context.counters;
        let information = if status.is_success() && matches!(kind, JobKind::Read | JobKind::Write) {
            Counters::add(&counters.direct_bytes, u64::from(length));
            length as usize
        } else {
            0
        };
        // A VERIFY counts as a read of this path (its host reads in `direct_segments`, no
        // bytes: nothing reaches the caller).
        match kind {
            JobKind::Read | JobKind::Verify => Counters::add(&counters.direct_reads, 1),
            JobKind::Write => Counters::add(&counters.direct_writes, 1),
            JobKind::Flush => {}
        }
        information
    }

    /// Ends the workers after everything queued before.
    pub(crate) fn stop(&self) {
        for _ in 0..self.workers.load(Ordering::Relaxed) {
            self.ready.stop();
        }
    }
}

fn worker<P: Platform, F: Finisher<P> + DetachedDone>(
    direct: &DirectPath<P>,
    finisher: &Arc<F>,
    mut bounce: Option<AlignedBuffer>,
) {
    let context = &*direct.context;
    let counters = &*context.counters;
    let limits = direct.segment_limits();
    loop {
        // A host permit before the job: an idle worker holds no job while it waits for a
        // permit, so whoever holds one may take the oldest job (a completion work item that
        // carries one, `issue_carried`) without overtaking it.
        direct.ready.wait();
        direct.ops.take_for_job();
        let job = match direct.ready.take_waited(&**finisher) {
            // Dropping the bounce buffer zeroizes it.
            Some(Next::Stop) => {
                direct.ops.give();
                return;
            }
            Some(Next::Job(job)) => job,
            None => {
                direct.ops.give();
                continue;
            }
        };
        let now = direct.busy.fetch_add(1, Ordering::AcqRel) + 1;
        Counters::raise_max(&counters.direct_in_flight_max, now);
        // A small request goes out without this worker waiting for it: the host's completion
        // finishes it, and the worker takes its next job at once.
        let job = if direct.may_detach(&job) {
            match direct.issue(job, finisher, false) {
                Ok(()) => {
                    direct.busy.fetch_sub(1, Ordering::AcqRel);
                    continue;
                }
                Err(job) => job,
            }
        } else {
            job
        };
        // The permit this worker holds goes to the job's first host operation.
        let mut permit = true;
        let IoJob {
            request,
            mut buf,
            kind,
            offset,
            length,
            ticket,
            ..
        } = job;
        let status = match (kind, buf.as_mut()) {
            (JobKind::Flush, _) => {
                direct.ops.give();
                permit = false;
                Counters::add(&counters.direct_flushes, 1);
                match context.host.flush() {
                    Ok(()) => Status::Success,
                    Err(_) if faults::is_on(Fault::FlushErrorIgnored) => Status::Success,
                    Err(s) => s,
                }
            }
            (JobKind::Verify, _) => {
                direct.ops.enter();
                let status = verify(
                    context,
                    &direct.ops,
                    &mut permit,
                    &request,
                    offset,
                    length,
                    &limits,
                    bounce.as_mut(),
                );
                direct.ops.leave();
                status
            }
            (_, Some(buf)) => {
                direct.ops.enter();
                // A request alone on the volume's direct path (no other worker busy, nothing
                // queued, no host operation in flight but this worker's permit) splits its crypto across the shared
                // encryption pool: a hint, only the split depends on it. Under load every
                // worker runs its own, as the 8 already run in parallel.
                let alone =
                    now == 1 && direct.ready.len() == 0 && direct.ops.held() == usize::from(permit);
                let pool = match alone {
                    true => context.crypto_pool,
                    false => CryptoPool::inline(),
                };
                let status = transfer(
                    context,
                    &direct.ops,
                    &mut permit,
                    &request,
                    kind,
                    offset,
                    buf,
                    &limits,
                    bounce.as_mut(),
                    pool,
                );
                direct.ops.leave();
                status
            }
            (_, None) => Status::InvalidUserBuffer,
        };
        if permit {
            direct.ops.give();
        }
        let information = direct.count_finished(kind, status, length);
        direct.busy.fetch_sub(1, Ordering::AcqRel);
        finisher.finish(request, buf, ticket, kind, status, information);
    }
}

/// The job again, for the waiting way (its detached request was not issued).
fn rebuilt<R: UpperRequest>(
    request: R,
    buf: R::Buf,
    kind: JobKind,
    offset: u64,
    length: u32,
    ticket: crate::barrier::Ticket,
    path: crate::io::Path,
) -> IoJob<R> {
    IoJob {
        request,
        buf: Some(buf),
        kind,
        offset,
        length,
        ticket,
        path,
    }
}

/// A segment in flight: its host operation and data unit.
struct Flight<R> {
    io: R,
    unit: u64,
    len: usize,
}

/// The segments of one request in flight, oldest first (at most [`HOST_OPS`]).
struct Ring<R> {
    slots: [Option<Flight<R>>; HOST_OPS],
    head: usize,
    len: usize,
}

impl<R> Ring<R> {
    fn new() -> Self {
        Ring {
            slots: core::array::from_fn(|_| None),
            head: 0,
            len: 0,
        }
    }
    fn push(&mut self, flight: Flight<R>) {
        self.slots[(self.head + self.len) % HOST_OPS] = Some(flight);
        self.len += 1;
    }
    fn pop(&mut self) -> Option<Flight<R>> {
        let flight = self.slots[self.head].take()?;
        self.head = (self.head + 1) % HOST_OPS;
        self.len -= 1;
        Some(flight)
    }
}

/// The status after a segment's host operation: `status` unless it is the first failure.
fn settle(status: Status, result: Result<usize, Status>, len: usize) -> Status {
    match (status.is_success(), result) {
        (false, _) => status,
        (true, Ok(got)) if got == len => Status::Success,
        (true, Ok(_)) => Status::EndOfFile,
        (true, Err(s)) => s,
    }
}

/// Checks that come before every segment is issued: cancellation, and the key block
/// (docs/review.md R2: no new segment once the key block is set).
fn may_issue<P: Platform>(context: &PathContext<P>, request: &P::Request, pos: usize) -> Status {
    if request.is_cancelled() {
        return Status::Cancelled;
    }
    if context.key.is_blocked() && !(faults::is_on(Fault::R2CheckBlockOnce) && pos > 0) {
        return Status::DeviceBusy;
    }
    Status::Success
}

/// Decrypts a read segment in place (docs/review.md R3: the key under its rundown; once the
/// block is set it fails with STATUS_DEVICE_BUSY and nothing is decrypted). Both ways of the
/// direct path: a worker's segment, and a request finished in the host's completion context.
/// `pool`: the volume's split policy for a worker's request alone on the volume,
/// `CryptoPool::inline()` for a worker's request under load, `CryptoPool::small()` for a
/// detached request, which also sets `DETACHED`: a detached request runs only the hardware
/// AES XTS (`CryptoPool::run_short`; the direct path detaches requests of such volumes only),
/// so the other algorithms' code is not on the dispatch and completion paths' stacks (W13).
fn decrypt_segment<P: Platform, const DETACHED: bool>(
    context: &PathContext<P>,
    pool: CryptoPool,
    data: &mut [u8],
    unit: u64,
) -> Status {
    let run = match DETACHED {
        true => CryptoPool::run_short(&context.platform, &context.key, Cipher::Decrypt, data, unit),
        false => pool.run(&context.platform, &context.key, Cipher::Decrypt, data, unit),
    };
    match run {
        Ok(()) => Status::Success,
        Err(_) => Status::DeviceBusy,
    }
}

/// Encrypts a write segment's plaintext into `out` (never into the caller's buffer), the key
/// under its rundown; STATUS_DEVICE_BUSY when the block is set, before or while it ran (then
/// nothing may be issued), with `out` wiped at once (W5). `pool` and `DETACHED` as for
/// `decrypt_segment`.
fn encrypt_segment<P: Platform, const DETACHED: bool>(
    context: &PathContext<P>,
    pool: CryptoPool,
    out: &mut [u8],
    plain: &[u8],
    unit: u64,
) -> Status {
    out.copy_from_slice(plain);
    let encrypted = match DETACHED {
        true => CryptoPool::run_short(&context.platform, &context.key, Cipher::Encrypt, out, unit),
        false => pool.run(&context.platform, &context.key, Cipher::Encrypt, out, unit),
    };
    if encrypted.is_err() || context.key.is_blocked() {
        zeroize::Zeroize::zeroize(out);
        return Status::DeviceBusy;
    }
    Status::Success
}

/// Serves a VERIFY: reads its range from the host into the worker's bounce buffer (allocated
/// at mount: a VERIFY takes the direct path only where direct writes give the workers one)
/// and discards the bytes. The range is cut and issued as a write's is: segments by the
/// volume's limits at page offset 0, each in the next window of the buffer, several in flight
/// together within the volume's cap, rounds over the windows; each segment is checked before
/// it is issued (cancellation, the key block: R2); after the first failure nothing more is
/// issued and every segment in flight is still waited for (R13). The status is the first
/// failing read's ([`verify_read_status`]: a short read is STATUS_INVALID_PARAMETER).
#[allow(clippy::too_many_arguments)]
fn verify<P: Platform>(
    context: &PathContext<P>,
    ops: &HostOps<P>,
    permit: &mut bool,
    request: &P::Request,
    offset: u64,
    length: u32,
    limits: &SegmentLimits,
    bounce: Option<&mut AlignedBuffer>,
) -> Status {
    let Some(bounce) = bounce else {
        return Status::InsufficientResources;
    };
    let priority = request.priority_hint();
    let align = AlignedBuffer::alignment_for(&context.host.limits());
    let total = length as usize;
    let host_offset = |pos: usize| context.geometry.data_offset + offset + pos as u64;
    let mut status = Status::Success;
    let mut pos = 0usize;
    while status.is_success() && pos < total {
        let mut windows: &mut [u8] = bounce.window(bounce.capacity());
        let mut ring = Ring::new();
        let mut fresh = true;
        loop {
            while status.is_success() && pos < total && ring.len < HOST_OPS {
                let n = limits.next_len(total - pos, 0);
                if windows.len() < n {
                    if fresh {
                        status = Status::InsufficientResources;
                    }
                    break;
                }
                fresh = false;
                if !core::mem::take(permit) && !ops.take_for(ring.len) {
                    break;
                }
                status = may_issue(context, request, pos);
                if !status.is_success() {
                    ops.give();
                    break;
                }
                let stride = n.div_ceil(align).saturating_mul(align).min(windows.len());
                let (window, tail) = core::mem::take(&mut windows).split_at_mut(stride);
                windows = tail;
                Counters::add(&context.counters.direct_segments, 1);
                ring.push(Flight {
                    io: context.host.start_read_kept_for(
                        host_offset(pos),
                        &mut window[..n],
                        Origin {
                            priority,
                            memory: None,
                        },
                    ),
                    unit: 0,
                    len: n,
                });
                pos += n;
            }
            let Some(flight) = ring.pop() else { break };
            let (result, _) = flight.io.wait_read();
            ops.give();
            if status.is_success() {
                status = verify_read_status(result, flight.len);
            }
        }
    }
    status
}

/// Moves one read or write, several segments in flight together within the volume's cap.
/// Each segment is checked before it is issued; after the first failure nothing more is
/// issued, every segment in flight is still waited for (R13) and the request fails with that
/// first failure.
#[allow(clippy::too_many_arguments)]
fn transfer<P: Platform>(
    context: &PathContext<P>,
    ops: &HostOps<P>,
    permit: &mut bool,
    request: &P::Request,
    kind: JobKind,
    offset: u64,
    buf: &mut <P::Request as UpperRequest>::Buf,
    limits: &SegmentLimits,
    bounce: Option<&mut AlignedBuffer>,
    pool: CryptoPool,
) -> Status {
    let address = buf.address();
    // W11: the host hands the caller's memory down (a read's segment is a partial MDL of the
    // upper request's) and copies the priority hint into its child requests (not the paging
    // flags: `Origin` says why).
    let memory = buf.origin();
    let priority = request.priority_hint();
    // W7: mapped now that a worker has taken it; a mapping failure issues nothing.
    let data = match buf.map() {
        Ok(data) => data,
        Err(status) => return status,
    };
    let total = data.len();
    let host_offset = |pos: usize| context.geometry.data_offset + offset + pos as u64;
    let mut status = Status::Success;
    let mut pos = 0usize;
    if kind == JobKind::Read {
        let mut ring = Ring::new();
        let mut rest: &mut [u8] = data;
        loop {
            while status.is_success() && pos < total && ring.len < HOST_OPS {
                // The permit first: waiting for it is a blocking point, and the checks must
                // come right before the segment is issued.
                if !core::mem::take(permit) && !ops.take_for(ring.len) {
                    break;
                }
                status = may_issue(context, request, pos);
                if !status.is_success() {
                    ops.give();
                    break;
                }
                let n = limits.next_len(total - pos, address + pos);
                let (segment, tail) = core::mem::take(&mut rest).split_at_mut(n);
                rest = tail;
                Counters::add(&context.counters.direct_segments, 1);
                ring.push(Flight {
                    io: context.host.start_read_kept_for(
                        host_offset(pos),
                        segment,
                        Origin {
                            priority,
                            memory: memory.map(|m| m.advanced(pos)),
                        },
                    ),
                    unit: host_offset(pos) / DATA_UNIT as u64,
                    len: n,
                });
                pos += n;
            }
            let Some(flight) = ring.pop() else { break };
            let (result, segment) = flight.io.wait_read();
            ops.give();
            status = settle(status, result, flight.len);
            if status.is_success() {
                status = decrypt_segment::<P, false>(context, pool, segment, flight.unit);
            }
        }
        return status;
    }
    // Sized at mount for up to WRITE_WINDOWS segments at once; a worker without a
    // buffer never gets a write (its volume's writes take the legacy queue).
    let Some(bounce) = bounce else {
        return Status::InsufficientResources;
    };
    let align = AlignedBuffer::alignment_for(&context.host.limits());
    // Rounds: segments take the buffer's windows in order; when all are taken, the round's
    // segments finish and the next round starts over with every window free.
    while status.is_success() && pos < total {
        let mut windows: &mut [u8] = bounce.window(bounce.capacity());
        let mut ring = Ring::new();
        let mut fresh = true;
        loop {
            while status.is_success() && pos < total && ring.len < HOST_OPS {
                // Every window starts aligned: its page offset is 0.
                let n = limits.next_len(total - pos, 0);
                if windows.len() < n {
                    // Sized at mount so that a fresh round always has a window for a segment.
                    if fresh {
                        status = Status::InsufficientResources;
                    }
                    break;
                }
                fresh = false;
                if !core::mem::take(permit) && !ops.take_for(ring.len) {
                    break;
                }
                status = may_issue(context, request, pos);
                if !status.is_success() {
                    ops.give();
                    break;
                }
                let stride = n.div_ceil(align).saturating_mul(align).min(windows.len());
                let (window, tail) = core::mem::take(&mut windows).split_at_mut(stride);
                windows = tail;
                let out = &mut window[..n];
                Counters::add(&context.counters.direct_segments, 1);
                let unit = host_offset(pos) / DATA_UNIT as u64;
                // The block may have been set while this segment was encrypted: issue nothing
                // then.
                status = encrypt_segment::<P, false>(context, pool, out, &data[pos..pos + n], unit);
                if !status.is_success() {
                    ops.give();
                    break;
                }
                ring.push(Flight {
                    io: context.host.start_write_for(
                        host_offset(pos),
                        out,
                        Origin {
                            priority,
                            memory: None,
                        },
                    ),
                    unit,
                    len: n,
                });
                pos += n;
            }
            let Some(flight) = ring.pop() else { break };
            let result = flight.io.wait();
            ops.give();
            status = settle(status, result, flight.len);
        }
    }
    status
}
