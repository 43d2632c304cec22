use super::layout::*;
use super::*;
use crate::cuda::family::{Family, SiteType};
use crate::lattice::{Boundary, Connectivity};

fn job(height: usize, width: usize) -> Job {
    Job {
        site: SiteType::U8,
        height,
        width,
        connectivity: Connectivity::Four,
        boundary: Boundary::Open,
        segments: false,
        family: Family::BitRuns,
        numbering: Numbering::Canonical,
        labels: LabelWidth::U32,
        short_tiles: false,
        write_once: false,
    }
}

/// The analysis tile pass keeps two blocks per multiprocessor on H100/H200 (227 KB opt-in),
/// three in bands, and fits a 99 KB device with fewer accumulators; without room for its own
/// mask and scan it does not run at all.
#[test]
fn analysis_shared_memory() {
    let h100 = ana_slots(227 * 1024, false).unwrap();
    assert_eq!(h100, 668);
    assert!(ana_shared_bytes(h100, false) <= ANA_SHARED_TARGET);
    assert!(2 * (ana_shared_bytes(h100, false) + 1024) <= 228 * 1024);
    let band = ana_slots(227 * 1024, true).unwrap();
    assert!(band >= 512 && 3 * (ana_shared_bytes(band, true) + 1024) <= 228 * 1024);
    let ada = ana_slots(99 * 1024, false).unwrap();
    assert!(ada >= ANA_MIN_SLOTS as u32 && ana_shared_bytes(ada, false) <= 99 * 1024);
    assert_eq!(ana_slots(shared_bytes(false, 32, false), false), None);
    assert_eq!(ana_slots(64 * 1024, false), None);
    // Counting sizes, the histogram (HIST_CAP + 1 words) takes accumulators' room, within the
    // same allowance, and is given up where too few accumulators would remain.
    for (slots, bands) in [(h100, false), (band, true), (ada, false)] {
        let fewer = direct_hist_slots(slots).unwrap();
        assert_eq!(
            ana_launch_bytes(fewer, true, bands),
            ana_shared_bytes(slots, bands)
        );
        assert!(
            (slots - fewer) as usize * ANA_SLOT_BYTES >= (crate::cuda::analysis::HIST_CAP + 1) * 4
        );
        assert_eq!(
            ana_launch_bytes(slots, false, bands),
            ana_shared_bytes(slots, bands)
        );
    }
    assert_eq!(direct_hist_slots(ANA_MIN_SLOTS as u32), None);
}

/// Short tiles go to 4-connected labelings (8-connected ones take bands in tall tiles), need
/// less shared memory, and only labeling jobs of occupancy into 32-bit labels take them; their
/// module has its own key and define.
#[test]
fn short_tiles_for_four_connected() {
    use crate::cuda::runtime::ModuleSpec;
    assert!(short_tiles(false) && !short_tiles(true));
    assert_eq!(
        (
            tile_h(false, true),
            tile_h(true, false),
            tile_h(false, false)
        ),
        (16, 16, 32)
    );
    assert!(shared_bytes(false, 16, false) < shared_bytes(false, 32, false));
    // Bands and short tiles (`LOCAL_MINB` 4 in `bit_runs.cu`): four fit a multiprocessor of
    // 228 KB (1 KB reserved a block), tall rows two.
    let (band, short) = (
        shared_bytes(false, 32, true),
        shared_bytes(false, 16, false),
    );
    let rows = shared_bytes(false, 32, false);
    assert!(4 * (band.max(short) + 1024) <= 228 * 1024 && 3 * (rows + 1024) > 228 * 1024);
    assert_eq!(
        [max_nodes(false, 32, true), max_nodes(false, 16, false)],
        [8192, 8192]
    );
    assert_eq!(
        [max_nodes(false, 32, false), max_nodes(true, 16, false)],
        [16384, 16384]
    );
    // Bands: 8-connected occupancy into 32-bit labels in tall tiles only.
    let eight = Job {
        connectivity: Connectivity::Eight,
        ..job(64, 64)
    };
    assert!(bands(&eight.key()) && !bands(&job(64, 64).key()));
    for other in [
        Job {
            short_tiles: true,
            ..eight
        },
        Job {
            segments: true,
            ..eight
        },
        Job {
            labels: LabelWidth::U64,
            ..eight
        },
    ] {
        assert!(!bands(&other.key()));
    }
    // The module's `br_local` room follows its key: bands, short tiles, tall rows.
    let short4 = Job {
        short_tiles: true,
        ..job(64, 64)
    };
    assert_eq!(
        [
            local_bytes(&eight.key()),
            local_bytes(&short4.key()),
            local_bytes(&job(64, 64).key())
        ],
        [band, short, rows]
    );
    let short = Job {
        short_tiles: true,
        ..job(2048, 2048)
    };
    assert_eq!(tiles(&short), (2, 128));
    assert_eq!(tiles(&job(2048, 2048)), (2, 64));
    let (tall, short) = (job(64, 64).key(), short.key());
    assert_ne!(tall.key(), short.key());
    assert!(short.source().contains("#define SHORT_TILES 1\n"));
    assert!(!tall.source().contains("SHORT_TILES"));
}

