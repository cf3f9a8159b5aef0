//! The direct path: admission, 8 workers, at most 8 requests in flight, segmentation by the
//! host's limits.
//!
//! Owns: the per-volume FIFO of granted direct requests, the 8 workers (one request each, so
//! the 8 workers are the 8 slots) and their preallocated write bounce buffers (only when
//! direct writes are effective, each the largest write segment the host takes).
//! A queued job can be cancelled (its cancel routine takes it out of the FIFO: STATUS_CANCELLED,
//! nothing issued); a worker claims a job before it starts it (`Finisher::claim`).
//! Never: decides eligibility or ordering (`volume` and `barrier` did, once, at dispatch:
//! a request never changes path because of load, docs/review.md R12), or completes requests
//! (`completion` does).
//! Hands to: the `Finisher` it was started with, each job once it is done.
//!
//! Reads go straight into the caller's buffer and are decrypted in place per segment; writes
//! are encrypted per segment into the worker's own buffer (never into the caller's) and
//! written through. Before every segment the worker checks cancellation and the key block
//! (docs/review.md R2). Every child request is waited for before the next step, so none is ever
//! abandoned (R13).

use alloc::boxed::Box;
use alloc::sync::Arc;
use core::sync::atomic::{AtomicU64, Ordering};

use crate::crypto::{Cipher, CryptoPool, DATA_UNIT};
use crate::faults::{self, Fault};
use crate::io::{
    AlignedBuffer, Counters, Finisher, IoJob, JobKind, JobQueue, Next, PathContext, Purpose,
    SegmentLimits,
};
use crate::platform::{HostDevice, HostIo, IoBuf, Platform, ThreadRole, UpperRequest};
use crate::Status;

/// Workers (and so requests in flight) per volume.
pub const WORKERS: usize = 8;

/// The direct path of one volume.
pub(crate) struct DirectPath<P: Platform> {
    context: Arc<PathContext<P>>,
    /// Granted jobs waiting for a worker (where a cancel routine finds them).
    pub(crate) ready: JobQueue<P>,
    busy: AtomicU64,
    workers: AtomicU64,
}

impl<P: Platform> DirectPath<P> {
    /// The direct path of a volume (its FIFO allocates nothing, used or not).
    pub(crate) fn new(context: Arc<PathContext<P>>) -> Self {
        DirectPath {
            context,
            ready: JobQueue::new(),
            busy: AtomicU64::new(0),
            workers: AtomicU64::new(0),
        }
    }

    /// The limits every segment of this volume is cut by: the workers cut by them, and the
    /// write bounce buffers are sized by them ([`SegmentLimits::largest_aligned`]).
    fn segment_limits(&self) -> SegmentLimits {
        SegmentLimits::direct(
            &self.context.host.limits(),
            self.context.geometry.sector_size,
        )
    }

