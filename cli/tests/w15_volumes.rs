//! docs/review.md W15: volumes laid out, filled and accepted as VeraCrypt 1.26 does.
//!
//! The layout rule is checked against the two hidden volumes VeraCrypt 1.26.20 wrote
//! (tests/data/veracrypt-written: hidden-host.hc, 64 KiB, and hidden-2m-host.hc, 2 MiB, one on
//! each side of VeraCrypt's 2 MiB threshold); the other tests use volumes vcctl creates.

mod common;
use common::*;
use vcctl::cipher::Xts;

use vcctl::create::{hidden_reserved, layout};

/// A hidden volume VeraCrypt wrote: container, outer password (SHA-512, PIM 0), hidden
/// password, the hidden header's PRF and PIM, the size given to VeraCrypt (`--size`) and the
/// reserved area VeraCrypt left after the hidden data.
struct VcHidden {
    file: &'static str,
    outer: &'static str,
    hidden: &'static str,
    prf: &'static str,
    pim: &'static str,
    size: u64,
    reserved: u64,
}

const VC_HIDDEN: [VcHidden; 2] = [
    VcHidden {
        file: "hidden-host.hc",
        outer: "outer volume password\n",
        hidden: "hidden volume password\n",
        prf: "whirlpool",
        pim: "3",
        size: 65_536,
        reserved: 4096,
    },
    VcHidden {
        file: "hidden-2m-host.hc",
        outer: "large outer volume password\n",
        hidden: "large hidden volume password\n",
        prf: "sha256",
        pim: "0",
        size: 2 << 20,
        reserved: 131_072,
    },
];

fn inspect_file(path: &str, stdin: &str, extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["volume", "inspect", path, "--password-stdin"];
    args.extend_from_slice(extra);
    json(&ok(vcctl(&args, stdin)))
}

fn u(v: &serde_json::Value) -> u64 {
    v.as_u64().expect("a number")
}

fn create(path: &TempPath, extra: &[&str], stdin: &str) -> serde_json::Value {
    let mut args = vec![
        "volume",
        "create",
        path.0.to_str().unwrap(),
        "--password-stdin",
    ];
    args.extend_from_slice(extra);
    json(&ok(vcctl(&args, stdin)))
}

/// Asserts VeraCrypt's hidden-volume geometry between an outer and a hidden inspect.
fn assert_veracrypt_hidden_layout(outer: &serde_json::Value, hidden: &serde_json::Value) {
    let outer_end = u(&outer["data_offset"]) + u(&outer["data_size"]);
    let (hs, hl) = (u(&hidden["data_offset"]), u(&hidden["data_size"]));
    // The hidden volume as asked for (data + reserved) ends where the outer data ends.
    let asked = outer_end - hs;
    assert_eq!(
        hs + hl + hidden_reserved(asked),
        outer_end,
        "hidden data must end VeraCrypt's reserved area before the outer data end"
    );
    // Every size field of the hidden header holds the reduced size.
    assert_eq!(u(&hidden["volume_size"]), hl);
    assert_eq!(u(&hidden["hidden_volume_size"]), hl);
    assert_eq!(u(&outer["hidden_volume_size"]), 0);
}

#[test]
fn w15_veracrypt_written_hidden_volume_matches_our_layout_rule() {
    for vc in VC_HIDDEN {
        let file = written(vc.file);
        let path = file.to_str().unwrap();
        let outer = inspect_file(path, vc.outer, &["--prf", "sha512"]);
        let extra = ["--prf", vc.prf, "--pim", vc.pim, "--hidden"];
        let hidden = inspect_file(path, vc.hidden, &extra);
        let outer_end = u(&outer["data_offset"]) + u(&outer["data_size"]);
        let hidden_end = u(&hidden["data_offset"]) + u(&hidden["data_size"]);
        // The hidden volume takes the last `size` bytes of the outer data area, and VeraCrypt
        // keeps the reserved area of its side of the 2 MiB threshold out of the hidden data.
        assert_eq!(
            outer_end - u(&hidden["data_offset"]),
            vc.size,
            "{}",
            vc.file
        );
        assert_eq!(outer_end - hidden_end, vc.reserved, "{}", vc.file);
        assert_eq!(hidden_reserved(vc.size), vc.reserved, "{}", vc.file);
        assert_veracrypt_hidden_layout(&outer, &hidden);
        // vcctl's layout for the same container and hidden size lands on the same bytes.
        let size = std::fs::metadata(&file).unwrap().len();
        let l = layout(size, Some(vc.size)).unwrap();
        assert_eq!(l.outer, (u(&outer["data_offset"]), u(&outer["data_size"])));
        assert_eq!(
            l.hidden,
            Some((u(&hidden["data_offset"]), u(&hidden["data_size"])))
        );
    }
}

