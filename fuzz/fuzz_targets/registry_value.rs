//! Arbitrary registry values (type, bytes) into the gate parser, the tunable readers and the
//! whole configuration load. Asserts: a gate is on only for REG_DWORD, exactly 4 bytes, value 1
//! (docs/review.md R8), the off reason is the right one, and clamped tunables are always usable.
#![no_main]

use std::fmt::Write as _;

use libfuzzer_sys::fuzz_target;
use vcdirect::registry::{
    parse_gate, read_dword, read_tunable, reg_type::REG_DWORD, Config, GateState, GateStore,
    Malformed, OffReason, RawValue, ValueMap, ALL_VALUE_NAMES, MAX_FRAGMENT_KIB,
    MAX_IO_REQUEST_COUNT, MIN_IO_REQUEST_COUNT,
};

/// What the rules say, computed from the bytes without the parser.
fn expected_dword(value_type: u32, data: &[u8]) -> Result<u32, Malformed> {
    if value_type != REG_DWORD {
        Err(Malformed::WrongType(value_type))
    } else if data.len() != 4 {
        Err(Malformed::WrongLength(data.len()))
    } else {
        Ok(u32::from(data[0])
            | u32::from(data[1]) << 8
            | u32::from(data[2]) << 16
            | u32::from(data[3]) << 24)
    }
}

fuzz_target!(|input: (u32, u8, &[u8])| {
    let (value_type, selector, data) = input;
    let raw = RawValue::new(value_type, data);
    let expected = expected_dword(value_type, data);

    // The gate parser: on only for the exact encoding, with the right reason otherwise.
    let state = parse_gate(Some(raw));
    let exact = value_type == REG_DWORD && data == [1, 0, 0, 0];
    assert_eq!(state.is_on(), exact, "{value_type} {data:?}");
    match (state, expected) {
        (GateState::On, Ok(1)) => {}
        (GateState::Off(OffReason::Value(v)), Ok(e)) => assert_eq!(v, e),
        (GateState::Off(OffReason::WrongType(t)), Err(Malformed::WrongType(e))) => {
            assert_eq!(t, e)
        }
        (GateState::Off(OffReason::WrongLength(n)), Err(Malformed::WrongLength(e))) => {
            assert_eq!(n, e)
        }
        (state, expected) => panic!("gate {state:?} but rules say {expected:?}"),
    }
    assert_eq!(parse_gate(None), GateState::Off(OffReason::Missing));

    // The strict DWORD and tunable readers agree with the rules.
    assert_eq!(read_dword(raw), expected);
    assert_eq!(read_tunable(Some(raw)), expected.map(Some));

    // A whole load: this value under one name (or under every name when the top bit is set).
    let mut map = ValueMap::new();
    if selector & 0x80 != 0 {
        for name in ALL_VALUE_NAMES {
            map.set(name, value_type, data);
        }
    } else {
        let name = ALL_VALUE_NAMES[usize::from(selector) % ALL_VALUE_NAMES.len()];
        map.set(name, value_type, data);
    }
    let (gates, tunables, notes) = Config::load(&map);
    let set = |i: usize| map_has(&map, ALL_VALUE_NAMES[i]);
    assert_eq!(gates.read, exact && set(0));
    assert_eq!(gates.write, exact && set(1));
    assert!((MIN_IO_REQUEST_COUNT..=MAX_IO_REQUEST_COUNT).contains(&tunables.io_request_count));
    assert!(tunables.item_count >= 1 && tunables.item_count <= tunables.io_request_count / 2);
    assert!(tunables.fragment_size >= 1024 && tunables.fragment_size <= MAX_FRAGMENT_KIB * 1024);
    assert!(tunables.max_work_items >= 1);
    let mut line = String::new();
    for note in &notes {
        line.clear();
        write!(line, "{note}").unwrap();
        assert!(!line.is_empty() && !line.contains('\n'), "{line:?}");
    }

    // The store publishes exactly what the load saw.
    let store = GateStore::new();
    let reload = store.reload(&map);
    assert_eq!(reload.gates, gates);
    assert_eq!(store.snapshot(), gates);
});

fn map_has(map: &ValueMap, name: &str) -> bool {
    use vcdirect::registry::RegistrySource;
    map.query(name).is_some()
}
