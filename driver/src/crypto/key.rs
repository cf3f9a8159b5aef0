//! The volume key: used under rundown protection, erased only after every user left.
//!
//! Erase (docs/review.md R3): set the block flag, so no new user can start; wait until every
//! in-flight encrypt/decrypt has released its reference; then drop the last reference to the
//! cipher's block ([`KeyBlock`]), which wipes the round keys in place before the block is
//! released. A user that could not acquire gets [`CryptoError::KeyErased`], so no crypto ever
//! runs on erased keys and no data decrypted with them reaches a caller.
//!
//! The evidence (test builds, feature `fault-switches`): a platform may watch its key blocks
//! (`Platform::key_block_watch`); the watch is shown each block when it is allocated and
//! again right before it is released, after its wipe, to read how many round keys are still
//! in it. Tests and the simulator check with it that by the time erase returns the block was
//! released wiped, or is still allocated but wiped in place, without reading freed memory.

use alloc::sync::Arc;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::{Algorithm, CryptoError, VolumeCipher, AES};
use crate::platform::{Lock, Platform, Rundown, RundownGuard};
use crate::Status;

/// A mounted volume's XTS key with its erase protocol.
pub struct VolumeKey<P: Platform> {
    cipher: P::Lock<Option<Arc<KeyBlock>>>,
    /// Where the cipher's block was allocated: its name in a platform's key-block watch.
    block: usize,
    /// The algorithm is AES alone on the CPU's AES instructions (fixed at mount).
    hardware_aes: bool,
    rundown: Rundown<P>,
    /// Set by the first step of erase; checked before every segment and fragment (R2).
    blocked: AtomicBool,
    /// Set when erase has returned: any user still alive then is a violation (R3).
    erased: AtomicBool,
    /// Users that were still running when erase returned (0 unless a fault switch is on).
    late_users: AtomicU64,
    /// Crypto calls made, for tests that count them.
    uses: AtomicU64,
}

/// An acquired reference to the key. While one exists, erasure waits.
pub struct KeyGuard<'a, P: Platform> {
    key: &'a VolumeKey<P>,
    cipher: Arc<KeyBlock>,
    _ref: RundownGuard<'a, P>,
}

impl<P: Platform> VolumeKey<P> {
    /// A key from VeraCrypt's master key layout (primary 0..32, secondary 32..64); the round
    /// keys are allocated through `platform` (W6: STATUS_INSUFFICIENT_RESOURCES on failure).
    ///
    /// The cipher is placed in its block empty and keyed there (W5): on the hardware path
    /// the round keys are expanded in place, so no copy of them is left on this thread's
    /// stack (in the kernel, possibly the pageable stack of the mounting user's thread).
    pub fn new(platform: &P, master: &[u8; 64]) -> Result<Self, Status> {
        Self::with_algorithm(platform, AES, master)
    }

    /// A key of `algorithm` from its master key area `key` (exactly
    /// [`Algorithm::key_len`] bytes, else STATUS_INVALID_PARAMETER), keyed in place as
    /// [`VolumeKey::new`] says; the other ciphers' schedules in zeroed blocks of their own,
    /// keyed there (`VolumeCipher::set_key`).
    pub fn with_algorithm(platform: &P, algorithm: Algorithm, key: &[u8]) -> Result<Self, Status> {
        if key.len() != algorithm.key_len() {
            return Err(Status::InvalidParameter);
        }
        let cipher = if crate::faults::is_on(crate::faults::Fault::W5KeyScheduleByValue) {
            let mut by_value = VolumeCipher::empty();
            by_value.set_key(algorithm, key)?;
            platform.try_arc(KeyBlock::new(platform, by_value))?
        } else {
            let mut block = platform.try_arc(KeyBlock::new(platform, VolumeCipher::empty()))?;
            // A block just allocated has one owner; were it shared, mounting fails cleanly.
            Arc::get_mut(&mut block)
                .ok_or(Status::InsufficientResources)?
                .cipher
                .set_key(algorithm, key)?;
            block
        };
        #[cfg(feature = "fault-switches")]
        if let Some(watch) = &cipher.watch {
            watch.allocated(&cipher);
        }
        Ok(VolumeKey {
            block: cipher.address(),
            hardware_aes: cipher.cipher.hardware().is_some(),
            cipher: P::Lock::new(Some(cipher)),
            rundown: Rundown::new()?,
            blocked: AtomicBool::new(false),
            erased: AtomicBool::new(false),
            late_users: AtomicU64::new(0),
            uses: AtomicU64::new(0),
        })
    }

    /// Where the round keys live while the key is not erased: the address and length of the
    /// cipher in its block (the Wine build logs it, so the W5 memory check can tell that one
    /// block from any other copy); `None` once erased. Only the Wine build (feature `wine-host`)
    /// has it: no product image can say where its key lies.
    #[cfg(feature = "wine-host")]
    pub fn block(&self) -> Option<(usize, usize)> {
        self.cipher.with(|c| {
            c.as_ref().map(|a| {
                (
                    core::ptr::from_ref(a.cipher()) as usize,
                    core::mem::size_of::<VolumeCipher>(),
                )
            })
        })
    }

