//! vcctl against volumes written by VeraCrypt 1.26.20's console build (tests/data/veracrypt-written,
//! see its README for the command lines): SHA-512, SHA-256, Whirlpool, BLAKE2s-256 and Streebog
//! headers, a PIM, keyfiles, two hidden volumes with their own PRF and PIM (64 KiB in
//! hidden-host.hc, 2 MiB in hidden-2m-host.hc), ciphers vcctl refuses to serve, and damaged or
//! truncated copies of sha512-aes.hc.
//!
//! VeraCrypt formatted each data area with its own FAT writer, so a boot sector that reads back
//! with VeraCrypt's OEM name, the 0x55AA signature and a sector count equal to the header's data
//! size shows that the master key, the data offset and the XTS data-unit numbers are all right.
//! The FAT serial numbers VeraCrypt chose at random are fixed in the committed files; the README
//! lists them as read without vcctl, and the tests assert that vcctl reads the same.

mod common;
use common::*;

/// Size of each 300 KiB volume's data area: 307200 minus two 128 KiB header groups.
const DATA_300K: u64 = 307_200 - 262_144;

/// FAT serial numbers of the committed volumes (README.md, "FAT serial numbers").
const SERIAL_SHA512: u32 = 0x37E8_BC34;
const SERIAL_SHA256: u32 = 0x62FE_558A;
const SERIAL_WHIRLPOOL: u32 = 0xD34D_355B;
const SERIAL_BLAKE2S: u32 = 0x47A6_A09D;
const SERIAL_STREEBOG: u32 = 0xE6E5_6776;
const SERIAL_PIM7: u32 = 0xD64E_F5CC;
const SERIAL_KEYFILES: u32 = 0x4A81_97BA;
const SERIAL_HOST_OUTER: u32 = 0x1A27_2FD2;
const SERIAL_HOST_HIDDEN: u32 = 0x154B_D2E9;
const SERIAL_2M_OUTER: u32 = 0x7C18_5C11;
const SERIAL_2M_HIDDEN: u32 = 0x4554_CADC;
const SERIAL_SERPENT: u32 = 0xB4A7_ED3B;
const SERIAL_AES_TWOFISH: u32 = 0x2A70_6C03;

fn path(name: &str) -> String {
    written(name).to_str().unwrap().to_owned()
}

fn args<'a>(cmd: &'a str, file: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec!["volume", cmd, file, "--password-stdin"];
    a.extend_from_slice(extra);
    a
}

fn inspect(name: &str, password: &str, extra: &[&str]) -> serde_json::Value {
    let file = path(name);
    json(&ok(vcctl(&args("inspect", &file, extra), password)))
}

fn inspect_fails(name: &str, password: &str, extra: &[&str]) -> String {
    let file = path(name);
    fails(vcctl(&args("inspect", &file, extra), password))
}

/// Runs `volume read` of `length` bytes at `offset` of the data area of the volume in `file`.
fn read_at(
    file: &str,
    password: &str,
    extra: &[&str],
    offset: u64,
    length: u64,
) -> std::process::Output {
    let (offset, length) = (offset.to_string(), length.to_string());
    let mut a = args("read", file, extra);
    a.extend_from_slice(&["--offset", &offset, "--length", &length]);
    vcctl(&a, password)
}

fn boot_sector(name: &str, password: &str, extra: &[&str]) -> Vec<u8> {
    ok(read_at(&path(name), password, extra, 0, 512))
}

/// Checks the FAT boot sector VeraCrypt wrote and returns its sector count.
fn fat_sectors(sector: &[u8]) -> u64 {
    assert_eq!(sector.len(), 512);
    assert_eq!(&sector[3..11], b"MSDOS5.0", "OEM name");
    assert_eq!(&sector[510..512], &[0x55, 0xAA], "boot signature");
    assert_eq!(
        u16::from_le_bytes([sector[11], sector[12]]),
        512,
        "bytes/sector"
    );
    let small = u16::from_le_bytes([sector[0x13], sector[0x14]]);
    if small != 0 {
        u64::from(small)
    } else {
        u64::from(u32::from_le_bytes(sector[0x20..0x24].try_into().unwrap()))
    }
}

/// The volume serial number of a FAT boot sector (FAT12/16: u32 at 0x27; FAT32: at 0x43).
fn fat_serial(sector: &[u8]) -> u32 {
    let at = if &sector[0x52..0x57] == b"FAT32" {
        0x43
    } else {
        0x27
    };
    u32::from_le_bytes(sector[at..at + 4].try_into().unwrap())
}

/// Asserts a boot sector of VeraCrypt's FAT spanning `data_size` bytes, with `serial`.
fn assert_fat(sector: &[u8], data_size: u64, serial: u32, what: &str) {
    assert_eq!(fat_sectors(sector) * 512, data_size, "{what}");
    assert_eq!(
        fat_serial(sector),
        serial,
        "{what}: serial {:08X}",
        fat_serial(sector)
    );
}

