// Bit runs: run-based union-find on bit-packed rows, in shared-memory tiles labeled once; each
// tile writes every site's label as its local root, and elementwise passes finish the components
// that cross tile seams.
//
// A tile is TH = 32 rows (16 for segments and for small lattices, SHORT_TILES) x TW = 1024
// columns; one CTA of 512 threads (16 warps) per tile. Lane k of a warp holds columns
// 32k..32k+31 of a row as one 32-bit mask, so run starts, contacts between rows and run ranks are
// a few bit operations and popcounts per 32 sites. The union-find nodes
// are the tile's horizontal runs (maximal sequences of horizontally joined sites), numbered in
// raster order; a node's packed shared-memory entry holds its parent (bits 16..31, the smaller
// node wins, so a local root is its component's first run), its own row (bits 10..14) and column
// (bits 0..9), and EDGE (bit 15) once unions are over and the component touches the tile's edge.
// Rows meet only where a contact between two runs begins (a few per 32 sites): a run's first
// contact becomes its initial parent, with no find or atomic, and the others are unions. Before
// the unions, one pass two rows a round points every run at the root of its first-contact tree,
// so that the unions' finds start one step from a root; after them, a walk from each of those
// tree roots, then one step for the rest, leaves every node at its local root (no node climbs a
// chain alone). Labels written once by br_write (no analysis) skip that step: their few readers
// of a node's root take two loads instead.
//
// The label array L is also the global forest (common.cuh's convention: the slot of site k holds
// k' + 1 with k' a smaller site of the same cluster, and k + 1 at a root). br_local writes every
// site's local root + 1, so each local root r holds r + 1: a component that stays inside its tile
// is finished (its root is its first site), and the others meet across seams by linking local
// roots, whose slots are the only ones the later passes change before the last.
//
//   br_local   labels the tile and writes L in full, coalesced (lane k writes columns 4k..4k+3
//              of 128-column chunks), and the bit mask of its edge components' local roots (ER),
//              row by row; for canonical numbering also that of its interior roots (RB).
//              br_local_ana (cluster analysis) also sums each local component's size, moments
//              and extremes in shared memory and writes one record per component (br_records;
//              analysis.cu's ana_records adds them into the pieces once the roots are ranked);
//              without labels (vec bit 2) it writes only the forest: tile-edge sites' labels and
//              edge components' local roots' slots.
//   br_merge   unites, with atomicMin linking in L, the sites that face each other across tile
//              seams (and the periodic edges, which are seams between the last and first row or
//              column), starting each find at the site's local root; rows and columns in one
//              launch.
//   br_flatten every edge component's local root (ER) points straight at its global root;
//              canonical numbering adds the global roots to RB.
//   br_count   (canonical) counts RB's roots per (row, tile column) in raster order and scans them
//              per chunk of 256 entries; canon_scan then scans the chunks.
//   br_publish (canonical) each root in RB gets FLAG | rank in its slot; br_spread then gives each
//              edge component's other local roots (ER, br_local's mask of them) the same value.
//   br_final   elementwise over L. Raw: a site whose local root r points at another root R takes
//              R + 1 (sites of components inside one tile are not written again); the roots are
//              counted. Canonical: every site takes rank + 1 from the FLAG | rank its slot or its
//              local root's slot holds; a local root's slot may already hold its own final
//              rank + 1 (written by its own thread), and both forms give the same label.
//
// Write-once labeling (vec bit 3; 32-bit labelings of tall tiles: src/cuda/bit_runs/layout.rs,
// write_once). br_local writes only the forest, as the analysis without labels does, and RT: per
// tile its rows' first nodes and each node's local root as a tile position (a u16 a run, about
// half a byte a site at p_c), and counts its interior components (raw). The seams, the
// flatten and the counts run as above (raw: br_flatten leaves in ER only the global roots, which
// br_count_roots counts). Canonical: br_rank_edges, in place of br_publish and br_spread, gives
// every edge component's local root (ER) FLAG | its global root's rank, from the masks (RB and
// br_count's counts rank any root); interior roots are ranked from the masks where br_write
// needs them. br_write then writes every label once, a warp a tile row: its runs from
// the lattice, their local roots from RT, their labels from the roots' slots, every site from
// its run's. Per site (u8 lattice, ≈ 0.24 runs a site at p_c) the two passes move about
// 1 + 0.5 + 1 + 0.5 + 4 bytes, against 1 + 4 + 4 + 4f (raw; f ≈ 0.46) or + 4 (canonical) for
// br_local and br_final.
//
// Bands (BANDS below; 8-connected occupancy in 32-row tiles, labelings and the analysis): the
// nodes are the runs of two-row bands, and br_write takes a warp per band.
//
// Label width. LABEL64 = 0 (the default) is the 32-bit build, whose code is what it always was
// (label_t = idx_t = u32, LFLAG = FLAG). LABEL64 = 1 labels lattices of any size into 64-bit
// labels: site indices, the label array (the global forest), its FLAG bit (63), the ranks and the
// count are 64-bit; the tile's shared-memory union-find, the masks and the counts per (row, tile
// column) stay 32-bit. To move fewer bytes, that build's br_local writes each site's local root
// as its position in the tile + 1 into LL (a u16 a site, in the scratch) and into L only the local
// roots' own slots (r + 1): br_merge finds seam sites' local roots in LL, br_flatten and the
// ranking touch local roots' slots only, and br_final reads LL and the local root's slot and
// writes every label once. br_scan scans the chunks' 64-bit ranks (canon_scan is 32-bit). The
// cluster analysis (br_local_ana, analysis.cu) is 32-bit only.
#pragma once
#include "common.cuh"
#if !LABEL64
// The analysis's accumulator rows, which br_publish sets empty for edge pieces.
#include "analysis_row.cuh"
typedef Row row_t;
#else
typedef void row_t;
#endif

#ifndef LABEL64
#define LABEL64 0
#endif
#if LABEL64
typedef u64 label_t;
typedef u64 idx_t;
#define LFLAG 0x8000000000000000ull
#else
typedef u32 label_t;
typedef u32 idx_t;
#define LFLAG FLAG
#endif

// The 64-bit build's per-site local roots (LL, u16: the root's position in the site's tile + 1,
// 0 = empty), an extra parameter of br_local, br_merge and br_final.
#if LABEL64
#define LL_PARAM , u16* __restrict__ LL
#define LL_ARG , LL
#else
#define LL_PARAM
#define LL_ARG
#endif

#if LABEL64
// The 64-bit forest's helpers, as common.cuh's for 1x1 blocks (the label array is the forest).
__device__ __forceinline__ u64 ld_cg(const u64* p) { return __ldcg(p); }

__device__ __forceinline__ u64 find_halving(u64* P, const Geo&, u64 k) {
    while (true) {
        const u64 v = ld_cg(P + k);
        if (v == k + 1) return k;
        const u64 par = v - 1;
        const u64 vp = ld_cg(P + par);
        if (vp == par + 1) return par;
        P[k] = vp;
        k = vp - 1;
    }
}

__device__ __forceinline__ void unite(u64* P, const Geo& g, u64 a, u64 b) {
    bool done;
    do {
        a = find_halving(P, g, a);
        b = find_halving(P, g, b);
        if (a < b) {
            const u64 old = atomicMin(P + b, a + 1);
            done = (old == b + 1);
            b = old - 1;
        } else if (b < a) {
            const u64 old = atomicMin(P + a, b + 1);
            done = (old == a + 1);
            a = old - 1;
        } else {
            done = true;
        }
    } while (!done);
}

// Warp-aggregated 64-bit atomicAdd of a per-thread count (all 32 lanes must call it).
__device__ __forceinline__ void warp_add(u64* target, u32 v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0 && v) atomicAdd(target, (u64)v);
}
#endif

#define TW 1024u
#define TWW 32u // words per tile row
#ifndef SHORT_TILES
#define SHORT_TILES 0
#endif
// Segments' rows hold up to twice the runs; short tiles (small lattices) give twice the CTAs.
#if SEGMENTS || SHORT_TILES
#define TH 16u
#else
#define TH 32u
#endif
#if SEGMENTS
#define NPLANES 5u
#else
#define NPLANES 2u
#endif
#define BR_THREADS 512u
#define BR_WARPS 16u
#define RPW (TH / BR_WARPS) // rows per warp
// Bands (8-connected occupancy, 32-bit labels; BBDT's 2 x 2 blocks, Grana et al. 2010, done with
// runs): with 8-connectivity any two occupied sites of a two-row band in the same or neighbouring
// columns are neighbours, so within a band the clusters are the runs of the two rows' OR. The
// union-find nodes are then the bands' runs (a half to an eighth as many as the rows', from
// p_c to density 0.8), and only a band's last row touches the next band's first. A band's nodes
// are numbered by column; a node's own fields (row, column) are its first site (its first site
// in the band's first row if it has one), and a local root's become its component's first site
// after the unions (br_label_tile). br_label_tile's planes in band mode: P_OCC holds the lattice
// rows, P_JL row b band b's OR and row NB + b its joins to the left; OFF_EXCL row b band b's
// first-node offsets and row NB + b the first sites in the band's first row of its runs.
// Not for short tiles (8 bands to 16 warps; at 2048², whose tiles' time is their latency, 3-6 µs
// slower) or 64-bit labels; the analysis's records sum a band run's two rows (band_sums).
#if CONN8 && !SEGMENTS && !LABEL64 && !SHORT_TILES
#define BANDS 1
#else
#define BANDS 0
#endif
#define NB (TH / 2u)
// Nodes per tile, worst case (src/cuda/bit_runs/layout.rs: max_nodes): TH * TW of segments,
// TH * TW / 2 runs of occupancy rows, NB * TW / 2 of bands. Bands' and short tiles' 8192 take
// 52 and 42 KB of shared memory where tall rows take 84, so that four tiles share a
// multiprocessor instead of two.
#if SEGMENTS
#define MAXN (TH * TW)
#elif BANDS
#define MAXN (NB * TW / 2u)
#else
#define MAXN (TH * TW / 2u)
#endif
// Tiles a multiprocessor holds at once (__launch_bounds__'s register budget): four of bands or
// short occupancy tiles (32 registers, a few bytes spilled: 5 % faster than three in 40), two
// of the others.
#ifndef LOCAL_MINB
#if BANDS || (SHORT_TILES && !SEGMENTS)
#define LOCAL_MINB 4
#else
#define LOCAL_MINB 2
#endif
#endif
// And br_local_ana's: three band tiles, whose shared memory (52 KB and the accumulators, 75 KB
// in all: src/cuda/bit_runs/layout.rs, ANA_SHARED_TARGET_BANDS) leaves room for three, two of
// the others (110 KB).
#ifndef ANA_MINB
#if BANDS
#define ANA_MINB 3
#else
#define ANA_MINB 2
#endif
#endif
// (The parent in the top bits: one shift reads it, which the tile pass does at every step.)
#define PAR_SHIFT 16
#define OWN_MASK 0x7fffu
#define EDGE 0x8000u
#define FULL 0xffffffffu

// Planes of per-row masks in shared memory: occupancy, joined to the left neighbour, and (for
// segments, whose joins depend on values) joined to the site above, above-left, above-right.
#define P_OCC 0u
#define P_JL 1u
#define P_V 2u
#define P_DL 3u
#define P_DR 4u

// Shared-memory layout in words (src/cuda/bit_runs/layout.rs mirrors BR_SMEM_WORDS).
#define OFF_PLANES MAXN
#define OFF_EXCL (OFF_PLANES + NPLANES * TH * TWW)
#define OFF_ROWBASE (OFF_EXCL + TH * TWW)
#define OFF_RMASK (OFF_ROWBASE + 64u)
#define OFF_EMASK (OFF_RMASK + TH * TWW)
#define BR_SMEM_WORDS (OFF_EMASK + TH * TWW)
// br_local_ana's extra words: the bit mask of nodes that are the root of more than one run, the
// block scan's scratch and the tile's two record bases, then `slots` accumulators of ACC_FIELDS
// words (src/cuda/bit_runs/layout.rs: ana_shared_bytes).
#define OFF_MULTI BR_SMEM_WORDS
#define OFF_SCAN (OFF_MULTI + MAXN / 32u)
#define OFF_ACC (OFF_SCAN + 64u)
// Accumulator fields, each an array of `slots` words: size, sum y, sum y^2, sum x, sum x^2 (low
// 16 bits of each run's, then the rest), then x_min (ACC_XMIN), x_max, y_max.
#define ACC_FIELDS 9u
#define ACC_XMIN 6u

// Counts per chunk in br_count (src/cuda/bit_runs/mod.rs: COUNT_CHUNK).
#define BR_CHUNK 256u

struct BrTile {
    u32 tx, ty;     // tile coordinates
    u32 x0, y0;     // first site
    u32 rows, cols; // rows and columns inside the lattice
};

__device__ __forceinline__ BrTile br_tile(const Geo& g, u32 tiles_x) {
    BrTile t;
    t.ty = blockIdx.x / tiles_x;
    t.tx = blockIdx.x - t.ty * tiles_x;
    t.x0 = t.tx * TW;
    t.y0 = t.ty * TH;
    t.rows = min(TH, g.h - t.y0);
    t.cols = min(TW, g.w - t.x0);
    return t;
}