#[test]
fn w15_vcctl_hidden_volumes_below_and_above_the_threshold_keep_the_reserved_area() {
    // 2 MiB is VeraCrypt's threshold: below it 4 KiB is reserved, from it on 128 KiB.
    for (size, hidden, reserved) in [
        (1u64 << 20, 65_536u64, 4096u64),
        (8 << 20, (2 << 20) - 512, 4096),
        (8 << 20, 2 << 20, 131_072),
        (8 << 20, 3 << 20, 131_072),
    ] {
        let f = TempPath::new("w15-layout");
        let made = create(
            &f,
            &[
                "--size",
                &size.to_string(),
                "--hidden-size",
                &hidden.to_string(),
                "--prf",
                "sha256",
                "--pim",
                "1",
            ],
            "o\nh\n",
        );
        let path = f.0.to_str().unwrap();
        let outer = inspect_file(path, "o\n", &["--prf", "sha256", "--pim", "1"]);
        let hid = inspect_file(path, "h\n", &["--prf", "sha256", "--pim", "1", "--hidden"]);
        assert_veracrypt_hidden_layout(&outer, &hid);
        assert_eq!(u(&hid["data_size"]), hidden - reserved, "{size} {hidden}");
        assert_eq!(u(&hid["data_offset"]), size - 131_072 - hidden);
        assert_eq!(made["hidden_data_offset"], hid["data_offset"]);
        assert_eq!(made["hidden_data_size"], hid["data_size"]);
    }
}

#[test]
fn w15_outer_writes_up_to_the_end_of_the_outer_data_never_touch_the_hidden_data() {
    let f = TempPath::new("w15-tail");
    let made = create(
        &f,
        &[
            "--size",
            "1048576",
            "--hidden-size",
            "131072",
            "--prf",
            "sha256",
            "--pim",
            "1",
        ],
        "o\nh\n",
    );
    let (hs, hl) = (u(&made["hidden_data_offset"]), u(&made["hidden_data_size"]));
    let outer_end = u(&made["data_offset"]) + u(&made["data_size"]);
    let read_hidden = || {
        ok(vcctl(
            &[
                "volume",
                "read",
                f.0.to_str().unwrap(),
                "--password-stdin",
                "--prf",
                "sha256",
                "--pim",
                "1",
                "--hidden",
                "--offset",
                "0",
                "--length",
                &hl.to_string(),
            ],
            "h\n",
        ))
    };
    let before = read_hidden();
    // The outer filesystem writes its last sectors (NTFS backup boot sector): every byte
    // from the hidden data end to the outer data end.
    let mut bytes = std::fs::read(&f.0).unwrap();
    assert!(hs + hl < outer_end);
    bytes[(hs + hl) as usize..outer_end as usize].fill(0xEE);
    std::fs::write(&f.0, &bytes).unwrap();
    assert_eq!(read_hidden(), before);

    // And hidden-volume protection (the range the mount request carries) does not cover them.
    let creds = |pw: &[u8]| vcctl::volume::Credentials {
        password: zeroize::Zeroizing::new(pw.to_vec()),
        prf: Some(vcctl::kdf::Prf::Sha256),
        pim: 1,
        keyfiles: Vec::new(),
    };
    let args = vcctl::driver::MountArgs {
        host: "x".into(),
        creds: creds(b"o"),
        kind: vcctl::volume::Kind::Normal,
        hidden_creds: Some(creds(b"h")),
        letter: None,
        read_only: false,
        shared: false,
        wine_host_driver_name: None,
    };
    let mut file = std::fs::File::open(&f.0).unwrap();
    let req =
        vcctl::driver::mount_request(&args, &mut file, bytes.len() as u64, None, &mut Vec::new())
            .unwrap();
    let req = vcdirect::abi::MountRequest::parse(&req, false).unwrap();
    assert_eq!(req.protected_range, (hs, hl));
    assert!(req.protected_range.0 + req.protected_range.1 <= outer_end - 4096);
}

#[test]
fn w15_zero_fill_with_a_hidden_volume_is_refused_and_leaves_no_file() {
    let f = TempPath::new("w15-zero");
    let err = fails(vcctl(
        &[
            "volume",
            "create",
            f.0.to_str().unwrap(),
            "--password-stdin",
            "--size",
            "1048576",
            "--hidden-size",
            "131072",
            "--prf",
            "sha256",
            "--fill",
            "zero",
        ],
        "o\nh\n",
    ));
    assert!(err.contains("--fill zero"), "{err}");
    assert!(!f.0.exists());
}

