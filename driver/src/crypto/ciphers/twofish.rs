//! Twofish with a 256-bit key (Schneier, Kelsey, Whiting, Wagner, Hall, Ferguson, "Twofish: A
//! 128-Bit Block Cipher", 1998; the sections named below are that paper's).
//!
//! Owns: the key-dependent S-box tables and the 40 round subkeys of one Twofish key, and Twofish
//! encryption and decryption of independent blocks, four at a time.
//! Never: knows about XTS, data units or cascades (the XTS layer does).
//!
//! Not constant-time: the function g is four lookups in key-dependent tables indexed by state
//! bytes (the "full keying" option of the paper's performance discussion: each table is the q-permutation chain of one
//! byte position, with the key's S vector mixed in, already multiplied by its column of the MDS
//! matrix), so the addresses touched depend on key and data, as in VeraCrypt's own C
//! implementation. Four blocks are interleaved round by round to hide the lookups' latency
//! (measured here: 1.5x the speed of two, 2x that of one).
//!
//! Byte order is VeraCrypt's (and RustCrypto's `twofish` crate's), the paper's: the key is
//! eight little-endian words M0..M7, a block four little-endian words.

use super::{BlockCipher256, BLOCK};
use zeroize::Zeroize;

/// Rounds of the cipher.
const ROUNDS: usize = 16;
/// Blocks processed together (a last two or one go as a pair or alone).
const INTERLEAVE: usize = 4;

/// The 4-bit permutations t0..t3 that build q0 and q1 (section "The Permutations q0 and q1").
const Q_PARTS: [[[u8; 16]; 4]; 2] = [
    [
        [
            0x8, 0x1, 0x7, 0xD, 0x6, 0xF, 0x3, 0x2, 0x0, 0xB, 0x5, 0x9, 0xE, 0xC, 0xA, 0x4,
        ],
        [
            0xE, 0xC, 0xB, 0x8, 0x1, 0x2, 0x3, 0x5, 0xF, 0x4, 0xA, 0x6, 0x7, 0x0, 0x9, 0xD,
        ],
        [
            0xB, 0xA, 0x5, 0xE, 0x6, 0xD, 0x9, 0x0, 0xC, 0x8, 0xF, 0x3, 0x2, 0x4, 0x7, 0x1,
        ],
        [
            0xD, 0x7, 0xF, 0x4, 0x1, 0x2, 0x6, 0xE, 0x9, 0xB, 0x3, 0x0, 0x8, 0x5, 0xC, 0xA,
        ],
    ],
    [
        [
            0x2, 0x8, 0xB, 0xD, 0xF, 0x7, 0x6, 0xE, 0x3, 0x1, 0x9, 0x4, 0x0, 0xA, 0xC, 0x5,
        ],
        [
            0x1, 0xE, 0x2, 0xB, 0x4, 0xC, 0x3, 0x7, 0x6, 0xD, 0xA, 0x5, 0xF, 0x9, 0x0, 0x8,
        ],
        [
            0x4, 0xC, 0x7, 0x5, 0x1, 0x6, 0x9, 0xA, 0x0, 0xE, 0xD, 0x8, 0x2, 0xB, 0x3, 0xF,
        ],
        [
            0xB, 0x9, 0x5, 0x1, 0xC, 0x3, 0xD, 0xE, 0x6, 0x4, 0x7, 0xF, 0x2, 0x0, 0x8, 0xA,
        ],
    ],
];

/// q0 or q1 from its four parts (same section).
const fn permutation(t: &[[u8; 16]; 4]) -> [u8; 256] {
    let mut q = [0u8; 256];
    let mut x = 0;
    while x < 256 {
        let a0 = (x >> 4) as u8;
        let b0 = (x & 15) as u8;
        let a1 = a0 ^ b0;
        let b1 = (a0 ^ ((b0 >> 1) | (b0 << 3)) ^ (a0 << 3)) & 15;
        let a2 = t[0][a1 as usize];
        let b2 = t[1][b1 as usize];
        let a3 = a2 ^ b2;
        let b3 = (a2 ^ ((b2 >> 1) | (b2 << 3)) ^ (a2 << 3)) & 15;
        let a4 = t[2][a3 as usize];
        let b4 = t[3][b3 as usize];
        q[x] = (b4 << 4) | a4;
        x += 1;
    }
    q
}

