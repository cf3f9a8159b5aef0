//! Segmentation: how a request's byte range is cut into host transfers. One function serves
//! both paths: the legacy queue cuts by its fragment size, the direct path by the host's
//! limits (maximum transfer, physical pages from the buffer's page offset, alignment).

use crate::platform::HostLimits;

/// Largest request the direct path accepts (and largest direct segment).
pub const MAX_DIRECT_REQUEST: u32 = 1 << 20;

/// What bounds one segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SegmentLimits {
    /// Maximum bytes per segment.
    pub max_bytes: u32,
    /// Maximum physical pages per segment (`u32::MAX`: unbounded).
    pub max_pages: u32,
    /// Page size for the page count.
    pub page_size: u32,
    /// Segments are multiples of this (the sector size).
    pub granularity: u32,
}

impl SegmentLimits {
    /// The direct path's limits on a host: min(max transfer, pages, 1 MiB), whole sectors.
    pub fn direct(host: &HostLimits, sector_size: u32) -> Self {
        SegmentLimits {
            max_bytes: host.max_transfer.min(MAX_DIRECT_REQUEST),
            max_pages: host.max_physical_pages,
            page_size: host.page_size.max(1),
            granularity: sector_size.max(host.alignment_mask + 1).max(512),
        }
    }

    /// The legacy queue's fragments: `fragment_size` bytes, no page bound.
    pub fn fragments(fragment_size: u32, sector_size: u32) -> Self {
        SegmentLimits {
            max_bytes: fragment_size,
            max_pages: u32::MAX,
            page_size: 4096,
            granularity: sector_size.max(512),
        }
    }

    /// The longest segment [`SegmentLimits::next_len`] can return for a buffer that starts on
    /// a page boundary (an engine buffer: the direct path's write bounce buffers are sized by
    /// this, and a write segment is cut by `next_len` at page offset 0, so the two agree by
    /// construction: `next_len` never grows when fewer bytes remain).
    pub fn largest_aligned(&self) -> usize {
        self.next_len(usize::MAX, 0)
    }

    /// Length of the next segment: `remaining` bytes are left and the segment's buffer starts
    /// at address `buffer_address`. Always at least one granule when `remaining` is non-zero.
    pub fn next_len(&self, remaining: usize, buffer_address: usize) -> usize {
        let mut len = remaining.min(self.max_bytes as usize);
        if self.max_pages != u32::MAX {
            let page = self.page_size as usize;
            let offset_in_page = buffer_address % page;
            let by_pages = (self.max_pages as usize)
                .saturating_mul(page)
                .saturating_sub(offset_in_page);
            len = len.min(by_pages);
        }
        let g = self.granularity as usize;
        len -= len % g;
        if len == 0 {
            len = g.min(remaining);
        }
        len
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;
    use alloc::vec::Vec;

    fn host(max_transfer: u32, pages: u32, align: u32) -> HostLimits {
        HostLimits {
            sector_size: 512,
            max_transfer,
            max_physical_pages: pages,
            alignment_mask: align,
            page_size: 4096,
        }
    }

    fn cut(limits: SegmentLimits, len: usize, addr: usize) -> Vec<usize> {
        let mut out = Vec::new();
        let mut pos = 0;
        while pos < len {
            let n = limits.next_len(len - pos, addr + pos);
            out.push(n);
            pos += n;
        }
        out
    }

    #[test]
    fn max_transfer_64k_and_128k_cut_a_1mib_request() {
        let l = SegmentLimits::direct(&host(64 << 10, u32::MAX, 0), 512);
        assert_eq!(cut(l, 1 << 20, 0), vec![64 << 10; 16]);
        let l = SegmentLimits::direct(&host(128 << 10, u32::MAX, 0), 512);
        assert_eq!(cut(l, 1 << 20, 0), vec![128 << 10; 8]);
    }

    #[test]
    fn seventeen_pages_at_an_odd_page_offset() {
        // 17 pages hold 68 KiB from a page boundary, 68 KiB - 512 from offset 512.
        let l = SegmentLimits::direct(&host(1 << 20, 17, 0), 512);
        assert_eq!(l.next_len(1 << 20, 0), 17 * 4096);
        assert_eq!(l.next_len(1 << 20, 512), 17 * 4096 - 512);
        // Every segment respects the page bound wherever it starts.
        for addr in [0usize, 512, 1024, 3584] {
            let mut pos = 0;
            for n in cut(l, 1 << 20, addr) {
                let first_page = (addr + pos) / 4096;
                let last_page = (addr + pos + n - 1) / 4096;
                assert!(last_page - first_page < 17, "segment spans too many pages");
                pos += n;
            }
            assert_eq!(pos, 1 << 20);
        }
    }

    #[test]
    fn alignment_4k_makes_segments_whole_4k() {
        let l = SegmentLimits::direct(&host(100 * 1024 + 512, u32::MAX, 4095), 512);
        assert_eq!(l.next_len(1 << 20, 0), 100 * 1024);
    }

    #[test]
    fn never_more_than_1mib() {
        let l = SegmentLimits::direct(&host(u32::MAX, u32::MAX, 0), 512);
        assert_eq!(l.next_len(8 << 20, 0), 1 << 20);
    }

    /// Hosts with 128 KiB and 1 MiB maximum transfer, odd page limits and alignments: no write
    /// segment (cut at page offset 0, whatever is left of a request up to 1 MiB) is longer than
    /// the bounce buffer `largest_aligned` sizes.
    #[test]
    fn a_write_segment_never_exceeds_the_largest_aligned_segment() {
        let mut seen_equal = 0;
        for max_transfer in [128 << 10, (128 << 10) + 512, 1 << 20, u32::MAX] {
            for pages in [u32::MAX, 1, 17, 33, 255, 257] {
                for align in [0, 1, 511, 4095] {
                    for sector in [512, 4096] {
                        let l = SegmentLimits::direct(&host(max_transfer, pages, align), sector);
                        let largest = l.largest_aligned();
                        assert!(
                            largest <= MAX_DIRECT_REQUEST as usize
                                || largest == l.granularity as usize
                        );
                        for remaining in (sector as usize..=1 << 20).step_by(sector as usize * 7) {
                            let n = l.next_len(remaining, 0);
                            assert!(n <= largest, "{n} > {largest} for {l:?}");
                            seen_equal += usize::from(n == largest);
                        }
                    }
                }
            }
        }
        assert!(seen_equal > 0, "the bound is reached, so it is not loose");
    }

    #[test]
    fn largest_aligned_on_128k_and_1m_hosts() {
        let l = SegmentLimits::direct(&host(128 << 10, u32::MAX, 0), 512);
        assert_eq!(l.largest_aligned(), 128 << 10);
        let l = SegmentLimits::direct(&host(1 << 20, 17, 0), 512);
        assert_eq!(l.largest_aligned(), 17 * 4096);
        let l = SegmentLimits::direct(&host(u32::MAX, u32::MAX, 0), 4096);
        assert_eq!(l.largest_aligned(), 1 << 20);
    }

    #[test]
    fn legacy_fragments_of_256k() {
        let l = SegmentLimits::fragments(256 << 10, 512);
        assert_eq!(cut(l, (256 << 10) + 512, 3), vec![256 << 10, 512]);
    }
}
