//! The reply bytes of the answers (the conformance table in docs/disk-ioctls.tsv checks
//! statuses and sizes; these check what the bytes say).

use super::*;
use crate::platform::{HostIo, HostKind, HostLimits, KeptRead};
use proptest::prelude::*;
use std::sync::Mutex;
use std::vec;
use std::vec::Vec;

/// A host whose reads return `fill` bytes and are recorded as (offset, length).
struct TestHost {
    size: u64,
    reads: Mutex<Vec<(u64, usize)>>,
    fail: Option<Status>,
}

struct Ready(Result<usize, Status>);

impl HostIo for Ready {
    fn wait(self) -> Result<usize, Status> {
        self.0
    }
}

impl HostDevice for TestHost {
    type Io<'a> = Ready;
    type Read<'a> = KeptRead<'a, Ready>;
    fn kind(&self) -> HostKind {
        HostKind::RawDevice
    }
    fn size(&self) -> u64 {
        self.size
    }
    fn limits(&self) -> HostLimits {
        HostLimits {
            sector_size: 4096,
            max_transfer: 128 * 1024,
            max_physical_pages: 33,
            alignment_mask: 511,
            page_size: 4096,
        }
    }
    fn start_read<'a>(&'a self, offset: u64, buf: &'a mut [u8]) -> Ready {
        self.reads.lock().unwrap().push((offset, buf.len()));
        if let Some(e) = self.fail {
            return Ready(Err(e));
        }
        let n = self.size.saturating_sub(offset).min(buf.len() as u64) as usize;
        buf[..n].fill(0xA5);
        Ready(Ok(n))
    }
    fn start_read_kept<'a>(&'a self, offset: u64, buf: &'a mut [u8]) -> Self::Read<'a> {
        let io = self.start_read(offset, buf);
        KeptRead::new(io, buf)
    }
    fn start_write<'a>(&'a self, _: u64, _: &'a [u8]) -> Ready {
        Ready(Err(Status::InvalidDeviceRequest))
    }
    fn flush(&self) -> Result<(), Status> {
        Ok(())
    }
}

const SIZE: u64 = 1 << 20;
const OFFSET: u64 = 128 * 1024;

fn host() -> TestHost {
    TestHost {
        size: OFFSET + SIZE,
        reads: Mutex::new(Vec::new()),
        fail: None,
    }
}

fn name(s: &str) -> Vec<u16> {
    s.encode_utf16().collect()
}

