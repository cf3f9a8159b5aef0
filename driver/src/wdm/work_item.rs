//! I/O work items (IoAllocateWorkItem / IoQueueWorkItem): `Platform::work_items`.
//!
//! Owns: pools of IO_WORKITEMs allocated at mount (VeraCrypt 1.26.18 preallocates its
//! completion work items the same way), each slot carrying its payload `T` in place, so
//! queueing one allocates nothing and cannot fail: the completion stage never has more than
//! `max_work_items` queued or running, and its pool holds that many. A slot is free again as
//! soon as its routine has taken the payload out, before the routine runs it.
//! Never: runs the routine on the caller's thread.
//!
//! Teardown (a routine frees only its own IO_WORKITEM): dropping the pool's last handle marks
//! the pool closed and frees the items of idle slots (whose routines, if any ran, are past
//! their last touch of the pool: giving their slot back under the lock); a routine that takes
//! its payload after that frees its own item (IoFreeWorkItem from the item's own routine), and
//! whoever leaves the pool closed with nothing in flight (the handle's drop or the last
//! routine) frees the slots' storage, which nothing touches afterwards. The I/O manager reads
//! nothing of an IO_WORKITEM once it called its routine, and the device reference
//! IoQueueWorkItem takes keeps the image loaded until the routine returns.

use alloc::boxed::Box;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::cell::UnsafeCell;
use core::ptr::NonNull;

use wdk_sys::ntddk::{IoAllocateWorkItem, IoFreeWorkItem, IoQueueWorkItem};
use wdk_sys::{_WORK_QUEUE_TYPE::DelayedWorkQueue, PDEVICE_OBJECT, PIO_WORKITEM, PVOID};

use super::pool::{try_arc, try_box};
use super::sync::SpinLock;
use crate::platform::Lock;
use crate::Status;

/// One preallocated work item and what it runs next.
struct Slot<T: Send + 'static> {
    item: PIO_WORKITEM,
    /// Where the slot lives (set once, before the slot is ever queued).
    home: *const Inner<T>,
    /// Its index in `home.slots`.
    index: usize,
    /// Written by `queue` while the slot is off the free list, taken by the routine.
    payload: UnsafeCell<Option<T>>,
}

/// Which slots are idle, and whether the pool is closed (its last handle was dropped).
struct State {
    /// Indices of idle slots (capacity for all of them, reserved in `new`).
    free: Vec<usize>,
    /// Slots queued whose routine has not given them back yet.
    in_flight: usize,
    /// No more queueing; each routine still in flight frees its own item.
    closed: bool,
}

/// The slots and their bookkeeping. Freed by whoever sees it closed with nothing in flight.
struct Inner<T: Send + 'static> {
    /// Never resized: the kernel holds pointers to the slots.
    slots: Box<[Slot<T>]>,
    state: SpinLock<State>,
    /// What every item runs, on its payload.
    run: fn(T),
}

/// Work items that each carry a `T` to one routine: a handle on the slots, which closes the
/// pool when dropped.
///
/// IRQL: `queue` at IRQL <= DISPATCH_LEVEL; creation and drop at PASSIVE_LEVEL.
///
/// # Invariants
/// `inner` points to the `Inner` leaked by `new`, freed only once the pool is closed (by this
/// handle's drop) and nothing is in flight.
pub struct WorkItemPool<T: Send + 'static> {
    inner: NonNull<Inner<T>>,
}

// SAFETY: a slot's payload is touched only by whoever took its index off the free list (the
// queuer, then the routine it queued), so never by two threads at once; the state is under a
// spin lock; IO_WORKITEMs may be queued from any thread.
unsafe impl<T: Send + 'static> Send for WorkItemPool<T> {}
// SAFETY: as above.
unsafe impl<T: Send + 'static> Sync for WorkItemPool<T> {}

