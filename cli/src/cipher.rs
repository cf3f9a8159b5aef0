//! VeraCrypt's encryption algorithms (single ciphers and cascades) in XTS mode, for headers
//! and data areas.
//!
//! The algorithm list, names and master-key layout are the engine's (`vcdirect::crypto`:
//! [`Algorithm`], [`ALGORITHMS`]), and so is the XTS that runs them
//! (`vcdirect::crypto::VolumeCipher`, the driver's data path): one implementation for the
//! driver, `vcctl volume read` and `vcctl volume create`. This module adds what vcctl needs on
//! top: XTS over a buffer that ends in a partial data unit (a header's 448 encrypted bytes).
//! Never: reads files or derives keys.

pub use vcdirect::crypto::{Algorithm, BlockAlg, AES, ALGORITHMS};
use vcdirect::crypto::{VolumeCipher, DATA_UNIT};
use zeroize::Zeroizing;

/// Bytes of one XTS data unit.
pub const UNIT: usize = DATA_UNIT;

/// XTS of an algorithm with a master key given as bytes (user mode: the schedules are made
/// for the call and wiped when it returns).
pub trait Xts {
    /// Encrypts `buf` (whole 16-byte blocks; a unit is 512 bytes, the last may be shorter)
    /// whose first unit is `first_unit`, with the master key `key` (at least `key_len`
    /// bytes; the first `key_len` are used).
    fn encrypt(self, key: &[u8], buf: &mut [u8], first_unit: u64);
    /// Decrypts what [`Xts::encrypt`] produced.
    fn decrypt(self, key: &[u8], buf: &mut [u8], first_unit: u64);
}

impl Xts for Algorithm {
    fn encrypt(self, key: &[u8], buf: &mut [u8], first_unit: u64) {
        run(self, key, buf, first_unit, true);
    }

    fn decrypt(self, key: &[u8], buf: &mut [u8], first_unit: u64) {
        run(self, key, buf, first_unit, false);
    }
}

/// The engine's cipher over `buf`: its whole units in place, a last partial unit (whole
/// blocks: XTS treats each block of a unit on its own, so a unit's first blocks come out the
/// same whatever follows them) through a zero-padded unit of its own.
fn run(alg: Algorithm, key: &[u8], buf: &mut [u8], first_unit: u64, encrypt: bool) {
    let cipher = VolumeCipher::new(alg, &key[..alg.key_len()]);
    let whole = buf.len() / UNIT * UNIT;
    let (units, rest) = buf.split_at_mut(whole);
    let go = |data: &mut [u8], unit: u64| match encrypt {
        true => cipher.encrypt(data, unit),
        false => cipher.decrypt(data, unit),
    };
    go(units, first_unit);
    if !rest.is_empty() {
        let mut last = Zeroizing::new([0u8; UNIT]);
        last[..rest.len()].copy_from_slice(rest);
        go(
            &mut last[..],
            first_unit.wrapping_add((whole / UNIT) as u64),
        );
        rest.copy_from_slice(&last[..rest.len()]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aes_xts_is_the_engine_cipher() {
        let mut key = [0u8; 64];
        key.iter_mut()
            .enumerate()
            .for_each(|(i, b)| *b = (i as u8).wrapping_mul(7));
        let plain: Vec<u8> = (0..2048u32).map(|i| (i * 31) as u8).collect();
        let mut ours = plain.clone();
        AES.encrypt(&key, &mut ours, 777);
        let mut engine = plain.clone();
        vcdirect::crypto::XtsCipher::new(&key).encrypt(&mut engine, 777);
        assert_eq!(ours, engine);
        AES.decrypt(&key, &mut ours, 777);
        assert_eq!(ours, plain);
    }

    #[test]
    fn every_algorithm_round_trips_and_names_match_veracrypt() {
        let key: Vec<u8> = (0..192u8).collect();
        for alg in ALGORITHMS {
            let mut buf = [0x5au8; 448];
            alg.encrypt(&key, &mut buf, 0);
            assert_ne!(buf, [0x5au8; 448]);
            // A partial unit's blocks are those of the whole unit's start.
            let mut whole = [0x5au8; 512];
            alg.encrypt(&key, &mut whole, 0);
            assert_eq!(buf[..], whole[..448], "{}", alg.name());
            alg.decrypt(&key, &mut buf, 0);
            assert_eq!(buf, [0x5au8; 448], "{}", alg.name());
        }
        assert_eq!(ALGORITHMS[6].name(), "aes-twofish-serpent");
        assert_eq!(ALGORITHMS[10].name(), "camellia-kuznyechik");
    }
}
