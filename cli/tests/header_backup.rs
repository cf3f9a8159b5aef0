//! `vcctl volume backup-header` and `restore-header`: a damaged primary header restored from
//! the embedded backup and from a backup file; wrong passwords refused with the volume untouched;
//! a backup file never tells whether a hidden volume exists.

mod common;
use common::*;

fn create(f: &TempPath, hidden: bool) {
    let mut args = vec![
        "volume",
        "create",
        f.0.to_str().unwrap(),
        "--password-stdin",
        "--size",
        "1048576",
        "--prf",
        "sha256",
        "--pim",
        "1",
    ];
    if hidden {
        args.extend_from_slice(&["--hidden-size", "131072"]);
    }
    ok(vcctl(&args, if hidden { "o\nh\n" } else { "o\n" }));
}

fn run(cmd: &str, vol: &TempPath, extra: &[&str], stdin: &str) -> std::process::Output {
    let mut args = vec![
        "volume",
        cmd,
        vol.0.to_str().unwrap(),
        "--password-stdin",
        "--prf",
        "sha256",
        "--pim",
        "1",
    ];
    args.extend_from_slice(extra);
    vcctl(&args, stdin)
}

fn header_used(vol: &TempPath, extra: &[&str], stdin: &str) -> String {
    json(&ok(run("inspect", vol, extra, stdin)))["header"]
        .as_str()
        .unwrap()
        .to_string()
}

fn damage(vol: &TempPath, ranges: &[std::ops::Range<usize>]) {
    let mut bytes = std::fs::read(&vol.0).unwrap();
    for r in ranges {
        bytes[r.clone()].fill(0);
    }
    std::fs::write(&vol.0, bytes).unwrap();
}

const SIZE: usize = 1 << 20;
const PRIMARY: std::ops::Range<usize> = 0..512;
const BACKUP: std::ops::Range<usize> = SIZE - 131_072..SIZE - 131_072 + 512;

#[test]
fn damaged_primary_header_is_restored_from_the_embedded_backup() {
    let v = TempPath::new("restore-embedded");
    create(&v, true);
    damage(&v, &[PRIMARY, 65_536..65_536 + 512]);
    assert_eq!(header_used(&v, &[], "o\n"), "backup");
    let out = json(&ok(run("restore-header", &v, &[], "o\n")));
    assert_eq!(out["written_at"], serde_json::json!([0]));
    assert_eq!(header_used(&v, &[], "o\n"), "primary");
    // The hidden header too, with --hidden.
    ok(run("restore-header", &v, &["--hidden"], "h\n"));
    assert_eq!(header_used(&v, &["--hidden"], "h\n"), "primary");
}

#[test]
fn damaged_headers_are_restored_from_a_backup_file_to_both_positions() {
    let v = TempPath::new("restore-file");
    create(&v, true);
    let b = TempPath::new("restore-file.hdr");
    let bp = b.0.to_str().unwrap();
    ok(run("backup-header", &v, &[bp, "--with-hidden"], "o\nh\n"));
    assert_eq!(std::fs::metadata(&b.0).unwrap().len(), 131_072);
    // Both outer copies destroyed: only the file can help.
    damage(&v, &[PRIMARY, BACKUP]);
    fails(run("inspect", &v, &[], "o\n"));
    let out = json(&ok(run("restore-header", &v, &["--from", bp], "o\n")));
    assert_eq!(out["written_at"], serde_json::json!([0, SIZE - 131_072]));
    assert_eq!(header_used(&v, &[], "o\n"), "primary");
    damage(&v, &[PRIMARY]);
    assert_eq!(header_used(&v, &[], "o\n"), "backup");
    // The hidden slot of the file restores the hidden header.
    damage(
        &v,
        &[65_536..65_536 + 512, SIZE - 65_536..SIZE - 65_536 + 512],
    );
    ok(run(
        "restore-header",
        &v,
        &["--from", bp, "--hidden"],
        "h\n",
    ));
    assert_eq!(header_used(&v, &["--hidden"], "h\n"), "primary");
}

#[test]
fn a_restore_with_the_wrong_password_is_refused_and_touches_nothing() {
    let v = TempPath::new("restore-wrong");
    create(&v, false);
    let b = TempPath::new("restore-wrong.hdr");
    let bp = b.0.to_str().unwrap();
    ok(run("backup-header", &v, &[bp], "o\n"));
    damage(&v, &[PRIMARY]);
    let before = std::fs::read(&v.0).unwrap();
    for extra in [&[][..], &["--from", bp][..]] {
        let err = fails(run("restore-header", &v, extra, "not the password\n"));
        assert!(err.contains("wrong password"), "{err}");
        assert_eq!(std::fs::read(&v.0).unwrap(), before, "{extra:?}");
    }
    // A file that is not a header backup: one line, nothing written.
    let junk = TempPath::new("junk.hdr");
    std::fs::write(&junk.0, b"short").unwrap();
    let err = fails(run(
        "restore-header",
        &v,
        &["--from", junk.0.to_str().unwrap()],
        "o\n",
    ));
    assert!(err.contains("not a header backup"), "{err}");
    assert_eq!(std::fs::read(&v.0).unwrap(), before);
    // An existing backup file is never overwritten.
    let err = fails(run("backup-header", &v, &[bp], "o\n"));
    assert!(err.contains("cannot open"), "{err}");
}

#[test]
fn a_backup_file_does_not_tell_whether_a_hidden_volume_exists() {
    let plain = TempPath::new("bk-plain");
    create(&plain, false);
    let with = TempPath::new("bk-with");
    create(&with, true);
    let (bp, bw) = (TempPath::new("bk-plain.hdr"), TempPath::new("bk-with.hdr"));
    ok(run(
        "backup-header",
        &plain,
        &[bp.0.to_str().unwrap()],
        "o\n",
    ));
    ok(run(
        "backup-header",
        &with,
        &[bw.0.to_str().unwrap(), "--with-hidden"],
        "o\nh\n",
    ));
    let (p, w) = (std::fs::read(&bp.0).unwrap(), std::fs::read(&bw.0).unwrap());
    assert_eq!(p.len(), w.len());
    for (name, file) in [("without", &p), ("with", &w)] {
        for (slot, bytes) in [("normal", &file[..65_536]), ("hidden", &file[65_536..])] {
            let x = chi_square(bytes);
            assert!(
                x < 400.0,
                "{name} hidden volume, {slot} slot: chi-square {x}"
            );
            // The first 512 bytes (a header, or random) look random too.
            assert!(bytes[..512].iter().filter(|b| **b == 0).count() < 16);
        }
    }
    // Fresh salts: the backup is not a copy of the volume's header bytes.
    let vol = std::fs::read(&plain.0).unwrap();
    assert_ne!(&p[..64], &vol[..64]);
}
