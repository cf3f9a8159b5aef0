//! Constant kernel strings: UTF-16 arrays built at compile time and `UNICODE_STRING`s over them.

use wdk_sys::UNICODE_STRING;

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

/// A `UNICODE_STRING` describing `chars` (not NUL-terminated, as the kernel allows). The
/// kernel only reads through it; `chars` is `'static`, so the pointer never dangles.
pub(crate) fn unicode(chars: &'static [u16]) -> UNICODE_STRING {
    let bytes = (chars.len() * 2) as u16;
    UNICODE_STRING {
        Length: bytes,
        MaximumLength: bytes,
        Buffer: chars.as_ptr().cast_mut(),
    }
}
