//! The wine-host build's host lookup (Wine 8.0): the host is the first device of a named
//! driver in the same winedevice process (docs/build-on-linux.md explains why ZwCreateFile
//! cannot be used there).
//!
//! Owns: finding and referencing that driver object, and the synchronous device controls the
//! host open sends to its device. Never: built into the product image.

use alloc::vec::Vec;
use core::ptr::NonNull;

use wdk_sys::ntddk::{ObReferenceObjectByName, ObfDereferenceObject};
use wdk_sys::{_MODE::KernelMode, DRIVER_OBJECT, OBJ_CASE_INSENSITIVE, PVOID};

use super::super::codes::nts;
use super::super::device_control::device_control;
use super::super::remove_lock::RemoveLock;
use super::super::strings::OwnedUnicode;
use super::open::{probe, OpenParams};
use super::KernelHost;
use crate::platform::{HostKind, HostLimits};
use crate::volume::host_type::{check_host_type, HostTypeFacts};
use crate::Status;

/// IO_TYPE_DRIVER: the Type field of a DRIVER_OBJECT.
const IO_TYPE_DRIVER: i16 = 4;

pub(super) fn open(params: &OpenParams<'_>) -> Result<KernelHost, Status> {
    if params.wine_driver_name.is_empty() {
        return Err(Status::InvalidParameter);
    }
    // W6: the name is allocated fallibly.
    const PREFIX: &str = "\\Driver\\";
    let mut name: Vec<u16> = crate::io::try_vec(PREFIX.len() + params.wine_driver_name.len())?;
    name.extend(PREFIX.encode_utf16());
    name.extend_from_slice(params.wine_driver_name);
    let mut unicode = OwnedUnicode::new(name)?;
    // W6: the child requests' remove lock, allocated fallibly before anything needs undoing.
    let children = RemoveLock::try_new()?;
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
    // W11: the host's device must be one a volume can live on (a disk's type, never one of
    // our own volumes); the test disk can be told to report another type to show it.
    // SAFETY: the driver's device lives as long as the referenced driver object.
    let dev = unsafe { device.as_ref() };
    let facts = HostTypeFacts {
        kind: HostKind::RawDevice,
        device_type: dev.DeviceType,
        directory: false,
        pipe: false,
        own_volume: core::ptr::eq(dev.DriverObject, params.own_driver),
    };
    if let Err(status) = check_host_type(&facts) {
        // SAFETY: the reference taken above.
        unsafe { ObfDereferenceObject(object) };
        return Err(status);
    }
    // W6, W11: the device referenced for the mount's lifetime and the child-operation slots
    // sized for its stack; a failure fails the mount with nothing left behind.
    // SAFETY: the driver's device lives as long as the referenced driver object.
    let slots = match unsafe { KernelHost::reference_device(device) } {
        Ok(slots) => slots,
        Err(status) => {
            // SAFETY: the reference taken above.
            unsafe { ObfDereferenceObject(object) };
            return Err(status);
        }
    };
    let mut host = KernelHost {
        kind: HostKind::RawDevice,
        size: 0,
        limits: HostLimits::unlimited(),
        device,
        slots,
        file: core::ptr::null_mut(),
        driver,
        children,
        write_protected: false,
        // The Wine build's host is a test disk's device, never a file on one of our volumes.
        below: None,
    };
    let probed =
        // SAFETY: the device of the driver referenced above, until `host` drops.
        probe(HostKind::RawDevice, |code, buf, input| unsafe { device_control(device, code, buf, input) });
    host.describe(probed.size, probed)?;
    Ok(host)
}