__device__ __forceinline__ u32* plane(u32* sm, u32 p, u32 r) {
    return sm + OFF_PLANES + (p * TH + r) * TWW;
}

__device__ __forceinline__ u32* band_occ(u32* sm, u32 b) { return plane(sm, P_JL, b); }
__device__ __forceinline__ u32* band_jl(u32* sm, u32 b) { return plane(sm, P_JL, NB + b); }
__device__ __forceinline__ u32* band_first(u32* sm, u32 b) { return sm + OFF_EXCL + (NB + b) * TWW; }

// Bit j set when byte j of v is nonzero.
__device__ __forceinline__ u32 nz4(u32 v) {
    u32 t = (((v & 0x7f7f7f7fu) + 0x7f7f7f7fu) | v) & 0x80808080u;
    return ((t >> 7) * 0x00204081u) >> 21 & 0xfu;
}

// Bit 31 of the previous lane's m (0 in lane 0: the tile's left edge).
__device__ __forceinline__ u32 from_left(u32 m, u32 lane) {
    const u32 p = __shfl_up_sync(FULL, m, 1);
    return lane ? p >> 31 : 0u;
}
// Bit 0 of the next lane's m (0 in lane 31: the tile's right edge).
__device__ __forceinline__ u32 from_right(u32 m, u32 lane) {
    const u32 q = __shfl_down_sync(FULL, m, 1);
    return lane < 31 ? q & 1u : 0u;
}
// m's bit x - 1 at position x, and bit x + 1 at position x, across the lanes of a row.
__device__ __forceinline__ u32 shl1(u32 m, u32 lane) { return (m << 1) | from_left(m, lane); }
__device__ __forceinline__ u32 shr1(u32 m, u32 lane) { return (m >> 1) | (from_right(m, lane) << 31); }

__device__ __forceinline__ u32 warp_incl_scan(u32 v, u32 lane) {
#pragma unroll
    for (u32 o = 1; o < 32; o <<= 1) {
        const u32 y = __shfl_up_sync(FULL, v, o);
        if (lane >= o) v += y;
    }
    return v;
}

// Bits 0..=i.
__device__ __forceinline__ u32 le_mask(u32 i) { return FULL >> (31 - i); }

// a + b with the warp's 32 words as one 1024-bit number (lane 0 the lowest word; the carry out
// of lane 31 is dropped): a lane generates a carry (G) or passes one on (P), and the carries
// into the lanes are those of the 32-bit sum G + (G | P), less P. Every lane must call it.
__device__ __forceinline__ u32 wide_add(u32 a, u32 b, u32 lane) {
    const u32 s = a + b;
    const u32 gen = __ballot_sync(FULL, s < a), pass = __ballot_sync(FULL, s == FULL);
    return s + (((gen + (gen | pass)) ^ pass) >> lane & 1u);
}

// Of each run of m (run starts rs, across the warp's row) that holds a site of `row` (a subset
// of m), the first such site: adding its start to the run's sites outside `row` carries up to
// it (or past the run's end, where it has none). Every lane must call it.
__device__ __forceinline__ u32 first_in_runs(u32 m, u32 rs, u32 row, u32 lane) {
    const u32 x = m & ~row;
    return (wide_add(x, rs & x, lane) & ~x & m) | (rs & row);
}

__device__ __forceinline__ u32 e_par(u32 e) { return e >> PAR_SHIFT; }

// The local root of the node with entry e once the tile's unions are over: its parent, or with
// `lazy` (the nodes other than tree roots not pointed at their roots: br_label_tile) its
// parent's parent.
__device__ __forceinline__ u32 root_from(const u32* ent, u32 e, bool lazy) {
    const u32 p = e_par(e);
    return lazy ? e_par(ent[p]) : p;
}
__device__ __forceinline__ u32 root_of(const u32* ent, u32 n, bool lazy) {
    return root_from(ent, ent[n], lazy);
}

// The local root of node x, halving the path (plain stores of a valid ancestor that keep x's own
// fields; only non-roots are stored to).
__device__ __forceinline__ u32 br_find(u32* ent, u32 x) {
    volatile u32* e = ent;
    while (true) {
        const u32 ex = e[x];
        const u32 p = e_par(ex);
        if (p == x) return x;
        const u32 gp = e_par(e[p]);
        if (gp == p) return p;
        e[x] = (ex & (OWN_MASK | EDGE)) | (gp << PAR_SHIFT);
        x = gp;
    }
}

// Links the larger root under the smaller with atomicMin; a lost race is retried from the value
// the atomic returned.
__device__ __forceinline__ void br_unite(u32* ent, u32 a, u32 b) {
    while (true) {
        a = br_find(ent, a);
        b = br_find(ent, b);
        if (a == b) return;
        if (a > b) {
            const u32 t = a;
            a = b;
            b = t;
        }
        const u32 own = ((volatile u32*)ent)[b] & OWN_MASK;
        const u32 old = atomicMin(ent + b, (a << PAR_SHIFT) | own);
        const u32 op = e_par(old);
        if (op == b) return;
        b = op;
    }
}

// The site index of node n, from its own fields.
__device__ __forceinline__ idx_t entry_key(u32 e, const Geo& g, const BrTile& t) {
    return (idx_t)(t.y0 + ((e >> 10) & 31u)) * g.w + t.x0 + (e & 1023u);
}
__device__ __forceinline__ idx_t node_key(const u32* ent, const Geo& g, const BrTile& t, u32 n) {
    return entry_key(ent[n], g, t);
}

// Occupancy of the 32 sites of row y from column x (bit i = column x + i), zero outside.
// vec: u8 sites, rows 16-byte aligned.
__device__ __forceinline__ u32 load_occ(const site_t* __restrict__ in, const Geo& g, u32 y, u32 x,
                                        u32 vec) {
    if (x >= g.w) return 0u;
    const idx_t base = (idx_t)y * g.w + x;
    if (sizeof(site_t) == 1 && vec && x + 32u <= g.w) {
        const uint4* p = reinterpret_cast<const uint4*>(in + base);
        const uint4 a = __ldg(p), b = __ldg(p + 1);
        return nz4(a.x) | nz4(a.y) << 4 | nz4(a.z) << 8 | nz4(a.w) << 12 | nz4(b.x) << 16 |
               nz4(b.y) << 20 | nz4(b.z) << 24 | nz4(b.w) << 28;
    }
    const u32 n = min(32u, g.w - x);
    u32 m = 0;
    for (u32 i = 0; i < n; i++) m |= (u32)(in[base + i] != 0) << i;
    return m;
}

// Marks node n's component as touching the tile's edge, n pointing at its root. (Read first: a
// large component's runs would all hit one word with atomics.)
__device__ __forceinline__ void br_mark_edge(u32* ent, u32 n, bool lazy) {
    const u32 r = root_of(ent, n, lazy);
    if (!(((volatile u32*)ent)[r] & EDGE)) atomicOr(ent + r, EDGE);
}

// 1. The tile's rows as masks in shared memory (the planes), then a barrier. (Bands: occupancy
// only; br_run_bases forms the bands' joins.)
template <bool BAND>
__device__ __forceinline__ void br_load_masks(const site_t* __restrict__ in, const Geo& g,
                                              const BrTile& t, u32 vec, u32* sm) {
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
    for (u32 j = 0; j < RPW; j++) {
        const u32 r = warp + j * BR_WARPS;
        const u32 y = t.y0 + r;
        const u32 x = t.x0 + 32u * lane;
        u32 occ = 0, jl = 0;
#if SEGMENTS
        u32 v = 0, dl = 0, dr = 0;
        if (r < t.rows && x < g.w) {
            const u32 n = min(32u, g.w - x);
            const idx_t base = (idx_t)y * g.w + x;
            const bool up = r > 0;
            site_t ap = lane ? in[base - 1] : (site_t)0;
            site_t bp = (up && lane) ? in[base - g.w - 1] : (site_t)0;
            site_t bc = up ? in[base - g.w] : (site_t)0;
            for (u32 i = 0; i < n; i++) {
                const site_t a = in[base + i];
                const bool right = (32u * lane + i + 1 < TW) && (x + i + 1 < g.w);
                const site_t bn = (up && right) ? in[base - g.w + i + 1] : (site_t)0;
                if (a != 0) {
                    const u32 bit = 1u << i;
                    occ |= bit;
                    if (a == ap) jl |= bit;
                    if (a == bc) v |= bit;
#if CONN8
                    if (a == bp) dl |= bit;
                    if (a == bn) dr |= bit;
#endif
                }
                ap = a;
                bp = bc;
                bc = bn;
            }
        }
        plane(sm, P_V, r)[lane] = v;
        plane(sm, P_DL, r)[lane] = dl;
        plane(sm, P_DR, r)[lane] = dr;
#else
        if (r < t.rows) occ = load_occ(in, g, y, x, vec & 1u);
        if (!BAND) jl = occ & shl1(occ, lane);
#endif
        plane(sm, P_OCC, r)[lane] = occ;
        if (!BAND) plane(sm, P_JL, r)[lane] = jl;
    }
    __syncthreads();
}

// A row of nodes' run starts rs (the warp's words): each word's first run in the row (excl) and
// the row's count (rowbase[r], before br_scan_rows).
__device__ __forceinline__ void br_row_runs(u32* excl_pl, u32* rowbase, u32 r, u32 rs, u32 lane) {
    const u32 c = __popc(rs);
    const u32 incl = warp_incl_scan(c, lane);
    excl_pl[r * TWW + lane] = incl - c;
    if (lane == 31) rowbase[r] = incl;
}

// After a barrier, the first node of each of `rows` rows of nodes from their counts (rowbase),
// and the node count at rowbase[rows]; a barrier, and returns the count.
__device__ __forceinline__ u32 br_scan_rows(u32* rowbase, u32 rows, u32 lane, u32 warp) {
    __syncthreads();
    if (warp == 0) {
        const u32 tot = lane < rows ? rowbase[lane] : 0u;
        const u32 incl = warp_incl_scan(tot, lane);
        __syncwarp();
        if (lane < rows) rowbase[lane] = incl - tot;
        if (lane == 31) rowbase[rows] = incl;
    }
    __syncthreads();
    return rowbase[rows];
}

// 2. Run starts and their ranks in each row (excl), the rows' first nodes (rowbase, with the
// node count at rowbase[TH]); returns the node count. Barriers before and after. Bands: the same
// per band (rowbase[NB] the count), from the OR of its rows, whose joins and first sites in the
// band's first row go to their planes.
template <bool BAND>
__device__ __forceinline__ u32 br_run_bases(u32* sm) {
    u32* excl_pl = sm + OFF_EXCL;
    u32* rowbase = sm + OFF_ROWBASE;
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (BAND) {
        if (warp < NB) { // uniform across the warp
            const u32 b = warp;
            const u32 top = plane(sm, P_OCC, 2u * b)[lane];
            const u32 m = top | plane(sm, P_OCC, 2u * b + 1u)[lane];
            const u32 jl = m & shl1(m, lane), rs = m & ~jl;
            band_occ(sm, b)[lane] = m;
            band_jl(sm, b)[lane] = jl;
            band_first(sm, b)[lane] = first_in_runs(m, rs, top, lane);
            br_row_runs(excl_pl, rowbase, b, rs, lane);
        }
        return br_scan_rows(rowbase, NB, lane, warp);
    }
#pragma unroll
    for (u32 j = 0; j < RPW; j++) {
        const u32 r = warp + j * BR_WARPS;
        br_row_runs(excl_pl, rowbase, r, plane(sm, P_OCC, r)[lane] & ~plane(sm, P_JL, r)[lane],
                    lane);
    }
    return br_scan_rows(rowbase, TH, lane, warp);
}

