//! Header key derivation: PBKDF2 with VeraCrypt's five HMAC PRFs and its PIM rule.
//!
//! Owns: the PRF names (`sha512`, `sha256`, `whirlpool`, `blake2s`, `streebog`), the iteration
//! count for a PIM, and a PBKDF2 that derives block by block and can be cancelled, so that
//! parallel trials stop once one PRF has opened the header.
//! Never: decrypts headers (see `volume`).

use std::sync::atomic::{AtomicBool, Ordering};

use hmac::{Hmac, KeyInit, Mac, SimpleHmac};
use zeroize::Zeroizing;

/// A PBKDF2 pseudo-random function VeraCrypt supports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Prf {
    /// HMAC-SHA-512 (VeraCrypt's default).
    Sha512,
    /// HMAC-SHA-256.
    Sha256,
    /// HMAC-Whirlpool.
    Whirlpool,
    /// HMAC-BLAKE2s-256.
    Blake2s,
    /// HMAC-Streebog-512.
    Streebog,
}

impl Prf {
    /// Every PRF, in the order VeraCrypt tries them.
    pub const ALL: [Prf; 5] = [
        Prf::Sha512,
        Prf::Sha256,
        Prf::Blake2s,
        Prf::Whirlpool,
        Prf::Streebog,
    ];

    /// The spelling used on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Prf::Sha512 => "sha512",
            Prf::Sha256 => "sha256",
            Prf::Whirlpool => "whirlpool",
            Prf::Blake2s => "blake2s",
            Prf::Streebog => "streebog",
        }
    }

    /// Parses a spelling of [`Prf::name`].
    pub fn from_name(name: &str) -> Option<Prf> {
        Prf::ALL.into_iter().find(|p| p.name() == name)
    }
}

/// Iterations for a non-system volume: PIM 0 means VeraCrypt's default of 500,000,
/// otherwise 15,000 + PIM x 1,000.
pub fn iterations(pim: u32) -> u32 {
    if pim == 0 {
        500_000
    } else {
        15_000u32.saturating_add(pim.saturating_mul(1_000))
    }
}

/// The PBKDF2 run was cancelled before it finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cancelled;

/// PBKDF2-HMAC-`prf` of `password` and `salt` into `out`. Checks `cancel` every 4,096
/// iterations. `out` is filled block by block, so its first bytes do not depend on its length.
pub fn derive(
    prf: Prf,
    password: &[u8],
    salt: &[u8],
    iterations: u32,
    out: &mut [u8],
    cancel: &AtomicBool,
) -> Result<(), Cancelled> {
    derive_from(prf, password, salt, iterations, 0, out, cancel)
}

/// Like [`derive()`], but `out` receives the PBKDF2 output from byte `start` on. `start` must be
/// a multiple of the PRF's output size (64 is, for every PRF), so that a caller can try a short
/// key first and derive the rest only when it needs it.
pub fn derive_from(
    prf: Prf,
    password: &[u8],
    salt: &[u8],
    iterations: u32,
    start: usize,
    out: &mut [u8],
    cancel: &AtomicBool,
) -> Result<(), Cancelled> {
    let a = Args {
        password,
        salt,
        iterations,
        start,
        cancel,
    };
    match prf {
        Prf::Sha512 => pbkdf2_mac::<Hmac<sha2::Sha512>>(&a, out),
        Prf::Sha256 => pbkdf2_mac::<Hmac<sha2::Sha256>>(&a, out),
        Prf::Whirlpool => pbkdf2_mac::<Hmac<whirlpool::Whirlpool>>(&a, out),
        // BLAKE2s buffers lazily, so it takes the generic HMAC form.
        Prf::Blake2s => pbkdf2_mac::<SimpleHmac<blake2::Blake2s256>>(&a, out),
        Prf::Streebog => pbkdf2_mac::<Hmac<streebog::Streebog512>>(&a, out),
    }
}

// W5: the HMAC states (keyed inner and outer hashes, cloned for every iteration) are wiped
// when dropped: the `zeroize` features of hmac, sha2, whirlpool, blake2 and streebog make each
// hash core's state and block buffer zeroize in its Drop (hmac 0.13 does not mark the wrapper
// `ZeroizeOnDrop`, so this is not a compile-time check). `u` and `acc` below are Zeroizing.
struct Args<'a> {
    password: &'a [u8],
    salt: &'a [u8],
    iterations: u32,
    start: usize,
    cancel: &'a AtomicBool,
}

