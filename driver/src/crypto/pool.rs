//! How a buffer's crypto is split across the shared encryption threads.
//!
//! VeraCrypt's model (docs/design.md §4): one global pool of (CPU count - free CPU count) threads;
//! the caller splits its data units into at most that many pieces and blocks until all pieces
//! are done; a single data unit runs inline. vcdirect splits only into pieces of at least
//! [`MIN_PIECE`] bytes for AES (the hand-off costs about as much as encrypting 128 KiB) and
//! [`MIN_PIECE_SLOW`] for the other, slower algorithms. The split policy lives here; the threads belong to
//! the platform ([`Platform::run_pieces`]), because only it can lend a borrowed buffer to
//! long-lived threads (scoped work in user mode, the kernel glue's own wait in `wdm`).

use super::{CryptoError, VolumeKey, DATA_UNIT};
use crate::platform::{Piece, Platform};

/// Most pieces one buffer is split into: the pieces are built on the caller's stack (no
/// allocation per fragment), so a pool of more threads still splits into this many.
pub const MAX_PIECES: usize = 16;

/// Fewest bytes a piece carries: a buffer is split only as far as each piece has this much
/// work, since handing a piece to a pool thread and waiting for it costs 5-15 us, about as much
/// as encrypting 128 KiB on the wide path. Measured with `vcbench pool` (user-mode pool, 2-core
/// VM, three runs, docs/measurements.md "Current results"): two pieces beat one thread on
/// every run from 512 KiB buffers, on two runs of three at 256 KiB, and (but once) never
/// below. Smaller buffers (the legacy queue's 256 KiB fragments among them) run on the
/// caller's thread. (VeraCrypt splits any buffer of two units or more; with AES-NI and VAES one
/// core now does 7-12 GB/s.)
pub const MIN_PIECE: usize = 256 << 10;

/// Fewest bytes a piece carries for every algorithm but AES alone (Serpent, Twofish, Camellia,
/// Kuznyechik and the cascades): they run at 0.1-0.5 GB/s on one core (`vcbench crypto`,
/// docs/measurements.md), so 16 KiB is 35-150 us of work against the 5-15 us hand-off, and a
/// legacy fragment of 256 KiB is split across the pool as VeraCrypt splits it. Measured with
/// `vcbench pool`'s Serpent and three-cipher rows (docs/measurements.md).
pub const MIN_PIECE_SLOW: usize = 16 << 10;

/// The smallest piece worth handing over for `cipher`'s algorithm.
fn min_piece(cipher: &super::VolumeCipher) -> usize {
    match cipher.aes_alone() {
        Some(_) => MIN_PIECE,
        None => MIN_PIECE_SLOW,
    }
}

/// The encryption pool's policy: how many pieces a buffer is split into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CryptoPool {
    threads: usize,
    /// Split into `threads` pieces whatever their size (`vcbench pool`'s measurement only).
    forced: bool,
    /// Large buffers may take the wide (VAES) path where the platform allows it.
    wide: bool,
}

/// Which way the cipher runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cipher {
    /// Plaintext to ciphertext.
    Encrypt,
    /// Ciphertext to plaintext.
    Decrypt,
}

impl CryptoPool {
    /// A pool of `cpu_count - free_cpu_count` threads (at least one, at most `MAX_PIECES`).
    pub fn new(cpu_count: usize, free_cpu_count: usize) -> Self {
        CryptoPool {
            threads: cpu_count
                .saturating_sub(free_cpu_count)
                .clamp(1, MAX_PIECES),
            forced: false,
            wide: true,
        }
    }

    /// A policy that never splits: the caller's thread does all the work (a direct worker's
    /// request under load, when the 8 workers already run in parallel).
    pub const fn inline() -> Self {
        CryptoPool {
            threads: 1,
            forced: false,
            wide: true,
        }
    }

    /// For buffers below [`WIDE_MIN_KERNEL`](super::WIDE_MIN_KERNEL) on a dispatching thread
    /// or in a host completion routine (the direct path's requests without a waiter): never
    /// splits and never takes the wide path, so those paths' code (and the image checker's
    /// stack budgets for them) never includes the processor-state save or the VAES code.
    pub const fn small() -> Self {
        CryptoPool {
            threads: 1,
            forced: false,
            wide: false,
        }
    }

