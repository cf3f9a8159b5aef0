//! DriverEntry, Unload and the control device `\Device\vcdirect` (`\\.\vcdirect`).
//!
//! Owns: creating and deleting the control device and its symbolic link, the dispatch table,
//! and the load line in the debugger log.
//! Never: interprets IOCTLs yet: IRP_MJ_DEVICE_CONTROL completes with
//! STATUS_INVALID_DEVICE_REQUEST until the lead wires the ABI (`abi`).

use core::ptr::NonNull;
use core::sync::atomic::{AtomicPtr, Ordering};

use wdk_sys::ntddk::{
    DbgPrint, IoCreateDevice, IoCreateSymbolicLink, IoDeleteDevice, IoDeleteSymbolicLink,
};
use wdk_sys::{
    DEVICE_OBJECT, DRIVER_OBJECT, FILE_DEVICE_SECURE_OPEN, FILE_DEVICE_UNKNOWN, IRP,
    IRP_MJ_CLEANUP, IRP_MJ_CLOSE, IRP_MJ_CREATE, IRP_MJ_DEVICE_CONTROL, NTSTATUS, PCUNICODE_STRING,
};

use super::irp::Irp;
use super::strings::{unicode, utf16};
use super::{nt, pool};
use crate::platform::UpperRequest;
use crate::Status;

/// Pool tag of every allocation of the driver ("vcDr" in pool tools).
pub const DRIVER_TAG: u32 = u32::from_le_bytes(*b"vcDr");

static DEVICE_NAME: [u16; 16] = utf16("\\Device\\vcdirect");
static LINK_NAME: [u16; 20] = utf16("\\DosDevices\\vcdirect");

/// The control device, for Unload.
static CONTROL_DEVICE: AtomicPtr<DEVICE_OBJECT> = AtomicPtr::new(core::ptr::null_mut());

/// Which build this image is (see sys/README.md).
const BUILD: &core::ffi::CStr = if cfg!(feature = "wine-host") {
    c"wine-host"
} else {
    c"product"
};

/// The body of `DriverEntry` (the exported symbol lives in the `sys/` crate).
///
/// IRQL: PASSIVE_LEVEL, in the system process, as the I/O manager calls DriverEntry.
///
/// # Safety
/// `driver` is the driver object the I/O manager passed to DriverEntry.
pub unsafe fn driver_entry(
    driver: *mut DRIVER_OBJECT,
    _registry_path: PCUNICODE_STRING,
) -> NTSTATUS {
    let has_pool2 = pool::resolve();

    let mut device_name = unicode(&DEVICE_NAME);
    let mut device: *mut DEVICE_OBJECT = core::ptr::null_mut();
    // SAFETY: `driver` is our driver object (contract); the name is a static string; no
    // device extension; the out pointer is valid.
    let status = unsafe {
        IoCreateDevice(
            driver,
            0,
            &mut device_name,
            FILE_DEVICE_UNKNOWN,
            FILE_DEVICE_SECURE_OPEN,
            0,
            &mut device,
        )
    };
    if status < 0 {
        return status;
    }
    let mut link_name = unicode(&LINK_NAME);
    // SAFETY: both names describe static strings.
    let status = unsafe { IoCreateSymbolicLink(&mut link_name, &mut device_name) };
    if status < 0 {
        // SAFETY: `device` was created above and nothing else references it yet.
        unsafe { IoDeleteDevice(device) };
        return status;
    }
    CONTROL_DEVICE.store(device, Ordering::Release);

    // SAFETY: we own the driver object's dispatch table during DriverEntry.
    unsafe {
        let driver = &mut *driver;
        driver.MajorFunction[IRP_MJ_CREATE as usize] = Some(dispatch_create_close);
        driver.MajorFunction[IRP_MJ_CLOSE as usize] = Some(dispatch_create_close);
        driver.MajorFunction[IRP_MJ_CLEANUP as usize] = Some(dispatch_create_close);
        driver.MajorFunction[IRP_MJ_DEVICE_CONTROL as usize] = Some(dispatch_device_control);
        driver.DriverUnload = Some(driver_unload);
    }

    let backend = crate::crypto::backend();
    let allocator = if has_pool2 {
        c"ExAllocatePool2"
    } else {
        c"ExAllocatePoolWithTag"
    };
    // SAFETY: NUL-terminated format; `%.*s` gets an int length and a pointer to that many
    // bytes of a static str; `%s` arguments are NUL-terminated static C strings.
    unsafe {
        DbgPrint(
            c"vcdirect: loaded (%s build, crypto backend %.*s, pool %s)\n".as_ptr(),
            BUILD.as_ptr(),
            backend.len() as i32,
            backend.as_ptr(),
            allocator.as_ptr(),
        )
    };
    #[cfg(feature = "wine-host")]
    self_test(device);
    nt(Status::Success)
}