/// Asserts the header fields of a 300 KiB normal AES volume.
fn assert_normal_300k(j: &serde_json::Value, prf: &str) {
    assert_eq!(j["prf"], prf, "{j}");
    assert_eq!(j["cipher"], "aes", "{j}");
    assert_eq!(j["kind"], "normal", "{j}");
    assert_eq!(j["header"], "primary", "{j}");
    assert_eq!(j["data_offset"], 131_072, "{j}");
    assert_eq!(j["data_size"], DATA_300K, "{j}");
    assert_eq!(j["volume_size"], DATA_300K, "{j}");
    assert_eq!(j["sector_size"], 512, "{j}");
}

const SHA512: &str = "sha512 volume password\n";
const SHA256: &str = "sha256 volume password\n";
const WHIRLPOOL: &str = "whirlpool volume password\n";
const BLAKE2S: &str = "blake2s volume password\n";
const STREEBOG: &str = "streebog volume password\n";

#[test]
fn every_prf_volume_opens_and_decrypts_to_veracrypts_fat_with_its_serial() {
    for (name, password, prf, serial) in [
        ("sha512-aes.hc", SHA512, "sha512", SERIAL_SHA512),
        ("sha256-aes.hc", SHA256, "sha256", SERIAL_SHA256),
        ("whirlpool-aes.hc", WHIRLPOOL, "whirlpool", SERIAL_WHIRLPOOL),
        ("blake2s-aes.hc", BLAKE2S, "blake2s", SERIAL_BLAKE2S),
        ("streebog-aes.hc", STREEBOG, "streebog", SERIAL_STREEBOG),
    ] {
        let j = inspect(name, password, &["--prf", prf]);
        assert_normal_300k(&j, prf);
        let s = boot_sector(name, password, &["--prf", prf]);
        assert_fat(&s, DATA_300K, serial, name);
    }
}

#[test]
fn prf_is_found_when_not_given() {
    // Every PRF is tried; the one VeraCrypt used is reported.
    for (name, password, prf) in [
        ("sha512-aes.hc", SHA512, "sha512"),
        ("sha256-aes.hc", SHA256, "sha256"),
        ("streebog-aes.hc", STREEBOG, "streebog"),
        ("blake2s-aes.hc", BLAKE2S, "blake2s"),
    ] {
        let j = inspect(name, password, &[]);
        assert_normal_300k(&j, prf);
    }
    let s = boot_sector("sha512-aes.hc", SHA512, &[]);
    assert_fat(&s, DATA_300K, SERIAL_SHA512, "sha512-aes.hc");
}

#[test]
fn a_prf_other_than_the_volumes_is_a_wrong_password() {
    let err = inspect_fails("whirlpool-aes.hc", WHIRLPOOL, &["--prf", "blake2s"]);
    assert!(err.contains("wrong password"), "{err}");
}

const PIM7: &str = "sha512 pim volume password\n";

#[test]
fn pim_volume_opens_with_its_pim_only() {
    let j = inspect(
        "sha512-pim7-aes.hc",
        PIM7,
        &["--prf", "sha512", "--pim", "7"],
    );
    assert_normal_300k(&j, "sha512");
    let s = boot_sector(
        "sha512-pim7-aes.hc",
        PIM7,
        &["--prf", "sha512", "--pim", "7"],
    );
    assert_fat(&s, DATA_300K, SERIAL_PIM7, "sha512-pim7-aes.hc");
    for pim in ["0", "6", "8"] {
        let err = inspect_fails(
            "sha512-pim7-aes.hc",
            PIM7,
            &["--prf", "sha512", "--pim", pim],
        );
        assert!(err.contains("wrong password"), "PIM {pim}: {err}");
    }
}

const KEYFILES: &str = "keyfiles volume password\n";

#[test]
fn keyfile_volume_needs_the_password_and_both_keyfiles_in_any_order() {
    let (a, b) = (path("keyfile-a"), path("keyfile-b"));
    let name = "keyfiles-sha512-aes.hc";
    // VeraCrypt mixes each keyfile into the pool from position 0 by addition: order is free.
    for (first, second) in [(&a, &b), (&b, &a)] {
        let extra = ["--prf", "sha512", "--keyfile", first, "--keyfile", second];
        let j = inspect(name, KEYFILES, &extra);
        assert_normal_300k(&j, "sha512");
        let s = boot_sector(name, KEYFILES, &extra);
        assert_fat(&s, DATA_300K, SERIAL_KEYFILES, name);
    }
    for extra in [
        &["--prf", "sha512", "--keyfile", &a][..],
        &["--prf", "sha512"][..],
    ] {
        let err = inspect_fails(name, KEYFILES, extra);
        assert!(err.contains("wrong password"), "{extra:?}: {err}");
    }
    let both = ["--prf", "sha512", "--keyfile", &a, "--keyfile", &b];
    let err = inspect_fails(name, "keyfiles volume passwor\n", &both);
    assert!(err.contains("wrong password"), "{err}");
}