#[test]
fn w15_free_space_and_hidden_area_look_alike_through_the_outer_key() {
    let f = TempPath::new("w15-fill");
    let made = create(
        &f,
        &[
            "--size",
            "1048576",
            "--hidden-size",
            "262144",
            "--prf",
            "sha256",
            "--pim",
            "1",
        ],
        "o\nh\n",
    );
    let (start, size) = (u(&made["data_offset"]), u(&made["data_size"]));
    let hs = u(&made["hidden_data_offset"]) - start;
    let outer = ok(vcctl(
        &[
            "volume",
            "read",
            f.0.to_str().unwrap(),
            "--password-stdin",
            "--prf",
            "sha256",
            "--pim",
            "1",
            "--offset",
            "0",
            "--length",
            &size.to_string(),
        ],
        "o\n",
    ));
    // What the outer password shows: the outer FAT (boot sector, tables, root directory, up
    // to the end of its used space), free space, then the hidden volume. Free space and hidden
    // volume must look like uniform random bytes (chi-square with 255 degrees of freedom; 400
    // is far beyond p=1e-6).
    let facts = vcctl::fat::read_facts(&mut std::io::Cursor::new(&outer[..]), size, 512).unwrap();
    let (free, hidden) = outer.split_at(hs as usize);
    let free = &free[facts.used_end() as usize..];
    for (name, part) in [
        ("free space", free),
        ("hidden area", &hidden[..free.len().min(hidden.len())]),
    ] {
        let x = chi_square(part);
        assert!(x < 400.0, "{name} does not look random: chi-square {x}");
        assert!(part.len() >= 65_536);
    }
}

/// A vcctl-made volume (SHA-256, PIM 1: quick to derive) whose primary outer header is
/// decrypted with the right key, edited by `edit`, given fresh CRCs and re-encrypted, so only
/// the edited field differs.
fn edited_header_volume(tag: &str, edit: impl Fn(&mut [u8; 512])) -> TempPath {
    let f = TempPath::new(tag);
    create(
        &f,
        &["--size", "524288", "--prf", "sha256", "--pim", "1"],
        "pw\n",
    );
    let mut bytes = std::fs::read(&f.0).unwrap();
    let mut key = zeroize::Zeroizing::new([0u8; 64]);
    let never = std::sync::atomic::AtomicBool::new(false);
    vcctl::kdf::derive(
        vcctl::kdf::Prf::Sha256,
        b"pw",
        &bytes[..64],
        vcctl::kdf::iterations(1),
        &mut key[..],
        &never,
    )
    .unwrap();
    let aes = vcctl::cipher::AES;
    let mut h = [0u8; 512];
    h.copy_from_slice(&bytes[..512]);
    aes.decrypt(&key[..], &mut h[64..], 0);
    assert_eq!(&h[64..68], b"VERA");
    edit(&mut h);
    let crc = crc32fast::hash(&h[64..252]);
    h[252..256].copy_from_slice(&crc.to_be_bytes());
    aes.encrypt(&key[..], &mut h[64..], 0);
    bytes[..512].copy_from_slice(&h);
    std::fs::write(&f.0, &bytes).unwrap();
    f
}

#[test]
fn w15_headers_veracrypt_refuses_are_refused_with_one_line_naming_the_cause() {
    type Edit = fn(&mut [u8; 512]);
    let cases: [(&str, Edit, &str); 5] = [
        (
            "newer-program",
            |h| h[70..72].copy_from_slice(&0x0127u16.to_be_bytes()),
            "1.27",
        ),
        (
            "newer-header",
            |h| h[68..70].copy_from_slice(&6u16.to_be_bytes()),
            "header version 6",
        ),
        ("system", |h| h[127] |= 1, "system-encryption"),
        (
            "in-place",
            |h| {
                h[127] |= 2;
                h[107] = h[107].wrapping_add(2); // volume size > encrypted area
            },
            "in-place encryption not finished",
        ),
        ("in-place-and-system", |h| h[127] |= 3, "system-encryption"),
    ];
    for (tag, edit, want) in cases {
        let f = edited_header_volume(tag, edit);
        let before = std::fs::read(&f.0).unwrap();
        let err = fails(vcctl(
            &[
                "volume",
                "inspect",
                f.0.to_str().unwrap(),
                "--password-stdin",
                "--prf",
                "sha256",
                "--pim",
                "1",
            ],
            "pw\n",
        ));
        assert!(err.contains(want), "{tag}: {err}");
        // Refused, not opened from the (intact) backup header; the volume is untouched.
        assert!(!err.contains("damaged"), "{tag}: {err}");
        assert_eq!(std::fs::read(&f.0).unwrap(), before);
    }
    // Finished in-place encryption and version 1.26 are accepted, as VeraCrypt accepts them.
    let f = edited_header_volume("accepted", |h| {
        h[127] |= 2;
        h[70..72].copy_from_slice(&0x0126u16.to_be_bytes());
    });
    let j = inspect_file(
        f.0.to_str().unwrap(),
        "pw\n",
        &["--prf", "sha256", "--pim", "1"],
    );
    assert_eq!(j["flags"], 2);
    assert_eq!(j["header"], "primary");
}

