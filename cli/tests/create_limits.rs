//! `vcctl volume create` refuses what cannot be made before writing anything (VeraCrypt's
//! largest volume, the file system's free space, an existing target), and comes into being
//! under a temporary name: no partial file is left, and an existing file is never replaced.

mod common;
use common::*;

use std::path::{Path, PathBuf};

/// VeraCrypt's TC_MAX_VOLUME_SIZE (BYTES_PER_PB, Common/Volumes.h and Tcdefs.h).
const CAP: u64 = 1125899906842624;

/// An empty folder of its own (so concurrent tests' files do not show), removed at the end.
struct Folder(PathBuf);

impl Folder {
    fn new(tag: &str) -> Folder {
        let d = std::env::temp_dir().join(format!("vcctl-create-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir(&d).unwrap();
        Folder(d)
    }
    fn entries(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(&self.0)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }
}

impl Drop for Folder {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn create(target: &Path, size: u64) -> std::process::Output {
    vcctl(
        &[
            "volume",
            "create",
            target.to_str().unwrap(),
            "--password-stdin",
            "--size",
            &size.to_string(),
            "--prf",
            "sha256",
            "--pim",
            "1",
        ],
        "pw\n",
    )
}

#[test]
fn a_size_over_veracrypts_largest_volume_is_refused_and_nothing_is_written() {
    let d = Folder::new("cap");
    let target = d.0.join("vol.hc");
    let err = fails(create(&target, CAP + 512));
    assert!(
        err.contains("largest volume") && err.contains(&CAP.to_string()),
        "{err}"
    );
    assert!(d.entries().is_empty(), "{:?}", d.entries());
}

#[test]
fn a_size_over_the_free_space_is_refused_and_nothing_is_written() {
    let d = Folder::new("free");
    let target = d.0.join("vol.hc");
    // The cap itself: allowed by VeraCrypt, more than any test machine has free.
    let err = fails(create(&target, CAP));
    assert!(err.contains("not enough free space"), "{err}");
    assert!(d.entries().is_empty(), "{:?}", d.entries());
}

#[test]
fn a_created_volume_leaves_no_partial_file_and_never_replaces_one() {
    let d = Folder::new("order");
    let target = d.0.join("vol.hc");
    ok(create(&target, 1 << 20));
    assert_eq!(d.entries(), ["vol.hc"]);
    assert_eq!(std::fs::metadata(&target).unwrap().len(), 1 << 20);
    // A second create over it is refused: the file is the same, nothing else appears.
    let before = std::fs::read(&target).unwrap();
    let err = fails(create(&target, 1 << 20));
    assert!(err.contains("exists"), "{err}");
    assert_eq!(std::fs::read(&target).unwrap(), before);
    assert_eq!(d.entries(), ["vol.hc"]);
}

#[test]
fn the_rename_never_replaces_a_file_that_appeared_meanwhile() {
    let d = Folder::new("rename");
    let (from, to) = (d.0.join("partial"), d.0.join("vol.hc"));
    std::fs::write(&from, b"new").unwrap();
    std::fs::write(&to, b"someone else's").unwrap();
    let e = vcctl::create::rename_no_replace(&from, &to).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::AlreadyExists);
    assert_eq!(std::fs::read(&to).unwrap(), b"someone else's");
    std::fs::remove_file(&to).unwrap();
    vcctl::create::rename_no_replace(&from, &to).unwrap();
    assert_eq!(std::fs::read(&to).unwrap(), b"new");
    assert!(!from.exists());
}
