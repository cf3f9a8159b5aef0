//! What vcctl tells the user when a volume opens in an unusual way: the backup header was used
//! (with the command that repairs the primary), a primary that decrypts but whose data area
//! does not fit falls back to the backup, and a master key whose two XTS halves are equal is
//! reported as VeraCrypt reports it (the volume opens, with a warning).

mod common;
use common::*;

use std::io::{Seek, SeekFrom, Write};

use vcctl::create::{seal, VolumeSpec};
use vcctl::kdf::Prf;
use vcctl::volume::{self, Credentials, Kind};
use zeroize::Zeroizing;

const SIZE: u64 = 1 << 20;
const PASSWORD: &str = "pw\n";

/// A fresh 1 MiB volume (SHA-256, PIM 1: quick to open) and its path.
fn fresh(tag: &str) -> TempPath {
    let f = TempPath::new(tag);
    ok(vcctl(
        &[
            "volume",
            "create",
            f.0.to_str().unwrap(),
            "--password-stdin",
            "--size",
            &SIZE.to_string(),
            "--prf",
            "sha256",
            "--pim",
            "1",
            "--fill",
            "zero",
        ],
        PASSWORD,
    ));
    f
}

fn creds() -> Credentials {
    Credentials {
        password: Zeroizing::new(b"pw".to_vec()),
        prf: Some(Prf::Sha256),
        pim: 1,
        keyfiles: Vec::new(),
    }
}

fn spec() -> VolumeSpec {
    VolumeSpec {
        password: Zeroizing::new(b"pw".to_vec()),
        prf: Prf::Sha256,
        pim: 1,
    }
}

/// Re-seals the header at `at` after `edit` changed it (a new salt; same password).
fn reseal(f: &TempPath, at: u64, edit: impl Fn(&mut vcctl::Header)) {
    let opened = volume::open(&f.0, &creds(), Kind::Normal).expect("opens");
    let mut h = opened.header;
    edit(&mut h);
    let salt = [7u8; 64];
    let bytes = seal(&h, &salt, &spec(), opened.algorithm).unwrap();
    let mut file = std::fs::OpenOptions::new().write(true).open(&f.0).unwrap();
    file.seek(SeekFrom::Start(at)).unwrap();
    file.write_all(&bytes).unwrap();
}

/// `vcctl volume CMD FILE` with the fresh volumes' password, PRF and PIM, then `extra`.
fn open(cmd: &str, f: &TempPath, extra: &[&str]) -> std::process::Output {
    let file = f.0.to_str().unwrap();
    let mut args = vec!["volume", cmd, file, "--password-stdin"];
    args.extend_from_slice(&["--prf", "sha256", "--pim", "1"]);
    args.extend_from_slice(extra);
    vcctl(&args, PASSWORD)
}

fn inspect(f: &TempPath) -> std::process::Output {
    open("inspect", f, &[])
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_volume_opened_normally_says_nothing() {
    let f = fresh("plain");
    let out = inspect(&f);
    assert!(out.status.success());
    assert!(stderr(&out).is_empty(), "{}", stderr(&out));
    let j = json(&out.stdout);
    assert_eq!(j["header"], "primary");
    assert_eq!(j["master_key_vulnerable"], false);
    assert_eq!(j["warnings"], serde_json::json!([]));
}

#[test]
fn the_backup_header_used_is_said_on_stderr_with_the_repair_command() {
    let f = fresh("backup-used");
    // Garbage in the primary header: only the backup opens.
    let mut bytes = std::fs::read(&f.0).unwrap();
    bytes[100] ^= 0xFF;
    std::fs::write(&f.0, bytes).unwrap();
    let out = inspect(&f);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("backup header at the end was used")
            && err.contains("vcctl volume restore-header"),
        "{err}"
    );
    let j = json(&out.stdout);
    assert_eq!(j["header"], "backup");
    assert_eq!(j["warnings"].as_array().map(Vec::len), Some(1), "{j}");
    // `read` says it too, and still reads.
    let out = open("read", &f, &["--offset", "0", "--length", "512"]);
    assert!(out.status.success());
    assert_eq!(out.stdout.len(), 512);
    assert!(stderr(&out).contains("backup header at the end was used"));
}

#[test]
fn a_primary_whose_data_area_does_not_fit_falls_back_to_the_backup() {
    let f = fresh("unfit");
    // The primary decrypts, but claims a data area past the end of the file.
    reseal(&f, 0, |h| h.data_size = SIZE * 4);
    let out = inspect(&f);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(json(&out.stdout)["header"], "backup");
    assert!(stderr(&out).contains("backup header at the end was used"));
    // With both copies claiming too much, the error is the truncation, as before.
    reseal(&f, SIZE - 131_072, |h| h.data_size = SIZE * 4);
    let err = fails(inspect(&f));
    assert!(err.contains("truncated"), "{err}");
}

#[test]
fn equal_xts_key_halves_open_with_veracrypts_warning() {
    let f = fresh("vulnerable");
    for at in [0, SIZE - 131_072] {
        reseal(&f, at, |h| {
            let (a, b) = h.master_key.split_at_mut(32);
            b[..32].copy_from_slice(&a[..32]);
        });
    }
    let out = inspect(&f);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("master key") && err.contains("vulnerable"),
        "{err}"
    );
    assert_eq!(json(&out.stdout)["master_key_vulnerable"], true);
}
