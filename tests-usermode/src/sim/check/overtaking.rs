//! docs/review.md R12 for requests the dispatching thread issues itself: such a request never
//! overtakes a job that was already queued in the direct FIFO when it was dispatched. The
//! harness notes, on the dispatching thread, how many jobs the FIFO had ever queued before the
//! dispatch began ([`note_dispatch`]); the simulated host, when a detached request starts on
//! that thread, asks how many were ever taken out: the FIFO is first in, first out, so fewer
//! taken than queued before means one of those is still waiting, overtaken.

use std::cell::Cell;

shuttle::thread_local! {
    /// Jobs the direct FIFO had ever queued when this thread began its current dispatch.
    static QUEUED_BEFORE: Cell<Option<u64>> = const { Cell::new(None) };
}

/// The dispatching thread is about to dispatch; the FIFO has queued `queued` jobs so far.
pub(crate) fn note_dispatch(queued: u64) {
    QUEUED_BEFORE.with(|q| q.set(Some(queued)));
}

/// A detached request starts on this thread while the FIFO has had `taken` jobs taken out: the
/// violation if a job queued before this dispatch still waits.
pub(crate) fn check_detached_start(taken: u64, offset: u64) -> Option<String> {
    let queued = QUEUED_BEFORE.with(Cell::get)?;
    (taken < queued).then(|| {
        format!(
            "R12: a request issued by the dispatching thread (host offset {offset}) overtook {} job(s) queued in the direct FIFO before it was dispatched",
            queued - taken
        )
    })
}
