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
use core::ptr::NonNull;

use wdk_sys::ntddk::{IoAllocateWorkItem, IoFreeWorkItem, IoQueueWorkItem};
use wdk_sys::{_WORK_QUEUE_TYPE::DelayedWorkQueue, PDEVICE_OBJECT, PIO_WORKITEM, PVOID};

use super::sync::SpinLock;
use crate::platform::Lock;
use crate::Status;

type Body = Box<dyn FnOnce() + Send>;

/// One preallocated work item and what it runs next.
struct Slot {
    item: PIO_WORKITEM,
    /// Where the slot lives (set once, before the slot is ever queued).
    home: *const Inner,
    /// Its index in `home.slots`.
    index: usize,
    /// Written by `queue` while the slot is off the free list, taken by the routine.
    body: UnsafeCell<Option<Body>>,
}

/// Which slots are idle, and whether the pool is closed (its last handle was dropped).
struct State {
    /// Indices of idle slots: their routine (if any ran) has done its last action.
    free: Vec<usize>,
    /// Slots queued whose routine has not done its last action yet.
    in_flight: usize,
    /// No more queueing; each in-flight routine frees its own item at its end.
    closed: bool,
}

/// The slots and their bookkeeping. Freed by whoever sees it closed with nothing in flight:
/// the handle's drop, or the last in-flight routine.
struct Inner {
    /// Never resized: the kernel holds pointers to the slots.
    slots: Box<[Slot]>,
    state: SpinLock<State>,
}

/// The work items of one volume: a handle on the slots, which closes the pool when dropped.
///
/// Teardown (a routine frees only its own IO_WORKITEM): the handle's drop marks the pool closed
/// and frees the items of idle slots (whose routines, if any ran, finished: a routine's last
/// touch of the pool is returning its slot under the lock); a routine still in flight then
/// frees its own item at its end (IoFreeWorkItem from the item's own routine), and whoever
/// leaves the pool closed and empty (the handle's drop or the last routine) frees the slots'
/// storage, which no routine touches afterwards.
///
/// IRQL: `queue` at IRQL <= DISPATCH_LEVEL; creation and drop at PASSIVE_LEVEL.
pub struct WorkItemPool {
    inner: NonNull<Inner>,
}

// SAFETY: a slot's body is touched only by whoever took its index off the free list (the
// queuer, then the routine it queued), so never by two threads at once; the state is under a
// spin lock; IO_WORKITEMs may be queued from any thread.
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
        let mut free = Vec::new();
        free.try_reserve_exact(count)
            .map_err(|_| Status::InsufficientResources)?;
        for index in 0..count {
            // SAFETY: `device` is a live device object of this driver (contract).
            let item = unsafe { IoAllocateWorkItem(device) };
            if item.is_null() {
                for slot in &slots {
                    let slot: &Slot = slot;
                    // SAFETY: allocated above, never queued, freed once.
                    unsafe { IoFreeWorkItem(slot.item) };
                }
                return Err(Status::InsufficientResources);
            }
            slots.push(Slot {
                item,
                home: core::ptr::null(),
                index,
                body: UnsafeCell::new(None),
            });
            free.push(index);
        }
        let mut inner = Box::new(Inner {
            slots: slots.into_boxed_slice(),
            state: SpinLock::new(State {
                free,
                in_flight: 0,
                closed: false,
            }),
        });
        let home: *const Inner = &*inner;
        for slot in inner.slots.iter_mut() {
            slot.home = home;
        }
        Ok(Arc::new(WorkItemPool {
            inner: NonNull::from(Box::leak(inner)),
        }))
    }

    fn inner(&self) -> &Inner {
        // SAFETY: the slots' storage is freed only once the pool is closed, which happens in
        // this handle's drop, so it is alive while `self` is.
        unsafe { self.inner.as_ref() }
    }

    /// Runs `body` on a system worker thread (DelayedWorkQueue) at PASSIVE_LEVEL.
    ///
    /// Never fails while fewer than `count` items are active (the engine's completion stage
    /// guarantees that). Should the bound ever be broken, it falls back to a work item
    /// allocated now, and only if that fails too does the driver stop (bugcheck).
    pub fn queue(&self, device: PDEVICE_OBJECT, body: Body) {
        let inner = self.inner();
        let taken = inner.state.with(|s| {
            let index = s.free.pop()?;
            s.in_flight += 1;
            Some(index)
        });
        let Some(index) = taken else {
            queue_allocated(device, body);
            return;
        };
        let slot: &Slot = &inner.slots[index];
        // SAFETY: the index came off the free list, so nobody else touches this slot's body
        // until its routine puts the slot back.
        unsafe {
            *slot.body.get() = Some(body);
        }
        let context: *const Slot = slot;
        // SAFETY: the slot's item is idle (off the free list, its last routine finished with
        // it); the slot's storage lives until its routine has left the pool (it counts in
        // `in_flight`), even if this handle is dropped meanwhile.
        unsafe {
            IoQueueWorkItem(
                slot.item,
                Some(run_slot),
                DelayedWorkQueue,
                context.cast_mut().cast(),
            )
        };
    }
}

impl Drop for WorkItemPool {
    fn drop(&mut self) {
        let inner = self.inner();
        let (idle, empty) = inner.state.with(|s| {
            s.closed = true;
            (core::mem::take(&mut s.free), s.in_flight == 0)
        });
        for index in idle {
            if let Some(slot) = inner.slots.get(index) {
                // SAFETY: an idle slot's item is not queued, and its routine (if one ran)
                // returned the slot as its last touch of the pool: freed once, here.
                unsafe { IoFreeWorkItem(slot.item) };
            }
        }
        if empty {
            // SAFETY: closed with nothing in flight: no routine will touch the storage again,
            // and this was the last handle; the Box leaked in `new`, reclaimed once.
            drop(unsafe { Box::from_raw(self.inner.as_ptr()) });
        }
    }
}

unsafe extern "C" fn run_slot(_device: PDEVICE_OBJECT, context: PVOID) {
    // SAFETY: `context` is a slot queued by `queue`; its storage lives until this routine
    // leaves the pool below (it counts in `in_flight`).
    let slot = unsafe { &*context.cast::<Slot>() };
    // SAFETY: the slot is ours until we put it back below.
    let body = unsafe { (*slot.body.get()).take() };
    if let Some(body) = body {
        body();
    }
    let (item, home, index) = (slot.item, slot.home, slot.index);
    // SAFETY: set in `new` to the slots' owner, alive while this routine is in flight.
    let inner = unsafe { &*home };
    // The routine's last touch of the pool: give the slot back, or, once the pool is closed,
    // leave it (and free the storage when this was the last routine in flight).
    let (free_own_item, free_storage) = inner.state.with(|s| {
        s.in_flight = s.in_flight.saturating_sub(1);
        if s.closed {
            (true, s.in_flight == 0)
        } else {
            s.free.push(index);
            (false, false)
        }
    });
    if free_storage {
        // SAFETY: closed with nothing else in flight and no handle left: nothing touches the
        // storage again; the Box leaked in `WorkItemPool::new`, reclaimed once.
        drop(unsafe { Box::from_raw(home.cast_mut()) });
    }
    if free_own_item {
        // SAFETY: this routine's own work item, which the kernel lets its routine free; the
        // pool is closed, so nothing queues it again, and the handle's drop did not free it
        // (it was not idle).
        unsafe { IoFreeWorkItem(item) };
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
