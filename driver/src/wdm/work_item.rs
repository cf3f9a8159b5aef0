//! I/O work items (IoAllocateWorkItem / IoQueueWorkItem): `Platform::work_items` and
//! `Platform::queue_work_item`.
//!
//! Owns: pools of IO_WORKITEMs allocated at mount (VeraCrypt 1.26.18 preallocates its
//! completion work items the same way), each slot carrying its payload `T` in place, so
//! queueing one allocates nothing and cannot fail: the completion stage never has more than
//! `max_work_items` queued or running, and its pool holds that many. A slot is free again as
//! soon as its routine has taken the payload out, before the routine runs it.
//! Never: runs the routine on the caller's thread.

use alloc::boxed::Box;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::cell::UnsafeCell;

use wdk_sys::ntddk::{IoAllocateWorkItem, IoFreeWorkItem, IoQueueWorkItem};
use wdk_sys::{_WORK_QUEUE_TYPE::DelayedWorkQueue, PDEVICE_OBJECT, PIO_WORKITEM, PVOID};

use super::sync::SpinLock;
use crate::platform::Lock;
use crate::Status;

/// A boxed closure (`Platform::queue_work_item`).
pub type Body = Box<dyn FnOnce() + Send>;

/// The routine of a pool of boxed closures: calls the closure.
pub fn call_body(body: Body) {
    body();
}

/// One preallocated work item and what it runs next.
struct Slot<T: Send + 'static> {
    item: PIO_WORKITEM,
    /// Written by `queue` while the slot is off the free list, taken by the routine.
    payload: UnsafeCell<Option<T>>,
    /// Keeps the pool alive while the routine runs; dropped as the routine's last action.
    owner: UnsafeCell<Option<Arc<WorkItemPool<T>>>>,
}

/// Work items that each carry a `T` to one routine.
///
/// IRQL: `queue` at IRQL <= DISPATCH_LEVEL; creation and drop at PASSIVE_LEVEL.
pub struct WorkItemPool<T: Send + 'static> {
    /// Never resized after `new`: the kernel holds pointers to the slots.
    slots: Box<[Slot<T>]>,
    /// Indices of idle slots (capacity for all of them, reserved in `new`).
    free: SpinLock<Vec<usize>>,
    /// What every item runs, on its payload.
    run: fn(T),
}

// SAFETY: a slot's cells are touched only by whoever took its index off the free list (the
// queuer, then the routine it queued), so never by two threads at once; IO_WORKITEMs may be
// queued from any thread.
unsafe impl<T: Send + 'static> Send for WorkItemPool<T> {}
// SAFETY: as above.
unsafe impl<T: Send + 'static> Sync for WorkItemPool<T> {}

impl<T: Send + 'static> WorkItemPool<T> {
    /// Allocates `count` work items owned by `device` (a device of this driver that outlives
    /// the pool), each running `run` on what it is queued with. Every allocation is fallible:
    /// STATUS_INSUFFICIENT_RESOURCES, and what was made is freed.
    pub fn new(device: PDEVICE_OBJECT, count: usize, run: fn(T)) -> Result<Arc<Self>, Status> {
        let mut slots = Vec::new();
        slots
            .try_reserve_exact(count)
            .map_err(|_| Status::InsufficientResources)?;
        let mut free = Vec::new();
        free.try_reserve_exact(count)
            .map_err(|_| Status::InsufficientResources)?;
        free.extend(0..count);
        let mut pool = WorkItemPool {
            slots: Box::new([]),
            free: SpinLock::new(free),
            run,
        };
        for _ in 0..count {
            // SAFETY: `device` is a live device object of this driver (contract).
            let item = unsafe { IoAllocateWorkItem(device) };
            if item.is_null() {
                pool.slots = slots.into_boxed_slice();
                return Err(Status::InsufficientResources); // Drop frees the ones made
            }
            slots.push(Slot {
                item,
                payload: UnsafeCell::new(None),
                owner: UnsafeCell::new(None),
            });
        }
        pool.slots = slots.into_boxed_slice();
        Ok(Arc::new(pool))
    }

    /// Runs the pool's routine on `payload` on a system worker thread (DelayedWorkQueue) at
    /// PASSIVE_LEVEL. Allocates nothing. Hands `payload` back when every item is queued or
    /// still handing its payload over (the caller broke its bound).
    pub fn queue(self: &Arc<Self>, payload: T) -> Result<(), T> {
        let Some(slot) = self
            .free
            .with(|f| f.pop())
            .and_then(|index| self.slots.get(index))
        else {
            return Err(payload);
        };
        // SAFETY: the index came off the free list, so nobody else touches this slot until
        // its routine puts it back.
        unsafe {
            *slot.payload.get() = Some(payload);
        }
        // SAFETY: as above.
        unsafe {
            *slot.owner.get() = Some(Arc::clone(self));
        }
        let context: *const Slot<T> = slot;
        // SAFETY: the slot's item is not queued (off the free list: its last routine, if any,
        // has been called and has taken its payload out; the I/O manager allows requeueing
        // an item once its routine was called, it reads nothing of the item after calling);
        // the slot lives as long as the pool, which the routine keeps alive through `owner`.
        unsafe {
            IoQueueWorkItem(
                slot.item,
                Some(run_slot::<T>),
                DelayedWorkQueue,
                context.cast_mut().cast(),
            )
        };
        Ok(())
    }

    fn give_back(&self, slot: *const Slot<T>) {
        let index = self.slots.iter().position(|s| core::ptr::eq(s, slot));
        if let Some(index) = index {
            // Never grows: capacity for every slot was reserved in `new`.
            self.free.with(|f| f.push(index));
        }
    }
}

