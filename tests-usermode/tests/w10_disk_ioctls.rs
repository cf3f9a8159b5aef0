//! W10: walks the conformance table docs/disk-ioctls.tsv and runs the real portable answers
//! (`vcdirect::disk_ioctl`) for every row: the status and information must be the table's, a
//! row that differs from VeraCrypt 1.26 must say why, VERIFY must really read the host (through
//! the engine, on a mounted volume of each path, as the driver serves it), and the table must
//! cover every code the answers know.

use std::collections::BTreeSet;
use std::sync::{mpsc, Arc};
use std::time::Duration;

use vcdirect::disk_ioctl::{self, code, pnp, DiskFacts, Request};
use vcdirect::platform::irql::Irql;
use vcdirect::registry::Gates;
use vcdirect::volume::Volume;
use vcdirect::Status;
use vcdirect_usermode::host::MemoryHost;
use vcdirect_usermode::irql::dispatch_at;
use vcdirect_usermode::mount::mount_params;
use vcdirect_usermode::request::TestRequest;
use vcdirect_usermode::std_platform::StdPlatform;

const TABLE: &str = include_str!("../../docs/disk-ioctls.tsv");
const SIZE: u64 = 1 << 20;
const DATA_OFFSET: u64 = 128 * 1024;

const COLUMNS: [&str; 11] = [
    "ioctl",
    "volume",
    "input",
    "out",
    "vc_status",
    "vc_info",
    "status",
    "info",
    "gated",
    "sent_by",
    "note",
];

struct Row<'a> {
    line: usize,
    f: Vec<&'a str>,
}

impl<'a> Row<'a> {
    fn get(&self, column: &str) -> &'a str {
        let i = COLUMNS.iter().position(|c| *c == column).unwrap();
        self.f[i]
    }
    fn num(&self, column: &str) -> usize {
        let v = self.get(column);
        v.parse()
            .unwrap_or_else(|_| panic!("line {}: {column} {v:?} is not a number", self.line))
    }
    fn at(&self) -> String {
        format!(
            "line {} ({} {} in={} out={})",
            self.line,
            self.get("ioctl"),
            self.get("volume"),
            self.get("input"),
            self.get("out")
        )
    }
}

fn rows() -> Vec<Row<'static>> {
    let mut lines = TABLE
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.starts_with('#') && !l.trim().is_empty());
    let (_, header) = lines.next().expect("a header line");
    assert_eq!(header.split('\t').collect::<Vec<_>>(), COLUMNS);
    lines
        .map(|(i, l)| {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(
                f.len(),
                COLUMNS.len(),
                "line {}: {} columns",
                i + 1,
                f.len()
            );
            Row { line: i + 1, f }
        })
        .collect()
}

fn status(name: &str) -> Option<Status> {
    Some(match name {
        "SUCCESS" => Status::Success,
        "BUFFER_TOO_SMALL" => disk_ioctl::BUFFER_TOO_SMALL,
        "BUFFER_OVERFLOW" => disk_ioctl::BUFFER_OVERFLOW,
        "NOT_SUPPORTED" => disk_ioctl::NOT_SUPPORTED,
        "NOT_FOUND" => disk_ioctl::NOT_FOUND,
        "UNSUCCESSFUL" => disk_ioctl::UNSUCCESSFUL,
        "INVALID_DEVICE_REQUEST" => Status::InvalidDeviceRequest,
        "INVALID_PARAMETER" => Status::InvalidParameter,
        "MEDIA_WRITE_PROTECTED" => Status::MediaWriteProtected,
        "IO_DEVICE_ERROR" => Status::IoDeviceError,
        _ => return None,
    })
}

