//! Kernel strings: UTF-16 arrays built at compile time, `UNICODE_STRING`s over them, and the
//! one owned `UNICODE_STRING` ([`OwnedUnicode`]) for names built at run time.
//!
//! Owns: the `UNICODE_STRING` header (Length and MaximumLength in bytes, not NUL-terminated,
//! as the kernel allows) over UTF-16 the glue keeps alive. Never: converts non-ASCII text
//! (names are ASCII or come as UTF-16 from the caller).

use alloc::vec::Vec;

use wdk_sys::UNICODE_STRING;

use crate::Status;

/// Encodes an ASCII string as UTF-16 at compile time (`N` = its length).
pub(crate) const fn utf16<const N: usize>(s: &str) -> [u16; N] {
    let bytes = s.as_bytes();
    assert!(bytes.len() == N, "length mismatch");
    let mut out = [0u16; N];
    let mut i = 0;
    while i < N {
        assert!(bytes[i].is_ascii(), "ASCII only");
        out[i] = bytes[i] as u16;
        i += 1;
    }
    out
}

/// The header describing `len` UTF-16 units at `buffer` (`bytes` = `len * 2`, checked by the
/// callers).
fn counted(buffer: *mut u16, bytes: u16) -> UNICODE_STRING {
    UNICODE_STRING {
        Length: bytes,
        MaximumLength: bytes,
        Buffer: buffer,
    }
}

/// A `UNICODE_STRING` describing `chars` (not NUL-terminated, as the kernel allows). The
/// kernel only reads through it; `chars` is `'static`, so the pointer never dangles.
pub(crate) fn unicode(chars: &'static [u16]) -> UNICODE_STRING {
    counted(chars.as_ptr().cast_mut(), (chars.len() * 2) as u16)
}

/// A name built at run time, owned with the `UNICODE_STRING` that describes it.
///
/// # Invariants
/// `header` describes exactly `chars` (Buffer = its heap buffer, Length = MaximumLength = its
/// size in bytes, which fits a u16); `chars` is never changed after construction, so its heap
/// buffer neither moves nor goes away while `self` lives (moving `self` moves only the
/// `Vec`'s header).
pub(crate) struct OwnedUnicode {
    chars: Vec<u16>,
    header: UNICODE_STRING,
}

impl OwnedUnicode {
    /// Takes `chars`; `InvalidParameter` when they exceed a `UNICODE_STRING` (32767 units).
    pub(crate) fn new(mut chars: Vec<u16>) -> Result<Self, Status> {
        let bytes = u16::try_from(chars.len() * 2).map_err(|_| Status::InvalidParameter)?;
        let header = counted(chars.as_mut_ptr(), bytes);
        Ok(OwnedUnicode { chars, header })
    }

    /// Copies `chars` into a fallibly allocated buffer (W6: STATUS_INSUFFICIENT_RESOURCES,
    /// asks the allocation-failure injection); see [`OwnedUnicode::new`].
    pub(crate) fn copy(chars: &[u16]) -> Result<Self, Status> {
        let mut owned = crate::io::try_vec(chars.len())?;
        owned.extend_from_slice(chars);
        Self::new(owned)
    }

    /// Encodes `s` as UTF-16 into a fallibly allocated buffer (W6); see
    /// [`OwnedUnicode::new`].
    pub(crate) fn encode(s: &str) -> Result<Self, Status> {
        Self::new(crate::namespace::join(&[s])?)
    }

    /// The header, for a kernel routine that takes a `PUNICODE_STRING` (the routines this
    /// driver passes it to only read the string). Valid while the borrow of `self` lasts.
    pub(crate) fn as_mut(&mut self) -> &mut UNICODE_STRING {
        debug_assert_eq!(usize::from(self.header.Length), self.chars.len() * 2);
        &mut self.header
    }
}
