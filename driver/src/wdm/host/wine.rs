//! The wine-host build's host lookup (Wine 8.0): the host is the first device of a named
//! driver in the same winedevice process (docs/build-on-linux.md explains why ZwCreateFile
//! cannot be used there).
//!
//! Owns: finding and referencing that driver object, and the synchronous device controls the
//! host open sends to its device. Never: built into the product image.

use alloc::vec::Vec;
use core::ptr::NonNull;

use wdk_sys::ntddk::{
    IoBuildDeviceIoControlRequest, IofCallDriver, ObReferenceObjectByName, ObfDereferenceObject,
};
use wdk_sys::{
    _MODE::KernelMode, DEVICE_OBJECT, DRIVER_OBJECT, IO_STATUS_BLOCK, OBJ_CASE_INSENSITIVE, PVOID,
};

use super::super::codes::nts;
use super::super::remove_lock::RemoveLock;
use super::super::strings::OwnedUnicode;
use super::super::sync::KernelEvent;
use super::open::{probe, OpenParams};
use super::KernelHost;
use crate::platform::{Event, HostKind, HostLimits};
use crate::Status;

/// IO_TYPE_DRIVER: the Type field of a DRIVER_OBJECT.
const IO_TYPE_DRIVER: i16 = 4;

pub(super) fn open(params: &OpenParams<'_>) -> Result<KernelHost, Status> {
    if params.wine_driver_name.is_empty() {
        return Err(Status::InvalidParameter);
    }
    let mut name: Vec<u16> = "\\Driver\\".encode_utf16().collect();
    name.extend_from_slice(params.wine_driver_name);
    let mut unicode = OwnedUnicode::new(name)?;
    let mut object: PVOID = core::ptr::null_mut();
    // SAFETY: `unicode` is alive for the call; no access state, type or
    // parse context (Wine's implementation looks the name up among loaded drivers).
    let status = unsafe {
        ObReferenceObjectByName(
            unicode.as_mut(),
            OBJ_CASE_INSENSITIVE,
            core::ptr::null_mut(),
            0,
            core::ptr::null_mut(),
            KernelMode as i8,
            core::ptr::null_mut(),
            &mut object,
        )
    };
    if status < 0 || object.is_null() {
        return Err(nts::OBJECT_NAME_NOT_FOUND);
    }
    let driver = object.cast::<DRIVER_OBJECT>();
    // SAFETY: a referenced object, alive until we dereference it.
    let driver_ref = unsafe { &*driver };
    let (kind, device) = (driver_ref.Type, driver_ref.DeviceObject);
    // Wine 8.0 leaves a driver object's Type at 0; the name under \Driver\ already says
    // what it is, so 0 is accepted here (this module is the Wine build only).
    let device = match NonNull::new(device) {
        Some(d) if kind == IO_TYPE_DRIVER || kind == 0 => d,
        _ => {
            // SAFETY: the reference just taken.
            unsafe { ObfDereferenceObject(object) };
            return Err(nts::NO_SUCH_DEVICE);
        }
    };
    let mut host = KernelHost {
        kind: HostKind::RawDevice,
        size: 0,
        limits: HostLimits::unlimited(),
        device,
        file: core::ptr::null_mut(),
        driver,
        children: RemoveLock::new(),
    };
    let (size, sector, adapter) =
        // SAFETY: the device of the driver referenced above, until `host` drops.
        probe(|code, buf, input| unsafe { device_control(device, code, buf, input) });
    let size = size.ok_or(Status::InvalidDeviceRequest)?;
    let (size, limits) = KernelHost::describe(HostKind::RawDevice, size, sector, adapter);
    host.size = size;
    host.limits = limits;
    Ok(host)
}

/// A METHOD_BUFFERED device control IRP to `device`, input and output in `buf`.
///
/// # Safety
/// `device` is a referenced device object for the whole call.
pub(crate) unsafe fn device_control(
    device: NonNull<DEVICE_OBJECT>,
    code: u32,
    buf: &mut [u8],
    input: usize,
) -> Result<usize, Status> {
    let event = KernelEvent::new();
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
    Ok(iosb.Information as usize)
}