// Loads the tile's rows as masks, numbers the runs, unites them in shared memory, points every
// node at its root (with `lazy`, only the tree roots: root_of) and marks the components that
// touch the tile's edge. Returns the node count; `mine` gets this thread's roots (bit k: node
// threadIdx.x + BR_THREADS k). BAND: the nodes are the bands' runs, and the rows of nodes (r
// below) are bands.
template <bool BAND>
__device__ __forceinline__ u32 br_label_tile(const site_t* __restrict__ in, const Geo& g,
                                             const BrTile& t, u32 vec, u32* sm, u32& mine,
                                             u32* multi, bool lazy) {
    u32* ent = sm;
    u32* excl_pl = sm + OFF_EXCL;
    u32* rowbase = sm + OFF_ROWBASE;
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    br_load_masks<BAND>(in, g, t, vec, sm);
    const u32 nodes = br_run_bases<BAND>(sm);
    // Rows of nodes (bands hold two lattice rows, the last one maybe one).
    const u32 node_rows = BAND ? (t.rows + 1u) >> 1 : t.rows;
    const u32 jl_row = BAND ? NB : 0u; // a row of nodes' joins in P_JL

    // 3. Contacts with the row above where they begin (a contact continues the one at x - 1
    // when both runs continue too; a diagonal one is implied by a vertical one of either run's
    // neighbour, or by the same pair at x - 1). Each run's first contact in its start's word
    // becomes its parent (the row above has smaller nodes), with no find and no atomic; the
    // other contacts are unions, step 4.
    u32 rem_v[RPW], rem_dl[RPW], rem_dr[RPW];
#pragma unroll
    for (u32 j = 0; j < RPW; j++) {
        const u32 r = warp + j * BR_WARPS;
        rem_v[j] = rem_dl[j] = rem_dr[j] = 0;
        if (BAND && r >= NB) continue; // uniform across the warp
        const u32 occA = plane(sm, BAND ? P_JL : P_OCC, r)[lane];
        const u32 jlA = plane(sm, P_JL, jl_row + r)[lane];
        const u32 rsA = occA & ~jlA;
        const u32 nbA = rowbase[r] + excl_pl[r * TWW + lane];
        u32 ev = 0, edl = 0, edr = 0, rsB = 0, nbB = 0, rsB_next = 0, jlB = 0;
        if (r > 0 && r < node_rows) { // uniform across the warp
            const u32 occB = plane(sm, BAND ? P_JL : P_OCC, r - 1)[lane];
            jlB = plane(sm, P_JL, jl_row + r - 1)[lane];
            rsB = occB & ~jlB;
            nbB = rowbase[r - 1] + excl_pl[(r - 1) * TWW + lane];
            // The rows that meet: a band's first and the band above's last.
            const u32 up = BAND ? plane(sm, P_OCC, 2u * r)[lane] : occA;
            const u32 down = BAND ? plane(sm, P_OCC, 2u * r - 1u)[lane] : occB;
#if SEGMENTS
            const u32 v = plane(sm, P_V, r)[lane];
            (void)up;
            (void)down;
#else
            const u32 v = up & down;
#endif
            ev = v & ~(shl1(v, lane) & jlA & jlB);
#if CONN8
#if SEGMENTS
            const u32 dl = plane(sm, P_DL, r)[lane], dr = plane(sm, P_DR, r)[lane];
#else
            const u32 dl = up & shl1(down, lane), dr = up & shr1(down, lane);
#endif
            const u32 jlBr = shr1(jlB, lane);
            edl = dl & ~(v & jlB) & ~(shl1(dl, lane) & jlA & shl1(jlB, lane)) &
                  ~(shl1(v, lane) & jlA);
            edr = dr & ~(v & jlBr) & ~(shl1(dr, lane) & jlA & jlBr) &
                  ~(shr1(v, lane) & shr1(jlA, lane));
            rsB_next = from_right(rsB, lane);
#endif
        }
        const u32 stop = ~occA | rsA; // where runs end
        u32 m = rsA, n = nbA;
        while (m) {
            const u32 i = __ffs(m) - 1;
            m &= m - 1;
            const u32 after = stop & ~le_mask(i);
            const u32 end = after ? __ffs(after) - 1 : 32u;
            const u32 run = (end == 32 ? FULL : (1u << end) - 1u) & ~((1u << i) - 1u);
            const u32 cand = (ev | edl | edr) & run;
            u32 par = n;
            if (cand) {
                const u32 f = __ffs(cand) - 1;
                const u32 bit = 1u << f, le = le_mask(f);
                u32 cb; // the column of the run above met (32 or more: another word)
                if (ev & bit) {
                    par = nbB + __popc(rsB & le) - 1;
                    ev &= ~bit;
                    cb = f;
                } else if (edl & bit) {
                    par = f == 0 ? nbB - 1 : nbB + __popc(rsB & (le >> 1)) - 1;
                    edl &= ~bit;
                    cb = f - 1;
                } else {
                    par = f == 31 ? nbB + __popc(rsB) + rsB_next - 1
                                  : nbB + __popc(rsB & ((le << 1) | 1u)) - 1;
                    edr &= ~bit;
                    cb = f + 1;
                }
                if (BAND && cb < 32u) {
                    // A band's rows leave gaps between its contacts with one long run above:
                    // the run's other contacts in this word with the parent's run are the
                    // same union.
                    const u32 below = rsB & le_mask(cb), above = ~jlB & ~le_mask(cb);
                    const u32 lo = below ? 31u - __clz(below) : 0u;
                    const u32 hi = above ? __ffs(above) - 2u : 31u;
                    const u32 ext = le_mask(hi) & ~(lo ? le_mask(lo - 1u) : 0u);
                    ev &= ~(run & ext);
                    edl &= ~(run & (ext << 1));
                    edr &= ~(run & (ext >> 1));
                }
            }
            // (Bands: the run's first site in the band's second row, until the pass below.)
            ent[n] = (par << PAR_SHIFT) | ((BAND ? 2u * r + 1u : r) << 10) | (32u * lane + i);
            n++;
        }
        rem_v[j] = ev;
        rem_dl[j] = edl;
        rem_dr[j] = edr;
    }
    __syncthreads();
    if (BAND && warp < node_rows) { // uniform across the warp
        // A band's runs with a site in its first row: that site is their first.
        const u32 b = warp;
        const u32 rs = band_occ(sm, b)[lane] & ~band_jl(sm, b)[lane];
        const u32 nb = rowbase[b] + excl_pl[b * TWW + lane];
        for (u32 m = band_first(sm, b)[lane]; m; m &= m - 1) {
            const u32 i = __ffs(m) - 1;
            const u32 n = nb + __popc(rs & le_mask(i)) - 1;
            ent[n] = (ent[n] & ~OWN_MASK) | (2u * b) << 10 | (32u * lane + i);
        }
    }
    if (BAND) __syncthreads();

    // First contacts make chains as deep as the tile is tall (each run's parent is in the row
    // above), and the unions' finds below would climb them (three times the unions' time). Row
    // by row, each run takes its parent's parent, which the row above already holds: then every
    // node points at the root of its first-contact tree (its "tree root"), which points at
    // itself.
    // Two rows a round (half the barriers, and the threads share the two rows' nodes): the
    // second row's parents are in the first, which moves in the same round, so its nodes take
    // one more step (their parent's parent is in a row already done; a parent's entry read
    // before or after its store leads to the same tree root).
    for (u32 r = 1; r < node_rows; r += 2) {
        const u32 mid = rowbase[r + 1], end = rowbase[min(r + 2u, node_rows)];
        for (u32 n = rowbase[r] + threadIdx.x; n < end; n += BR_THREADS) {
            const u32 e = ent[n];
            const u32 p = e_par(e);
            u32 gp = e_par(((volatile u32*)ent)[p]);
            if (n >= mid) gp = e_par(((volatile u32*)ent)[gp]);
            if (gp != p) ent[n] = (e & (OWN_MASK | EDGE)) | (gp << PAR_SHIFT);
        }
        __syncthreads();
    }
    // This thread's tree roots (bit k: node threadIdx.x + BR_THREADS k), read before the unions
    // link them.
    u32 tree_roots = 0;
    for (u32 n = threadIdx.x, k = 0; n < nodes; n += BR_THREADS, k++)
        if (e_par(ent[n]) == n) tree_roots |= 1u << k;
    __syncthreads();

    // 4. The remaining contacts: unions.
#pragma unroll
    for (u32 j = 0; j < RPW; j++) {
        const u32 r = warp + j * BR_WARPS;
        const u32 ev = rem_v[j], edl = rem_dl[j], edr = rem_dr[j];
        u32 all = ev | edl | edr;
        if (r == 0 || r >= node_rows) continue; // uniform across the warp
        const u32 occA = plane(sm, BAND ? P_JL : P_OCC, r)[lane];
        const u32 jlA = plane(sm, P_JL, jl_row + r)[lane];
        const u32 occB = plane(sm, BAND ? P_JL : P_OCC, r - 1)[lane];
        const u32 jlB = plane(sm, P_JL, jl_row + r - 1)[lane];
        const u32 rsA = occA & ~jlA, rsB = occB & ~jlB;
        const u32 nbA = rowbase[r] + excl_pl[r * TWW + lane];
        const u32 nbB = rowbase[r - 1] + excl_pl[(r - 1) * TWW + lane];
#if CONN8
        const u32 rsB_next = from_right(rsB, lane);
#else
        (void)edl;
        (void)edr;
#endif
        // (Bands: a pair met just before, in this word, is not united again.)
        u32 last_a = FULL, last_b = FULL;
        while (all) {
            const u32 i = __ffs(all) - 1;
            all &= all - 1;
            const u32 le = le_mask(i);
            const u32 na = nbA + __popc(rsA & le) - 1;
            if ((ev >> i) & 1u) {
                const u32 nb = nbB + __popc(rsB & le) - 1;
                if (!BAND || na != last_a || nb != last_b) br_unite(ent, na, nb);
                last_a = na;
                last_b = nb;
            }
#if CONN8
            if ((edl >> i) & 1u) {
                const u32 nb = i == 0 ? nbB - 1 : nbB + __popc(rsB & (le >> 1)) - 1;
                if (!BAND || na != last_a || nb != last_b) br_unite(ent, na, nb);
                last_a = na;
                last_b = nb;
            }
            if ((edr >> i) & 1u) {
                const u32 nb = i == 31 ? nbB + __popc(rsB) + rsB_next - 1
                                       : nbB + __popc(rsB & ((le << 1) | 1u)) - 1;
                if (!BAND || na != last_a || nb != last_b) br_unite(ent, na, nb);
                last_a = na;
                last_b = nb;
            }
#endif
        }
    }
    __syncthreads();

    // Every node straight at its local root. The unions linked tree roots only, and their finds'
    // halving stores give a node another tree root, so every other node still points at a tree
    // root. The tree roots first: each thread walks from each of its own tree roots (the set
    // bits, a quarter of its nodes) to the root, at most four or five steps, and points it there
    // (a concurrent store only shortens another walk's path: one pass and one barrier, where
    // rounds of pointer jumping until none moved took three or four); then the others take their
    // tree root's root in two loads. (Finds from every node instead took a third of the pass.)
    // The roots (bit k as above) go to `mine`.
    mine = 0;
    for (u32 m = tree_roots; m; m &= m - 1) {
        const u32 k = __ffs(m) - 1, n = threadIdx.x + k * BR_THREADS;
        const u32 e = ent[n];
        u32 p = e_par(e);
        if (p == n) {
            mine |= 1u << k;
            continue;
        }
        u32 q = e_par(((volatile u32*)ent)[p]);
        if (q == p) continue;
        do {
            p = q;
            q = e_par(((volatile u32*)ent)[p]);
        } while (q != p);
        ent[n] = (e & (OWN_MASK | EDGE)) | (p << PAR_SHIFT);
    }
    __syncthreads();
    // With `multi` (the analysis), every root of another node gets its bit there: the roots of
    // more than one run. (Read first: a large component's runs would all hit one word.)
    // Labels written once with no analysis (`lazy`): the other nodes are left pointing at their
    // tree roots, and the few readers of a node's root after this take two loads (root_of); a
    // pass over every node saved.
    if (!lazy) {
    for (u32 n = threadIdx.x, k = 0; n < nodes; n += BR_THREADS, k++) {
        u32 r;
        if ((tree_roots >> k) & 1u) {
            // A tree root is settled: at its root, or one step from it.
            if (multi == nullptr || ((mine >> k) & 1u)) continue;
            r = e_par(ent[n]);
        } else {
            const u32 e = ent[n];
            const u32 p = e_par(e);
            r = e_par(ent[p]);
            if (r != p) ent[n] = (e & (OWN_MASK | EDGE)) | (r << PAR_SHIFT);
            if (multi == nullptr) continue;
        }
        if (!((multi[r >> 5] >> (r & 31)) & 1u)) atomicOr(multi + (r >> 5), 1u << (r & 31));
    }
    __syncthreads();
    }
    if (BAND) {
        // A local root is its component's first run in its first band, but the component's
        // first site may be another run's there (one in the band's first row where the root's
        // sites are all in its second): the root takes the least own fields of its band's nodes.
        // (The parent fields of a root are its own number; the own fields of a band's nodes
        // order as their sites.)
        for (u32 n = threadIdx.x; n < nodes; n += BR_THREADS) {
            const u32 e = ent[n];
            const u32 r = root_from(ent, e, lazy);
            const u32 own = e & OWN_MASK, rown = ((volatile u32*)ent)[r] & OWN_MASK;
            if (r != n && own < rown && (own >> 11) == (rown >> 11))
                atomicMin(ent + r, (r << PAR_SHIFT) | own);
        }
        __syncthreads();
    }

    // 5. Components on the tile's edge: every run of the first and last rows, the runs holding
    // the first and last columns. (Bands: the first band's runs with a site in its first row,
    // the last band's with one in the tile's last row.)
    const u32 last_row = t.rows - 1, last_col = t.cols - 1;
#pragma unroll
    for (u32 j = 0; j < RPW; j++) {
        const u32 r = warp + j * BR_WARPS;
        if (r >= node_rows) continue;
        const u32 occ = plane(sm, BAND ? P_JL : P_OCC, r)[lane];
        const u32 rs = occ & ~plane(sm, P_JL, jl_row + r)[lane];
        const u32 nb = rowbase[r] + excl_pl[r * TWW + lane];
        if (BAND && (r == 0 || r == node_rows - 1) && node_rows > 1) {
            // (One band holds both edge rows: all its runs, as below.) The runs of the band's
            // row `edge` hold each one first site there.
            const u32 edge = r == 0 ? 0u : last_row;
            const u32 eo = plane(sm, P_OCC, edge)[lane];
            const u32 firsts = (edge & 1u) ? first_in_runs(occ, rs, eo, lane)
                                           : (r == 0 ? band_first(sm, r)[lane]
                                                     : rs); // one-row last band: all its runs
            for (u32 m = firsts; m; m &= m - 1)
                br_mark_edge(ent, nb + __popc(rs & le_mask(__ffs(m) - 1)) - 1, lazy);
            if (lane == 0 && (occ & 1u)) br_mark_edge(ent, nb, lazy);
            if (lane == (last_col >> 5) && ((occ >> (last_col & 31)) & 1u))
                br_mark_edge(ent, nb + __popc(rs & le_mask(last_col & 31)) - 1, lazy);
        } else if (r == 0 || r == node_rows - 1) {
            for (u32 k = 0, m = rs; m; m &= m - 1, k++) br_mark_edge(ent, nb + k, lazy);
        } else {
            if (lane == 0 && (occ & 1u)) br_mark_edge(ent, nb, lazy);
            if (lane == (last_col >> 5) && ((occ >> (last_col & 31)) & 1u))
                br_mark_edge(ent, nb + __popc(rs & le_mask(last_col & 31)) - 1, lazy);
        }
    }
    __syncthreads();
    return nodes;
}

