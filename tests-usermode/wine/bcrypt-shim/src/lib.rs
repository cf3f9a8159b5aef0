//! `bcryptprimitives.dll` stand-in for Wine 8.0: exports `ProcessPrng`, implemented with
//! advapi32's `SystemFunction036` (RtlGenRandom), which Wine has.
//!
//! Rust's std on Windows imports `ProcessPrng` from bcryptprimitives.dll, which Wine 8.0 does
//! not ship, so every std program fails to start there. Test-only (scripts/wine-e2e.sh copies
//! it next to the test programs); never shipped.
#![no_std]

use core::ffi::c_void;

#[link(name = "advapi32")]
extern "system" {
    /// RtlGenRandom: fills `length` bytes at `buffer`; returns 0 on failure.
    fn SystemFunction036(buffer: *mut c_void, length: u32) -> u8;
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    loop {}
}

/// `BOOL ProcessPrng(PBYTE pbData, SIZE_T cbData)`: fills `data[..length]` with random bytes.
/// Always TRUE on Windows; here FALSE when RtlGenRandom fails (std then panics, loudly).
///
/// # Safety
/// `data` must be valid for writes of `length` bytes (the caller's contract on Windows too).
#[no_mangle]
pub unsafe extern "system" fn ProcessPrng(data: *mut u8, length: usize) -> i32 {
    let mut done = 0usize;
    while done < length {
        let chunk = (length - done).min(u32::MAX as usize);
        // SAFETY: `data + done .. + chunk` lies inside the caller's buffer (`done + chunk <=
        // length`), which the caller guarantees writable.
        let ok = unsafe { SystemFunction036(data.add(done).cast(), chunk as u32) };
        if ok == 0 {
            return 0;
        }
        done += chunk;
    }
    1
}
