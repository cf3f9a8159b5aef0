//! XTS-AES-256 on the CPU's AES instructions, with key schedules built where they live.
//!
//! Owns: the hardware data-unit cipher (AES-NI on XMM registers on x86_64, the ARMv8 AES
//! instructions on aarch64), its run-time CPU check and its round keys ([`XtsKeys`]: expanded
//! in place in the caller's block, zeroized on drop).
//! Never: decides unit numbers, touches requests, or runs without the instructions it needs
//! (a key that could not be set on this CPU refuses to run; the engine then uses its portable
//! cipher).
//!
//! Why this crate may use `unsafe`: the engine (`vcdirect`) denies `unsafe_code`, and only its
//! kernel glue (`driver/src/wdm`) is exempt. CPU intrinsics need `unsafe` in two places only:
//! calling a `#[target_feature]` function from code built without that feature (after the
//! run-time check), and the 16-byte loads and stores between memory and vector registers. Both
//! live here, each with a `# Safety` contract or a `// SAFETY:` comment, so that the engine
//! keeps its rule (docs/design.md §2 names this crate as the one exception outside the glue).
//!
//! Vector state: only 128-bit XMM (x86_64) or NEON (aarch64) registers, which a Windows driver
//! may use without saving extended state. Nothing here is built with AVX or later enabled, so
//! the image checker's "no VEX/EVEX" rule holds for every function of this crate.
#![no_std]
#![allow(unsafe_code)]

#[cfg(target_arch = "aarch64")]
mod arm;
mod schedule;
#[cfg(target_arch = "x86_64")]
mod wide;
#[cfg(target_arch = "x86_64")]
mod x86;

use zeroize::Zeroize;

/// Bytes in one XTS data unit (VeraCrypt's ENCRYPTION_DATA_UNIT_SIZE).
pub const DATA_UNIT: usize = 512;
/// AES-256 round keys: the cipher key and 14 more.
const ROUNDS: usize = 15;

/// One 16-byte AES round key, aligned so that a vector load of it is an aligned load (the
/// x86_64 assembly's `movdqa` faults on a misaligned one). Not `Copy`: no silent copies.
#[derive(Default)]
#[repr(C, align(16))]
struct RoundKey([u8; 16]);

/// A zero round key, for array initialisers.
const ZERO_KEY: RoundKey = RoundKey([0; 16]);

/// An AES-256 key schedule.
type Schedule = [RoundKey; ROUNDS];

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
cpufeatures::new!(aes_instructions, "aes");

/// Proof that this thread may use the wide vector registers (YMM) now, which the VAES path
/// needs: in user mode always (the OS saves them); in a Windows driver only between a
/// successful KeSaveExtendedProcessorState and its KeRestoreExtendedProcessorState, on the
/// thread that saved. Neither `Send` nor `Sync`, so it cannot leave that thread.
pub struct WideVectors {
    _this_thread: core::marker::PhantomData<*const ()>,
}

impl WideVectors {
    /// True when this CPU has the wide path's instructions (AES-NI, AVX2, VAES, VPCLMULQDQ)
    /// and the OS enabled their register state.
    pub fn available() -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            wide::cpu_has_it()
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    }

    /// A token for this thread, or `None` when the CPU lacks the instructions.
    ///
    /// # Safety
    /// Until the token is dropped, this thread may change the YMM registers (and, on a CPU
    /// with AVX-512, the upper halves of ZMM0-15, which VEX instructions clear): in a Windows
    /// driver, the caller has saved that state with KeSaveExtendedProcessorState (a mask with
    /// XSTATE_MASK_AVX, and XSTATE_MASK_AVX512 where the OS enabled it) and restores it after
    /// the drop.
    pub unsafe fn assume_saved() -> Option<WideVectors> {
        Self::available().then_some(WideVectors {
            _this_thread: core::marker::PhantomData,
        })
    }

    /// A token in a user-mode process, where the OS saves the vector state of every thread.
    #[cfg(feature = "user-mode")]
    pub fn in_user_mode() -> Option<WideVectors> {
        // SAFETY: user mode: the OS saves and restores the full vector state on every switch.
        unsafe { Self::assume_saved() }
    }
}

