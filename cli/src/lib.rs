//! vcctl's library: the VeraCrypt volume format (headers, PRFs, PIM, keyfiles, hidden volumes,
//! backup headers), volume creation, and the driver client.
//!
//! The pure header parser [`header::parse_decrypted_header`] needs no key derivation; fuzz
//! targets call it on any 512 bytes.

pub mod backup;
pub mod cipher;
pub mod create;
pub mod driver;
pub mod fat;
pub mod faults;
pub mod header;
pub mod kdf;
pub mod keyfile;
pub mod secret;
pub mod volume;

pub use header::{parse_decrypted_header, Header, HeaderError};

use std::fmt;
use std::path::Path;

/// Everything that can stop a volume operation. Each displays as one line.
#[derive(Debug)]
pub enum VolumeError {
    /// The volume file could not be opened or created.
    Open(String, std::io::Error),
    /// A read or write on the volume failed.
    Read(std::io::Error),
    /// The file is shorter than the layout needs.
    Truncated {
        /// File size in bytes.
        size: u64,
        /// Bytes the layout needs.
        need: u64,
    },
    /// No header decrypted with the given password, PRFs, PIM and keyfiles.
    WrongPassword {
        /// PRFs tried, comma-separated.
        prfs: String,
        /// PIM used.
        pim: u32,
    },
    /// A key produced the header magic but a later check failed.
    DamagedHeader(HeaderError),
    /// The header decrypted and is intact, but names something VeraCrypt 1.26 (and so this
    /// tool) does not mount: a newer header or program version, system encryption,
    /// unfinished in-place encryption. No other header copy is tried.
    Unsupported(HeaderError),
    /// A keyfile problem.
    Keyfile(keyfile::KeyfileError),
    /// Password longer than VeraCrypt allows.
    PasswordTooLong(usize),
    /// A read past the data area.
    OutOfRange {
        /// Requested offset.
        offset: u64,
        /// Requested length.
        length: u64,
        /// Data area size.
        data_size: u64,
    },
    /// Bad arguments to create.
    BadLayout(String),
    /// The OS random generator failed.
    Random(String),
    /// The volume file is mounted or open (locked) elsewhere.
    InUse(String),
    /// A header key could not be derived: Argon2id's memory (checked before it starts).
    Kdf(kdf::Argon2Error),
    /// Argon2 with a PIM below 12 and a password shorter than 20 bytes (VeraCrypt refuses it).
    Argon2ShortPassword {
        /// The PIM asked for.
        pim: u32,
        /// The password's length in bytes.
        length: usize,
    },
}

impl VolumeError {
    fn io(path: &Path, e: std::io::Error) -> Self {
        VolumeError::Open(path.display().to_string(), e)
    }
}

impl fmt::Display for VolumeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VolumeError::Open(p, e) => write!(f, "cannot open {p}: {e}"),
            VolumeError::Read(e) => write!(f, "volume I/O failed: {e}"),
            VolumeError::Truncated { size, need } => write!(
                f,
                "truncated volume: file has {size} bytes, its layout needs {need}"
            ),
            VolumeError::WrongPassword { prfs, pim } => write!(
                f,
                "wrong password, PIM ({pim}), PRF ({prfs}) or keyfiles, or a header key derivation vcctl does not know, or not a VeraCrypt volume: no header decrypted"
            ),
            VolumeError::DamagedHeader(e) => write!(f, "damaged volume header: {e}"),
            VolumeError::Unsupported(e) => write!(f, "unsupported volume: {e}"),
            VolumeError::Keyfile(e) => write!(f, "{e}"),
            VolumeError::PasswordTooLong(n) => {
                write!(f, "password is {n} bytes; VeraCrypt allows at most 128")
            }
            VolumeError::OutOfRange {
                offset,
                length,
                data_size,
            } => write!(
                f,
                "range {offset}+{length} is outside the data area of {data_size} bytes"
            ),
            VolumeError::BadLayout(s) => write!(f, "{s}"),
            VolumeError::Random(s) => write!(f, "OS random generator failed: {s}"),
            VolumeError::Kdf(e) => write!(f, "{e}"),
            VolumeError::Argon2ShortPassword { pim, length } => write!(
                f,
                "--prf argon2 with PIM {pim} needs a password of at least 20 characters (this one has {length}): VeraCrypt refuses an Argon2 PIM below 12 with a shorter password; use PIM 0 (VeraCrypt's default, 12) or 12 and more, or a longer password"
            ),
            VolumeError::InUse(p) => write!(
                f,
                "{p} is in use: mounted by vcdirect or open in another program that locks it; dismount or close it first"
            ),
        }
    }
}

impl std::error::Error for VolumeError {}
