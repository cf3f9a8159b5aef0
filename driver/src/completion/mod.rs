//! The deferred completion stage (VeraCrypt 1.26.18's answer to re-entrant completions).
//!
//! Owns: handing finished upper requests to the OS's worker threads, bounded by the
//! max-work-items tunable, and knowing when none is active any more.
//! Never: runs upper completion code on an engine thread (workers, queue threads, or its own
//! completion thread), except under the test-only R1 fault switch.
//!
//! Why this cannot deadlock (docs/review.md R1). An upper completion routine may submit a new
//! request to the same volume and block until it completes. Such a routine runs on a system
//! worker thread from [`Platform::work_items`], never on one of our 8 workers or queue
//! threads, and every engine resource a request holds (its range, its slot, its fragment
//! buffers) is released *before* the request is handed to this stage. So a blocked completion
//! holds nothing the nested request needs: the nested request takes a free worker, finishes,
//! is handed to the completion thread, which queues another work item for it, and the blocked
//! routine wakes. Our completion thread itself never blocks on an upper routine.
//!
//! Who queues the work item (fewer hand-offs): the thread that finishes a request
//! (a direct worker, the legacy completion thread, a cancel) queues its work item itself when
//! a work item is free (a permit taken without waiting) and no earlier request waits in the
//! stage; only otherwise does the request go to the completion thread, which waits for a free
//! work item, in the order they reached it. Completion order is best effort, as Windows promises
//! none: a finisher that read `waiting` just before another one raised it can overtake that one
//! (a bounded number can). Either way the routine runs on a system worker thread, never on
//! the finishing thread (R1), and the permits bound the active routines the same way; taking a
//! permit without waiting, queueing a work item and the rundown's spin lock are all allowed at
//! DISPATCH_LEVEL (a cancel routine finishes there), and nothing is allocated (W6).
//!
//! A carried host permit (`push_carrying`): a small direct request that ended while jobs
//! wait in the direct FIFO hands its host permit to its work item, which gives it to the
//! [`Carrier`] (the volume: the direct path issues the oldest small job with it, or gives it
//! back) before it completes the upper request. Only a work item queued at once carries one;
//! a request that goes to the completion thread gives its permit back first, so no permit ever
//! waits behind the bound.
//!
//! At the bound: when `max_work_items` routines are active at once (all blocked, say), the
//! completion thread waits for one to return before queueing the next, as VeraCrypt's does.
//! Requests keep being served meanwhile, but their completions queue up behind the bound; if
//! every one of the `max_work_items` routines waits for a request whose completion is queued
//! behind them, that is a deadlock of the upper drivers' own making, which the bound (default
//! 1024, far above the 8 + 16 requests one volume has in flight) makes practically
//! unreachable. The simulator models the pool with the same bound.

use alloc::sync::{Arc, Weak};
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crate::faults::{self, Fault};
use crate::platform::{
    Lock, Platform, RequestNote, RequestQueue, Rundown, Semaphore, Taken, UpperRequest, WorkItems,
};
use crate::Status;

/// A finished request on its way to its issuer.
pub struct Finished<R: UpperRequest> {
    /// The request (its buffer already given back).
    pub request: R,
    /// Final status.
    pub status: Status,
    /// Bytes transferred.
    pub information: usize,
}

impl<R: UpperRequest> Finished<R> {
    /// The finished request, waiting, with its status and byte count in its note (the
    /// completion queue allocates nothing).
    fn park(self) -> R {
        let Finished {
            mut request,
            status,
            information,
        } = self;
        // Bytes transferred never exceed the request's u32 length.
        let information = u32::try_from(information).unwrap_or(u32::MAX);
        request.set_note(RequestNote([status.ntstatus(), information, 0, 0, 0]));
        request
    }

    fn unpark(request: R) -> Self {
        let RequestNote([status, information, ..]) = request.note();
        Finished {
            request,
            status: Status::from_ntstatus(status),
            information: information as usize,
        }
    }
}

