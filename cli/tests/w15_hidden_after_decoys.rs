//! W15, VeraCrypt's order for a hidden volume with believable decoys: `volume create` formats
//! the outer volume (FAT, through its own encryption), the decoy files are copied in (here
//! with the `fatfs` crate over the decrypted data area, as a mounted volume would be written),
//! then `volume add-hidden` reads the outer FAT and places the hidden volume after its last
//! used cluster, no larger than VeraCrypt's maximum:
//! - VeraCrypt 1.26, src/Core/CoreBase.cpp, `CoreBase::GetMaxHiddenVolumeSize` (the scan of
//!   the FAT for its last non-zero word, and the room after that cluster less one cluster);
//! - src/Main/Forms/VolumeCreationWizard.cpp, `VolumeCreationWizard::ProcessPageChangeRequest`,
//!   step OuterVolumeContents (the reserve: outer data size / 200, at most 10 MiB; rounded
//!   down to the sector size).
//!
//! The figures below are worked out here from the FAT's own facts (its boot sector, read at
//! the FAT specification's offsets, and the clusters the decoy files take); they come from
//! VeraCrypt's sources and were not observed from VeraCrypt (its console build does not print
//! the maximum).

mod common;
use common::*;

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};

use vcctl::kdf::Prf;
use vcctl::volume::{Credentials, DataArea, Kind};
use zeroize::Zeroizing;

fn creds(pw: &[u8]) -> Credentials {
    Credentials {
        password: Zeroizing::new(pw.to_vec()),
        prf: Some(Prf::Sha256),
        pim: 1,
        keyfiles: Vec::new(),
    }
}

/// `vcctl volume create` of a `size`-byte container (FAT by default), password "outer".
fn create_outer(f: &TempPath, size: u64, extra: &[&str]) -> serde_json::Value {
    let size = size.to_string();
    let mut args = vec![
        "volume",
        "create",
        f.0.to_str().unwrap(),
        "--password-stdin",
    ];
    args.extend_from_slice(&["--size", &size, "--prf", "sha256", "--pim", "1", "--quiet"]);
    args.extend_from_slice(extra);
    json(&ok(vcctl(&args, "outer\n")))
}

/// `vcctl volume add-hidden` with `size` (bytes or `max`), outer "outer", hidden "hidden".
fn add_hidden(f: &TempPath, size: &str, extra: &[&str], stdin: &str) -> std::process::Output {
    let mut args = vec![
        "volume",
        "add-hidden",
        f.0.to_str().unwrap(),
        "--password-stdin",
    ];
    args.extend_from_slice(&["--size", size, "--prf", "sha256", "--pim", "1", "--quiet"]);
    args.extend_from_slice(extra);
    vcctl(&args, stdin)
}

fn rw(f: &TempPath) -> File {
    File::options().read(true).write(true).open(&f.0).unwrap()
}

