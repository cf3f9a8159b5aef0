//! What the ARM64 image needs that the x64 one does not: the run-time check that the CPU has
//! the ARMv8 crypto extension the image's AES is compiled for.
//!
//! Owns: the DriverEntry refusal on a CPU without it (sys/README.md "ARM64").
//! Never: chooses a cipher backend. The ARM64 image is built with `+aes` (and `--cfg aes_armv8`
//! for RustCrypto `aes`, sys/linux-cross.toml). `cpufeatures` cannot detect CPU features on
//! Windows/aarch64 and reports the compile-time feature, so the engine's hardware XTS (`aes-hw`)
//! runs `aese`/`aesd` unconditionally and never falls back to software. Loading on a CPU
//! without the extension would fault at the first encryption; the driver refuses to load
//! instead, and once it has loaded `crypto::backend()`'s `armv8-aes` is what runs.

use wdk_sys::ntddk::{DbgPrint, ExIsProcessorFeaturePresent};
use wdk_sys::{NTSTATUS, STATUS_NOT_SUPPORTED};

/// `PF_ARM_V8_CRYPTO_INSTRUCTIONS_AVAILABLE` (winnt.h): AES, SHA-1 and SHA-256 instructions.
const PF_ARM_V8_CRYPTO_INSTRUCTIONS_AVAILABLE: u32 = 30;

/// `Err(STATUS_NOT_SUPPORTED)` with a DbgPrint that says why when this CPU lacks the ARMv8 AES
/// instructions; `sc start` then fails with ERROR_NOT_SUPPORTED and nothing was created.
///
/// IRQL: PASSIVE_LEVEL (called first thing in DriverEntry).
pub(crate) fn require_aes_instructions() -> Result<(), NTSTATUS> {
    if !cfg!(target_feature = "aes") {
        // A build without `+aes`: `cpufeatures` reports no AES instructions, the portable
        // software path runs on any CPU, and crypto::backend() says `soft`.
        return Ok(());
    }
    // SAFETY: no preconditions; callable at any IRQL.
    let present = unsafe { ExIsProcessorFeaturePresent(PF_ARM_V8_CRYPTO_INSTRUCTIONS_AVAILABLE) };
    if present != 0 {
        return Ok(());
    }
    // SAFETY: NUL-terminated format without arguments.
    unsafe {
        DbgPrint(
            c"vcdirect: not loaded: this CPU lacks the ARMv8 crypto extension (AES instructions) that this ARM64 image requires\n"
                .as_ptr(),
        )
    };
    Err(STATUS_NOT_SUPPORTED)
}