/// The round keys of XTS-AES-256: the data key's encryption and decryption schedules and the
/// tweak key's encryption schedule (720 bytes).
///
/// A zeroed value is valid and holds no key; [`XtsKeys::set_key`] expands a master key into it
/// in place, so a caller that keeps the value in its final (nonpaged) block never has a copy
/// of the round keys anywhere else. Dropping or [`XtsKeys::clear`] zeroizes it.
#[repr(C, align(16))]
pub struct XtsKeys {
    data_enc: Schedule,
    data_dec: Schedule,
    tweak_enc: Schedule,
    /// True only after a key was expanded on a CPU that has the AES instructions: the
    /// precondition of every intrinsic call below.
    ready: bool,
}

// Every schedule starts on a 16-byte boundary wherever an `XtsKeys` lives.
const _: () = {
    assert!(core::mem::align_of::<XtsKeys>() >= 16);
    assert!(core::mem::offset_of!(XtsKeys, data_enc) % 16 == 0);
    assert!(core::mem::offset_of!(XtsKeys, data_dec) % 16 == 0);
    assert!(core::mem::offset_of!(XtsKeys, tweak_enc) % 16 == 0);
    assert!(core::mem::size_of::<RoundKey>() == 16);
};

impl Default for XtsKeys {
    fn default() -> Self {
        Self::new()
    }
}

impl XtsKeys {
    /// An empty schedule: all zero, holding no key.
    pub const fn new() -> Self {
        XtsKeys {
            data_enc: [ZERO_KEY; ROUNDS],
            data_dec: [ZERO_KEY; ROUNDS],
            tweak_enc: [ZERO_KEY; ROUNDS],
            ready: false,
        }
    }

    /// True when this CPU has the AES instructions this crate runs (checked at run time; on
    /// Windows ARM64 `cpufeatures` reports the build's `+aes`, which the driver checks at load).
    pub fn available() -> bool {
        #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
        {
            aes_instructions::get()
        }
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        {
            false
        }
    }

