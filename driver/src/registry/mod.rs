//! Registry values: the two direct-path gates and VeraCrypt's legacy tunables.
//!
//! Owns: every registry value name (defined once, REVIEW.md R5), their strict parsing (R8),
//! VeraCrypt's clamps, and the snapshot semantics of the gates (R6).
//! Never: reads the registry itself (the `wdm` glue does, with ZwQueryValueKey, and hands the
//! raw type and bytes to the parsers here).

/// The direct-path gates of one volume, copied at mount (REVIEW.md R6).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Gates {
    /// `VeraCryptEnableMountedVolumeFastReadIo` was exactly REG_DWORD 1.
    pub read: bool,
    /// `VeraCryptEnableMountedVolumeFastWriteIo` was exactly REG_DWORD 1.
    pub write: bool,
}

/// VeraCrypt's legacy queue tunables, after its clamps (DESIGN.md §4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tunables {
    /// Fragment size in bytes (`VeraCryptEncryptionFragmentSize`, KiB in the registry).
    pub fragment_size: u32,
    /// Request pool size (`VeraCryptEncryptionIoRequestCount`).
    pub io_request_count: u32,
    /// Item pool size: upper requests in flight (`VeraCryptEncryptionItemCount`).
    pub item_count: u32,
    /// CPUs left free of encryption threads (`VeraCryptEncryptionFreeCpuCount`).
    pub free_cpu_count: u32,
    /// Work items for deferred completion (`VeraCryptEncryptionMaxWorkItems`).
    pub max_work_items: u32,
}

impl Default for Tunables {
    fn default() -> Self {
        Tunables {
            fragment_size: 256 * 1024,
            io_request_count: 16,
            item_count: 8,
            free_cpu_count: 0,
            max_work_items: 1024,
        }
    }
}
