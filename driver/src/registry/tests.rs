use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;
use core::cell::RefCell;

use proptest::prelude::*;

use super::reg_type::{REG_BINARY, REG_DWORD, REG_DWORD_BIG_ENDIAN, REG_QWORD, REG_SZ};
use super::*;

const README: &str = include_str!("README.md");

/// A source that records every name asked for.
struct Recording<'a> {
    inner: &'a ValueMap,
    asked: RefCell<Vec<String>>,
}

impl RegistrySource for Recording<'_> {
    fn query(&self, name: &str) -> Option<RawValue<'_>> {
        self.asked.borrow_mut().push(name.to_string());
        self.inner.query(name)
    }
}

/// A label, a value (type and data, `None` when missing), and the state it must parse to.
type GateRow = (&'static str, Option<(u32, Vec<u8>)>, GateState);

/// The gate encodings of the issue's table.
fn gate_table() -> Vec<GateRow> {
    use GateState::{Off, On};
    use OffReason::{Missing, Value, WrongLength, WrongType};
    vec![
        ("missing", None, Off(Missing)),
        (
            "REG_SZ \"1\"",
            Some((REG_SZ, vec![b'1', 0, 0, 0])),
            Off(WrongType(REG_SZ)),
        ),
        (
            "REG_BINARY 2 bytes",
            Some((REG_BINARY, vec![1, 0])),
            Off(WrongType(REG_BINARY)),
        ),
        (
            "REG_BINARY 01000000",
            Some((REG_BINARY, vec![1, 0, 0, 0])),
            Off(WrongType(REG_BINARY)),
        ),
        (
            "REG_DWORD_BIG_ENDIAN 1",
            Some((REG_DWORD_BIG_ENDIAN, vec![0, 0, 0, 1])),
            Off(WrongType(REG_DWORD_BIG_ENDIAN)),
        ),
        (
            "REG_QWORD 1",
            Some((REG_QWORD, vec![1, 0, 0, 0, 0, 0, 0, 0])),
            Off(WrongType(REG_QWORD)),
        ),
        (
            "REG_DWORD 0 bytes",
            Some((REG_DWORD, vec![])),
            Off(WrongLength(0)),
        ),
        (
            "REG_DWORD 1 byte",
            Some((REG_DWORD, vec![1])),
            Off(WrongLength(1)),
        ),
        (
            "REG_DWORD 3 bytes",
            Some((REG_DWORD, vec![1, 0, 0])),
            Off(WrongLength(3)),
        ),
        (
            "REG_DWORD 5 bytes",
            Some((REG_DWORD, vec![1, 0, 0, 0, 0])),
            Off(WrongLength(5)),
        ),
        (
            "REG_DWORD 8 bytes",
            Some((REG_DWORD, vec![1, 0, 0, 0, 0, 0, 0, 0])),
            Off(WrongLength(8)),
        ),
        (
            "REG_DWORD 0",
            Some((REG_DWORD, 0u32.to_le_bytes().to_vec())),
            Off(Value(0)),
        ),
        (
            "REG_DWORD 2",
            Some((REG_DWORD, 2u32.to_le_bytes().to_vec())),
            Off(Value(2)),
        ),
        (
            "REG_DWORD 0x100 (1 in the wrong byte)",
            Some((REG_DWORD, vec![0, 1, 0, 0])),
            Off(Value(0x100)),
        ),
        (
            "REG_DWORD 0xFFFFFFFF",
            Some((REG_DWORD, u32::MAX.to_le_bytes().to_vec())),
            Off(Value(u32::MAX)),
        ),
        (
            "REG_DWORD 1",
            Some((REG_DWORD, 1u32.to_le_bytes().to_vec())),
            On,
        ),
    ]
}

fn map_with(name: &str, value: &Option<(u32, Vec<u8>)>) -> ValueMap {
    let mut map = ValueMap::new();
    if let Some((t, data)) = value {
        map.set(name, *t, data);
    }
    map
}

#[test]
fn gate_parser_table_on_only_for_reg_dword_1() {
    for (label, value, expected) in gate_table() {
        let raw = value.as_ref().map(|(t, d)| RawValue::new(*t, d));
        assert_eq!(parse_gate(raw), expected, "{label}");
    }
}

#[test]
fn both_gates_parse_every_table_row_identically() {
    for (label, value, expected) in gate_table() {
        for gate in Gate::ALL {
            let map = map_with(gate.value_name(), &value);
            let reading = GateReading::load(&map);
            assert_eq!(reading.state(gate), expected, "{label} {gate:?}");
            assert_eq!(reading.gates().get(gate), expected.is_on(), "{label}");
            // The other gate is simply missing.
            let other = if gate == Gate::Read {
                Gate::Write
            } else {
                Gate::Read
            };
            assert_eq!(
                reading.state(other),
                GateState::Off(OffReason::Missing),
                "{label}"
            );
        }
    }
}

#[test]
fn reasons_describe_themselves_in_one_line() {
    let cases = [
        (OffReason::Missing, "value not set"),
        (
            OffReason::WrongType(REG_SZ),
            "type is REG_SZ (1), need REG_DWORD (4)",
        ),
        (
            OffReason::WrongType(77),
            "type is type 77, need REG_DWORD (4)",
        ),
        (
            OffReason::WrongLength(3),
            "REG_DWORD holds 3 bytes, need exactly 4",
        ),
        (OffReason::Value(2), "value is 2 (0x2), only 1 turns it on"),
    ];
    for (reason, text) in cases {
        assert_eq!(reason.to_string(), text);
    }
    for (label, value, _) in gate_table() {
        let map = map_with(WRITE_GATE_VALUE, &value);
        let (_, _, notes) = Config::load(&map);
        for note in notes {
            let line = note.to_string();
            assert!(!line.contains('\n'), "{label}: {line}");
            assert!(line.starts_with("vcdirect: "), "{label}: {line}");
        }
    }
}

// ---- R5: one set of names ----

#[test]
fn r5_gate_names_are_the_documented_ones() {
    assert_eq!(READ_GATE_VALUE, "VeraCryptEnableMountedVolumeFastReadIo");
    assert_eq!(WRITE_GATE_VALUE, "VeraCryptEnableMountedVolumeFastWriteIo");
    assert_eq!(Gate::Read.value_name(), READ_GATE_VALUE);
    assert_eq!(Gate::Write.value_name(), WRITE_GATE_VALUE);
    assert_eq!(
        SERVICE_KEY,
        r"HKLM\SYSTEM\CurrentControlSet\Services\vcdirect"
    );
    assert_eq!(
        SERVICE_KEY_NT,
        r"\Registry\Machine\SYSTEM\CurrentControlSet\Services\vcdirect"
    );
    assert_eq!(
        ENABLE_READ_GATE_COMMAND,
        r"reg add HKLM\SYSTEM\CurrentControlSet\Services\vcdirect /v VeraCryptEnableMountedVolumeFastReadIo /t REG_DWORD /d 1"
    );
    assert_eq!(
        ENABLE_WRITE_GATE_COMMAND,
        format!(
            "{} /v {WRITE_GATE_VALUE} /t REG_DWORD /d 1",
            "reg add ".to_string() + SERVICE_KEY
        )
    );
}

#[test]
fn r5_parser_asks_for_exactly_the_named_values() {
    let map = ValueMap::new();
    let source = Recording {
        inner: &map,
        asked: RefCell::new(Vec::new()),
    };
    let _ = Config::load(&source);
    let mut asked = source.asked.into_inner();
    asked.sort();
    let mut expected: Vec<String> = ALL_VALUE_NAMES.iter().map(|s| s.to_string()).collect();
    expected.sort();
    assert_eq!(asked, expected);

    let source = Recording {
        inner: &map,
        asked: RefCell::new(Vec::new()),
    };
    let _ = DRIVER_GATES_FOR_TEST.reload(&source);
    assert_eq!(
        source.asked.into_inner(),
        vec![READ_GATE_VALUE.to_string(), WRITE_GATE_VALUE.to_string()]
    );
}

static DRIVER_GATES_FOR_TEST: GateStore = GateStore::new();

#[test]
fn r5_near_miss_names_do_not_turn_gates_on() {
    // Names a user might plausibly type instead (the description of the review's bug).
    for wrong in [
        "VeraCryptEnableFastReadIo",
        "VeraCryptEnableMountedVolumeFastRead",
        "VeraCryptEnableMountedVolumeFastReadIO ",
        "VcDirectFastReadIo",
    ] {
        let mut map = ValueMap::new();
        map.set_dword(wrong, 1);
        assert_eq!(Config::load(&map).0, Gates::OFF, "{wrong}");
    }
    // Registry names are case-insensitive, as Windows compares them.
    let mut map = ValueMap::new();
    map.set_dword(&READ_GATE_VALUE.to_ascii_lowercase(), 1);
    assert!(Config::load(&map).0.read);
}

#[test]
fn r5_readme_uses_the_names_from_code() {
    assert!(README.contains(ENABLE_READ_GATE_COMMAND));
    assert!(README.contains(ENABLE_WRITE_GATE_COMMAND));
    assert!(README.contains(SERVICE_KEY));
    for name in ALL_VALUE_NAMES {
        assert!(README.contains(name), "README lacks {name}");
    }
    // Every gate-looking or tunable-looking word in the README is one of ours.
    for word in README.split(|c: char| !c.is_ascii_alphanumeric()) {
        if word.starts_with("VeraCrypt") && word.len() > "VeraCrypt".len() {
            assert!(
                ALL_VALUE_NAMES.contains(&word),
                "README names {word}, which the driver never reads"
            );
        }
    }
    assert!(README.contains("vcctl gates reload"));
    assert!(README.contains("vcctl status V:"));
}

// ---- R6: mount-time snapshot, identical for both gates ----

fn both(read: u32, write: u32) -> ValueMap {
    let mut map = ValueMap::new();
    map.set_dword(READ_GATE_VALUE, read)
        .set_dword(WRITE_GATE_VALUE, write);
    map
}

#[test]
fn r6_snapshot_before_reload_keeps_both_gates() {
    let store = GateStore::new();
    assert_eq!(store.snapshot(), Gates::OFF);
    store.reload(&both(1, 1));
    let mounted = store.snapshot();
    assert_eq!(
        mounted,
        Gates {
            read: true,
            write: true
        }
    );

    let reload = store.reload(&both(0, 0));
    assert_eq!(reload.gates, Gates::OFF);
    // The volume's copy is untouched, for both gates alike.
    assert!(mounted.read && mounted.write);
    // A volume mounted now sees the new values.
    assert_eq!(store.snapshot(), Gates::OFF);
}

#[test]
fn r6_reload_changes_new_snapshots_and_counts_generations() {
    let store = GateStore::new();
    let (_, g0) = store.snapshot_with_generation();
    assert_eq!(g0, 0);
    let steps = [(0, 1), (1, 0), (1, 1), (0, 0), (2, 1)];
    for (i, (r, w)) in steps.into_iter().enumerate() {
        let reload = store.reload(&both(r, w));
        let (snap, generation) = store.snapshot_with_generation();
        assert_eq!(snap, reload.gates);
        assert_eq!(snap.read, r == 1);
        assert_eq!(snap.write, w == 1);
        assert_eq!(generation, i as u32 + 1);
        assert_eq!(reload.generation, generation);
    }
}

#[test]
fn r6_read_and_write_gates_behave_identically() {
    // Run the same story once per gate; the observable outcome must be the same story.
    let story = |gate: Gate| -> Vec<bool> {
        let store = GateStore::new();
        let mut seen = Vec::new();
        let mut map = ValueMap::new();
        map.set_dword(gate.value_name(), 1);
        store.reload(&map);
        let volume_a = store.snapshot();
        map.set_dword(gate.value_name(), 0);
        store.reload(&map);
        let volume_b = store.snapshot();
        map.set(gate.value_name(), REG_DWORD, &[1, 0, 0]);
        store.reload(&map);
        let volume_c = store.snapshot();
        map.set_dword(gate.value_name(), 1);
        let reload = store.reload(&map);
        let volume_d = store.snapshot();
        for v in [volume_a, volume_b, volume_c, volume_d] {
            seen.push(v.get(gate));
        }
        seen.push(reload.reading.state(gate).is_on());
        seen
    };
    assert_eq!(story(Gate::Read), story(Gate::Write));
    assert_eq!(story(Gate::Read), vec![true, false, false, true, true]);
}

#[test]
fn r6_concurrent_reloads_never_tear_a_snapshot() {
    // Writers alternate between (on, on) and (off, off): a snapshot must be one of the two.
    let store = std::sync::Arc::new(GateStore::new());
    let writers: Vec<_> = (0..2)
        .map(|k| {
            let store = store.clone();
            std::thread::spawn(move || {
                let on = both(1, 1);
                let off = both(0, 0);
                for i in 0..2000u32 {
                    store.reload(if (i + k).is_multiple_of(2) { &on } else { &off });
                }
            })
        })
        .collect();
    let mut last_generation = 0;
    for _ in 0..20000 {
        let (g, generation) = store.snapshot_with_generation();
        assert_eq!(g.read, g.write, "torn snapshot {g:?}");
        assert!(generation >= last_generation);
        last_generation = generation;
    }
    for w in writers {
        w.join().unwrap();
    }
    assert_eq!(store.snapshot_with_generation().1, 4000);
}

// ---- R7: direct write configured only when writes can take the direct path ----

#[test]
fn r7_direct_write_configured_table() {
    let on = Gates {
        read: true,
        write: true,
    };
    let read_only_gates = Gates {
        read: true,
        write: false,
    };
    // (label, gates, writable, hidden, protect_hidden, raw_host, expected)
    let table = [
        ("raw writable outer", on, true, false, false, true, true),
        ("hidden volume", on, true, true, false, true, false),
        ("outer with protection", on, true, false, true, true, false),
        ("hidden and protection", on, true, true, true, true, false),
        ("read-only mount", on, false, false, false, true, false),
        ("file container", on, true, false, false, false, false),
        (
            "write gate off",
            read_only_gates,
            true,
            false,
            false,
            true,
            false,
        ),
        ("all gates off", Gates::OFF, true, false, false, true, false),
    ];
    for (label, gates, writable, hidden, protect, raw, expected) in table {
        assert_eq!(
            direct_write_configured(gates, writable, hidden, protect, raw),
            expected,
            "{label}"
        );
    }
}

#[test]
fn r7_direct_read_needs_read_gate_and_raw_host() {
    let on = Gates {
        read: true,
        write: false,
    };
    assert!(direct_read_configured(on, true));
    assert!(!direct_read_configured(on, false));
    assert!(!direct_read_configured(Gates::OFF, true));
}

#[test]
fn r7_exhaustive_write_rule() {
    for bits in 0u32..64 {
        let b = |i: u32| bits & (1 << i) != 0;
        let gates = Gates {
            read: b(0),
            write: b(1),
        };
        let got = direct_write_configured(gates, b(2), b(3), b(4), b(5));
        let any_exclusion = !b(1) || !b(2) || b(3) || b(4) || !b(5);
        assert_eq!(got, !any_exclusion, "bits {bits:06b}");
    }
}

// ---- R8: malformed DWORDs leave the gate off with the right reason ----

#[test]
fn r8_short_long_and_wrong_type_leave_gate_off_with_reason() {
    for gate in Gate::ALL {
        let cases: [(u32, &[u8], OffReason); 6] = [
            (REG_DWORD, &[1, 0, 0], OffReason::WrongLength(3)),
            (REG_DWORD, &[1], OffReason::WrongLength(1)),
            (REG_DWORD, &[1, 0, 0, 0, 0], OffReason::WrongLength(5)),
            (
                REG_DWORD,
                &[1, 0, 0, 0, 0, 0, 0, 0],
                OffReason::WrongLength(8),
            ),
            (
                REG_QWORD,
                &[1, 0, 0, 0, 0, 0, 0, 0],
                OffReason::WrongType(REG_QWORD),
            ),
            (REG_SZ, &[b'1', 0], OffReason::WrongType(REG_SZ)),
        ];
        for (t, data, reason) in cases {
            let mut map = ValueMap::new();
            map.set(gate.value_name(), t, data);
            let (gates, _, notes) = Config::load(&map);
            assert!(!gates.get(gate), "{gate:?} {t} {data:?}");
            assert!(
                notes.contains(&Note::GateOff { gate, reason }),
                "{gate:?} {t} {data:?}: {notes:?}"
            );
            // Exactly one note for this gate: it is logged once per load.
            let for_gate = notes
                .iter()
                .filter(|n| matches!(n, Note::GateOff { gate: g, .. } if *g == gate))
                .count();
            assert_eq!(for_gate, 1);
        }
    }
}

#[test]
fn r8_reload_reports_reason_for_each_off_gate() {
    let store = GateStore::new();
    let mut map = ValueMap::new();
    map.set(READ_GATE_VALUE, REG_DWORD, &[1, 0, 0])
        .set_dword(WRITE_GATE_VALUE, 1);
    let reload = store.reload(&map);
    assert_eq!(
        reload.reading.read,
        GateState::Off(OffReason::WrongLength(3))
    );
    assert_eq!(reload.reading.write, GateState::On);
    let notes: Vec<String> = reload.reading.notes().map(|n| n.to_string()).collect();
    assert_eq!(
        notes,
        vec![
            "vcdirect: VeraCryptEnableMountedVolumeFastReadIo is off: REG_DWORD holds 3 bytes, need exactly 4"
                .to_string()
        ]
    );
}

// ---- Tunables ----

#[test]
fn tunable_defaults_match_veracrypt_with_an_empty_registry() {
    let (tunables, notes) = Tunables::load(&ValueMap::new());
    assert_eq!(tunables, Tunables::default());
    assert_eq!(tunables, Tunables::clamp(RawTunables::default()));
    assert_eq!(tunables.fragment_size, 256 * 1024);
    assert_eq!(tunables.io_request_count, 16);
    assert_eq!(tunables.item_count, 8);
    assert_eq!(tunables.free_cpu_count, 0);
    assert_eq!(tunables.max_work_items, 1024);
    assert!(notes.is_empty(), "{notes:?}");
}

#[test]
fn io_request_count_clamp_table() {
    let table = [
        (0, 16),
        (1, 16),
        (15, 16),
        (16, 16),
        (17, 17),
        (128, 128),
        (8192, 8192),
        (8193, 8192),
        (0x7FFF_FFFF, 8192),
        // VeraCrypt holds the value in a C int: these are negative there, so below 16.
        (0x8000_0000, 16),
        (u32::MAX, 16),
    ];
    for (raw, used) in table {
        assert_eq!(clamp_io_request_count(raw), used, "{raw:#x}");
    }
}

#[test]
fn item_count_clamp_table() {
    // (raw items, clamped requests, used)
    let table = [
        (0, 16, 8),
        (1, 16, 1),
        (7, 16, 7),
        (8, 16, 8),
        (9, 16, 8),
        (64, 128, 64),
        (65, 128, 64),
        (0, 8192, 4096),
        (4096, 8192, 4096),
        (4097, 8192, 4096),
        (u32::MAX, 16, 8),
        (0x8000_0000, 8192, 4096),
    ];
    for (raw, requests, used) in table {
        assert_eq!(clamp_item_count(raw, requests), used, "{raw} of {requests}");
    }
}

#[test]
fn fragment_size_clamp_table() {
    let table = [
        (0, 256 * 1024),
        (1, 1024),
        (64, 64 * 1024),
        (256, 256 * 1024),
        (512, 512 * 1024),
        (2048, 2048 * 1024),
        (2049, 2048 * 1024),
        (4 * 1024 * 1024, 2048 * 1024),
        (u32::MAX, 2048 * 1024),
    ];
    for (kib, bytes) in table {
        assert_eq!(clamp_fragment_size(kib), bytes, "{kib} KiB");
    }
}

#[test]
fn max_work_items_and_free_cpu_table() {
    for (raw, used) in [
        (0, 1024),
        (1, 1),
        (1024, 1024),
        (5000, 5000),
        (8192, 8192),
        (8193, 8192),
        (u32::MAX, 8192),
    ] {
        assert_eq!(clamp_max_work_items(raw), used, "{raw}");
    }
    for free in [0, 1, 3, u32::MAX] {
        let t = Tunables::clamp(RawTunables {
            free_cpu_count: free,
            ..RawTunables::default()
        });
        assert_eq!(t.free_cpu_count, free);
    }
}

#[test]
fn tunables_load_applies_clamps_in_order_and_notes_them() {
    let mut map = ValueMap::new();
    map.set_dword(FRAGMENT_SIZE_VALUE, 4096)
        .set_dword(IO_REQUEST_COUNT_VALUE, 100_000)
        .set_dword(ITEM_COUNT_VALUE, 5000)
        .set_dword(FREE_CPU_COUNT_VALUE, 2)
        .set_dword(MAX_WORK_ITEMS_VALUE, 0);
    let (t, notes) = Tunables::load(&map);
    assert_eq!(
        t,
        Tunables {
            fragment_size: 2048 * 1024,
            io_request_count: 8192,
            item_count: 4096,
            free_cpu_count: 2,
            max_work_items: 1024,
        }
    );
    assert_eq!(
        notes,
        vec![
            Note::TunableClamped {
                tunable: Tunable::FragmentSize,
                set: 4096,
                used: 2048
            },
            Note::TunableClamped {
                tunable: Tunable::IoRequestCount,
                set: 100_000,
                used: 8192
            },
            Note::TunableClamped {
                tunable: Tunable::ItemCount,
                set: 5000,
                used: 4096
            },
            Note::TunableClamped {
                tunable: Tunable::MaxWorkItems,
                set: 0,
                used: 1024
            },
        ]
    );
    assert_eq!(
        notes[0].to_string(),
        "vcdirect: VeraCryptEncryptionFragmentSize is 4096, clamped to 2048"
    );
}

#[test]
fn veracrypt_recommended_ssd_values_are_kept() {
    // The values VeraCrypt's release notes suggest for NVMe: 512 KiB, 128 requests, 64 items.
    let mut map = ValueMap::new();
    map.set_dword(FRAGMENT_SIZE_VALUE, 512)
        .set_dword(IO_REQUEST_COUNT_VALUE, 128)
        .set_dword(ITEM_COUNT_VALUE, 64);
    let (t, notes) = Tunables::load(&map);
    assert_eq!(t.fragment_size, 512 * 1024);
    assert_eq!(t.io_request_count, 128);
    assert_eq!(t.item_count, 64);
    assert!(notes.is_empty(), "{notes:?}");
}

#[test]
fn malformed_tunables_are_ignored_with_a_reason() {
    for tunable in Tunable::ALL {
        let cases: [(u32, &[u8], Malformed); 4] = [
            (REG_DWORD, &[0, 2, 0], Malformed::WrongLength(3)),
            (REG_DWORD, &[0, 2, 0, 0, 0], Malformed::WrongLength(5)),
            (
                REG_QWORD,
                &[0, 2, 0, 0, 0, 0, 0, 0],
                Malformed::WrongType(REG_QWORD),
            ),
            (
                REG_SZ,
                &[b'5', 0, b'1', 0, b'2', 0, 0, 0],
                Malformed::WrongType(REG_SZ),
            ),
        ];
        for (t, data, reason) in cases {
            let mut map = ValueMap::new();
            map.set(tunable.value_name(), t, data);
            let (tunables, notes) = Tunables::load(&map);
            assert_eq!(tunables, Tunables::default(), "{tunable:?} {data:?}");
            assert_eq!(
                notes,
                vec![Note::TunableIgnored {
                    tunable,
                    reason,
                    used: Tunables::default().registry_units(tunable),
                }],
                "{tunable:?}"
            );
        }
    }
}

#[test]
fn item_count_is_clamped_against_the_clamped_request_count() {
    // A malformed request count is ignored (16), so 8 items is the ceiling.
    let mut map = ValueMap::new();
    map.set(IO_REQUEST_COUNT_VALUE, REG_DWORD, &[0, 1])
        .set_dword(ITEM_COUNT_VALUE, 100);
    let (t, _) = Tunables::load(&map);
    assert_eq!((t.io_request_count, t.item_count), (16, 8));
}

// ---- Properties ----

fn any_type() -> impl Strategy<Value = u32> {
    prop_oneof![0u32..=12, Just(REG_DWORD), any::<u32>()]
}

proptest! {
    #[test]
    fn gate_parser_never_panics_and_is_on_only_for_exact_encoding(
        t in any_type(),
        data in proptest::collection::vec(any::<u8>(), 0..16),
    ) {
        let state = parse_gate(Some(RawValue::new(t, &data)));
        let exact = t == REG_DWORD && data == [1, 0, 0, 0];
        prop_assert_eq!(state.is_on(), exact);
        if let GateState::Off(reason) = state {
            let expected = if t != REG_DWORD {
                OffReason::WrongType(t)
            } else if data.len() != 4 {
                OffReason::WrongLength(data.len())
            } else {
                OffReason::Value(u32::from_le_bytes([data[0], data[1], data[2], data[3]]))
            };
            prop_assert_eq!(reason, expected);
            prop_assert!(!reason.to_string().is_empty());
        }
    }

    #[test]
    fn any_dword_other_than_one_is_off(v in any::<u32>()) {
        let state = parse_gate(Some(RawValue::new(REG_DWORD, &v.to_le_bytes())));
        prop_assert_eq!(state.is_on(), v == 1);
    }

    #[test]
    fn clamped_tunables_are_always_usable(
        frag in any::<u32>(), req in any::<u32>(), items in any::<u32>(),
        free in any::<u32>(), work in any::<u32>(),
    ) {
        let t = Tunables::clamp(RawTunables {
            fragment_kib: frag,
            io_request_count: req,
            item_count: items,
            free_cpu_count: free,
            max_work_items: work,
        });
        prop_assert!((MIN_IO_REQUEST_COUNT..=MAX_IO_REQUEST_COUNT).contains(&t.io_request_count));
        prop_assert!(t.item_count >= 1 && t.item_count <= t.io_request_count / 2);
        prop_assert!(t.fragment_size >= 1024 && t.fragment_size <= MAX_FRAGMENT_KIB * 1024);
        prop_assert!(t.fragment_size.is_multiple_of(1024));
        prop_assert!(t.max_work_items >= 1 && t.max_work_items <= MAX_MAX_WORK_ITEMS);
        prop_assert_eq!(t.free_cpu_count, free);
        // In range values pass through untouched.
        if (16..=8192).contains(&req) {
            prop_assert_eq!(t.io_request_count, req);
        }
        if (1..=2048).contains(&frag) {
            prop_assert_eq!(t.fragment_size, frag * 1024);
        }
    }

    #[test]
    fn config_load_never_panics_on_arbitrary_values(
        values in proptest::collection::vec(
            (any_type(), proptest::collection::vec(any::<u8>(), 0..12)),
            ALL_VALUE_NAMES.len(),
        ),
    ) {
        let mut map = ValueMap::new();
        for (name, (t, data)) in ALL_VALUE_NAMES.iter().zip(&values) {
            map.set(name, *t, data);
        }
        let (gates, tunables, notes) = Config::load(&map);
        let exact = |(t, d): &(u32, Vec<u8>)| *t == REG_DWORD && d.as_slice() == [1, 0, 0, 0];
        prop_assert_eq!(gates.read, exact(&values[0]));
        prop_assert_eq!(gates.write, exact(&values[1]));
        prop_assert!(tunables.item_count <= tunables.io_request_count / 2);
        for note in notes {
            prop_assert!(!note.to_string().contains('\n'));
        }
    }
}

/// A registry read that failed for want of memory is that error (GATES_RELOAD fails with it,
/// the gates as they were; DriverEntry fails with it); not found and the like are "missing".
#[test]
fn w6_a_registry_read_out_of_memory_is_an_error_not_a_missing_value() {
    assert_eq!(
        read_failure(0xC000_009A),
        Err(crate::Status::InsufficientResources)
    );
    assert_eq!(
        read_failure(0xC000_0017),
        Err(crate::Status::Host(0xC000_0017))
    );
    // STATUS_OBJECT_NAME_NOT_FOUND, STATUS_BUFFER_OVERFLOW, STATUS_ACCESS_DENIED: missing.
    for missing in [0xC000_0034, 0x8000_0005, 0xC000_0022] {
        assert_eq!(read_failure(missing), Ok(()), "{missing:#x}");
    }
    // The reload's shape in the glue: a failed read returns before the store is touched.
    let store = GateStore::new();
    store.publish(Gates {
        read: true,
        write: true,
    });
    let read = |raw: u32| -> Result<ValueMap, crate::Status> {
        read_failure(raw)?;
        Ok(ValueMap::new())
    };
    assert!(read(0xC000_009A).map(|v| store.reload(&v)).is_err());
    assert_eq!(
        store.snapshot(),
        Gates {
            read: true,
            write: true
        }
    );
    let _ = read(0xC000_0034).map(|v| store.reload(&v)).unwrap();
    assert_eq!(store.snapshot(), Gates::default());
}
