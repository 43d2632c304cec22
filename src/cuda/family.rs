//! The kernel families: which exist, how each configuration is compiled (defines and
//! `#include`s of the embedded `kernels/` files) and which kernels each module holds — stated
//! here and in each family's file, so that the runtime below names no family.

use super::runtime::ModuleSpec;

/// Every kernel file, embedded: the programs `#include` them by these names.
pub(crate) const HEADERS: &[(&str, &str)] = &[
    ("common.cuh", include_str!("../../kernels/common.cuh")),
    ("canonical.cu", include_str!("../../kernels/canonical.cu")),
    ("analysis.cu", include_str!("../../kernels/analysis.cu")),
    (
        "analysis_row.cuh",
        include_str!("../../kernels/analysis_row.cuh"),
    ),
    ("perimeters.cu", include_str!("../../kernels/perimeters.cu")),
    (
        "bit_runs_records.cuh",
        include_str!("../../kernels/bit_runs_records.cuh"),
    ),
    ("bit_runs.cu", include_str!("../../kernels/bit_runs.cu")),
    (
        "block_union_find.cu",
        include_str!("../../kernels/block_union_find.cu"),
    ),
    ("ha4.cu", include_str!("../../kernels/ha4.cu")),
    (
        "label_equivalence.cu",
        include_str!("../../kernels/label_equivalence.cu"),
    ),
    ("regions.cu", include_str!("../../kernels/regions.cu")),
    ("tile_merge.cu", include_str!("../../kernels/tile_merge.cu")),
    (
        "percolation_batch.cu",
        include_str!("../../kernels/percolation_batch.cu"),
    ),
    (
        "swendsen_wang.cu",
        include_str!("../../kernels/swendsen_wang.cu"),
    ),
    ("strips.cu", include_str!("../../kernels/strips.cu")),
];

/// The site type of a lattice on the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum SiteType {
    U8,
    U16,
    U32,
}

impl SiteType {
    /// Bytes per site.
    pub(crate) fn size(self) -> usize {
        match self {
            SiteType::U8 => 1,
            SiteType::U16 => 2,
            SiteType::U32 => 4,
        }
    }
    pub(crate) fn c_name(self) -> &'static str {
        match self {
            SiteType::U8 => "unsigned char",
            SiteType::U16 => "unsigned short",
            SiteType::U32 => "unsigned int",
        }
    }
    /// The site type of `T` (one of `u8`, `u16`, `u32`: [`crate::SiteValue`] is sealed).
    pub(crate) fn of<T: crate::SiteValue>() -> SiteType {
        match std::mem::size_of::<T>() {
            1 => SiteType::U8,
            2 => SiteType::U16,
            _ => SiteType::U32,
        }
    }
}

/// The width of the labels (and of the global union-find forest) a module writes. Only bit runs
/// has a 64-bit build (`LABEL64` in `bit_runs.cu`); the 32-bit build's source is unchanged by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub(crate) enum LabelWidth {
    /// `u32` labels: lattices of at most [`MAX_SITES`](crate::MAX_SITES) sites.
    #[default]
    U32,
    /// `u64` labels: lattices of any size.
    U64,
}

impl LabelWidth {
    /// Bytes per label.
    pub(crate) fn bytes(self) -> usize {
        match self {
            LabelWidth::U32 => 4,
            LabelWidth::U64 => 8,
        }
    }
}

/// A kernel family: one `.cu` file, compiled per configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Family {
    LabelEquivalence,
    BlockUnionFind,
    TileMerge,
    Ha4,
    BitRuns,
    /// Seeded regions' kernels (not a labeling algorithm).
    Regions,
    /// Perimeters, hulls and filled areas of the cluster analysis (not a labeling algorithm).
    Perimeters,
    /// Bond-masked labeling and the Swendsen–Wang sweep (every site occupied).
    SwendsenWang,
    /// The multi-strip join's relabeling passes (not a labeling algorithm of its own).
    Strips,
}

impl Family {
    /// The family's kernel file (in [`HEADERS`]).
    fn file(self) -> &'static str {
        match self {
            Family::LabelEquivalence => super::label_equivalence::FILE,
            Family::BlockUnionFind => super::block_union_find::FILE,
            Family::TileMerge => super::tile_merge::FILE,
            Family::Ha4 => super::ha4::FILE,
            Family::BitRuns => super::bit_runs::FILE,
            Family::Regions => super::regions::FILE,
            Family::Perimeters => super::perimeters::FILE,
            Family::SwendsenWang => super::swendsen_wang::FILE,
            Family::Strips => super::multi::strip::FILE,
        }
    }

    /// The kernels each family declares in its own file.
    fn kernels(self) -> &'static [&'static str] {
        match self {
            Family::LabelEquivalence => super::label_equivalence::KERNELS,
            Family::BlockUnionFind => super::block_union_find::KERNELS,
            Family::TileMerge => super::tile_merge::KERNELS,
            Family::Ha4 => super::ha4::KERNELS,
            Family::BitRuns => super::bit_runs::KERNELS,
            Family::Regions => super::regions::KERNELS,
            Family::Perimeters => super::perimeters::KERNELS,
            Family::SwendsenWang => super::swendsen_wang::KERNELS,
            Family::Strips => super::multi::strip::KERNELS,
        }
    }

    /// Whether the module also holds the cluster analysis's kernels (`analysis.cu`), which read
    /// the forest of block union-find or bit runs.
    fn with_analysis(self) -> bool {
        matches!(self, Family::BlockUnionFind | Family::BitRuns)
    }
}

