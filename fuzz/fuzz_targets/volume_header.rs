//! Arbitrary 512-byte decrypted VeraCrypt headers into vcctl's header parser (after key
//! derivation; fuzzing through PBKDF2 would be too slow to mean anything). Asserts: parsing
//! never panics; an accepted header re-encodes to the same 448 bytes after the salt (magic,
//! version, both CRCs, sizes, key area), so nothing is accepted that fails its own checks.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vcctl::header::{encode_header, parse_decrypted_header};

fuzz_target!(|data: &[u8]| {
    let mut bytes = [0u8; 512];
    let n = data.len().min(512);
    bytes[..n].copy_from_slice(&data[..n]);
    if let Ok(h) = parse_decrypted_header(&bytes) {
        let salt: [u8; 64] = bytes[..64].try_into().unwrap();
        let again = encode_header(&h, &salt);
        assert_eq!(&again[64..], &bytes[64..], "decode/encode round trip");
        assert!(h.data_offset.checked_add(h.data_size).is_some());
    }
});