/// q0 and q1.
static Q: [[u8; 256]; 2] = [permutation(&Q_PARTS[0]), permutation(&Q_PARTS[1])];

/// For each byte position of h's input, which q (0 or 1) is applied at each stage, first stage
/// first; for a 256-bit key there are five (section 4.3.2, "The Function h", k = 4).
const Q_ORDER: [[usize; 5]; 4] = [
    [1, 1, 0, 0, 1],
    [0, 1, 1, 0, 0],
    [0, 0, 0, 1, 1],
    [1, 0, 1, 1, 0],
];

/// The MDS matrix (section "The Function g"), over GF(2^8) with the polynomial 0x169.
const MDS: [[u8; 4]; 4] = [
    [0x01, 0xEF, 0x5B, 0x5B],
    [0x5B, 0xEF, 0xEF, 0x01],
    [0xEF, 0x5B, 0x01, 0xEF],
    [0xEF, 0x01, 0xEF, 0x5B],
];

/// The Reed-Solomon matrix that derives the S vector (section "The Key Schedule"), polynomial 0x14D.
const RS: [[u8; 8]; 4] = [
    [0x01, 0xA4, 0x55, 0x87, 0x5A, 0x58, 0xDB, 0x9E],
    [0xA4, 0x56, 0x82, 0xF3, 0x1E, 0xC6, 0x68, 0xE5],
    [0x02, 0xA1, 0xFC, 0xC1, 0x47, 0xAE, 0x3D, 0x19],
    [0xA4, 0x55, 0x87, 0x5A, 0x58, 0xDB, 0x9E, 0x03],
];

/// Multiplication in GF(2^8) modulo `poly` (without branches on the operands).
fn gf_mul(mut a: u8, mut b: u8, poly: u16) -> u8 {
    let mut product = 0u8;
    for _ in 0..8 {
        product ^= a & 0u8.wrapping_sub(b & 1);
        let carry = 0u8.wrapping_sub(a >> 7);
        a = (a << 1) ^ (carry & (poly & 0xFF) as u8);
        b >>= 1;
    }
    product
}

/// The byte at position `j` of `h(x, l)` before the MDS multiply: the q chain of position
/// `j` with the bytes of l3, l2, l1, l0 added between its stages (section 4.3.2).
fn q_chain(j: usize, x: u8, l: &[u32; 4]) -> u8 {
    let order = &Q_ORDER[j % 4];
    let mut y = x;
    for stage in 0..4 {
        y = Q[order[stage]][usize::from(y)] ^ (l[3 - stage] >> (8 * j)) as u8;
    }
    Q[order[4]][usize::from(y)]
}

/// The function h (section 4.3.2) for a 256-bit key: list `l` is (L0, L1, L2, L3).
fn h(x: u32, l: &[u32; 4]) -> u32 {
    let mut z = 0u32;
    for j in 0..4 {
        let y = q_chain(j, (x >> (8 * j)) as u8, l);
        z ^= column(j, y);
    }
    z
}

/// Column `j` of the MDS matrix times byte `y`, as a little-endian word.
fn column(j: usize, y: u8) -> u32 {
    let mut word = 0u32;
    for (i, row) in MDS.iter().enumerate() {
        word |= u32::from(gf_mul(row[j % 4], y, 0x169)) << (8 * i);
    }
    word
}

/// A Twofish key schedule; all zeros is the unkeyed value.
#[derive(bytemuck::Zeroable)]
pub struct Twofish {
    /// g's four tables: `sbox[j][b]` is byte position `j`'s contribution to g for byte `b`.
    sbox: [[u32; 256]; 4],
    /// Whitening subkeys K0..K7 (section "The Expanded Key Words K_j"): input, then output.
    whitening: [u32; 8],
    /// Round subkeys K8..K39, two per round.
    round: [u32; 2 * ROUNDS],
}

impl Twofish {
    /// The unkeyed value (all zeros); key it with [`BlockCipher256::set_key`].
    pub const fn empty() -> Self {
        Self {
            sbox: [[0; 256]; 4],
            whitening: [0; 8],
            round: [0; 2 * ROUNDS],
        }
    }

    /// The function g ("The Function g"): h with the key's S vector, read from the tables.
    #[inline]
    fn g(&self, x: u32) -> u32 {
        self.sbox[0][usize::from(x as u8)]
            ^ self.sbox[1][usize::from((x >> 8) as u8)]
            ^ self.sbox[2][usize::from((x >> 16) as u8)]
            ^ self.sbox[3][usize::from((x >> 24) as u8)]
    }

