//! VeraCrypt's encryption algorithms (single ciphers and cascades) in XTS mode, for headers.
//!
//! Owns: the list of algorithms VeraCrypt 1.26 can write, their master-key layout (the primary
//! keys of every cipher of a cascade, then their secondary keys) and a plain XTS over any
//! 128-bit block cipher. The data path uses the engine's batched AES-256-XTS
//! (`vcdirect::crypto::XtsCipher`); this one is for 448-byte headers and for naming the cipher
//! of a volume the data path cannot serve.
//! Never: reads files or derives keys.

use cipher::consts::U16;
use cipher::generic_array::GenericArray;
use cipher::{BlockCipher, BlockDecrypt, BlockEncrypt, BlockSizeUser, KeyInit};
use zeroize::Zeroize;

/// Bytes of one XTS data unit.
pub const UNIT: usize = 512;

/// A 128-bit block cipher with a 256-bit key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockAlg {
    /// AES-256.
    Aes,
    /// Serpent.
    Serpent,
    /// Twofish.
    Twofish,
    /// Camellia-256.
    Camellia,
    /// Kuznyechik (GOST R 34.12-2015).
    Kuznyechik,
}

impl BlockAlg {
    fn name(self) -> &'static str {
        match self {
            BlockAlg::Aes => "aes",
            BlockAlg::Serpent => "serpent",
            BlockAlg::Twofish => "twofish",
            BlockAlg::Camellia => "camellia",
            BlockAlg::Kuznyechik => "kuznyechik",
        }
    }
}

/// An encryption algorithm: ciphers in VeraCrypt's internal order (encryption applies them
/// first to last; the user-visible name lists them last to first, e.g. `aes-twofish` is
/// Twofish then AES).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Algorithm(pub &'static [BlockAlg]);

use BlockAlg::{Aes, Camellia, Kuznyechik, Serpent, Twofish};

/// Every algorithm VeraCrypt 1.26 can open, AES-256 first.
pub const ALGORITHMS: [Algorithm; 15] = [
    Algorithm(&[Aes]),
    Algorithm(&[Serpent]),
    Algorithm(&[Twofish]),
    Algorithm(&[Camellia]),
    Algorithm(&[Kuznyechik]),
    Algorithm(&[Twofish, Aes]),
    Algorithm(&[Serpent, Twofish, Aes]),
    Algorithm(&[Aes, Serpent]),
    Algorithm(&[Aes, Twofish, Serpent]),
    Algorithm(&[Serpent, Twofish]),
    Algorithm(&[Kuznyechik, Camellia]),
    Algorithm(&[Twofish, Kuznyechik]),
    Algorithm(&[Serpent, Camellia]),
    Algorithm(&[Aes, Kuznyechik]),
    Algorithm(&[Camellia, Serpent, Kuznyechik]),
];

/// AES-256-XTS, the only algorithm the data path serves.
pub const AES: Algorithm = Algorithm(&[Aes]);

impl Algorithm {
    /// Lower-case name as VeraCrypt shows it, joined by `-` (e.g. `aes-twofish-serpent`).
    pub fn name(self) -> String {
        let names: Vec<&str> = self.0.iter().rev().map(|c| c.name()).collect();
        names.join("-")
    }

    /// Bytes of master key (primary plus secondary keys).
    pub fn key_len(self) -> usize {
        self.0.len() * 64
    }

    /// Encrypts `buf` (whole 16-byte blocks; a unit is 512 bytes, the last may be shorter)
    /// whose first unit is `first_unit`, with the master key `key` (at least `key_len` bytes).
    pub fn encrypt(self, key: &[u8], buf: &mut [u8], first_unit: u64) {
        let n = self.0.len();
        for (i, alg) in self.0.iter().enumerate() {
            let (k1, k2) = keys(key, n, i);
            xts(*alg, k1, k2, buf, first_unit, true);
        }
    }

    /// Decrypts what [`Algorithm::encrypt`] produced.
    pub fn decrypt(self, key: &[u8], buf: &mut [u8], first_unit: u64) {
        let n = self.0.len();
        for (i, alg) in self.0.iter().enumerate().rev() {
            let (k1, k2) = keys(key, n, i);
            xts(*alg, k1, k2, buf, first_unit, false);
        }
    }
}

fn keys(key: &[u8], n: usize, i: usize) -> (&[u8], &[u8]) {
    (
        &key[32 * i..32 * i + 32],
        &key[32 * (n + i)..32 * (n + i) + 32],
    )
}

fn xts(alg: BlockAlg, k1: &[u8], k2: &[u8], buf: &mut [u8], unit: u64, enc: bool) {
    match alg {
        Aes => xts_with::<aes::Aes256>(k1, k2, buf, unit, enc),
        Serpent => xts_with::<serpent::Serpent>(k1, k2, buf, unit, enc),
        Twofish => xts_with::<twofish::Twofish>(k1, k2, buf, unit, enc),
        Camellia => xts_with::<camellia::Camellia256>(k1, k2, buf, unit, enc),
        Kuznyechik => xts_with::<kuznyechik::Kuznyechik>(k1, k2, buf, unit, enc),
    }
}

fn xts_with<C>(k1: &[u8], k2: &[u8], buf: &mut [u8], first_unit: u64, enc: bool)
where
    C: BlockCipher + BlockEncrypt + BlockDecrypt + KeyInit + BlockSizeUser<BlockSize = U16>,
{
    // Every cipher here takes a 32-byte key, so construction cannot fail.
    let (Ok(data), Ok(tweak)) = (C::new_from_slice(k1), C::new_from_slice(k2)) else {
        unreachable!("all VeraCrypt ciphers take 256-bit keys")
    };
    for (u, chunk) in buf.chunks_mut(UNIT).enumerate() {
        let mut t = GenericArray::<u8, U16>::default();
        t[..8].copy_from_slice(&first_unit.wrapping_add(u as u64).to_le_bytes());
        tweak.encrypt_block(&mut t);
        let mut tw = u128::from_le_bytes(t.into());
        for block in chunk.chunks_exact_mut(16) {
            let mut b = GenericArray::<u8, U16>::default();
            for (o, (x, y)) in b.iter_mut().zip(block.iter().zip(tw.to_le_bytes())) {
                *o = x ^ y;
            }
            if enc {
                data.encrypt_block(&mut b);
            } else {
                data.decrypt_block(&mut b);
            }
            for (o, (x, y)) in block.iter_mut().zip(b.iter().zip(tw.to_le_bytes())) {
                *o = x ^ y;
            }
            b.zeroize();
            let carry = (tw >> 127) as u8;
            tw = (tw << 1) ^ (0x87 * u128::from(carry));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aes_xts_matches_the_engine_cipher() {
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
            alg.decrypt(&key, &mut buf, 0);
            assert_eq!(buf, [0x5au8; 448], "{}", alg.name());
        }
        assert_eq!(ALGORITHMS[6].name(), "aes-twofish-serpent");
        assert_eq!(ALGORITHMS[10].name(), "camellia-kuznyechik");
    }
}
