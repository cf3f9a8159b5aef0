//! R3: erasing a key zeroizes its round keys where they live, not only the erased flag.
//!
//! The cipher's block is read through /proc/self/mem before and after `VolumeKey::erase`:
//! afterwards none of its 16-byte round keys is still at its place (the block was zeroized,
//! then freed). With the fault switch that makes erase forget the cipher instead of dropping it
//! (the flag set, the keys left in memory), the same check must find them all. One test,
//! because fault switches are global to the process.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};

use vcdirect::crypto::{VolumeCipher, VolumeKey};
use vcdirect::faults::{set_faults, Fault};
use vcdirect_aes_hw::XtsKeys;
use vcdirect_usermode::host::MemoryHost;
use vcdirect_usermode::std_platform::StdPlatform;

/// `len` bytes of this process's memory at `addr`.
fn read_memory(addr: usize, len: usize) -> Vec<u8> {
    let mut out = vec![0u8; len];
    let mut mem = File::open("/proc/self/mem").expect("open /proc/self/mem");
    mem.seek(SeekFrom::Start(addr as u64)).expect("seek");
    mem.read_exact(&mut out).expect("read");
    out
}

/// The 45 round keys of the hardware path's schedule (`XtsKeys` is `repr(C)`: the data key's
/// encryption and decryption schedules, then the tweak key's, 15 keys of 16 bytes each, at its
/// start): how many are still in place after erase, of how many that were set before it.
/// `None` on a CPU without AES instructions (the portable path keeps `aes`'s own layout).
fn round_keys_left_after_erase() -> Option<(usize, usize)> {
    let platform: StdPlatform<MemoryHost> = StdPlatform::new(0);
    let master: [u8; 64] = core::array::from_fn(|i| (i as u8).wrapping_mul(11) ^ 0x9e);
    let key = VolumeKey::new(&platform, &master).expect("key");
    let addr = {
        let guard = key.acquire().expect("key");
        let cipher: &VolumeCipher = guard.cipher();
        cipher.hardware()? as *const XtsKeys as usize
    };
    const KEYS: usize = 45;
    let before = read_memory(addr, 16 * KEYS);
    key.erase();
    assert!(key.is_erased());
    let after = read_memory(addr, 16 * KEYS);
    let set = (0..KEYS)
        .filter(|&i| before[16 * i..16 * i + 16].iter().any(|&b| b != 0))
        .count();
    let left = (0..KEYS)
        .filter(|&i| {
            let old = &before[16 * i..16 * i + 16];
            old.iter().any(|&b| b != 0) && old == &after[16 * i..16 * i + 16]
        })
        .count();
    Some((left, set))
}

#[test]
fn r3_erase_zeroizes_the_round_keys_in_their_block() {
    set_faults(&[]);
    let Some((left, keyed)) = round_keys_left_after_erase() else {
        eprintln!("SKIP: this CPU has no AES instructions (the portable path's layout differs)");
        return;
    };
    assert_eq!(keyed, 45, "every round key was set before erase");
    assert_eq!(
        left, 0,
        "{left} of {keyed} round keys still in place after erase"
    );

    // The check bites: with the cipher forgotten, every round key stays where it was.
    set_faults(&[Fault::R3EraseLeaksCipher]);
    let (left, keyed) = round_keys_left_after_erase().expect("the hardware path, as above");
    set_faults(&[]);
    assert_eq!(
        left, keyed,
        "with erase leaking the cipher, its round keys stay in memory"
    );
}