impl<T: Send + 'static> WorkItemPool<T> {
    /// Allocates `count` work items owned by `device` (a device of this driver that outlives
    /// the pool), each running `run` on what it is queued with. Every allocation is fallible:
    /// STATUS_INSUFFICIENT_RESOURCES, and what was made is freed.
    pub fn new(device: PDEVICE_OBJECT, count: usize, run: fn(T)) -> Result<Arc<Self>, Status> {
        let mut slots: Vec<Slot<T>> = crate::io::try_vec(count)?;
        let mut free = crate::io::try_vec(count)?;
        for index in 0..count {
            slots.push(Slot {
                item: core::ptr::null_mut(),
                home: core::ptr::null(),
                index,
                payload: UnsafeCell::new(None),
            });
            free.push(index);
        }
        // The storage first (nothing to undo when it fails), then the work items in place.
        // `into_boxed_slice` does not reallocate: the length equals the reserved capacity.
        let mut inner = try_box(Inner {
            slots: slots.into_boxed_slice(),
            state: SpinLock::new(State {
                free,
                in_flight: 0,
                closed: false,
            }),
            run,
        })?;
        let home: *const Inner<T> = &*inner;
        for at in 0..inner.slots.len() {
            // SAFETY: `device` is a live device object of this driver (contract).
            let item = unsafe { IoAllocateWorkItem(device) };
            if item.is_null() {
                for slot in inner.slots.iter().take(at) {
                    // SAFETY: allocated above, never queued, freed once; the storage is then
                    // dropped with `inner`.
                    unsafe { IoFreeWorkItem(slot.item) };
                }
                return Err(Status::InsufficientResources);
            }
            if let Some(slot) = inner.slots.get_mut(at) {
                slot.item = item;
                slot.home = home;
            }
        }
        let pool = WorkItemPool {
            inner: NonNull::from(Box::leak(inner)),
        };
        // A failure drops `pool`: its drop frees every (idle) item and the storage.
        try_arc(pool)
    }

    fn inner(&self) -> &Inner<T> {
        // SAFETY: the storage is freed only once the pool is closed, which happens in this
        // handle's drop, so it is alive while `self` is (type invariant).
        unsafe { self.inner.as_ref() }
    }

    /// Runs the pool's routine on `payload` on a system worker thread (DelayedWorkQueue) at
    /// PASSIVE_LEVEL. Allocates nothing. Hands `payload` back when every item is queued or
    /// still handing its payload over (the caller broke its bound).
    pub fn queue(&self, payload: T) -> Result<(), T> {
        let inner = self.inner();
        let taken = inner.state.with(|s| {
            if s.closed {
                return None;
            }
            let index = s.free.pop()?;
            s.in_flight += 1;
            Some(index)
        });
        let Some(slot) = taken.and_then(|index| inner.slots.get(index)) else {
            return Err(payload);
        };
        // SAFETY: the index came off the free list, so nobody else touches this slot's payload
        // until its routine takes it.
        unsafe {
            *slot.payload.get() = Some(payload);
        }
        let context: *const Slot<T> = slot;
        super::irql::check(crate::platform::irql::Call::QueueWorkItem);
        // SAFETY: the slot's item is not queued (off the free list: its last routine, if any,
        // has been called and gave the slot back; the I/O manager reads nothing of an item
        // once it called its routine); the slot's storage lives until its routine has given it
        // back (it counts in `in_flight`), even if this handle is dropped meanwhile.
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
}

impl<T: Send + 'static> crate::platform::WorkItems<T> for Arc<WorkItemPool<T>> {
    fn queue(&self, item: T) -> Result<(), T> {
        WorkItemPool::queue(self, item)
    }
}

impl<T: Send + 'static> Drop for WorkItemPool<T> {
    fn drop(&mut self) {
        let inner = self.inner();
        // The idle items are freed under the lock (IoFreeWorkItem is allowed at DISPATCH_LEVEL):
        // once it is released, the last routine in flight may free the storage.
        let empty = inner.state.with(|s| {
            s.closed = true;
            for index in core::mem::take(&mut s.free) {
                if let Some(slot) = inner.slots.get(index) {
                    // SAFETY: an idle slot's item is not queued, and its routine (if one ran)
                    // gave the slot back as its last touch of the pool: freed once, here.
                    unsafe { IoFreeWorkItem(slot.item) };
                }
            }
            s.in_flight == 0
        });
        if empty {
            // SAFETY: closed with nothing in flight: no routine touches the storage again, and
            // this was the last handle; the Box leaked in `new`, reclaimed once.
            drop(unsafe { Box::from_raw(self.inner.as_ptr()) });
        }
    }
}

unsafe extern "C" fn run_slot<T: Send + 'static>(_device: PDEVICE_OBJECT, context: PVOID) {
    // SAFETY: `context` is a slot queued by `queue`; its storage lives until this routine
    // gives the slot back below (it counts in `in_flight`).
    let slot = unsafe { &*context.cast::<Slot<T>>() };
    // W9 (wine-host build): a work item routine starts at PASSIVE_LEVEL; a level found under
    // its thread's key is a stale entry, reported.
    super::irql::check_entered_at_passive();
    // SAFETY: the slot is ours until we give it back below.
    let payload = unsafe { (*slot.payload.get()).take() };
    let (item, home, index) = (slot.item, slot.home, slot.index);
    // SAFETY: set in `new` to the slots' owner, alive while this routine is in flight.
    let inner = unsafe { &*home };
    let run = inner.run;
    // The routine's last touch of the pool, before it runs the payload (so whoever may queue
    // next finds an idle slot): give the slot back, or, once the pool is closed, keep it
    // (freeing the storage when this was the last routine in flight).
    let (free_own_item, free_storage) = inner.state.with(|s| {
        s.in_flight = s.in_flight.saturating_sub(1);
        if s.closed {
            (true, s.in_flight == 0)
        } else {
            // Never grows: capacity for every slot was reserved in `new`.
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
    if let Some(payload) = payload {
        run(payload);
    }
    // W9 (wine-host build): a work item routine returns at PASSIVE_LEVEL.
    super::irql::check_returned_at(crate::platform::irql::Irql::Passive);
}
