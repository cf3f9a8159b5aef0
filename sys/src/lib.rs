//! vcdirect.sys: the WDM driver image.
//!
//! Everything lives in the engine crate's kernel glue (`vcdirect::wdm`); this crate only
//! supplies what a final image must define once: the exported `DriverEntry`, the global
//! allocator and the panic handler.
#![no_std]

use vcdirect::wdm::{driver_entry, on_panic, KernelAllocator};
use wdk_sys::{DRIVER_OBJECT, NTSTATUS, PCUNICODE_STRING};

#[global_allocator]
static ALLOCATOR: KernelAllocator = KernelAllocator;

#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    on_panic(info)
}

/// The image's entry point (/ENTRY:DriverEntry).
///
/// # Safety
/// Called only by the I/O manager, with its driver object and service registry path.
#[allow(unsafe_code)] // no_mangle: the loader finds the entry point by this exact name.
#[no_mangle]
pub unsafe extern "system" fn DriverEntry(
    driver: *mut DRIVER_OBJECT,
    registry_path: PCUNICODE_STRING,
) -> NTSTATUS {
    // SAFETY: forwarded unchanged from the I/O manager.
    unsafe { driver_entry(driver, registry_path) }
}
