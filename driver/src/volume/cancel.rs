//! Cancelling queued requests: the engine's half of a cancel routine.
//!
//! Owns: the hand-shake between the issuer's cancel (an IRP's cancel routine, which calls
//! [`Volume::cancel`]) and the path thread that takes the request off its queue
//! ([`Finisher::claim`], which the volume implements with [`Volume::claim_taken`]). Exactly
//! one of them completes a cancelled request, nothing is issued for it, and its range is
//! released like any other request's.
//! Never: stops a request that a path has taken (that one checks `is_cancelled` before every
//! segment or fragment, docs/review.md R2).
//!
//! The protocol, with `arm`/`disarm` the request's atomic exchange of its cancel hook (in the
//! kernel: `IoSetCancelRoutine`):
//! - the hook is armed as the job enters a path's FIFO, under the FIFO's lock (a job waiting
//!   for its range is not armed: cancelled there, it completes as it reaches the FIFO), or the
//!   VERIFYs' line, under its lock (a VERIFY waiting for the one in service; the thread that
//!   hands it its turn, or dismount, is its taker);
//! - the cancel routine runs only if it won the hook: it takes the job out of a path's FIFO
//!   if it is there (leaving a tombstone), or out of the VERIFYs' line by its key (the
//!   request's in-line flag says whether it is linked there: `RequestList::remove_key`,
//!   constant time), else looks for it among the jobs whose taker lost the race (`parked`),
//!   else leaves its key in `fired` for the taker to find;
//! - a taker disarms right after popping the job; if it lost the hook, it finds the key in
//!   `fired` (the routine came first: the taker completes) or parks the job (the routine will
//!   find it). The book's lock orders the two, so no job is completed twice or never.
//!
//! Why a taker that lost the hook does not simply complete the job itself (the cancel flag is
//! set, so it would end STATUS_CANCELLED anyway): the cancel routine may still be looking for
//! the key, and once the request is completed its key (the IRP's address) can belong to a new
//! request that the routine would then cancel by mistake. So the request is completed only
//! after its routine's search ended: found in a FIFO, or recorded in `fired`.

use alloc::sync::Arc;
use alloc::vec::Vec;

use super::Volume;
use crate::barrier::Ticket;
use crate::direct::WORKERS;
use crate::io::{Finisher, IoJob};
use crate::platform::{Lock, Platform, RequestList, UpperRequest};
use crate::Status;

/// Threads that take jobs off a path's FIFO or the VERIFYs' line: the direct workers, the
/// legacy main thread, the finisher of the VERIFY in service (it hands over the next) and
/// dismount (it refuses the waiting ones, one at a time).
const TAKERS: usize = WORKERS + 3;

/// Jobs and keys in the middle of the hand-shake.
pub(crate) struct CancelBook<R: UpperRequest> {
    /// Jobs whose taker lost the hook before their cancel routine looked: it will. Linked
    /// through their requests (never full, allocates nothing).
    parked: R::List,
    /// Keys whose cancel routine found no job: its taker will. A key is here only while its
    /// job is between a taker's pop and that taker's look into this book, and a taker holds
    /// one job at a time: never more than [`TAKERS`], the room reserved at mount.
    fired: Vec<usize>,
}

impl<R: UpperRequest> CancelBook<R> {
    /// Fails with STATUS_INSUFFICIENT_RESOURCES when the fired keys' room cannot be allocated.
    pub(crate) fn new() -> Result<Self, crate::Status> {
        Ok(CancelBook {
            parked: RequestList::new(),
            fired: crate::io::try_vec(TAKERS)?,
        })
    }
}

