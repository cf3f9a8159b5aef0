//! Every registry name vcdirect reads, defined once (docs/review.md R5).
//!
//! The names are spelled by macros so that the `reg add` command lines below are built from the
//! very same literals the parser looks up: docs and tests compare against these constants.

macro_rules! service_name {
    () => {
        "vcdirect"
    };
}
macro_rules! service_key_tail {
    () => {
        concat!("SYSTEM\\CurrentControlSet\\Services\\", service_name!())
    };
}
macro_rules! read_gate_name {
    () => {
        "VeraCryptEnableMountedVolumeFastReadIo"
    };
}
macro_rules! write_gate_name {
    () => {
        "VeraCryptEnableMountedVolumeFastWriteIo"
    };
}

/// The driver's service name (INF `AddService`, `sc start vcdirect`).
pub const SERVICE_NAME: &str = service_name!();

/// The service key as users type it (`reg add`, regedit).
pub const SERVICE_KEY: &str = concat!("HKLM\\", service_key_tail!());

/// The service key as the kernel opens it (`ZwOpenKey` object name).
pub const SERVICE_KEY_NT: &str = concat!("\\Registry\\Machine\\", service_key_tail!());

/// Read gate: direct reads on mounted raw volumes when exactly REG_DWORD 1.
pub const READ_GATE_VALUE: &str = read_gate_name!();

/// Write gate: direct writes on mounted raw volumes when exactly REG_DWORD 1.
pub const WRITE_GATE_VALUE: &str = write_gate_name!();

/// The command that turns the read gate on (README, `vcctl` help).
pub const ENABLE_READ_GATE_COMMAND: &str = concat!(
    "reg add HKLM\\",
    service_key_tail!(),
    " /v ",
    read_gate_name!(),
    " /t REG_DWORD /d 1"
);

/// The command that turns the write gate on (README, `vcctl` help).
pub const ENABLE_WRITE_GATE_COMMAND: &str = concat!(
    "reg add HKLM\\",
    service_key_tail!(),
    " /v ",
    write_gate_name!(),
    " /t REG_DWORD /d 1"
);

/// Legacy fragment size in KiB (VeraCrypt's name).
pub const FRAGMENT_SIZE_VALUE: &str = "VeraCryptEncryptionFragmentSize";
/// Legacy request pool size (VeraCrypt's name).
pub const IO_REQUEST_COUNT_VALUE: &str = "VeraCryptEncryptionIoRequestCount";
/// Legacy item pool size (VeraCrypt's name).
pub const ITEM_COUNT_VALUE: &str = "VeraCryptEncryptionItemCount";
/// CPUs kept free of encryption threads (VeraCrypt's name).
pub const FREE_CPU_COUNT_VALUE: &str = "VeraCryptEncryptionFreeCpuCount";
/// Deferred-completion work items (VeraCrypt's name).
pub const MAX_WORK_ITEMS_VALUE: &str = "VeraCryptEncryptionMaxWorkItems";

/// Every value name the driver reads, for the glue that queries them all at once.
pub const ALL_VALUE_NAMES: [&str; 7] = [
    READ_GATE_VALUE,
    WRITE_GATE_VALUE,
    FRAGMENT_SIZE_VALUE,
    IO_REQUEST_COUNT_VALUE,
    ITEM_COUNT_VALUE,
    FREE_CPU_COUNT_VALUE,
    MAX_WORK_ITEMS_VALUE,
];

/// Registry value types (winnt.h `REG_*`), as `ZwQueryValueKey` reports them.
pub mod reg_type {
    /// No type.
    pub const REG_NONE: u32 = 0;
    /// UTF-16 string.
    pub const REG_SZ: u32 = 1;
    /// UTF-16 string with environment references.
    pub const REG_EXPAND_SZ: u32 = 2;
    /// Raw bytes.
    pub const REG_BINARY: u32 = 3;
    /// 32-bit little-endian number: the only type a gate or tunable accepts.
    pub const REG_DWORD: u32 = 4;
    /// 32-bit big-endian number.
    pub const REG_DWORD_BIG_ENDIAN: u32 = 5;
    /// Symbolic link.
    pub const REG_LINK: u32 = 6;
    /// List of UTF-16 strings.
    pub const REG_MULTI_SZ: u32 = 7;
    /// 64-bit little-endian number.
    pub const REG_QWORD: u32 = 11;

    /// The winnt.h name of a type, for log lines.
    pub const fn name(value_type: u32) -> Option<&'static str> {
        Some(match value_type {
            REG_NONE => "REG_NONE",
            REG_SZ => "REG_SZ",
            REG_EXPAND_SZ => "REG_EXPAND_SZ",
            REG_BINARY => "REG_BINARY",
            REG_DWORD => "REG_DWORD",
            REG_DWORD_BIG_ENDIAN => "REG_DWORD_BIG_ENDIAN",
            REG_LINK => "REG_LINK",
            REG_MULTI_SZ => "REG_MULTI_SZ",
            8 => "REG_RESOURCE_LIST",
            9 => "REG_FULL_RESOURCE_DESCRIPTOR",
            10 => "REG_RESOURCE_REQUIREMENTS_LIST",
            REG_QWORD => "REG_QWORD",
            _ => return None,
        })
    }
}