impl<T: Send + 'static> crate::platform::WorkItems<T> for Arc<WorkItemPool<T>> {
    fn queue(&self, item: T) -> Result<(), T> {
        WorkItemPool::queue(self, item)
    }
}

impl<T: Send + 'static> Drop for WorkItemPool<T> {
    fn drop(&mut self) {
        // Every routine holds the pool alive until its last action, so none is running
        // (beyond returning) when the last reference goes.
        for slot in &self.slots {
            // SAFETY: an idle item allocated by `new`, freed once.
            unsafe { IoFreeWorkItem(slot.item) };
        }
    }
}

unsafe extern "C" fn run_slot<T: Send + 'static>(_device: PDEVICE_OBJECT, context: PVOID) {
    // SAFETY: `context` is a slot of a pool kept alive by the slot's `owner`, set by `queue`.
    let slot = unsafe { &*context.cast::<Slot<T>>() };
    // SAFETY: the slot is ours until we put it back on the free list below.
    let payload = unsafe { (*slot.payload.get()).take() };
    // SAFETY: as above.
    let owner = unsafe { (*slot.owner.get()).take() };
    let Some(owner) = owner else {
        return;
    };
    // Free again before the routine runs: whoever is allowed to queue next (the completion
    // stage's permit is released by the routine) finds an idle slot. This routine touches
    // the slot no more.
    owner.give_back(slot);
    if let Some(payload) = payload {
        (owner.run)(payload);
    }
    // Possibly the last reference: the pool (this item included) is freed here, which the
    // kernel allows from the item's own routine.
    drop(owner);
}

struct Queued {
    item: PIO_WORKITEM,
    body: Body,
}

/// The fallback of `Platform::queue_work_item` (never the I/O path, whose completion stage
/// keeps its bound): a work item allocated for this one call.
pub fn queue_allocated(device: PDEVICE_OBJECT, body: Body) {
    // SAFETY: `device` is a live device object of this driver (contract of `queue`).
    let item = unsafe { IoAllocateWorkItem(device) };
    assert!(!item.is_null(), "vcdirect: IoAllocateWorkItem failed");
    let queued = Box::into_raw(Box::new(Queued { item, body }));
    // SAFETY: `item` was just allocated for `device`; `queued` is handed to `run_allocated`,
    // which reclaims it exactly once.
    unsafe { IoQueueWorkItem(item, Some(run_allocated), DelayedWorkQueue, queued.cast()) };
}

unsafe extern "C" fn run_allocated(_device: PDEVICE_OBJECT, context: PVOID) {
    // SAFETY: `context` is the `Queued` leaked by `queue_allocated` for this work item only.
    let queued = unsafe { Box::from_raw(context.cast::<Queued>()) };
    let Queued { item, body } = *queued;
    body();
    // SAFETY: the work item's routine may free its own item; nothing else references it.
    unsafe { IoFreeWorkItem(item) };
}