const OUTER: &str = "outer volume password\n";
const HIDDEN: &str = "hidden volume password\n";
const HOST: &str = "hidden-host.hc";
/// The 400 KiB host's outer data area.
const OUTER_DATA: u64 = 409_600 - 262_144;
/// The hidden volume's footprint, as given to VeraCrypt (`--size=64K`).
const HIDDEN_SIZE: u64 = 65_536;
/// VeraCrypt keeps the last 4 KiB of a small hidden volume's footprint out of its data area.
const HIDDEN_DATA: u64 = HIDDEN_SIZE - 4096;

#[test]
fn hidden_volume_with_its_own_prf_and_pim_opens_inside_the_outer_data_area() {
    let outer = inspect(HOST, OUTER, &["--prf", "sha512"]);
    assert_eq!(outer["kind"], "normal", "{outer}");
    assert_eq!(outer["prf"], "sha512", "{outer}");
    assert_eq!(outer["data_offset"], 131_072, "{outer}");
    assert_eq!(outer["data_size"], OUTER_DATA, "{outer}");
    let s = boot_sector(HOST, OUTER, &["--prf", "sha512"]);
    assert_fat(&s, OUTER_DATA, SERIAL_HOST_OUTER, "outer");

    // No --prf: the hidden header's Whirlpool is found among all PRFs.
    let hidden = inspect(HOST, HIDDEN, &["--hidden", "--pim", "3"]);
    assert_eq!(hidden["kind"], "hidden", "{hidden}");
    assert_eq!(hidden["prf"], "whirlpool", "{hidden}");
    assert_eq!(hidden["cipher"], "aes", "{hidden}");
    assert_eq!(hidden["header"], "primary", "{hidden}");
    assert_eq!(hidden["data_size"], HIDDEN_DATA, "{hidden}");
    assert_eq!(hidden["hidden_volume_size"], HIDDEN_DATA, "{hidden}");
    // The footprint ends where the outer data area ends (before the backup header group).
    assert_eq!(
        hidden["data_offset"],
        131_072 + OUTER_DATA - HIDDEN_SIZE,
        "{hidden}"
    );
    let s = boot_sector(
        HOST,
        HIDDEN,
        &["--hidden", "--prf", "whirlpool", "--pim", "3"],
    );
    assert_fat(&s, HIDDEN_DATA, SERIAL_HOST_HIDDEN, "hidden");

    // Each password opens only its own header, with its own PRF and PIM.
    let wrong = [
        (OUTER, &["--hidden", "--prf", "sha512"][..]),
        (HIDDEN, &["--prf", "whirlpool", "--pim", "3"][..]),
        (HIDDEN, &["--hidden", "--prf", "whirlpool"][..]),
    ];
    for (password, extra) in wrong {
        let err = inspect_fails(HOST, password, extra);
        assert!(err.contains("wrong password"), "{extra:?}: {err}");
    }
}

const OUTER_2M: &str = "large outer volume password\n";
const HIDDEN_2M: &str = "large hidden volume password\n";
const HOST_2M: &str = "hidden-2m-host.hc";
/// The 2.5 MiB host's outer data area.
const OUTER_2M_DATA: u64 = 2_621_440 - 262_144;
/// The hidden volume's footprint, as given to VeraCrypt (`--size=2M`): VeraCrypt's threshold.
const HIDDEN_2M_SIZE: u64 = 2 << 20;
/// From 2 MiB on, VeraCrypt keeps 128 KiB (one header group) out of the hidden data area.
const HIDDEN_2M_DATA: u64 = HIDDEN_2M_SIZE - 131_072;

