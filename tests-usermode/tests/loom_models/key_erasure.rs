//! Key erasure under rundown (docs/review.md R3).

use std::sync::Arc;

use loom::sync::atomic::{AtomicBool, Ordering};

use vcdirect::crypto::{Cipher, CryptoError, CryptoPool, VolumeKey};
use vcdirect::faults::Fault;
use vcdirect_usermode::loom_platform::WorkItems;

use crate::{expected_ciphertext, explore, ordinary, plaintext, FaultsOn, Lp, MASTER, UNIT};

/// Loom sees only its own objects: the engine's `erased` flag is a plain atomic, so the model
/// publishes "erase has returned" through a loom atomic that every key user reads while it
/// holds its guard. That read and the store after `erase` are what loom orders both ways.
fn key_erase_model(expected: Arc<Vec<u8>>) {
    let env = Lp::new(WorkItems::Thread);
    let key = Arc::new(VolumeKey::<Lp>::new(&env, &MASTER).expect("key"));
    let erase_returned = Arc::new(AtomicBool::new(false));
    // A user through the encryption pool (the path both engine paths take).
    let pool_user = {
        let (key, env, expected) = (Arc::clone(&key), env.clone(), Arc::clone(&expected));
        loom::thread::spawn(move || {
            let mut buf = plaintext();
            match CryptoPool::inline().run(&env, &key, Cipher::Encrypt, &mut buf, UNIT) {
                Ok(()) => assert_eq!(buf, *expected, "ciphertext with the right key"),
                Err(CryptoError::KeyErased) => assert_eq!(buf, plaintext(), "buffer untouched"),
                Err(CryptoError::NotHardwareAes) => unreachable!("only the short path refuses"),
            }
        })
    };
    // A user holding the guard across a switch point.
    let guard_user = {
        let (key, expected, erase_returned) = (
            Arc::clone(&key),
            Arc::clone(&expected),
            Arc::clone(&erase_returned),
        );
        loom::thread::spawn(move || match key.acquire() {
            Ok(guard) => {
                let mut buf = plaintext();
                guard.cipher().encrypt(&mut buf, UNIT);
                assert!(
                    !erase_returned.load(Ordering::SeqCst),
                    "a key guard is alive after erase returned (docs/review.md R3)"
                );
                assert_eq!(buf, *expected, "ciphertext with the right key");
            }
            Err(CryptoError::KeyErased) => {}
            Err(CryptoError::NotHardwareAes) => unreachable!("acquire refuses for erasure only"),
        })
    };
    // The eraser is a thread of its own: its first step (the block flag, a plain atomic) then
    // happens when loom schedules it, not glued to this thread's last spawn.
    let eraser = {
        let (key, erase_returned) = (Arc::clone(&key), Arc::clone(&erase_returned));
        loom::thread::spawn(move || {
            key.erase();
            erase_returned.store(true, Ordering::SeqCst);
            assert!(key.is_erased() && key.is_blocked());
            assert_eq!(
                key.late_users(),
                0,
                "a key user outlived erase (docs/review.md R3)"
            );
            assert!(matches!(key.acquire(), Err(CryptoError::KeyErased)));
        })
    };
    pool_user.join().unwrap();
    guard_user.join().unwrap();
    eraser.join().unwrap();
    assert_eq!(
        key.late_users(),
        0,
        "a key user outlived erase (docs/review.md R3)"
    );
}

#[test]
fn key_erase_waits_for_users_and_refuses_new_ones() {
    let _g = ordinary();
    let expected = expected_ciphertext();
    explore("key_erase", 3, move || {
        key_erase_model(Arc::clone(&expected))
    });
}

#[test]
#[should_panic(expected = "docs/review.md R3")]
fn key_erase_model_catches_r3_skipped_rundown() {
    let _f = FaultsOn::new(&[Fault::R3SkipKeyRundown]);
    let expected = expected_ciphertext();
    explore("key_erase_r3_fault", 2, move || {
        key_erase_model(Arc::clone(&expected))
    });
}
