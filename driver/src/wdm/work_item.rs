//! I/O work items (IoAllocateWorkItem / IoQueueWorkItem): `Platform::queue_work_item`.
//!
//! Owns: a per-volume pool of IO_WORKITEMs allocated at mount (VeraCrypt 1.26.18 preallocates
//! its completion work items the same way), so queueing one can never fail: the completion
//! stage never has more than `max_work_items` active, and the pool holds that many.
//! Never: runs the closure on the caller's thread.

use alloc::boxed::Box;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::cell::UnsafeCell;

use wdk_sys::ntddk::{IoAllocateWorkItem, IoFreeWorkItem, IoQueueWorkItem};
use wdk_sys::{_WORK_QUEUE_TYPE::DelayedWorkQueue, PDEVICE_OBJECT, PIO_WORKITEM, PVOID};

use super::sync::SpinLock;
use crate::platform::Lock;
use crate::Status;

type Body = Box<dyn FnOnce() + Send>;

/// One preallocated work item and what it runs next.
struct Slot {
    item: PIO_WORKITEM,
    /// Written by `queue` while the slot is off the free list, taken by the routine.
    body: UnsafeCell<Option<Body>>,
    /// Keeps the pool alive while the routine runs; dropped as the routine's last action.
    owner: UnsafeCell<Option<Arc<WorkItemPool>>>,
}

/// The work items of one volume.
///
/// IRQL: `queue` at IRQL <= DISPATCH_LEVEL; creation and drop at PASSIVE_LEVEL.
pub struct WorkItemPool {
    /// Never resized after `new`: the kernel holds pointers to the slots.
    slots: Box<[Slot]>,
    /// Indices of idle slots.
    free: SpinLock<Vec<usize>>,
}

// SAFETY: a slot's cells are touched only by whoever took its index off the free list (the
// queuer, then the routine it queued), so never by two threads at once; IO_WORKITEMs may be
// queued from any thread.
unsafe impl Send for WorkItemPool {}
// SAFETY: as above.
unsafe impl Sync for WorkItemPool {}

impl WorkItemPool {
    /// Allocates `count` work items owned by `device` (a device of this driver that outlives
    /// the pool).
    pub fn new(device: PDEVICE_OBJECT, count: usize) -> Result<Arc<Self>, Status> {
        let mut slots = Vec::new();
        slots
            .try_reserve_exact(count)
            .map_err(|_| Status::InsufficientResources)?;
        let mut pool = WorkItemPool {
            slots: Box::new([]),
            free: SpinLock::new((0..count).collect()),
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
                body: UnsafeCell::new(None),
                owner: UnsafeCell::new(None),
            });
        }
        pool.slots = slots.into_boxed_slice();
        Ok(Arc::new(pool))
    }

    /// Runs `body` on a system worker thread (DelayedWorkQueue) at PASSIVE_LEVEL.
    ///
    /// Never fails while fewer than `count` items are active (the engine's completion stage
    /// guarantees that). Should the bound ever be broken, it falls back to a work item
    /// allocated now, and only if that fails too does the driver stop (bugcheck).
    pub fn queue(self: &Arc<Self>, device: PDEVICE_OBJECT, body: Body) {
        let Some(index) = self.free.with(|f| f.pop()) else {
            queue_allocated(device, body);
            return;
        };
        let slot: &Slot = &self.slots[index];
        // SAFETY: the index came off the free list, so nobody else touches this slot until
        // its routine puts it back.
        unsafe {
            *slot.body.get() = Some(body);
        }
        // SAFETY: as above.
        unsafe {
            *slot.owner.get() = Some(Arc::clone(self));
        }
        let context: *const Slot = slot;
        // SAFETY: the slot's item is idle (off the free list, its last routine returned it
        // before finishing); the slot lives as long as the pool, which the routine keeps
        // alive through `owner`.
        unsafe {
            IoQueueWorkItem(
                slot.item,
                Some(run_slot),
                DelayedWorkQueue,
                context.cast_mut().cast(),
            )
        };
    }

    fn give_back(&self, slot: *const Slot) {
        let index = self.slots.iter().position(|s| core::ptr::eq(s, slot));
        if let Some(index) = index {
            self.free.with(|f| f.push(index));
        }
    }
}

impl Drop for WorkItemPool {
    fn drop(&mut self) {
        // Every routine holds the pool alive until its last action, so none is running
        // (beyond returning) when the last reference goes.
        for slot in &self.slots {
            // SAFETY: an idle item allocated by `new`, freed once.
            unsafe { IoFreeWorkItem(slot.item) };
        }
    }
}

unsafe extern "C" fn run_slot(_device: PDEVICE_OBJECT, context: PVOID) {
    // SAFETY: `context` is a slot of a pool kept alive by the slot's `owner`, set by `queue`.
    let slot = unsafe { &*context.cast::<Slot>() };
    // SAFETY: the slot is ours until we put it back on the free list below.
    let body = unsafe { (*slot.body.get()).take() };
    // SAFETY: as above.
    let owner = unsafe { (*slot.owner.get()).take() };
    if let Some(body) = body {
        body();
    }
    if let Some(owner) = owner {
        owner.give_back(slot);
        // Possibly the last reference: the pool (this item included) is freed here, which the
        // kernel allows from the item's own routine.
        drop(owner);
    }
}

struct Queued {
    item: PIO_WORKITEM,
    body: Body,
}

/// The fallback: a work item allocated for this one call.
fn queue_allocated(device: PDEVICE_OBJECT, body: Body) {
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
