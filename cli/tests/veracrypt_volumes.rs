//! vcctl against volumes written by VeraCrypt itself (shared/testdata/veracrypt).

mod common;
use common::*;

const OUTER: &str = "aaaaaaaaaaaa\n";
const HIDDEN: &str = "bbbbbbbbbbbb\n";

/// Checks a FAT boot sector and returns its volume serial number.
fn fat_serial(sector: &[u8]) -> u32 {
    assert_eq!(sector.len(), 512);
    assert_eq!(&sector[3..11], b"MSDOS5.0");
    assert_eq!(&sector[510..512], &[0x55, 0xAA]);
    let at = if &sector[0x52..0x57] == b"FAT32" {
        0x43
    } else {
        0x27
    };
    u32::from_le_bytes(sector[at..at + 4].try_into().unwrap())
}

fn boot_sector(name: &str, stdin: &str, extra: &[&str]) -> Vec<u8> {
    let file = testdata(name);
    let mut args = vec!["volume", "read", file.to_str().unwrap(), "--password-stdin"];
    args.extend_from_slice(&["--offset", "0", "--length", "512"]);
    args.extend_from_slice(extra);
    ok(vcctl(&args, stdin))
}

fn inspect(name: &str, stdin: &str, extra: &[&str]) -> serde_json::Value {
    let file = testdata(name);
    let mut args = vec![
        "volume",
        "inspect",
        file.to_str().unwrap(),
        "--password-stdin",
    ];
    args.extend_from_slice(extra);
    json(&ok(vcctl(&args, stdin)))
}

#[test]
fn outer_sha512_volume_decrypts_to_fat_with_outer_serial_trying_all_prfs() {
    let j = inspect("vc_1-sha512-xts-aes", OUTER, &[]);
    assert_eq!(j["prf"], "sha512");
    assert_eq!(j["cipher"], "aes");
    assert_eq!(j["kind"], "normal");
    assert_eq!(j["header"], "primary");
    assert_eq!(j["data_offset"], 131072);
    assert_eq!(j["sector_size"], 512);
    let s = boot_sector("vc_1-sha512-xts-aes", OUTER, &[]);
    assert_eq!(fat_serial(&s), 0xDEAD_BABE);
}

#[test]
fn outer_sha256_volume_decrypts_to_fat_with_outer_serial() {
    let j = inspect("vc_1-sha256-xts-aes", OUTER, &["--prf", "sha256"]);
    assert_eq!(j["prf"], "sha256");
    let s = boot_sector("vc_1-sha256-xts-aes", OUTER, &["--prf", "sha256"]);
    assert_eq!(fat_serial(&s), 0xDEAD_BABE);
}

#[test]
fn hidden_container_opens_outer_and_hidden_volumes() {
    let name = "vc_1-sha512-xts-aes-hidden";
    let s = boot_sector(name, OUTER, &["--prf", "sha512"]);
    assert_eq!(fat_serial(&s), 0xDEAD_BABE);
    let j = inspect(name, HIDDEN, &["--prf", "sha512", "--hidden"]);
    assert_eq!(j["kind"], "hidden");
    assert_ne!(j["data_offset"], 131072);
    let s = boot_sector(name, HIDDEN, &["--prf", "sha512", "--hidden"]);
    assert_eq!(fat_serial(&s), 0xCAFE_BABE);
}

#[test]
fn keyfile_volume_needs_both_keyfiles_in_order() {
    let (k1, k2) = (testdata("keyfile1"), testdata("keyfile2"));
    let (k1, k2) = (k1.to_str().unwrap(), k2.to_str().unwrap());
    let s = boot_sector(
        "vck_1-sha512-xts-aes",
        OUTER,
        &["--prf", "sha512", "--keyfile", k1, "--keyfile", k2],
    );
    assert_eq!(fat_serial(&s), 0xDEAD_BABE);
    let file = testdata("vck_1-sha512-xts-aes");
    let err = fails(vcctl(
        &[
            "volume",
            "inspect",
            file.to_str().unwrap(),
            "--password-stdin",
            "--prf",
            "sha512",
            "--keyfile",
            k1,
        ],
        OUTER,
    ));
    assert!(err.contains("wrong password"), "{err}");
}

#[test]
fn wrong_password_exits_2_with_one_line() {
    let file = testdata("vc_1-sha512-xts-aes");
    let err = fails(vcctl(
        &[
            "volume",
            "read",
            file.to_str().unwrap(),
            "--password-stdin",
            "--prf",
            "sha512",
            "--offset",
            "0",
            "--length",
            "512",
        ],
        "wrong\n",
    ));
    assert!(err.contains("wrong password"), "{err}");
}

