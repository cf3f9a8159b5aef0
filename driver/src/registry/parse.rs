//! Strict parsing of one raw registry value (docs/review.md R8).
//!
//! A value counts only when its type is REG_DWORD and its data is exactly 4 bytes; nothing here
//! reads a byte outside the slice it is given, whatever the type or length claims.

use core::fmt;

use super::names::{reg_type, READ_GATE_VALUE, WRITE_GATE_VALUE};

/// One value as the registry returned it: its type and its data bytes, unchecked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawValue<'a> {
    /// The `REG_*` type (see [`reg_type`]).
    pub value_type: u32,
    /// The data exactly as stored; its length is the value's length.
    pub data: &'a [u8],
}

impl<'a> RawValue<'a> {
    /// A value of type `value_type` holding `data`.
    pub const fn new(value_type: u32, data: &'a [u8]) -> Self {
        RawValue { value_type, data }
    }
}

/// What a failed registry read (ZwOpenKey, ZwQueryValueKey) with NTSTATUS `raw` means: a
/// read that failed for want of memory (STATUS_INSUFFICIENT_RESOURCES, STATUS_NO_MEMORY) is
/// that error, never a missing value (a reload would otherwise turn both gates off and
/// succeed); any other failure (no such key or value, a value longer than the buffer) is
/// `Ok`: the value counts as missing.
pub fn read_failure(raw: u32) -> Result<(), crate::Status> {
    let status = crate::Status::from_ntstatus(raw);
    if status.is_out_of_memory() {
        Err(status)
    } else {
        Ok(())
    }
}

/// Why a present value is not a usable DWORD.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Malformed {
    /// The type is not REG_DWORD (the type it has).
    WrongType(u32),
    /// REG_DWORD, but the data is not exactly 4 bytes (the length it has).
    WrongLength(usize),
}

/// Reads a value strictly as a DWORD: REG_DWORD, exactly 4 bytes, little-endian.
pub fn read_dword(raw: RawValue<'_>) -> Result<u32, Malformed> {
    if raw.value_type != reg_type::REG_DWORD {
        return Err(Malformed::WrongType(raw.value_type));
    }
    match <[u8; 4]>::try_from(raw.data) {
        Ok(bytes) => Ok(u32::from_le_bytes(bytes)),
        Err(_) => Err(Malformed::WrongLength(raw.data.len())),
    }
}

/// One of the two direct-path gates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Gate {
    /// Direct reads (`VeraCryptEnableMountedVolumeFastReadIo`).
    Read,
    /// Direct writes (`VeraCryptEnableMountedVolumeFastWriteIo`).
    Write,
}

impl Gate {
    /// Both gates, read first.
    pub const ALL: [Gate; 2] = [Gate::Read, Gate::Write];

    /// The registry value name of this gate.
    pub const fn value_name(self) -> &'static str {
        match self {
            Gate::Read => READ_GATE_VALUE,
            Gate::Write => WRITE_GATE_VALUE,
        }
    }
}

/// Why a gate is off (logged once per load or reload, docs/review.md R8).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OffReason {
    /// The value does not exist.
    Missing,
    /// The value's type is not REG_DWORD.
    WrongType(u32),
    /// REG_DWORD with data that is not exactly 4 bytes.
    WrongLength(usize),
    /// A well-formed DWORD other than 1.
    Value(u32),
}

impl From<Malformed> for OffReason {
    fn from(m: Malformed) -> Self {
        match m {
            Malformed::WrongType(t) => OffReason::WrongType(t),
            Malformed::WrongLength(n) => OffReason::WrongLength(n),
        }
    }
}

/// The state of one gate after parsing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GateState {
    /// Exactly REG_DWORD 1.
    On,
    /// Anything else, and why.
    Off(OffReason),
}

impl GateState {
    /// True only for [`GateState::On`].
    pub const fn is_on(self) -> bool {
        matches!(self, GateState::On)
    }
}

/// Parses a gate: on only for type REG_DWORD, length exactly 4, value 1 (docs/review.md R8).
pub fn parse_gate(raw: Option<RawValue<'_>>) -> GateState {
    let Some(raw) = raw else {
        return GateState::Off(OffReason::Missing);
    };
    match read_dword(raw) {
        Ok(1) => GateState::On,
        Ok(other) => GateState::Off(OffReason::Value(other)),
        Err(m) => GateState::Off(m.into()),
    }
}

/// Writes `REG_SZ (1)` or `type 99` for a type number.
struct TypeName(u32);

impl fmt::Display for TypeName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match reg_type::name(self.0) {
            Some(name) => write!(f, "{name} ({})", self.0),
            None => write!(f, "type {}", self.0),
        }
    }
}

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Malformed::WrongType(t) => {
                write!(f, "type is {}, need REG_DWORD (4)", TypeName(t))
            }
            Malformed::WrongLength(n) => {
                write!(f, "REG_DWORD holds {n} bytes, need exactly 4")
            }
        }
    }
}

impl fmt::Display for OffReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            OffReason::Missing => f.write_str("value not set"),
            OffReason::WrongType(t) => fmt::Display::fmt(&Malformed::WrongType(t), f),
            OffReason::WrongLength(n) => fmt::Display::fmt(&Malformed::WrongLength(n), f),
            OffReason::Value(v) => write!(f, "value is {v} ({v:#x}), only 1 turns it on"),
        }
    }
}

impl fmt::Display for GateState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GateState::On => f.write_str("on"),
            GateState::Off(reason) => write!(f, "off: {reason}"),
        }
    }
}
