//! The driver's panic policy: report where, then stop the machine.
//!
//! A panic means an engine invariant broke (the engine returns errors for bad input, it never
//! panics on it). Continuing could corrupt a volume, so, as kernel convention requires for an
//! unrecoverable driver state, the handler bugchecks after printing the location.

use core::panic::PanicInfo;

use wdk_sys::ntddk::{DbgPrint, KeBugCheckEx};

/// Bugcheck code of a vcdirect panic: the ASCII tag "VCDP" (recognizable in crash dumps).
pub const PANIC_BUGCHECK: u32 = u32::from_be_bytes(*b"VCDP");

/// Prints the panic location with DbgPrint and bugchecks. Called by `#[panic_handler]` in sys/.
pub fn on_panic(info: &PanicInfo<'_>) -> ! {
    let (file, line) = info.location().map_or(("?", 0), |l| (l.file(), l.line()));
    let message = info.message().as_str().unwrap_or("(formatted message)");
    // SAFETY: the format string is NUL-terminated; each `%.*s` gets an int length and a
    // pointer to that many bytes of a `&'static str`/`&str` that outlives the call.
    unsafe {
        DbgPrint(
            c"vcdirect: panic at %.*s:%u: %.*s\n".as_ptr(),
            file.len() as i32,
            file.as_ptr(),
            line,
            message.len() as i32,
            message.as_ptr(),
        )
    };
    // SAFETY: KeBugCheckEx stops the system; parameters are informational only.
    unsafe { KeBugCheckEx(PANIC_BUGCHECK, u64::from(line), 0, 0, 0) }
}
