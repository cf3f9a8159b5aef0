//! The hardware XTS against `xts-mode` over `aes` 0.9 (an independent implementation): every
//! length from 1 to 40 data units, unit numbers near every carry, random keys and buffers.
//! Skipped, loudly, only on a CPU without the AES instructions.

use proptest::prelude::*;
use vcdirect_aes_hw::{XtsKeys, DATA_UNIT};

fn reference(key: &[u8; 64]) -> xts_mode::Xts128<aes09::Aes256> {
    use aes09::cipher::KeyInit;
    let data = aes09::Aes256::new_from_slice(&key[..32]).unwrap();
    let tweak = aes09::Aes256::new_from_slice(&key[32..]).unwrap();
    xts_mode::Xts128::new(data, tweak)
}

fn keys(master: &[u8; 64]) -> Option<Box<XtsKeys>> {
    let mut keys = Box::new(XtsKeys::new());
    if keys.set_key(master) {
        Some(keys)
    } else {
        eprintln!("SKIP: this CPU has no AES instructions");
        None
    }
}

fn check(master: &[u8; 64], plain: &[u8], first_unit: u64) {
    let Some(ours) = keys(master) else { return };
    let theirs = reference(master);
    let mut a = plain.to_vec();
    ours.encrypt(&mut a, first_unit);
    let mut b = plain.to_vec();
    theirs.encrypt_area(
        &mut b,
        DATA_UNIT,
        first_unit.into(),
        xts_mode::get_tweak_default,
    );
    assert_eq!(
        a,
        b,
        "encrypt: {} units from {first_unit:#x}",
        plain.len() / DATA_UNIT
    );
    ours.decrypt(&mut a, first_unit);
    assert_eq!(
        a,
        plain,
        "decrypt: {} units from {first_unit:#x}",
        plain.len() / DATA_UNIT
    );
}

#[test]
fn every_length_to_40_units_and_units_near_carries() {
    let master: [u8; 64] = core::array::from_fn(|i| (i as u8).wrapping_mul(29).wrapping_add(3));
    for units in 1..=40usize {
        let plain: Vec<u8> = (0..units * DATA_UNIT)
            .map(|i| (i * 13 + units) as u8)
            .collect();
        // Unit numbers are u64 (VeraCrypt's); `xts-mode` counts in u128, so no run crosses 2^64.
        for first in [
            0u64,
            1,
            0xfc,
            0xffff_fffc,
            0x00ff_ffff_ffff_fff0,
            u64::MAX - 40,
        ] {
            check(&master, &plain, first);
        }
    }
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// IEEE P1619/D16 Annex B vector 10: XTS-AES-256, data unit 0xff, 512 bytes.
#[test]
fn ieee1619_vector_10() {
    let key = hex("27182818284590452353602874713526624977572470936999595749669676273141592653589793238462643383279502884197169399375105820974944592");
    let Some(ours) = keys(&key.try_into().unwrap()) else {
        return;
    };
    let plain: Vec<u8> = (0..512).map(|i| i as u8).collect();
    let mut buf = plain.clone();
    ours.encrypt(&mut buf, 0xff);
    assert_eq!(buf[..48], hex("1c3b3a102f770386e4836c99e370cf9bea00803f5e482357a4ae12d414a3e63b5d31e276f8fe4a8d66b317f9ac683f44"));
    assert_eq!(buf[512 - 48..], hex("ab1cbb4c1550be97f7ab4066193c4caa773dad38014bd2092fa755c824bb5e54c4f36ffda9fcea70b9c6e693e148c151"));
    ours.decrypt(&mut buf, 0xff);
    assert_eq!(buf, plain);
}

#[test]
fn a_key_that_is_cleared_refuses_to_run() {
    let Some(mut ours) = keys(&[5u8; 64]) else {
        return;
    };
    ours.clear();
    assert!(!ours.is_ready());
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        ours.encrypt(&mut [0u8; DATA_UNIT], 0)
    }));
    assert!(result.is_err());
}

#[test]
#[should_panic(expected = "whole data units")]
fn a_partial_unit_is_refused() {
    match keys(&[1u8; 64]) {
        Some(k) => k.encrypt(&mut [0u8; 100], 0),
        None => panic!("whole data units (skipped: no AES instructions)"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn equals_xts_mode_on_random_keys_buffers_and_units(
        key in proptest::collection::vec(any::<u8>(), 64),
        plain in (1usize..24).prop_flat_map(|u| proptest::collection::vec(any::<u8>(), u * DATA_UNIT)),
        first_unit in 0..u64::MAX - 24,
    ) {
        check(&key.try_into().unwrap(), &plain, first_unit);
    }
}