#include "bit_runs_records.cuh"

// The size counts' tile pass (br_local_counts): what n_s and the flags need, without records.
//   sf     per site, at each edge component's local root: its size (low word) and, from
//          ns_edges on, the lattice edges its cluster touches (high word, NS_* bits); br_flatten
//          adds every other edge local root's size into its global root's.
//   hist   HIST_CAP + 1 words (hist[s] clusters of s sites), then the tail count; `tail` the
//          (size, span bits) pairs of the clusters listed one by one, at most tail_cap.
struct BrCounts {
    u64* sf;
    u32* hist;
    u32* tail;
    u32 tail_cap;
};

#if !LABEL64

// A cluster listed one by one: larger than HIST_CAP, or spanning (span bits 1 = x, 2 = y).
__device__ __forceinline__ void ns_list(u32* hist, u32* tail, u32 tail_cap, u32 s, u32 span) {
    tail_append(tail, tail_cap, hist + HIST_CAP + 1, s, span);
}

// Adds len into the parent field of root r (FULL: nothing) for every lane, a stretch of
// consecutive lanes with one root summed first (a large component's runs fill whole warps; one
// address takes its atomics one at a time). Every lane of the warp calls it.
__device__ __forceinline__ void add_stretches(u32* ent, u32 r, u32 len, u32 lane) {
    const u32 prev = __shfl_up_sync(FULL, r, 1);
    const u32 heads = __ballot_sync(FULL, lane == 0 || prev != r);
#if __CUDA_ARCH__ >= 800
    if (heads == 1u) {
        len = __reduce_add_sync(FULL, len);
        if (lane) r = FULL;
    } else
#endif
    if (heads != FULL) {
        const u32 above = lane == 31 ? 0u : heads & (FULL << (lane + 1));
        const u32 stretch_end = above ? __ffs(above) - 1 : 32u;
#pragma unroll
        for (u32 o = 1; o < 32; o <<= 1) {
            const u32 v = __shfl_down_sync(FULL, len, o);
            if (lane + o < stretch_end) len += v;
        }
        if (!((heads >> lane) & 1u)) r = FULL;
    }
    if (r != FULL) atomicAdd(ent + r, len << PAR_SHIFT);
}

// The tile's roots' sizes out, after a barrier that follows the sizes and `sh`'s zeroing: an
// interior component's into the shared histogram `sh` (or the list, when larger), then `sh`
// into the global one; an edge component's to its local root's `sf`. A root's parent field
// holds its number + its size.
__device__ __forceinline__ void br_counts_out(u32* sm, const Geo& g, const BrTile& t, u32 nodes,
                                              u32 mine, const BrCounts& c) {
    const u32* ent = sm;
    u32* sh = sm + OFF_RMASK;
    for (u32 n = threadIdx.x, k = 0; n < nodes; n += BR_THREADS, k++) {
        if (!((mine >> k) & 1u)) continue;
        const u32 e = ent[n], s = e_par(e) - n;
        if (e & EDGE) c.sf[entry_key(e, g, t)] = (u64)s;
        else if (s <= HIST_CAP) atomicAdd(sh + s - 1, 1u);
        else ns_list(c.hist, c.tail, c.tail_cap, s, 0u);
    }
    __syncthreads();
    for (u32 i = threadIdx.x; i < HIST_CAP; i += BR_THREADS)
        if (sh[i]) atomicAdd(c.hist + i + 1, sh[i]);
}

// Sizes of the tile's components, after the forest's stores (a root's parent field is its own
// number; every other node's parent is its root). A warp takes a row of nodes (a band with BAND),
// a lane its word: the sites before a run start are a scan of the words' popcounts plus those
// below the start in its word, and a run's size is the difference between its start's count and
// the next start's (the sites between are empty, or the run's own with segments), with no search
// for a node's run. A lane sums its consecutive runs of one root and adds each sum into the root's
// parent field (which becomes its number + its size: a tile has at most 2^15 sites and 2^14 nodes,
// so 16 bits hold it), the lanes' last sums of one root summed across the warp first (a large
// component's runs cross words). Roots are told from the mask of `mine` (in the root masks' words,
// which the size counts leave unused). Then an interior component, a whole cluster that neither
// wraps nor spans, is counted in a shared histogram in the root masks' words (sh[s - 1] counts
// size s), or listed when larger; an edge component's size goes to its local root's `sf`, flags 0.
template <bool BAND>
__device__ __forceinline__ void br_counts(u32* sm, const Geo& g, const BrTile& t, u32 nodes,
                                          u32 mine, const BrCounts& c) {
    u32* ent = sm;
    u32* sh = sm + OFF_RMASK;
    u32* is_root = sm + OFF_RMASK; // bit n: node n is a local root (MAXN / 32 words)
    const u32* excl_pl = sm + OFF_EXCL;
    const u32* rowbase = sm + OFF_ROWBASE;
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    // A warp's nodes k are 32 consecutive ones, one mask word.
    for (u32 k = 0; 32u * warp + BR_THREADS * k < nodes; k++) {
        const u32 w = __ballot_sync(FULL, (mine >> k) & 1u);
        if (lane == 0) is_root[warp + BR_WARPS * k] = w;
    }
    __syncthreads(); // the root bits; the stores of ER and of the forest read the nodes
    constexpr u32 ROWS = BAND ? NB : TH;
    for (u32 r = warp; r < ROWS; r += BR_WARPS) { // uniform across the warp
        u32 a, b, rs;
        if (BAND) {
            a = plane(sm, P_OCC, 2u * r)[lane];
            b = plane(sm, P_OCC, 2u * r + 1u)[lane];
            rs = band_occ(sm, r)[lane] & ~band_jl(sm, r)[lane];
        } else {
            a = plane(sm, P_OCC, r)[lane];
            b = 0u;
            rs = a & ~plane(sm, P_JL, r)[lane];
        }
        const u32 cnt = __popc(a) + __popc(b);
        const u32 incl = warp_incl_scan(cnt, lane);
        const u32 base = incl - cnt;
        // Sites before the word's first start, and before the next word's with a start (or the
        // row's total): where this word's last run ends.
        const u32 below0 = (rs & (0u - rs)) - 1u;
        const u32 first = base + __popc(a & below0) + __popc(b & below0);
        const u32 later = __ballot_sync(FULL, rs != 0u) & ~le_mask(lane);
        const u32 nxt = __shfl_sync(FULL, first, later ? __ffs(later) - 1u : 0u);
        const u32 total = __shfl_sync(FULL, incl, 31);
        const u32 end = later ? nxt : total;
        u32 n = rowbase[r] + excl_pl[r * TWW + lane];
        u32 cur = FULL, acc = 0, p0 = first;
        for (u32 m = rs; m;) {
            m &= m - 1u;
            const u32 below = (m & (0u - m)) - 1u;
            const u32 p1 = m ? base + __popc(a & below) + __popc(b & below) : end;
            const u32 root = ((is_root[n >> 5] >> (n & 31u)) & 1u) ? n : e_par(ent[n]);
            if (root != cur) {
                if (cur != FULL) atomicAdd(ent + cur, acc << PAR_SHIFT);
                cur = root;
                acc = 0;
            }
            acc += p1 - p0;
            p0 = p1;
            n++;
        }
        // The lanes' last sums (a large component's runs cross words).
        add_stretches(ent, cur, acc, lane);
    }
    __syncthreads(); // the sizes; the root mask's last reader
    for (u32 i = threadIdx.x; i < HIST_CAP; i += BR_THREADS) sh[i] = 0;
    __syncthreads();
    br_counts_out(sm, g, t, nodes, mine, c);
}
#endif

// The labeling pass. Grid: one CTA of BR_THREADS per tile (tiles_x * tiles_y); dynamic shared
// memory BR_SMEM_WORDS words, which allows two CTAs per multiprocessor (hence the launch bounds:
// up to 64 registers a thread). ER: the mask of the edge components' local roots (one bit per site,
// 32 words per row and tile column); RB: canonical numbering's mask of the interior roots, or null
// (raw numbering). ANA (br_local_ana): also the records, with OFF_ACC + ACC_FIELDS * slots words.
// vec: bit 0 16-byte loads of u8 rows, bit 1 16-byte label stores, bit 2 (32-bit build, an
// analysis that writes no labels) the forest only: tile-edge sites and local roots' slots; bit 3
// (32-bit build, a labeling whose labels br_write writes once) the forest only, plus the tile's
// runs into RT (RT_TILE u16s a tile): its rows' first nodes, then each node's local root as its
// position in the tile (row << 10 | column, as a node's own fields) | RT_EDGE; with raw
// numbering (count not null) the tile's interior components are counted into *count.
#if !LABEL64
#define RT_PARAM , u16* __restrict__ RT, u32* count
#define RT_ARG , RT, count
#else
#define RT_PARAM
#define RT_ARG
#endif
// RT entries per tile (the row bases, then as many nodes as a tile can have) and the flag of an
// edge component's root.
#define RT_TILE (TH + (SEGMENTS ? TH * TW : TH * TW / 2u))
#define RT_EDGE 0x8000u

// The four sites of a tile row that lane k writes in the 128-column chunk from c0 (columns
// c0 + 4k .. c0 + 4k + 3, whose word k / 8 of the chunk's four comes from its lane by shuffle):
// value(n) of the run holding each occupied one (n counted from the row's nb_l; lane's own
// word: occupancy occ_l, run starts rs_l, first run nb_l), 0 for empty ones.
template <typename F>
__device__ __forceinline__ void chunk_sites(u32 occ_l, u32 rs_l, u32 nb_l, u32 c0, u32 lane,
                                            F value, u32 v[4]) {
    const u32 b0 = (lane & 7u) * 4u;
    const u32 below = b0 ? le_mask(b0 - 1) : 0u;
    const u32 src = (c0 >> 5) + (lane >> 3);
    const u32 occ = __shfl_sync(FULL, occ_l, src);
    const u32 rs = __shfl_sync(FULL, rs_l, src);
    // The run holding bit b0 (if occupied): runs started up to b0, minus one.
    u32 n = __shfl_sync(FULL, nb_l, src) + __popc(rs & below);
#pragma unroll
    for (u32 q = 0; q < 4; q++) {
        n += (rs >> (b0 + q)) & 1u;
        v[q] = ((occ >> (b0 + q)) & 1u) ? value(n - 1) : 0u;
    }
}

#if !LABEL64
// Stores chunk_sites' four labels at out + c0 + 4 lane (16 bytes where vec bit 1 allows and the
// chunk is whole, else one by one within the row's `cols`).
__device__ __forceinline__ void store_chunk(u32* out, u32 c0, u32 lane, u32 cols, u32 vec,
                                            const u32 v[4]) {
    const u32 c = c0 + 4u * lane;
    if ((vec & 2u) && c0 + 128u <= cols) {
        *reinterpret_cast<uint4*>(out + c) = make_uint4(v[0], v[1], v[2], v[3]);
    } else {
#pragma unroll
        for (u32 q = 0; q < 4; q++)
            if (c + q < cols) out[c + q] = v[q];
    }
}

