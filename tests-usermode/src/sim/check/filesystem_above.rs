//! docs/review.md W1, with a filesystem stand-in above the volume (`crate::fs_above`): a dismount
//! refused because files are open changes nothing and the volume keeps serving; a completed
//! one (forced or clean) ran lock, dismount, drain, links, release, delete in that order, left
//! nothing dirty, let no write reach the deleted device and lost none of the filesystem's
//! writes (every sector holds, on the medium, the last version applications wrote).

use vcdirect::crypto::XtsCipher;
use vcdirect::dismount::{Step, ORDER};

use crate::fs_above::{check_nothing_lost, FsAbove, ModelDevice, Phase, SECTOR};
use crate::sim::log::DATA_OFFSET;
use crate::sim::SimPlatform;

/// Right after a refused dismount: nothing changed (`steps` as the device saw them).
pub(crate) fn check_refused(
    device: &ModelDevice<SimPlatform>,
    fs: &FsAbove<SimPlatform>,
) -> Vec<String> {
    let mut v = Vec::new();
    if device.steps() != [Step::Lock, Step::Release] {
        v.push(format!("W1: a refused dismount ran {:?}", device.steps()));
    }
    if device.volume().is_dismounted() || device.is_deleted() || !device.has_links() {
        v.push("W1: a refused dismount changed the volume".into());
    }
    if fs.phase() != Phase::Mounted {
        v.push(format!(
            "W1: the filesystem is {:?} after a refused dismount",
            fs.phase()
        ));
    }
    v
}

/// After the completed dismount: its order (the last six steps), nothing dirty, no late write,
/// nothing lost on the medium (decrypted with the volume's key).
pub(crate) fn check_completed(
    device: &ModelDevice<SimPlatform>,
    fs: &FsAbove<SimPlatform>,
    medium: &[u8],
    cipher: &XtsCipher,
) -> Vec<String> {
    let mut v = Vec::new();
    let steps = device.steps();
    if steps.len() < ORDER.len() || steps[steps.len() - ORDER.len()..] != ORDER {
        v.push(format!("W1: dismount ran {steps:?}, not {ORDER:?}"));
    }
    if !device.volume().is_dismounted() || !device.is_deleted() || device.has_links() {
        v.push("W1: a completed dismount left the volume, its device or its links".into());
    }
    if fs.dirty() != 0 {
        v.push(format!(
            "W1: {} dirty sectors left in the filesystem's cache",
            fs.dirty()
        ));
    }
    v.extend(check_nothing_lost(fs, |sector| {
        let at = DATA_OFFSET + sector * SECTOR;
        let mut s = medium[at as usize..(at + SECTOR) as usize].to_vec();
        cipher.decrypt(&mut s, at / SECTOR);
        s
    }));
    v
}
