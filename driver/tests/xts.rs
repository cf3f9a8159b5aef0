//! XTS-AES-256 data-unit cipher: IEEE 1619 vector, differential checks against `xts-mode`
//! (over `aes` 0.9, an independent AES implementation), and round trips across unit bounds.

use proptest::prelude::*;
use vcdirect::crypto::{XtsCipher, DATA_UNIT};

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn key64(bytes: &[u8]) -> [u8; 64] {
    bytes.try_into().unwrap()
}

/// IEEE P1619/D16 Annex B vector 10: XTS-AES-256, data unit 0xff, 512 bytes.
const V10_KEY: &str = "27182818284590452353602874713526624977572470936999595749669676273141592653589793238462643383279502884197169399375105820974944592";
const V10_CT_PREFIX: &str = "1c3b3a102f770386e4836c99e370cf9bea00803f5e482357a4ae12d414a3e63b5d31e276f8fe4a8d66b317f9ac683f44";
const V10_CT_SUFFIX: &str = "ab1cbb4c1550be97f7ab4066193c4caa773dad38014bd2092fa755c824bb5e54c4f36ffda9fcea70b9c6e693e148c151";

fn v10_plaintext() -> Vec<u8> {
    (0..512).map(|i| (i % 256) as u8).collect()
}

#[test]
fn ieee1619_vector_10_encrypts_and_decrypts() {
    let cipher = XtsCipher::new(&key64(&hex(V10_KEY)));
    let mut buf = v10_plaintext();
    cipher.encrypt(&mut buf, 0xff);
    assert_eq!(&buf[..48], &hex(V10_CT_PREFIX)[..]);
    assert_eq!(&buf[512 - 48..], &hex(V10_CT_SUFFIX)[..]);
    cipher.decrypt(&mut buf, 0xff);
    assert_eq!(buf, v10_plaintext());
}

/// Vectors 11-14 share vector 10's key and plaintext at data units 0xffff .. 0xffffffffff;
/// their ciphertexts are checked against `xts-mode` (same shape: 512-byte units, 8-byte number).
#[test]
fn ieee1619_vectors_11_to_14_shape_matches_reference() {
    for unit in [0xffffu64, 0xff_ffff, 0xffff_ffff, 0xff_ffff_ffff] {
        let key = hex(V10_KEY);
        let mut ours = v10_plaintext();
        XtsCipher::new(&key64(&key)).encrypt(&mut ours, unit);
        let mut theirs = v10_plaintext();
        reference_encrypt(&key, &mut theirs, unit);
        assert_eq!(ours, theirs, "unit {unit:#x}");
    }
}

fn reference(key: &[u8]) -> xts_mode::Xts128<aes09::Aes256> {
    use aes09::cipher::KeyInit;
    let c1 = aes09::Aes256::new_from_slice(&key[..32]).unwrap();
    let c2 = aes09::Aes256::new_from_slice(&key[32..]).unwrap();
    xts_mode::Xts128::new(c1, c2)
}

fn reference_encrypt(key: &[u8], buf: &mut [u8], first_unit: u64) {
    reference(key).encrypt_area(
        buf,
        DATA_UNIT,
        first_unit.into(),
        xts_mode::get_tweak_default,
    );
}

