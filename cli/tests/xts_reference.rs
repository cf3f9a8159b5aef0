//! The engine's XTS (`vcdirect::crypto::VolumeCipher`, which the driver, `vcctl volume read`
//! and `vcctl volume create` all run) against a second, simple implementation kept here as the
//! reference: vcctl's former per-block XTS over RustCrypto's block ciphers (one block at a
//! time, tweak by tweak, one full pass per cipher of a cascade in VeraCrypt's order, keys from
//! VeraCrypt's layout: every primary key, then every secondary key). Random keys, data and
//! absolute unit numbers, every one of the fifteen algorithms, both directions.
//!
//! The check bites: with the engine decrypting a cascade in encryption order
//! (`CascadeDecryptForward`), every cascade's decryption differs from the reference. One test,
//! because fault switches are global to the process.

use cipher::consts::U16;
use cipher::generic_array::GenericArray;
use cipher::{BlockCipher, BlockDecrypt, BlockEncrypt, BlockSizeUser, KeyInit};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use vcctl::cipher::{Algorithm, BlockAlg, ALGORITHMS};
use vcdirect::crypto::VolumeCipher;
use vcdirect::faults::{set_faults, Fault};

const UNIT: usize = 512;

/// The reference: XTS of `alg` over `buf` (whole units) from unit `first_unit`.
fn reference(alg: Algorithm, key: &[u8], buf: &mut [u8], first_unit: u64, encrypt: bool) {
    let n = alg.ciphers().len();
    let stage = |i: usize, buf: &mut [u8]| {
        let k1 = &key[32 * i..32 * i + 32];
        let k2 = &key[32 * (n + i)..32 * (n + i) + 32];
        match alg.ciphers()[i] {
            BlockAlg::Aes => xts_with::<aes::Aes256>(k1, k2, buf, first_unit, encrypt),
            BlockAlg::Serpent => xts_with::<serpent::Serpent>(k1, k2, buf, first_unit, encrypt),
            BlockAlg::Twofish => xts_with::<twofish::Twofish>(k1, k2, buf, first_unit, encrypt),
            BlockAlg::Camellia => {
                xts_with::<camellia::Camellia256>(k1, k2, buf, first_unit, encrypt)
            }
            BlockAlg::Kuznyechik => {
                xts_with::<kuznyechik::Kuznyechik>(k1, k2, buf, first_unit, encrypt)
            }
        }
    };
    if encrypt {
        (0..n).for_each(|i| stage(i, buf));
    } else {
        (0..n).rev().for_each(|i| stage(i, buf));
    }
}

fn xts_with<C>(k1: &[u8], k2: &[u8], buf: &mut [u8], first_unit: u64, encrypt: bool)
where
    C: BlockCipher + BlockEncrypt + BlockDecrypt + KeyInit + BlockSizeUser<BlockSize = U16>,
{
    let data = C::new_from_slice(k1).expect("256-bit key");
    let tweak = C::new_from_slice(k2).expect("256-bit key");
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
            if encrypt {
                data.encrypt_block(&mut b);
            } else {
                data.decrypt_block(&mut b);
            }
            for (o, (x, y)) in block.iter_mut().zip(b.iter().zip(tw.to_le_bytes())) {
                *o = x ^ y;
            }
            let carry = (tw >> 127) as u8;
            tw = (tw << 1) ^ (0x87 * u128::from(carry));
        }
    }
}

/// Algorithms whose engine XTS differs from the reference on random cases (both directions).
fn differing(rng: &mut StdRng) -> Vec<&'static str> {
    let mut out = Vec::new();
    for alg in ALGORITHMS {
        for _ in 0..3 {
            let key: Vec<u8> = (0..alg.key_len()).map(|_| rng.gen()).collect();
            let units = rng.gen_range(1..=19);
            // Absolute unit numbers anywhere, the tweak's high bytes and its wrap included.
            let unit = match rng.gen_range(0..3) {
                0 => rng.gen_range(0..1 << 20),
                1 => rng.gen(),
                _ => u64::MAX - rng.gen_range(0..8),
            };
            let plain: Vec<u8> = (0..units * UNIT).map(|_| rng.gen()).collect();
            let cipher = VolumeCipher::new(alg, &key);
            let mut ours = plain.clone();
            cipher.encrypt(&mut ours, unit);
            let mut theirs = plain.clone();
            reference(alg, &key, &mut theirs, unit, true);
            let mut back = ours.clone();
            cipher.decrypt(&mut back, unit);
            let mut theirs_back = ours.clone();
            reference(alg, &key, &mut theirs_back, unit, false);
            if ours != theirs || back != theirs_back || back != plain {
                out.push(alg.name());
                break;
            }
        }
    }
    out
}

#[test]
fn xts_of_every_algorithm_matches_the_simple_reference() {
    let mut rng = StdRng::seed_from_u64(0x5eed_ca5c);
    set_faults(&[]);
    assert_eq!(differing(&mut rng), Vec::<&str>::new());

    // The check bites: a cascade decrypted first cipher first.
    set_faults(&[Fault::CascadeDecryptForward]);
    let wrong = differing(&mut rng);
    set_faults(&[]);
    let cascades: Vec<&str> = ALGORITHMS
        .iter()
        .filter(|a| a.ciphers().len() > 1)
        .map(|a| a.name())
        .collect();
    eprintln!("fault switch CascadeDecryptForward: these differ from the reference: {wrong:?}");
    assert_eq!(wrong, cascades);
}