// Every site of the tile once, coalesced, from its node's entry (the label, or the forest: see
// br_local_body): lane k writes columns 4k..4k+3 of each 128-column chunk, whose word (k / 8 of
// the chunk's four) comes from its lane by shuffle. BAND: a row's runs are its band's.
template <bool BAND>
__device__ __forceinline__ void br_store_labels(u32* L, const Geo& g, const BrTile& t, u32 vec,
                                                const u32* sm, bool forest_only, bool lazy) {
    const u32* ent = sm;
    const u32* excl_pl = sm + OFF_EXCL;
    const u32* rowbase = sm + OFF_ROWBASE;
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
    for (u32 j = 0; j < RPW; j++) {
        const u32 r = warp + j * BR_WARPS;
        if (r >= t.rows) continue; // uniform across the warp
        u32* smw = const_cast<u32*>(sm);
        const u32 nr = BAND ? r >> 1 : r; // the row of nodes
        const u32 occ_l = plane(smw, P_OCC, r)[lane];
        const u32 rs_l = BAND ? band_occ(smw, nr)[lane] & ~band_jl(smw, nr)[lane]
                              : occ_l & ~plane(smw, P_JL, r)[lane];
        const u32 nb_l = rowbase[nr] + excl_pl[nr * TWW + lane];
        u32* out = L + (t.y0 + r) * g.w + t.x0;
        if (forest_only && r != 0 && r != t.rows - 1) {
            // Forest only: the later passes read the labels of tile-edge sites (the seams, the
            // lattice's edges) and local roots' slots alone, so an inner row writes its first
            // and last columns only.
            const u32 lc = t.cols - 1;
            if (lane == 0 && (occ_l & 1u)) out[0] = node_key(ent, g, t, root_of(ent, nb_l, lazy)) + 1;
            if (lane == (lc >> 5) && ((occ_l >> (lc & 31)) & 1u)) {
                const u32 m = nb_l + __popc(rs_l & le_mask(lc & 31)) - 1;
                out[lc] = node_key(ent, g, t, root_of(ent, m, lazy)) + 1;
            }
            continue;
        }
        for (u32 c0 = 0; c0 < t.cols; c0 += 128u) {
            u32 v[4];
            chunk_sites(occ_l, rs_l, nb_l, c0, lane,
                        [&](u32 n) {
                            return forest_only ? node_key(ent, g, t, root_of(ent, n, lazy)) + 1
                                               : ent[n];
                        },
                        v);
            store_chunk(out, c0, lane, t.cols, vec, v);
        }
    }
}
#endif

// A local root's bit in its row's mask, from its entry e: edge components' (ER) always,
// interior ones' (RB) when numbering canonically.
__device__ __forceinline__ void br_root_bit(u32* sm, const u32* RB, u32 e) {
    const u32 row = (e >> 10) & 31u, col = e & 1023u;
    if ((e & EDGE) || RB != nullptr)
        atomicOr(sm + ((e & EDGE) ? OFF_EMASK : OFF_RMASK) + row * TWW + (col >> 5),
                 1u << (col & 31));
}

// CNT (br_local_counts, 32-bit build): the forest as without labels (vec bit 2) and the
// components' sizes (br_counts).
template <bool ANA, bool CNT>
__device__ __forceinline__ void br_local_body(const site_t* __restrict__ in, label_t* L LL_PARAM,
                                              const Geo& g, u32 tiles_x, u32 vec, u32* RB,
                                              u32* ER, const BrRec& rec RT_PARAM,
                                              const BrCounts& counts) {
    extern __shared__ u32 sm[];
    const BrTile t = br_tile(g, tiles_x);
    // The root masks (and the analysis's multi-run mask) start empty (br_label_tile's barriers
    // order this before their use).
    for (u32 i = threadIdx.x; i < 2u * TH * TWW; i += BR_THREADS) sm[OFF_RMASK + i] = 0;
    if (ANA)
        for (u32 i = threadIdx.x; i < MAXN / 32u; i += BR_THREADS) sm[OFF_MULTI + i] = 0;
    u32 mine;
    constexpr bool BAND = BANDS;
    // Labels written once with no analysis leave the nodes other than tree roots unflattened
    // (br_label_tile; root_of). The size counts flatten: on the H100 that was 0.00-0.04 ms
    // faster at 16384² than br_counts's two-load find (BENCHMARKS.md).
    const bool lazy = !LABEL64 && !ANA && !CNT && (vec & 8u) != 0;
    const u32 nodes =
        br_label_tile<BAND>(in, g, t, vec, sm, mine, ANA ? sm + OFF_MULTI : nullptr, lazy);
    u32* ent = sm;
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;

    if (ANA) {
        // (br_label_tile marked the roots of more than one run in OFF_MULTI.)
        br_records<BAND>(sm, g, t, nodes, mine, rec);
    }

    // Each entry becomes its node's label, local root + 1: non-roots first (reading their
    // roots' own fields, which stay until the roots' turn), then the roots. (64-bit labels: the
    // local root's tile position + 1, which LL keeps; L gets only the local roots' slots.)
    // Forest only: the entries stay nodes, and the few edge sites written below take their
    // labels from their nodes' roots.
    const bool forest_only = !LABEL64 && (vec & 12u);
#if !LABEL64
    if (vec & 8u) {
        // Write-once labeling: the rows' first nodes and every node's local root, for
        // br_write. (The roots' own fields and EDGE stay as they are below.) With no analysis,
        // the roots' masks and edge slots (the loop after this one) in the same loop.
        u16* rt = RT + (u64)blockIdx.x * RT_TILE;
        if (threadIdx.x < TH) rt[threadIdx.x] = (u16)sm[OFF_ROWBASE + threadIdx.x];
        u32 interior = 0;
        for (u32 n = threadIdx.x, k = 0; n < nodes; n += BR_THREADS, k++) {
            const u32 e = ent[root_of(ent, n, lazy)];
            rt[TH + n] = (u16)((e & OWN_MASK) | ((e & EDGE) ? RT_EDGE : 0u));
            if (!((mine >> k) & 1u)) continue;
            interior += !(e & EDGE);
            if (lazy) {
                // The root loop below, for this root.
                br_root_bit(sm, RB, e);
                if (e & EDGE) {
                    const u32 key = entry_key(e, g, t);
                    L[key] = key + 1;
                }
            }
        }
        if (count != nullptr) { // uniform
            // (A spare word after the row bases, whose last reader is behind this barrier.)
            if (threadIdx.x == 0) sm[OFF_ROWBASE + 48] = 0;
            __syncthreads();
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) interior += __shfl_down_sync(FULL, interior, o);
            if (lane == 0 && interior) atomicAdd(sm + OFF_ROWBASE + 48, interior);
            __syncthreads();
            if (threadIdx.x == 0 && sm[OFF_ROWBASE + 48]) atomicAdd(count, sm[OFF_ROWBASE + 48]);
        }
    }
#endif
    if (!forest_only) {
        for (u32 n = threadIdx.x, k = 0; n < nodes; n += BR_THREADS, k++) {
#if LABEL64
            if (!((mine >> k) & 1u)) ent[n] = (ent[e_par(ent[n])] & OWN_MASK) + 1;
#else
            if (!((mine >> k) & 1u)) ent[n] = node_key(ent, g, t, e_par(ent[n])) + 1;
#endif
        }
        __syncthreads();
    }
    for (u32 n = threadIdx.x, k = 0; n < nodes; n += BR_THREADS, k++) {
        if (lazy || !((mine >> k) & 1u)) continue; // (lazy: done above)
        const u32 e = ent[n];
        br_root_bit(sm, RB, e);
#if LABEL64
        {
            // The local root's slot, the only one of its component the passes before br_final
            // read (every site's local root is in LL).
            const u64 k = node_key(ent, g, t, n);
            L[k] = k + 1;
        }
        ent[n] = (e & OWN_MASK) + 1;
#else
        const u32 key = node_key(ent, g, t, n);
        if (!forest_only) {
            ent[n] = key + 1;
        } else {
            // The root points at itself again (br_records kept an accumulator number in a
            // multi-run root's parent field), so that every node's parent is its root below.
            ent[n] = (e & (OWN_MASK | EDGE)) | (n << PAR_SHIFT);
            // An edge component's local root's own slot, which the label pass below may skip
            // (an interior root's rank comes from the masks: ana_records).
            if (e & EDGE) L[key] = key + 1;
        }
#endif
    }
    __syncthreads();
#pragma unroll
    for (u32 j = 0; j < RPW; j++) {
        const u32 r = warp + j * BR_WARPS;
        if (r >= t.rows) continue;
        const u32 at = (((t.y0 + r) * tiles_x + t.tx) << 5) + lane;
        ER[at] = sm[OFF_EMASK + r * TWW + lane];
        if (RB != nullptr) RB[at] = sm[OFF_RMASK + r * TWW + lane];
    }

#if LABEL64
    // Every site's local root into LL, coalesced: lane k writes columns 4k..4k+3 of each
    // 128-column chunk (8 bytes), whose word (k / 8 of the chunk's four) comes from its lane by
    // shuffle.
    const u32* excl_pl = sm + OFF_EXCL;
    const u32* rowbase = sm + OFF_ROWBASE;
#pragma unroll
    for (u32 j = 0; j < RPW; j++) {
        const u32 r = warp + j * BR_WARPS;
        if (r >= t.rows) continue; // uniform across the warp
        const u32 occ_l = plane(sm, P_OCC, r)[lane];
        const u32 rs_l = occ_l & ~plane(sm, P_JL, r)[lane];
        const u32 nb_l = rowbase[r] + excl_pl[r * TWW + lane];
        u16* out = LL + (u64)(t.y0 + r) * g.w + t.x0;
        for (u32 c0 = 0; c0 < t.cols; c0 += 128u) {
            u32 v[4];
            chunk_sites(occ_l, rs_l, nb_l, c0, lane, [&](u32 n) { return ent[n]; }, v);
            const u32 c = c0 + 4u * lane;
            if ((vec & 2u) && c0 + 128u <= t.cols) {
                *reinterpret_cast<uint2*>(out + c) = make_uint2(v[0] | v[1] << 16, v[2] | v[3] << 16);
            } else {
#pragma unroll
                for (u32 q = 0; q < 4; q++)
                    if (c + q < t.cols) out[c + q] = (u16)v[q];
            }
        }
    }
#else
    br_store_labels<BAND>(L, g, t, vec, sm, forest_only, lazy);
    if (CNT) br_counts<BAND>(sm, g, t, nodes, mine, counts);
#endif
}

extern "C" __global__ void __launch_bounds__(BR_THREADS, LOCAL_MINB)
br_local(const site_t* __restrict__ in, label_t* L LL_PARAM, Geo g, u32 tiles_x, u32 vec, u32* RB,
         u32* ER RT_PARAM) {
    br_local_body<false, false>(in, L LL_ARG, g, tiles_x, vec, RB, ER, BrRec{} RT_ARG, BrCounts{});
}

#if !LABEL64
// br_local plus the tile's component records for the cluster analysis (br_records); RB must be
// given (canonical numbering ranks the pieces).
extern "C" __global__ void __launch_bounds__(BR_THREADS, ANA_MINB)
br_local_ana(const site_t* __restrict__ in, u32* L, Geo g, u32 tiles_x, u32 vec, u32* RB,
             u32* ER, BrRec rec) {
    br_local_body<true, false>(in, L, g, tiles_x, vec, RB, ER, rec, nullptr, nullptr, BrCounts{});
}

// The size counts' tile pass: the forest as an analysis without labels writes it (vec bit 2; raw
// numbering, so no interior-root mask), the edge components' sizes into `c.sf` and the interior
// components into the histogram (br_counts). Same launch as br_local.
extern "C" __global__ void __launch_bounds__(BR_THREADS, LOCAL_MINB)
br_local_counts(const site_t* __restrict__ in, u32* L, Geo g, u32 tiles_x, u32 vec, u32* ER,
                BrCounts c) {
    br_local_body<false, true>(in, L, g, tiles_x, vec, nullptr, ER, BrRec{}, nullptr, nullptr, c);
}

// Occupancy and joins to the left of the 32 sites of row y from column x (the lane's word of a
// tile row), as br_load_masks finds them; every lane of the warp calls it.
__device__ __forceinline__ void row_occ_jl(const site_t* __restrict__ in, const Geo& g, u32 y,
                                           u32 x, u32 lane, u32 vec, u32& occ, u32& jl) {
#if SEGMENTS
    occ = 0;
    jl = 0;
    if (x < g.w) {
        const u32 n = min(32u, g.w - x);
        const idx_t base = (idx_t)y * g.w + x;
        site_t ap = lane ? in[base - 1] : (site_t)0;
        for (u32 i = 0; i < n; i++) {
            const site_t a = in[base + i];
            if (a != 0) {
                occ |= 1u << i;
                if (a == ap) jl |= 1u << i;
            }
            ap = a;
        }
    }
#else
    occ = load_occ(in, g, y, x, vec & 1u);
    jl = occ & shl1(occ, lane);
#endif
}

// Canonical rank of the root at site (y, x) from the masks, as br_publish numbers it: the chunk's
// and the entry's first ranks (CHUNK, CNT), the roots before the root's word in its entry (PRE,
// br_count) and those before it in its word (RB).
__device__ __forceinline__ u32 br_mask_rank(const u32* __restrict__ RB, const u32* __restrict__ CNT,
                                            const u32* __restrict__ CHUNK,
                                            const u16* __restrict__ PRE, u32 tiles_x, u32 y,
                                            u32 x) {
    const u32 e = y * tiles_x + (x >> 10), wi = (e << 5) + ((x & 1023u) >> 5);
    return CHUNK[e / BR_CHUNK] + CNT[e] + PRE[wi] + __popc(RB[wi] & ((1u << (x & 31u)) - 1u));
}

