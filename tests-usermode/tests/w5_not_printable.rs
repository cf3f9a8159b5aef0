//! W5: the engine's key holders are neither `Debug` nor `Display`, checked at compile time for
//! a concrete platform (the engine checks its non-generic key types in `vcdirect::secret`).
//! This file has no test function: it fails to compile if the check fails.

use vcdirect::crypto::VolumeKey;
use vcdirect::volume::Volume;
use vcdirect_usermode::host::MemoryHost;
use vcdirect_usermode::std_platform::StdPlatform;

vcdirect::assert_not_printable!(
    VolumeKey<StdPlatform<MemoryHost>>,
    Volume<StdPlatform<MemoryHost>>,
);