/// The input buffer a row describes.
fn input(spec: &str, at: &str) -> Vec<u8> {
    if spec == "-" {
        return Vec::new();
    }
    let mut bytes = Vec::new();
    let mut cut = None;
    let mut prop = (None, None);
    for part in spec.split(',') {
        let (key, value) = part
            .split_once('=')
            .unwrap_or_else(|| panic!("{at}: {part}"));
        match key {
            "prop" => prop.0 = Some(value.parse::<u32>().unwrap()),
            "type" => prop.1 = Some(value.parse::<u32>().unwrap()),
            "len" => cut = Some(value.parse::<usize>().unwrap()),
            "bytes" => bytes = vec![0u8; value.parse().unwrap()],
            "verify" => {
                let (offset, length) = value.rsplit_once('+').unwrap();
                bytes = vec![0u8; 16];
                bytes[..8].copy_from_slice(&offset.parse::<i64>().unwrap().to_le_bytes());
                bytes[8..12].copy_from_slice(&length.parse::<u32>().unwrap().to_le_bytes());
            }
            _ => panic!("{at}: unknown input key {key}"),
        }
    }
    if let (Some(id), Some(kind)) = prop {
        bytes = vec![0u8; 12];
        bytes[..4].copy_from_slice(&id.to_le_bytes());
        bytes[4..8].copy_from_slice(&kind.to_le_bytes());
    }
    if let Some(n) = cut {
        bytes.truncate(n);
    }
    bytes
}

/// VERIFY's length, when the row's input is a VERIFY_INFORMATION.
fn verify_length(spec: &str) -> Option<u64> {
    let v = spec.split(',').find_map(|p| p.strip_prefix("verify="))?;
    v.rsplit_once('+').map(|(_, l)| l.parse().unwrap())
}

fn utf16(s: &str) -> Vec<u16> {
    s.encode_utf16().collect()
}

/// Runs one IOCTL row; returns (status, information, bytes the host read).
fn run_ioctl(row: &Row<'_>) -> (Status, usize, u64) {
    let at = row.at();
    let code_ = code::by_name(row.get("ioctl")).unwrap_or_else(|| panic!("{at}: unknown code"));
    let volume = row.get("volume");
    let host = MemoryHost::new(DATA_OFFSET + SIZE + 64 * 1024);
    match volume {
        "host-error" => host.fail_range(DATA_OFFSET..DATA_OFFSET + SIZE, Status::IoDeviceError),
        "host-short" => host.short_range(DATA_OFFSET + 2048..DATA_OFFSET + SIZE),
        "rw" | "ro" | "noletter" => {}
        other => panic!("{at}: unknown volume {other}"),
    }
    let device = utf16("\\Device\\VcVolume1");
    let unique: Vec<u8> = device.iter().flat_map(|c| c.to_le_bytes()).collect();
    let link = utf16("\\DosDevices\\X:");
    let facts = DiskFacts {
        size: SIZE,
        sector_size: 512,
        read_only: volume == "ro",
        volume_id: 1,
        device_name: &device,
        unique_id: &unique,
        suggested_link: (volume != "noletter").then_some(&link[..]),
    };
    let input = input(row.get("input"), &at);
    if code_ == code::DISK_VERIFY {
        return run_verify(&at, host, &input);
    }
    let out = row.num("out");
    // The system buffer as the I/O manager allocates it: max(in, out), filled with a pattern
    // so that bytes the answer must not touch can be checked.
    let mut buffer = vec![0xEEu8; input.len().max(out)];
    buffer[..input.len()].copy_from_slice(&input);
    let before = buffer.clone();
    let reply = disk_ioctl::answer(
        &facts,
        &host,
        Request {
            code: code_,
            input_len: input.len(),
            output_len: out,
            buffer: &mut buffer,
        },
    );
    assert!(reply.information <= out, "{at}: {reply:?}");
    assert_eq!(
        &buffer[out..],
        &before[out..],
        "{at}: wrote past the output"
    );
    (reply.status, reply.information, host.counters().read_bytes)
}

