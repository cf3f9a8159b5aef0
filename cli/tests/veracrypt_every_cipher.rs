//! Every volume VeraCrypt wrote for these tests, as listed in the machine-readable manifest
//! tests/data/veracrypt-written/volumes.tsv (see the folder's README): each row's header opens
//! with its password, keyfiles, PRF and PIM, and vcctl names the row's cipher or cascade and
//! reads the row's data offset and sizes. There is one volume per cipher and cascade VeraCrypt
//! offers (AES, Serpent, Twofish, Camellia, Kuznyechik and the ten cascades), each written by
//! VeraCrypt's console build.
//!
//! The FAT serial numbers in the manifest were read without vcctl (README, "FAT serial
//! numbers"); the boot sector of every volume is read back through vcctl's data path (the
//! engine's XTS, every algorithm). Rows whose PRF vcctl cannot derive yet (`argon2`) are only checked to be
//! present with their file size.

mod common;
use common::*;

use std::collections::BTreeSet;

/// The manifest's columns, in order.
const COLUMNS: &str = "file\tvolume\tpassword\tkeyfiles\tprf\tpim\talgorithm\tfat_serial\t\
                       data_offset\tdata_size\tfile_size";

/// VeraCrypt 1.26's fifteen encryption algorithms, as vcctl names them (VeraCrypt's
/// `--encryption` names in lower case).
const EVERY_ALGORITHM: [&str; 15] = [
    "aes",
    "serpent",
    "twofish",
    "camellia",
    "kuznyechik",
    "aes-twofish",
    "aes-twofish-serpent",
    "serpent-aes",
    "serpent-twofish-aes",
    "twofish-serpent",
    "camellia-kuznyechik",
    "camellia-serpent",
    "kuznyechik-aes",
    "kuznyechik-serpent-camellia",
    "kuznyechik-twofish",
];

/// PRFs vcctl cannot derive a header key with yet: those rows are not opened.
const NOT_YET_OPENED: &[&str] = &["argon2"];

/// One row of volumes.tsv.
#[derive(Clone, Debug)]
struct Row {
    file: String,
    /// `normal` (the header at byte 0; an outer volume too) or `hidden` (opened with
    /// `--hidden`: the header at byte 65536).
    volume: String,
    password: String,
    keyfiles: Vec<String>,
    prf: String,
    pim: u32,
    algorithm: String,
    fat_serial: u32,
    data_offset: u64,
    data_size: u64,
    file_size: u64,
}

impl Row {
    fn what(&self) -> String {
        format!("{} ({})", self.file, self.volume)
    }
}

fn manifest() -> Vec<Row> {
    let text = std::fs::read_to_string(written("volumes.tsv")).expect("volumes.tsv");
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some(COLUMNS), "volumes.tsv columns");
    lines
        .map(|line| {
            let f: Vec<&str> = line.split('\t').collect();
            assert_eq!(f.len(), 11, "volumes.tsv row: {line:?}");
            let number = |i: usize| -> u64 { f[i].parse().unwrap_or_else(|_| panic!("{line:?}")) };
            Row {
                file: f[0].to_owned(),
                volume: f[1].to_owned(),
                password: f[2].to_owned(),
                keyfiles: match f[3] {
                    "-" => Vec::new(),
                    list => list.split(',').map(str::to_owned).collect(),
                },
                prf: f[4].to_owned(),
                pim: u32::try_from(number(5)).unwrap(),
                algorithm: f[6].to_owned(),
                fat_serial: u32::from_str_radix(f[7], 16)
                    .unwrap_or_else(|_| panic!("serial: {line:?}")),
                data_offset: number(8),
                data_size: number(9),
                file_size: number(10),
            }
        })
        .collect()
}

/// The vcctl arguments that open the volume of `row` (after `volume <cmd> FILE`).
fn open_args(row: &Row) -> Vec<String> {
    let mut a = vec![
        "--password-stdin".to_owned(),
        "--prf".to_owned(),
        row.prf.clone(),
        "--pim".to_owned(),
        row.pim.to_string(),
    ];
    for k in &row.keyfiles {
        a.push("--keyfile".to_owned());
        a.push(written(k).to_str().unwrap().to_owned());
    }
    if row.volume == "hidden" {
        a.push("--hidden".to_owned());
    }
    a
}