fn pbkdf2_mac<M: Mac + KeyInit + Clone>(a: &Args<'_>, out: &mut [u8]) -> Result<(), Cancelled> {
    let (salt, iterations, cancel) = (a.salt, a.iterations, a.cancel);
    // HMAC accepts keys of any length; the keyed state is cloned for every iteration.
    let Ok(keyed) = <M as KeyInit>::new_from_slice(a.password) else {
        unreachable!("HMAC takes keys of any length")
    };
    let block = <M as hmac::digest::OutputSizeUser>::output_size();
    debug_assert!(block <= 64 && a.start.is_multiple_of(block));
    let first = u32::try_from(a.start / block + 1).unwrap_or(u32::MAX);
    let mut u = Zeroizing::new([0u8; 64]);
    let mut acc = Zeroizing::new([0u8; 64]);
    for (index, chunk) in (first..).zip(out.chunks_mut(block)) {
        let mut mac = keyed.clone();
        mac.update(salt);
        mac.update(&index.to_be_bytes());
        u[..block].copy_from_slice(&mac.finalize().into_bytes());
        acc[..block].copy_from_slice(&u[..block]);
        for i in 1..iterations {
            if i % 4096 == 0 && cancel.load(Ordering::Relaxed) {
                return Err(Cancelled);
            }
            let mut mac = keyed.clone();
            mac.update(&u[..block]);
            u[..block].copy_from_slice(&mac.finalize().into_bytes());
            acc[..block]
                .iter_mut()
                .zip(u[..block].iter())
                .for_each(|(a, b)| *a ^= b);
        }
        chunk.copy_from_slice(&acc[..chunk.len()]);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ours(prf: Prf, len: usize) -> Vec<u8> {
        let mut out = vec![0; len];
        derive(
            prf,
            b"password",
            b"salty salt",
            1_234,
            &mut out,
            &AtomicBool::new(false),
        )
        .unwrap();
        out
    }

    fn crate_pbkdf2<D: hmac::EagerHash>(len: usize) -> Vec<u8> {
        let mut out = vec![0; len];
        pbkdf2::pbkdf2_hmac::<D>(b"password", b"salty salt", 1_234, &mut out);
        out
    }

    fn crate_pbkdf2_blake2s(len: usize) -> Vec<u8> {
        let mut out = vec![0; len];
        pbkdf2::pbkdf2::<SimpleHmac<blake2::Blake2s256>>(
            b"password",
            b"salty salt",
            1_234,
            &mut out,
        )
        .unwrap();
        out
    }

    #[test]
    fn derive_matches_the_pbkdf2_crate_for_every_prf() {
        for len in [32, 64, 100, 192] {
            assert_eq!(ours(Prf::Sha512, len), crate_pbkdf2::<sha2::Sha512>(len));
            assert_eq!(ours(Prf::Sha256, len), crate_pbkdf2::<sha2::Sha256>(len));
            assert_eq!(
                ours(Prf::Whirlpool, len),
                crate_pbkdf2::<whirlpool::Whirlpool>(len)
            );
            assert_eq!(ours(Prf::Blake2s, len), crate_pbkdf2_blake2s(len));
            assert_eq!(
                ours(Prf::Streebog, len),
                crate_pbkdf2::<streebog::Streebog512>(len)
            );
        }
    }

    #[test]
    fn derive_from_continues_where_a_short_derivation_stopped() {
        for prf in Prf::ALL {
            let full = ours(prf, 192);
            let mut rest = vec![0; 128];
            derive_from(
                prf,
                b"password",
                b"salty salt",
                1_234,
                64,
                &mut rest,
                &AtomicBool::new(false),
            )
            .unwrap();
            assert_eq!(&full[64..], &rest[..], "{}", prf.name());
        }
    }

    #[test]
    fn pim_rule_matches_veracrypt_for_non_system_volumes() {
        assert_eq!(iterations(0), 500_000);
        assert_eq!(iterations(1), 16_000);
        assert_eq!(iterations(485), 500_000);
    }

    #[test]
    fn cancelled_derivation_stops() {
        let mut out = [0u8; 64];
        let r = derive(
            Prf::Sha512,
            b"p",
            b"s",
            100_000,
            &mut out,
            &AtomicBool::new(true),
        );
        assert_eq!(r, Err(Cancelled));
    }

    #[test]
    fn names_round_trip() {
        for p in Prf::ALL {
            assert_eq!(Prf::from_name(p.name()), Some(p));
        }
        assert_eq!(Prf::from_name("md5"), None);
    }
}
