//! The volume key: used under rundown protection, erased only after every user left.
//!
//! Erase (docs/review.md R3): set the block flag, so no new user can start; wait until every
//! in-flight encrypt/decrypt has released its reference; then drop the last reference, which
//! zeroizes the AES round keys. A user that could not acquire gets [`CryptoError::KeyErased`],
//! so no crypto ever runs on erased keys and no data decrypted with them reaches a caller.

use alloc::sync::Arc;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::{CryptoError, XtsCipher};
use crate::platform::{Lock, Platform, Rundown, RundownGuard};
use crate::Status;

/// A mounted volume's XTS key with its erase protocol.
pub struct VolumeKey<P: Platform> {
    cipher: P::Lock<Option<Arc<XtsCipher>>>,
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
    cipher: Arc<XtsCipher>,
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
        let cipher = if crate::faults::is_on(crate::faults::Fault::W5KeyScheduleByValue) {
            platform.try_arc(XtsCipher::new(master))?
        } else {
            let mut cipher = platform.try_arc(XtsCipher::empty())?;
            // A block just allocated has one owner; were it shared, mounting fails cleanly.
            Arc::get_mut(&mut cipher)
                .ok_or(Status::InsufficientResources)?
                .set_key(master)?;
            cipher
        };
        Ok(VolumeKey {
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
            c.as_ref()
                .map(|a| (Arc::as_ptr(a) as usize, core::mem::size_of::<XtsCipher>()))
        })
    }

    /// True once erasure has begun: no new segment or fragment may be issued (R2).
    pub fn is_blocked(&self) -> bool {
        self.blocked.load(Ordering::Acquire)
    }

    /// True once erasure has finished and the round keys were zeroized.
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
        // After the drain this is the only reference: dropping it zeroizes the round keys.
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
    pub fn cipher(&self) -> &XtsCipher {
        &self.cipher
    }

    /// A shared handle to the cipher for the encryption pool's pieces; they finish before the
    /// guard's owner releases it.
    pub fn shared(&self) -> &Arc<XtsCipher> {
        &self.cipher
    }
}

impl<P: Platform> Drop for KeyGuard<'_, P> {
    fn drop(&mut self) {
        if self.key.erased.load(Ordering::Acquire) {
            self.key.late_users.fetch_add(1, Ordering::Relaxed);
        }
    }
}
