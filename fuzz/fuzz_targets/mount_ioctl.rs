//! Arbitrary bytes as the input buffer of every control IOCTL the driver parses (the mount
//! request above all, in both its layouts: AES, and the extended one with an algorithm and a
//! key area of up to 192 bytes). Asserts: parsing never panics; a mount request that parses
//! re-builds to the very same bytes (nothing is accepted that the builder would not produce,
//! in either layout); its key is exactly its algorithm's length; the product parser never
//! accepts a Wine host driver name.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vcdirect::abi::{EmptyRequest, GatesMessage, MountRequest, VolumeRequest};

fuzz_target!(|data: &[u8]| {
    for wine in [false, true] {
        if let Ok(req) = MountRequest::parse(data, wine) {
            if !wine {
                assert!(req.wine_host_driver_name.is_empty());
            }
            let again = req.build().expect("a parsed request builds");
            assert_eq!(&again[..], data, "parse/build round trip");
            assert_eq!(req.key.len(), req.algorithm.key_len());
            assert_eq!(
                data.len() == MountRequest::SIZE,
                req.algorithm == vcdirect::crypto::AES
            );
            // Whatever the parser let through is a usable geometry.
            assert!(req.data_size > 0);
            assert!(req.data_offset.checked_add(req.data_size).is_some());
        }
    }
    let _ = VolumeRequest::parse(data);
    let _ = EmptyRequest::parse(data);
    let _ = GatesMessage::parse(data);
});