/// Runs one VERIFY row as the driver serves it: the glue checks the input
/// (`disk_ioctl::verify_range`), then the engine reads the range on a path's thread; on a
/// mounted volume of each path (legacy: gates off; direct: gates on), which must agree.
/// Returns (status, information, bytes the host read).
fn run_verify(at: &str, host: MemoryHost, input: &[u8]) -> (Status, usize, u64) {
    let (offset, length) = match disk_ioctl::verify_range(input, input.len()) {
        Ok(range) => range,
        Err(status) => return (status, 0, host.counters().read_bytes),
    };
    let host = Arc::new(host);
    let mut answers = Vec::new();
    for gates in [
        Gates::OFF,
        Gates {
            read: true,
            write: true,
        },
    ] {
        let vol = Volume::mount(
            StdPlatform::new(0),
            Arc::clone(&host),
            &[7u8; 64],
            mount_params(DATA_OFFSET, SIZE, gates),
        )
        .expect("mount");
        let before = host.counters().read_bytes;
        let (tx, rx) = mpsc::channel();
        dispatch_at(
            Irql::Passive,
            &vol,
            TestRequest::verify(offset, length, move |c| {
                let _ = tx.send((c.status, c.information));
            }),
        );
        let (status, information) = rx
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("{at}: the VERIFY did not complete"));
        let counters = vol.counters.snapshot();
        let path = (counters.direct_reads, counters.legacy_reads);
        vol.dismount();
        if status.is_success() && length > 0 {
            // Served by the path the gates choose (a VERIFY counts as a read there).
            let want = if gates.write { (1, 0) } else { (0, 1) };
            assert_eq!(path, want, "{at}: gates {gates:?}");
        }
        answers.push((status, information, host.counters().read_bytes - before));
    }
    assert_eq!(answers[0], answers[1], "{at}: the two paths answer alike");
    answers[0]
}

fn pnp_status(row: &Row<'_>) -> Status {
    let at = row.at();
    let (minor, usage) = match row.get("ioctl") {
        "IRP_MN_DEVICE_USAGE_NOTIFICATION" => {
            let (kind, path) = row.get("input").split_once(',').unwrap();
            let kind = match kind {
                "paging" => pnp::usage::PAGING,
                "hibernation" => pnp::usage::HIBERNATION,
                "dumpfile" => pnp::usage::DUMP_FILE,
                "boot" => pnp::usage::BOOT,
                other => panic!("{at}: usage {other}"),
            };
            let in_path = match path {
                "in" => true,
                "out" => false,
                other => panic!("{at}: {other}"),
            };
            (
                pnp::MN_DEVICE_USAGE_NOTIFICATION,
                Some(pnp::UsageNotification { kind, in_path }),
            )
        }
        "IRP_MN_QUERY_DEVICE_RELATIONS" => (0x07, None),
        other => panic!("{at}: unknown PnP minor {other}"),
    };
    // The sender sets STATUS_NOT_SUPPORTED before sending, as the PnP rules require.
    pnp::answer(minor, usage).status(disk_ioctl::NOT_SUPPORTED)
}