/// Labels are written once where a lattice has at least three tall tiles a multiprocessor
/// (occupancy; segments always), and then the scratch holds, after the masks, each tile's row bases and room for as many runs as
/// it can have (`RT_TILE` in the kernel): half its sites for occupancy, all of them for
/// segments.
#[test]
fn write_once_scratch() {
    // An H200's 132 multiprocessors: 4096² has 512 tall tiles, 2816² 264.
    assert!(write_once(false, 4096, 4096, 132) && !write_once(false, 2816, 2816, 132));
    assert!(!write_once(false, 2048, 2048, 132) && write_once(true, 64, 64, 132));
    let plain = job(100, 3000);
    let once = Job {
        write_once: true,
        ..plain
    };
    let tiles = 4 * 3; // ceil(100 / 32) × ceil(3000 / 1024)
    assert_eq!(scratch_words(&plain), masks_words(&plain));
    assert_eq!(
        run_roots_word(&once),
        masks_words(&plain).next_multiple_of(4)
    );
    assert_eq!(
        scratch_words(&once),
        run_roots_word(&once) + (tiles * (32 + 32 * 1024 / 2)) / 2
    );
    let segments = Job {
        segments: true,
        ..once
    };
    let tiles = 7 * 3; // 16-row tiles
    assert_eq!(
        scratch_words(&segments) - run_roots_word(&segments),
        (tiles * (16 + 16 * 1024)) / 2
    );
}

/// The 64-bit build takes 70000² and refuses what its 32-bit grid and mask indices cannot
/// address, with a typed error; the 32-bit scratch layout is what it was plus the analysis's
/// per-word root counts, and the 64-bit chunk ranks are 8-byte aligned, two words each.
#[test]
fn wide_limits_and_scratch() {
    let wide = |h, w| Job {
        labels: LabelWidth::U64,
        ..job(h, w)
    };
    assert!(check_wide(&wide(70000, 70000)).is_ok());
    assert!(check_wide(&wide(1, (1 << 31) - 1)).is_ok());
    for (h, w) in [(1, 1 << 31), (1 << 31, 1), (1 << 27, 1024), (usize::MAX, 2)] {
        match check_wide(&wide(h, w)) {
            Err(crate::Error::InvalidArgument(m)) => assert!(m.contains("2^31"), "{m}"),
            other => panic!("{h}×{w}: {other:?}"),
        }
    }
    assert!(check_wide(&wide((1 << 27) - 1, 1024)).is_ok());
    for (h, w) in [(1, 1), (3, 1025), (33, 70000), (70000, 70000)] {
        let (narrow, wide) = (job(h, w), wide(h, w));
        let entries = h * w.div_ceil(TILE_W);
        let chunks = entries.div_ceil(COUNT_CHUNK);
        // Masks, counts, chunk ranks, then the per-word root counts (PRE, 32-bit only).
        assert_eq!(
            scratch_words(&narrow),
            65 * entries + chunks.next_multiple_of(4) + 16 * entries
        );
        assert_eq!(chunk_word(&narrow), 65 * entries);
        assert_eq!(pre_word(&narrow), 65 * entries + chunks.next_multiple_of(4));
        assert_eq!(pre_words(&wide), 0);
        assert_eq!(chunk_word(&wide) % 2, 0);
        assert!(chunk_word(&wide) >= 65 * entries);
        assert_eq!(
            masks_words(&wide),
            chunk_word(&wide) + (2 * chunks).next_multiple_of(4)
        );
        let raw = Job {
            numbering: Numbering::Raw,
            ..wide
        };
        assert_eq!(masks_words(&raw), 32 * entries);
        // The local roots: a u16 a site, 16-byte aligned after the masks.
        for j in [wide, raw] {
            let at = local_roots_word(&j);
            assert!(at % 4 == 0 && at >= masks_words(&j) && at < masks_words(&j) + 4);
            assert!((scratch_words(&j) - at) * 4 >= 2 * h * w);
            assert!((scratch_words(&j) - at) * 4 < 2 * h * w + 16);
        }
    }
}

