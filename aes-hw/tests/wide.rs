//! The wide (VAES) path against `xts-mode` and against the XMM path: every length from 1 to
//! 40 data units (each batch of 16 units and each unit's two groups of 16 blocks, with and
//! without a remainder), unit numbers near carries, random keys and buffers. Skipped, loudly,
//! only on a CPU without VAES.

use proptest::prelude::*;
use vcdirect_aes_hw::{WideVectors, XtsKeys, DATA_UNIT};

fn reference(key: &[u8; 64]) -> xts_mode::Xts128<aes09::Aes256> {
    use aes09::cipher::KeyInit;
    let data = aes09::Aes256::new_from_slice(&key[..32]).unwrap();
    let tweak = aes09::Aes256::new_from_slice(&key[32..]).unwrap();
    xts_mode::Xts128::new(data, tweak)
}

fn check(master: &[u8; 64], plain: &[u8], first_unit: u64) {
    let Some(vectors) = WideVectors::in_user_mode() else {
        eprintln!("SKIP: this CPU has no VAES");
        return;
    };
    let mut keys = Box::new(XtsKeys::new());
    assert!(keys.set_key(master));
    let mut wide = plain.to_vec();
    keys.encrypt_wide(&vectors, &mut wide, first_unit);
    let mut narrow = plain.to_vec();
    keys.encrypt(&mut narrow, first_unit);
    let mut theirs = plain.to_vec();
    reference(master).encrypt_area(
        &mut theirs,
        DATA_UNIT,
        first_unit.into(),
        xts_mode::get_tweak_default,
    );
    let units = plain.len() / DATA_UNIT;
    assert_eq!(wide, theirs, "encrypt: {units} units from {first_unit:#x}");
    assert_eq!(
        narrow, theirs,
        "the XMM path: {units} units from {first_unit:#x}"
    );
    keys.decrypt_wide(&vectors, &mut wide, first_unit);
    assert_eq!(wide, plain, "decrypt: {units} units from {first_unit:#x}");
}

#[test]
fn wide_path_every_length_to_40_units_and_units_near_carries() {
    let master: [u8; 64] = core::array::from_fn(|i| (i as u8).wrapping_mul(41).wrapping_add(9));
    for units in 1..=40usize {
        let plain: Vec<u8> = (0..units * DATA_UNIT)
            .map(|i| (i * 29 + units) as u8)
            .collect();
        // Unit numbers are u64 (VeraCrypt's); `xts-mode` counts in u128, so no run crosses 2^64.
        for first in [0u64, 3, 0xf8, 0xffff_fff0, u64::MAX - 40] {
            check(&master, &plain, first);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn wide_path_equals_xts_mode_on_random_keys_buffers_and_units(
        key in proptest::collection::vec(any::<u8>(), 64),
        plain in (1usize..70).prop_flat_map(|u| proptest::collection::vec(any::<u8>(), u * DATA_UNIT)),
        first_unit in 0..u64::MAX - 80,
    ) {
        check(&key.try_into().unwrap(), &plain, first_unit);
    }
}