/// What a compiled module is specialised for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct ModuleKey {
    pub family: Family,
    pub site: SiteType,
    pub conn8: bool,
    pub segments: bool,
    /// The label width (64-bit only for bit runs).
    pub labels: LabelWidth,
    /// Bit runs' short tiles (`SHORT_TILES`: 16 rows, 4-connected labelings).
    pub short_tiles: bool,
}

impl ModuleKey {
    /// Whether the forest is a compact array of its own (blocks of more than one site) rather
    /// than the label array.
    pub(crate) fn compact_forest(&self) -> bool {
        self.block_shape() != (1, 1)
    }

    /// The union-find block shape `(BW, BH)` of this configuration.
    pub(crate) fn block_shape(&self) -> (u32, u32) {
        match (self.family, self.segments, self.conn8) {
            (
                Family::LabelEquivalence
                | Family::TileMerge
                | Family::Ha4
                | Family::BitRuns
                | Family::Regions
                | Family::Perimeters
                | Family::SwendsenWang
                | Family::Strips,
                _,
                _,
            )
            | (_, true, _) => (1, 1),
            (Family::BlockUnionFind, false, true) => (2, 2),
            (Family::BlockUnionFind, false, false) => (2, 1),
        }
    }

    pub(crate) fn describe(&self) -> String {
        format!(
            "{} (sites {}, {}-connectivity{}{}{})",
            self.family.file(),
            self.site.c_name(),
            if self.conn8 { 8 } else { 4 },
            if self.segments { ", segments" } else { "" },
            if self.labels == LabelWidth::U64 {
                ", 64-bit labels"
            } else {
                ""
            },
            if self.short_tiles {
                ", short tiles"
            } else {
                ""
            }
        )
    }
}

impl ModuleSpec for ModuleKey {
    fn key(&self) -> u64 {
        // Exact, no hashing: each field in its own bits.
        (self.labels as u64) << 24
            | (self.family as u64) << 16
            | (self.site as u64) << 8
            | u64::from(self.short_tiles) << 2
            | u64::from(self.conn8) << 1
            | u64::from(self.segments)
    }

    fn name(&self) -> String {
        self.describe()
    }

    /// The configuration's defines, then the shared helpers, canonical numbering, the family's
    /// kernels and (block union-find, bit runs) the analysis kernels, by `#include`. 64-bit
    /// labels add `LABEL64` and leave the (32-bit) analysis out, short tiles add `SHORT_TILES`;
    /// the 32-bit source of tall tiles is the same text as before either existed.
    fn source(&self) -> String {
        let (bw, bh) = self.block_shape();
        let wide = self.labels == LabelWidth::U64;
        let analysis = if self.family.with_analysis() && !wide {
            "#include \"analysis.cu\"\n"
        } else {
            ""
        };
        format!(
            "#define SITE_T {}\n#define CONN8 {}\n#define SEGMENTS {}\n#define BW {bw}\n#define BH {bh}\n\
             #define ALL_SITES {}\n{}{}\
             #include \"common.cuh\"\n#include \"canonical.cu\"\n#include \"{}\"\n{analysis}",
            self.site.c_name(),
            self.conn8 as u32,
            self.segments as u32,
            (self.family == Family::SwendsenWang) as u32,
            if wide { "#define LABEL64 1\n" } else { "" },
            if self.short_tiles {
                "#define SHORT_TILES 1\n"
            } else {
                ""
            },
            self.family.file(),
        )
    }

