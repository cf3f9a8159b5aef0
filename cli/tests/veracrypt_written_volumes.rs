//! vcctl against volumes written by VeraCrypt 1.26.20's console build (tests/data/veracrypt-written,
//! see its README for the command lines): Whirlpool, BLAKE2s-256 and Streebog headers, a PIM,
//! keyfiles, a hidden volume with its own PRF and PIM, and ciphers vcctl refuses to serve.
//!
//! VeraCrypt formatted each data area with its own FAT writer, so a boot sector that reads back
//! with VeraCrypt's OEM name, the 0x55AA signature and a sector count equal to the header's data
//! size shows that the master key, the data offset and the XTS data-unit numbers are all right.

mod common;
use common::*;

/// Size of each 300 KiB volume's data area: 307200 minus two 128 KiB header groups.
const DATA_300K: u64 = 307_200 - 262_144;

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

fn boot_sector(name: &str, password: &str, extra: &[&str]) -> Vec<u8> {
    let file = path(name);
    let mut a = args("read", &file, extra);
    a.extend_from_slice(&["--offset", "0", "--length", "512"]);
    ok(vcctl(&a, password))
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

const WHIRLPOOL: &str = "whirlpool volume password\n";
const BLAKE2S: &str = "blake2s volume password\n";
const STREEBOG: &str = "streebog volume password\n";

#[test]
fn whirlpool_blake2s_and_streebog_volumes_open_and_decrypt_to_veracrypts_fat() {
    for (name, password, prf) in [
        ("whirlpool-aes.hc", WHIRLPOOL, "whirlpool"),
        ("blake2s-aes.hc", BLAKE2S, "blake2s"),
        ("streebog-aes.hc", STREEBOG, "streebog"),
    ] {
        let j = inspect(name, password, &["--prf", prf]);
        assert_normal_300k(&j, prf);
        let s = boot_sector(name, password, &["--prf", prf]);
        assert_eq!(fat_sectors(&s) * 512, DATA_300K, "{name}");
    }
}

#[test]
fn prf_is_found_when_not_given() {
    // Every PRF is tried; the one VeraCrypt used is reported.
    let j = inspect("streebog-aes.hc", STREEBOG, &[]);
    assert_normal_300k(&j, "streebog");
    let j = inspect("blake2s-aes.hc", BLAKE2S, &[]);
    assert_normal_300k(&j, "blake2s");
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
    assert_eq!(fat_sectors(&s) * 512, DATA_300K);
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
        assert_eq!(fat_sectors(&s) * 512, DATA_300K);
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
    assert_eq!(fat_sectors(&s) * 512, OUTER_DATA);

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
    assert_eq!(fat_sectors(&s) * 512, HIDDEN_DATA);

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

#[test]
fn serpent_and_aes_twofish_volumes_are_named_and_refused_cleanly() {
    for (name, password, cipher) in [
        ("serpent.hc", "serpent volume password\n", "serpent"),
        (
            "aes-twofish.hc",
            "aes twofish volume password\n",
            "aes-twofish",
        ),
    ] {
        let j = inspect(name, password, &["--prf", "sha512"]);
        assert_eq!(j["cipher"], cipher, "{j}");
        assert_eq!(j["prf"], "sha512", "{j}");
        assert_eq!(j["data_size"], DATA_300K, "{j}");
        let file = path(name);
        let mut a = args("read", &file, &["--prf", "sha512"]);
        a.extend_from_slice(&["--offset", "0", "--length", "512"]);
        let err = fails(vcctl(&a, password));
        assert!(err.contains(cipher) && err.contains("only aes"), "{err}");
    }
}