// What br_write ranks interior roots by (canonical numbering): br_mask_rank's arrays.
struct BrRanks {
    const u32* rb;
    const u32* cnt;
    const u32* chunk;
    const u16* pre;
};

// The label of a site whose local root has RT entry e, in the tile whose first site is
// (y0, x0): raw, the root's site + 1 for an interior component, its slot (its global root + 1,
// after br_flatten) for an edge one; canonical, rank + 1, from the masks for an interior
// component and from the FLAG | rank in its slot (br_rank_edges) for an edge one. A slot that
// this pass has already overwritten holds that same label (the root's own), so the order of the
// tiles' rows does not matter.
__device__ __forceinline__ u32 br_run_label(const u32* L, const Geo& g, u32 y0, u32 x0, u32 e,
                                            u32 canonical, const BrRanks& rk, u32 tiles_x) {
    const u32 y = y0 + ((e >> 10) & 31u), x = x0 + (e & 1023u);
    const u32 key = y * g.w + x;
    if (!(e & RT_EDGE)) {
        return canonical ? br_mask_rank(rk.rb, rk.cnt, rk.chunk, rk.pre, tiles_x, y, x) + 1
                         : key + 1;
    }
    const u32 u = L[key];
    if (!canonical) return u; // (raw labels may have bit 31 set)
    return (u & FLAG) ? (u & ~FLAG) + 1 : u;
}

// A raw write-once labeling's edge components' global roots, counted into *count from the
// `words` words of ER that br_flatten left holding only those (br_local counted the interior
// components). Counting them in br_write cost it a seventh of its time. Grid-stride, CTAs of 256.
extern "C" __global__ void __launch_bounds__(256)
br_count_roots(const u32* __restrict__ ER, u32 words, u32* count) {
    pdl_wait();
    u32 roots = 0;
    for (u32 i = blockIdx.x * 256u + threadIdx.x; i < words; i += gridDim.x * 256u)
        roots += __popc(ER[i]);
    block_add(count, roots);
}

// The write-once labeling's last pass (after br_local with vec bit 3, the seams, the flatten
// and, canonical, the ranking), in place of br_final: a warp per tile row finds its runs from the
// lattice, labels them (a lane a run: RT from the row's first node on, br_run_label) in shared
// memory and writes every site's label once, coalesced as br_local writes them. Grid: (tiles_x,
// min(ceil(h / 8), 65535)) CTAs of 256 threads, rows grid-strided; vec bits 0 and 1 as
// br_local's.
#define RUNS_PER_ROW (SEGMENTS ? TW : TW / 2u)
extern "C" __global__ void __launch_bounds__(256)
br_write(const site_t* __restrict__ in, u32* L, const u16* __restrict__ RT, Geo g, u32 tiles_x,
         u32 vec, u32 canonical, BrRanks rk) {
    // A row's sites are read and its runs found while the passes before may still be ending
    // (PDL: the lattice was there before they began); RT and L only after pdl_wait.
    pdl_anchor();
    __shared__ u32 labels[8][RUNS_PER_ROW];
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const u32 tx = blockIdx.x, x0 = tx * TW;
    const u32 cols = min(TW, g.w - x0);
    u32* lab = labels[warp];
#if BANDS
    // A warp a band: its runs are those of its two rows' OR, labeled once for both rows.
    for (u32 y = 2u * (blockIdx.y * 8u + warp); y < g.h; y += 2u * gridDim.y * 8u) {
        const u32 ty = y / TH, y0 = ty * TH;
        const u16* rt = RT + (u64)(ty * tiles_x + tx) * RT_TILE;
        const u32 x = x0 + 32u * lane;
        const u32 top = load_occ(in, g, y, x, vec & 1u);
        const u32 bot = y + 1 < g.h ? load_occ(in, g, y + 1, x, vec & 1u) : 0u;
        const u32 m = top | bot;
        const u32 rs_l = m & ~shl1(m, lane);
        const u32 starts = __popc(rs_l);
        const u32 incl = warp_incl_scan(starts, lane);
        const u32 nb_l = incl - starts; // the word's first run in the band
        const u32 runs = __shfl_sync(FULL, incl, 31);
        pdl_wait();
        const u16* node = rt + TH + rt[(y - y0) >> 1];
        __syncwarp(); // the last band's reads of `lab` are over
        for (u32 i = lane; i < runs; i += 32u)
            lab[i] = br_run_label(L, g, y0, x0, node[i], canonical, rk, tiles_x);
        __syncwarp();
        for (u32 h = 0; h < 2u && y + h < g.h; h++) {
            u32* out = L + (y + h) * g.w + x0;
            const u32 occ_l = h ? bot : top;
            for (u32 c0 = 0; c0 < cols; c0 += 128u) {
                u32 v[4];
                chunk_sites(occ_l, rs_l, nb_l, c0, lane, [&](u32 n) { return lab[n]; }, v);
                store_chunk(out, c0, lane, cols, vec, v);
            }
        }
    }
#else
    for (u32 y = blockIdx.y * 8u + warp; y < g.h; y += gridDim.y * 8u) { // uniform in a warp
        const u32 ty = y / TH, y0 = ty * TH;
        const u16* rt = RT + (u64)(ty * tiles_x + tx) * RT_TILE;
        u32 occ_l, jl_l;
        row_occ_jl(in, g, y, x0 + 32u * lane, lane, vec, occ_l, jl_l);
        const u32 rs_l = occ_l & ~jl_l;
        const u32 starts = __popc(rs_l);
        const u32 incl = warp_incl_scan(starts, lane);
        const u32 nb_l = incl - starts; // the word's first run in the row
        const u32 runs = __shfl_sync(FULL, incl, 31);
        pdl_wait();
        const u16* node = rt + TH + rt[y - y0];
        __syncwarp(); // the last row's reads of `lab` are over
        for (u32 i = lane; i < runs; i += 32u)
            lab[i] = br_run_label(L, g, y0, x0, node[i], canonical, rk, tiles_x);
        __syncwarp();
        u32* out = L + y * g.w + x0;
        for (u32 c0 = 0; c0 < cols; c0 += 128u) {
            u32 v[4];
            chunk_sites(occ_l, rs_l, nb_l, c0, lane, [&](u32 n) { return lab[n]; }, v);
            store_chunk(out, c0, lane, cols, vec, v);
        }
    }
#endif
}
#endif

// br_merge's part of the grid for this block: mode 0 rows, 1 columns; mode 2 runs both in one
// launch, the rows' seams in the y blocks below `split` and the columns' in the rest (so that
// neither kind has blocks with no seam to take). by / gy: this block's first seam and the stride.
struct SeamGrid {
    u32 mode, by, gy;
};
__device__ __forceinline__ SeamGrid seam_grid(u32 mode, u32 split) {
    if (mode < 2u) return SeamGrid{mode, blockIdx.y, gridDim.y};
    if (blockIdx.y < split) return SeamGrid{0u, blockIdx.y, split};
    return SeamGrid{1u, blockIdx.y - split, gridDim.y - split};
}

#if LABEL64
// Local root + 1 of site (y, x) from LL (0 when empty): the root's position in the site's tile.
__device__ __forceinline__ u64 lr1(const u16* __restrict__ LL, const Geo& g, u32 y, u32 x) {
    const u32 c = LL[(u64)y * g.w + x];
    if (c == 0) return 0ull;
    return (u64)((y & ~(TH - 1u)) + ((c - 1) >> 10)) * g.w + (x & ~(TW - 1u)) + ((c - 1) & 1023u) +
           1;
}

// Unites the global sets of an edge site's local root (ls - 1; the site holds cs) and that of
// site (y, x) when the two sites are joined.
__device__ __forceinline__ void br_join(const site_t* __restrict__ in, u64* L,
                                        const u16* __restrict__ LL, const Geo& g, site_t cs,
                                        u64 ls, u32 y, u32 x) {
    if (joined_values(cs, in[(u64)y * g.w + x])) unite(L, g, ls - 1, lr1(LL, g, y, x) - 1);
}

// The 32-bit br_merge below with local roots read from LL (the 64-bit L holds only the local
// roots' slots).
__device__ __forceinline__ void seam_lines(u32 j, u32 tiles, u32 span, u32 n, u32* before,
                                           u32* after) {
    *after = j + 1 < tiles ? (j + 1) * span : 0u;
    *before = j + 1 < tiles ? *after - 1 : n - 1;
}

extern "C" __global__ void __launch_bounds__(256)
br_merge(const site_t* __restrict__ in, u64* L, const u16* __restrict__ LL, Geo g, u32 tiles_x,
         u32 tiles_y, u32 wrap_x, u32 wrap_y, u32 mode, u32 split) {
    pdl_wait();
    const SeamGrid sg = seam_grid(mode, split);
    if (sg.mode == 0) {
        const u32 x = blockIdx.x * blockDim.x + threadIdx.x;
        if (x >= g.w) return;
        const u32 seams = tiles_y - 1 + wrap_y;
        for (u32 j = sg.by; j < seams; j += sg.gy) {
            u32 yt, yb;
            seam_lines(j, tiles_y, TH, g.h, &yt, &yb);
            const u64 b = (u64)yb * g.w + x, t = (u64)yt * g.w + x;
            const site_t cb = in[b];
            if (!cb) continue;
            const u64 lb = lr1(LL, g, yb, x);
            const site_t ct = in[t];
            const bool vert = joined_values(cb, ct);
            const u64 lt = vert ? lr1(LL, g, yt, x) : 0ull;
            if (vert) {
                // The same pair of local components as at x - 1: already united there.
                const bool dup = x > 0 && joined_values(in[b - 1], in[t - 1]) &&
                                 lr1(LL, g, yb, x - 1) == lb && lr1(LL, g, yt, x - 1) == lt;
                if (!dup) unite(L, g, lb - 1, lt - 1);
            }
#if CONN8
            if (x > 0 || wrap_x) {
                const u32 ox = x > 0 ? x - 1 : g.w - 1;
                if (!(vert && lr1(LL, g, yt, ox) == lt)) br_join(in, L, LL, g, cb, lb, yt, ox);
            }
            if (x + 1 < g.w || wrap_x) {
                const u32 ox = x + 1 < g.w ? x + 1 : 0u;
                if (!(vert && lr1(LL, g, yt, ox) == lt)) br_join(in, L, LL, g, cb, lb, yt, ox);
            }
#endif
        }
    } else {
        const u32 y = blockIdx.x * blockDim.x + threadIdx.x;
        if (y >= g.h) return;
        const u32 seams = tiles_x - 1 + wrap_x;
        for (u32 j = sg.by; j < seams; j += sg.gy) {
            u32 xl, xr;
            seam_lines(j, tiles_x, TW, g.w, &xl, &xr);
            const site_t cs = in[(u64)y * g.w + xr];
            if (!cs) continue;
            const u64 ls = lr1(LL, g, y, xr);
            br_join(in, L, LL, g, cs, ls, y, xl);
#if CONN8
            if (y > 0 || wrap_y) br_join(in, L, LL, g, cs, ls, y > 0 ? y - 1 : g.h - 1, xl);
            if (y + 1 < g.h || wrap_y) br_join(in, L, LL, g, cs, ls, y + 1 < g.h ? y + 1 : 0u, xl);
#endif
        }
    }
}
#else
// Unites the sets of two local roots (their labels a and b, root + 1) unless one already points
// at the other or both at the same node. A dense lattice's giant cluster meets a seam in hundreds
// of runs of the same two local components; the seams' first links, made at once, chain its
// local roots tile after tile, and every later union of the pair would walk that chain.
__device__ __forceinline__ void seam_unite(label_t* L, const Geo& g, label_t a, label_t b) {
    const label_t pa = ld_cg(L + a - 1), pb = ld_cg(L + b - 1);
    if (pa == b || pb == a || pa == pb) return;
    unite(L, g, a - 1, b - 1);
}

// The two lines (rows or columns) that seam j faces across, among `tiles` tiles of `span` lines
// over n lines: seam j < tiles - 1 lies between tiles j and j + 1, seam tiles - 1 is the periodic
// edge between line n - 1 and line 0.
__device__ __forceinline__ void seam_lines(u32 j, u32 tiles, u32 span, u32 n, u32* before,
                                           u32* after) {
    *after = j + 1 < tiles ? (j + 1) * span : 0u;
    *before = j + 1 < tiles ? *after - 1 : n - 1;
}

