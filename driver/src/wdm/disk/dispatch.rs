//! The IRPs sent to a volume device: its dispatch routine and the cancel routine of the
//! requests the engine queues.
//!
//! Owns: holding the device's remove lock for each dispatch (tag: the IRP) and cancel call,
//! pending READ/WRITE/FLUSH_BUFFERS and IOCTL_DISK_VERIFY and handing them to
//! `Volume::dispatch` (the engine completes each exactly once), the handle count of
//! CREATE/CLOSE, and completing everything else here (the other device controls and PnP with
//! the portable answers `ioctl` hands over). Never:
//! builds an IOCTL reply or decides a PnP answer (`disk_ioctl` does, through `ioctl`) or decides
//! a cancel (the engine's `Volume::cancel` does).

use core::ptr::NonNull;
use core::sync::atomic::Ordering;

use wdk_sys::ntddk::IoReleaseCancelSpinLock;
use wdk_sys::{
    DEVICE_OBJECT, IRP, IRP_MJ_CLEANUP, IRP_MJ_CLOSE, IRP_MJ_CREATE, IRP_MJ_DEVICE_CONTROL,
    IRP_MJ_FLUSH_BUFFERS, IRP_MJ_PNP, IRP_MJ_READ, IRP_MJ_WRITE, NTSTATUS,
};

use super::super::codes::nts;
use super::super::irp::Irp;
use super::super::nt;
use super::device::{extension, remove_lock};
use super::ioctl::{disk_control, pnp_request};
use crate::platform::{RequestKind, UpperRequest};
use crate::Status;

/// True when `device` is a volume device (the control module dispatches to [`dispatch`]).
///
/// # Safety
/// `device` is a live device object of this driver, as the I/O manager passes it to a
/// dispatch routine.
pub(crate) unsafe fn is_volume_device(device: *mut DEVICE_OBJECT) -> bool {
    // SAFETY: a live device object of this driver (contract).
    unsafe { extension(device) }.is_some()
}

/// wine-host build: counts reads, so every other one is dispatched at virtual DISPATCH_LEVEL.
#[cfg(feature = "wine-host")]
static READ_TURN: core::sync::atomic::AtomicU32 = core::sync::atomic::AtomicU32::new(0);

