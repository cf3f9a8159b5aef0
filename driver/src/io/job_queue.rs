//! A path's FIFO of granted jobs, shared by the legacy queue (its main thread's input) and the
//! direct path (its workers' queue).
//!
//! Owns: the order in which a path's threads take jobs, taking a queued job out for its cancel
//! routine ([`JobQueue::take_queued`]), and the claim every taker makes before it works on a
//! job ([`Finisher::claim`]).
//! Never: decides which path a job takes or when it is granted (`volume` and `barrier`);
//! allocates: a waiting job is its request, linked through itself ([`RequestQueue`], W6).

use super::{Finisher, IoJob};
use crate::platform::{Platform, RequestQueue, Taken, UpperRequest};
use crate::Status;

/// What a path's thread takes next.
pub(crate) enum Next<R: UpperRequest> {
    /// A job this thread now owns (claimed: its cancel routine can no longer take it).
    Job(IoJob<R>),
    /// Everything queued before was taken: the thread ends.
    Stop,
}

/// A blocking FIFO of granted jobs; never full, allocates nothing.
pub(crate) struct JobQueue<P: Platform> {
    requests: RequestQueue<P>,
}

impl<P: Platform> JobQueue<P> {
    /// An empty queue, or STATUS_INSUFFICIENT_RESOURCES when its semaphore's allocation fails.
    pub(crate) fn new() -> Result<Self, Status> {
        Ok(JobQueue {
            requests: RequestQueue::new()?,
        })
    }

    /// Queues a granted job.
    pub(crate) fn push(&self, job: IoJob<P::Request>) -> Result<(), IoJob<P::Request>> {
        self.push_marked(job, false)
    }

    /// Queues a granted job with a mark ([`IoJob::park_marked`]).
    pub(crate) fn push_marked(
        &self,
        job: IoJob<P::Request>,
        mark: bool,
    ) -> Result<(), IoJob<P::Request>> {
        // The cancel hook is armed here, under the FIFO's lock (docs/review.md W6: a cancel
        // routine then finds the job in the FIFO, or the taker's claim sees the hook gone).
        self.requests
            .push_armed(job.park_marked(mark))
            .map_err(IoJob::unpark)
    }

    /// Puts a job taken and not served back before every other, unmarked (for the workers),
    /// its cancel hook armed again; hands it back when it was cancelled meanwhile.
    pub(crate) fn push_front(&self, job: IoJob<P::Request>) -> Result<(), IoJob<P::Request>> {
        self.requests
            .push_front_armed(job.park_marked(false))
            .map_err(IoJob::unpark)
    }

    /// Blocks until a job or a stop is there for this thread, which then takes something
    /// else before it takes the job ([`take_waited`](Self::take_waited)).
    pub(crate) fn wait(&self) {
        self.requests.wait();
    }

    /// After [`wait`](Self::wait): the next job this thread may work on, or stop; `None` when
    /// the job it waited for is gone (taken by another taker, or its cancel won the claim).
    pub(crate) fn take_waited<F: Finisher<P>>(&self, finisher: &F) -> Option<Next<P::Request>> {
        match self.requests.take_waited()? {
            Taken::Stop => Some(Next::Stop),
            Taken::Request(request) => finisher.claim(IoJob::unpark(request)).map(Next::Job),
        }
    }

    /// The oldest job, claimed, when it carries the mark and no thread between
    /// [`wait`](Self::wait) and [`take_waited`](Self::take_waited) counts on it. Never blocks.
    pub(crate) fn try_take_marked<F: Finisher<P>>(
        &self,
        finisher: &F,
    ) -> Option<IoJob<P::Request>> {
        let request = self.requests.try_take_front_if(IoJob::is_marked)?;
        finisher.claim(IoJob::unpark(request))
    }

    /// Jobs queued, and whether the oldest carries the mark (one look under the lock).
    pub(crate) fn len_and_head_marked(&self) -> (usize, bool) {
        self.requests.len_and_head(IoJob::is_marked)
    }

    /// Queues one stop, taken after everything queued before.
    pub(crate) fn stop(&self) {
        self.requests.stop();
    }

    /// Jobs queued.
    pub(crate) fn len(&self) -> usize {
        self.requests.len()
    }

    /// Runs `f` under the FIFO's lock if no job waits (`None`: one does): the dispatching
    /// thread's check that it overtakes nobody (docs/review.md R12).
    pub(crate) fn when_empty<R>(&self, f: impl FnOnce() -> R) -> Option<R> {
        self.requests.when_empty(f)
    }

    /// Jobs ever queued, and ever taken out (the simulator's overtaking check).
    pub(crate) fn counts(&self) -> (u64, u64) {
        self.requests.counts()
    }

    /// Takes the queued job with `key` out (its cancel routine fired).
    pub(crate) fn take_queued(&self, key: usize) -> Option<IoJob<P::Request>> {
        self.requests
            .take_first(|request| request.cancel_key() == key)
            .map(IoJob::unpark)
    }

    /// Blocks for the next job this thread may work on, or stop. A job whose cancel routine
    /// won the claim is skipped (it is completed cancelled, here or by the routine).
    pub(crate) fn next<F: Finisher<P>>(&self, finisher: &F) -> Next<P::Request> {
        loop {
            self.wait();
            if let Some(next) = self.take_waited(finisher) {
                return next;
            }
        }
    }
}
