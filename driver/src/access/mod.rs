//! Who may do what with the control device (docs/review.md W4).
//!
//! Owns: the caller's identity as the policy sees it ([`Caller`]: user SID, administrator,
//! LocalSystem), the control operations ([`Operation`]) and the one decision ([`check`]):
//! allowed, or the exact status to fail with; and which volumes a caller sees in a list or a
//! dismount of all ([`Caller::sees`]).
//! Never: asks the kernel who the caller is (the `wdm` glue captures the token and fills in a
//! [`Caller`]), parses IOCTL buffers (`abi`) or acts on a request.
//!
//! The rules:
//! - mount: anyone who can open the control device (as VeraCrypt: a standard user mounts
//!   their own containers; the host open then checks access to the partition or file);
//! - dismount, status: the volume's owner (the user who mounted it), administrators, system;
//!   anyone else gets STATUS_ACCESS_DENIED;
//! - list, dismount all: anyone, but a caller sees only their own volumes unless they are an
//!   administrator or system;
//! - gates get: anyone (it reveals the driver's defaults, nothing about a volume);
//! - gates set, gates reload, erase keys: administrators and system only;
//! - a caller impersonating at anonymous or identification level is refused before any of
//!   these ([`Token::usable`]: STATUS_BAD_IMPERSONATION_LEVEL).

use crate::Status;

#[cfg(test)]
mod tests;

/// STATUS_ACCESS_DENIED: the caller may not do this.
pub const ACCESS_DENIED: Status = Status::Host(0xC000_0022);
/// STATUS_INVALID_SID: the token's user SID is malformed.
pub const INVALID_SID: Status = Status::Host(0xC000_0078);

/// STATUS_BAD_IMPERSONATION_LEVEL: the caller impersonates at a level below
/// SecurityImpersonation (anonymous or identification), too low to act as that client.
pub const BAD_IMPERSONATION_LEVEL: Status = Status::Host(0xC000_00A5);

/// Largest SID: revision, count, 6-byte authority and 15 sub-authorities.
pub const MAX_SID_LENGTH: usize = 8 + 4 * 15;

/// A security identifier in its binary form (revision 1, as `RtlLengthSid` measures it), held
/// inline: a SID is at most [`MAX_SID_LENGTH`] bytes, so making, copying and comparing one
/// allocates nothing (W6: the caller's SID of every control IOCTL, the owner kept for a volume,
/// the device's security descriptor).
#[derive(Clone, PartialEq, Eq)]
pub struct Sid {
    /// Bytes used (`8 + 4 x count`).
    len: u8,
    /// The binary form, zero after `len`.
    bytes: [u8; MAX_SID_LENGTH],
}

impl core::fmt::Debug for Sid {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_tuple("Sid").field(&self.as_bytes()).finish()
    }
}

impl Sid {
    /// A SID from its binary form: revision 1, at most 15 sub-authorities, and exactly
    /// `8 + 4 x count` bytes; anything else is [`INVALID_SID`].
    pub fn from_bytes(bytes: &[u8]) -> Result<Sid, Status> {
        match bytes {
            [1, count, ..] if *count <= 15 && bytes.len() == 8 + 4 * usize::from(*count) => {
                let mut sid = Sid {
                    len: bytes.len() as u8,
                    bytes: [0; MAX_SID_LENGTH],
                };
                sid.bytes[..bytes.len()].copy_from_slice(bytes);
                Ok(sid)
            }
            _ => Err(INVALID_SID),
        }
    }

    /// A copy (kept for the callers that copied fallibly when a SID was a heap buffer: a SID
    /// is inline now, so this allocates nothing and cannot fail).
    pub fn try_clone(&self) -> Result<Sid, Status> {
        Ok(self.clone())
    }

    /// A SID from its authority and sub-authorities (S-1-`authority`-`sub`...); at most 15
    /// sub-authorities are kept.
    pub fn new(authority: u64, sub_authorities: &[u32]) -> Sid {
        let count = sub_authorities.len().min(15);
        let mut bytes = [0u8; MAX_SID_LENGTH];
        bytes[0] = 1;
        bytes[1] = count as u8;
        // The identifier authority is 6 bytes, big-endian.
        bytes[2..8].copy_from_slice(&authority.to_be_bytes()[2..]);
        for (i, s) in sub_authorities.iter().take(count).enumerate() {
            bytes[8 + 4 * i..12 + 4 * i].copy_from_slice(&s.to_le_bytes());
        }
        Sid {
            len: (8 + 4 * count) as u8,
            bytes,
        }
    }

    /// S-1-5-18, LocalSystem.
    pub fn local_system() -> Sid {
        Sid::new(5, &[18])
    }