    /// The instructions [`XtsKeys::encrypt`] runs: `aes-ni`, `armv8-aes`, or `none`.
    pub fn instructions() -> &'static str {
        match (Self::available(), cfg!(target_arch = "aarch64")) {
            (false, _) => "none",
            (true, false) => "aes-ni",
            (true, true) => "armv8-aes",
        }
    }

    /// Expands VeraCrypt's master key layout (data key in bytes 0..32, tweak key in 32..64)
    /// into this schedule, in place. False when the CPU lacks the AES instructions: the
    /// schedule then stays empty (and [`XtsKeys::is_ready`] false).
    pub fn set_key(&mut self, master: &[u8; 64]) -> bool {
        let (data, tweak) = master.split_at(32);
        let (Ok(data), Ok(tweak)) = (<&[u8; 32]>::try_from(data), <&[u8; 32]>::try_from(tweak))
        else {
            self.clear();
            return false;
        };
        self.set_keys(data, tweak)
    }

    /// Expands a data (primary) key and a tweak (secondary) key given apart, as a cascade's
    /// AES stage finds them in VeraCrypt's master key area (all primary keys, then all
    /// secondary keys), into this schedule, in place. False when the CPU lacks the AES
    /// instructions (the schedule then stays empty).
    pub fn set_keys(&mut self, data: &[u8; 32], tweak: &[u8; 32]) -> bool {
        self.clear();
        if !Self::available() {
            return false;
        }
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `available()` checked that the CPU has AES-NI (and SSE2), the features these
        // functions are compiled for.
        unsafe {
            x86::set_key(data, tweak, self)
        };
        #[cfg(target_arch = "aarch64")]
        // SAFETY: `available()` checked that the CPU has the ARMv8 AES instructions (and NEON).
        unsafe {
            arm::set_key(data, tweak, self)
        };
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        let _ = (data, tweak);
        self.ready = true;
        true
    }

    /// True when a key is set and the hardware path can run.
    pub fn is_ready(&self) -> bool {
        self.ready
    }

    /// Zeroizes every round key; the schedule is empty afterwards.
    pub fn clear(&mut self) {
        self.ready = false;
        for schedule in [&mut self.data_enc, &mut self.data_dec, &mut self.tweak_enc] {
            for key in schedule.iter_mut() {
                key.0.zeroize();
            }
        }
    }

    /// Round keys in this schedule.
    pub const ROUND_KEYS: usize = 3 * ROUNDS;

    /// How many of the [`XtsKeys::ROUND_KEYS`] round keys are not all zero, read where they
    /// live (none after [`XtsKeys::clear`]). The first two of the data key's and of the tweak
    /// key's encryption schedule are the two XTS key halves themselves.
    pub fn round_keys_set(&self) -> usize {
        [&self.data_enc, &self.data_dec, &self.tweak_enc]
            .iter()
            .flat_map(|schedule| schedule.iter())
            .filter(|key| key.0 != [0; 16])
            .count()
    }

    /// Encrypts `buf` in place; its first data unit has the absolute number `first_unit`
    /// (VeraCrypt's tweak: the number as a little-endian u64, zero-padded to 16 bytes).
    ///
    /// # Panics
    /// When `buf` is not whole data units or no key is set: both are the caller's invariants.
    pub fn encrypt(&self, buf: &mut [u8], first_unit: u64) {
        self.run::<true>(buf, first_unit);
    }

    /// Decrypts `buf` in place (see [`XtsKeys::encrypt`]).
    pub fn decrypt(&self, buf: &mut [u8], first_unit: u64) {
        self.run::<false>(buf, first_unit);
    }

    /// Encrypts `buf` in place on the wide (VAES) path: the same result as
    /// [`XtsKeys::encrypt`], about twice as fast on large buffers.
    pub fn encrypt_wide(&self, vectors: &WideVectors, buf: &mut [u8], first_unit: u64) {
        self.run_wide::<true>(vectors, buf, first_unit);
    }

    /// Decrypts `buf` in place on the wide (VAES) path.
    pub fn decrypt_wide(&self, vectors: &WideVectors, buf: &mut [u8], first_unit: u64) {
        self.run_wide::<false>(vectors, buf, first_unit);
    }

    fn run_wide<const ENCRYPT: bool>(&self, vectors: &WideVectors, buf: &mut [u8], unit: u64) {
        let _ = vectors;
        assert!(self.ready, "XTS keys are set before use");
        let (units, rest) = buf.as_chunks_mut::<DATA_UNIT>();
        assert!(rest.is_empty(), "XTS buffers are whole data units");
        #[cfg(target_arch = "x86_64")]
        // SAFETY: a `WideVectors` exists only where `available()` found the instructions, and
        // its existence means this thread may use the YMM state; `ready` means a key is set.
        unsafe {
            wide::xts::<ENCRYPT>(self, units, unit)
        };
        #[cfg(not(target_arch = "x86_64"))]
        let _ = (units, unit);
    }

    fn run<const ENCRYPT: bool>(&self, buf: &mut [u8], first_unit: u64) {
        assert!(self.ready, "XTS keys are set before use");
        let (units, rest) = buf.as_chunks_mut::<DATA_UNIT>();
        assert!(rest.is_empty(), "XTS buffers are whole data units");
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `ready` is true only after `set_key` found AES-NI on this CPU.
        unsafe {
            x86::xts::<ENCRYPT>(self, units, first_unit)
        };
        #[cfg(target_arch = "aarch64")]
        // SAFETY: `ready` is true only after `set_key` found the ARMv8 AES instructions.
        unsafe {
            arm::xts::<ENCRYPT>(self, units, first_unit)
        };
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        let _ = (units, first_unit);
    }
}

impl Drop for XtsKeys {
    fn drop(&mut self) {
        self.clear();
    }
}

/// Overwrites `slots` with `zero` so that the compiler cannot drop the stores: the tweak
/// arrays a pass leaves on its stack (values derived from the tweak key).
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn wipe<T: Copy>(slots: &mut [T], zero: T) {
    for slot in slots.iter_mut() {
        // SAFETY: `slot` is a valid, aligned, exclusive reference to a `T`.
        unsafe { core::ptr::write_volatile(slot, zero) };
    }
    core::sync::atomic::compiler_fence(core::sync::atomic::Ordering::SeqCst);
}

/// Data units whose initial tweaks are computed together (one 8-wide pass on the tweak key).
const BATCH_UNITS: usize = 8;
/// Blocks run through the AES units together: enough independent work to cover the
/// instructions' latency (about 4 cycles at 2 per cycle on current x86 cores).
const WIDTH: usize = 8;
/// One data unit's blocks, in groups of [`WIDTH`].
type Unit = [u8; DATA_UNIT];
