//! A path's FIFO of granted jobs, shared by the legacy queue (its main thread's input) and the
//! direct path (its workers' queue).
//!
//! Owns: the order in which a path's threads take jobs, the hole a cancel routine leaves when it
//! takes a queued job out ([`JobQueue::take_queued`]), and the claim every taker makes before
//! it works on a job ([`Finisher::claim`]).
//! Never: decides which path a job takes or when it is granted (`volume` and `barrier`).

use super::{Finisher, IoJob, RANGE_ENTRIES};
use crate::platform::{Platform, UpperRequest, WorkQueue};

enum Slot<R: UpperRequest> {
    Job(IoJob<R>),
    /// Where a cancel routine took a queued job out (takers skip it).
    Taken,
    Stop,
}

/// What a path's thread takes next.
pub(crate) enum Next<R: UpperRequest> {
    /// A job this thread now owns (claimed: its cancel routine can no longer take it).
    Job(IoJob<R>),
    /// Everything queued before was taken: the thread ends.
    Stop,
}

/// A blocking FIFO of granted jobs, sized at mount for [`RANGE_ENTRIES`] jobs.
pub(crate) struct JobQueue<P: Platform> {
    slots: WorkQueue<P, Slot<P::Request>>,
}

impl<P: Platform> JobQueue<P> {
    pub(crate) fn new() -> Self {
        Self::with_capacity(RANGE_ENTRIES)
    }

    /// A FIFO with room for `capacity` jobs before it grows (0 for a path no job reaches).
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        JobQueue {
            slots: WorkQueue::with_capacity(capacity),
        }
    }

    /// Queues a granted job.
    pub(crate) fn push(&self, job: IoJob<P::Request>) {
        self.slots.push(Slot::Job(job));
    }

    /// Queues one stop, taken after everything queued before.
    pub(crate) fn stop(&self) {
        self.slots.push(Slot::Stop);
    }

    /// Entries queued (holes included).
    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }

    /// Takes the queued job with `key` out (its cancel routine fired), leaving a hole.
    pub(crate) fn take_queued(&self, key: usize) -> Option<IoJob<P::Request>> {
        let picked = self.slots.take_first(
            |s| matches!(s, Slot::Job(job) if job.request.cancel_key() == key),
            Slot::Taken,
        )?;
        match picked {
            Slot::Job(job) => Some(job),
            Slot::Taken | Slot::Stop => None,
        }
    }

    /// Blocks for the next job this thread may work on, or stop. Holes are skipped, and so is
    /// a job whose cancel routine won the claim (it is completed cancelled, here or by the
    /// routine).
    pub(crate) fn next<F: Finisher<P>>(&self, finisher: &F) -> Next<P::Request> {
        loop {
            match self.slots.pop() {
                Slot::Stop => return Next::Stop,
                Slot::Taken => continue,
                Slot::Job(job) => {
                    if let Some(job) = finisher.claim(job) {
                        return Next::Job(job);
                    }
                }
            }
        }
    }
}
