//! Camellia with a 256-bit key (RFC 3713), as VeraCrypt uses it: blocks and keys read
//! big-endian, 24 rounds in four groups of six, FL/FL⁻¹ layers between the groups.
//!
//! Owns: the 34 subkeys of 64 bits (kw, k, ke) in encryption order and again in decryption
//! order, written in place by [`Camellia256::set_key`]; the SP tables (the S-boxes and the
//! P-function combined into four 256-entry tables of `u32`, computed at compile time).
//! Never: allocates; `set_key` wipes every local that held key material before it returns.
//!
//! Not constant-time: every F-function is eight table lookups indexed by bytes of the state
//! XORed with a subkey, as in VeraCrypt's own C implementation; the tables are 4 KiB and sit
//! in the first-level cache while a batch runs. Up to four independent blocks go through the
//! rounds together, so the loads of one block overlap the others' arithmetic.

use super::{BlockCipher256, BLOCK};
use zeroize::Zeroize;

/// The S-box s1 of RFC 3713 section 2.4.4; s2, s3 and s4 are derived from it.
static SBOX1: [u8; 256] = [
    0x70, 0x82, 0x2c, 0xec, 0xb3, 0x27, 0xc0, 0xe5, 0xe4, 0x85, 0x57, 0x35, 0xea, 0x0c, 0xae, 0x41,
    0x23, 0xef, 0x6b, 0x93, 0x45, 0x19, 0xa5, 0x21, 0xed, 0x0e, 0x4f, 0x4e, 0x1d, 0x65, 0x92, 0xbd,
    0x86, 0xb8, 0xaf, 0x8f, 0x7c, 0xeb, 0x1f, 0xce, 0x3e, 0x30, 0xdc, 0x5f, 0x5e, 0xc5, 0x0b, 0x1a,
    0xa6, 0xe1, 0x39, 0xca, 0xd5, 0x47, 0x5d, 0x3d, 0xd9, 0x01, 0x5a, 0xd6, 0x51, 0x56, 0x6c, 0x4d,
    0x8b, 0x0d, 0x9a, 0x66, 0xfb, 0xcc, 0xb0, 0x2d, 0x74, 0x12, 0x2b, 0x20, 0xf0, 0xb1, 0x84, 0x99,
    0xdf, 0x4c, 0xcb, 0xc2, 0x34, 0x7e, 0x76, 0x05, 0x6d, 0xb7, 0xa9, 0x31, 0xd1, 0x17, 0x04, 0xd7,
    0x14, 0x58, 0x3a, 0x61, 0xde, 0x1b, 0x11, 0x1c, 0x32, 0x0f, 0x9c, 0x16, 0x53, 0x18, 0xf2, 0x22,
    0xfe, 0x44, 0xcf, 0xb2, 0xc3, 0xb5, 0x7a, 0x91, 0x24, 0x08, 0xe8, 0xa8, 0x60, 0xfc, 0x69, 0x50,
    0xaa, 0xd0, 0xa0, 0x7d, 0xa1, 0x89, 0x62, 0x97, 0x54, 0x5b, 0x1e, 0x95, 0xe0, 0xff, 0x64, 0xd2,
    0x10, 0xc4, 0x00, 0x48, 0xa3, 0xf7, 0x75, 0xdb, 0x8a, 0x03, 0xe6, 0xda, 0x09, 0x3f, 0xdd, 0x94,
    0x87, 0x5c, 0x83, 0x02, 0xcd, 0x4a, 0x90, 0x33, 0x73, 0x67, 0xf6, 0xf3, 0x9d, 0x7f, 0xbf, 0xe2,
    0x52, 0x9b, 0xd8, 0x26, 0xc8, 0x37, 0xc6, 0x3b, 0x81, 0x96, 0x6f, 0x4b, 0x13, 0xbe, 0x63, 0x2e,
    0xe9, 0x79, 0xa7, 0x8c, 0x9f, 0x6e, 0xbc, 0x8e, 0x29, 0xf5, 0xf9, 0xb6, 0x2f, 0xfd, 0xb4, 0x59,
    0x78, 0x98, 0x06, 0x6a, 0xe7, 0x46, 0x71, 0xba, 0xd4, 0x25, 0xab, 0x42, 0x88, 0xa2, 0x8d, 0xfa,
    0x72, 0x07, 0xb9, 0x55, 0xf8, 0xee, 0xac, 0x0a, 0x36, 0x49, 0x2a, 0x68, 0x3c, 0x38, 0xf1, 0xa4,
    0x40, 0x28, 0xd3, 0x7b, 0xbb, 0xc9, 0x43, 0xc1, 0x15, 0xe3, 0xad, 0xf4, 0x77, 0xc7, 0x80, 0x9e,
];

