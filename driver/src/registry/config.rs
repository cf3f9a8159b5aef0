//! Loading the whole configuration from a [`RegistrySource`], with one note per odd value.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

use super::parse::{parse_gate, Gate, GateState, Malformed, OffReason, RawValue};
use super::tunables::{read_tunable, RawTunables, Tunable};
use super::{Gates, Tunables};
use crate::Status;

/// Where registry values come from: the kernel glue (ZwQueryValueKey under
/// [`SERVICE_KEY_NT`](super::SERVICE_KEY_NT)), a [`ValueMap`], or a test.
pub trait RegistrySource {
    /// The value called `name` under the service key, or `None` when it does not exist.
    /// Registry names are case-insensitive; `name` is always one of
    /// [`ALL_VALUE_NAMES`](super::ALL_VALUE_NAMES).
    fn query(&self, name: &str) -> Option<RawValue<'_>>;
}

impl<S: RegistrySource + ?Sized> RegistrySource for &S {
    fn query(&self, name: &str) -> Option<RawValue<'_>> {
        (**self).query(name)
    }
}

/// Values held in memory: the glue fills one from ZwQueryValueKey (one query per name in
/// [`ALL_VALUE_NAMES`](super::ALL_VALUE_NAMES)); tests fill one by hand.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ValueMap {
    entries: Vec<(String, u32, Vec<u8>)>,
}

impl ValueMap {
    /// An empty map: every value missing.
    pub const fn new() -> Self {
        ValueMap {
            entries: Vec::new(),
        }
    }

    /// Sets `name` to a value of type `value_type` with `data`, replacing an earlier one.
    pub fn set(&mut self, name: &str, value_type: u32, data: &[u8]) -> &mut Self {
        self.remove(name);
        self.entries
            .push((String::from(name), value_type, Vec::from(data)));
        self
    }

    /// [`ValueMap::set`], allocating fallibly (W6: the glue fills the map through it, so a
    /// value that cannot be held is STATUS_INSUFFICIENT_RESOURCES, never a bugcheck).
    pub fn try_set(&mut self, name: &str, value_type: u32, data: &[u8]) -> Result<(), Status> {
        self.remove(name);
        let mut n = crate::io::try_vec(name.len())?;
        n.extend_from_slice(name.as_bytes());
        let n = String::from_utf8(n).map_err(|_| Status::InvalidParameter)?;
        let mut d = crate::io::try_vec(data.len())?;
        d.extend_from_slice(data);
        self.entries
            .try_reserve(1)
            .map_err(|_| Status::InsufficientResources)?;
        self.entries.push((n, value_type, d));
        Ok(())
    }

    /// Sets `name` to a well-formed REG_DWORD.
    pub fn set_dword(&mut self, name: &str, value: u32) -> &mut Self {
        self.set(name, super::reg_type::REG_DWORD, &value.to_le_bytes())
    }

    /// Deletes `name`.
    pub fn remove(&mut self, name: &str) -> &mut Self {
        self.entries
            .retain(|(n, _, _)| !n.eq_ignore_ascii_case(name));
        self
    }
}

impl RegistrySource for ValueMap {
    fn query(&self, name: &str) -> Option<RawValue<'_>> {
        self.entries
            .iter()
            .find(|(n, _, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, t, d)| RawValue::new(*t, d))
    }
}

/// One line for the log: a gate that is off, or a tunable that was ignored or clamped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Note {
    /// A gate is off, and why (R8).
    GateOff {
        /// Which gate.
        gate: Gate,
        /// Why it is off.
        reason: OffReason,
    },
    /// A tunable value was malformed and ignored; its default applies.
    TunableIgnored {
        /// Which tunable.
        tunable: Tunable,
        /// What was wrong with it.
        reason: Malformed,
        /// The value used instead, in the registry's unit.
        used: u32,
    },
    /// A tunable value was out of range and clamped.
    TunableClamped {
        /// Which tunable.
        tunable: Tunable,
        /// The DWORD as set.
        set: u32,
        /// The value used, in the registry's unit.
        used: u32,
    },
}

impl fmt::Display for Note {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Note::GateOff { gate, reason } => {
                write!(f, "vcdirect: {} is off: {reason}", gate.value_name())
            }
            Note::TunableIgnored {
                tunable,
                reason,
                used,
            } => write!(
                f,
                "vcdirect: {} ignored ({reason}), using {used}",
                tunable.value_name()
            ),
            Note::TunableClamped { tunable, set, used } => write!(
                f,
                "vcdirect: {} is {set}, clamped to {used}",
                tunable.value_name()
            ),
        }
    }
}

/// Both gates as read, each with its state (for logs and `vcctl gates`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GateReading {
    /// Read gate state.
    pub read: GateState,
    /// Write gate state.
    pub write: GateState,
}

impl GateReading {
    /// Reads both gates from `source`.
    pub fn load<S: RegistrySource + ?Sized>(source: &S) -> Self {
        GateReading {
            read: parse_gate(source.query(Gate::Read.value_name())),
            write: parse_gate(source.query(Gate::Write.value_name())),
        }
    }

    /// The state of `gate`.
    pub const fn state(&self, gate: Gate) -> GateState {
        match gate {
            Gate::Read => self.read,
            Gate::Write => self.write,
        }
    }

    /// The on/off pair.
    pub const fn gates(&self) -> Gates {
        Gates {
            read: self.read.is_on(),
            write: self.write.is_on(),
        }
    }

    /// One note per gate that is off, read first.
    pub fn notes(&self) -> impl Iterator<Item = Note> + '_ {
        Gate::ALL
            .into_iter()
            .filter_map(|gate| match self.state(gate) {
                GateState::On => None,
                GateState::Off(reason) => Some(Note::GateOff { gate, reason }),
            })
    }
}

impl Tunables {
    /// Reads and clamps the tunables; a note for each malformed or clamped value.
    pub fn load<S: RegistrySource + ?Sized>(source: &S) -> (Tunables, Vec<Note>) {
        let mut raw = RawTunables::default();
        let mut present = [None; Tunable::ALL.len()];
        let mut malformed = [None; Tunable::ALL.len()];
        for (i, tunable) in Tunable::ALL.into_iter().enumerate() {
            match read_tunable(source.query(tunable.value_name())) {
                Ok(Some(value)) => {
                    raw.set(tunable, value);
                    present[i] = Some(value);
                }
                Ok(None) => {}
                Err(reason) => malformed[i] = Some(reason),
            }
        }
        let tunables = Tunables::clamp(raw);
        let mut notes = Vec::new();
        for (i, tunable) in Tunable::ALL.into_iter().enumerate() {
            let used = tunables.registry_units(tunable);
            if let Some(reason) = malformed[i] {
                notes.push(Note::TunableIgnored {
                    tunable,
                    reason,
                    used,
                });
            } else if let Some(set) = present[i] {
                if set != used {
                    notes.push(Note::TunableClamped { tunable, set, used });
                }
            }
        }
        (tunables, notes)
    }
}

/// The driver's whole registry configuration.
pub struct Config;

impl Config {
    /// Reads gates and tunables; the notes are the lines the glue logs once for this load.
    pub fn load<S: RegistrySource + ?Sized>(source: &S) -> (Gates, Tunables, Vec<Note>) {
        let reading = GateReading::load(source);
        let (tunables, tunable_notes) = Tunables::load(source);
        let mut notes: Vec<Note> = reading.notes().collect();
        notes.extend(tunable_notes);
        (reading.gates(), tunables, notes)
    }
}