/// Runs `work` on the file system of the volume `kind` that `pw` opens, through its
/// decrypted data area, and unmounts it (as a dismount would).
fn with_fs<R>(
    f: &TempPath,
    pw: &[u8],
    kind: Kind,
    work: impl FnOnce(&fatfs::FileSystem<&mut DataArea<'_, File>>) -> R,
) -> R {
    let mut file = rw(f);
    let opened = vcctl::volume::open_file(&mut file, &creds(pw), kind).unwrap();
    let mut area = DataArea::of(&mut file, &opened);
    let fs = fatfs::FileSystem::new(&mut area, fatfs::FsOptions::new()).unwrap();
    let r = work(&fs);
    fs.unmount().unwrap();
    r
}

/// The whole decrypted data area of the volume `kind` that `pw` opens.
fn data_area(f: &TempPath, pw: &[u8], kind: Kind) -> Vec<u8> {
    let mut file = rw(f);
    let opened = vcctl::volume::open_file(&mut file, &creds(pw), kind).unwrap();
    let mut area = DataArea::of(&mut file, &opened);
    let mut out = Vec::new();
    area.read_to_end(&mut out).unwrap();
    out
}

/// The outer FAT's facts as vcctl reads them.
fn facts(f: &TempPath) -> vcctl::fat::FatFacts {
    let mut file = rw(f);
    let opened = vcctl::volume::open_file(&mut file, &creds(b"outer"), Kind::Normal).unwrap();
    let size = opened.header.data_size;
    vcctl::fat::read_facts(&mut DataArea::of(&mut file, &opened), size, 512).unwrap()
}

/// Deterministic contents for a decoy file.
fn contents(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn put_files(fs: &fatfs::FileSystem<&mut DataArea<'_, File>>, files: &[(String, Vec<u8>)]) {
    for (name, bytes) in files {
        let mut file = fs.root_dir().create_file(name).unwrap();
        file.truncate().unwrap();
        file.write_all(bytes).unwrap();
    }
}

fn assert_files(fs: &fatfs::FileSystem<&mut DataArea<'_, File>>, files: &[(String, Vec<u8>)]) {
    for (name, bytes) in files {
        let mut back = Vec::new();
        fs.root_dir()
            .open_file(name)
            .unwrap()
            .read_to_end(&mut back)
            .unwrap();
        assert!(back == *bytes, "{name} did not read back identically");
    }
}

fn sha(bytes: &[u8]) -> Vec<u8> {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).to_vec()
}

fn u(v: &serde_json::Value) -> u64 {
    v.as_u64().unwrap()
}

#[test]
fn w15_decoys_copied_before_add_hidden_read_back_and_later_decoys_leave_the_hidden_volume_intact() {
    const SIZE: u64 = 4 << 20;
    let f = TempPath::new("decoys");
    create_outer(&f, SIZE, &[]);
    let first: Vec<(String, Vec<u8>)> = (0..5u64)
        .map(|i| {
            (
                format!("DECOY{i}.BIN"),
                contents(i, 3000 + 70_001 * i as usize),
            )
        })
        .collect();
    with_fs(&f, b"outer", Kind::Normal, |fs| put_files(fs, &first));
    let before = facts(&f);

    // 1 MiB of the 3.75 MiB outer data area: room is left for more decoys before it.
    let added = json(&ok(add_hidden(
        &f,
        "1048576",
        &["--yes"],
        "outer\nhidden\n",
    )));
    let (hs, hl) = (
        u(&added["hidden_data_offset"]),
        u(&added["hidden_data_size"]),
    );
    let outer_end = SIZE - 131_072;
    let footprint_start = outer_end - u(&added["hidden_size"]);
    assert_eq!(u(&added["used_end"]), before.used_end());
    assert!(
        footprint_start >= 131_072 + before.used_end(),
        "the hidden volume reaches into the used clusters"
    );
    assert!(hs >= footprint_start && hs + hl <= outer_end);
    // Every decoy reads back identically; the outer FAT did not change.
    with_fs(&f, b"outer", Kind::Normal, |fs| assert_files(fs, &first));
    assert_eq!(facts(&f), before);

    // Put something in the hidden volume: a FAT of its own with a file.
    {
        let mut file = rw(&f);
        let opened = vcctl::volume::open_file(&mut file, &creds(b"hidden"), Kind::Hidden).unwrap();
        assert_eq!(
            (opened.header.data_offset, opened.header.data_size),
            (hs, hl)
        );
        let mut area = DataArea::of(&mut file, &opened);
        vcctl::fat::format(&mut area, hl, 7).unwrap();
    }
    let secret = vec![("SECRET.TXT".to_string(), contents(99, 50_000))];
    with_fs(&f, b"hidden", Kind::Hidden, |fs| put_files(fs, &secret));
    let hidden_before = data_area(&f, b"hidden", Kind::Hidden);
    let raw = |f: &TempPath| std::fs::read(&f.0).unwrap()[hs as usize..(hs + hl) as usize].to_vec();
    let raw_before = sha(&raw(&f));

    // More decoys: FAT (fatfs as the FAT drivers of Windows and Linux) allocates clusters from
    // the front, after the last allocated one, so files that fit in the free space before the
    // hidden volume never reach it. Fill that space to within 64 KiB of the hidden volume.
    let room = footprint_start - 131_072 - before.used_end();
    let more: Vec<(String, Vec<u8>)> = (0..4u64)
        .map(|i| {
            let len = ((room - 65_536) / 4) as usize;
            (format!("MORE{i}.BIN"), contents(100 + i, len))
        })
        .collect();
    with_fs(&f, b"outer", Kind::Normal, |fs| put_files(fs, &more));
    let after = facts(&f);
    assert!(after.used_end() > before.used_end() + 3 * room / 4);
    assert!(
        131_072 + after.used_end() <= footprint_start,
        "the decoys were meant to stay before the hidden volume"
    );
    // The hidden volume is byte-identical (decrypted and raw), its file reads back, and every
    // decoy, old and new, reads back.
    assert!(data_area(&f, b"hidden", Kind::Hidden) == hidden_before);
    assert_eq!(sha(&raw(&f)), raw_before);
    with_fs(&f, b"hidden", Kind::Hidden, |fs| assert_files(fs, &secret));
    with_fs(&f, b"outer", Kind::Normal, |fs| {
        assert_files(fs, &first);
        assert_files(fs, &more);
    });
}

/// The FAT facts the test reads itself, at the offsets of the FAT specification.
struct Bpb {
    cluster: u64,
    data_start: u64,
    fat_type: u8,
    fat_start: u64,
    fat_size: u64,
}

fn bpb(boot: &[u8]) -> Bpb {
    let u16_at = |i: usize| u64::from(u16::from_le_bytes([boot[i], boot[i + 1]]));
    let u32_at = |i: usize| {
        u64::from(u32::from_le_bytes([
            boot[i],
            boot[i + 1],
            boot[i + 2],
            boot[i + 3],
        ]))
    };
    let fat32 = &boot[82..87] == b"FAT32";
    let fat_sectors = if fat32 { u32_at(36) } else { u16_at(22) };
    let data_start = (u16_at(14) + u64::from(boot[16]) * fat_sectors) * 512 + u16_at(17) * 32;
    let fat_type = if fat32 {
        32
    } else if &boot[54..59] == b"FAT16" {
        16
    } else {
        assert_eq!(&boot[54..59], b"FAT12");
        12
    };
    Bpb {
        cluster: u64::from(boot[13]) * 512,
        data_start,
        fat_type,
        fat_start: u16_at(14) * 512,
        fat_size: fat_sectors * 512,
    }
}

/// The offset in the FAT of the 4-byte word holding the last byte of entry `last` (an
/// end-of-chain mark: its last byte is not zero).
fn last_word(b: &Bpb, last: u64) -> u64 {
    let last_byte = match b.fat_type {
        12 => last * 3 / 2 + 1,
        16 => last * 2 + 1,
        _ => last * 4 + 3,
    };
    last_byte / 4 * 4
}

/// VeraCrypt's maximum for an outer data area of `size` bytes whose last used cluster is
/// `last` (its FAT entry an end-of-chain mark, every bit of it set), worked out as
/// CoreBase::GetMaxHiddenVolumeSize and the wizard's reserve do it: the scan stops at the
/// 4-byte word holding the last non-zero FAT byte (the last byte of entry `last`), turns the
/// word's offset into a cluster number (x 8 / 12, / 2 or / 4), and the room is the data area
/// after the FAT and root directory, less one cluster, less that cluster number of clusters;
/// then the reserve (size / 200, at most 10 MiB), then down to a multiple of 512.
fn veracrypt_max(b: &Bpb, size: u64, last: u64) -> u64 {
    let word = last_word(b, last);
    let cluster_number = match b.fat_type {
        12 => word * 8 / 12,
        16 => word / 2,
        _ => word / 4,
    };
    let core = (size - b.data_start - b.cluster).saturating_sub(cluster_number * b.cluster);
    let max = core.min(size) - (size / 200).min(10 << 20);
    max / 512 * 512
}

#[test]
fn w15_max_hidden_size_follows_veracrypts_rule_for_fat12_fat16_and_fat32() {
    // (container size, FAT the size gives, decoy file sizes)
    let cases: [(u64, u8, &[usize]); 3] = [
        (1 << 20, 12, &[1000, 20_001, 7_777]),
        (12 << 20, 16, &[300_000, 1, 123_457]),
        (80 << 20, 32, &[2_000_000, 513]),
    ];
    for (size, fat, files) in cases {
        let f = TempPath::new("max");
        let made = create_outer(&f, size, &[]);
        let data = u(&made["data_size"]);
        let decoys: Vec<(String, Vec<u8>)> = files
            .iter()
            .enumerate()
            .map(|(i, len)| (format!("F{i}.DAT"), contents(i as u64, *len)))
            .collect();
        with_fs(&f, b"outer", Kind::Normal, |fs| put_files(fs, &decoys));
        let area = data_area(&f, b"outer", Kind::Normal);
        let b = bpb(&area[..512]);
        assert_eq!(
            b.fat_type, fat,
            "{size}: VeraCrypt's cluster size gives FAT{fat}"
        );
        // Files take whole clusters from the front: cluster 2 on (FAT32: cluster 2 is the
        // root directory's, files from 3 on).
        let first = if fat == 32 { 3 } else { 2 };
        let clusters: u64 = files.iter().map(|l| (*l as u64).div_ceil(b.cluster)).sum();
        let last = first + clusters - 1;
        let want = veracrypt_max(&b, data, last);
        // VeraCrypt scans the whole FAT back from its end: the FAT vcctl formatted has zeros
        // after the last cluster's entry (as VeraCrypt's formatter leaves them), so that scan
        // stops at the word of the last used cluster's entry too.
        let table = &area[b.fat_start as usize..(b.fat_start + b.fat_size) as usize];
        let scanned = table.chunks_exact(4).rposition(|w| w != [0; 4]).unwrap() as u64 * 4;
        assert_eq!(scanned, last_word(&b, last), "{size}: FAT{fat}");

        let before = sha(&std::fs::read(&f.0).unwrap());
        // One byte-sector over the maximum is refused, nothing written.
        let over = (want + 512).to_string();
        let err = fails(add_hidden(&f, &over, &["--yes"], "outer\nhidden\n"));
        assert!(
            err.contains(&format!("at most {want} bytes")),
            "{size}: {err}"
        );
        assert_eq!(sha(&std::fs::read(&f.0).unwrap()), before);
        // The maximum itself is taken, and reported with the last used cluster.
        let added = json(&ok(add_hidden(&f, "max", &["--yes"], "outer\nhidden\n")));
        assert_eq!(u(&added["max_hidden_size"]), want, "{size}");
        assert_eq!(u(&added["hidden_size"]), want, "{size}");
        assert_eq!(u(&added["last_used_cluster"]), last, "{size}");
        assert_eq!(
            u(&added["used_end"]),
            b.data_start + (last - 1) * b.cluster,
            "{size}"
        );
        assert_eq!(added["outer_filesystem"], format!("FAT{fat}"));
        let hidden = json(&ok(vcctl(
            &[
                "volume",
                "inspect",
                f.0.to_str().unwrap(),
                "--password-stdin",
                "--prf",
                "sha256",
                "--pim",
                "1",
                "--hidden",
            ],
            "hidden\n",
        )));
        assert_eq!(hidden["data_offset"], added["hidden_data_offset"]);
        with_fs(&f, b"outer", Kind::Normal, |fs| assert_files(fs, &decoys));
    }
}

#[test]
fn w15_add_hidden_reads_the_fat_veracrypt_wrote_and_computes_its_maximum() {
    // sha512-aes.hc: 300 KiB, written and formatted (FAT) by VeraCrypt 1.26.20, nothing
    // copied in. A copy: the committed file is never changed.
    let committed = written("sha512-aes.hc");
    let committed_hash = sha(&std::fs::read(&committed).unwrap());
    let f = TempPath::new("vc-written");
    std::fs::copy(&committed, &f.0).unwrap();
    let pw = "sha512 volume password\nhidden\n";
    let args = |size: &'static str| {
        vec![
            "volume",
            "add-hidden",
            f.0.to_str().unwrap(),
            "--password-stdin",
            "--prf",
            "sha512",
            "--size",
            size,
            "--yes",
            "--hidden-prf",
            "sha256",
            "--hidden-pim",
            "1",
        ]
    };
    let added = json(&ok(vcctl(&args("max"), pw)));
    // Worked out from the boot sector VeraCrypt wrote: 45056-byte data area, 512-byte clusters,
    // 2 reserved sectors, 2 FATs of 1 sector, 512 root entries: the data clusters start at
    // byte 18432. The FAT holds only its two reserved entries (F8 FF FF): the last non-zero
    // word is at 0, cluster number 0. Room: 45056 - 18432 - 512 = 26112; reserve 45056 / 200
    // = 225; 25887 down to a multiple of 512: 25600.
    assert_eq!(added["outer_filesystem"], "FAT12");
    assert_eq!(u(&added["used_end"]), 18_432);
    assert_eq!(u(&added["last_used_cluster"]), 1);
    assert_eq!(u(&added["max_hidden_size"]), 25_600);
    // The footprint ends at the outer data end; VeraCrypt's 4 KiB reserve below 2 MiB.
    assert_eq!(u(&added["hidden_data_offset"]), 131_072 + 45_056 - 25_600);
    assert_eq!(u(&added["hidden_data_size"]), 25_600 - 4096);
    let j = json(&ok(vcctl(
        &[
            "volume",
            "inspect",
            f.0.to_str().unwrap(),
            "--password-stdin",
            "--prf",
            "sha256",
            "--pim",
            "1",
            "--hidden",
        ],
        "hidden\n",
    )));
    assert_eq!(j["kind"], "hidden");
    assert_eq!(j["data_offset"], added["hidden_data_offset"]);
    // The outer volume still opens and its boot sector is VeraCrypt's (serial 37E8-BC34).
    let outer = ok(vcctl(
        &[
            "volume",
            "read",
            f.0.to_str().unwrap(),
            "--password-stdin",
            "--prf",
            "sha512",
            "--offset",
            "0",
            "--length",
            "512",
        ],
        "sha512 volume password\n",
    ));
    assert_eq!(&outer[3..11], b"MSDOS5.0");
    assert_eq!(&outer[0x27..0x2B], &0x37E8_BC34u32.to_le_bytes());
    assert_eq!(sha(&std::fs::read(&committed).unwrap()), committed_hash);
}

