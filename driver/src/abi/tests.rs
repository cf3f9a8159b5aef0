use alloc::vec;
use alloc::vec::Vec;

use proptest::prelude::*;

use super::*;
use crate::io::{CounterSnapshot, VolumeMemory};
use crate::Status;

fn utf16(s: &str) -> Vec<u16> {
    s.encode_utf16().collect()
}

fn mount() -> MountRequest {
    MountRequest {
        flags: MOUNT_PROTECT_HIDDEN,
        sector_size: 512,
        data_offset: 131_072,
        data_size: 1 << 20,
        protected_range: (131_072 + 65_536, 65_536),
        drive_letter: Some('V'),
        algorithm: crate::crypto::AES,
        key: MasterKey::try_new(&[0x42; KEY_LENGTH]).unwrap(),
        host_path: utf16(r"\\?\GLOBALROOT\Device\Harddisk1\Partition2"),
        wine_host_driver_name: Vec::new(),
    }
}

#[test]
fn ioctl_codes_use_the_unknown_device_type_and_buffered_method() {
    assert_eq!(IOCTL_MOUNT, 0x0022_E000);
    assert_eq!(IOCTL_LIST, 0x0022_2008);
    let all = [
        IOCTL_MOUNT,
        IOCTL_DISMOUNT,
        IOCTL_LIST,
        IOCTL_STATUS,
        IOCTL_GATES_GET,
        IOCTL_GATES_SET,
        IOCTL_GATES_RELOAD,
        IOCTL_ERASE_KEYS,
    ];
    for (i, a) in all.iter().enumerate() {
        assert_eq!(a >> 16, FILE_DEVICE_VCDIRECT);
        assert_eq!(a & 3, METHOD_BUFFERED);
        assert!(all[i + 1..].iter().all(|b| b != a), "codes are distinct");
    }
}

#[test]
fn mount_request_round_trips_with_documented_offsets() {
    let m = mount();
    let bytes = m.build().unwrap();
    assert_eq!(bytes.len(), MountRequest::SIZE);
    assert_eq!(&bytes[0..4], &ABI_VERSION.to_le_bytes());
    assert_eq!(&bytes[48..50], &u16::from(b'V').to_le_bytes());
    assert_eq!(&bytes[56..120], &[0x42; 64]);
    assert_eq!(bytes[120], b'\\');
    assert!(MountRequest::parse(&bytes, false).unwrap() == m);
}

#[test]
fn wine_host_name_is_accepted_only_by_the_wine_build() {
    let mut m = mount();
    m.wine_host_driver_name = utf16("vctestdisk");
    let bytes = m.build().unwrap();
    assert_eq!(
        MountRequest::parse(&bytes, false).err(),
        Some(AbiError::WineHostNotAllowed)
    );
    assert!(MountRequest::parse(&bytes, true).is_ok());
}

fn edited(edit: impl Fn(&mut Vec<u8>)) -> Vec<u8> {
    let mut b = mount().build().unwrap().to_vec();
    edit(&mut b);
    b
}

fn put32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}
fn put64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

