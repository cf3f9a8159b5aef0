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
    /// Every segment is a whole number of these (the sector size).
    pub sector: u32,
    /// Where a request must be split, the split falls so that the next segment's buffer starts
    /// on a multiple of this (the host's alignment mask + 1; 1: anywhere). It bounds where a
    /// split falls, never the length of a remainder the host takes whole.
    pub alignment: u32,
}

impl SegmentLimits {
    /// The direct path's limits on a host: min(max transfer, pages, 1 MiB), whole sectors,
    /// splits that keep the buffer aligned to the host's alignment.
    pub fn direct(host: &HostLimits, sector_size: u32) -> Self {
        SegmentLimits {
            max_bytes: host.max_transfer.min(MAX_DIRECT_REQUEST),
            max_pages: host.max_physical_pages,
            page_size: host.page_size.max(1),
            sector: sector_size.max(host.sector_size).max(512),
            alignment: host.alignment_mask.saturating_add(1),
        }
    }

    /// The legacy queue's fragments: `fragment_size` bytes, whole sectors, no page or
    /// alignment bound.
    pub fn fragments(fragment_size: u32, sector_size: u32) -> Self {
        SegmentLimits {
            max_bytes: fragment_size,
            max_pages: u32::MAX,
            page_size: 4096,
            sector: sector_size.max(512),
            alignment: 1,
        }
    }

    /// The most bytes one segment whose buffer starts at `buffer_address` may hold: the
    /// maximum transfer and the physical pages from the buffer's page offset.
    fn room(&self, buffer_address: usize) -> usize {
        let mut room = self.max_bytes as usize;
        if self.max_pages != u32::MAX {
            let page = self.page_size.max(1) as usize;
            let by_pages = (self.max_pages as usize)
                .saturating_mul(page)
                .saturating_sub(buffer_address % page);
            room = room.min(by_pages);
        }
        room
    }

    /// The longest segment [`SegmentLimits::next_len`] can return for a buffer that starts on
    /// a page boundary (an engine buffer: the direct path's write bounce buffers are sized by
    /// this, and a write segment is cut by `next_len` at page offset 0): the room at page
    /// offset 0 in whole sectors, as a remainder that fits is taken whole, and at least one
    /// sector, as `next_len` never returns less when that much remains.
    pub fn largest_aligned(&self) -> usize {
        let sector = self.sector.max(1) as usize;
        let room = self.room(0);
        (room - room % sector).max(sector)
    }