    /// Encrypts `N` blocks (each as four words), their rounds interleaved. Not inlined: each
    /// width keeps its own small frame (the spilled words of four blocks are not added to the
    /// caller's).
    #[inline(never)]
    fn encrypt_words<const N: usize>(&self, blocks: &mut [[u32; 4]; N]) {
        let k = &self.whitening;
        let mut s = [[0u32; 4]; N];
        for (state, block) in s.iter_mut().zip(blocks.iter()) {
            for i in 0..4 {
                state[i] = block[i] ^ k[i];
            }
        }
        // Two rounds per step, with the halves' swap folded into which words play which part.
        for rk in self.round.chunks_exact(4) {
            for [a, b, c, d] in s.iter_mut() {
                let t0 = self.g(*a);
                let t1 = self.g(b.rotate_left(8));
                *c = (*c ^ t0.wrapping_add(t1).wrapping_add(rk[0])).rotate_right(1);
                *d = d.rotate_left(1) ^ t0.wrapping_add(t1.wrapping_mul(2)).wrapping_add(rk[1]);
            }
            for [a, b, c, d] in s.iter_mut() {
                let t0 = self.g(*c);
                let t1 = self.g(d.rotate_left(8));
                *a = (*a ^ t0.wrapping_add(t1).wrapping_add(rk[2])).rotate_right(1);
                *b = b.rotate_left(1) ^ t0.wrapping_add(t1.wrapping_mul(2)).wrapping_add(rk[3]);
            }
        }
        for (block, state) in blocks.iter_mut().zip(s.iter()) {
            for i in 0..4 {
                block[i] = state[(i + 2) % 4] ^ k[4 + i];
            }
        }
    }

    /// Decrypts `N` blocks (each as four words), their rounds interleaved; not inlined either.
    #[inline(never)]
    fn decrypt_words<const N: usize>(&self, blocks: &mut [[u32; 4]; N]) {
        let k = &self.whitening;
        let mut s = [[0u32; 4]; N];
        for (state, block) in s.iter_mut().zip(blocks.iter()) {
            for i in 0..4 {
                state[(i + 2) % 4] = block[i] ^ k[4 + i];
            }
        }
        for rk in self.round.chunks_exact(4).rev() {
            for [a, b, c, d] in s.iter_mut() {
                let t0 = self.g(*c);
                let t1 = self.g(d.rotate_left(8));
                *a = a.rotate_left(1) ^ t0.wrapping_add(t1).wrapping_add(rk[2]);
                *b = (*b ^ t0.wrapping_add(t1.wrapping_mul(2)).wrapping_add(rk[3])).rotate_right(1);
            }
            for [a, b, c, d] in s.iter_mut() {
                let t0 = self.g(*a);
                let t1 = self.g(b.rotate_left(8));
                *c = c.rotate_left(1) ^ t0.wrapping_add(t1).wrapping_add(rk[0]);
                *d = (*d ^ t0.wrapping_add(t1.wrapping_mul(2)).wrapping_add(rk[1])).rotate_right(1);
            }
        }
        for (block, state) in blocks.iter_mut().zip(s.iter()) {
            for i in 0..4 {
                block[i] = state[i] ^ k[i];
            }
        }
    }
}

/// Runs `f` over the blocks `N` at a time (their words), and returns the blocks left over.
#[inline]
fn by<const N: usize>(
    blocks: &mut [[u8; BLOCK]],
    f: impl Fn(&mut [[u32; 4]; N]),
) -> &mut [[u8; BLOCK]] {
    let mut groups = blocks.chunks_exact_mut(N);
    for group in &mut groups {
        let mut words = [[0u32; 4]; N];
        for (w, block) in words.iter_mut().zip(group.iter()) {
            *w = to_words(block);
        }
        f(&mut words);
        for (w, block) in words.iter().zip(group.iter_mut()) {
            *block = to_bytes(w);
        }
    }
    groups.into_remainder()
}

#[inline]
fn to_words(block: &[u8; BLOCK]) -> [u32; 4] {
    let mut w = [0u32; 4];
    for (i, word) in w.iter_mut().enumerate() {
        *word = u32::from_le_bytes([
            block[4 * i],
            block[4 * i + 1],
            block[4 * i + 2],
            block[4 * i + 3],
        ]);
    }
    w
}

