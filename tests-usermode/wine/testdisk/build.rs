//! Emits the WDM linker arguments (/DRIVER, /SUBSYSTEM:NATIVE, /ENTRY:DriverEntry, the
//! ntoskrnl/hal import libraries) that wdk-build derives from this crate's WDK metadata.

fn main() -> Result<(), wdk_build::ConfigError> {
    wdk_build::configure_wdk_binary_build()
}