/// A disk with 4,096-byte logical sectors: like Windows on such a disk, any read that is not
/// whole, aligned sectors fails.
struct FourKDisk {
    data: std::io::Cursor<Vec<u8>>,
    reads: Vec<(u64, usize)>,
}

impl std::io::Read for FourKDisk {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let at = self.data.position();
        if !at.is_multiple_of(4096) || !buf.len().is_multiple_of(4096) {
            return Err(std::io::Error::from(std::io::ErrorKind::InvalidInput));
        }
        self.reads.push((at, buf.len()));
        self.data.read(buf)
    }
}

impl std::io::Seek for FourKDisk {
    fn seek(&mut self, pos: std::io::SeekFrom) -> std::io::Result<u64> {
        self.data.seek(pos)
    }
}

#[test]
fn w15_headers_are_read_with_whole_aligned_sectors_of_a_4k_disk() {
    let f = TempPath::new("w15-4k");
    create(
        &f,
        &[
            "--size",
            "1048576",
            "--hidden-size",
            "131072",
            "--prf",
            "sha256",
            "--pim",
            "1",
        ],
        "o\nh\n",
    );
    let bytes = std::fs::read(&f.0).unwrap();
    let size = bytes.len() as u64;
    let creds = |pw: &[u8]| vcctl::volume::Credentials {
        password: zeroize::Zeroizing::new(pw.to_vec()),
        prf: Some(vcctl::kdf::Prf::Sha256),
        pim: 1,
        keyfiles: Vec::new(),
    };
    let mut disk = FourKDisk {
        data: std::io::Cursor::new(bytes.clone()),
        reads: Vec::new(),
    };
    // 512-byte reads fail on this disk (what vcctl used to do).
    assert!(vcctl::volume::open_host(
        &mut disk,
        size,
        512,
        &creds(b"o"),
        vcctl::volume::Kind::Normal
    )
    .is_err());
    let v = vcctl::volume::open_host(
        &mut disk,
        size,
        4096,
        &creds(b"o"),
        vcctl::volume::Kind::Normal,
    )
    .unwrap();
    assert_eq!(v.header.data_offset, 131_072);
    let v = vcctl::volume::open_host(
        &mut disk,
        size,
        4096,
        &creds(b"h"),
        vcctl::volume::Kind::Hidden,
    )
    .unwrap();
    assert_eq!(v.kind, vcctl::volume::Kind::Hidden);
    assert!(disk
        .reads
        .iter()
        .all(|(at, n)| at % 4096 == 0 && *n == 4096));
    // A damaged primary: the backup near the end is read the same way.
    let mut broken = bytes.clone();
    broken[..512].fill(0);
    let mut disk = FourKDisk {
        data: std::io::Cursor::new(broken),
        reads: Vec::new(),
    };
    let v = vcctl::volume::open_host(
        &mut disk,
        size,
        4096,
        &creds(b"o"),
        vcctl::volume::Kind::Normal,
    )
    .unwrap();
    assert_eq!(v.copy, vcctl::volume::HeaderCopy::Backup);

    // Mounting it on a raw 4 KiB-sector host is refused: the volume has 512-byte sectors.
    let args = vcctl::driver::MountArgs {
        host: "x".into(),
        creds: creds(b"o"),
        kind: vcctl::volume::Kind::Normal,
        hidden_creds: None,
        letter: None,
        read_only: false,
        shared: false,
        wine_host_driver_name: None,
    };
    let mut disk = FourKDisk {
        data: std::io::Cursor::new(bytes.clone()),
        reads: Vec::new(),
    };
    let err = vcctl::driver::mount_request(&args, &mut disk, size, Some(4096), &mut Vec::new())
        .unwrap_err();
    assert!(err.to_string().contains("sector size mismatch"), "{err}");
    let mut disk512 = std::io::Cursor::new(bytes);
    assert!(
        vcctl::driver::mount_request(&args, &mut disk512, size, Some(512), &mut Vec::new()).is_ok()
    );
}