#[test]
fn malformed_mount_requests_get_precise_errors() {
    let size = MountRequest::SIZE;
    let path_end = 120 + 2 * HOST_PATH_CHARS;
    let table: Vec<(&str, Vec<u8>, AbiError)> = vec![
        (
            "empty",
            Vec::new(),
            AbiError::WrongSize {
                expected: size,
                got: 0,
            },
        ),
        (
            "short",
            edited(|b| b.truncate(size - 1)),
            AbiError::WrongSize {
                expected: size,
                got: size - 1,
            },
        ),
        (
            "long",
            edited(|b| b.push(0)),
            AbiError::WrongSize {
                expected: size,
                got: size + 1,
            },
        ),
        (
            "version",
            edited(|b| put32(b, 0, 2)),
            AbiError::WrongVersion(2),
        ),
        (
            "size field",
            edited(|b| put32(b, 4, 8)),
            AbiError::SizeFieldMismatch(8),
        ),
        (
            "unknown flag",
            edited(|b| put32(b, 8, 1 << 9)),
            AbiError::UnknownFlags(1 << 9),
        ),
        (
            "hidden+protect",
            edited(|b| put32(b, 8, MOUNT_HIDDEN | MOUNT_PROTECT_HIDDEN)),
            AbiError::ConflictingFlags,
        ),
        (
            "sector 520",
            edited(|b| put32(b, 12, 520)),
            AbiError::BadSectorSize(520),
        ),
        (
            "sector 0",
            edited(|b| put32(b, 12, 0)),
            AbiError::BadSectorSize(0),
        ),
        ("key 32", edited(|b| b[50] = 32), AbiError::BadKeyLength(32)),
        ("reserved", edited(|b| b[52] = 1), AbiError::ReservedNotZero),
        (
            "offset",
            edited(|b| put64(b, 16, 131_073)),
            AbiError::Misaligned,
        ),
        ("size", edited(|b| put64(b, 24, 100)), AbiError::Misaligned),
        ("zero size", edited(|b| put64(b, 24, 0)), AbiError::BadRange),
        (
            "overflow",
            edited(|b| put64(b, 16, u64::MAX - 511)),
            AbiError::BadRange,
        ),
        (
            "protected outside",
            edited(|b| put64(b, 32, 1 << 30)),
            AbiError::BadRange,
        ),
        (
            "protected empty",
            edited(|b| put64(b, 40, 0)),
            AbiError::BadRange,
        ),
        (
            "range without flag",
            edited(|b| put32(b, 8, 0)),
            AbiError::BadRange,
        ),
        (
            "letter",
            edited(|b| b[48] = b'v'),
            AbiError::BadDriveLetter(u16::from(b'v')),
        ),
        (
            "unterminated path",
            edited(|b| b[120..path_end].fill(b'A')),
            AbiError::Unterminated,
        ),
        (
            "empty path",
            edited(|b| b[120..path_end].fill(0)),
            AbiError::EmptyPath,
        ),
        (
            "path padding",
            edited(|b| b[path_end - 2] = b'x'),
            AbiError::PaddingNotZero,
        ),
        (
            "unterminated wine name",
            edited(|b| b[path_end..].fill(b'A')),
            AbiError::Unterminated,
        ),
    ];
    for (name, buf, want) in table {
        assert_eq!(MountRequest::parse(&buf, false).err(), Some(want), "{name}");
        assert_ne!(want.status(), Status::Success);
    }
}

#[test]
fn status_counters_follow_the_snapshot_field_order() {
    let c = CounterSnapshot {
        direct_reads: 11,
        failed: 22,
        legacy_by_reason: [0, 0, 0, 33],
        ..Default::default()
    };
    let s = StatusReply {
        volume_id: 1,
        flags: 0,
        gates: GatesMessage {
            read: true,
            write: true,
        },
        drive_letter: Some('V'),
        backend: b"aes-ni".to_vec(),
        counters: c,
        data_size: 4096,
        memory: None,
        later_counters: false,
    }
    .build()
    .unwrap();
    assert_eq!(s.len(), 200);
    assert_eq!(&s[40..48], &11u64.to_le_bytes());
    assert_eq!(&s[152..160], &22u64.to_le_bytes());
    assert_eq!(&s[184..192], &33u64.to_le_bytes());
    assert_eq!(&s[192..200], &4096u64.to_le_bytes());
    assert_eq!(&s[16..20], &3u32.to_le_bytes());
}

/// Volume 1's status reply with the "soft" backend, no letter and zeroed counters.
fn soft_reply(memory: Option<VolumeMemory>) -> StatusReply {
    StatusReply {
        volume_id: 1,
        flags: 0,
        gates: GatesMessage::default(),
        drive_letter: None,
        backend: b"soft".to_vec(),
        counters: CounterSnapshot::default(),
        data_size: 4096,
        later_counters: false,
        memory,
    }
}