/// The decoy files make-volumes.sh copied into decoy-outer.hc: numbered lines
/// ("NAME line 000001\n", ...), cut to the file's size, in the order they were copied.
/// The FAT serial number VeraCrypt gave decoy-outer.hc.
const SERIAL_DECOY_OUTER: u32 = 0x8A8B_E646;

const VC_DECOYS: [(&str, usize); 3] = [
    ("REPORT.TXT", 102_400),
    ("PHOTOS.DAT", 307_200),
    ("NOTE.TXT", 1000),
];

fn numbered_lines(name: &str, len: usize) -> Vec<u8> {
    let mut out: Vec<u8> = (1..=20_000)
        .flat_map(|i| format!("{name} line {i:06}\n").into_bytes())
        .collect();
    out.truncate(len);
    out
}

/// The decrypted data area of decoy-outer.hc (or a copy of it at `path`).
fn vc_outer_area(path: &std::path::Path) -> Vec<u8> {
    let creds = Credentials {
        password: Zeroizing::new(b"decoy outer volume password".to_vec()),
        prf: Some(Prf::Sha512),
        pim: 0,
        keyfiles: Vec::new(),
    };
    let mut file = File::open(path).unwrap();
    let opened = vcctl::volume::open_file(&mut file, &creds, Kind::Normal).unwrap();
    let mut area = DataArea::of(&mut file, &opened);
    let mut out = Vec::new();
    area.read_to_end(&mut out).unwrap();
    out
}