/// Runs the wrappers' self-test and prints its result (wine-host build only).
#[cfg(feature = "wine-host")]
fn self_test(device: *mut DEVICE_OBJECT) {
    let Some(device) = NonNull::new(device) else {
        return;
    };
    // SAFETY: the control device lives until Unload, and the platform is dropped at the end of
    // this function, after every thread and work item of the test finished.
    let platform = unsafe { super::KernelPlatform::new(device) };
    match super::selftest::run(&platform) {
        // SAFETY: NUL-terminated format with one `%u` argument.
        Ok(cpus) => unsafe {
            DbgPrint(
                c"vcdirect: self-test passed (%u cpus)\n".as_ptr(),
                cpus as u32,
            )
        },
        // SAFETY: `%.*s` gets an int length and a pointer to that many bytes of a static str.
        Err(step) => unsafe {
            DbgPrint(
                c"vcdirect: self-test FAILED: %.*s\n".as_ptr(),
                step.len() as i32,
                step.as_ptr(),
            )
        },
    };
}

unsafe extern "C" fn driver_unload(_driver: *mut DRIVER_OBJECT) {
    let mut link_name = unicode(&LINK_NAME);
    // SAFETY: the link was created in DriverEntry (Unload only runs after it succeeded).
    // Nothing to do if it fails: the link is gone or was never made.
    let _ = unsafe { IoDeleteSymbolicLink(&mut link_name) };
    let device = CONTROL_DEVICE.swap(core::ptr::null_mut(), Ordering::AcqRel);
    if !device.is_null() {
        // SAFETY: our control device; the I/O manager calls Unload only when no handle to it
        // is open and no work item holds it.
        unsafe { IoDeleteDevice(device) };
    }
    // SAFETY: NUL-terminated format without arguments.
    unsafe { DbgPrint(c"vcdirect: unloaded\n".as_ptr()) };
}

/// Takes ownership of the IRP the I/O manager passed to a dispatch routine.
///
/// # Safety
/// `irp` is the IRP passed to the dispatch routine being run.
unsafe fn owned(irp: *mut IRP) -> Option<Irp> {
    // SAFETY: per the contract the IRP is ours until completed, and wrapped only here.
    NonNull::new(irp).map(|irp| unsafe { Irp::from_raw(irp) })
}

unsafe extern "C" fn dispatch_create_close(_device: *mut DEVICE_OBJECT, irp: *mut IRP) -> NTSTATUS {
    // SAFETY: called by the I/O manager with an IRP for our device.
    if let Some(irp) = unsafe { owned(irp) } {
        irp.complete(Status::Success, 0);
    }
    nt(Status::Success)
}

unsafe extern "C" fn dispatch_device_control(
    _device: *mut DEVICE_OBJECT,
    irp: *mut IRP,
) -> NTSTATUS {
    // SAFETY: called by the I/O manager with an IRP for our device.
    if let Some(irp) = unsafe { owned(irp) } {
        irp.complete(Status::InvalidDeviceRequest, 0);
    }
    nt(Status::InvalidDeviceRequest)
}