    /// Where the cipher's block was allocated (its name in the platform's key-block watch; it
    /// stays the key's after erase).
    pub fn block_address(&self) -> usize {
        self.block
    }

    /// True when the volume's algorithm is AES alone and runs on the CPU's AES instructions:
    /// only then is a short decryption quick enough for a host completion routine (the direct
    /// path's detached reads); other algorithms decrypt on the path's threads.
    pub fn hardware_aes(&self) -> bool {
        self.hardware_aes
    }

    /// True once erasure has begun: no new segment or fragment may be issued (R2).
    pub fn is_blocked(&self) -> bool {
        self.blocked.load(Ordering::Acquire)
    }

    /// True once erasure has finished and the round keys were zeroized (a flag: the round
    /// keys themselves are shown to a platform's key-block watch in test builds).
    pub fn is_erased(&self) -> bool {
        self.erased.load(Ordering::Acquire)
    }

    /// Takes a reference for one crypto operation.
    pub fn acquire(&self) -> Result<KeyGuard<'_, P>, CryptoError> {
        if self.is_blocked() {
            return Err(CryptoError::KeyErased);
        }
        let guard = self.rundown.acquire().ok_or(CryptoError::KeyErased)?;
        let cipher = self
            .cipher
            .with(|c| c.clone())
            .ok_or(CryptoError::KeyErased)?;
        self.uses.fetch_add(1, Ordering::Relaxed);
        Ok(KeyGuard {
            key: self,
            cipher,
            _ref: guard,
        })
    }

    /// Blocks new users, waits for the in-flight ones, then zeroizes. Idempotent.
    pub fn erase(&self) {
        self.blocked.store(true, Ordering::Release);
        if !crate::faults::skip_key_rundown() {
            self.rundown.close_and_wait();
        }
        let last = self.cipher.with(|c| c.take());
        // After the drain this is the only reference: dropping it wipes the round keys in
        // place, then releases the block.
        if crate::faults::is_on(crate::faults::Fault::R3EraseLeaksCipher) {
            core::mem::forget(last);
        } else {
            drop(last);
        }
        self.erased.store(true, Ordering::Release);
    }

    /// Crypto users that were still running after erase returned (must stay 0).
    pub fn late_users(&self) -> u64 {
        self.late_users.load(Ordering::Relaxed)
    }

    /// Crypto operations started with this key.
    pub fn uses(&self) -> u64 {
        self.uses.load(Ordering::Relaxed)
    }
}

impl<P: Platform> KeyGuard<'_, P> {
    /// The cipher, valid while the guard lives.
    pub fn cipher(&self) -> &VolumeCipher {
        &self.cipher.cipher
    }

    /// The cipher for the encryption pool's pieces; they finish before the guard's owner
    /// releases it.
    pub fn shared(&self) -> &VolumeCipher {
        &self.cipher.cipher
    }
}

impl<P: Platform> Drop for KeyGuard<'_, P> {
    fn drop(&mut self) {
        if self.key.erased.load(Ordering::Acquire) {
            self.key.late_users.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The block that holds a volume's cipher. Dropping the last reference wipes the round keys in
/// place, shows the block to the platform's watch (test builds, if the platform has one), then
/// releases it.
pub struct KeyBlock {
    cipher: VolumeCipher,
    /// Test builds only: no watch (and no call through a vtable) in a driver image.
    #[cfg(feature = "fault-switches")]
    watch: Option<Arc<dyn KeyBlockWatch>>,
}

impl KeyBlock {
    fn new<P: Platform>(platform: &P, cipher: VolumeCipher) -> Self {
        #[cfg(not(feature = "fault-switches"))]
        let _ = platform;
        KeyBlock {
            cipher,
            #[cfg(feature = "fault-switches")]
            watch: platform.key_block_watch(),
        }
    }

    /// The cipher in this block.
    pub fn cipher(&self) -> &VolumeCipher {
        &self.cipher
    }

    /// Where this block lives (the [`VolumeKey::block_address`] of its key).
    pub fn address(&self) -> usize {
        core::ptr::from_ref(self) as usize
    }
}

impl Drop for KeyBlock {
    fn drop(&mut self) {
        // The block is released right after this: wipe it where it lives first. (The schedule's
        // own zeroizing drop runs after the watch has looked, a second wipe the watch does not
        // count on.)
        if !crate::faults::is_on(crate::faults::Fault::R3ReleaseUnwiped) {
            self.cipher.clear();
        }
        #[cfg(feature = "fault-switches")]
        if let Some(watch) = self.watch.take() {
            watch.releasing(self);
        }
    }
}

/// What a platform is shown of the blocks that hold its volumes' ciphers
/// ([`Platform::key_block_watch`]): test platforms record it, to show that erase leaves no round
/// key in memory (docs/review.md R3) without reading freed memory. Test builds only (feature
/// `fault-switches`): a driver image has no watch.
#[cfg(feature = "fault-switches")]
pub trait KeyBlockWatch: Send + Sync {
    /// `block` was allocated and keyed.
    fn allocated(&self, block: &Arc<KeyBlock>);
    /// `block` is about to be released, after its wipe: the last look at its bytes.
    fn releasing(&self, block: &KeyBlock);
}