/// The memory block follows data_size; a reply without it (an older driver, or a caller
/// whose buffer holds only the first layout) still parses, with no memory figure.
#[test]
fn status_memory_block_follows_the_first_layout_and_stays_optional() {
    let mut reply = soft_reply(Some(VolumeMemory {
        direct_bounce: 44,
        legacy_fragments: 55,
        legacy_read_ahead: 66,
        legacy_unaligned: 77,
    }));
    let s = reply.build().unwrap();
    assert_eq!((s.len(), StatusReply::SIZE_V2), (232, 232));
    assert_eq!(&s[4..8], &232u32.to_le_bytes());
    assert_eq!(&s[200..208], &44u64.to_le_bytes());
    assert_eq!(&s[224..232], &77u64.to_le_bytes());
    assert_eq!(StatusReply::parse(&s).unwrap(), reply);
    reply.memory = None;
    let v1 = reply.build().unwrap();
    assert_eq!((v1.len(), StatusReply::SIZE_V1), (200, 200));
    assert_eq!(&v1[4..8], &200u32.to_le_bytes());
    assert_eq!(v1[..4], s[..4]);
    assert_eq!(v1[8..], s[8..200], "the first layout is unchanged");
    assert_eq!(StatusReply::parse(&v1).unwrap(), reply);
    // Any other length, or a size field that does not match the length, is refused.
    for len in [199, 201, 231, 233] {
        let mut b = s.clone();
        b.resize(len, 0);
        assert!(StatusReply::parse(&b).is_err(), "{len}");
    }
    let mut b = s.clone();
    b[4..8].copy_from_slice(&200u32.to_le_bytes());
    assert_eq!(
        StatusReply::parse(&b),
        Err(AbiError::SizeFieldMismatch(200))
    );
}

/// The later counters (requests issued without a waiter, and those the dispatching thread
/// issued) follow the memory block; a reply
/// without them (an older driver, or a caller whose buffer holds only an earlier layout)
/// still parses, with 0 for them.
#[test]
fn status_later_counters_follow_the_memory_block_and_stay_optional() {
    let mut reply = soft_reply(Some(VolumeMemory::default()));
    reply.counters.detached = 99;
    reply.counters.dispatch_issued = 77;
    reply.later_counters = true;
    let s = reply.build().unwrap();
    assert_eq!((s.len(), StatusReply::SIZE), (248, 248));
    assert_eq!(&s[4..8], &248u32.to_le_bytes());
    assert_eq!(&s[232..240], &99u64.to_le_bytes());
    assert_eq!(&s[240..248], &77u64.to_le_bytes());
    assert_eq!(StatusReply::parse(&s).unwrap(), reply);
    reply.later_counters = false;
    let v2 = reply.build().unwrap();
    assert_eq!(v2.len(), 232);
    assert_eq!(v2[8..], s[8..232], "the earlier layout is unchanged");
    let parsed = StatusReply::parse(&v2).unwrap();
    assert_eq!(
        (
            parsed.counters.detached,
            parsed.counters.dispatch_issued,
            parsed.later_counters
        ),
        (0, 0, false)
    );
    // The later block needs the memory block before it.
    reply.memory = None;
    reply.later_counters = true;
    assert!(reply.build().is_err());
    for len in [233, 240, 247, 249] {
        let mut b = s.clone();
        b.resize(len, 0);
        assert!(StatusReply::parse(&b).is_err(), "{len}");
    }
}