    /// Starts the 8 workers. With `writes` (direct writes are effective), each gets a bounce
    /// buffer allocated now (at mount), as large as the largest write segment the host takes;
    /// without, none (reads decrypt in the caller's buffer). They give every job back to
    /// `finisher`. Each worker is handed to `keep` (and counted for [`stop`](Self::stop)) as
    /// soon as it runs, so when a later one fails to start the owner's stop and join end the
    /// ones that did.
    pub(crate) fn start<F: Finisher<P>>(
        self: &Arc<Self>,
        finisher: &Arc<F>,
        writes: bool,
        keep: &mut dyn FnMut(P::Thread),
    ) -> Result<(), Status> {
        let limits = self.context.host.limits();
        let bounce_len = self.segment_limits().largest_aligned();
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
            keep(self.context.platform.spawn(
                ThreadRole::DirectWorker,
                Box::new(move || worker(&direct, &*finisher, bounce)),
            )?);
            self.workers.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Admits a granted request: a free worker takes it, or it waits in FIFO order for one.
    pub(crate) fn submit(&self, job: IoJob<P::Request>) {
        let queued = self.ready.len() as u64;
        if self.busy.load(Ordering::Acquire) + queued >= WORKERS as u64 {
            Counters::add(&self.context.counters.slot_waits, 1);
        }
        self.ready.push(job);
    }

    /// Ends the workers after everything queued before.
    pub(crate) fn stop(&self) {
        for _ in 0..self.workers.load(Ordering::Relaxed) {
            self.ready.stop();
        }
    }
}

fn worker<P: Platform, F: Finisher<P>>(
    direct: &DirectPath<P>,
    finisher: &F,
    mut bounce: Option<AlignedBuffer>,
) {
    let context = &*direct.context;
    let counters = &*context.counters;
    let limits = direct.segment_limits();
    loop {
        let job = match direct.ready.next(finisher) {
            // Dropping the bounce buffer zeroizes it.
            Next::Stop => return,
            Next::Job(job) => job,
        };
        let now = direct.busy.fetch_add(1, Ordering::AcqRel) + 1;
        Counters::raise_max(&counters.direct_in_flight_max, now);
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
                Counters::add(&counters.direct_flushes, 1);
                match context.host.flush() {
                    Ok(()) => Status::Success,
                    Err(s) => s,
                }
            }
            (_, Some(buf)) => transfer(
                context,
                &request,
                kind,
                offset,
                buf,
                &limits,
                bounce.as_mut(),
            ),
            (_, None) => Status::InvalidUserBuffer,
        };
        let information = if status.is_success() && kind != JobKind::Flush {
            Counters::add(&counters.direct_bytes, u64::from(length));
            length as usize
        } else {
            0
        };
        match kind {
            JobKind::Read => Counters::add(&counters.direct_reads, 1),
            JobKind::Write => Counters::add(&counters.direct_writes, 1),
            JobKind::Flush => {}
        }
        direct.busy.fetch_sub(1, Ordering::AcqRel);
        finisher.finish(request, buf, ticket, kind, status, information);
    }
}

/// Moves one read or write, segment by segment.
fn transfer<P: Platform>(
    context: &PathContext<P>,
    request: &P::Request,
    kind: JobKind,
    offset: u64,
    buf: &mut <P::Request as UpperRequest>::Buf,
    limits: &SegmentLimits,
    mut bounce: Option<&mut AlignedBuffer>,
) -> Status {
    let address = buf.address();
    let data = buf.bytes();
    let total = data.len();
    let crypto = CryptoPool::inline();
    let mut pos = 0usize;
    while pos < total {
        if request.is_cancelled() {
            return Status::Cancelled;
        }
        // docs/review.md R2: no new segment once the key block is set.
        if context.key.is_blocked() && !(faults::is_on(Fault::R2CheckBlockOnce) && pos > 0) {
            return Status::DeviceBusy;
        }
        let n = match kind {
            JobKind::Read => limits.next_len(total - pos, address + pos),
            // The bounce buffer is page aligned: its page offset is 0.
            _ => limits.next_len(total - pos, 0),
        };
        let host_offset = context.geometry.data_offset + offset + pos as u64;
        let unit = host_offset / DATA_UNIT as u64;
        let segment = &mut data[pos..pos + n];
        Counters::add(&context.counters.direct_segments, 1);
        if kind == JobKind::Read {
            match context.host.start_read(host_offset, segment).wait() {
                Ok(got) if got == n => {}
                Ok(_) => return Status::EndOfFile,
                Err(s) => return s,
            }
            // docs/review.md R3: decryption takes the key under rundown; after the block it fails.
            if crypto
                .run(
                    &context.platform,
                    &context.key,
                    Cipher::Decrypt,
                    segment,
                    unit,
                )
                .is_err()
            {
                return Status::DeviceBusy;
            }
        } else {
            // Sized by the same limits at mount, so a segment always fits; a worker without a
            // buffer never gets a write (its volume's writes take the legacy queue).
            let Some(out) = bounce
                .as_deref_mut()
                .filter(|b| n <= b.capacity())
                .map(|b| b.window(n))
            else {
                return Status::InsufficientResources;
            };
            out.copy_from_slice(segment);
            // The block may have been set while this segment was encrypted: issue nothing then.
            if crypto
                .run(&context.platform, &context.key, Cipher::Encrypt, out, unit)
                .is_err()
                || context.key.is_blocked()
            {
                // W5: a refused segment's plaintext is wiped now, not at dismount.
                zeroize::Zeroize::zeroize(out);
                return Status::DeviceBusy;
            }
            match context.host.start_write(host_offset, out).wait() {
                Ok(got) if got == n => {}
                Ok(_) => return Status::EndOfFile,
                Err(s) => return s,
            }
        }
        pos += n;
    }
    Status::Success
}