#[inline]
fn to_bytes(w: &[u32; 4]) -> [u8; BLOCK] {
    let mut block = [0u8; BLOCK];
    for (i, word) in w.iter().enumerate() {
        block[4 * i..4 * i + 4].copy_from_slice(&word.to_le_bytes());
    }
    block
}

impl Default for Twofish {
    fn default() -> Self {
        Self::empty()
    }
}

impl BlockCipher256 for Twofish {
    fn set_key(&mut self, key: &[u8; 32]) {
        let mut m = [0u32; 8];
        for (word, bytes) in m.iter_mut().zip(key.chunks_exact(4)) {
            *word = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        }
        // Subkeys ("The Expanded Key Words K_j"): A_i = h(2i*rho, Me), B_i = h((2i+1)*rho, Mo) <<< 8.
        let mut even = [m[0], m[2], m[4], m[6]];
        let mut odd = [m[1], m[3], m[5], m[7]];
        const RHO: u32 = 0x0101_0101;
        let pairs = self.whitening.chunks_exact_mut(2);
        for (i, pair) in pairs.chain(self.round.chunks_exact_mut(2)).enumerate() {
            let i = i as u32;
            let a = h(2 * i * RHO, &even);
            let b = h((2 * i + 1) * RHO, &odd).rotate_left(8);
            pair[0] = a.wrapping_add(b);
            pair[1] = a.wrapping_add(b.wrapping_mul(2)).rotate_left(9);
        }
        // The S vector ("The Key Schedule"): S_i = RS . (key bytes 8i..8i+8), and g uses the list
        // (S3, S2, S1, S0) as h's (L0, L1, L2, L3).
        let mut s = [0u32; 4];
        for (i, chunk) in key.chunks_exact(8).enumerate() {
            let mut word = 0u32;
            for (r, row) in RS.iter().enumerate() {
                let mut byte = 0u8;
                for (coefficient, k) in row.iter().zip(chunk) {
                    byte ^= gf_mul(*coefficient, *k, 0x14D);
                }
                word |= u32::from(byte) << (8 * r);
            }
            s[3 - i] = word;
        }
        for (j, table) in self.sbox.iter_mut().enumerate() {
            for (x, entry) in table.iter_mut().enumerate() {
                *entry = column(j, q_chain(j, x as u8, &s));
            }
        }
        m.zeroize();
        even.zeroize();
        odd.zeroize();
        s.zeroize();
    }

    fn encrypt_blocks(&self, blocks: &mut [[u8; BLOCK]]) {
        let rest = by::<INTERLEAVE>(blocks, |w| self.encrypt_words(w));
        let rest = by::<2>(rest, |w| self.encrypt_words(w));
        by::<1>(rest, |w| self.encrypt_words(w));
    }

    fn decrypt_blocks(&self, blocks: &mut [[u8; BLOCK]]) {
        let rest = by::<INTERLEAVE>(blocks, |w| self.decrypt_words(w));
        let rest = by::<2>(rest, |w| self.decrypt_words(w));
        by::<1>(rest, |w| self.decrypt_words(w));
    }

    fn clear(&mut self) {
        self.sbox.zeroize();
        self.whitening.zeroize();
        self.round.zeroize();
    }

    fn schedule_words_left(&self) -> usize {
        let subkeys = self.whitening.iter().chain(&self.round);
        self.sbox
            .iter()
            .flatten()
            .chain(subkeys)
            .filter(|w| **w != 0)
            .count()
    }
}

