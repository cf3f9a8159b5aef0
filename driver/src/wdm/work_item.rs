//! I/O work items (IoAllocateWorkItem / IoQueueWorkItem): `Platform::queue_work_item`.
//!
//! Owns: running a closure once on the system's delayed worker threads, keeping the device
//! object (and so the driver image) referenced until it has run.
//! Never: runs the closure on the caller's thread.

use alloc::boxed::Box;

use wdk_sys::ntddk::{IoAllocateWorkItem, IoFreeWorkItem, IoQueueWorkItem};
use wdk_sys::{_WORK_QUEUE_TYPE::DelayedWorkQueue, PDEVICE_OBJECT, PIO_WORKITEM, PVOID};

struct Queued {
    item: PIO_WORKITEM,
    body: Box<dyn FnOnce() + Send>,
}

/// Runs `body` on a system worker thread (DelayedWorkQueue) at PASSIVE_LEVEL.
///
/// IRQL: callable at IRQL <= DISPATCH_LEVEL. `device` must be a device object of this driver
/// that outlives the call (IoQueueWorkItem then holds its own reference until `body` returned).
/// Panics (a bugcheck in the kernel) if the kernel has no memory for the work item: the
/// engine's `queue_work_item` has no error path yet (see sys/README.md).
pub(crate) fn queue_work_item(device: PDEVICE_OBJECT, body: Box<dyn FnOnce() + Send>) {
    // SAFETY: `device` is a live device object of this driver (function contract).
    let item = unsafe { IoAllocateWorkItem(device) };
    assert!(!item.is_null(), "vcdirect: IoAllocateWorkItem failed");
    let queued = Box::into_raw(Box::new(Queued { item, body }));
    // SAFETY: `item` was just allocated for `device`; `queued` is handed to `run_work_item`,
    // which reclaims it exactly once.
    unsafe { IoQueueWorkItem(item, Some(run_work_item), DelayedWorkQueue, queued.cast()) };
}

unsafe extern "C" fn run_work_item(_device: PDEVICE_OBJECT, context: PVOID) {
    // SAFETY: `context` is the `Queued` leaked by `queue_work_item` for this work item only.
    let queued = unsafe { Box::from_raw(context.cast::<Queued>()) };
    let Queued { item, body } = *queued;
    body();
    // SAFETY: the work item's routine may free its own item; nothing else references it.
    unsafe { IoFreeWorkItem(item) };
}