#[test]
fn errors_map_to_statuses() {
    assert_eq!(AbiError::Misaligned.status(), Status::InvalidParameter);
    assert_eq!(
        AbiError::WineHostNotAllowed.status(),
        Status::InvalidParameter
    );
    assert_eq!(
        AbiError::OutputTooSmall { needed: 16 }.status().ntstatus(),
        0xC000_0023
    );
    assert_eq!(
        AbiError::WrongSize {
            expected: 8,
            got: 0
        }
        .status()
        .ntstatus(),
        0xC000_0004
    );
}

#[test]
fn builders_refuse_what_parsers_would() {
    let mut m = mount();
    m.host_path = vec![u16::from(b'a'); HOST_PATH_CHARS];
    assert_eq!(m.build().map(|_| ()), Err(AbiError::TooLong));
    let mut m = mount();
    m.data_offset = 3;
    assert_eq!(m.build().map(|_| ()), Err(AbiError::Misaligned));
    let v = VolumeRequest {
        target: Target::Letter('1'),
        flags: 0,
    };
    assert_eq!(v.build(), Err(AbiError::BadDriveLetter(u16::from(b'1'))));
    let v = VolumeRequest {
        target: Target::Id(0),
        flags: 0,
    };
    assert_eq!(v.build(), Err(AbiError::BadTarget));
}

#[test]
fn small_messages_reject_malformed_buffers() {
    let mut v = VolumeRequest {
        target: Target::Id(3),
        flags: DISMOUNT_FORCE,
    }
    .build()
    .unwrap();
    v[12] = b'V';
    assert_eq!(VolumeRequest::parse(&v), Err(AbiError::BadTarget));
    let mut g = GatesMessage {
        read: true,
        write: false,
    }
    .build();
    g[8] = 2;
    assert_eq!(GatesMessage::parse(&g), Err(AbiError::BadGateValue(2)));
    assert_eq!(
        EmptyRequest::parse(&EmptyRequest::build()),
        Ok(EmptyRequest)
    );
    assert!(EmptyRequest::parse(&[0u8; 8]).is_err());
    let list = ListReply {
        entries: vec![ListEntry {
            volume_id: 1,
            flags: 0,
            drive_letter: Some('V'),
            letter_kind: LinkKind::MountManager,
        }],
        unload_disabled: false,
    };
    assert_eq!(list.build(16), Err(AbiError::OutputTooSmall { needed: 32 }));
    let mut l = list.build(ListReply::MAX_SIZE).unwrap();
    // W2: the letter kind sits where the first reserved bytes were.
    assert_eq!(&l[16 + 10..16 + 12], &[1, 0]);
    assert_eq!(ListReply::parse(&l).unwrap(), list);
    l[16 + 10] = 3;
    assert_eq!(ListReply::parse(&l), Err(AbiError::BadLinkKind(3)));
    l[16 + 10] = 0;
    l[16 + 12] = 1;
    assert_eq!(ListReply::parse(&l), Err(AbiError::ReservedNotZero));
    l[16 + 12] = 0;
    // W3: the driver flags word (was reserved) says "unload disabled"; other bits are refused.
    l[12] = 1;
    assert!(ListReply::parse(&l).unwrap().unload_disabled);
    l[12] = 2;
    assert_eq!(ListReply::parse(&l), Err(AbiError::ReservedNotZero));
    l[12] = 0;
    l[8] = 2;
    assert_eq!(ListReply::parse(&l), Err(AbiError::BadCount(2)));
    let mut s = StatusReply {
        volume_id: 1,
        flags: 0,
        gates: GatesMessage::default(),
        drive_letter: None,
        backend: b"aes-ni".to_vec(),
        counters: CounterSnapshot::default(),
        data_size: 512,
        memory: None,
        later_counters: false,
    }
    .build()
    .unwrap();
    s[24..40].fill(b'a');
    assert_eq!(StatusReply::parse(&s), Err(AbiError::Unterminated));
}

fn letter() -> impl Strategy<Value = Option<char>> {
    prop::option::of(prop::char::range('A', 'Z'))
}