    /// S-1-5-32-544, BUILTIN\Administrators.
    pub fn administrators() -> Sid {
        Sid::new(5, &[32, 544])
    }

    /// The binary form.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

/// SECURITY_IMPERSONATION_LEVEL of an impersonation token.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ImpersonationLevel {
    /// SecurityAnonymous (0): the server may not even learn who the client is.
    Anonymous,
    /// SecurityIdentification (1): the server may learn who the client is, not act as it.
    Identification,
    /// SecurityImpersonation (2): the server may act as the client on this machine.
    Impersonation,
    /// SecurityDelegation (3): as impersonation, also on other machines.
    Delegation,
}

impl ImpersonationLevel {
    /// The level from its SECURITY_IMPERSONATION_LEVEL value; a value outside 0..=3 counts as
    /// [`ImpersonationLevel::Anonymous`], the lowest (refused).
    pub fn from_raw(raw: i64) -> ImpersonationLevel {
        match raw {
            1 => ImpersonationLevel::Identification,
            2 => ImpersonationLevel::Impersonation,
            3 => ImpersonationLevel::Delegation,
            _ => ImpersonationLevel::Anonymous,
        }
    }
}

/// The token a caller is judged by: the calling thread's own process token, or the client
/// token it impersonates (SeQuerySubjectContextToken picks the client token when there is one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Token {
    /// The process's primary token (the thread does not impersonate).
    Primary,
    /// An impersonation token at this level.
    Impersonation(ImpersonationLevel),
}

impl Token {
    /// Whether the token may stand for the caller: `Ok(())`, or [`BAD_IMPERSONATION_LEVEL`]
    /// for an anonymous or identification-level impersonation token (an identification token
    /// of an administrator lets a server learn the client is one, never act as one).
    pub fn usable(self) -> Result<(), Status> {
        match self {
            Token::Primary => Ok(()),
            Token::Impersonation(level) if level >= ImpersonationLevel::Impersonation => Ok(()),
            Token::Impersonation(_) => Err(BAD_IMPERSONATION_LEVEL),
        }
    }
}

/// Who sends a control IOCTL, from the token of the calling thread.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller {
    /// The token's user SID.
    pub sid: Sid,
    /// The token holds the Administrators group enabled (an elevated administrator).
    pub administrator: bool,
    /// The token's user is LocalSystem.
    pub system: bool,
}

impl Caller {
    /// A caller whose `system` flag follows from the SID (S-1-5-18).
    pub fn new(sid: Sid, administrator: bool) -> Caller {
        let system = sid == Sid::local_system();
        Caller {
            sid,
            administrator,
            system,
        }
    }

    /// Administrators and system may act on every volume and change the driver's settings.
    pub fn privileged(&self) -> bool {
        self.administrator || self.system
    }

    /// Whether a list or a dismount of all shows this caller the volume `owner` mounted.
    pub fn sees(&self, owner: &Sid) -> bool {
        self.privileged() || self.sid == *owner
    }
}

/// A control operation, with the owner of the volume it names where it names one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation<'a> {
    /// Mount a volume (IOCTL_MOUNT).
    Mount,
    /// Dismount the volume mounted by the given owner (IOCTL_DISMOUNT).
    Dismount(&'a Sid),
    /// Dismount every volume the caller sees (vcctl: a list, then a dismount of each).
    DismountAll,
    /// Status of the volume mounted by the given owner (IOCTL_STATUS).
    Status(&'a Sid),
    /// List the mounted volumes the caller sees (IOCTL_LIST).
    List,
    /// Read the gates for future mounts (IOCTL_GATES_GET).
    GatesGet,
    /// Set the gates for future mounts (IOCTL_GATES_SET).
    GatesSet,
    /// Re-read the gates from the registry (IOCTL_GATES_RELOAD).
    GatesReload,
    /// Erase the keys of every mounted volume (IOCTL_ERASE_KEYS).
    EraseKeys,
}

/// Whether `caller` may do `operation`: `Ok(())`, or the status to fail the IOCTL with
/// before anything changes.
pub fn check(caller: &Caller, operation: Operation<'_>) -> Result<(), Status> {
    let allowed = match operation {
        Operation::Mount | Operation::DismountAll | Operation::List | Operation::GatesGet => true,
        Operation::Dismount(owner) | Operation::Status(owner) => caller.sees(owner),
        Operation::GatesSet | Operation::GatesReload | Operation::EraseKeys => caller.privileged(),
    };
    if allowed {
        Ok(())
    } else {
        Err(ACCESS_DENIED)
    }
}