/// Every decoy file reads back from the FAT of the decrypted data area `area`, and nothing else
/// is in its root directory.
fn assert_vc_decoys(area: Vec<u8>) {
    let fs = fatfs::FileSystem::new(std::io::Cursor::new(area), fatfs::FsOptions::new()).unwrap();
    let names: Vec<String> = fs
        .root_dir()
        .iter()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, VC_DECOYS.map(|(n, _)| n.to_string()));
    for (name, len) in VC_DECOYS {
        let mut back = Vec::new();
        fs.root_dir()
            .open_file(name)
            .unwrap()
            .read_to_end(&mut back)
            .unwrap();
        assert!(
            back == numbered_lines(name, len),
            "{name} did not read back identically"
        );
    }
}

#[test]
fn w15_add_hidden_max_after_the_files_copied_into_a_veracrypt_outer_volume() {
    // decoy-outer.hc: 4 MiB, written and formatted (FAT) by VeraCrypt 1.26.20, then mounted by
    // VeraCrypt (FUSE, no file system) and three files copied in by mtools. A copy: the
    // committed file is never changed.
    let committed = written("decoy-outer.hc");
    let committed_hash = sha(&std::fs::read(&committed).unwrap());
    let area = vc_outer_area(&committed);
    let data = area.len() as u64;
    assert_eq!(data, (4 << 20) - 262_144);
    let b = bpb(&area[..512]);
    // VeraCrypt's boot sector: FAT12 (serial 8A8B-E646), 1 KiB clusters, 2 reserved sectors,
    // 2 FATs of 12 sectors, 512 root entries: the data clusters start at byte 29696.
    assert_eq!(&area[3..11], b"MSDOS5.0");
    assert_eq!(&area[0x27..0x2B], &SERIAL_DECOY_OUTER.to_le_bytes());
    assert_eq!((b.fat_type, b.cluster, b.data_start), (12, 1024, 29_696));
    // mtools allocated each file in whole clusters from cluster 2 on, in the order copied:
    // 100 + 300 + 1 clusters, the last one 402; the FAT has nothing after its entry.
    let clusters: u64 = VC_DECOYS
        .iter()
        .map(|(_, l)| (*l as u64).div_ceil(b.cluster))
        .sum();
    let last = 2 + clusters - 1;
    assert_eq!(last, 402);
    let table = &area[b.fat_start as usize..(b.fat_start + b.fat_size) as usize];
    let scanned = table.chunks_exact(4).rposition(|w| w != [0; 4]).unwrap() as u64 * 4;
    assert_eq!(scanned, last_word(&b, last));
    // The rule: the last non-zero word is at 604 (entry 402's last byte is byte 603 + 1),
    // cluster number 604 x 8 / 12 = 402. Room: 3932160 - 29696 - 1024 - 402 x 1024 = 3489792;
    // reserve 3932160 / 200 = 19660; 3470132 down to a multiple of 512: 3469824.
    let want = veracrypt_max(&b, data, last);
    assert_eq!(want, 3_469_824);
    assert_vc_decoys(area);

    let f = TempPath::new("vc-decoys");
    std::fs::copy(&committed, &f.0).unwrap();
    let pw = "decoy outer volume password\nhidden\n";
    let path = f.0.to_str().unwrap();
    let run = |size: &str| {
        vcctl(
            &[
                "volume",
                "add-hidden",
                path,
                "--password-stdin",
                "--prf",
                "sha512",
                "--size",
                size,
                "--yes",
                "--hidden-prf",
                "sha256",
                "--hidden-pim",
                "1",
            ],
            pw,
        )
    };
    // One sector over the maximum is refused, nothing written.
    let err = fails(run(&(want + 512).to_string()));
    assert!(err.contains(&format!("at most {want} bytes")), "{err}");
    assert_eq!(sha(&std::fs::read(&f.0).unwrap()), committed_hash);
    let added = json(&ok(run("max")));
    assert_eq!(added["outer_filesystem"], "FAT12");
    assert_eq!(u(&added["last_used_cluster"]), last);
    assert_eq!(u(&added["used_end"]), b.data_start + (last - 1) * b.cluster);
    assert_eq!(u(&added["max_hidden_size"]), want);
    assert_eq!(u(&added["hidden_size"]), want);
    // The footprint ends at the outer data end, past the files; from 2 MiB on VeraCrypt keeps
    // 128 KiB of it out of the hidden data area.
    let hs = u(&added["hidden_data_offset"]);
    assert_eq!(hs, 131_072 + data - want);
    assert!(hs > 131_072 + u(&added["used_end"]));
    assert_eq!(u(&added["hidden_data_size"]), want - 131_072);
    let j = json(&ok(vcctl(
        &[
            "volume",
            "inspect",
            path,
            "--password-stdin",
            "--prf",
            "sha256",
            "--pim",
            "1",
            "--hidden",
        ],
        "hidden\n",
    )));
    assert_eq!(j["kind"], "hidden");
    assert_eq!(j["data_offset"], added["hidden_data_offset"]);
    // Every decoy still reads back from the copy; the committed file is unchanged.
    assert_vc_decoys(vc_outer_area(&f.0));
    assert_eq!(sha(&std::fs::read(&committed).unwrap()), committed_hash);
}