/// s2(x) = s1(x) <<< 1.
const fn s2(x: u8) -> u8 {
    SBOX1[x as usize].rotate_left(1)
}

/// s3(x) = s1(x) <<< 7.
const fn s3(x: u8) -> u8 {
    SBOX1[x as usize].rotate_left(7)
}

/// s4(x) = s1(x <<< 1).
const fn s4(x: u8) -> u8 {
    SBOX1[x.rotate_left(1) as usize]
}

/// The four SP tables. With the F-function's input bytes t1..t8 (t1 the most significant),
/// P sends each S-box output to a fixed set of output bytes y1..y8; the tables hold an S-box
/// output already placed in the bytes of one 32-bit half it reaches:
/// `SP[0]` = s1 in bytes (1,1,1,0), `SP[1]` = s2 in (0,1,1,1), `SP[2]` = s3 in (1,0,1,1),
/// `SP[3]` = s4 in (1,1,0,1) (first byte most significant).
static SP: [[u32; 256]; 4] = sp_tables();

const fn sp_tables() -> [[u32; 256]; 4] {
    let mut t = [[0u32; 256]; 4];
    let mut x = 0;
    while x < 256 {
        let b = x as u8;
        t[0][x] = SBOX1[x] as u32 * 0x0101_0100;
        t[1][x] = s2(b) as u32 * 0x0001_0101;
        t[2][x] = s3(b) as u32 * 0x0100_0101;
        t[3][x] = s4(b) as u32 * 0x0101_0001;
        x += 1;
    }
    t
}

/// The key schedule's constants Σ1..Σ6 (RFC 3713 section 2.2).
const SIGMA: [u64; 6] = [
    0xa09e_667f_3bcc_908b,
    0xb67a_e858_4caa_73b2,
    0xc6ef_372f_e94f_82be,
    0x54ff_53a5_f1d3_6f1c,
    0x10e5_27fa_de68_2d1d,
    0xb056_88c2_b3e6_c1fd,
];

/// The F-function (RFC 3713 section 2.4.1) by the SP tables.
///
/// Input bytes t1..t4 (the left half) reach the left output through patterns V =
/// (1,1,1,0), (0,1,1,1), (1,0,1,1), (1,1,0,1), and the right output through V XOR (V >>> 8);
/// t5..t8 reach both halves through the same pattern U. So left = U ^ V and
/// right = left ^ (V >>> 8).
#[inline(always)]
fn f(input: u64, key: u64) -> u64 {
    let x = input ^ key;
    let l = (x >> 32) as u32;
    let r = x as u32;
    let u = SP[1][(r >> 24) as u8 as usize]
        ^ SP[2][(r >> 16) as u8 as usize]
        ^ SP[3][(r >> 8) as u8 as usize]
        ^ SP[0][r as u8 as usize];
    let v = SP[0][(l >> 24) as u8 as usize]
        ^ SP[1][(l >> 16) as u8 as usize]
        ^ SP[2][(l >> 8) as u8 as usize]
        ^ SP[3][l as u8 as usize];
    let left = u ^ v;
    let right = left ^ v.rotate_right(8);
    (u64::from(left) << 32) | u64::from(right)
}

/// FL (RFC 3713 section 2.4.2).
#[inline(always)]
fn fl(x: u64, k: u64) -> u64 {
    let (mut xl, mut xr) = ((x >> 32) as u32, x as u32);
    let (kl, kr) = ((k >> 32) as u32, k as u32);
    xr ^= (xl & kl).rotate_left(1);
    xl ^= xr | kr;
    (u64::from(xl) << 32) | u64::from(xr)
}

