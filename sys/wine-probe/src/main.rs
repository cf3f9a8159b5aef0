//! Opens `\\.\vcdirect`, sends one IOCTL and closes the handle, printing what happened.
//!
//! Until the lead wires the ABI, the driver completes every IOCTL with
//! STATUS_INVALID_DEVICE_REQUEST, which Win32 reports as ERROR_INVALID_FUNCTION (1).
//! Exit code 0 when open, IOCTL result and close all match that, 1 otherwise.
//! `no_std` (mingw's CRT calls `main`, output through msvcrt's `printf`): Rust's std imports
//! bcryptprimitives.dll, which Wine 8.0 does not have.
#![no_std]
#![no_main]

use core::ffi::{c_char, c_int, c_void};

type Handle = *mut c_void;

const GENERIC_READ: u32 = 0x8000_0000;
const GENERIC_WRITE: u32 = 0x4000_0000;
const OPEN_EXISTING: u32 = 3;
const INVALID_HANDLE_VALUE: Handle = -1isize as Handle;
const ERROR_INVALID_FUNCTION: u32 = 1;
/// CTL_CODE(FILE_DEVICE_UNKNOWN, 0x800, METHOD_BUFFERED, FILE_ANY_ACCESS).
const PROBE_IOCTL: u32 = (0x22 << 16) | (0x800 << 2);

#[link(name = "kernel32")]
extern "system" {
    fn CreateFileW(
        name: *const u16,
        access: u32,
        share: u32,
        security: *mut c_void,
        disposition: u32,
        flags: u32,
        template: Handle,
    ) -> Handle;
    fn DeviceIoControl(
        device: Handle,
        code: u32,
        in_buffer: *mut c_void,
        in_size: u32,
        out_buffer: *mut c_void,
        out_size: u32,
        returned: *mut u32,
        overlapped: *mut c_void,
    ) -> i32;
    fn CloseHandle(handle: Handle) -> i32;
    fn GetLastError() -> u32;
    fn ExitProcess(code: u32) -> !;
}

extern "C" {
    fn printf(format: *const c_char, ...) -> c_int;
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    // SAFETY: ends the process; nothing runs after it.
    unsafe { ExitProcess(2) }
}

/// Prints a NUL-terminated message.
fn say(message: &core::ffi::CStr) {
    // SAFETY: "%s" with one NUL-terminated string.
    unsafe { printf(c"vcdirect-probe: %s\n".as_ptr(), message.as_ptr()) };
}

/// Called by mingw's CRT startup.
#[no_mangle]
pub extern "C" fn main(_argc: c_int, _argv: *const *const c_char) -> c_int {
    let name: [u16; 13] = {
        let mut out = [0u16; 13];
        for (o, b) in out.iter_mut().zip(br"\\.\vcdirect") {
            *o = u16::from(*b);
        }
        out
    };
    // SAFETY: `name` is NUL-terminated UTF-16 (12 characters and the zero left at the end);
    // the other pointers are NULL where optional.
    let device = unsafe {
        CreateFileW(
            name.as_ptr(),
            GENERIC_READ | GENERIC_WRITE,
            0,
            core::ptr::null_mut(),
            OPEN_EXISTING,
            0,
            core::ptr::null_mut(),
        )
    };
    if device == INVALID_HANDLE_VALUE {
        // SAFETY: no preconditions.
        let error = unsafe { GetLastError() };
        // SAFETY: "%u" with one unsigned int.
        unsafe { printf(c"vcdirect-probe: open failed, error %u\n".as_ptr(), error) };
        return 1;
    }
    say(c"open ok");

    let mut input = [0u8; 16];
    let mut output = [0u8; 16];
    let mut returned = 0u32;
    // SAFETY: `device` is an open handle; buffers and sizes match; synchronous call.
    let ok = unsafe {
        DeviceIoControl(
            device,
            PROBE_IOCTL,
            input.as_mut_ptr().cast(),
            input.len() as u32,
            output.as_mut_ptr().cast(),
            output.len() as u32,
            &mut returned,
            core::ptr::null_mut(),
        )
    };
    let error = if ok == 0 {
        // SAFETY: no preconditions.
        unsafe { GetLastError() }
    } else {
        0
    };
    // SAFETY: format and arguments match (%#x, %d, %u).
    unsafe {
        printf(
            c"vcdirect-probe: ioctl %#x -> ok=%d error=%u\n".as_ptr(),
            PROBE_IOCTL,
            ok,
            error,
        )
    };

    // SAFETY: `device` is open and closed exactly once.
    let closed = unsafe { CloseHandle(device) } != 0;
    say(if closed { c"close ok" } else { c"close failed" });

    if ok == 0 && error == ERROR_INVALID_FUNCTION && closed {
        say(c"PASS");
        0
    } else {
        say(c"FAIL");
        1
    }
}
