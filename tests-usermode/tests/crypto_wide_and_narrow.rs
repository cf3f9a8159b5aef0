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