// One site's 8-connected contacts across a seam, rows' or columns' alike: site s (value cs)
// meets the site across, a (ca), and the two diagonal ones d0 and d1 (c0, c1: before and after
// it along the seam); n0 and n1 are s's neighbours before and after it along the seam on its own
// side, and in0 / in1 whether those (and d0 / d1 on the far side) lie in the same tiles (values
// 0 where not). A contact is skipped where another site unites the same pair of local
// components: the straight one when s's neighbour n0 is joined to s and d0 to a (the straight
// contact at n0 unites them); a diagonal one when it is joined to a in its tile (the straight
// contact unites it), or when s's neighbour on that side makes the straight contact with it.
// Those tests read the lattice only; labels are loaded for the unions that remain.
__device__ __forceinline__ void seam_contacts8(label_t* L, const Geo& g, idx_t s, site_t cs,
                                               idx_t a, site_t ca, idx_t d0, site_t c0, idx_t d1,
                                               site_t c1, site_t n0, site_t n1, bool in0,
                                               bool in1) {
    const bool straight = joined_values(cs, ca);
    const bool n0_s = joined_values(n0, cs), n1_s = joined_values(n1, cs);
    const bool d0_a = in0 && joined_values(c0, ca), d1_a = in1 && joined_values(c1, ca);
    pdl_wait(); // (the labels below are the tile pass's)
    label_t ls = 0; // loaded at the first union
    if (straight && !(n0_s && d0_a)) {
        ls = ld_cg(L + s);
        seam_unite(L, g, ls, ld_cg(L + a));
    }
    if (joined_values(cs, c0) && !(straight && d0_a) && !(n0_s && joined_values(n0, c0))) {
        if (!ls) ls = ld_cg(L + s);
        seam_unite(L, g, ls, ld_cg(L + d0));
    }
    if (joined_values(cs, c1) && !(straight && d1_a) && !(n1_s && joined_values(n1, c1))) {
        if (!ls) ls = ld_cg(L + s);
        seam_unite(L, g, ls, ld_cg(L + d1));
    }
}

// The seams. mode 0: rows; seam j < tiles_y - 1 is between tile rows j and j + 1, seam
// tiles_y - 1 the periodic y edge; grid (ceil(w / (256 cols)), min(seams, 65535)), CTA 256,
// `cols` columns a thread (src/cuda/bit_runs/mod.rs: merge_cols; 1 or 2, and 1 with
// 8-connectivity). mode 1: columns, likewise, one thread per row. mode 2 runs
// both in one launch (seam_grid; the unions commute), its x span the larger of the two: on small
// lattices each launch is mostly latency. A contact that another one unites already is
// skipped, decided from the lattice alone (sites joined within a tile are of one local
// component): a straight one that continues the straight one before it in the same tiles, and
// (8-connectivity) a diagonal one whose far site is joined to the site straight across, or whose
// near site's neighbour makes a straight contact with it. Only the contacts left load labels: a
// thread's chain of dependent loads is most of this pass's time.
extern "C" __global__ void __launch_bounds__(256)
br_merge(const site_t* __restrict__ in, label_t* L, Geo g, u32 tiles_x, u32 tiles_y, u32 wrap_x,
         u32 wrap_y, u32 mode, u32 split, u32 cols) {
    // The lattice's sites are read while the tile pass may still be ending (PDL: they were there
    // before it began); the labels only after pdl_wait.
    pdl_anchor();
    const SeamGrid sg = seam_grid(mode, split);
    if (sg.mode == 0) {
        // 4-connectivity on large lattices: two columns a thread. A contact's first column is at
        // most every other one on occupancy, so a thread unites at most once and a warp waits
        // for one union's chain of loads at most, over half as many warps.
        const u32 x = cols * (blockIdx.x * blockDim.x + threadIdx.x);
        if (x >= g.w) return;
        const u32 seams = tiles_y - 1 + wrap_y;
        for (u32 j = sg.by; j < seams; j += sg.gy) {
            u32 yt, yb;
            seam_lines(j, tiles_y, TH, g.h, &yt, &yb);
            const idx_t b = (idx_t)yb * g.w + x, t = (idx_t)yt * g.w + x;
#if !CONN8
            // Only a contact's first column unites: one that continues the contact at x - 1 in
            // the same tiles (both sites joined to their left neighbours, so of the same local
            // components) joins the pair joined there. The lattice alone decides it, so no
            // other column loads a label. (x is even and tiles 1024 wide: x + 1 is in x's tiles.)
            const bool two = cols > 1u && x + 1 < g.w;
            const site_t cb = in[b], ct = in[t];
            const site_t cb1 = two ? in[b + 1] : (site_t)0, ct1 = two ? in[t + 1] : (site_t)0;
            const bool first =
                joined_values(cb, ct) &&
                !((x & (TW - 1u)) && joined_values(in[b - 1], cb) && joined_values(in[t - 1], ct));
            const bool second =
                joined_values(cb1, ct1) && !(joined_values(cb, cb1) && joined_values(ct, ct1));
            if (first || second) pdl_wait();
            if (first) seam_unite(L, g, ld_cg(L + b), ld_cg(L + t));
            if (second) seam_unite(L, g, ld_cg(L + b + 1), ld_cg(L + t + 1));
#else
            const site_t cb = in[b];
            if (!cb) continue;
            // 8-connectivity: the site across (t), the two diagonal ones (ol, or_) and b's
            // neighbours along the seam where they lie in its tile (seam_contacts8).
            const bool lin = (x & (TW - 1u)) != 0;                     // x - 1 in the tiles
            const bool rin = x + 1 < g.w && ((x + 1) & (TW - 1u)) != 0; // x + 1 in the tiles
            const idx_t ol = (idx_t)yt * g.w + (x > 0 ? x - 1 : g.w - 1);
            const idx_t or_ = (idx_t)yt * g.w + (x + 1 < g.w ? x + 1 : 0u);
            const site_t tl = (x > 0 || wrap_x) ? in[ol] : (site_t)0;
            const site_t tr = (x + 1 < g.w || wrap_x) ? in[or_] : (site_t)0;
            const site_t bl = lin ? in[b - 1] : (site_t)0, bq = rin ? in[b + 1] : (site_t)0;
            seam_contacts8(L, g, b, cb, t, in[t], ol, tl, or_, tr, bl, bq, lin, rin);
#endif
        }
    } else {
        const u32 y = blockIdx.x * blockDim.x + threadIdx.x;
        if (y >= g.h) return;
        const u32 seams = tiles_x - 1 + wrap_x;
        for (u32 j = sg.by; j < seams; j += sg.gy) {
            u32 xl, xr;
            seam_lines(j, tiles_x, TW, g.w, &xl, &xr);
            const idx_t s = (idx_t)y * g.w + xr, l = (idx_t)y * g.w + xl;
            const site_t cs = in[s];
            if (!cs) continue;
#if !CONN8
            // As the rows' seams: only a contact's first row (in the tiles) unites.
            const site_t cl = in[l];
            if (!joined_values(cs, cl)) continue;
            if ((y & (TH - 1u)) && joined_values(in[s - g.w], cs) && joined_values(in[l - g.w], cl))
                continue;
            pdl_wait();
            seam_unite(L, g, ld_cg(L + s), ld_cg(L + l));
#else
            // As the rows' seams, across a column seam: the site across (l), the diagonal ones
            // above and below it (ou, od) and s's neighbours above and below in its tile.
            const bool uin = (y & (TH - 1u)) != 0;                     // y - 1 in the tiles
            const bool din = y + 1 < g.h && ((y + 1) & (TH - 1u)) != 0; // y + 1 in the tiles
            const idx_t ou = (idx_t)(y > 0 ? y - 1 : g.h - 1) * g.w + xl;
            const idx_t od = (idx_t)(y + 1 < g.h ? y + 1 : 0u) * g.w + xl;
            const site_t lu = (y > 0 || wrap_y) ? in[ou] : (site_t)0;
            const site_t ld = (y + 1 < g.h || wrap_y) ? in[od] : (site_t)0;
            const site_t su = uin ? in[s - g.w] : (site_t)0, sd = din ? in[s + g.w] : (site_t)0;
            seam_contacts8(L, g, s, cs, l, in[l], ou, lu, od, ld, su, sd, uin, din);
#endif
        }
    }
}
#endif

// The root of site k in L without stores (canonical flags are not set yet).
__device__ __forceinline__ idx_t br_root(const label_t* L, idx_t k) {
    label_t v = ld_cg(L + k);
    while (v != k + 1) {
        k = v - 1;
        v = ld_cg(L + k);
    }
    return k;
}

// The site of bit 0 of mask word i (RB and ER: 32 words per (row, tile column) entry, in raster
// order of the entries).
__device__ __forceinline__ idx_t mask_site(const Geo& g, u32 tiles_x, u32 i) {
    const u32 e = i >> 5;
    const u32 y = e / tiles_x, tx = e - y * tiles_x;
    return (idx_t)y * g.w + tx * TW + 32u * (i & 31);
}

// Flatten: each edge component's local root (ER; a thread per word) that is not its global root
// points straight at it, so that every site is one step from its global root (sites point at
// their local roots; an edge site that is a local root which the merge linked onward is in ER
// itself). RB (canonical numbering, else null) gets the bit of each global root; with `globals`
// (a raw write-once labeling, the size counts) ER keeps only those. 2^split threads a word, each
// taking 32 >> split of its bits: a small lattice has few words, and those of a tile's first row
// hold several roots each, whose finds one thread would walk one after another. Grid: up to
// ceil((32 * entries << split) / 256) CTAs of 256; fewer take consecutive stretches of 256
// threads' words in turn.
//
// With SF (the size counts, else null) every other edge local root's size is added into its
// global root's. At p_c a quarter of the edge local roots belong to the largest cluster, and one
// address takes its atomics one at a time: a thread's run of roots of one cluster is summed
// first, then the CTA's sums in a shared table keyed by global root (FL_SLOTS, linear probing;
// a root that finds no slot adds straight into SF), which sends one atomic a root a CTA.
#define FL_SLOTS 256u
#define FL_PROBES 4u
#define FL_EMPTY 0xffffffffu
#if !LABEL64
// Adds v into root R's entry of the CTA's table, or into SF when no slot takes it.
__device__ __forceinline__ void fl_add(u32* key, u32* val, u64* SF, u32 R, u32 v) {
    u32 h = (R * 2654435761u) >> 24; // FL_SLOTS = 2^8
    for (u32 p = 0; p < FL_PROBES; p++, h = (h + 1) & (FL_SLOTS - 1)) {
        const u32 k = key[h] == R ? R : atomicCAS(key + h, FL_EMPTY, R);
        if (k == FL_EMPTY || k == R) {
            atomicAdd(val + h, v);
            return;
        }
    }
    atomicAdd((unsigned long long*)(SF + R), (unsigned long long)v);
}
#endif

extern "C" __global__ void __launch_bounds__(256)
br_flatten(label_t* L, Geo g, u32* ER, u32* RB, u32 tiles_x, u32 entries, u32 split,
           u32 globals, u64* SF) {
    pdl_wait();
    const u64 total = (u64)(32u * entries) << split;
    const u64 per = (u64)gridDim.x * blockDim.x;
    const u32 rounds = (u32)((total + per - 1) / per);
    const u32 width = 32u >> split;
#if !LABEL64
    __shared__ u32 s_key[FL_SLOTS], s_val[FL_SLOTS];
    if (SF != nullptr) { // uniform
        s_key[threadIdx.x] = FL_EMPTY;
        s_val[threadIdx.x] = 0;
        __syncthreads();
    }
    u32 to = FL_EMPTY; // the global root that `add` goes to
    u32 add = 0;
#endif
    for (u32 round = 0; round < rounds; round++) {
        const u64 th = ((u64)blockIdx.x * rounds + round) * blockDim.x + threadIdx.x;
        const u32 i = (u32)(th >> split);
        if (th >= total) break; // (the CTA's last stretch; the table's barrier is after the loop)
        const u32 part = (u32)th & ((1u << split) - 1u);
        const u32 keep = width == 32u ? FULL : ((1u << width) - 1u) << (part * width);
        u32 word = ER[i] & keep;
        const idx_t base = mask_site(g, tiles_x, i);
        u32 global = 0;
        while (word) {
            const u32 b = __ffs(word) - 1;
            word &= word - 1;
            const idx_t r = base + b;
            const label_t v = ld_cg(L + r);
            if (v == r + 1) {
                global |= 1u << b;
                continue;
            }
            // Most edge components span two tiles: their local roots point at the global root
            // already, and a store that changes nothing still costs a scattered sector.
            const idx_t R = br_root(L, v - 1);
            if (v != R + 1) L[r] = R + 1;
#if !LABEL64
            if (SF != nullptr) {
                if (R != to) {
                    if (add) fl_add(s_key, s_val, SF, to, add);
                    to = R;
                    add = 0;
                }
                add += (u32)SF[r]; // (sums below 2^31: the analysis's lattices are smaller)
            }
#endif
        }
        // A reduction: no thread waits for the word (a load and a store took a fifth of the pass).
        if (RB != nullptr && global) atomicOr(RB + i, global);
        if (globals) {
            // ER keeps the global roots only (br_count_roots counts them; a count here, with an
            // atomic a warp or a barrier, took a third to two thirds more time).
            if (split) atomicAnd(ER + i, global | ~keep);
            else if (global != ER[i]) ER[i] = global;
        }
    }
#if !LABEL64
    if (SF != nullptr) {
        if (add) fl_add(s_key, s_val, SF, to, add);
        __syncthreads();
        const u32 k = s_key[threadIdx.x];
        if (k != FL_EMPTY)
            atomicAdd((unsigned long long*)(SF + k), (unsigned long long)s_val[threadIdx.x]);
    }
#endif
}

