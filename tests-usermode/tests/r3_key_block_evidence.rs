//! R3: by the time erase returns, no round key of the volume key is left in memory, shown
//! without reading freed memory: the platform's key-block watch (`vcdirect::crypto::
//! KeyBlockWatch`, recorded by `vcdirect_usermode::key_blocks`) is shown the cipher's block when
//! it is allocated and right before it is released, after its wipe, and reads then how many of
//! its 45 round keys (the two XTS key halves among them) are still in it. After erase the
//! block must have been released wiped, or be still allocated and wiped in place. The same
//! holds for every other cipher's schedule of a non-AES volume or a cascade (the words of
//! each stage's data and tweak schedules, read in their blocks).
//!
//! The check bites: with erase forgetting the cipher (`R3EraseLeaksCipher`: the erased flag set,
//! the block never released) and with the block released without its wipe
//! (`R3ReleaseUnwiped`), the same check fails, each with its own message; and with the wipe
//! covering the AES stage only (`R3CascadeStagesUnwiped`), a Serpent volume's and a cascade's
//! blocks are released with their schedules in them. The simulator's key
//! check reads the same record (`harness_bites`: faults `r3-leak`, `r3-unwiped`). One test,
//! because fault switches are global to the process.

mod common;

use common::*;
use vcdirect::crypto::{Algorithm, VolumeKey, AES, ALGORITHMS};
use vcdirect::faults::{set_faults, Fault};
use vcdirect::registry::Gates;
use vcdirect::volume::Volume;
use vcdirect_usermode::host::MemoryHost;
use vcdirect_usermode::key_blocks::Wiped;
use vcdirect_usermode::std_platform::StdPlatform;

/// Keys `VolumeKey::new` on `platform` with fault `fault` on (if any) and erases it; returns
/// the platform's verdict on its block.
fn erase_with(platform: &StdPlatform<MemoryHost>, fault: Option<Fault>) -> Result<Wiped, String> {
    erase_of(platform, AES, fault)
}

/// [`erase_with`] for a key of `algorithm` (the test key area).
fn erase_of(
    platform: &StdPlatform<MemoryHost>,
    algorithm: Algorithm,
    fault: Option<Fault>,
) -> Result<Wiped, String> {
    set_faults(fault.as_slice());
    let key = VolumeKey::with_algorithm(platform, algorithm, &key_area()[..algorithm.key_len()])
        .expect("key");
    let address = key.block_address();
    // Before erase the record finds every round key in the live block: the check reads them.
    let live = platform.key_blocks().check_erased(address);
    if algorithm
        .ciphers()
        .contains(&vcdirect::crypto::BlockAlg::Aes)
    {
        assert_eq!(
            live,
            Err("R3: erase returned with the cipher's block still allocated and 45 of 45 round keys in it".into())
        );
    } else {
        let live = live.expect_err("a live key");
        assert!(
            live.starts_with("R3: erase returned with the cipher's block still allocated and ")
                && live.ends_with(" words of the other ciphers' schedules in it"),
            "{live}"
        );
    }
    key.erase();
    assert!(key.is_erased(), "the flag is set whatever the fault");
    let verdict = platform.key_blocks().check_erased(address);
    set_faults(&[]);
    verdict
}

#[test]
fn r3_erase_leaves_no_round_key_in_the_cipher_block_by_the_platforms_record() {
    let platform: StdPlatform<MemoryHost> = StdPlatform::new(0);
    assert_eq!(erase_with(&platform, None), Ok(Wiped::ReleasedAfterWipe));

    // A mounted volume's key, erased by dismount.
    let plat: Plat = StdPlatform::new(0);
    let p = params(MIB, Gates::OFF);
    let vol = Volume::mount(plat.clone(), host_for(&p), &master_key(), p).expect("mount");
    let (status, _, _) = read(&vol, 0, 4096);
    assert_eq!(status, vcdirect::Status::Success);
    vol.dismount();
    assert_eq!(
        plat.key_blocks().check_erased(vol.key().block_address()),
        Ok(Wiped::ReleasedAfterWipe)
    );

    // The check bites, each fault with its own message.
    assert_eq!(
        erase_with(&platform, Some(Fault::R3EraseLeaksCipher)),
        Err("R3: erase returned with the cipher's block still allocated and 45 of 45 round keys in it".into())
    );
    assert_eq!(
        erase_with(&platform, Some(Fault::R3ReleaseUnwiped)),
        Err("R3: the cipher's block was released with 45 of 45 round keys not wiped".into())
    );
    assert_eq!(platform.key_blocks().recorded(), 3);

    // Every stage of a non-AES volume and of cascades (with and without AES) is wiped.
    for algorithm in [ALGORITHMS[1], ALGORITHMS[6], ALGORITHMS[14]] {
        assert_eq!(
            erase_of(&platform, algorithm, None),
            Ok(Wiped::ReleasedAfterWipe),
            "{}",
            algorithm.name()
        );
    }
    // A mounted cascade volume's key, erased by dismount.
    let mut p = params(MIB, Gates::OFF);
    p.algorithm = ALGORITHMS[14];
    let key = key_area();
    let vol =
        Volume::mount(plat.clone(), host_for(&p), &key[..p.algorithm.key_len()], p).expect("mount");
    let (status, _, _) = read(&vol, 0, 4096);
    assert_eq!(status, vcdirect::Status::Success);
    vol.dismount();
    assert_eq!(
        plat.key_blocks().check_erased(vol.key().block_address()),
        Ok(Wiped::ReleasedAfterWipe)
    );

    // The check bites: a wipe of the AES stage only leaves the other schedules in the block.
    for algorithm in [ALGORITHMS[1], ALGORITHMS[6]] {
        let err = erase_of(&platform, algorithm, Some(Fault::R3CascadeStagesUnwiped))
            .expect_err("the other stages unwiped");
        assert!(
            err.starts_with("R3: the cipher's block was released with ")
                && err.ends_with(" words of the other ciphers' schedules not wiped"),
            "{}: {err}",
            algorithm.name()
        );
        eprintln!(
            "r3 fault switch R3CascadeStagesUnwiped, {}: {err}",
            algorithm.name()
        );
    }
}