#[test]
fn w15_bad_add_hidden_input_is_one_line_exit_2_and_changes_nothing() {
    let f = TempPath::new("bad");
    create_outer(&f, 2 << 20, &[]);
    let hash = || sha(&std::fs::read(&f.0).unwrap());
    let before = hash();
    let refused = |out: std::process::Output, needle: &str| {
        let err = fails(out);
        assert!(err.contains(needle), "{needle:?} not in {err}");
        assert_eq!(hash(), before, "refused ({err}) but the file changed");
    };
    // No --yes: its help says what it destroys.
    refused(
        add_hidden(&f, "max", &[], "outer\nhidden\n"),
        "any hidden volume already in that space is destroyed",
    );
    let help = String::from_utf8(ok(vcctl(&["volume", "add-hidden", "--help"], ""))).unwrap();
    assert!(help.contains("any hidden volume already in that space is destroyed"));
    // A wrong outer password.
    refused(
        add_hidden(&f, "max", &["--yes"], "wrong\nhidden\n"),
        "wrong password",
    );
    // Over the maximum; not a multiple of 512; not a size.
    refused(
        add_hidden(&f, "2000000", &["--yes"], "outer\nhidden\n"),
        "over the largest hidden volume",
    );
    refused(
        add_hidden(&f, "100000", &["--yes"], "outer\nhidden\n"),
        "--size 100000 must be a multiple of 512",
    );
    let out = add_hidden(&f, "lots", &["--yes"], "outer\nhidden\n");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("neither a size in bytes nor max"));
    assert_eq!(hash(), before);
    // Locked by another program (vcctl's own lock, as any program that locks the file).
    {
        let holder = File::open(&f.0).unwrap();
        fs4::FileExt::try_lock(&holder).unwrap();
        refused(
            add_hidden(&f, "max", &["--yes"], "outer\nhidden\n"),
            "is in use",
        );
    }
    // A file system vcctl cannot read is named, never guessed: NTFS's signature in the boot
    // sector of an outer volume; and the fill of --filesystem none.
    let n = TempPath::new("ntfs");
    create_outer(&n, 1 << 20, &["--filesystem", "none"]);
    let none_hash = sha(&std::fs::read(&n.0).unwrap());
    let err = fails(add_hidden(&n, "max", &["--yes"], "outer\nhidden\n"));
    assert!(err.contains("no file system vcctl recognises"), "{err}");
    assert_eq!(sha(&std::fs::read(&n.0).unwrap()), none_hash);
    {
        let mut file = rw(&n);
        let opened = vcctl::volume::open_file(&mut file, &creds(b"outer"), Kind::Normal).unwrap();
        let mut area = DataArea::of(&mut file, &opened);
        area.seek(SeekFrom::Start(3)).unwrap();
        area.write_all(b"NTFS    ").unwrap();
    }
    let ntfs_hash = sha(&std::fs::read(&n.0).unwrap());
    let err = fails(add_hidden(&n, "max", &["--yes"], "outer\nhidden\n"));
    assert!(err.contains("holds NTFS"), "{err}");
    assert_eq!(sha(&std::fs::read(&n.0).unwrap()), ntfs_hash);
    assert_eq!(hash(), before);
}

