//! VeraCrypt's encryption algorithms: the five block ciphers and the ten cascades of them,
//! their names, their numbers in the mount ABI and their master-key layout.
//!
//! Owns: the list (the same fifteen VeraCrypt 1.26 can create and mount), the order of the
//! ciphers in each (VeraCrypt's internal order: data is encrypted by the first cipher first,
//! decrypted by the last first; the name lists them the other way round, so `aes-twofish` is
//! Twofish then AES), and where each cipher's two XTS keys lie in the master key area.
//! Never: runs a cipher (the volume cipher does, `super::VolumeCipher`).

/// One of the 128-bit block ciphers, each with a 256-bit key.
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
    /// Lower-case name, as VeraCrypt's command line spells it.
    pub const fn name(self) -> &'static str {
        match self {
            BlockAlg::Aes => "aes",
            BlockAlg::Serpent => "serpent",
            BlockAlg::Twofish => "twofish",
            BlockAlg::Camellia => "camellia",
            BlockAlg::Kuznyechik => "kuznyechik",
        }
    }
}

/// Ciphers in one cascade at most.
pub const MAX_CIPHERS: usize = 3;
/// Bytes of key one cipher takes in XTS: a 32-byte primary (data) key and a 32-byte secondary
/// (tweak) key.
pub const KEY_PER_CIPHER: usize = 64;
/// Bytes of the largest master key area an algorithm uses (a three-cipher cascade's).
pub const MAX_KEY_AREA: usize = MAX_CIPHERS * KEY_PER_CIPHER;

use BlockAlg::{Aes, Camellia, Kuznyechik, Serpent, Twofish};

/// Each algorithm: its ciphers in encryption order, and its name.
const TABLE: [(&[BlockAlg], &str); 15] = [
    (&[Aes], "aes"),
    (&[Serpent], "serpent"),
    (&[Twofish], "twofish"),
    (&[Camellia], "camellia"),
    (&[Kuznyechik], "kuznyechik"),
    (&[Twofish, Aes], "aes-twofish"),
    (&[Serpent, Twofish, Aes], "aes-twofish-serpent"),
    (&[Aes, Serpent], "serpent-aes"),
    (&[Aes, Twofish, Serpent], "serpent-twofish-aes"),
    (&[Serpent, Twofish], "twofish-serpent"),
    (&[Kuznyechik, Camellia], "camellia-kuznyechik"),
    (&[Twofish, Kuznyechik], "kuznyechik-twofish"),
    (&[Serpent, Camellia], "camellia-serpent"),
    (&[Aes, Kuznyechik], "kuznyechik-aes"),
    (
        &[Camellia, Serpent, Kuznyechik],
        "kuznyechik-serpent-camellia",
    ),
];

/// An encryption algorithm: a single cipher or a cascade, one of [`ALGORITHMS`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Algorithm {
    /// Index into the table.
    index: u8,
}

/// Every algorithm VeraCrypt 1.26 can create and open, AES first, in the order of VeraCrypt's
/// own list (which is also the order a header's trial decryption tries them in).
pub const ALGORITHMS: [Algorithm; 15] = {
    let mut all = [Algorithm { index: 0 }; 15];
    let mut i = 0;
    while i < 15 {
        all[i] = Algorithm { index: i as u8 };
        i += 1;
    }
    all
};

/// AES-256 alone.
pub const AES: Algorithm = ALGORITHMS[0];

impl Algorithm {
    /// Its ciphers in encryption order (VeraCrypt's internal order).
    pub const fn ciphers(self) -> &'static [BlockAlg] {
        TABLE[self.index as usize].0
    }

    /// Lower-case name as VeraCrypt shows it, joined by `-` (e.g. `aes-twofish-serpent`).
    pub const fn name(self) -> &'static str {
        TABLE[self.index as usize].1
    }

    /// The algorithm called `name` (as [`Algorithm::name`] spells it, any case).
    pub fn from_name(name: &str) -> Option<Algorithm> {
        ALGORITHMS
            .into_iter()
            .find(|a| a.name().eq_ignore_ascii_case(name))
    }

    /// Its number in the mount ABI: 1 (AES) to 15, [`ALGORITHMS`]' order (0 is no algorithm).
    pub const fn id(self) -> u32 {
        self.index as u32 + 1
    }

    /// The algorithm numbered `id` in the mount ABI.
    pub const fn from_id(id: u32) -> Option<Algorithm> {
        match id {
            1..=15 => Some(ALGORITHMS[id as usize - 1]),
            _ => None,
        }
    }

    /// Bytes of master key it uses: [`KEY_PER_CIPHER`] per cipher.
    pub const fn key_len(self) -> usize {
        self.ciphers().len() * KEY_PER_CIPHER
    }

    /// The primary (data) and secondary (tweak) key of its cipher number `stage` (encryption
    /// order) in the master key area `key` (at least [`Algorithm::key_len`] bytes): VeraCrypt
    /// lays out every cipher's primary key in order, then every cipher's secondary key.
    /// `None` when `key` is too short or `stage` out of range.
    pub fn stage_keys(self, key: &[u8], stage: usize) -> Option<(&[u8; 32], &[u8; 32])> {
        let n = self.ciphers().len();
        if stage >= n {
            return None;
        }
        let primary = key.get(32 * stage..32 * stage + 32)?;
        let secondary = key.get(32 * (n + stage)..32 * (n + stage) + 32)?;
        Some((primary.try_into().ok()?, secondary.try_into().ok()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_names_and_key_layout() {
        for (i, a) in ALGORITHMS.into_iter().enumerate() {
            assert_eq!(Algorithm::from_id(a.id()), Some(a));
            assert_eq!(a.id(), i as u32 + 1);
            assert_eq!(Algorithm::from_name(a.name()), Some(a));
            let joined: alloc::vec::Vec<&str> =
                a.ciphers().iter().rev().map(|c| c.name()).collect();
            assert_eq!(joined.join("-"), a.name());
            assert!(a.key_len() <= MAX_KEY_AREA);
        }
        assert_eq!(Algorithm::from_id(0), None);
        assert_eq!(Algorithm::from_id(16), None);
        assert_eq!(Algorithm::from_name("AES-Twofish"), Some(ALGORITHMS[5]));
        let key: [u8; 192] = core::array::from_fn(|i| i as u8);
        let three = ALGORITHMS[6];
        let (p, s) = three.stage_keys(&key, 1).unwrap();
        assert_eq!((p[0], s[0]), (32, 128));
        assert!(three.stage_keys(&key, 3).is_none());
        assert!(three.stage_keys(&key[..191], 2).is_none());
    }
}
