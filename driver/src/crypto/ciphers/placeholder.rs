//! Stand-ins for the fast Serpent, Twofish, Camellia and Kuznyechik of this module, over
//! RustCrypto's crates (serpent 0.5, twofish 0.7, camellia 0.1, kuznyechik 0.8: the versions
//! vcctl has always read VeraCrypt volumes with), until those land.
//!
//! Each holds only its 256-bit key and a keyed flag (plain data, all zero = empty, so it can
//! be allocated zeroed in place and keyed there like the real ones), and builds the crate's
//! schedule on the stack of every `encrypt_blocks` / `decrypt_blocks` call (the crates'
//! `zeroize` feature wipes it when the call returns). Slow, and not what the driver ships:
//! the real implementations replace this file, with the same names and the same trait.

use cipher::generic_array::GenericArray;
use cipher::{BlockDecrypt, BlockEncrypt, KeyInit};
use zeroize::Zeroize;

use super::{BlockCipher256, BLOCK};

macro_rules! placeholder {
    ($name:ident, $inner:ty, $what:literal) => {
        #[doc = concat!("Placeholder ", $what, " over RustCrypto's crate (see the module's text).")]
        #[derive(bytemuck::Zeroable)]
        pub struct $name {
            key: [u8; 32],
            keyed: u32,
        }

        impl $name {
            /// An unkeyed value (all zero).
            pub const fn empty() -> Self {
                $name {
                    key: [0; 32],
                    keyed: 0,
                }
            }

            fn schedule(&self) -> $inner {
                match <$inner>::new_from_slice(&self.key) {
                    Ok(c) => c,
                    Err(_) => panic!("a 256-bit key"),
                }
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::empty()
            }
        }

        impl Drop for $name {
            fn drop(&mut self) {
                self.clear();
            }
        }

        impl BlockCipher256 for $name {
            fn set_key(&mut self, key: &[u8; 32]) {
                self.key.copy_from_slice(key);
                self.keyed = 1;
            }

            fn encrypt_blocks(&self, blocks: &mut [[u8; BLOCK]]) {
                let c = self.schedule();
                for b in blocks {
                    c.encrypt_block(GenericArray::from_mut_slice(b));
                }
            }

            fn decrypt_blocks(&self, blocks: &mut [[u8; BLOCK]]) {
                let c = self.schedule();
                for b in blocks {
                    c.decrypt_block(GenericArray::from_mut_slice(b));
                }
            }

            fn clear(&mut self) {
                self.key.zeroize();
                self.keyed.zeroize();
            }

            fn schedule_words_left(&self) -> usize {
                let (words, _) = self.key.as_chunks::<4>();
                words.iter().filter(|w| **w != [0; 4]).count() + usize::from(self.keyed != 0)
            }
        }
    };
}

placeholder!(Serpent, serpent::Serpent, "Serpent");
placeholder!(Twofish, twofish::Twofish, "Twofish");
placeholder!(Camellia, camellia::Camellia256, "Camellia-256");
placeholder!(Kuznyechik, kuznyechik::Kuznyechik, "Kuznyechik");