#[test]
fn w15_create_places_the_hidden_volume_after_the_new_fat_and_refuses_it_without_one() {
    const SIZE: u64 = 2 << 20;
    let f = TempPath::new("create-none");
    let path = f.0.to_str().unwrap();
    let create = |extra: &[&str]| {
        let mut args = vec![
            "volume",
            "create",
            path,
            "--password-stdin",
            "--size",
            "2097152",
        ];
        args.extend_from_slice(&["--prf", "sha256", "--pim", "1", "--quiet"]);
        args.extend_from_slice(extra);
        vcctl(&args, "outer\nhidden\n")
    };
    let err = fails(create(&["--hidden-size", "131072", "--filesystem", "none"]));
    assert!(
        err.contains("--hidden-size needs --filesystem fat"),
        "{err}"
    );
    assert!(!f.0.exists());
    // The largest hidden volume for the new FAT, worked out as above (nothing is used but
    // the FAT's reserved entries: cluster number 0).
    let data = SIZE - 262_144;
    let mut image = std::io::Cursor::new(vec![0u8; data as usize]);
    vcctl::fat::format(&mut image, data, 1).unwrap();
    let b = bpb(&image.get_ref()[..512]);
    assert_eq!(b.fat_type, 12);
    let core = data - b.data_start - b.cluster;
    let max = (core - data / 200) / 512 * 512;
    let err = fails(create(&["--hidden-size", &(max + 512).to_string()]));
    assert!(err.contains(&format!("at most {max} bytes")), "{err}");
    assert!(!f.0.exists());
    let made = json(&ok(create(&["--hidden-size", &max.to_string()])));
    assert_eq!(u(&made["hidden_data_offset"]), 131_072 + data - max);
    // The outer FAT is intact (the hidden volume starts after its used space) and files go in.
    assert!(131_072 + facts(&f).used_end() <= u(&made["hidden_data_offset"]));
    let files = vec![("A.TXT".to_string(), contents(5, 1234))];
    with_fs(&f, b"outer", Kind::Normal, |fs| put_files(fs, &files));
    with_fs(&f, b"outer", Kind::Normal, |fs| assert_files(fs, &files));
}