/// Dispatch routine for every major function on a volume device.
///
/// # Safety
/// Called by the I/O manager with one of our volume devices and an IRP for it.
pub(crate) unsafe fn dispatch(device: *mut DEVICE_OBJECT, irp: *mut IRP) -> NTSTATUS {
    let Some(irp_ptr) = NonNull::new(irp) else {
        return nt(Status::InvalidParameter);
    };
    // SAFETY: the IRP is ours until completed (contract).
    let mut request = unsafe { Irp::from_raw(irp_ptr) };
    // SAFETY: one of our devices, as the I/O manager passed it (contract).
    let Some(ext) = (unsafe { extension(device) }) else {
        request.complete(Status::InvalidDeviceRequest, 0);
        return nt(Status::InvalidDeviceRequest);
    };
    let major = u32::from(request.major_function());
    // W9, wine-host build: read and write dispatch runs at virtual DISPATCH_LEVEL for the rest
    // of this routine, because Windows may call a disk's read/write dispatch there (a caller
    // above that holds a spin lock, or a completion routine that resubmits). Anything the
    // engine then does that needs PASSIVE_LEVEL (a wait, a mapping, a Zw* call) is reported.
    // Every other read is left at PASSIVE_LEVEL, where Windows usually dispatches it, so the
    // engine issues small reads on this thread (docs/design.md §5) under Wine too.
    #[cfg(feature = "wine-host")]
    let _dispatch_level = (major == IRP_MJ_WRITE
        || (major == IRP_MJ_READ && READ_TURN.fetch_add(1, Ordering::Relaxed).is_multiple_of(2)))
    .then(super::super::irql::Raised::to_dispatch);
    // A handle's cleanup never fails: it completes here, before the remove lock, touching
    // nothing of the volume (after a forced dismount with handles open the lock is released
    // for good, and a cleanup failed with STATUS_DELETE_PENDING would be a wrong answer).
    if major == IRP_MJ_CLEANUP {
        request.complete(Status::Success, 0);
        return nt(Status::Success);
    }
    // SAFETY: the live extension of our volume device: the device is not deleted while the
    // I/O manager dispatches to it, and its extension goes with it.
    let lock = unsafe { remove_lock(ext) };
    // The tag is the IRP; the guard releases with the same tag when this function returns.
    let Ok(_guard) = lock.acquire_tagged(irp.cast()) else {
        // A close never fails either: once the volume is gone there is no handle count to
        // keep, so it succeeds without touching the (released) volume.
        if major == IRP_MJ_CLOSE {
            request.complete(Status::Success, 0);
            return nt(Status::Success);
        }
        request.complete(nts::DELETE_PENDING, 0);
        return nt(nts::DELETE_PENDING);
    };
    // SAFETY: while we hold the remove lock, `volume` is the live reference set by `create`
    // (dismount clears it only after release-and-wait).
    let mounted = unsafe { (*ext).volume };
    // SAFETY: as above: a live `MountedVolume` for as long as we hold the lock.
    let mounted = unsafe { &*mounted };
    match major {
        IRP_MJ_READ | IRP_MJ_WRITE | IRP_MJ_FLUSH_BUFFERS => {
            // W9, wine-host build only: the fault switch of a wait in read dispatch (a bug of
            // that kind: this wait is reported as a wait at DISPATCH_LEVEL, with this site).
            // The event is set first, so it returns at once (an event that cannot be made
            // skips the deliberate violation).
            #[cfg(feature = "wine-host")]
            if major == IRP_MJ_READ && super::super::irql::Fault::WaitInReadDispatch.is_on() {
                use crate::platform::Event;
                if let Ok(event) = super::super::sync::KernelEvent::try_new() {
                    event.set();
                    event.wait();
                }
            }
            request.mark_pending();
            // While the engine queues it, IoCancelIrp reaches `cancel_queued`.
            request.set_cancel_routine(cancel_queued);
            // The engine completes it exactly once (a read or write without MDL reaches it as
            // a request without buffer and fails cleanly: R14).
            mounted.volume.dispatch(request);
            nts::PENDING
        }
        IRP_MJ_CREATE => {
            mounted.open_handles.fetch_add(1, Ordering::AcqRel);
            request.complete(Status::Success, 0);
            nt(Status::Success)
        }
        IRP_MJ_CLOSE => {
            let _ = mounted
                .open_handles
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
            request.complete(Status::Success, 0);
            nt(Status::Success)
        }
        IRP_MJ_DEVICE_CONTROL => {
            // W1, wine-host build only: the filesystem stand-in answers the dismount's FSCTLs.
            #[cfg(feature = "wine-host")]
            if let Some(status) = super::super::dismount::fs_stand_in(
                mounted.id,
                mounted.open_handles.load(Ordering::Acquire),
                request.ioctl_parameters().0,
            ) {
                request.complete(status, 0);
                return nt(status);
            }
            // W9, wine-host build: the fault switch VcdirectWineFaultVerifyAtApc runs VERIFY's
            // dispatch at virtual APC_LEVEL (as the paging path can send a device control on
            // Windows): it is pended and served all the same, nothing waits here.
            #[cfg(feature = "wine-host")]
            let _apc_level = (super::super::irql::Fault::VerifyAtApc.is_on()
                && request.ioctl_parameters().0 == crate::disk_ioctl::code::DISK_VERIFY)
                .then(super::super::irql::Raised::to_apc);
            // W6, W10, W11: IOCTL_DISK_VERIFY (FILE_ANY_ACCESS: any handle may send it) is
            // pended and read by the engine on a path's thread, in turn with the volume's
            // I/O, into a buffer allocated at mount: never a host read on the sender's thread
            // (a storage stack nested under the sender's, outside the mount's impersonation).
            // A short input is refused here; the engine checks the range and its length cap,
            // carries the range it checked, and serves one VERIFY per volume at a time (another
            // meanwhile waits its turn, cancellable, holding no place in the volume's I/O).
            if request.kind() == RequestKind::Verify {
                if let Err(status) = request.verify_range() {
                    request.complete(status, 0);
                    return nt(status);
                }
                request.mark_pending();
                // While the engine queues it, IoCancelIrp reaches `cancel_queued`.
                request.set_cancel_routine(cancel_queued);
                mounted.volume.dispatch(request);
                return nts::PENDING;
            }
            let (status, info) = disk_control(mounted, &mut request);
            request.complete(status, info);
            nt(status)
        }
        IRP_MJ_PNP => {
            // W10: a paging file on the volume is refused (VeraCrypt's STATUS_UNSUCCESSFUL),
            // the other usage notifications too; a minor code not handled is completed with
            // the status its sender set, untouched (the PnP rule; TargetDeviceRelation is one).
            // Nothing is passed down (the volume device is not in a PnP stack). PnP requests
            // arrive at PASSIVE_LEVEL; the IRP is ours since dispatch and is completed here
            // once, its Information 0.
            let status = pnp_request(&request);
            request.complete(status, 0);
            nt(status)
        }
        _ => {
            request.complete(Status::InvalidDeviceRequest, 0);
            nt(Status::InvalidDeviceRequest)
        }
    }
}

