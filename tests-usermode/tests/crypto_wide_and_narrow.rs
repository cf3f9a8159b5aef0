//! The engine's crypto on the user-mode platform, wide (VAES, where the CPU has it) against
//! XMM only: the encryption pool (inline and split into pieces) gives the same bytes both ways
//! at every size a request can have, from one data unit to past a whole 1 MiB request.

use vcdirect::crypto::{Cipher, CryptoPool, VolumeKey, WideVectors, DATA_UNIT};
use vcdirect_usermode::host::MemoryHost;
use vcdirect_usermode::std_platform::StdPlatform;

#[test]
fn pool_gives_the_same_bytes_wide_and_narrow() {
    if !WideVectors::available() {
        eprintln!("SKIP: this CPU has no VAES: both runs would be the XMM path");
    }
    let key: [u8; 64] = core::array::from_fn(|i| (i as u8) ^ 0x6d);
    let wide: StdPlatform<MemoryHost> = StdPlatform::new(0);
    let narrow: StdPlatform<MemoryHost> = StdPlatform::new(0).without_wide_vectors();
    let (wide_key, narrow_key) = (
        VolumeKey::new(&wide, &key).unwrap(),
        VolumeKey::new(&narrow, &key).unwrap(),
    );
    for units in [1usize, 8, 17, 128, 2048, 2049] {
        let plain: Vec<u8> = (0..units * DATA_UNIT)
            .map(|i| (i * 13 + units) as u8)
            .collect();
        for pool in [CryptoPool::inline(), CryptoPool::new(4, 0)] {
            let (mut a, mut b) = (plain.clone(), plain.clone());
            pool.run(&wide, &wide_key, Cipher::Encrypt, &mut a, 4242)
                .unwrap();
            pool.run(&narrow, &narrow_key, Cipher::Encrypt, &mut b, 4242)
                .unwrap();
            assert_eq!(a, b, "{units} units, {} pieces", pool.threads());
            assert_ne!(a, plain);
            pool.run(&wide, &wide_key, Cipher::Decrypt, &mut a, 4242)
                .unwrap();
            assert_eq!(
                a,
                plain,
                "{units} units decrypted, {} pieces",
                pool.threads()
            );
        }
    }
}

/// The short path of requests without a waiter (`CryptoPool::run_short`) runs the hardware AES
/// XTS of an AES-alone volume (the same bytes as the pool) and refuses every other algorithm
/// without touching the buffer; the pool serves those (a cascade encrypted split into pieces
/// gives the bytes of one thread).
#[test]
fn short_path_runs_hardware_aes_only_and_the_pool_serves_every_algorithm() {
    use vcdirect::crypto::{CryptoError, ALGORITHMS, MAX_KEY_AREA};
    let platform: StdPlatform<MemoryHost> = StdPlatform::new(0);
    let key: [u8; MAX_KEY_AREA] = core::array::from_fn(|i| (i as u8).wrapping_mul(29) ^ 0x3c);
    let plain: Vec<u8> = (0..64 * DATA_UNIT).map(|i| (i * 7) as u8).collect();
    for algorithm in ALGORITHMS {
        let volume_key =
            VolumeKey::with_algorithm(&platform, algorithm, &key[..algorithm.key_len()]).unwrap();
        let mut pooled = plain.clone();
        CryptoPool::inline()
            .run(&platform, &volume_key, Cipher::Encrypt, &mut pooled, 99)
            .unwrap();
        let mut split = plain.clone();
        CryptoPool::forced_split(4)
            .run(&platform, &volume_key, Cipher::Encrypt, &mut split, 99)
            .unwrap();
        assert_eq!(split, pooled, "{}: pieces and one thread", algorithm.name());
        let mut short = plain.clone();
        let got = CryptoPool::run_short(&platform, &volume_key, Cipher::Encrypt, &mut short, 99);
        if volume_key.hardware_aes() {
            assert_eq!(got, Ok(()));
            assert_eq!(short, pooled, "{}", algorithm.name());
        } else {
            assert_eq!(
                got,
                Err(CryptoError::NotHardwareAes),
                "{}",
                algorithm.name()
            );
            assert_eq!(short, plain, "{}: buffer untouched", algorithm.name());
        }
        assert_eq!(
            volume_key.hardware_aes(),
            algorithm == ALGORITHMS[0] && vcdirect::crypto::hardware_aes()
        );
    }
}