impl<P: Platform> Volume<P> {
    /// The issuer cancelled the request with `key` after its hook fired (in the kernel: the
    /// cancel routine of a queued IRP, at IRQL <= DISPATCH_LEVEL). A request still waiting in
    /// a path's FIFO completes now with STATUS_CANCELLED, nothing issued; one waiting for an
    /// overlapping earlier request has no hook yet and completes the same way as soon as its
    /// range is granted (`JobQueue::push` finds it cancelled).
    /// Never blocks.
    pub fn cancel(self: &Arc<Self>, key: usize) {
        if let Some(job) = self
            .direct
            .ready
            .take_queued(key)
            .or_else(|| self.legacy.input.take_queued(key))
        {
            self.finish_cancelled(job);
            return;
        }
        // A VERIFY waiting for the one in service: it holds no range. Taken out by its key in
        // constant time (its in-line flag, no search of the line): a process that exits with
        // thousands of VERIFYs waiting pays one step per cancel, not one per VERIFY waiting.
        let verify = self.verifies.with(|line| line.waiting.remove_key(key));
        if let Some(request) = verify {
            self.verify_unserved(request, Status::Cancelled);
            return;
        }
        let parked = self.cancels.with(|book| {
            match book
                .parked
                .remove_first(&mut |request| request.cancel_key() == key)
            {
                Some(request) => Some(IoJob::unpark(request)),
                None => {
                    debug_assert!(book.fired.len() < TAKERS, "one fired key per taker");
                    book.fired.push(key);
                    None
                }
            }
        });
        if let Some(job) = parked {
            self.finish_cancelled(job);
        }
    }

    /// Cancel hand-shakes still open (jobs parked for their routine, keys fired for their
    /// taker). Zero whenever no request is outstanding: a non-zero value after dismount is a
    /// broken hand-shake.
    pub fn open_cancel_handshakes(&self) -> usize {
        self.cancels
            .with(|book| book.parked.len() + book.fired.len())
    }

    /// A path popped `job` and wants to work on it ([`Finisher::claim`], from
    /// `JobQueue::next`). `None` when the issuer's cancel won: the job is then completed (here
    /// or by the cancel routine) and the path moves on.
    pub(crate) fn claim_taken(&self, mut job: IoJob<P::Request>) -> Option<IoJob<P::Request>> {
        if job.request.disarm_cancel() {
            return Some(job);
        }
        let key = job.request.cancel_key();
        let ours = self
            .cancels
            .with(|book| match book.fired.iter().position(|k| *k == key) {
                Some(i) => {
                    book.fired.swap_remove(i);
                    Some(job)
                }
                None => {
                    book.parked.push_back(job.park());
                    None
                }
            });
        if let Some(job) = ours {
            self.finish_cancelled(job);
        }
        None
    }

    /// `claim_taken` for a VERIFY taken out of the VERIFYs' line (by the thread that hands it
    /// its turn, or dismount): `None` when its cancel routine won; it is then completed
    /// cancelled (here, or by the routine, which finds it parked), never through `finish`
    /// (it holds no range and is not the one in service).
    pub(super) fn claim_waiting_verify(
        &self,
        mut request: P::Request,
    ) -> Option<IoJob<P::Request>> {
        if request.disarm_cancel() {
            return Some(IoJob::unpark(request));
        }
        let key = request.cancel_key();
        let ours = self
            .cancels
            .with(|book| match book.fired.iter().position(|k| *k == key) {
                Some(i) => {
                    book.fired.swap_remove(i);
                    Some(request)
                }
                None => {
                    book.parked.push_back(request);
                    None
                }
            });
        if let Some(request) = ours {
            self.verify_unserved(request, Status::Cancelled);
        }
        None
    }

    pub(super) fn finish_cancelled(&self, job: IoJob<P::Request>) {
        // A VERIFY taken from the VERIFYs' line: never registered, it holds no range and is
        // not the one in service.
        if job.ticket.raw() == Ticket::placeholder().raw() {
            self.verify_unserved(job.park(), Status::Cancelled);
            return;
        }
        let IoJob {
            request,
            buf,
            kind,
            ticket,
            ..
        } = job;
        self.finish(request, buf, ticket, kind, Status::Cancelled, 0);
    }
}
