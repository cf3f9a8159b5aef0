//! XTS-AES-256 over 512-byte data units, and the volume key that can be erased safely.
//!
//! Owns: the data-unit cipher (batched for speed), the key schedule's lifetime (erase with
//! rundown, zeroize) and the encryption pool that splits large buffers across CPUs.
//! Never: decides which unit number a buffer has (callers pass the absolute data-unit number,
//! docs/design.md §4) or touches requests.
//!
//! Backend, chosen deliberately: the CPU's AES instructions through `vcdirect-aes-hw` (AES-NI on
//! XMM registers on x86_64, which a Windows x64 driver may use without saving extended state;
//! the ARMv8 AES instructions on ARM64), checked at run time (CPUID through `cpufeatures`; on
//! Windows ARM64 `cpufeatures` reports the build's `+aes`, which the driver checks itself at
//! DriverEntry with ExIsProcessorFeaturePresent, `wdm/arm64.rs`). Where they are missing,
//! RustCrypto `aes` 0.8 runs (its software backend; on aarch64 its ARMv8 backend only in a
//! `--cfg aes_armv8` build). `aes` 0.9 would prefer VAES on YMM/ZMM, which needs
//! KeSaveExtendedProcessorState around every call. See [`backend`].

mod algorithm;
mod cascade;
pub mod ciphers;
mod key;
mod pool;
mod threads;
mod xts;

pub use algorithm::{
    Algorithm, BlockAlg, AES, ALGORITHMS, KEY_PER_CIPHER, MAX_CIPHERS, MAX_KEY_AREA,
};
pub use cascade::VolumeCipher;
#[cfg(feature = "fault-switches")]
pub use key::KeyBlockWatch;
pub use key::{KeyBlock, KeyGuard, VolumeKey};
pub use pool::{Cipher, CryptoPool, MIN_PIECE, MIN_PIECE_SLOW};
pub use threads::{encryption_threads, thread_group, MAX_THREADS_GROUPS, MAX_THREADS_ONE_GROUP};
pub use vcdirect_aes_hw::WideVectors;
pub use xts::{burn_stack, burn_thread_stack, XtsCipher, DATA_UNIT};

/// Smallest buffer the kernel runs on the wide (VAES) path: below it the processor-state save
/// and restore that the path needs there would eat the gain. Measured here: XSAVE plus XRSTOR
/// of the AVX and AVX-512 state take about 75 ns (user mode, the instructions alone), and the
/// wide path saves about 0.2 us per 4 KiB; what KeSaveExtendedProcessorState adds around the
/// instructions (it may allocate its save area) is measured only on Windows. At 64 KiB the
/// gain is about 3 us, an order of magnitude above the save's instructions.
pub const WIDE_MIN_KERNEL: usize = 64 << 10;

/// Why a crypto operation did not run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CryptoError {
    /// The key was erased or its erasure has begun (the block flag is set).
    KeyErased,
    /// A short path (`CryptoPool::run_short`) was asked to run an algorithm other than AES
    /// alone on the AES instructions.
    NotHardwareAes,
}

/// Which AES implementation runs on this CPU: `aes-ni`, `armv8-aes` (the hardware path), or
/// `soft` (no AES instructions: `aes` 0.8's software backend).
pub fn backend() -> &'static str {
    match vcdirect_aes_hw::XtsKeys::instructions() {
        "none" => "soft",
        hw => hw,
    }
}

/// True when AES runs in hardware ([`backend`] is not `soft`): a short decryption may then run
/// in a host completion routine (the direct path's reads issued on the dispatching thread).
pub fn hardware_aes() -> bool {
    backend() != "soft"
}