/// FL⁻¹ (RFC 3713 section 2.4.3).
#[inline(always)]
fn fl_inv(y: u64, k: u64) -> u64 {
    let (mut yl, mut yr) = ((y >> 32) as u32, y as u32);
    let (kl, kr) = ((k >> 32) as u32, k as u32);
    yl ^= yr | kr;
    yr ^= (yl & kl).rotate_left(1);
    (u64::from(yl) << 32) | u64::from(yr)
}

/// Subkey pairs of one direction, in the order the rounds use them: (kw1, kw2), (k1, k2) ..
/// (k5, k6), (ke1, ke2), (k7, k8) .. (k11, k12), (ke3, ke4), (k13, k14) .. (k17, k18),
/// (ke5, ke6), (k19, k20) .. (k23, k24), (kw3, kw4): 34 subkeys of 64 bits.
const PAIRS_USED: usize = 17;

type Subkeys = [[u64; 2]; PAIRS_USED];

/// Which of KL, KR, KA, KB (0..3) and which left rotation give each pair of subkeys, in
/// encryption order (RFC 3713 section 2.2, 192/256-bit keys).
const PAIRS: [(u8, u8); PAIRS_USED] = [
    (0, 0),   // kw1, kw2: KL
    (3, 0),   // k1, k2: KB
    (1, 15),  // k3, k4: KR <<< 15
    (2, 15),  // k5, k6: KA <<< 15
    (1, 30),  // ke1, ke2: KR <<< 30
    (3, 30),  // k7, k8: KB <<< 30
    (0, 45),  // k9, k10: KL <<< 45
    (2, 45),  // k11, k12: KA <<< 45
    (0, 60),  // ke3, ke4: KL <<< 60
    (1, 60),  // k13, k14: KR <<< 60
    (3, 60),  // k15, k16: KB <<< 60
    (0, 77),  // k17, k18: KL <<< 77
    (2, 77),  // ke5, ke6: KA <<< 77
    (1, 94),  // k19, k20: KR <<< 94
    (2, 94),  // k21, k22: KA <<< 94
    (0, 111), // k23, k24: KL <<< 111
    (3, 111), // kw3, kw4: KB <<< 111
];

/// Camellia-256: the schedule for both directions, keyed in place.
///
/// All-zero bytes is the unkeyed value ([`Camellia256::empty`]).
#[derive(bytemuck::Zeroable)]
pub struct Camellia256 {
    /// Subkey pairs in encryption order.
    enc: Subkeys,
    /// The same subkeys in decryption order: (kw3, kw4), (k24, k23) .. (k2, k1) with
    /// (ke6, ke5) .. (ke2, ke1) in the FL layers, (kw1, kw2).
    dec: Subkeys,
}

impl Camellia256 {
    /// The unkeyed value (all zero).
    pub const fn empty() -> Self {
        Self {
            enc: [[0; 2]; PAIRS_USED],
            dec: [[0; 2]; PAIRS_USED],
        }
    }
}

impl Default for Camellia256 {
    fn default() -> Self {
        Self::empty()
    }
}

impl Drop for Camellia256 {
    fn drop(&mut self) {
        self.clear();
    }
}

/// Runs N blocks through the 24 rounds with the subkeys `k` (either direction: decryption is
/// the same network with the subkeys reordered).
#[inline(always)]
fn crypt<const N: usize>(k: &Subkeys, blocks: &mut [[u8; BLOCK]; N]) {
    let mut d1 = [0u64; N];
    let mut d2 = [0u64; N];
    for i in 0..N {
        let m = u128::from_be_bytes(blocks[i]);
        d1[i] = (m >> 64) as u64 ^ k[0][0];
        d2[i] = m as u64 ^ k[0][1];
    }
    // Between the whitening pairs: three round pairs, an FL layer, three round pairs, ...
    for (n, &[ka, kb]) in k[1..PAIRS_USED - 1].iter().enumerate() {
        if n % 4 == 3 {
            for i in 0..N {
                d1[i] = fl(d1[i], ka);
                d2[i] = fl_inv(d2[i], kb);
            }
        } else {
            for i in 0..N {
                d2[i] ^= f(d1[i], ka);
            }
            for i in 0..N {
                d1[i] ^= f(d2[i], kb);
            }
        }
    }
    let [kw3, kw4] = k[PAIRS_USED - 1];
    for i in 0..N {
        blocks[i] = ((u128::from(d2[i] ^ kw3) << 64) | u128::from(d1[i] ^ kw4)).to_be_bytes();
    }
}

