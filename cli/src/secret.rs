//! Reading passwords without leaving copies behind (docs/review.md W5).
//!
//! Owns: reading secret lines from stdin into zeroizing storage: one byte at a time from an
//! unbuffered duplicate of the stdin handle (the standard library's stdin buffer never sees
//! the bytes), into a `Zeroizing<Vec<u8>>` reserved up front that is never reallocated (a
//! longer line is refused, not grown).
//! Never: interprets the password (keyfiles and PRFs are `volume`'s).

use std::io::Read;

use zeroize::{Zeroize, Zeroizing};

/// Room reserved for one secret line: VeraCrypt's longest password (128 bytes) and a CR LF,
/// with margin. A longer line is refused.
pub const LINE_CAPACITY: usize = 1024;

/// Why secret lines could not be read.
#[derive(Debug)]
pub enum SecretError {
    /// The input failed.
    Io(std::io::Error),
    /// Input ended before line `n` (0-based) began.
    Missing(usize),
    /// A line is longer than [`LINE_CAPACITY`] bytes.
    TooLong,
}

impl std::fmt::Display for SecretError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SecretError::Io(e) => write!(f, "cannot read stdin: {e}"),
            SecretError::Missing(0) => write!(f, "no password line on stdin"),
            SecretError::Missing(_) => write!(f, "no hidden-volume password line on stdin"),
            SecretError::TooLong => {
                write!(f, "password line longer than {LINE_CAPACITY} bytes")
            }
        }
    }
}

/// Reads `n` lines from `input` one byte at a time (trailing CR/LF removed), each into its own
/// zeroizing buffer of [`LINE_CAPACITY`] reserved bytes. Nothing is read past the last line's
/// newline. Every partial line is wiped on error.
pub fn read_lines(mut input: impl Read, n: usize) -> Result<Vec<Zeroizing<Vec<u8>>>, SecretError> {
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let mut line = Zeroizing::new(Vec::with_capacity(LINE_CAPACITY));
        let mut byte = Zeroizing::new([0u8; 1]);
        let mut any = false;
        loop {
            match input.read(&mut byte[..]) {
                Ok(0) => break,
                Ok(_) => {
                    any = true;
                    if byte[0] == b'\n' {
                        break;
                    }
                    if line.len() == LINE_CAPACITY {
                        return Err(SecretError::TooLong);
                    }
                    line.push(byte[0]);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(SecretError::Io(e)),
            }
        }
        byte.zeroize();
        if !any {
            return Err(SecretError::Missing(i));
        }
        while matches!(line.last(), Some(b'\r')) {
            line.pop();
        }
        out.push(line);
    }
    Ok(out)
}

/// An unbuffered handle to stdin: a duplicate of its file descriptor or handle, so reads
/// bypass the standard library's stdin buffer.
pub fn raw_stdin() -> std::io::Result<std::fs::File> {
    #[cfg(unix)]
    {
        use std::os::fd::AsFd;
        Ok(std::fs::File::from(
            std::io::stdin().as_fd().try_clone_to_owned()?,
        ))
    }
    #[cfg(windows)]
    {
        use std::os::windows::io::AsHandle;
        Ok(std::fs::File::from(
            std::io::stdin().as_handle().try_clone_to_owned()?,
        ))
    }
}

/// Reads `n` password lines from stdin (see [`read_lines`]).
pub fn stdin_lines(n: usize) -> Result<Vec<Zeroizing<Vec<u8>>>, SecretError> {
    read_lines(raw_stdin().map_err(SecretError::Io)?, n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn w5_lines_are_read_without_their_newlines() {
        let lines = read_lines(&b"outer pw\r\nhidden\nrest"[..], 2).unwrap();
        assert_eq!(&lines[0][..], b"outer pw");
        assert_eq!(&lines[1][..], b"hidden");
        let last = read_lines(&b"no newline"[..], 1).unwrap();
        assert_eq!(&last[0][..], b"no newline");
        assert_eq!(&read_lines(&b"\n"[..], 1).unwrap()[0][..], b"");
    }

    #[test]
    fn w5_a_line_is_never_reallocated() {
        let input = vec![b'x'; LINE_CAPACITY];
        let lines = read_lines(&input[..], 1).unwrap();
        assert_eq!(lines[0].capacity(), LINE_CAPACITY);
        let long = vec![b'x'; LINE_CAPACITY + 1];
        assert!(matches!(
            read_lines(&long[..], 1),
            Err(SecretError::TooLong)
        ));
    }

    #[test]
    fn w5_missing_lines_are_named() {
        assert!(matches!(
            read_lines(&b""[..], 1),
            Err(SecretError::Missing(0))
        ));
        let e = read_lines(&b"one\n"[..], 2).unwrap_err();
        assert!(matches!(e, SecretError::Missing(1)));
        assert_eq!(e.to_string(), "no hidden-volume password line on stdin");
    }

    #[test]
    fn w5_nothing_is_read_past_the_last_line() {
        let mut input = &b"pw\nkeep"[..];
        read_lines(&mut input, 1).unwrap();
        assert_eq!(input, b"keep");
    }
}
