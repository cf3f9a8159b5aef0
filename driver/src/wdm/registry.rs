//! The service key through ZwOpenKey/ZwQueryValueKey: the engine's `RegistrySource`.
//!
//! Owns: reading the named values as raw (type, bytes) pairs into a `ValueMap`.
//! Never: interprets them (`registry` parses, clamps and words the notes).

use core::mem::offset_of;

use wdk_sys::ntddk::{ZwClose, ZwOpenKey, ZwQueryValueKey};
use wdk_sys::{
    _KEY_VALUE_INFORMATION_CLASS::KeyValuePartialInformation, HANDLE, KEY_READ,
    KEY_VALUE_PARTIAL_INFORMATION, OBJECT_ATTRIBUTES, OBJ_CASE_INSENSITIVE, OBJ_KERNEL_HANDLE,
};

use super::strings::OwnedUnicode;
use crate::registry::{read_failure, ValueMap};
use crate::Status;

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
/// key or value is simply absent from the map. W6: the map, the key's and each value's name
/// are allocated fallibly; one that cannot be is STATUS_INSUFFICIENT_RESOURCES, and
/// ZwOpenKey or ZwQueryValueKey failing with STATUS_INSUFFICIENT_RESOURCES or
/// STATUS_NO_MEMORY is that error ([`read_failure`]; never a value silently taken as missing).
///
/// IRQL: PASSIVE_LEVEL.
#[cfg_attr(feature = "wine-host", track_caller)]
pub fn read_values(path: &[u16], names: &[&str]) -> Result<ValueMap, Status> {
    super::irql::check(crate::platform::irql::Call::RegistryRead);
    let mut map = ValueMap::new();
    let mut key_name = OwnedUnicode::copy(path)?;
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
        // Out of memory is that error; no key: every value missing.
        read_failure(status as u32)?;
        return Ok(map);
    }
    let mut outcome = Ok(());
    for name in names {
        let mut value_name = match OwnedUnicode::encode(name) {
            Ok(n) => n,
            // Longer than a UNICODE_STRING: no such value.
            Err(Status::InvalidParameter) => continue,
            Err(status) => {
                outcome = Err(status);
                break;
            }
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
            // Out of memory: the read fails (the key closed below); missing, or longer than
            // MAX_DATA: treated as missing.
            if let Err(status) = read_failure(status as u32) {
                outcome = Err(status);
                break;
            }
            continue;
        }
        let value_type = info[TYPE_WORD];
        let length = (info[LENGTH_WORD] as usize).min(MAX_DATA);
        // The data's bytes, on the stack (W6: no allocation but the map's own).
        let mut data = [0u8; MAX_DATA];
        for (d, b) in data
            .iter_mut()
            .zip(info[HEADER / 4..].iter().flat_map(|w| w.to_le_bytes()))
        {
            *d = b;
        }
        if let Err(status) = map.try_set(name, value_type, &data[..length]) {
            outcome = Err(status);
            break;
        }
    }
    // SAFETY: our kernel handle, closed once.
    let _ = unsafe { ZwClose(key) };
    outcome.map(|()| map)
}