proptest! {
    #[test]
    fn mount_round_trips(
        flags in 0u32..16,
        shift in 0u32..4,
        units in 1u64..1_000_000,
        start in 0u64..1_000_000,
        prot in (0u64..1000, 1u64..1000),
        key in any::<[u8; 32]>(),
        path in "[a-zA-Z0-9\\\\:?. ]{1,300}",
        letter in letter(),
    ) {
        let ss = 512u32 << shift;
        let flags = if flags & MOUNT_HIDDEN != 0 { flags & !MOUNT_PROTECT_HIDDEN } else { flags };
        let data_offset = start * u64::from(ss);
        let data_size = (units + 2000) * u64::from(ss);
        let protected_range = if flags & MOUNT_PROTECT_HIDDEN != 0 {
            (data_offset + prot.0 * u64::from(ss), prot.1 * u64::from(ss))
        } else {
            (0, 0)
        };
        let mut k = [0u8; KEY_LENGTH];
        k[..32].copy_from_slice(&key);
        k[32..].copy_from_slice(&key);
        let m = MountRequest {
            flags, sector_size: ss, data_offset, data_size, protected_range,
            drive_letter: letter, algorithm: crate::crypto::AES,
            key: MasterKey::try_new(&k).unwrap(), host_path: utf16(&path),
            wine_host_driver_name: Vec::new(),
        };
        let bytes = m.build().unwrap();
        prop_assert!(MountRequest::parse(&bytes, false).unwrap() == m);
    }

    #[test]
    fn status_and_list_round_trip(
        id in 1u32.., flags in any::<u32>(), r in any::<bool>(), w in any::<bool>(),
        letter in letter(), c in any::<[u64; 21]>(), size in any::<u64>(),
        n in 0usize..=MAX_LIST_ENTRIES, mem in prop::option::of(any::<[u64; 4]>()),
        kind in 0u16..3, later in any::<bool>(),
    ) {
        let s = StatusReply {
            volume_id: id, flags, gates: GatesMessage { read: r, write: w }, drive_letter: letter,
            backend: b"armv8-aes".to_vec(),
            counters: CounterSnapshot {
                direct_reads: c[0], direct_writes: c[1], direct_bytes: c[2],
                direct_segments: c[3], direct_flushes: c[4], legacy_reads: c[5],
                legacy_writes: c[6], legacy_bytes: c[7], legacy_fragments: c[8],
                immediate_flushes: c[9], slot_waits: c[10], direct_in_flight_max: c[11],
                range_waits: c[12], rejected: c[13], failed: c[14],
                // Only a reply with the later block carries it; the others read 0.
                detached: if later && mem.is_some() { c[19] } else { 0 },
                dispatch_issued: if later && mem.is_some() { c[20] } else { 0 },
                legacy_by_reason: [c[15], c[16], c[17], c[18]],
            },
            later_counters: later && mem.is_some(),
            data_size: size,
            memory: mem.map(|m| VolumeMemory {
                direct_bounce: m[0], legacy_fragments: m[1], legacy_read_ahead: m[2],
                legacy_unaligned: m[3],
            }),
        };
        prop_assert_eq!(StatusReply::parse(&s.build().unwrap()).unwrap(), s);
        let l = ListReply {
            entries: (0..n).map(|i| ListEntry {
                volume_id: i as u32 + 1, flags, drive_letter: letter,
                letter_kind: LinkKind::from_raw(kind).unwrap(),
            }).collect(),
            unload_disabled: w,
        };
        prop_assert_eq!(ListReply::parse(&l.build(ListReply::MAX_SIZE).unwrap()).unwrap(), l);
        let g = GatesMessage { read: r, write: w };
        prop_assert_eq!(GatesMessage::parse(&g.build()).unwrap(), g);
        let v = VolumeRequest { target: Target::Id(id), flags: u32::from(w) };
        prop_assert_eq!(VolumeRequest::parse(&v.build().unwrap()).unwrap(), v);
        let mr = MountReply { volume_id: id, drive_letter: letter };
        prop_assert_eq!(MountReply::parse(&mr.build()).unwrap(), mr);
    }

    #[test]
    fn parsers_never_panic_on_arbitrary_bytes(buf in prop::collection::vec(any::<u8>(), 0..1400)) {
        let _ = MountRequest::parse(&buf, true);
        let _ = VolumeRequest::parse(&buf);
        let _ = StatusReply::parse(&buf);
        let _ = ListReply::parse(&buf);
        let _ = GatesMessage::parse(&buf);
        let _ = EraseReply::parse(&buf);
        let _ = MountReply::parse(&buf);
    }
}