    fn headers(&self) -> &'static [(&'static str, &'static str)] {
        HEADERS
    }

    fn kernels(&self) -> Vec<&'static str> {
        let mut k = if self.labels == LabelWidth::U64 {
            super::bit_runs::KERNELS_64.to_vec()
        } else {
            self.family.kernels().to_vec()
        };
        k.extend_from_slice(super::canonical::KERNELS);
        k
    }

    fn shared_bytes(&self, kernel: &str, max_optin: usize) -> Option<usize> {
        match self.family {
            Family::BitRuns if self.labels == LabelWidth::U64 && kernel != "br_local" => None,
            Family::BitRuns => super::bit_runs::kernel_shared_bytes(kernel, self, max_optin),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cuda::runtime::nvrtc::{compile_cubin, target_arch};

    /// Every kernel configuration compiles with NVRTC (no GPU needed: only libnvrtc).
    #[test]
    fn every_configuration_compiles() {
        if !super::super::runtime::nvrtc::tests::nvrtc_present() {
            return;
        }
        for family in [
            Family::LabelEquivalence,
            Family::BlockUnionFind,
            Family::TileMerge,
            Family::Ha4,
            Family::BitRuns,
            Family::Perimeters,
        ] {
            for site in [SiteType::U8, SiteType::U16, SiteType::U32] {
                for conn8 in [false, true] {
                    // Bit runs' occupancy tiles also come short (segments' always are).
                    let shapes = [(false, false), (true, false), (false, true)];
                    let shapes = if family == Family::BitRuns {
                        &shapes[..]
                    } else {
                        &shapes[..2]
                    };
                    for &(segments, short_tiles) in shapes {
                        let key = ModuleKey {
                            family,
                            site,
                            conn8,
                            segments,
                            labels: LabelWidth::U32,
                            short_tiles,
                        };
                        for arch in [target_arch(75).unwrap(), target_arch(90).unwrap()] {
                            let cubin =
                                compile_cubin(&key.name(), &key.source(), key.headers(), &arch)
                                    .unwrap_or_else(|e| panic!("{e}"));
                            assert!(!cubin.is_empty());
                        }
                    }
                }
            }
        }
    }

    /// Bit runs' 64-bit build compiles in every configuration (sites, connectivity, segments)
    /// for both architectures, with the kernels its module loads.
    #[test]
    fn every_64_bit_configuration_compiles() {
        if !super::super::runtime::nvrtc::tests::nvrtc_present() {
            return;
        }
        for site in [SiteType::U8, SiteType::U16, SiteType::U32] {
            for conn8 in [false, true] {
                for segments in [false, true] {
                    let key = ModuleKey {
                        family: Family::BitRuns,
                        site,
                        conn8,
                        segments,
                        labels: LabelWidth::U64,
                        short_tiles: false,
                    };
                    assert!(key.kernels().contains(&"br_scan"));
                    assert!(!key.kernels().contains(&"br_local_ana"));
                    for arch in [target_arch(75).unwrap(), target_arch(90).unwrap()] {
                        let cubin = compile_cubin(&key.name(), &key.source(), key.headers(), &arch)
                            .unwrap_or_else(|e| panic!("{e}"));
                        assert!(!cubin.is_empty());
                    }
                }
            }
        }
    }

    /// The 32-bit module's source is the text it was before 64-bit labels (so its code is too:
    /// the 32-bit path cannot have become slower), and the 64-bit one differs only by the
    /// define and the analysis it leaves out; their cache keys differ.
    #[test]
    fn label_width_sources_and_keys() {
        let key = |labels| ModuleKey {
            family: Family::BitRuns,
            site: SiteType::U8,
            conn8: false,
            segments: false,
            labels,
            short_tiles: false,
        };
        let (narrow, wide) = (key(LabelWidth::U32), key(LabelWidth::U64));
        assert_eq!(
            narrow.source(),
            "#define SITE_T unsigned char\n#define CONN8 0\n#define SEGMENTS 0\n#define BW 1\n\
             #define BH 1\n#define ALL_SITES 0\n#include \"common.cuh\"\n\
             #include \"canonical.cu\"\n#include \"bit_runs.cu\"\n#include \"analysis.cu\"\n"
        );
        assert_eq!(
            wide.source(),
            "#define SITE_T unsigned char\n#define CONN8 0\n#define SEGMENTS 0\n#define BW 1\n\
             #define BH 1\n#define ALL_SITES 0\n#define LABEL64 1\n#include \"common.cuh\"\n\
             #include \"canonical.cu\"\n#include \"bit_runs.cu\"\n"
        );
        assert_ne!(narrow.key(), wide.key());
        assert_eq!(narrow.key(), (Family::BitRuns as u64) << 16);
        assert!(wide.name().contains("64-bit labels") && !narrow.name().contains("64"));
    }

    /// The bond-labeling and Swendsen–Wang module compiles.
    #[test]
    fn swendsen_wang_compiles() {
        if !super::super::runtime::nvrtc::tests::nvrtc_present() {
            return;
        }
        let key = ModuleKey {
            family: Family::SwendsenWang,
            site: SiteType::U8,
            conn8: false,
            segments: false,
            labels: LabelWidth::U32,
            short_tiles: false,
        };
        for arch in [target_arch(75).unwrap(), target_arch(90).unwrap()] {
            let cubin = compile_cubin(&key.name(), &key.source(), key.headers(), &arch)
                .unwrap_or_else(|e| panic!("{e}"));
            assert!(!cubin.is_empty());
        }
    }
}