/// Eight bytes read big-endian.
#[inline(always)]
fn be64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0, |w, &b| (w << 8) | u64::from(b))
}

/// Blocks that go through the rounds together.
const WIDTH: usize = 4;

/// Every block, [`WIDTH`] at a time, then the rest one by one.
fn crypt_all(k: &Subkeys, blocks: &mut [[u8; BLOCK]]) {
    let mut batches = blocks.chunks_exact_mut(WIDTH);
    for chunk in &mut batches {
        if let Some(batch) = chunk.first_chunk_mut::<WIDTH>() {
            crypt::<WIDTH>(k, batch);
        }
    }
    for one in batches.into_remainder() {
        crypt::<1>(k, core::array::from_mut(one));
    }
}

impl BlockCipher256 for Camellia256 {
    fn set_key(&mut self, key: &[u8; 32]) {
        // KL, KR, KA, KB as (high, low) halves; KA and KB by RFC 3713 section 2.2.
        let mut parts = [[0u64; 2]; 4];
        for (half, bytes) in key.chunks_exact(8).enumerate() {
            parts[half / 2][half % 2] = be64(bytes);
        }

        let mut d1 = parts[0][0] ^ parts[1][0];
        let mut d2 = parts[0][1] ^ parts[1][1];
        d2 ^= f(d1, SIGMA[0]);
        d1 ^= f(d2, SIGMA[1]);
        d1 ^= parts[0][0];
        d2 ^= parts[0][1];
        d2 ^= f(d1, SIGMA[2]);
        d1 ^= f(d2, SIGMA[3]);
        parts[2] = [d1, d2];
        d1 ^= parts[1][0];
        d2 ^= parts[1][1];
        d2 ^= f(d1, SIGMA[4]);
        d1 ^= f(d2, SIGMA[5]);
        parts[3] = [d1, d2];
        d1.zeroize();
        d2.zeroize();

        for (pair, &(which, rotation)) in PAIRS.iter().enumerate() {
            let part = &parts[usize::from(which)];
            let mut v = ((u128::from(part[0]) << 64) | u128::from(part[1]))
                .rotate_left(u32::from(rotation));
            self.enc[pair] = [(v >> 64) as u64, v as u64];
            v.zeroize();
        }
        parts.zeroize();

        // Decryption runs the same network with kw1/kw2 and kw3/kw4 swapped and every
        // round and FL subkey taken from the other end.
        self.dec[0] = self.enc[PAIRS_USED - 1];
        self.dec[PAIRS_USED - 1] = self.enc[0];
        for q in 1..PAIRS_USED - 1 {
            let from = PAIRS_USED - 1 - q;
            self.dec[q] = [self.enc[from][1], self.enc[from][0]];
        }
    }

    fn encrypt_blocks(&self, blocks: &mut [[u8; BLOCK]]) {
        crypt_all(&self.enc, blocks);
    }

    fn decrypt_blocks(&self, blocks: &mut [[u8; BLOCK]]) {
        crypt_all(&self.dec, blocks);
    }

    fn clear(&mut self) {
        self.enc.zeroize();
        self.dec.zeroize();
    }