fn run(cmd: &str, row: &Row, extra: &[&str]) -> std::process::Output {
    let file = written(&row.file).to_str().unwrap().to_owned();
    let rest = open_args(row);
    let mut a = vec!["volume", cmd, &file];
    a.extend(rest.iter().map(String::as_str));
    a.extend_from_slice(extra);
    vcctl(&a, &format!("{}\n", row.password))
}

/// Compares `volume inspect`'s JSON with the manifest row; the error names the field.
fn check_inspect(row: &Row, j: &serde_json::Value) -> Result<(), String> {
    let hidden_size = if row.volume == "hidden" {
        row.data_size
    } else {
        0
    };
    let expected = [
        ("cipher", serde_json::json!(row.algorithm)),
        ("prf", serde_json::json!(row.prf)),
        ("kind", serde_json::json!(row.volume)),
        ("header", serde_json::json!("primary")),
        ("sector_size", serde_json::json!(512)),
        ("data_offset", serde_json::json!(row.data_offset)),
        ("data_size", serde_json::json!(row.data_size)),
        ("volume_size", serde_json::json!(row.data_size)),
        ("hidden_volume_size", serde_json::json!(hidden_size)),
    ];
    for (field, want) in expected {
        if j[field] != want {
            return Err(format!(
                "{}: {field} is {}, the manifest says {want}",
                row.what(),
                j[field]
            ));
        }
    }
    Ok(())
}

/// Checks a boot sector of VeraCrypt's FAT against the row: OEM name, signature, sector count
/// and the serial number (FAT12/16: u32 at 0x27; FAT32: at 0x43).
fn check_boot_sector(row: &Row, s: &[u8]) -> Result<(), String> {
    let what = row.what();
    if s.len() != 512 || &s[3..11] != b"MSDOS5.0" || s[510..512] != [0x55, 0xAA] {
        return Err(format!("{what}: not VeraCrypt's FAT boot sector"));
    }
    let small = u16::from_le_bytes([s[0x13], s[0x14]]);
    let sectors = if small != 0 {
        u64::from(small)
    } else {
        u64::from(u32::from_le_bytes(s[0x20..0x24].try_into().unwrap()))
    };
    if sectors * 512 != row.data_size {
        return Err(format!("{what}: FAT of {sectors} sectors"));
    }
    let at = if &s[0x52..0x57] == b"FAT32" {
        0x43
    } else {
        0x27
    };
    let serial = u32::from_le_bytes(s[at..at + 4].try_into().unwrap());
    if serial != row.fat_serial {
        return Err(format!(
            "{what}: FAT serial {serial:08X}, the manifest says {:08X}",
            row.fat_serial
        ));
    }
    Ok(())
}

#[test]
fn w15_the_manifest_lists_every_veracrypt_written_volume_and_every_cipher_and_cascade() {
    let rows = manifest();
    let listed: BTreeSet<String> = rows.iter().map(|r| r.file.clone()).collect();
    let present: BTreeSet<String> = std::fs::read_dir(written(""))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".hc"))
        .collect();
    assert_eq!(listed, present, "volumes.tsv and the folder's .hc files");
    for r in &rows {
        let len = std::fs::metadata(written(&r.file)).unwrap().len();
        assert_eq!(len, r.file_size, "{}: file size", r.file);
        assert!(r.data_offset + r.data_size <= r.file_size, "{}", r.what());
        assert!(r.volume == "normal" || r.volume == "hidden", "{}", r.what());
    }
    let algorithms: BTreeSet<&str> = rows.iter().map(|r| r.algorithm.as_str()).collect();
    let every: BTreeSet<&str> = EVERY_ALGORITHM.iter().copied().collect();
    assert_eq!(
        algorithms, every,
        "every algorithm has a VeraCrypt-written volume"
    );
}

#[test]
fn w15_every_veracrypt_written_volume_opens_with_its_cipher_prf_and_sizes() {
    let mut opened = 0;
    for r in manifest() {
        if NOT_YET_OPENED.contains(&r.prf.as_str()) {
            continue;
        }
        let j = json(&ok(run("inspect", &r, &[])));
        if let Err(e) = check_inspect(&r, &j) {
            panic!("{e}: {j}");
        }
        opened += 1;
    }
    assert!(opened >= 26, "{opened} volumes opened");
}