/// Who a completion work item that carries a host permit hands it to, before the upper
/// completion runs (the volume: its direct path issues the next job with it).
pub trait Carrier: Send + Sync + 'static {
    /// Uses or gives back the permit; never waits.
    fn issue_carried(self: Arc<Self>);
}

/// What the work items share with the completion thread.
struct Shared<P: Platform> {
    /// Set once at start (the volume, which owns this stage: a weak reference).
    carrier: P::Lock<Option<Weak<dyn Carrier>>>,
    /// One permit per work item that may be active.
    permits: P::Semaphore,
    /// Active work items; stop waits until none is.
    active: Rundown<P>,
    completed: AtomicU64,
    /// Work items queued by the finishing thread itself (the rest by the completion thread).
    direct: AtomicU64,
}

/// What one work item carries: the finished request and the stage it reports back to (a
/// reference count, not an allocation).
pub struct Handoff<P: Platform> {
    stage: Arc<Shared<P>>,
    finished: Finished<P::Request>,
    /// It carries a host permit for the carrier.
    carries: bool,
}

/// The routine of every completion work item, on a system worker thread.
fn complete_on_worker<P: Platform>(handoff: Handoff<P>) {
    let Handoff {
        stage,
        finished,
        carries,
    } = handoff;
    if carries {
        // Before the upper routine, which may block.
        if let Some(carrier) = stage.carrier.with(|c| c.as_ref().and_then(Weak::upgrade)) {
            carrier.issue_carried();
        }
    }
    stage.completed.fetch_add(1, Ordering::Relaxed);
    finished
        .request
        .complete(finished.status, finished.information);
    // The permit first: once the rundown shows no routine active, every work item is free.
    stage.permits.release();
    stage.active.exit();
}

/// The completion stage of one volume.
pub struct Completer<P: Platform> {
    /// Finished requests waiting for the completion thread, linked through themselves.
    queue: RequestQueue<P>,
    /// Requests handed to the completion thread whose work item it has not queued yet: while
    /// any is, a finishing thread does not queue its own (it would overtake them; best effort, see
    /// the module's text).
    waiting: AtomicUsize,
    shared: Arc<Shared<P>>,
    /// As many work items as may be active, allocated at mount.
    items: P::WorkItems<Handoff<P>>,
}

impl<P: Platform> Completer<P> {
    /// A stage that allows `max_work_items` active work items, all allocated now.
    pub fn new(platform: &P, max_work_items: u32) -> Result<Self, Status> {
        let count = max_work_items.max(1) as usize;
        Ok(Completer {
            queue: RequestQueue::new()?,
            waiting: AtomicUsize::new(0),
            shared: platform.try_arc(Shared {
                carrier: P::Lock::new(None),
                permits: P::Semaphore::new(count)?,
                active: Rundown::new()?,
                completed: AtomicU64::new(0),
                direct: AtomicU64::new(0),
            })?,
            items: platform.work_items(count, complete_on_worker::<P>)?,
        })
    }

    /// Hands a finished request to the stage: queues its work item now when one is free and
    /// no earlier request waits for one, else hands it to the completion thread. Never blocks,
    /// never runs upper code, allocates nothing; callable up to DISPATCH_LEVEL.
    pub fn push(&self, finished: Finished<P::Request>) {
        if faults::is_on(Fault::R1CompleteOnEngineThread) {
            // The seed proposal's bug: complete on the calling engine thread.
            self.shared.completed.fetch_add(1, Ordering::Relaxed);
            finished
                .request
                .complete(finished.status, finished.information);
            return;
        }
        if let Err(finished) = self.queue_now(finished, false) {
            self.to_thread(finished);
        }
    }

    /// Hands `finished` to the completion thread, which queues its work item in turn.
    fn to_thread(&self, finished: Finished<P::Request>) {
        // Counted before it is queued, so a later finisher sees it waiting.
        self.waiting.fetch_add(1, Ordering::AcqRel);
        self.queue.push(finished.park());
    }