    fn schedule_words_left(&self) -> usize {
        super::nonzero_halves(self.enc.iter().chain(self.dec.iter()).flatten())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::boxed::Box;
    use alloc::vec;
    use camellia::cipher::generic_array::GenericArray;
    use camellia::cipher::KeyInit;
    use proptest::prelude::*;

    use super::super::hex;

    fn keyed(key: &[u8; 32]) -> Camellia256 {
        let mut c = Camellia256::empty();
        c.set_key(key);
        c
    }

    /// Encrypts `pt` as one block and inside batches of every width the rounds use (the
    /// block at each position of 1..=9 copies), checks `ct`, and decrypts back.
    fn known_answer(key: &str, pt: &str, ct: &str) {
        let c = keyed(&hex(key));
        let (pt, ct) = (hex::<16>(pt), hex::<16>(ct));
        for n in 1..=9 {
            let mut blocks = vec![pt; n];
            c.encrypt_blocks(&mut blocks);
            assert!(blocks.iter().all(|b| *b == ct), "encrypt, batch of {n}");
            c.decrypt_blocks(&mut blocks);
            assert!(blocks.iter().all(|b| *b == pt), "decrypt, batch of {n}");
        }
    }

    /// RFC 3713 Appendix A, the 256-bit key; VeraCrypt's self-test (src/Common/Tests.c)
    /// checks the same vector.
    #[test]
    fn camellia_known_answer_rfc3713_appendix_a_256_bit_key() {
        known_answer(
            "0123456789abcdeffedcba9876543210 00112233445566778899aabbccddeeff",
            "0123456789abcdeffedcba9876543210",
            "9acc237dff16d76c20ef7c919e3a7509",
        );
    }

    /// VeraCrypt's second Camellia self-test vector (src/Common/Tests.c, `camellia_vectors`),
    /// one of the NESSIE project's Camellia-256 vectors.
    #[test]
    fn camellia_known_answer_veracrypt_self_test_vector() {
        known_answer(
            "2bd6459f82c5b300952c49104881ff48 2bd6459f82c5b300952c49104881ff48",
            "e684421716fc0b01aeb5c6765120f95f",
            "ea024714ad5c4d84ea024714ad5c4d84",
        );
    }

    /// A value made the way the XTS layer makes it: zeroed in place on the heap, then keyed.
    #[test]
    fn camellia_keys_in_a_zeroed_box() {
        let mut boxed: Box<Camellia256> =
            bytemuck::allocation::try_zeroed_box().expect("a zeroed box");
        assert_eq!(
            boxed.schedule_words_left(),
            0,
            "all-zero bytes is the empty value"
        );
        boxed.set_key(&[7; 32]);
        let reference = keyed(&[7; 32]);
        assert_eq!(boxed.enc, reference.enc);
        assert_eq!(boxed.dec, reference.dec);
    }

    /// R3: clear() leaves no schedule word; a cleared value keyed again works.
    #[test]
    fn r3_camellia_clear_wipes_every_schedule_word_and_rekeys() {
        let key = hex::<32>("0123456789abcdeffedcba9876543210 00112233445566778899aabbccddeeff");
        let mut c = keyed(&key);
        assert_eq!(
            c.schedule_words_left(),
            4 * 2 * PAIRS_USED,
            "every 32-bit word of this key's 68 subkeys is non-zero"
        );
        c.clear();
        assert_eq!(c.schedule_words_left(), 0, "cleared");
        c.set_key(&key);
        let mut block = [hex::<16>("0123456789abcdeffedcba9876543210")];
        c.encrypt_blocks(&mut block);
        assert_eq!(block[0], hex::<16>("9acc237dff16d76c20ef7c919e3a7509"));
    }

    /// Block-level speed, 4 KiB batches (see `speed_mb_s`).
    #[test]
    #[ignore = "a measurement: run in release with --ignored --nocapture"]
    fn camellia_speed_at_block_level() {
        let (enc, dec) = super::super::speed_mb_s(&keyed(&[0x3c; 32]));
        std::println!("Camellia256, 4 KiB batches: encrypt {enc:.0} MB/s, decrypt {dec:.0} MB/s");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Byte-identical to RustCrypto's camellia 0.1 (vcctl's, so VeraCrypt's byte order)
        /// for random keys and batches of 1..=40 blocks (every interleave width and
        /// remainder), both directions.
        #[test]
        fn camellia_matches_rustcrypto_camellia_0_1(
            key in any::<[u8; 32]>(),
            blocks in proptest::collection::vec(any::<[u8; 16]>(), 1..=40),
        ) {
            let theirs = camellia::Camellia256::new(GenericArray::from_slice(&key));
            prop_assert_eq!(super::super::differs_from_reference(&keyed(&key), &theirs, &blocks), None);
        }
    }
}