#[test]
fn add_hidden_takes_the_hidden_volumes_own_pim_and_no_keyfiles_as_create_does() {
    let kf = TempPath::new("outer-kf");
    std::fs::write(&kf.0, b"the outer volume's keyfile").unwrap();
    let kfp = kf.0.to_str().unwrap();
    let f = TempPath::new("kf");
    create_outer(&f, 1 << 20, &["--keyfile", kfp]);
    let inspect = |pw: &str, extra: &[&str]| {
        let mut args = vec![
            "volume",
            "inspect",
            f.0.to_str().unwrap(),
            "--password-stdin",
        ];
        args.extend_from_slice(&["--prf", "sha256", "--hidden"]);
        args.extend_from_slice(extra);
        vcctl(&args, pw)
    };
    // Without the outer's keyfile the outer volume does not open: nothing written.
    let before = sha(&std::fs::read(&f.0).unwrap());
    let err = fails(add_hidden(&f, "max", &["--yes"], "outer\nhidden\n"));
    assert!(err.contains("wrong password"), "{err}");
    assert_eq!(sha(&std::fs::read(&f.0).unwrap()), before);
    // The contradiction is refused before anything is read.
    let err = fails(add_hidden(
        &f,
        "max",
        &[
            "--yes",
            "--keyfile",
            kfp,
            "--hidden-no-keyfiles",
            "--hidden-keyfile",
            kfp,
        ],
        "outer\nhidden\n",
    ));
    assert!(err.contains("cannot be used with"), "{err}");
    ok(add_hidden(
        &f,
        "max",
        &[
            "--yes",
            "--keyfile",
            kfp,
            "--hidden-no-keyfiles",
            "--hidden-pim",
            "2",
        ],
        "outer\nhidden\n",
    ));
    // The hidden header has no keyfile and PIM 2; the outer's keyfile does not open it.
    assert_eq!(
        json(&ok(inspect("hidden\n", &["--pim", "2"])))["kind"],
        "hidden"
    );
    let err = fails(inspect("hidden\n", &["--pim", "2", "--keyfile", kfp]));
    assert!(err.contains("wrong password"), "{err}");
    let err = fails(inspect("hidden\n", &["--pim", "1"]));
    assert!(err.contains("wrong password"), "{err}");
}