// Roots per (row, tile column) entry, in raster order: CNT[e] = the entry's first rank within its
// chunk of BR_CHUNK entries, CHUNK[c] = the chunk's total (scanned by canon_scan afterwards);
// PRE (or null) the roots before each mask word in its entry, for ana_records' ranks of interior
// roots. Grid: ceil(entries / BR_CHUNK) CTAs of 256 threads.
extern "C" __global__ void __launch_bounds__(256)
br_count(const u32* __restrict__ RB, u32 entries, u32* CNT, label_t* CHUNK, u16* PRE) {
    pdl_wait();
    __shared__ u32 s_cnt[BR_CHUNK];
    __shared__ u32 scratch[32];
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const u32 first = blockIdx.x * BR_CHUNK;
#pragma unroll 4
    for (u32 i = 0; i < 32; i++) {
        const u32 e = first + warp * 32 + i;
        u32 c = e < entries ? __popc(RB[(e << 5) + lane]) : 0u;
        if (PRE != nullptr) { // uniform
            const u32 before = warp_incl_scan(c, lane) - c;
            if (e < entries) PRE[(e << 5) + lane] = (u16)before;
        }
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) c += __shfl_xor_sync(FULL, c, o);
        if (lane == 0) s_cnt[warp * 32 + i] = c;
    }
    __syncthreads();
    u32 total;
    const u32 before = block_exclusive_scan(s_cnt[threadIdx.x], scratch, &total);
    if (first + threadIdx.x < entries) CNT[first + threadIdx.x] = before;
    if (threadIdx.x == 0) CHUNK[blockIdx.x] = total;
}

// Canonical numbering: each root in RB gets FLAG | rank in its slot, rank = CHUNK[e / BR_CHUNK] +
// CNT[e] + the roots before it in the (row, tile column) entry e. One warp per entry of 32 words;
// the nonempty words are taken in turn, bit k by lane k, so that each store of the warp falls in
// one 128-byte line (roots are dense at p_c: scattered stores cost a sector read each).
// The cluster analysis (32-bit build) also passes ER, the edge components' local roots: with
// `edge_only` (an analysis without labels, which ranks interior roots from the masks) only the
// roots in ER are published, and with rows `a` the row of each root in ER (an edge piece, which
// ana_records adds into with atomics) is set empty. Grid: ceil(entries / 8) CTAs of 256 threads.
extern "C" __global__ void __launch_bounds__(256)
br_publish(label_t* L, Geo g, const u32* __restrict__ RB, const u32* __restrict__ CNT,
           const label_t* __restrict__ CHUNK, u32 tiles_x, u32 entries,
           const u32* __restrict__ ER, u32 edge_only, row_t* a, u32 moments) {
    pdl_wait();
    const u32 e = blockIdx.x * 8u + (threadIdx.x >> 5);
    const u32 lane = threadIdx.x & 31;
    if (e >= entries) return; // uniform across the warp
    const u32 mine = RB[(e << 5) + lane];
    const u32 er = ER != nullptr ? ER[(e << 5) + lane] : 0u;
    const u32 pub = edge_only ? mine & er : mine;
    const u32 c = __popc(mine);
    const label_t first_l = CHUNK[e / BR_CHUNK] + CNT[e] + warp_incl_scan(c, lane) - c;
    label_t* row = L + mask_site(g, tiles_x, e << 5);
    const u32 below = lane ? le_mask(lane - 1) : 0u;
    u32 todo = __ballot_sync(FULL, pub != 0);
    while (todo) {
        const u32 q = __ffs(todo) - 1;
        todo &= todo - 1;
        const u32 word = __shfl_sync(FULL, mine, q);
        const u32 wpub = __shfl_sync(FULL, pub, q);
        const u32 wer = __shfl_sync(FULL, er, q);
        const label_t first = __shfl_sync(FULL, first_l, q);
        if ((wpub >> lane) & 1u) {
            const label_t rank = first + __popc(word & below);
            row[32u * q + lane] = LFLAG | rank;
#if !LABEL64
            if (a != nullptr && ((wer >> lane) & 1u)) put_empty(a + rank, moments != 0);
#else
            (void)wer;
            (void)a;
            (void)moments;
#endif
        }
    }
}

// The sites of the bits of the calling thread's word of a mask laid out as RB (ER, RB: a thread
// a word of 32 * entries, CTAs of 256), passed to f in turn.
template <class F>
__device__ __forceinline__ void mask_word_sites(const u32* __restrict__ M, const Geo& g,
                                                u32 tiles_x, u32 entries, F f) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= 32u * entries) return;
    u32 word = M[i];
    const idx_t base = mask_site(g, tiles_x, i);
    while (word) {
        const u32 b = __ffs(word) - 1;
        word &= word - 1;
        f(base + b);
    }
}

// Canonical numbering, after br_publish: each edge component's local root (ER, laid out as RB)
// that is not its global root takes the root's FLAG | rank, so that every occupied site finds a
// flagged slot in its own or its local root's slot. These are few: a thread per word.
// Grid: ceil(32 * entries / 256) CTAs of 256.
extern "C" __global__ void __launch_bounds__(256)
br_spread(label_t* L, Geo g, const u32* __restrict__ ER, u32 tiles_x, u32 entries) {
    pdl_wait();
    mask_word_sites(ER, g, tiles_x, entries, [&](idx_t s) {
        const label_t f = ld_cg(L + s);
        if (!(f & LFLAG)) L[s] = ld_cg(L + (f - 1));
    });
}

#if !LABEL64
// A canonical write-once labeling's ranks of edge components (after br_count and canon_scan, in
// place of br_publish and br_spread): each edge component's local root (ER, a thread a word)
// takes FLAG | the rank of its global root, which its slot points at (br_flatten; its own site
// at a global root) and the masks rank as br_write ranks interior roots. A thread reads and
// writes only its own word's slots, so the scattered store of every global root's rank and the
// pass copying it into the other local roots are both gone.
// Grid: ceil(32 * entries / 256) CTAs of 256.
extern "C" __global__ void __launch_bounds__(256)
br_rank_edges(u32* L, Geo g, const u32* __restrict__ ER, u32 tiles_x, u32 entries, BrRanks rk) {
    pdl_wait();
    mask_word_sites(ER, g, tiles_x, entries, [&](u32 s) {
        const u32 r = L[s] - 1u, ry = r / g.w;
        L[s] = LFLAG | br_mask_rank(rk.rb, rk.cnt, rk.chunk, rk.pre, tiles_x, ry, r - ry * g.w);
    });
}
#endif

#if LABEL64
// The last pass, 64-bit: every site's label from its local root's slot (LL gives the root), written
// whole (L held only the local roots' slots). Raw: the slot holds its global root + 1 (after
// br_flatten), and the global roots are counted into *count. Canonical: FLAG | rank, or rank + 1
// once the root's own site is written here (both give rank + 1). Grid: (ceil(w / 512),
// min(ceil(h / 4), 65535)) CTAs of 256, two sites a thread in each row, rows grid-strided; vec:
// w even and LL, L 16-byte aligned (4-byte loads of LL, 16-byte stores of L).
__device__ __forceinline__ u64 br_final_one(const u64* L, u64 tile, u32 w, u64 s, u32 c,
                                            u32 canonical, u32* roots) {
    if (c == 0) return 0ull;
    const u64 r = tile + (u64)((c - 1) >> 10) * w + ((c - 1) & 1023u);
    const u64 u = L[r];
    if (canonical) return (u & LFLAG) ? (u & ~LFLAG) + 1 : u;
    *roots += r == s && u == s + 1;
    return u;
}

extern "C" __global__ void __launch_bounds__(256)
br_final(u64* L, const u16* __restrict__ LL, Geo g, u32 canonical, u32 vec, u64* count) {
    pdl_wait();
    const u32 x = blockIdx.x * 512u + 2u * threadIdx.x;
    u32 roots = 0;
    if (x < g.w) {
        const bool two = x + 1 < g.w; // x is even: x and x + 1 share a tile column
        const u32 tx0 = x & ~(TW - 1u);
        for (u32 y = blockIdx.y; y < g.h; y += gridDim.y) {
            const u64 s = (u64)y * g.w + x;
            const u64 tile = (u64)(y & ~(TH - 1u)) * g.w + tx0;
            u32 c0, c1;
            if (vec && two) {
                const u32 p = *reinterpret_cast<const u32*>(LL + s);
                c0 = p & 0xffffu;
                c1 = p >> 16;
            } else {
                c0 = LL[s];
                c1 = two ? (u32)LL[s + 1] : 0u;
            }
            const u64 o0 = br_final_one(L, tile, g.w, s, c0, canonical, &roots);
            const u64 o1 = two ? br_final_one(L, tile, g.w, s + 1, c1, canonical, &roots) : 0ull;
            if (vec && two) {
                *reinterpret_cast<ulonglong2*>(L + s) = make_ulonglong2(o0, o1);
            } else {
                L[s] = o0;
                if (two) L[s + 1] = o1;
            }
        }
    }
    if (!canonical) warp_add(count, roots);
}
#else
// The last pass, elementwise over the n sites of L (grid-stride, 4 sites a thread where `vec`).
// Raw (canonical = 0): a site whose local root r holds another root's R + 1 takes it; sites whose
// local root is global keep their label (local roots' slots are never written here), and the
// roots (L[s] = s + 1) are counted into *count. Canonical: every occupied site takes rank + 1
// (see the header comment).
__device__ __forceinline__ label_t br_final_one(const label_t* L, idx_t s, label_t v,
                                                u32 canonical, u32* roots) {
    if (v == 0) return 0u;
    if (canonical) {
        if (v & LFLAG) return (v & ~LFLAG) + 1;
        const label_t u = L[v - 1];
        return (u & LFLAG) ? (u & ~LFLAG) + 1 : u;
    }
    const label_t u = L[v - 1];
    *roots += u == v && v == s + 1;
    return u;
}

extern "C" __global__ void __launch_bounds__(256)
br_final(label_t* L, u64 n, u32 canonical, u32 vec, label_t* count) {
    pdl_wait();
    const u64 stride = (u64)gridDim.x * blockDim.x;
    const u64 first = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    u32 roots = 0;
    const u64 n4 = vec ? n / 4 : 0;
    for (u64 i = first; i < n4; i += stride) {
        const uint4 v = reinterpret_cast<const uint4*>(L)[i];
        const u32 s = (u32)(i * 4);
        const uint4 o = make_uint4(br_final_one(L, s, v.x, canonical, &roots),
                                   br_final_one(L, s + 1, v.y, canonical, &roots),
                                   br_final_one(L, s + 2, v.z, canonical, &roots),
                                   br_final_one(L, s + 3, v.w, canonical, &roots));
        if (o.x != v.x || o.y != v.y || o.z != v.z || o.w != v.w)
            reinterpret_cast<uint4*>(L)[i] = o;
    }
    for (u64 i = n4 * 4 + first; i < n; i += stride) {
        const u32 v = L[i];
        const u32 o = br_final_one(L, (u32)i, v, canonical, &roots);
        if (o != v) L[i] = o;
    }
    if (!canonical) block_add(count, roots);
}
#endif

#if LABEL64
// Exclusive scan of the chunks' root counts (64-bit) in place and the total into *total_out:
// canon_scan's scheme (one CTA of 1024 threads, 4 consecutive entries a thread per step) with
// 64-bit sums.
extern "C" __global__ void __launch_bounds__(1024)
br_scan(u64* counts, u32 nseg, u64* total_out) {
    pdl_wait();
    __shared__ u64 scratch[32];
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const u32 nwarps = blockDim.x >> 5;
    u64 carry = 0;
    for (u32 c0 = 0; c0 < nseg; c0 += 4 * blockDim.x) {
        const u32 i0 = c0 + 4 * threadIdx.x;
        u64 v[4];
        u64 sum = 0;
#pragma unroll
        for (u32 k = 0; k < 4; k++) {
            v[k] = i0 + k < nseg ? counts[i0 + k] : 0ull;
            sum += v[k];
        }
        u64 x = sum;
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
            const u64 y = __shfl_up_sync(FULL, x, o);
            if (lane >= (u32)o) x += y;
        }
        if (lane == 31) scratch[warp] = x;
        __syncthreads();
        if (warp == 0) {
            u64 w = lane < nwarps ? scratch[lane] : 0ull;
#pragma unroll
            for (int o = 1; o < 32; o <<= 1) {
                const u64 y = __shfl_up_sync(FULL, w, o);
                if (lane >= (u32)o) w += y;
            }
            scratch[lane] = w;
        }
        __syncthreads();
        u64 off = carry + (warp > 0 ? scratch[warp - 1] : 0ull) + x - sum;
#pragma unroll
        for (u32 k = 0; k < 4; k++) {
            if (i0 + k < nseg) counts[i0 + k] = off;
            off += v[k];
        }
        carry += scratch[nwarps - 1];
        __syncthreads();
    }
    if (threadIdx.x == 0) *total_out = carry;
}
#endif
