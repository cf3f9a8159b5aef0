//! Key material is never printable (docs/review.md W5).
//!
//! Owns: [`assert_not_printable!`](crate::assert_not_printable), a compile-time check that a
//! type implements neither `Debug` nor `Display`, and its use on the engine's key types.
//! Never: holds or wipes keys (their owners do, with `zeroize`).

/// Fails to compile if the type implements `core::fmt::Debug` or `core::fmt::Display`.
///
/// How: a helper trait gets a blanket impl for every type and a second one, under another
/// type parameter, for every `Debug` (then `Display`) type. Naming the trait's item with the
/// parameter inferred is ambiguous, which is a compile error, exactly when both impls apply.
#[macro_export]
macro_rules! assert_not_printable {
    ($($t:ty),+ $(,)?) => {
        $(
            const _: fn() = || {
                trait AmbiguousIfDebug<A> {
                    fn some_item() {}
                }
                impl<T: ?Sized> AmbiguousIfDebug<()> for T {}
                #[allow(dead_code)]
                struct IsDebug;
                impl<T: ?Sized + core::fmt::Debug> AmbiguousIfDebug<IsDebug> for T {}
                let _ = <$t as AmbiguousIfDebug<_>>::some_item;

                trait AmbiguousIfDisplay<A> {
                    fn some_item() {}
                }
                impl<T: ?Sized> AmbiguousIfDisplay<()> for T {}
                #[allow(dead_code)]
                struct IsDisplay;
                impl<T: ?Sized + core::fmt::Display> AmbiguousIfDisplay<IsDisplay> for T {}
                let _ = <$t as AmbiguousIfDisplay<_>>::some_item;
            };
        )+
    };
}

// The engine's types that hold a master key or round keys. `VolumeKey<P>` holds a
// `VolumeCipher` and derives nothing; its check for a concrete platform is in tests-usermode.
assert_not_printable!(
    crate::abi::MasterKey,
    crate::abi::MountRequest,
    crate::crypto::XtsCipher,
    crate::crypto::VolumeCipher,
    crate::crypto::ciphers::Serpent,
    crate::crypto::ciphers::Twofish,
    crate::crypto::ciphers::Camellia256,
    crate::crypto::ciphers::Kuznyechik,
    crate::crypto::KeyBlock,
    vcdirect_aes_hw::XtsKeys,
);