fn reference_decrypt(key: &[u8], buf: &mut [u8], first_unit: u64) {
    reference(key).decrypt_area(
        buf,
        DATA_UNIT,
        first_unit.into(),
        xts_mode::get_tweak_default,
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn equals_xts_mode_on_random_keys_units_and_lengths(
        key in proptest::collection::vec(any::<u8>(), 64),
        units in 1usize..40,
        first_unit in any::<u64>().prop_map(|u| u >> 8),
        seed in any::<u8>(),
    ) {
        let plain: Vec<u8> = (0..units * DATA_UNIT).map(|i| (i as u8).wrapping_mul(31) ^ seed).collect();
        let cipher = XtsCipher::new(&key64(&key));
        let mut ours = plain.clone();
        cipher.encrypt(&mut ours, first_unit);
        let mut theirs = plain.clone();
        reference_encrypt(&key, &mut theirs, first_unit);
        prop_assert_eq!(&ours, &theirs);
        reference_decrypt(&key, &mut theirs, first_unit);
        prop_assert_eq!(&theirs, &plain);
        cipher.decrypt(&mut ours, first_unit);
        prop_assert_eq!(&ours, &plain);
    }

    /// Encrypting a buffer in pieces split at any unit boundary equals encrypting it whole.
    #[test]
    fn pieces_split_at_unit_boundaries_equal_the_whole(
        units in 2usize..30,
        split in 1usize..29,
        first_unit in 0u64..1_000_000,
    ) {
        let split = split.min(units - 1);
        let key = [7u8; 64];
        let cipher = XtsCipher::new(&key);
        let plain: Vec<u8> = (0..units * DATA_UNIT).map(|i| (i * 7) as u8).collect();
        let mut whole = plain.clone();
        cipher.encrypt(&mut whole, first_unit);
        let mut parts = plain.clone();
        let (a, b) = parts.split_at_mut(split * DATA_UNIT);
        cipher.encrypt(a, first_unit);
        cipher.encrypt(b, first_unit + split as u64);
        prop_assert_eq!(&whole, &parts);
    }
}

#[test]
fn the_data_unit_number_changes_the_ciphertext() {
    let cipher = XtsCipher::new(&[3u8; 64]);
    let mut a = vec![0u8; DATA_UNIT];
    let mut b = vec![0u8; DATA_UNIT];
    cipher.encrypt(&mut a, 256);
    cipher.encrypt(&mut b, 0);
    assert_ne!(a, b);
}

#[test]
#[should_panic(expected = "whole data units")]
fn a_partial_data_unit_is_refused() {
    XtsCipher::new(&[0u8; 64]).encrypt(&mut [0u8; 100], 0);
}

/// What runs, decided independently of `cpufeatures` (std's CPU detection): the hardware path
/// wherever the CPU has the AES instructions, on aarch64 whatever the build's cfg
/// (scripts/test-arm64-crypto.sh runs this under qemu-aarch64).
fn expected_backend() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("aes") {
        return "aes-ni";
    }
    #[cfg(target_arch = "aarch64")]
    if std::arch::is_aarch64_feature_detected!("aes") {
        return "armv8-aes";
    }
    "soft"
}

#[test]
fn backend_reports_the_aes_implementation_that_runs() {
    assert_eq!(vcdirect::crypto::backend(), expected_backend());
    let cipher = XtsCipher::new(&[9u8; 64]);
    match expected_backend() {
        "soft" => assert_eq!(cipher.path(), "aes-crate"),
        hw => assert_eq!(cipher.path(), hw),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// The hardware path and the portable one (`aes` 0.8) agree on every buffer: the two
    /// implementations a volume may run depending on its CPU.
    #[test]
    fn hardware_and_portable_paths_agree(
        key in proptest::collection::vec(any::<u8>(), 64),
        units in 1usize..40,
        first_unit in any::<u64>().prop_map(|u| u >> 1),
    ) {
        let key = key64(&key);
        let plain: Vec<u8> = (0..units * DATA_UNIT).map(|i| (i as u8) ^ key[i % 64]).collect();
        let (hw, portable) = (XtsCipher::new(&key), XtsCipher::portable(&key));
        prop_assert_eq!(portable.path(), "aes-crate");
        let (mut a, mut b) = (plain.clone(), plain.clone());
        hw.encrypt(&mut a, first_unit);
        portable.encrypt(&mut b, first_unit);
        prop_assert_eq!(&a, &b);
        hw.decrypt(&mut a, first_unit);
        prop_assert_eq!(&a, &plain);
    }
}
