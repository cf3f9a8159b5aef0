//! The 128-bit block ciphers VeraCrypt pairs with XTS besides AES: Serpent, Twofish, Camellia
//! and Kuznyechik, each with a 256-bit key.
//!
//! Owns: one block cipher per file, written here in safe Rust for speed (batches of
//! independent blocks, which is all XTS asks of a cipher) and checked against the published
//! test vectors and against RustCrypto's implementations in the tests.
//! Never: knows about data units, tweaks or cascades (the XTS layer does), or allocates.
//!
//! Every cipher keys itself in place ([`BlockCipher256::set_key`] writes the schedule where
//! the value lives, so a schedule placed in a volume's key block leaves no copy on a stack),
//! and wipes it in place ([`BlockCipher256::clear`], also on drop).

/// Bytes in one cipher block.
pub const BLOCK: usize = 16;

/// A 128-bit block cipher with a 256-bit key, as the XTS layer uses it.
pub trait BlockCipher256: Send + Sync {
    /// Keys this value in place: the schedule is written where the value lives, and any
    /// temporary that held key material is wiped before returning.
    fn set_key(&mut self, key: &[u8; 32]);
    /// Encrypts every block in place (ECB over independent blocks; XTS has XORed the tweaks).
    fn encrypt_blocks(&self, blocks: &mut [[u8; BLOCK]]);
    /// Decrypts every block in place.
    fn decrypt_blocks(&self, blocks: &mut [[u8; BLOCK]]);
    /// Wipes the schedule in place; the value holds no key afterwards.
    fn clear(&mut self);
    /// Words (of 32 bits) of the schedule that are not zero: 0 after [`BlockCipher256::clear`].
    /// The key-erasure evidence reads it in place.
    fn schedule_words_left(&self) -> usize;
}

mod placeholder;
pub use placeholder::{Camellia, Kuznyechik, Serpent, Twofish};
