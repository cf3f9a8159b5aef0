//! XTS-AES-256 over 512-byte data units, and the volume key that can be erased safely.
//!
//! Owns: the data-unit cipher (batched for speed), the key schedule's lifetime (erase with
//! rundown, zeroize) and the encryption pool that splits large buffers across CPUs.
//! Never: decides which unit number a buffer has (callers pass the absolute data-unit number,
//! docs/design.md §4) or touches requests.
//!
//! Backend, chosen deliberately: RustCrypto `aes` 0.8 picks AES-NI at run time on x86_64
//! (CPUID through `cpufeatures`). AES-NI uses XMM registers only, which a Windows x64 driver may
//! use without saving extended state; `aes` 0.9 would prefer VAES on YMM/ZMM, which needs
//! KeSaveExtendedProcessorState around every call and measured slower here unless built for
//! the exact CPU. On aarch64 `aes` 0.8 uses the ARMv8 AES instructions only when built with
//! `--cfg aes_armv8` (and then when `cpufeatures` reports them); without the cfg it always runs
//! its software backend. On Windows `cpufeatures` cannot detect them and reports the compile-time
//! `+aes`, so the ARM64 driver is built with both flags and checks the CPU itself at DriverEntry
//! (`wdm/arm64.rs`, ExIsProcessorFeaturePresent): see [`backend`].

mod key;
mod pool;
mod threads;
mod xts;

pub use key::{KeyGuard, VolumeKey};
pub use pool::{Cipher, CryptoPool};
pub use threads::{encryption_threads, thread_group, MAX_THREADS_GROUPS, MAX_THREADS_ONE_GROUP};
pub use xts::{XtsCipher, DATA_UNIT};

/// Why a crypto operation did not run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CryptoError {
    /// The key was erased or its erasure has begun (the block flag is set).
    KeyErased,
}

#[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
cpufeatures::new!(aes_hw, "aes");
#[cfg(target_arch = "aarch64")]
cpufeatures::new!(aes_hw, "aes");

/// Which AES implementation runs on this CPU: `aes-ni`, `armv8-aes` or `soft`.
///
/// The same decision `aes` 0.8 makes: on x86_64 AES-NI when CPUID reports it; on aarch64 the
/// ARMv8 instructions only in a `--cfg aes_armv8` build and when `cpufeatures` reports them
/// (Linux: at run time; Windows: the compile-time `+aes`, made true by the DriverEntry check).
pub fn backend() -> &'static str {
    #[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
    {
        if aes_hw::get() {
            return "aes-ni";
        }
    }
    #[cfg(target_arch = "aarch64")]
    {
        if cfg!(aes_armv8) && aes_hw::get() {
            return "armv8-aes";
        }
    }
    "soft"
}

/// True when AES runs in hardware ([`backend`] is not `soft`): a short decryption may then run
/// in a host completion routine (the direct path's reads issued on the dispatching thread).
pub fn hardware_aes() -> bool {
    backend() != "soft"
}
