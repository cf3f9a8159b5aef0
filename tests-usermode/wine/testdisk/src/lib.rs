//! probe
#![no_std]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! { loop {} }
/// entry
#[no_mangle]
pub extern "system" fn DriverEntry(_d: *mut wdk_sys::DRIVER_OBJECT, _r: wdk_sys::PCUNICODE_STRING) -> wdk_sys::NTSTATUS { 0 }