fn ask(
    facts: &DiskFacts<'_>,
    h: &TestHost,
    code: u32,
    input: &[u8],
    out: usize,
) -> (Reply, Vec<u8>) {
    let mut buffer = vec![0xEEu8; input.len().max(out)];
    buffer[..input.len()].copy_from_slice(input);
    let reply = answer(
        facts,
        h,
        Request {
            code,
            input_len: input.len(),
            output_len: out,
            buffer: &mut buffer,
        },
    );
    buffer.truncate(reply.information);
    (reply, buffer)
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

fn with_facts<T>(read_only: bool, f: impl FnOnce(&DiskFacts<'_>) -> T) -> T {
    let device = name("\\Device\\VcVolume3");
    let link = name("\\DosDevices\\Q:");
    let id = [1u8, 2, 3, 4, 5];
    let facts = DiskFacts {
        size: SIZE,
        sector_size: 512,
        read_only,
        volume_id: 3,
        device_name: &device,
        unique_id: &id,
        suggested_link: Some(&link),
    };
    f(&facts)
}

#[test]
fn w10_crc32_is_the_ieee_one() {
    assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    assert_eq!(crc32(b""), 0);
}

#[test]
fn w10_geometry_partition_and_capacity_describe_one_virtual_disk() {
    with_facts(false, |f| {
        let h = host();
        let (r, g) = ask(f, &h, code::DISK_GET_DRIVE_GEOMETRY, &[], 24);
        assert_eq!(r, Reply::new(Status::Success, 24));
        let cylinders = SIZE / 512 + 1;
        assert_eq!(u64_at(&g, 0), cylinders);
        assert_eq!(
            (
                u32_at(&g, 8),
                u32_at(&g, 12),
                u32_at(&g, 16),
                u32_at(&g, 20)
            ),
            (12, 1, 1, 512)
        );
        let (r, g) = ask(f, &h, code::DISK_GET_DRIVE_GEOMETRY_EX, &[], 200);
        assert_eq!(r, Reply::new(Status::Success, 112));
        assert_eq!(u64_at(&g, 24), SIZE + 512);
        assert_eq!((u32_at(&g, 32), u32_at(&g, 36)), (24, 0));
        assert_eq!(u32_at(&g, 40), crc32(&3u32.to_le_bytes()));
        assert_eq!(u32_at(&g, 56), 56);
        let (_, p) = ask(f, &h, code::DISK_GET_PARTITION_INFO, &[], 32);
        assert_eq!((u64_at(&p, 0), u64_at(&p, 8)), (512, SIZE));
        assert_eq!((u32_at(&p, 20), p[24], p[25], p[26]), (1, 0, 0, 1));
        let (_, p) = ask(f, &h, code::DISK_GET_PARTITION_INFO_EX, &[], 144);
        assert_eq!(u32_at(&p, 0), 0);
        assert_eq!(
            (u64_at(&p, 8), u64_at(&p, 16), u32_at(&p, 24)),
            (512, SIZE, 1)
        );
        assert_eq!((p[32], p[33], p[34]), (0, 0, 1));
        let (r, c) = ask(f, &h, code::STORAGE_READ_CAPACITY, &[], 32);
        assert_eq!(r, Reply::new(Status::Success, 32));
        assert_eq!((u32_at(&c, 0), u32_at(&c, 4), u32_at(&c, 8)), (32, 32, 512));
        assert_eq!((u64_at(&c, 16), u64_at(&c, 24)), (cylinders, SIZE + 512));
        // The partition ends where the disk ends.
        assert_eq!(512 + SIZE, cylinders * 512);
    });
}

#[test]
fn w10_drive_layouts_report_one_or_four_entries() {
    with_facts(false, |f| {
        let h = host();
        let (r, l) = ask(f, &h, code::DISK_GET_DRIVE_LAYOUT, &[], 100);
        assert_eq!(r, Reply::new(Status::Success, 40));
        assert_eq!(u32_at(&l, 0), 1);
        assert_eq!(u32_at(&l, 4), crc32(&3u32.to_le_bytes()));
        assert_eq!(u64_at(&l, 8), 512);
        let (r, l) = ask(f, &h, code::DISK_GET_DRIVE_LAYOUT, &[], 136);
        assert_eq!(r, Reply::new(Status::Success, 136));
        assert_eq!(u32_at(&l, 0), 4);
        assert!(l[40..].iter().all(|&b| b == 0));
        let (r, l) = ask(f, &h, code::DISK_GET_DRIVE_LAYOUT_EX, &[], 624);
        assert_eq!(r, Reply::new(Status::Success, 624));
        assert_eq!((u32_at(&l, 0), u32_at(&l, 4)), (0, 4));
        assert_eq!(u64_at(&l, 48 + 16), SIZE);
        assert!(l[192..].iter().all(|&b| b == 0));
    });
}

#[test]
fn w10_media_types_and_writable_follow_read_only() {
    for ro in [false, true] {
        with_facts(ro, |f| {
            let h = host();
            let (r, m) = ask(f, &h, code::STORAGE_GET_MEDIA_TYPES_EX, &[], 40);
            assert_eq!(r, Reply::new(Status::Success, 40));
            assert_eq!((u32_at(&m, 0), u32_at(&m, 4)), (7, 1));
            let want = if ro { 0x8000_0104 } else { 0x8000_0008 };
            assert_eq!(u32_at(&m, 8 + 28), want);
            let (r, _) = ask(f, &h, code::DISK_IS_WRITABLE, &[], 0);
            let want = if ro {
                Status::MediaWriteProtected
            } else {
                Status::Success
            };
            assert_eq!(r, Reply::new(want, 0));
        });
    }
}

fn property(id: u32, kind: u32) -> [u8; 12] {
    let mut q = [0u8; 12];
    q[..4].copy_from_slice(&id.to_le_bytes());
    q[4..8].copy_from_slice(&kind.to_le_bytes());
    q
}

#[test]
fn w10_storage_properties_carry_the_host_limits() {
    with_facts(false, |f| {
        let h = host();
        let (r, a) = ask(f, &h, code::STORAGE_QUERY_PROPERTY, &property(1, 0), 64);
        assert_eq!(r, Reply::new(Status::Success, 32));
        assert_eq!((u32_at(&a, 0), u32_at(&a, 4)), (32, 32));
        assert_eq!(
            (u32_at(&a, 8), u32_at(&a, 12), u32_at(&a, 16), a[24]),
            (128 * 1024, 33, 511, 0x0E)
        );
        // sizeof(STORAGE_DEVICE_DESCRIPTOR) holds the whole device descriptor: no strings.
        let (r, d) = ask(f, &h, code::STORAGE_QUERY_PROPERTY, &property(0, 0), 40);
        assert_eq!(r, Reply::new(Status::Success, 40));
        assert_eq!((u32_at(&d, 0), u32_at(&d, 4), d[8], d[10]), (40, 40, 0, 0));
        for string in [12, 16, 20, 24] {
            assert_eq!(u32_at(&d, string), 0, "string offset at {string}");
        }
        assert_eq!(u32_at(&d, 28), 0x0E);
        // Any output from a header up: as much of the descriptor as it holds.
        let (r, a20) = ask(f, &h, code::STORAGE_QUERY_PROPERTY, &property(1, 0), 20);
        assert_eq!(r, Reply::new(Status::Success, 20));
        assert_eq!(&a20[..], &a[..20]);
        let (r, d64) = ask(f, &h, code::STORAGE_QUERY_PROPERTY, &property(0, 0), 64);
        assert_eq!(r, Reply::new(Status::Success, 40));
        assert_eq!(d64, d);
        let (_, al) = ask(f, &h, code::STORAGE_QUERY_PROPERTY, &property(6, 0), 28);
        assert_eq!((u32_at(&al, 16), u32_at(&al, 20)), (512, 4096));
        let (_, s) = ask(f, &h, code::STORAGE_QUERY_PROPERTY, &property(7, 0), 12);
        assert_eq!(s[8], 1);
        let (_, t) = ask(f, &h, code::STORAGE_QUERY_PROPERTY, &property(8, 0), 12);
        assert_eq!(t[8], 0);
        let (r, hd) = ask(f, &h, code::STORAGE_QUERY_PROPERTY, &property(0, 0), 8);
        assert_eq!(r, Reply::new(Status::Success, 8));
        assert_eq!((u32_at(&hd, 0), u32_at(&hd, 4)), (40, 40));
    });
}

#[test]
fn w10_mountdev_names_follow_the_mount_manager_protocol() {
    with_facts(false, |f| {
        let h = host();
        let (r, n) = ask(f, &h, code::MOUNTDEV_QUERY_DEVICE_NAME, &[], 4);
        assert_eq!(r, Reply::new(BUFFER_OVERFLOW, 4));
        assert_eq!(u16::from_le_bytes([n[0], n[1]]), 34);
        assert_eq!(&n[2..], &[0, 0]);
        let (r, n) = ask(f, &h, code::MOUNTDEV_QUERY_DEVICE_NAME, &[], 64);
        assert_eq!(r, Reply::new(Status::Success, 36));
        let text: Vec<u16> = n[2..]
            .chunks(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .collect();
        assert_eq!(text, name("\\Device\\VcVolume3"));
        let (r, id) = ask(f, &h, code::MOUNTDEV_QUERY_UNIQUE_ID, &[], 64);
        assert_eq!(r, Reply::new(Status::Success, 7));
        assert_eq!(&id[..], &[5, 0, 1, 2, 3, 4, 5]);
        let (r, l) = ask(f, &h, code::MOUNTDEV_QUERY_SUGGESTED_LINK_NAME, &[], 64);
        assert_eq!(r, Reply::new(Status::Success, 4 + 28));
        assert_eq!((l[0], u16::from_le_bytes([l[2], l[3]])), (0, 28));
    });
}

fn verify_input(offset: i64, length: u32) -> [u8; 16] {
    let mut v = [0u8; 16];
    v[..8].copy_from_slice(&offset.to_le_bytes());
    v[8..12].copy_from_slice(&length.to_le_bytes());
    v
}

#[test]
fn w10_verify_input_is_the_whole_structure_and_the_answers_never_read_the_host() {
    // The whole VERIFY_INFORMATION, tail padding included, as VeraCrypt checks it.
    assert_eq!(
        verify_range(&verify_input(4096, 200 * 1024), 16),
        Ok((4096, 200 * 1024))
    );
    assert_eq!(verify_range(&verify_input(-512, 512), 64), Ok((-512, 512)));
    assert_eq!(
        verify_range(&verify_input(i64::MAX, u32::MAX), 16),
        Ok((i64::MAX, u32::MAX))
    );
    for (bytes, len) in [(16, 12), (12, 16), (0, 0), (16, 0)] {
        let input = verify_input(0, 512);
        assert_eq!(
            verify_range(&input[..bytes], len),
            Err(BUFFER_TOO_SMALL),
            "{bytes} {len}"
        );
    }
    // The portable answers never serve it (the engine does, on a path's thread): asked, it
    // is refused and the host is not read.
    with_facts(false, |f| {
        let h = host();
        let (r, _) = ask(f, &h, code::DISK_VERIFY, &verify_input(0, 4096), 0);
        assert_eq!(r, Reply::status(Status::InvalidDeviceRequest));
        assert!(h.reads.lock().unwrap().is_empty());
    });
}

#[test]
fn w10_paging_files_are_refused_and_unhandled_pnp_requests_keep_their_status() {
    use pnp::{
        answer as pnp_answer, usage, Answer, UsageNotification, MN_DEVICE_USAGE_NOTIFICATION,
    };
    let n = |kind, in_path| Some(UsageNotification { kind, in_path });
    assert_eq!(
        pnp_answer(MN_DEVICE_USAGE_NOTIFICATION, n(usage::PAGING, true)),
        Answer::Complete(UNSUCCESSFUL)
    );
    for (kind, in_path) in [
        (usage::PAGING, false),
        (usage::HIBERNATION, true),
        (usage::DUMP_FILE, true),
        (usage::BOOT, true),
        (usage::UNDEFINED, true),
    ] {
        assert_eq!(
            pnp_answer(MN_DEVICE_USAGE_NOTIFICATION, n(kind, in_path)),
            Answer::Complete(Status::InvalidDeviceRequest)
        );
    }
    // Not handled (QUERY_DEVICE_RELATIONS, QUERY_CAPABILITIES, an unknown minor): the status
    // the sender set stays, whatever it is.
    for minor in [0x07, 0x09, 0xFF] {
        let answer = pnp_answer(minor, None);
        assert_eq!(answer, Answer::AsSent, "{minor:#x}");
        assert_eq!(answer.status(NOT_SUPPORTED), NOT_SUPPORTED);
        assert_eq!(answer.status(Status::Success), Status::Success);
    }
    // The notification's own status is not "as sent", whatever was sent.
    assert_eq!(
        pnp_answer(MN_DEVICE_USAGE_NOTIFICATION, n(usage::PAGING, true)).status(Status::Success),
        UNSUCCESSFUL
    );
}

proptest! {
    /// Whatever the code, lengths and bytes (the buffer possibly shorter than the lengths claim):
    /// no panic, never more bytes than the output holds, none on failure, and nothing written
    /// past the output length.
    #[test]
    fn w10_any_request_keeps_the_reply_rules(
        pick in 0usize..64,
        raw in any::<u32>(),
        input in proptest::collection::vec(any::<u8>(), 0..40),
        out in 0usize..700,
        held_short in any::<bool>(),
    ) {
        let code_ = code::NAMED.get(pick).map_or(raw, |(_, c)| *c);
        with_facts(pick % 2 == 0, |f| {
            let h = host();
            let len = input.len().max(out);
            let held = if held_short { len / 2 } else { len };
            let mut buffer = vec![0xEEu8; held];
            buffer[..input.len().min(held)].copy_from_slice(&input[..input.len().min(held)]);
            let before = buffer.clone();
            let reply = answer(f, &h, Request {
                code: code_,
                input_len: input.len(),
                output_len: out,
                buffer: &mut buffer,
            });
            prop_assert!(reply.information <= out.min(held));
            if is_error(reply.status) {
                prop_assert_eq!(reply.information, 0);
            }
            let end = out.min(held);
            prop_assert_eq!(&buffer[end..], &before[end..]);
            Ok(())
        })?;
    }
}
