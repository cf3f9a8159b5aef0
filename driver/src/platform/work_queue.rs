//! A blocking FIFO between engine threads: a short lock around a deque plus a semaphore.

use alloc::collections::VecDeque;

use super::{Lock, Platform, Semaphore};
use crate::Status;

/// Producers `push` (never block); consumers `pop` (block until an item is there).
pub struct WorkQueue<P: Platform, T: Send> {
    items: P::Lock<VecDeque<T>>,
    ready: P::Semaphore,
}

impl<P: Platform, T: Send> WorkQueue<P, T> {
    /// An empty queue with room for `capacity` items before it reallocates, or
    /// STATUS_INSUFFICIENT_RESOURCES (W6: made at mount, fallibly, asking the
    /// allocation-failure injection first).
    pub fn with_capacity(capacity: usize) -> Result<Self, Status> {
        if crate::faults::allocation_fails() {
            return Err(Status::InsufficientResources);
        }
        let mut items = VecDeque::new();
        items
            .try_reserve_exact(capacity)
            .map_err(|_| Status::InsufficientResources)?;
        Ok(WorkQueue {
            items: P::Lock::new(items),
            ready: P::Semaphore::new(0)?,
        })
    }

    /// Appends `item` and wakes one consumer.
    pub fn push(&self, item: T) {
        self.items.with(|q| q.push_back(item));
        self.ready.release();
    }

    /// Takes the oldest item, blocking until there is one.
    pub fn pop(&self) -> T {
        self.ready.acquire();
        self.items
            .with(|q| q.pop_front())
            .expect("a semaphore permit always matches a queued item")
    }

    /// Takes out the oldest queued item `pick` selects and leaves `tombstone` in its place, so
    /// that every consumer's wake-up still finds an item (consumers skip tombstones). For the
    /// cancel routine of a queued request.
    pub fn take_first(&self, mut pick: impl FnMut(&T) -> bool, tombstone: T) -> Option<T> {
        self.items.with(|q| {
            let slot = q.iter_mut().find(|item| pick(item))?;
            Some(core::mem::replace(slot, tombstone))
        })
    }

    /// Number of queued items.
    pub fn len(&self) -> usize {
        self.items.with(|q| q.len())
    }

    /// True when nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