#[test]
fn w10_every_row_of_the_conformance_table_is_what_the_code_answers() {
    let rows = rows();
    assert!(rows.len() >= 200, "{} rows", rows.len());
    let mut differing = Vec::new();
    for row in &rows {
        let at = row.at();
        let want = status(row.get("status")).unwrap_or_else(|| panic!("{at}: status"));
        let want_info = row.num("info");
        let (got, info) = if row.get("ioctl").starts_with("IRP_MN_") {
            (pnp_status(row), 0)
        } else {
            let (got, info, read) = run_ioctl(row);
            if row.get("ioctl") == "DISK_VERIFY" {
                // VERIFY really reads: every byte of an accepted range, nothing of a refused one.
                let length = verify_length(row.get("input"));
                match (got, length) {
                    (Status::Success, Some(length)) => assert_eq!(read, length, "{at}"),
                    _ if row.get("volume").starts_with("host-") => {}
                    _ => assert_eq!(read, 0, "{at}: read a refused range"),
                }
            } else {
                assert_eq!(read, 0, "{at}: only VERIFY reads the host");
            }
            (got, info)
        };
        assert_eq!((got, info), (want, want_info), "{at}");
        let vc = row.get("vc_status");
        let note = row.get("note");
        if vc == "-" {
            assert!(!note.is_empty(), "{at}: no VeraCrypt answer and no note");
            continue;
        }
        let same = status(vc) == Some(want) && row.num("vc_info") == want_info;
        if note.starts_with("differs:") {
            assert!(!same, "{at}: marked as differing but answers as VeraCrypt");
            differing.push(at);
        } else {
            assert!(same, "{at}: differs from VeraCrypt without saying why");
        }
    }
    println!(
        "{} rows, {} differ from VeraCrypt 1.26:",
        rows.len(),
        differing.len()
    );
    for d in &differing {
        println!("  {d}");
    }
}

#[test]
fn w10_the_table_covers_every_known_code_with_empty_and_full_buffers() {
    let rows = rows();
    let named: BTreeSet<&str> = rows
        .iter()
        .map(|r| r.get("ioctl"))
        .filter(|n| !n.starts_with("IRP_MN_"))
        .collect();
    for (name, _) in code::NAMED {
        assert!(named.contains(name), "{name} has no row");
        let outs: BTreeSet<usize> = rows
            .iter()
            .filter(|r| r.get("ioctl") == name)
            .map(|r| r.num("out"))
            .collect();
        assert!(outs.contains(&0), "{name}: no zero-length row");
        assert!(outs.len() >= 2, "{name}: only {outs:?}");
    }
    for n in &named {
        assert!(code::by_name(n).is_some(), "row for unknown name {n}");
    }
    let usages: BTreeSet<&str> = rows
        .iter()
        .filter(|r| r.get("ioctl") == "IRP_MN_DEVICE_USAGE_NOTIFICATION")
        .map(|r| r.get("input"))
        .collect();
    for u in ["paging,in", "paging,out", "hibernation,in", "dumpfile,in"] {
        assert!(usages.contains(u), "no PnP row for {u}");
    }
}

#[test]
fn w10_unknown_codes_are_invalid_device_requests_whatever_their_buffers() {
    let device = utf16("\\Device\\VcVolume1");
    let facts = DiskFacts {
        size: SIZE,
        sector_size: 512,
        read_only: false,
        volume_id: 1,
        device_name: &device,
        unique_id: &[],
        suggested_link: None,
    };
    let host = MemoryHost::new(DATA_OFFSET + SIZE);
    let known: BTreeSet<u32> = code::NAMED
        .iter()
        .filter(|(n, _)| !n.starts_with("UNKNOWN"))
        .map(|(_, c)| *c)
        .collect();
    let mut seen = 0;
    // Every function number of the four device types, every method and access.
    for device_type in [0x07u32, 0x2D, 0x4D, 0x56] {
        for function in (0..0x1000u32).step_by(7) {
            for low in [0u32, 1, 2, 3, 0x4000, 0xC000] {
                let c = device_type << 16 | function << 2 | low;
                if known.contains(&c) {
                    continue;
                }
                for (input, out) in [(0usize, 0usize), (0, 8), (16, 0), (64, 64)] {
                    let mut buffer = vec![0u8; input.max(out)];
                    let reply = disk_ioctl::answer(
                        &facts,
                        &host,
                        Request {
                            code: c,
                            input_len: input,
                            output_len: out,
                            buffer: &mut buffer,
                        },
                    );
                    assert_eq!(reply.status, Status::InvalidDeviceRequest, "{c:#x}");
                    assert_eq!(reply.information, 0);
                    seen += 1;
                }
            }
        }
    }
    assert!(seen > 10_000);
}
