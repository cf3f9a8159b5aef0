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

mod camellia;
mod kuznyechik;
mod serpent;
mod twofish;

pub use camellia::Camellia256;
pub use kuznyechik::Kuznyechik;
pub use serpent::Serpent;
pub use twofish::Twofish;

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

/// Block-level speed in MB/s (10^6 bytes) of encrypting and decrypting 4 KiB batches, the
/// median of three runs of about 0.3 s each, timed by the thread's CPU time where Linux
/// gives it (other work on the machine then does not lower the figure) and by the clock
/// otherwise. Meaningful only in a release build:
/// `cargo test --release -p vcdirect --lib crypto::ciphers -- --ignored --nocapture`.
#[cfg(test)]
fn speed_mb_s(cipher: &dyn BlockCipher256) -> (f64, f64) {
    use std::time::Instant;
    let start = Instant::now();
    let seconds = || {
        std::fs::read_to_string("/proc/thread-self/schedstat")
            .ok()
            .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
            .map_or_else(|| start.elapsed().as_secs_f64(), |ns| ns as f64 * 1e-9)
    };
    let mut blocks = [[0x5au8; BLOCK]; 256];
    let mut run = |encrypt: bool| {
        let mut rates = [0f64; 3];
        for rate in rates.iter_mut() {
            let from = seconds();
            let mut bytes = 0u64;
            while seconds() - from < 0.3 {
                for _ in 0..64 {
                    if encrypt {
                        cipher.encrypt_blocks(core::hint::black_box(&mut blocks));
                    } else {
                        cipher.decrypt_blocks(core::hint::black_box(&mut blocks));
                    }
                }
                bytes += 64 * 256 * BLOCK as u64;
            }
            *rate = bytes as f64 / (seconds() - from) / 1e6;
        }
        rates.sort_by(f64::total_cmp);
        rates[1]
    };
    (run(true), run(false))
}

/// `ours` against RustCrypto's `theirs` (the crates vcctl reads VeraCrypt volumes with, so
/// VeraCrypt's byte order) on `blocks`, both directions: decrypting the random blocks, not the
/// ciphertext, tests decryption on its own. The first difference, if any.
#[cfg(test)]
fn differs_from_reference<C>(
    ours: &dyn BlockCipher256,
    theirs: &C,
    blocks: &[[u8; BLOCK]],
) -> Option<alloc::string::String>
where
    C: cipher::BlockEncrypt
        + cipher::BlockDecrypt
        + cipher::BlockSizeUser<BlockSize = cipher::consts::U16>,
{
    use cipher::generic_array::GenericArray;
    for encrypt in [true, false] {
        let mut expected = blocks.to_vec();
        for b in expected.iter_mut() {
            match encrypt {
                true => theirs.encrypt_block(GenericArray::from_mut_slice(b)),
                false => theirs.decrypt_block(GenericArray::from_mut_slice(b)),
            }
        }
        let mut got = blocks.to_vec();
        match encrypt {
            true => ours.encrypt_blocks(&mut got),
            false => ours.decrypt_blocks(&mut got),
        }
        if let Some(i) = (0..got.len()).find(|&i| got[i] != expected[i]) {
            let way = if encrypt { "encrypt" } else { "decrypt" };
            return Some(alloc::format!(
                "{way}: block {i} of {} differs",
                blocks.len()
            ));
        }
    }
    None
}

/// `N` bytes from hex digits (whitespace ignored): the published vectors as their documents
/// print them.
#[cfg(test)]
fn hex<const N: usize>(s: &str) -> [u8; N] {
    let digits: alloc::vec::Vec<u8> = s
        .chars()
        .filter(|c| !c.is_whitespace())
        .map(|c| c.to_digit(16).expect("hex digit") as u8)
        .collect();
    assert_eq!(digits.len(), 2 * N, "{N} bytes of hex");
    let mut out = [0u8; N];
    for (o, pair) in out.iter_mut().zip(digits.chunks(2)) {
        *o = pair[0] << 4 | pair[1];
    }
    out
}

/// 32-bit halves of `words` that are not zero (a schedule kept in 64-bit words, counted as
/// [`BlockCipher256::schedule_words_left`] counts).
fn nonzero_halves<'a>(words: impl Iterator<Item = &'a u64>) -> usize {
    words
        .map(|&w| usize::from(w as u32 != 0) + usize::from((w >> 32) as u32 != 0))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use cipher::KeyInit;

    /// The cross-check the four ciphers' tests share can fail: a cipher keyed differently from
    /// the reference is reported, and so is one that only decrypts wrongly.
    #[test]
    fn the_reference_check_reports_a_different_cipher() {
        let mut ours = bytemuck::allocation::zeroed_box::<Serpent>();
        ours.set_key(&[1; 32]);
        let blocks = [[0x42u8; BLOCK]; 3];
        let same = ::serpent::Serpent::new_from_slice(&[1; 32]).unwrap();
        assert_eq!(differs_from_reference(&*ours, &same, &blocks), None);
        let other = ::serpent::Serpent::new_from_slice(&[2; 32]).unwrap();
        assert_eq!(
            differs_from_reference(&*ours, &other, &blocks).as_deref(),
            Some("encrypt: block 0 of 3 differs")
        );
    }
}