/// W6: the ABI's allocations (a parsed request's strings, a built list or status reply) are
/// fallible: each failing in turn is `AbiError::NoMemory`, which the driver completes with
/// STATUS_INSUFFICIENT_RESOURCES; the fixed-size messages allocate nothing.
#[cfg(feature = "fault-switches")]
#[test]
fn w6_a_failed_allocation_in_a_parse_or_a_reply_is_insufficient_resources() {
    use crate::faults::{allocations_seen, fail_allocation_at};
    assert_eq!(AbiError::NoMemory.status(), Status::InsufficientResources);
    let bytes = mount().build().unwrap();
    let status = soft_reply(None);
    let list = ListReply {
        entries: vec![ListEntry {
            volume_id: 3,
            flags: 0,
            drive_letter: Some('V'),
            letter_kind: LinkKind::GlobalLink,
        }],
        unload_disabled: false,
    };
    type Call<'a> = &'a dyn Fn() -> Result<(), AbiError>;
    // (what, how many fallible allocations it makes, the call)
    let cases: [(&str, u64, Call<'_>); 3] = [
        (
            "mount request parse (the key's block, two strings)",
            3,
            &|| MountRequest::parse(&bytes, false).map(|_| ()),
        ),
        ("status reply", 1, &|| status.build().map(|_| ())),
        ("list reply", 1, &|| {
            list.build(ListReply::MAX_SIZE).map(|_| ())
        }),
    ];
    for (what, sites, call) in cases {
        fail_allocation_at(0);
        assert_eq!(call(), Ok(()), "{what}");
        assert_eq!(allocations_seen(), sites, "{what}: fallible allocations");
        for n in 1..=sites {
            fail_allocation_at(n);
            assert_eq!(call(), Err(AbiError::NoMemory), "{what}: site {n}");
        }
    }
    fail_allocation_at(0);
    let _ = (
        MountReply {
            volume_id: 1,
            drive_letter: None,
        }
        .build(),
        GatesMessage::default().build(),
        EraseReply { volumes: 1 }.build(),
        EmptyRequest::build(),
    );
    assert_eq!(
        allocations_seen(),
        0,
        "the fixed-size messages allocate nothing"
    );
}

/// The extended layout: a cascade's request carries its algorithm and its whole key area, and
/// round-trips; an AES request stays the first layout, byte for byte what an older vcctl sent
/// (so an older driver mounts it), and the first layout still parses as AES.
#[test]
fn mount_request_extended_layout_carries_algorithm_and_key_area() {
    use crate::crypto::{AES, ALGORITHMS};
    for algorithm in ALGORITHMS {
        let key: Vec<u8> = (0..algorithm.key_len()).map(|i| i as u8 ^ 0x5a).collect();
        let mut m = mount();
        m.algorithm = algorithm;
        m.key = MasterKey::try_new(&key).unwrap();
        let bytes = m.build().unwrap();
        let parsed = MountRequest::parse(&bytes, false).unwrap();
        assert!(parsed == m, "{}", algorithm.name());
        assert_eq!(parsed.algorithm, algorithm);
        assert_eq!(&parsed.key[..], &key[..]);
        assert_eq!(&bytes[56..120], &key[..64]);
        if algorithm == AES {
            assert_eq!(
                bytes.len(),
                MountRequest::SIZE,
                "AES keeps the first layout"
            );
            assert_eq!(&bytes[50..52], &64u16.to_le_bytes());
        } else {
            assert_eq!(bytes.len(), MountRequest::SIZE_EXTENDED);
            assert_eq!(&bytes[1272..1276], &algorithm.id().to_le_bytes());
            assert_eq!(&bytes[1280..1280 + key.len() - 64], &key[64..]);
            assert!(bytes[1280 + key.len() - 64..].iter().all(|b| *b == 0));
        }
    }
    // AES in the extended layout is refused: one layout per request, so what parses
    // rebuilds to the same bytes (the fuzz target's round trip).
    let mut ext = mount().build().unwrap().to_vec();
    ext.resize(MountRequest::SIZE_EXTENDED, 0);
    put32(&mut ext, 4, MountRequest::SIZE_EXTENDED as u32);
    put32(&mut ext, 1272, 1);
    assert_eq!(
        MountRequest::parse(&ext, false).err(),
        Some(AbiError::AesInExtendedLayout)
    );
}

fn extended(edit: impl Fn(&mut Vec<u8>)) -> Vec<u8> {
    let mut m = mount();
    m.algorithm = crate::crypto::ALGORITHMS[6];
    m.key = MasterKey::try_new(&[0x42; 192]).unwrap();
    let mut b = m.build().unwrap().to_vec();
    edit(&mut b);
    b
}

#[test]
fn malformed_extended_mount_requests_get_precise_errors() {
    let size = MountRequest::SIZE_EXTENDED;
    let table: Vec<(&str, Vec<u8>, AbiError)> = vec![
        (
            "algorithm 0",
            extended(|b| put32(b, 1272, 0)),
            AbiError::UnknownAlgorithm(0),
        ),
        (
            "algorithm 16",
            extended(|b| put32(b, 1272, 16)),
            AbiError::UnknownAlgorithm(16),
        ),
        (
            "key length of AES for a three-cipher cascade",
            extended(|b| b[50..52].copy_from_slice(&64u16.to_le_bytes())),
            AbiError::BadKeyLength(64),
        ),
        (
            "key length of a two-cipher cascade",
            extended(|b| put32(b, 1272, 6)),
            AbiError::BadKeyLength(192),
        ),
        (
            "key length 256",
            extended(|b| b[50..52].copy_from_slice(&256u16.to_le_bytes())),
            AbiError::BadKeyLength(256),
        ),
        (
            "reserved after the algorithm",
            extended(|b| b[1276] = 1),
            AbiError::ReservedNotZero,
        ),
        (
            "reserved at 52",
            extended(|b| b[53] = 1),
            AbiError::ReservedNotZero,
        ),
        (
            "key bytes past a two-cipher key",
            extended(|b| {
                put32(b, 1272, 6);
                b[50..52].copy_from_slice(&128u16.to_le_bytes());
            }),
            AbiError::KeyPaddingNotZero,
        ),
        (
            "size field of the first layout",
            extended(|b| put32(b, 4, MountRequest::SIZE as u32)),
            AbiError::SizeFieldMismatch(MountRequest::SIZE as u32),
        ),
        (
            "one byte short of extended",
            extended(|b| b.truncate(size - 1)),
            AbiError::WrongSize {
                expected: MountRequest::SIZE,
                got: size - 1,
            },
        ),
    ];
    for (name, buf, want) in table {
        assert_eq!(MountRequest::parse(&buf, false).err(), Some(want), "{name}");
        assert_ne!(want.status(), Status::Success, "{name}");
    }
    // A build whose key is not the algorithm's length is refused before anything is sent.
    let mut m = mount();
    m.algorithm = crate::crypto::ALGORITHMS[6];
    assert_eq!(m.build().err(), Some(AbiError::BadKeyLength(64)));
}