/// The cancel routine of a read, write, flush or VERIFY IRP while the engine queues it
/// (DRIVER_CANCEL):
/// a request still waiting completes with STATUS_CANCELLED, nothing issued (`Volume::cancel`).
///
/// IRQL: called at DISPATCH_LEVEL with the cancel spin lock held; runs the engine at the
/// IRQL of IoCancelIrp's caller (<= DISPATCH_LEVEL), where it only takes spin locks.
///
/// # Safety
/// Called by IoCancelIrp for an IRP whose routine `Irp::arm_cancel` installed on one of our
/// volume devices.
unsafe extern "C" fn cancel_queued(device: *mut DEVICE_OBJECT, irp: *mut IRP) {
    // W9, wine-host build: the whole routine at virtual DISPATCH_LEVEL (IoCancelIrp calls it
    // holding the cancel spin lock; after its release the routine runs at the IRQL of
    // IoCancelIrp's caller, which may be DISPATCH_LEVEL).
    let _dispatch_level = super::super::irql::Raised::to_dispatch();
    // SAFETY: IoCancelIrp passes the IRP it is cancelling; the engine still owns it.
    let irql = unsafe { (*irp).CancelIrql };
    // SAFETY: IoCancelIrp holds the cancel spin lock and stored the IRQL to return to in the
    // IRP; a cancel routine releases it first.
    unsafe { IoReleaseCancelSpinLock(irql) };
    // SAFETY: IoCancelIrp passes the IRP's device, one of our volume devices (contract).
    let Some(ext) = (unsafe { extension(device) }) else {
        return;
    };
    // The engine still owns the IRP (its routine was installed and never taken back), so the
    // volume is mounted and dismount waits for the request: the remove lock is not released
    // for deletion yet. Holding it for this call keeps the volume while the engine completes
    // the IRP (possibly on another thread) and dismount proceeds.
    let tag = cancel_queued as *mut core::ffi::c_void;
    // SAFETY: the live extension of our volume device (as above: it outlives the request).
    let lock = unsafe { remove_lock(ext) };
    let Ok(_guard) = lock.acquire_tagged(tag) else {
        return; // unreachable: no request of a volume outlives its dismount
    };
    // SAFETY: as in `dispatch`: `volume` is the live reference `create` set while we hold
    // the remove lock.
    let mounted = unsafe { (*ext).volume };
    // SAFETY: as above: a live `MountedVolume` for as long as we hold the lock.
    let mounted = unsafe { &*mounted };
    mounted.volume.cancel(irp as usize);
}