#[test]
fn hidden_volume_of_2_mib_keeps_128_kib_of_its_footprint_out_of_its_data_area() {
    let outer = inspect(HOST_2M, OUTER_2M, &["--prf", "sha512"]);
    assert_eq!(outer["kind"], "normal", "{outer}");
    assert_eq!(outer["data_offset"], 131_072, "{outer}");
    assert_eq!(outer["data_size"], OUTER_2M_DATA, "{outer}");
    assert_eq!(outer["hidden_volume_size"], 0, "{outer}");
    let s = boot_sector(HOST_2M, OUTER_2M, &["--prf", "sha512"]);
    assert_fat(&s, OUTER_2M_DATA, SERIAL_2M_OUTER, "outer");

    let extra = ["--hidden", "--prf", "sha256"];
    let hidden = inspect(HOST_2M, HIDDEN_2M, &extra);
    assert_eq!(hidden["kind"], "hidden", "{hidden}");
    assert_eq!(hidden["prf"], "sha256", "{hidden}");
    assert_eq!(hidden["header"], "primary", "{hidden}");
    assert_eq!(hidden["data_offset"], 393_216, "{hidden}");
    assert_eq!(
        hidden["data_offset"],
        131_072 + OUTER_2M_DATA - HIDDEN_2M_SIZE,
        "{hidden}"
    );
    assert_eq!(hidden["data_size"], HIDDEN_2M_DATA, "{hidden}");
    assert_eq!(hidden["volume_size"], HIDDEN_2M_DATA, "{hidden}");
    assert_eq!(hidden["hidden_volume_size"], HIDDEN_2M_DATA, "{hidden}");
    let s = boot_sector(HOST_2M, HIDDEN_2M, &extra);
    assert_fat(&s, HIDDEN_2M_DATA, SERIAL_2M_HIDDEN, "hidden");

    let err = inspect_fails(HOST_2M, OUTER_2M, &extra);
    assert!(err.contains("wrong password"), "{err}");
}

/// The engine's XTS serves every cipher: `vcctl volume read` of VeraCrypt's Serpent and
/// AES-Twofish volumes returns the FAT boot sector VeraCrypt wrote (its serial number, the
/// data area's sector count).
#[test]
fn serpent_and_aes_twofish_volumes_read_the_boot_sector_veracrypt_wrote() {
    for (name, password, cipher, serial) in [
        (
            "serpent.hc",
            "serpent volume password\n",
            "serpent",
            SERIAL_SERPENT,
        ),
        (
            "aes-twofish.hc",
            "aes twofish volume password\n",
            "aes-twofish",
            SERIAL_AES_TWOFISH,
        ),
    ] {
        let j = inspect(name, password, &["--prf", "sha512"]);
        assert_eq!(j["cipher"], cipher, "{j}");
        assert_eq!(j["prf"], "sha512", "{j}");
        assert_eq!(j["data_size"], DATA_300K, "{j}");
        let s = boot_sector(name, password, &["--prf", "sha512"]);
        assert_fat(&s, DATA_300K, serial, cipher);
    }
}

// Damaged, truncated and partly read copies of sha512-aes.hc (SHA-512, PIM 0, no keyfile, AES).

#[test]
fn wrong_password_exits_2_with_one_line() {
    let file = path("sha512-aes.hc");
    let err = fails(read_at(
        &file,
        "sha512 volume passworD\n",
        &["--prf", "sha512"],
        0,
        512,
    ));
    assert!(err.contains("wrong password"), "{err}");
}

fn damaged_copy(tag: &str, edit: impl Fn(&mut Vec<u8>)) -> TempPath {
    let mut bytes = std::fs::read(written("sha512-aes.hc")).unwrap();
    assert_eq!(bytes.len(), 307_200);
    edit(&mut bytes);
    let p = TempPath::new(tag);
    std::fs::write(&p.0, bytes).unwrap();
    p
}

fn inspect_path(p: &TempPath) -> std::process::Output {
    let file = p.0.to_str().unwrap();
    vcctl(&args("inspect", file, &["--prf", "sha512"]), SHA512)
}

#[test]
fn truncated_files_exit_2_with_one_line() {
    // Empty; shorter than a header; the primary header but not the data area; one byte short
    // of the data area's end.
    for len in [0, 300, 150_000, 131_072 + DATA_300K as usize - 1] {
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
    assert_eq!(j["data_offset"], 131_072, "{j}");
    assert_eq!(j["data_size"], DATA_300K, "{j}");
    let s = ok(read_at(
        p.0.to_str().unwrap(),
        SHA512,
        &["--prf", "sha512"],
        0,
        512,
    ));
    assert_fat(&s, DATA_300K, SERIAL_SHA512, "through the backup header");
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
    let file = path("sha512-aes.hc");
    let read =
        |offset: u64, length: u64| read_at(&file, SHA512, &["--prf", "sha512"], offset, length);
    // The whole data area at once. Two sectors prove their data-unit numbers: sector 0 is the
    // FAT boot sector, and the first FAT (after the reserved sectors) starts with the media
    // descriptor of the boot sector followed by two 0xFF bytes.
    let size = DATA_300K;
    let whole = ok(read(0, size));
    assert_eq!(whole.len() as u64, size);
    assert_fat(&whole[..512], size, SERIAL_SHA512, "whole read");
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
        let part = ok(read(offset, length));
        let at = offset as usize;
        assert!(
            part == whole[at..at + length as usize],
            "read of {length} bytes at {offset} differs from the same bytes of the whole read"
        );
    }
    // The first byte past the data area.
    let err = fails(read(size, 1));
    assert!(err.contains("outside the data area"), "{err}");
}