fn damaged_copy(tag: &str, edit: impl Fn(&mut Vec<u8>)) -> TempPath {
    let mut bytes = std::fs::read(testdata("vc_1-sha512-xts-aes")).unwrap();
    edit(&mut bytes);
    let p = TempPath::new(tag);
    std::fs::write(&p.0, bytes).unwrap();
    p
}

fn inspect_path(p: &TempPath) -> std::process::Output {
    vcctl(
        &[
            "volume",
            "inspect",
            p.0.to_str().unwrap(),
            "--password-stdin",
            "--prf",
            "sha512",
        ],
        OUTER,
    )
}

#[test]
fn truncated_files_exit_2_with_one_line() {
    for len in [0usize, 300, 150_000] {
        let p = damaged_copy("trunc", |b| b.truncate(len));
        let err = fails(inspect_path(&p));
        assert!(err.contains("truncated"), "{len}: {err}");
    }
}

#[test]
fn damaged_primary_header_falls_back_to_the_backup() {
    // Byte 300 is in the key area: the magic still decrypts, the key-area CRC fails.
    let p = damaged_copy("primary", |b| b[300] ^= 0xFF);
    let j = json(&ok(inspect_path(&p)));
    assert_eq!(j["header"], "backup");
}

#[test]
fn damaged_primary_and_backup_headers_exit_2_naming_the_check() {
    let p = damaged_copy("both", |b| {
        let backup = b.len() - 131_072;
        b[300] ^= 0xFF;
        b[backup + 300] ^= 0xFF;
    });
    let err = fails(inspect_path(&p));
    assert!(
        err.contains("damaged volume header") && err.contains("CRC"),
        "{err}"
    );
    // Garbage in the first encrypted block of both: nothing decrypts at all.
    let p = damaged_copy("both-magic", |b| {
        let backup = b.len() - 131_072;
        b[70] ^= 0xFF;
        b[backup + 70] ^= 0xFF;
    });
    let err = fails(inspect_path(&p));
    assert!(err.contains("wrong password"), "{err}");
}

#[test]
fn reads_use_absolute_data_unit_numbers_at_any_offset() {
    let file = testdata("vc_1-sha512-xts-aes");
    let read = |offset: u64, length: u64| {
        ok(vcctl(
            &[
                "volume",
                "read",
                file.to_str().unwrap(),
                "--password-stdin",
                "--prf",
                "sha512",
                "--offset",
                &offset.to_string(),
                "--length",
                &length.to_string(),
            ],
            OUTER,
        ))
    };
    // The whole data area at once. Two sectors prove their data-unit numbers: sector 0 is the
    // FAT boot sector, and the first FAT (after the reserved sectors) starts with the media
    // descriptor of the boot sector followed by two 0xFF bytes.
    let size = inspect("vc_1-sha512-xts-aes", OUTER, &["--prf", "sha512"])["data_size"]
        .as_u64()
        .expect("data_size");
    let whole = read(0, size);
    assert_eq!(whole.len() as u64, size);
    fat_serial(&whole[..512]);
    let fat = usize::from(u16::from_le_bytes([whole[14], whole[15]])) * 512;
    assert!(
        fat > 0 && fat + 512 <= whole.len(),
        "reserved sectors: {fat}"
    );
    assert_eq!(
        whole[fat], whole[21],
        "first FAT entry: the media descriptor"
    );
    assert_eq!(&whole[fat + 1..fat + 3], &[0xFF, 0xFF]);
    // Reads that start anywhere, of any length (inside a sector, across sector boundaries,
    // whole later sectors, up to the end of the data area) return the same bytes.
    for (offset, length) in [
        (3, 8),
        (511, 2),
        (700, 1500),
        (fat as u64, 512),
        (5 * 512 + 17, 3000),
        (size - 700, 700),
    ] {
        let part = read(offset, length);
        let at = offset as usize;
        assert!(
            part == whole[at..at + length as usize],
            "read of {length} bytes at {offset} differs from the same bytes of the whole read"
        );
    }
    let err = fails(vcctl(
        &[
            "volume",
            "read",
            file.to_str().unwrap(),
            "--password-stdin",
            "--prf",
            "sha512",
            "--offset",
            "36864",
            "--length",
            "1",
        ],
        OUTER,
    ));
    assert!(err.contains("outside the data area"), "{err}");
}
