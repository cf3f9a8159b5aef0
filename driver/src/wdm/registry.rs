//! The service key through ZwOpenKey/ZwQueryValueKey: the engine's `RegistrySource`.
//!
//! Owns: reading the named values as raw (type, bytes) pairs into a `ValueMap`.
//! Never: interprets them (`registry` parses, clamps and words the notes).

use alloc::vec::Vec;
use core::mem::offset_of;

use wdk_sys::ntddk::{ZwClose, ZwOpenKey, ZwQueryValueKey};
use wdk_sys::{
    _KEY_VALUE_INFORMATION_CLASS::KeyValuePartialInformation, HANDLE, KEY_READ,
    KEY_VALUE_PARTIAL_INFORMATION, OBJECT_ATTRIBUTES, OBJ_CASE_INSENSITIVE, OBJ_KERNEL_HANDLE,
};

use super::strings::OwnedUnicode;
use crate::registry::ValueMap;

/// Largest value data read (a DWORD needs 4; longer values are read so they can be refused
/// with their real length, up to this bound).
const MAX_DATA: usize = 64;
/// KEY_VALUE_PARTIAL_INFORMATION header: TitleIndex, Type, DataLength (the binding's offsets,
/// read as u32 words).
const HEADER: usize = offset_of!(KEY_VALUE_PARTIAL_INFORMATION, Data);
const TYPE_WORD: usize = offset_of!(KEY_VALUE_PARTIAL_INFORMATION, Type) / 4;
const LENGTH_WORD: usize = offset_of!(KEY_VALUE_PARTIAL_INFORMATION, DataLength) / 4;
const _: () = assert!(
    HEADER.is_multiple_of(4)
        && offset_of!(KEY_VALUE_PARTIAL_INFORMATION, Type).is_multiple_of(4)
        && offset_of!(KEY_VALUE_PARTIAL_INFORMATION, DataLength).is_multiple_of(4)
        && (HEADER + MAX_DATA).is_multiple_of(4)
);

/// Reads `names` from the key at `path` (the RegistryPath given to DriverEntry). A missing
/// key or value is simply absent from the map.
///
/// IRQL: PASSIVE_LEVEL.
#[cfg_attr(feature = "wine-host", track_caller)]
pub fn read_values(path: &[u16], names: &[&str]) -> ValueMap {
    super::irql::check(crate::platform::irql::Call::RegistryRead);
    let mut map = ValueMap::new();
    let Ok(mut key_name) = OwnedUnicode::copy(path) else {
        return map;
    };
    let mut attributes = OBJECT_ATTRIBUTES {
        Length: core::mem::size_of::<OBJECT_ATTRIBUTES>() as u32,
        RootDirectory: core::ptr::null_mut(),
        ObjectName: key_name.as_mut(),
        Attributes: OBJ_CASE_INSENSITIVE | OBJ_KERNEL_HANDLE,
        SecurityDescriptor: core::ptr::null_mut(),
        SecurityQualityOfService: core::ptr::null_mut(),
    };
    let mut key: HANDLE = core::ptr::null_mut();
    // SAFETY: every pointer is valid for the call; `key_name` is alive here.
    let status = unsafe { ZwOpenKey(&mut key, KEY_READ, &mut attributes) };
    if status < 0 {
        return map;
    }
    for name in names {
        let Ok(mut value_name) = OwnedUnicode::encode(name) else {
            continue; // longer than a UNICODE_STRING: no such value
        };
        // u32 elements keep the header's fields aligned.
        let mut info = [0u32; (HEADER + MAX_DATA) / 4];
        let mut result = 0u32;
        // SAFETY: `info` is writable for its whole size; `value_name` is alive here.
        let status = unsafe {
            ZwQueryValueKey(
                key,
                value_name.as_mut(),
                KeyValuePartialInformation,
                info.as_mut_ptr().cast(),
                core::mem::size_of_val(&info) as u32,
                &mut result,
            )
        };
        if status < 0 {
            continue; // missing, or longer than MAX_DATA: treated as missing
        }
        let value_type = info[TYPE_WORD];
        let length = (info[LENGTH_WORD] as usize).min(MAX_DATA);
        let data: Vec<u8> = info[HEADER / 4..]
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .take(length)
            .collect();
        map.set(name, value_type, &data);
    }
    // SAFETY: our kernel handle, closed once.
    let _ = unsafe { ZwClose(key) };
    map
}