impl Drop for Twofish {
    fn drop(&mut self) {
        self.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::{boxed::Box, vec};
    use cipher::KeyInit;
    use proptest::prelude::*;

    fn keyed(key: &[u8; 32]) -> Box<Twofish> {
        let mut c: Box<Twofish> = bytemuck::allocation::try_zeroed_box().unwrap();
        c.set_key(key);
        c
    }

    use super::super::hex;

    /// The paper's 256-bit full-encryption vector (its test-vector appendix, with the
    /// intermediate values; the AES submission's ecb_ival.txt): key 0123..., plaintext zero.
    const FULL_KEY: (&str, &str, &str) = (
        "0123456789abcdeffedcba987654321000112233445566778899aabbccddeeff",
        "00000000000000000000000000000000",
        "37527be0052334b89f0cfccae87cfa20",
    );

    #[test]
    fn twofish_known_answer_encrypt_and_decrypt() {
        let (key, plain, expected) = FULL_KEY;
        let c = keyed(&hex(key));
        let mut blocks = [hex::<16>(plain)];
        c.encrypt_blocks(&mut blocks);
        assert_eq!(blocks[0], hex::<16>(expected), "encrypt");
        c.decrypt_blocks(&mut blocks);
        assert_eq!(blocks[0], hex::<16>(plain), "decrypt");
    }

    /// The iterated 256-bit table (the paper's test-vector appendix; the AES submission's
    /// ecb_tbl.txt, KEYSIZE=256): start with key and plaintext zero; each step's key is the
    /// previous plaintext followed by the first half of the previous key, and its plaintext the
    /// previous ciphertext. Checked: ciphertexts I=1..5 and the last, I=49 (I=4 is also the
    /// vector VeraCrypt's own self-test checks, its Tests.c).
    #[test]
    fn twofish_iterated_known_answers() {
        let listed = [
            (1, "57ff739d4dc92c1bd7fc01700cc8216f"),
            (2, "d43bb7556ea32e46f2a282b7d45b4e0d"),
            (3, "90afe91bb288544f2c32dc239b2635e6"),
            (4, "6cb4561c40bf0a9705931cb6d408e7fa"),
            (5, "3059d6d61753b958d92f4781c8640e58"),
            (49, "37fe26ff1cf66175f5ddf4c33b97a205"),
        ];
        let mut key = [0u8; 32];
        let mut plain = [0u8; 16];
        let mut c: Box<Twofish> = bytemuck::allocation::try_zeroed_box().unwrap();
        for i in 1..=49 {
            c.set_key(&key);
            let mut blocks = [plain];
            c.encrypt_blocks(&mut blocks);
            if let Some((_, want)) = listed.iter().find(|(n, _)| *n == i) {
                assert_eq!(blocks[0], hex::<16>(want), "I={i}");
            }
            let cipher = blocks[0];
            c.decrypt_blocks(&mut blocks);
            assert_eq!(blocks[0], plain, "decrypt I={i}");
            key.copy_within(0..16, 16);
            key[..16].copy_from_slice(&plain);
            plain = cipher;
        }
    }

    #[test]
    fn twofish_known_answer_in_every_interleave_width() {
        let (key, plain, expected) = FULL_KEY;
        let c = keyed(&hex(key));
        for n in 1..=2 * INTERLEAVE + 3 {
            let mut blocks = vec![hex::<16>(plain); n];
            c.encrypt_blocks(&mut blocks);
            assert!(
                blocks.iter().all(|b| *b == hex::<16>(expected)),
                "{n} blocks"
            );
            c.decrypt_blocks(&mut blocks);
            assert!(blocks.iter().all(|b| *b == hex::<16>(plain)), "{n} blocks");
        }
    }

    #[test]
    fn r3_twofish_clear_wipes_the_schedule_and_rekeying_works() {
        let (key, plain, expected) = FULL_KEY;
        let mut c = keyed(&hex(key));
        assert!(c.schedule_words_left() > 0);
        c.clear();
        assert_eq!(c.schedule_words_left(), 0);
        c.set_key(&hex(key));
        let mut blocks = [hex::<16>(plain)];
        c.encrypt_blocks(&mut blocks);
        assert_eq!(blocks[0], hex::<16>(expected));
        assert_eq!(Twofish::default().schedule_words_left(), 0);
        assert_eq!(Twofish::empty().schedule_words_left(), 0);
    }

    /// Block-level speed, 4 KiB batches (see `speed_mb_s`).
    #[test]
    #[ignore = "a measurement: run in release with --ignored --nocapture"]
    fn twofish_speed_block_level() {
        let (enc, dec) = super::super::speed_mb_s(&*keyed(&[7; 32]));
        std::println!("Twofish, 4 KiB batches: encrypt {enc:.0} MB/s, decrypt {dec:.0} MB/s");
    }

    proptest! {
        #[test]
        fn twofish_matches_rustcrypto_twofish(
            key in any::<[u8; 32]>(),
            blocks in proptest::collection::vec(any::<[u8; 16]>(), 1..=40),
        ) {
            let theirs = ::twofish::Twofish::new_from_slice(&key).unwrap();
            prop_assert_eq!(super::super::differs_from_reference(&*keyed(&key), &theirs, &blocks), None);
        }
    }
}
