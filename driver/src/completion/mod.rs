//! The deferred completion stage (VeraCrypt 1.26.18's answer to re-entrant completions).
//!
//! Owns: handing finished upper requests to the OS's worker threads, bounded by the
//! max-work-items tunable, and knowing when none is active any more.
//! Never: runs upper completion code on an engine thread (workers, queue threads, or its own
//! completion thread), except under the test-only R1 fault switch.
//!
//! Why this cannot deadlock (docs/review.md R1). An upper completion routine may submit a new
//! request to the same volume and block until it completes. Such a routine runs on a system
//! worker thread from [`Platform::queue_work_item`], never on one of our 8 workers or queue
//! threads, and every engine resource a request holds (its range, its slot, its fragment
//! buffers) is released *before* the request is handed to this stage. So a blocked completion
//! holds nothing the nested request needs: the nested request takes a free worker, finishes,
//! is handed to the completion thread, which queues another work item for it, and the blocked
//! routine wakes. Our completion thread itself never blocks on an upper routine.
//!
//! At the bound: when `max_work_items` routines are active at once (all blocked, say), the
//! completion thread waits for one to return before queueing the next, as VeraCrypt's does.
//! Requests keep being served meanwhile, but their completions queue up behind the bound; if
//! every one of the `max_work_items` routines waits for a request whose completion is queued
//! behind them, that is a deadlock of the upper drivers' own making, which the bound (default
//! 1024, far above the 8 + 16 requests one volume has in flight) makes practically
//! unreachable. The simulator models the pool with the same bound.

use alloc::boxed::Box;
use alloc::sync::Arc;
use core::sync::atomic::{AtomicU64, Ordering};

use crate::faults::{self, Fault};
use crate::platform::{Platform, Rundown, Semaphore, UpperRequest, WorkQueue};
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

/// What the completion thread is sent.
enum CompletionMsg<R: UpperRequest> {
    Complete(Finished<R>),
    Stop,
}

/// The completion stage of one volume.
pub struct Completer<P: Platform> {
    platform: P,
    queue: WorkQueue<P, CompletionMsg<P::Request>>,
    /// One permit per work item that may be active.
    permits: P::Semaphore,
    /// Active work items; stop waits until none is.
    active: Rundown<P>,
    completed: AtomicU64,
}

impl<P: Platform> Completer<P> {
    /// A stage that allows `max_work_items` active work items.
    pub fn new(platform: P, max_work_items: u32) -> Self {
        let permits = P::Semaphore::new(max_work_items.max(1) as usize);
        Completer {
            platform,
            queue: WorkQueue::with_capacity(crate::io::RANGE_ENTRIES),
            permits,
            active: Rundown::new(),
            completed: AtomicU64::new(0),
        }
    }

    /// Hands a finished request to the stage. Never blocks, never runs upper code.
    pub fn push(&self, finished: Finished<P::Request>) {
        if faults::is_on(Fault::R1CompleteOnEngineThread) {
            // The seed proposal's bug: complete on the calling engine thread.
            self.completed.fetch_add(1, Ordering::Relaxed);
            finished
                .request
                .complete(finished.status, finished.information);
            return;
        }
        self.queue.push(CompletionMsg::Complete(finished));
    }

    /// Requests completed so far.
    pub fn completed(&self) -> u64 {
        self.completed.load(Ordering::Relaxed)
    }

    /// Body of the completion thread; returns after [`Completer::stop`].
    pub fn run(self: &Arc<Self>) {
        loop {
            match self.queue.pop() {
                CompletionMsg::Stop => return,
                CompletionMsg::Complete(finished) => {
                    self.permits.acquire();
                    let entered = self.active.enter();
                    debug_assert!(entered, "work items are queued only before stop");
                    let stage = Arc::clone(self);
                    self.platform.queue_work_item(Box::new(move || {
                        stage.completed.fetch_add(1, Ordering::Relaxed);
                        finished
                            .request
                            .complete(finished.status, finished.information);
                        stage.active.exit();
                        stage.permits.release();
                    }));
                }
            }
        }
    }

    /// Ends the completion thread after everything pushed before was handed on, then waits
    /// until no work item is active. Call once, after the last push, then join the thread.
    pub fn stop(&self) {
        self.queue.push(CompletionMsg::Stop);
    }

    /// Blocks until every queued work item has returned (after the thread was joined).
    pub fn wait_idle(&self) {
        self.active.close_and_wait();
    }
}