#[test]
fn w15_veracrypt_written_volumes_vcctl_serves_read_back_to_the_fat_veracrypt_wrote() {
    let mut read = 0;
    for r in manifest() {
        if NOT_YET_OPENED.contains(&r.prf.as_str()) {
            continue;
        }
        let s = ok(run("read", &r, &["--offset", "0", "--length", "512"]));
        if let Err(e) = check_boot_sector(&r, &s) {
            panic!("{e}");
        }
        read += 1;
    }
    let rows = manifest()
        .iter()
        .filter(|r| !NOT_YET_OPENED.contains(&r.prf.as_str()))
        .count();
    assert_eq!(read, rows, "every volume's boot sector read");
    assert!(read >= 26, "{read} boot sectors read");
}

#[test]
fn w15_manifest_checks_fail_on_a_wrong_cipher_size_kind_or_serial() {
    let row = manifest()
        .into_iter()
        .find(|r| r.file == "kuznyechik-serpent-camellia.hc")
        .expect("row");
    let good = serde_json::json!({
        "cipher": "kuznyechik-serpent-camellia", "prf": "sha512", "kind": "normal",
        "header": "primary", "sector_size": 512, "data_offset": 131072, "data_size": 45056,
        "volume_size": 45056, "hidden_volume_size": 0,
    });
    assert_eq!(check_inspect(&row, &good), Ok(()));
    for (field, bad, message) in [
        (
            "cipher",
            serde_json::json!("kuznyechik-serpent"),
            "cipher is",
        ),
        ("data_size", serde_json::json!(45056 - 512), "data_size is"),
        ("kind", serde_json::json!("hidden"), "kind is"),
        ("prf", serde_json::json!("whirlpool"), "prf is"),
    ] {
        let mut j = good.clone();
        j[field] = bad;
        let err = check_inspect(&row, &j).unwrap_err();
        assert!(err.contains(message) && err.contains(&row.file), "{err}");
    }

    let mut sector = vec![0u8; 512];
    sector[3..11].copy_from_slice(b"MSDOS5.0");
    sector[0x13..0x15].copy_from_slice(&88u16.to_le_bytes());
    sector[0x27..0x2B].copy_from_slice(&row.fat_serial.to_le_bytes());
    sector[510] = 0x55;
    sector[511] = 0xAA;
    assert_eq!(check_boot_sector(&row, &sector), Ok(()));
    let mut other = sector.clone();
    other[0x27] ^= 1;
    let err = check_boot_sector(&row, &other).unwrap_err();
    assert!(err.contains("FAT serial"), "{err}");
    let mut short = sector.clone();
    short[0x13..0x15].copy_from_slice(&87u16.to_le_bytes());
    assert!(check_boot_sector(&row, &short)
        .unwrap_err()
        .contains("87 sectors"));
    let mut unsigned = sector;
    unsigned[511] = 0;
    assert!(check_boot_sector(&row, &unsigned)
        .unwrap_err()
        .contains("not VeraCrypt's"));
}

/// A three-cipher cascade whose key area is damaged in both header copies (one byte of the
/// key area: XTS keeps the damage to its block, so the magic still decrypts): `inspect` and
/// `read` exit 2 with one line naming the key area's CRC, and the file is unchanged.
#[test]
fn w15_a_cascade_key_area_with_a_bad_crc_is_one_line_naming_it() {
    let row = manifest()
        .into_iter()
        .find(|r| r.file == "kuznyechik-serpent-camellia.hc")
        .expect("row");
    let mut bytes = std::fs::read(written(&row.file)).expect("volume");
    let backup = bytes.len() - 131_072;
    bytes[300] ^= 0x01;
    bytes[backup + 300] ^= 0x01;
    let copy = TempPath::new("cascade-bad-key-crc");
    std::fs::write(&copy.0, &bytes).unwrap();
    let file = copy.0.to_str().unwrap().to_owned();
    for (cmd, extra) in [
        ("inspect", &[][..]),
        ("read", &["--offset", "0", "--length", "512"][..]),
    ] {
        let mut a = vec!["volume", cmd, &file];
        let rest = open_args(&row);
        a.extend(rest.iter().map(String::as_str));
        a.extend_from_slice(extra);
        let err = fails(vcctl(&a, &format!("{}\n", row.password)));
        assert!(
            err.contains("damaged volume header") && err.contains("master key area CRC-32"),
            "{cmd}: {err}"
        );
    }
    assert_eq!(
        std::fs::read(&copy.0).unwrap(),
        bytes,
        "the file is unchanged"
    );
}
