//! R3: by the time erase returns, no round key of the volume key is left in memory, shown
//! without reading freed memory: the platform's key-block watch (`vcdirect::crypto::
//! KeyBlockWatch`, recorded by `vcdirect_usermode::key_blocks`) is shown the cipher's block when
//! it is allocated and right before it is released, after its wipe, and reads then how many of
//! its 45 round keys (the two XTS key halves among them) are still in it. After erase the
//! block must have been released wiped, or be still allocated and wiped in place.
//!
//! The check bites: with erase forgetting the cipher (`R3EraseLeaksCipher`: the erased flag set,
//! the block never released) and with the block released without its wipe
//! (`R3ReleaseUnwiped`), the same check fails, each with its own message. The simulator's key
//! check reads the same record (`harness_bites`: faults `r3-leak`, `r3-unwiped`). One test,
//! because fault switches are global to the process.

mod common;

use common::*;
use vcdirect::crypto::VolumeKey;
use vcdirect::faults::{set_faults, Fault};
use vcdirect::registry::Gates;
use vcdirect::volume::Volume;
use vcdirect_usermode::host::MemoryHost;
use vcdirect_usermode::key_blocks::Wiped;
use vcdirect_usermode::std_platform::StdPlatform;

/// Keys `VolumeKey::new` on `platform` with fault `fault` on (if any) and erases it; returns
/// the platform's verdict on its block.
fn erase_with(platform: &StdPlatform<MemoryHost>, fault: Option<Fault>) -> Result<Wiped, String> {
    set_faults(fault.as_slice());
    let key = VolumeKey::new(platform, &master_key()).expect("key");
    let address = key.block_address();
    // Before erase the record finds every round key in the live block: the check reads them.
    assert_eq!(
        platform.key_blocks().check_erased(address),
        Err("R3: erase returned with the cipher's block still allocated and 45 of 45 round keys in it".into())
    );
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
}