    /// A policy that splits every buffer into `pieces` pieces (at most `MAX_PIECES`) whatever
    /// their size: what `vcbench pool` measures [`MIN_PIECE`] against. Not used by a volume.
    pub const fn forced_split(pieces: usize) -> Self {
        CryptoPool {
            threads: if pieces > MAX_PIECES {
                MAX_PIECES
            } else {
                pieces
            },
            forced: true,
            wide: true,
        }
    }

    /// Number of encryption threads.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Encrypts or decrypts `buf` (first absolute data unit `first_unit`) with `key`, split
    /// across the pool; returns when every piece is done. Fails without touching `buf` when
    /// the key is blocked.
    pub fn run<P: Platform>(
        &self,
        platform: &P,
        key: &VolumeKey<P>,
        dir: Cipher,
        buf: &mut [u8],
        first_unit: u64,
    ) -> Result<(), CryptoError> {
        let guard = key.acquire()?;
        let units = buf.len() / DATA_UNIT;
        let pieces_wanted = match self.forced {
            true => self.threads.min(units),
            false => self
                .threads
                .min(units)
                .min(buf.len() / min_piece(guard.cipher())),
        };
        platform.crypto_scope(|| {
            if pieces_wanted <= 1 {
                apply(platform, self.wide, guard.cipher(), dir, buf, first_unit);
                return;
            }
            let per_piece = units.div_ceil(pieces_wanted) * DATA_UNIT;
            // On the stack, not in a Vec: nothing is allocated per fragment (W6).
            let mut pieces: [Piece<'_>; MAX_PIECES] = core::array::from_fn(|_| Piece {
                first_unit: 0,
                data: &mut [],
            });
            let mut count = 0;
            for (slot, (i, data)) in pieces.iter_mut().zip(buf.chunks_mut(per_piece).enumerate()) {
                *slot = Piece {
                    first_unit: first_unit + (i * per_piece / DATA_UNIT) as u64,
                    data,
                };
                count += 1;
            }
            let cipher = guard.shared();
            platform.run_pieces(&mut pieces[..count], &|piece: &mut Piece<'_>| {
                apply(
                    platform,
                    self.wide,
                    cipher,
                    dir,
                    piece.data,
                    piece.first_unit,
                )
            });
        });
        Ok(())
    }
}

impl CryptoPool {
    /// A short buffer on this thread with the volume's hardware AES keys only (the direct
    /// path's requests without a waiter, on a dispatching thread or in a host completion
    /// routine): never split, never the wide path, never another algorithm's code (so none of
    /// it is on those paths' stacks, W13). [`CryptoError::NotHardwareAes`] without touching
    /// `buf` when the volume's algorithm is not AES alone on the AES instructions (the direct
    /// path never detaches such a volume's requests: `VolumeKey::hardware_aes`).
    pub fn run_short<P: Platform>(
        platform: &P,
        key: &VolumeKey<P>,
        dir: Cipher,
        buf: &mut [u8],
        first_unit: u64,
    ) -> Result<(), CryptoError> {
        let guard = key.acquire()?;
        let keys = guard
            .cipher()
            .hardware()
            .ok_or(CryptoError::NotHardwareAes)?;
        platform.crypto_scope(|| match dir {
            Cipher::Encrypt => keys.encrypt(buf, first_unit),
            Cipher::Decrypt => keys.decrypt(buf, first_unit),
        });
        Ok(())
    }
}

/// One buffer on this thread: the wide path where `wide` allows it, the cipher runs on the
/// AES instructions and the platform lets this thread use the wide registers for this length;
/// the XMM path otherwise.
fn apply<P: Platform>(
    platform: &P,
    wide: bool,
    cipher: &super::VolumeCipher,
    dir: Cipher,
    buf: &mut [u8],
    first_unit: u64,
) {
    if wide {
        if let Some(keys) = cipher.hardware() {
            let done = platform.wide_vectors(buf.len(), |vectors| match dir {
                Cipher::Encrypt => keys.encrypt_wide(vectors, buf, first_unit),
                Cipher::Decrypt => keys.decrypt_wide(vectors, buf, first_unit),
            });
            if done.is_some() {
                return;
            }
        }
    }
    match dir {
        Cipher::Encrypt => cipher.encrypt(buf, first_unit),
        Cipher::Decrypt => cipher.decrypt(buf, first_unit),
    }
}