    /// Length of the next segment: `remaining` bytes are left and the segment's buffer starts
    /// at address `buffer_address`. A remainder within the room (maximum transfer, pages) is
    /// one segment, in whole sectors. Otherwise the segment is the longest whole number of
    /// sectors within the room after which the next buffer address is a multiple of the
    /// alignment (so every segment of an aligned buffer stays aligned); when no such split
    /// fits (an alignment larger than the room), the room in whole sectors. Always at least
    /// one sector (or `remaining`, if less) when `remaining` is non-zero.
    pub fn next_len(&self, remaining: usize, buffer_address: usize) -> usize {
        let sector = self.sector.max(1) as usize;
        let whole = |n: usize| n - n % sector;
        let room = self.room(buffer_address);
        let len = if remaining <= room {
            whole(remaining)
        } else {
            let align = self.alignment.max(1) as usize;
            let end = buffer_address.saturating_add(room);
            let aligned_end = end - end % align;
            match whole(aligned_end.saturating_sub(buffer_address)) {
                0 => whole(room),
                n => n,
            }
        };
        if len == 0 {
            sector.min(remaining)
        } else {
            len
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;
    use alloc::vec::Vec;
    use proptest::prelude::*;

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
    fn alignment_4k_puts_splits_on_4k_boundaries_not_lengths() {
        let l = SegmentLimits::direct(&host(100 * 1024 + 512, u32::MAX, 4095), 512);
        // A split keeps the next buffer 4 KiB aligned...
        assert_eq!(l.next_len(1 << 20, 0), 100 * 1024);
        // ...but what the host takes whole is one segment.
        assert_eq!(l.next_len(100 * 1024 + 512, 0), 100 * 1024 + 512);
        assert_eq!(
            cut(l, 200 * 1024 + 512, 0),
            vec![100 * 1024, 100 * 1024 + 512]
        );
        assert_eq!(l.largest_aligned(), 100 * 1024 + 512);
    }

    /// A 6,144-byte request into an aligned buffer on a 512-byte-sector host
    /// with a 4 KiB alignment is one segment (it was 4,096 + 2,048).
    #[test]
    fn an_aligned_6144_byte_request_is_one_segment_on_a_4k_aligned_host() {
        for pages in [u32::MAX, 2, 17] {
            let l = SegmentLimits::direct(&host(u32::MAX, pages, 4095), 512);
            assert_eq!(cut(l, 6144, 0), vec![6144], "{l:?}");
            assert_eq!(cut(l, 6144, 8192), vec![6144], "{l:?}");
        }
        // Odd sector counts too, on the same host.
        let l = SegmentLimits::direct(&host(u32::MAX, u32::MAX, 4095), 512);
        for sectors in 1..=64 {
            assert_eq!(cut(l, sectors * 512, 4096), vec![sectors * 512]);
        }
    }

    /// Split requests keep every segment's buffer on the host's alignment and every segment
    /// whole sectors, the last one (a remainder the host takes whole) included.
    #[test]
    fn split_requests_keep_every_segment_aligned_and_whole_sectors() {
        /// (max transfer, pages, alignment mask, sector, buffer address, length, want)
        type Case = (u32, u32, u32, u32, usize, usize, Vec<usize>);
        let cases: [Case; 5] = [
            // 17 pages from 512 bytes into a page: the room (68 KiB - 512) ends 512-aligned, so
            // the first split takes all of it; the later buffers start on a page boundary.
            (
                1 << 20,
                17,
                511,
                512,
                512,
                150 << 10,
                vec![(68 << 10) - 512, 68 << 10, (14 << 10) + 512],
            ),
            // 4 KiB alignment, 17 pages: whole 68 KiB splits, the rest whole.
            (
                1 << 20,
                17,
                4095,
                512,
                0,
                (200 << 10) + 512,
                vec![68 << 10, 68 << 10, (64 << 10) + 512],
            ),
            // A 127.5 KiB maximum transfer and 4 KiB alignment: splits at 124 KiB.
            (
                (128 << 10) - 512,
                u32::MAX,
                4095,
                512,
                4096,
                256 << 10,
                vec![124 << 10, 124 << 10, 8 << 10],
            ),
            // 4 KiB sectors, 512-byte alignment: splits and lengths in whole 4 KiB.
            (
                (64 << 10) + 2048,
                u32::MAX,
                511,
                4096,
                512,
                136 << 10,
                vec![64 << 10, 64 << 10, 8 << 10],
            ),
            // An alignment larger than the room (8 KiB on a 6 KiB host): no aligned split fits
            // the first room, so it is taken in whole sectors; the next split is back on 8 KiB.
            (
                6144,
                u32::MAX,
                8191,
                512,
                0,
                14 << 10,
                vec![6144, 2048, 6144],
            ),
        ];
        for (max_transfer, pages, mask, sector, addr, len, want) in cases {
            let mut h = host(max_transfer, pages, mask);
            h.sector_size = sector;
            let l = SegmentLimits::direct(&h, sector);
            let got = cut(l, len, addr);
            assert_eq!(got, want, "{l:?} at {addr}");
            let mut at = addr;
            for n in &got {
                assert_eq!(n % sector as usize, 0, "{l:?}");
                if mask < max_transfer {
                    assert_eq!(at % (mask as usize + 1), 0, "{l:?}: {got:?}");
                }
                at += n;
            }
        }
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
                            largest <= MAX_DIRECT_REQUEST as usize || largest == l.sector as usize
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

    /// Where the test's host requires alignment, the buffer starts aligned (the direct path
    /// takes no other); otherwise anywhere. At least 2 pages and one aligned split per room,
    /// as every host has.
    fn limits_and_buffer() -> impl Strategy<Value = (SegmentLimits, usize)> {
        (
            512u32..=(2 << 20),
            prop_oneof![Just(u32::MAX), 2u32..=300],
            prop_oneof![Just(0u32), Just(1), Just(511), Just(4095), Just(8191)],
            prop_oneof![Just(512u32), Just(4096)],
            0usize..(1 << 20),
        )
            .prop_filter_map(
                "an aligned split fits the room",
                |(max_transfer, pages, mask, sector, addr)| {
                    let mut h = host(max_transfer.max(sector), pages, mask);
                    h.sector_size = sector;
                    let align = mask as usize + 1;
                    let min_room = (max_transfer as usize)
                        .min((pages as usize).saturating_sub(1).saturating_mul(4096));
                    (align <= min_room)
                        .then(|| (SegmentLimits::direct(&h, sector), addr - addr % align))
                },
            )
    }

    proptest! {
        /// Segments cover the request exactly, each within the maximum transfer and physical
        /// pages, whole sectors, aligned where the host requires; only a remainder the host
        /// cannot take whole is split; a segment cut at page offset 0 (a write's bounce buffer)
        /// is never longer than `largest_aligned`.
        #[test]
        fn segments_cover_the_request_within_the_limits(
            (l, addr) in limits_and_buffer(),
            sectors in 1usize..=2048,
        ) {
            let sector = l.sector as usize;
            let len = (sectors * sector).min(MAX_DIRECT_REQUEST as usize);
            let len = len - len % sector;
            prop_assume!(len > 0);
            let page = l.page_size as usize;
            let mut at = addr;
            let mut left = len;
            while left > 0 {
                let n = l.next_len(left, at);
                prop_assert!(n > 0 && n <= left && n % sector == 0, "{n} of {left}");
                prop_assert!(n <= l.max_bytes as usize, "{n} > {}", l.max_bytes);
                let pages = (at % page + n).div_ceil(page);
                prop_assert!(l.max_pages == u32::MAX || pages <= l.max_pages as usize);
                prop_assert_eq!(at % l.alignment as usize, 0, "segment at {} unaligned", at);
                if left <= l.room(at) {
                    prop_assert_eq!(n, left, "a remainder the host takes whole is split");
                }
                at += n;
                left -= n;
            }
            prop_assert_eq!(at, addr + len);
            let largest = l.largest_aligned();
            let mut left = len;
            while left > 0 {
                let n = l.next_len(left, 0);
                prop_assert!(n <= largest, "{} > {}", n, largest);
                left -= n;
            }
        }
    }
}