/// Every tile row holds at most ceil(columns / 2) runs, each at most one component.
#[test]
fn record_capacity_bounds_the_runs() {
    assert_eq!(record_capacity(&job(1, 1)), 1);
    assert_eq!(record_capacity(&job(3, 1024)), 3 * 512);
    assert_eq!(record_capacity(&job(2, 1025)), 2 * (512 + 1));
    assert_eq!(record_capacity(&job(5, 2049)), 5 * (1024 + 1));
}

/// `br_flatten` spreads a small lattice's root-mask words over up to 8 threads each, about 2^20
/// threads in all, and keeps one thread a word where there are that many words already.
#[test]
fn flatten_threads_per_word() {
    use super::flatten_split;
    // 2048² in short tiles: 2048 rows × 2 tile columns of 32 words.
    assert_eq!(flatten_split(2048 * 2), 3);
    assert_eq!(flatten_split(4096 * 4), 1);
    assert_eq!(flatten_split(16384 * 16), 0);
    assert_eq!(flatten_split(1), 3);
    assert_eq!(flatten_split(u32::MAX / 32), 0);
}

/// `br_merge`'s grid: two columns a thread on the row seams of large 4-connected lattices, the
/// rows' and columns' seams in one launch with no y block left without a seam, and a launch of
/// one kind alone where the other has none.
#[test]
fn merge_grid_has_no_idle_blocks() {
    let sms = 132;
    let four = Job {
        short_tiles: true,
        ..job(16384, 16384)
    };
    let eight = Job {
        connectivity: Connectivity::Eight,
        ..job(16384, 16384)
    };
    let torus = Job {
        boundary: Boundary::Periodic,
        ..four
    };
    // (job, w, h, tiles across, tiles down) → (mode, row blocks, columns a thread, grid).
    let cases = [
        // 1023 row seams (16-row tiles) and 15 column seams; the torus adds one of each.
        ((four, 16384, 16384, 16, 1024), (2, 1023, 2, (64, 1038, 1))),
        ((torus, 16384, 16384, 16, 1024), (2, 1024, 2, (64, 1040, 1))),
        // 8192²: 511 seams of 8192 sites (16 a resident thread), two columns; 4096²: 255 of
        // 4096 (about 4), one.
        ((four, 8192, 8192, 8, 512), (2, 511, 2, (32, 518, 1))),
        ((four, 4096, 4096, 4, 256), (2, 255, 1, (16, 258, 1))),
        ((eight, 16384, 16384, 16, 512), (2, 511, 1, (64, 526, 1))),
        // One tile column: rows only; one tile row: columns only; one tile: no launch.
        ((four, 1000, 1000, 1, 63), (0, 0, 1, (4, 62, 1))),
        ((four, 3000, 16, 3, 1), (1, 0, 1, (1, 2, 1))),
        ((four, 16, 1000, 1, 1), (0, 0, 1, (0, 0, 0))),
    ];
    for ((job, w, h, tx, ty), want) in cases {
        assert_eq!(merge_grid(&job, w, h, tx, ty, sms), want, "{w}×{h}");
    }
    let threshold = MERGE_PAIRS_PER_THREAD * 2048 * sms as u64;
    assert_eq!(merge_cols(&four, threshold, sms), 2);
    assert_eq!(merge_cols(&four, threshold - 1, sms), 1);
    let wide = Job {
        labels: LabelWidth::U64,
        ..four
    };
    for other in [eight, wide] {
        assert_eq!(merge_cols(&other, u64::MAX, sms), 1);
    }
}