/// The hidden volume's algorithm at add-hidden: its own with `--hidden-cipher`, else the outer
/// volume's (as `create --hidden-cipher` defaults to `--cipher`); either way its data area
/// reads back what was written through it, and the outer's decoys stay intact.
#[test]
fn w15_add_hidden_takes_its_own_cipher_or_the_outers() {
    const SIZE: u64 = 2 << 20;
    let decoys = vec![("DECOY.BIN".to_string(), contents(7, 40_000))];
    for (outer_cipher, hidden_cipher, expected) in [
        ("serpent", None, "serpent"),
        ("aes", Some("kuznyechik-twofish"), "kuznyechik-twofish"),
    ] {
        let f = TempPath::new("hidden-cipher");
        create_outer(&f, SIZE, &["--cipher", outer_cipher]);
        with_fs(&f, b"outer", Kind::Normal, |fs| put_files(fs, &decoys));
        let mut extra = vec!["--yes"];
        if let Some(c) = hidden_cipher {
            extra.extend_from_slice(&["--hidden-cipher", c]);
        }
        ok(add_hidden(&f, "524288", &extra, "outer\nhidden\n"));
        let inspect = json(&ok(vcctl(
            &[
                "volume",
                "inspect",
                f.0.to_str().unwrap(),
                "--password-stdin",
                "--prf",
                "sha256",
                "--pim",
                "1",
                "--hidden",
            ],
            "hidden\n",
        )));
        assert_eq!(
            inspect["cipher"], expected,
            "{outer_cipher} outer: {inspect}"
        );
        // Written and read back through the hidden volume's own cipher.
        let pattern = contents(9, 65_536);
        {
            let mut file = rw(&f);
            let opened =
                vcctl::volume::open_file(&mut file, &creds(b"hidden"), Kind::Hidden).unwrap();
            let mut area = DataArea::of(&mut file, &opened);
            area.write_all(&pattern).unwrap();
        }
        assert_eq!(
            &data_area(&f, b"hidden", Kind::Hidden)[..pattern.len()],
            &pattern[..]
        );
        with_fs(&f, b"outer", Kind::Normal, |fs| assert_files(fs, &decoys));
    }
}
