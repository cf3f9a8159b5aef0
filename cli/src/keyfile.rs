//! VeraCrypt keyfiles: the keyfile pool mixed into the password (docs/design.md §4).
//!
//! Owns: reading keyfiles (first 1 MiB each), the CRC-32 pool algorithm and how the pool
//! modifies the password. Never: derives keys.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use zeroize::Zeroizing;

/// Longest password VeraCrypt accepts, in bytes.
pub const MAX_PASSWORD: usize = 128;
/// Pool size when the password is at most 64 bytes.
const POOL_LEGACY: usize = 64;
/// Pool size for longer passwords.
const POOL_LARGE: usize = 128;
/// Bytes of each keyfile that count.
const MAX_READ: usize = 1024 * 1024;

/// Why a keyfile could not be used.
#[derive(Debug)]
pub enum KeyfileError {
    /// The keyfile could not be read.
    Io(String, std::io::Error),
    /// The keyfile is empty (VeraCrypt refuses those).
    Empty(String),
}

impl std::fmt::Display for KeyfileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeyfileError::Io(p, e) => write!(f, "cannot read keyfile {p}: {e}"),
            KeyfileError::Empty(p) => write!(f, "keyfile {p} is empty"),
        }
    }
}

/// The first [`MAX_READ`] bytes of a keyfile, read into a zeroizing buffer sized once up
/// front (W5: no reallocation leaves a copy of the contents in freed memory).
fn read_keyfile(path: &Path) -> std::io::Result<Zeroizing<Vec<u8>>> {
    let mut file = File::open(path)?;
    let meta = file.metadata()?;
    let cap = if meta.is_file() {
        meta.len().min(MAX_READ as u64) as usize
    } else {
        MAX_READ
    };
    let mut data = Zeroizing::new(vec![0u8; cap]);
    let mut filled = 0;
    while filled < cap {
        match file.read(&mut data[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    data.truncate(filled);
    Ok(data)
}

/// Mixes the contents of `keyfiles` (in order) into `password`. Returns the password
/// unchanged when there are none.
pub fn apply_keyfiles<P: AsRef<Path>>(
    password: &[u8],
    keyfiles: &[P],
) -> Result<Zeroizing<Vec<u8>>, KeyfileError> {
    let mut contents = Vec::with_capacity(keyfiles.len());
    for path in keyfiles {
        let path = path.as_ref();
        let name = path.display().to_string();
        let data = read_keyfile(path).map_err(|e| KeyfileError::Io(name.clone(), e))?;
        if data.is_empty() {
            return Err(KeyfileError::Empty(name));
        }
        contents.push(data);
    }
    let refs: Vec<&[u8]> = contents.iter().map(|c| c.as_slice()).collect();
    Ok(apply_keyfile_bytes(password, &refs))
}

/// The pool algorithm over keyfile contents already in memory (each truncated to 1 MiB).
pub fn apply_keyfile_bytes(password: &[u8], keyfiles: &[&[u8]]) -> Zeroizing<Vec<u8>> {
    if keyfiles.is_empty() {
        return Zeroizing::new(password.to_vec());
    }
    let pool_size = if password.len() > POOL_LEGACY {
        POOL_LARGE
    } else {
        POOL_LEGACY
    };
    let mut pool = Zeroizing::new(vec![0u8; pool_size]);
    for data in keyfiles {
        let mut crc = crc32fast::Hasher::new();
        let mut pos = 0usize;
        for byte in data.iter().take(MAX_READ) {
            crc.update(&[*byte]);
            // VeraCrypt adds the raw CRC register (before its final inversion).
            let register = !crc.clone().finalize();
            for b in register.to_be_bytes() {
                pool[pos] = pool[pos].wrapping_add(b);
                pos += 1;
            }
            if pos >= pool_size {
                pos = 0;
            }
        }
    }
    let mut out = Zeroizing::new(vec![0u8; password.len().max(pool_size)]);
    out[..password.len()].copy_from_slice(password);
    for (o, p) in out.iter_mut().zip(pool.iter()) {
        *o = o.wrapping_add(*p);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reference CRC register update, written bit by bit from the CRC-32 definition.
    fn register_after(bytes: &[u8]) -> u32 {
        let mut c = 0xFFFF_FFFFu32;
        for b in bytes {
            c ^= u32::from(*b);
            for _ in 0..8 {
                c = if c & 1 != 0 {
                    (c >> 1) ^ 0xEDB8_8320
                } else {
                    c >> 1
                };
            }
        }
        c
    }

    #[test]
    fn pool_adds_crc_register_bytes_most_significant_first() {
        let out = apply_keyfile_bytes(b"", &[b"a"]);
        let r = register_after(b"a").to_be_bytes();
        assert_eq!(&out[..4], &r);
        assert!(out[4..].iter().all(|b| *b == 0));
        assert_eq!(out.len(), 64);
    }

    #[test]
    fn password_bytes_get_the_pool_added_and_long_passwords_use_the_large_pool() {
        let pw = [1u8; 70];
        let out = apply_keyfile_bytes(&pw, &[b"a"]);
        assert_eq!(out.len(), 128);
        let r = register_after(b"a").to_be_bytes();
        assert_eq!(out[0], 1u8.wrapping_add(r[0]));
        assert_eq!(out[69], 1);
    }

    #[test]
    fn no_keyfiles_keeps_the_password() {
        assert_eq!(&apply_keyfile_bytes(b"abc", &[])[..], b"abc");
    }
}
