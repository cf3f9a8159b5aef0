//! One synchronous METHOD_BUFFERED device control to another device object, as a driver sends
//! it (IoBuildDeviceIoControlRequest, IofCallDriver, wait for the event).
//!
//! Owns: building, sending and awaiting that IRP. Used by the wine-host host open (IOCTLs to
//! the test disk), the mount-manager requests of both builds and the wine-host mount-manager
//! stand-in's queries of a volume device. Never: called at raised IRQL or with a lock held.

use core::ptr::NonNull;

use wdk_sys::ntddk::{IoBuildDeviceIoControlRequest, IofCallDriver};
use wdk_sys::{DEVICE_OBJECT, IO_STATUS_BLOCK, PVOID};

use super::codes::nts;
use super::sync::KernelEvent;
use crate::platform::Event;
use crate::Status;

/// A METHOD_BUFFERED device control IRP to `device`, input (the first `input` bytes) and
/// output in `buf`; the bytes the device wrote, or its failure status.
///
/// IRQL: PASSIVE_LEVEL (it waits on an event; the IRP is a threaded one, completed into the
/// event and the status block by the I/O manager, which frees it).
///
/// # Safety
/// `device` is a referenced device object for the whole call.
pub(crate) unsafe fn device_control(
    device: NonNull<DEVICE_OBJECT>,
    code: u32,
    buf: &mut [u8],
    input: usize,
) -> Result<usize, Status> {
    // W9 (wine-host build): IoBuildDeviceIoControlRequest and the wait for it: PASSIVE_LEVEL.
    super::irql::check(crate::platform::irql::Call::HostSyncIo);
    let event = KernelEvent::try_new()?;
    let mut iosb = IO_STATUS_BLOCK::default();
    let len = buf.len() as u32;
    let ptr: PVOID = buf.as_mut_ptr().cast();
    // SAFETY: `buf` serves as input (first `input` bytes) and output, alive until the
    // request completed (we wait below); `event` and `iosb` live until then too.
    let irp = unsafe {
        IoBuildDeviceIoControlRequest(
            code,
            device.as_ptr(),
            ptr,
            input as u32,
            ptr,
            len,
            0,
            event.as_ptr(),
            &mut iosb,
        )
    };
    if irp.is_null() {
        return Err(Status::InsufficientResources);
    }
    // SAFETY: a complete IRP for `device`, referenced (contract); the I/O manager frees it on
    // completion.
    let status = unsafe { IofCallDriver(device.as_ptr(), irp) };
    let status = if status == nts::PENDING {
        event.wait();
        // SAFETY: the status block was written before the event was set.
        unsafe { iosb.__bindgen_anon_1.Status }
    } else {
        status
    };
    if status < 0 {
        return Err(Status::from_ntstatus(status as u32));
    }
    // W6: never more than the buffer holds, whatever a lower driver reports (the callers
    // slice their buffer with it).
    Ok((iosb.Information as usize).min(buf.len()))
}
