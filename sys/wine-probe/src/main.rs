//! Opens `\\.\vcdirect`, sends IOCTLs and closes the handle, printing what happened:
//! - a code the ABI does not define: STATUS_INVALID_DEVICE_REQUEST, which Win32 reports as
//!   ERROR_INVALID_FUNCTION (1);
//! - IOCTL_MOUNT with a 16-byte input (the layout is 1272 bytes): the ABI parser's
//!   STATUS_INFO_LENGTH_MISMATCH, ERROR_BAD_LENGTH (24);
//! - a well-formed IOCTL_MOUNT naming a driver that is not loaded: the wine-host lookup
//!   (ObReferenceObjectByName) fails with STATUS_OBJECT_NAME_NOT_FOUND, ERROR_FILE_NOT_FOUND (2);
//! - IOCTL_GATES_GET with an 8-byte request: success, a 16-byte reply of ABI version 1.
//!
//! Exit code 0 when open, every IOCTL result and close all match, 1 otherwise.
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
const ERROR_FILE_NOT_FOUND: u32 = 2;
const ERROR_BAD_LENGTH: u32 = 24;
/// IOCTL_MOUNT: CTL_CODE(0x22, 0x800, METHOD_BUFFERED, FILE_READ_DATA | FILE_WRITE_DATA).
const IOCTL_MOUNT: u32 = (0x22 << 16) | (3 << 14) | (0x800 << 2);
/// IOCTL_GATES_GET: CTL_CODE(0x22, 0x804, METHOD_BUFFERED, FILE_ANY_ACCESS).
const IOCTL_GATES_GET: u32 = (0x22 << 16) | (0x804 << 2);
/// MountRequest::SIZE of ABI version 1.
const MOUNT_SIZE: usize = 1272;
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

    let mut pass = true;
    // An undefined code: ERROR_INVALID_FUNCTION.
    let mut small = [0u8; 16];
    let (ok, error, _) = ioctl(device, PROBE_IOCTL, &mut small, 16, 16);
    pass &= ok == 0 && error == ERROR_INVALID_FUNCTION;

    // A short mount buffer: the ABI parser's status, not a crash.
    let mut short = [0u8; 16];
    short[0] = 1; // version
    short[4] = 16; // size
    let (ok, error, _) = ioctl(device, IOCTL_MOUNT, &mut short, 16, 16);
    pass &= ok == 0 && error == ERROR_BAD_LENGTH;

    // A well-formed mount of a host driver that is not loaded.
    let mut mount = [0u8; MOUNT_SIZE];
    put32(&mut mount, 0, 1); // version
    put32(&mut mount, 4, MOUNT_SIZE as u32); // size
    put32(&mut mount, 12, 512); // sector size
    put32(&mut mount, 16, 131_072); // data offset
    put32(&mut mount, 24, 1 << 20); // data size
    mount[50] = 64; // key length
    put16s(&mut mount, 120, "\\Device\\VcTestDisk0");
    put16s(&mut mount, 120 + 1024, "vcprobenotloaded");
    let (ok, error, _) = ioctl(device, IOCTL_MOUNT, &mut mount, MOUNT_SIZE as u32, 16);
    pass &= ok == 0 && error == ERROR_FILE_NOT_FOUND;

    // Gates get: a 16-byte GatesMessage of version 1.
    let mut gates = [0u8; 16];
    gates[0] = 1;
    gates[4] = 8;
    let (ok, _, returned) = ioctl(device, IOCTL_GATES_GET, &mut gates, 8, 16);
    pass &= ok != 0 && returned == 16 && gates[0] == 1 && gates[4] == 16;

    // SAFETY: `device` is open and closed exactly once.
    let closed = unsafe { CloseHandle(device) } != 0;
    say(if closed { c"close ok" } else { c"close failed" });

    if pass && closed {
        say(c"PASS");
        0
    } else {
        say(c"FAIL");
        1
    }
}

fn put32(buf: &mut [u8], at: usize, v: u32) {
    buf[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

fn put16s(buf: &mut [u8], at: usize, s: &str) {
    for (i, b) in s.bytes().enumerate() {
        buf[at + 2 * i] = b;
    }
}

/// One synchronous METHOD_BUFFERED IOCTL over `buf` (input `in_len`, output `out_len`
/// bytes); prints and returns (ok, error, bytes returned).
fn ioctl(device: Handle, code: u32, buf: &mut [u8], in_len: u32, out_len: u32) -> (i32, u32, u32) {
    let mut returned = 0u32;
    let ptr: *mut c_void = buf.as_mut_ptr().cast();
    // SAFETY: `device` is an open handle; `buf` holds max(in_len, out_len) bytes (callers);
    // synchronous call.
    let ok = unsafe {
        DeviceIoControl(
            device,
            code,
            ptr,
            in_len,
            ptr,
            out_len,
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
    // SAFETY: format and arguments match (%#x, %d, %u, %u).
    unsafe {
        printf(
            c"vcdirect-probe: ioctl %#x -> ok=%d error=%u returned=%u\n".as_ptr(),
            code,
            ok,
            error,
            returned,
        )
    };
    (ok, error, returned)
}