    /// The carrier of permits ([`push_carrying`](Self::push_carrying)), set once before any
    /// request.
    pub fn set_carrier(&self, carrier: Weak<dyn Carrier>) {
        self.shared.carrier.with(|c| *c = Some(carrier));
    }

    /// [`push`](Self::push) for a request whose host permit goes with its work item: true
    /// when a work item took both now; false when none could now, and the request went the
    /// usual way (the caller gives the permit back: it must not wait behind the bound).
    pub fn push_carrying(&self, finished: Finished<P::Request>) -> bool {
        if faults::is_on(Fault::R1CompleteOnEngineThread) {
            self.push(finished);
            return false;
        }
        match self.queue_now(finished, true) {
            Ok(()) => true,
            Err(finished) => {
                self.to_thread(finished);
                false
            }
        }
    }

    /// The finishing thread's own hand-off: a work item for `finished` if one is free now
    /// and nobody is ahead of it; hands `finished` back otherwise. Out of line: the direct
    /// worker's stack is tight in the kernel image, and this is the deepest part of its
    /// finish.
    #[inline(never)]
    fn queue_now(
        &self,
        finished: Finished<P::Request>,
        carries: bool,
    ) -> Result<(), Finished<P::Request>> {
        let shared = &self.shared;
        let behind =
            self.waiting.load(Ordering::Acquire) != 0 && !faults::is_on(Fault::CompletionOvertakes);
        if behind || !shared.permits.try_acquire() {
            return Err(finished);
        }
        if !shared.active.enter() {
            // Stopped (cannot happen: every push comes before stop); the thread decides.
            shared.permits.release();
            return Err(finished);
        }
        let handoff = Handoff {
            stage: Arc::clone(shared),
            finished,
            carries,
        };
        // Counted before the routine can run (and its issuer look).
        shared.direct.fetch_add(1, Ordering::Relaxed);
        self.items.queue(handoff).map_err(|back| {
            // A permit means an idle work item (the platform's contract); should the platform
            // still refuse, the completion thread waits for one.
            shared.direct.fetch_sub(1, Ordering::Relaxed);
            shared.permits.release();
            shared.active.exit();
            back.finished
        })
    }

    /// Requests completed so far.
    pub fn completed(&self) -> u64 {
        self.shared.completed.load(Ordering::Relaxed)
    }

    /// Work items the finishing threads queued themselves (without the completion thread).
    pub fn queued_directly(&self) -> u64 {
        self.shared.direct.load(Ordering::Relaxed)
    }

    /// True when no request waits in the stage and no work item is queued or running.
    pub fn is_idle(&self) -> bool {
        self.waiting.load(Ordering::Acquire) == 0 && self.shared.active.active() == 0
    }

    /// Body of the completion thread; returns after [`Completer::stop`].
    pub fn run(self: &Arc<Self>) {
        loop {
            match self.queue.pop() {
                Taken::Stop => return,
                Taken::Request(request) => {
                    let finished = Finished::unpark(request);
                    let shared = &self.shared;
                    shared.permits.acquire();
                    let entered = shared.active.enter();
                    debug_assert!(entered, "work items are queued only before stop");
                    let mut handoff = Handoff {
                        stage: Arc::clone(shared),
                        finished,
                        carries: false,
                    };
                    // A permit means an idle work item (the platform's contract); should the
                    // platform still refuse, wait for the next routine to finish and retry.
                    while let Err(back) = self.items.queue(handoff) {
                        handoff = back;
                        shared.permits.acquire();
                        shared.permits.release();
                    }
                    self.waiting.fetch_sub(1, Ordering::AcqRel);
                }
            }
        }
    }

    /// Ends the completion thread after everything pushed before was handed on, then waits
    /// until no work item is active. Call once, after the last push, then join the thread.
    pub fn stop(&self) {
        self.queue.stop();
    }

    /// Blocks until every queued work item has returned (after the thread was joined).
    pub fn wait_idle(&self) {
        self.shared.active.close_and_wait();
    }
}
