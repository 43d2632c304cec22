// Perimeters, hulls and filled areas on the GPU, for occupancy lattices with open boundaries
// (src/cuda/perimeters.rs). They read what analysis.cu leaves: the cluster labels L (1..=n,
// 0 = empty) and rows of the lattice, and the region labels E (1..=m, 0 = occupied) and rows
// of its complement labeled with the dual connectivity (on the bit runs path E is the
// complement's forest, and L the lattice's when no labels are wanted, read through piece_at).
// Definitions: CONVENTIONS.md; the CPU's passes (src/cpu/analysis) are the oracle.
//
// The tree of holes, as the CPU's `tree_filled`: with dual connectivities the site just above a
// node's first site (raster order) belongs to the node that encloses it; a region that touches
// the lattice's edge is the outside, and so is a node whose first site is in row 0.
//   pm_complement  the complement of the lattice, as an occupancy lattice.
//   pm_nodes       per node (clusters 0..n, then regions n..n + m): its parent (NONE for the
//                  outside), its size as its subtree's start, each region's enclosing cluster
//                  (hole_of, 0 for the outside), and each parent's child count.
//   pm_filled      subtree sums from the leaves up: a child adds its subtree into its parent,
//                  and the child that completes a parent carries on with it, so that deep
//                  nesting costs one thread's walk rather than a launch per level. Both
//                  pm_nodes and pm_filled add per parent in warps, then per block.
//   pm_sites       per occupied site: its (site, empty neighbour) bonds; each empty neighbour s
//                  counts for the site perimeter only at the first of s's neighbour slots (in
//                  raster order) that holds this cluster, so that every (empty site, cluster)
//                  pair is counted once, and for the hull unless s's region is a hole of this
//                  cluster. A warp walks a strip of rows with a five-row window of labels in
//                  registers; its sums are grouped per cluster in the warp (one reduction
//                  of the three counts packed), then in a shared-memory table per tile of
//                  eight warps' columns.
#pragma once
#include "common.cuh"
#include "analysis_row.cuh"

#define NONE 0xffffffffu
// Outside the lattice (never a label).
#define OUT 0xffffffffu
// Columns a warp owns in pm_sites: lanes 2..29; lanes 0, 1, 30, 31 hold the halo.
#define PM_OWN 28
// Rows a warp walks in pm_sites.
#define PM_ROWS 64

// One cluster's perimeter sums (src/cuda/perimeters.rs: PerimRow).
struct PerimRow {
    u64 bond;
    u32 site, hull;
};

// Byte sites 16 at a time when the input is 16-byte aligned (the output always is).
extern "C" __global__ void __launch_bounds__(256)
pm_complement(const site_t* __restrict__ in, u8* __restrict__ out, u32 n) {
    const u32 stride = gridDim.x * blockDim.x;
    u32 done = 0;
    if (sizeof(site_t) == 1 && (reinterpret_cast<size_t>(in) & 15) == 0) {
        const uint4* in4 = reinterpret_cast<const uint4*>(in);
        uint4* out4 = reinterpret_cast<uint4*>(out);
        const u32 n16 = n / 16;
        for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < n16; i += stride) {
            const uint4 q = in4[i];
            // __vcmpeq4: 0xff in each byte equal to 0.
            out4[i] = make_uint4(__vcmpeq4(q.x, 0u) & 0x01010101u, __vcmpeq4(q.y, 0u) & 0x01010101u,
                                 __vcmpeq4(q.z, 0u) & 0x01010101u, __vcmpeq4(q.w, 0u) & 0x01010101u);
        }
        done = n16 * 16;
    }
    for (u32 i = done + blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        out[i] = in[i] == 0;
    }
}

__device__ __forceinline__ bool on_edge(const Row& r, u32 h, u32 w) {
    return r.x_min == 0 || r.y_min == 0 || r.x_max == w - 1 || r.y_max == h - 1;
}

// Nodes per block of pm_nodes and pm_filled, and the slots of their shared table of parents.
#define PM_CHUNK 2048
#define PM_PSLOTS 512

// A block's sums per parent (key = parent + 1, 0 = free): most nodes of a lattice near p_c
// share one parent (the percolating cluster, or the largest hole), whose words would serialise
// one atomic per node in L2; the block adds once per parent instead.
struct ParentTable {
    u32 key[PM_PSLOTS];
    u32 cnt[PM_PSLOTS];
    u64 sum[PM_PSLOTS];
};

__device__ __forceinline__ void parents_clear(ParentTable& t) {
    for (u32 i = threadIdx.x; i < PM_PSLOTS; i += blockDim.x) {
        t.key[i] = 0;
        t.cnt[i] = 0;
        t.sum[i] = 0;
    }
}

// Adds (cnt, s) for parent p into the table; false when no slot was found in 8 probes.
__device__ __forceinline__ bool parents_add(ParentTable& t, u32 p, u32 cnt, u64 s) {
    u32 i = ((p + 1) * 2654435761u) >> 23; // 9 bits: PM_PSLOTS
    for (u32 k = 0; k < 8; k++, i = (i + 1) & (PM_PSLOTS - 1)) {
        const u32 old = atomicCAS(&t.key[i], 0u, p + 1);
        if (old == 0u || old == p + 1) {
            atomicAdd(&t.cnt[i], cnt);
            if (s) atomicAdd(&t.sum[i], s);
            return true;
        }
    }
    return false;
}

// The lanes of `act` group by their parent p (one warp reduction) and each group's first lane
// adds (cnt, s) into the block's table, or calls `direct` when it is full.
template <typename F>
__device__ __forceinline__ void grouped(ParentTable& t, u32 act, u32 p, u32 cnt, u64 s,
                                        F direct) {
#if __CUDA_ARCH__ >= 800
    const u32 grp = __match_any_sync(act, p);
    cnt = __reduce_add_sync(grp, cnt);
    // Leaves' subtrees are their own sizes, below 2^31 together (disjoint): a u32 sum.
    s = __reduce_add_sync(grp, (u32)s);
    if ((threadIdx.x & 31) != (u32)(__ffs(grp) - 1)) return;
#else
    (void)act;
#endif
    if (!parents_add(t, p, cnt, s)) direct(p, cnt, s);
}

// The label (1.., 0: not in a piece) of site i of A. With `forest`, A is bit runs' forest as
// its ranking leaves it, before br_final would turn it into labels: a site's slot holds its
// local root + 1, a local root's own FLAG | label - 1. Otherwise A is the label image.
__device__ __forceinline__ u32 piece_at(const u32* __restrict__ A, u32 i, u32 forest) {
    u32 v = A[i];
    if (!forest || v == 0) return v;
    if (!(v & FLAG)) v = A[v - 1];
    return (v & ~FLAG) + 1;
}

// `kids` must be zero. Block b takes nodes [b PM_CHUNK, (b + 1) PM_CHUNK). `l_forest`,
// `e_forest`: L, E are forests (piece_at).
extern "C" __global__ void __launch_bounds__(256)
pm_nodes(const Row* __restrict__ rc, const Row* __restrict__ re, u32 n, u32 m,
         const u32* __restrict__ L, const u32* __restrict__ E, u32 h, u32 w, u32* parent,
         u64* sub, u32* kids, u32* hole_of, u32 l_forest, u32 e_forest) {
    __shared__ ParentTable tab;
    parents_clear(tab);
    __syncthreads();
    const u32 base = blockIdx.x * PM_CHUNK;
    for (u32 i = threadIdx.x; i < PM_CHUNK; i += blockDim.x) {
        const u32 v = base + i;
        u32 p = NONE;
        if (v < n) {
            const Row& r = rc[v];
            sub[v] = r.size;
            if (r.first >= w) {
                const u32 e = piece_at(E, r.first - w, e_forest) - 1;
                if (!on_edge(re[e], h, w)) p = n + e;
            }
            parent[v] = p;
        } else if (v < n + m) {
            const Row& r = re[v - n];
            sub[v] = r.size;
            u32 hole = 0;
            if (!on_edge(r, h, w)) {
                hole = piece_at(L, r.first - w, l_forest);
                p = hole - 1;
            }
            hole_of[v - n] = hole;
            parent[v] = p;
        }
        const bool has = p != NONE;
        const u32 act = __ballot_sync(0xffffffffu, has);
        if (has) {
            grouped(tab, act, p, 1u, 0ull, [&](u32 q, u32 c, u64) { atomicAdd(kids + q, c); });
        }
    }
    __syncthreads();
    for (u32 i = threadIdx.x; i < PM_PSLOTS; i += blockDim.x) {
        if (tab.key[i]) atomicAdd(kids + tab.key[i] - 1, tab.cnt[i]);
    }
}

// Adds (cnt children, s sites) into parent p; the adder that completes p (every other child's
// sum is in: fenced before its count) carries on with p's subtree into p's parent, and so on.
__device__ __forceinline__ void add_up(const u32* __restrict__ parent,
                                       const u32* __restrict__ kids, u64* sub, u32* done, u32 p,
                                       u32 cnt, u64 s) {
    while (p != NONE) {
        atomicAdd(sub + p, s);
        __threadfence();
        if (atomicAdd(done + p, cnt) + cnt != kids[p]) return;
        __threadfence();
        s = atomicAdd(sub + p, 0ull);
        cnt = 1;
        p = parent[p];
    }
}

// `done` must be zero; `kids` is not written, so a node's leaf test cannot race. Block b takes
// the leaves among nodes [b PM_CHUNK, (b + 1) PM_CHUNK); their sums go into their parents
// through the block's table.
extern "C" __global__ void __launch_bounds__(256)
pm_filled(const u32* __restrict__ parent, const u32* __restrict__ kids, u64* sub, u32* done,
          u32 total) {
    __shared__ ParentTable tab;
    parents_clear(tab);
    __syncthreads();
    const u32 base = blockIdx.x * PM_CHUNK;
    auto direct = [&](u32 p, u32 c, u64 s) { add_up(parent, kids, sub, done, p, c, s); };
    for (u32 i = threadIdx.x; i < PM_CHUNK; i += blockDim.x) {
        const u32 v = base + i;
        const bool leaf = v < total && kids[v] == 0;
        const u32 p = leaf ? parent[v] : NONE;
        const bool has = p != NONE;
        const u32 act = __ballot_sync(0xffffffffu, has);
        if (has) grouped(tab, act, p, 1u, sub[v], direct);
    }
    __syncthreads();
    for (u32 i = threadIdx.x; i < PM_PSLOTS; i += blockDim.x) {
        if (tab.key[i]) direct(tab.key[i] - 1, tab.cnt[i], tab.sum[i]);
    }
}

// The label at (y, x), OUT beyond the lattice (coordinates wrap below 0 to large values).
__device__ __forceinline__ u32 label_at(const u32* __restrict__ L, u32 h, u32 w, u32 y, u32 x,
                                        u32 l_forest) {
    return (y < h && x < w) ? piece_at(L, y * w + x, l_forest) : OUT;
}

// The cluster whose hole holds empty site (y, x) (0: none, or the site is occupied or beyond
// the lattice): one gather per site as it enters the window, not one per (site, cluster) pair.
__device__ __forceinline__ u32 hole_at(const u32* __restrict__ E, const u32* __restrict__ hole_of,
                                       u32 h, u32 w, u32 y, u32 x, u32 e_forest) {
    if (y >= h || x >= w) return 0;
    const u32 e = piece_at(E, y * w + x, e_forest);
    return e ? hole_of[e - 1] : 0u;
}

// Shared-memory table of the tile's clusters in pm_sites: open addressing on the label, up to
// PM_PROBES probes (a cluster that finds no slot adds into global memory directly).
#define PM_SLOTS 2048
#define PM_PROBES 32

__device__ __forceinline__ void add_global(PerimRow* out, u32 c, u32 b, u32 t, u32 hl) {
    PerimRow* r = out + (c - 1);
    atomicAdd(&r->bond, (u64)b);
    // site in the low word, hull in the high one: no carry (a cluster's site perimeter is
    // below 2^32).
    if (t) atomicAdd(reinterpret_cast<u64*>(&r->site), ((u64)hl << 32) | t);
}

// A tile's sums per cluster, packed: bond in bits 0..20, site 21..41, hull 42..62 (a tile of
// 8 PM_OWN x PM_ROWS sites has fewer than 2^21 bonds), so that one 64-bit shared atomic adds all
// three.
struct PmTable {
    u32 key[PM_SLOTS];
    unsigned long long val[PM_SLOTS];
};

// Adds a warp group's counts, packed in 8-bit fields (bond, site, hull: a group of at most 28
// sites has at most 224 bonds), into the tile's table.
__device__ __forceinline__ void add_tile(PmTable& tab, PerimRow* out, u32 c, u32 packed) {
    const u32 b = packed & 0xffu, t = (packed >> 8) & 0xffu, hl = packed >> 16;
    const unsigned long long val = (u64)b | (u64)t << 21 | (u64)hl << 42;
    u32 i = (c * 2654435761u) >> 21; // 11 bits: PM_SLOTS
    for (u32 k = 0; k < PM_PROBES; k++, i = (i + 1) & (PM_SLOTS - 1)) {
        u32 key = tab.key[i];
        if (key == 0u) key = atomicCAS(&tab.key[i], 0u, c);
        if (key == 0u || key == c) {
            atomicAdd(&tab.val[i], val);
            return;
        }
    }
    add_global(out, c, b, t, hl);
}

// 2-D grid: x over tiles of 8 * PM_OWN columns (blockDim (32, 8): warp k owns columns
// 28k..28k+27 of the tile), y over strips of PM_ROWS rows (looping beyond 65535). Each tile's
// sums go through the shared table, so that a cluster costs two global atomics per tile
// rather than three per row and warp. `out` must be zero.
extern "C" __global__ void __launch_bounds__(256)
pm_sites(const u32* __restrict__ L, const u32* __restrict__ E, const u32* __restrict__ hole_of,
         u32 h, u32 w, PerimRow* out, u32 l_forest, u32 e_forest) {
    // The labeling's neighbours (offsets from a site, raster order); the same list orders an
    // empty site's slots.
#if CONN8
    const int NN = 8;
    const int DX[8] = {-1, 0, 1, -1, 1, -1, 0, 1};
    const int DY[8] = {-1, -1, -1, 0, 0, 1, 1, 1};
#else
    const int NN = 4;
    const int DX[4] = {0, -1, 1, 0};
    const int DY[4] = {-1, 0, 0, 1};
#endif
    __shared__ PmTable tab;
    const u32 lane = threadIdx.x, tid = threadIdx.y * 32 + lane;
    // (Below column 0 the column wraps to a large value: outside.)
    const u32 x = (blockIdx.x * blockDim.y + threadIdx.y) * PM_OWN + lane - 2;
    const bool own = lane >= 2 && lane < 2 + PM_OWN && x < w;
    for (u32 i = tid; i < PM_SLOTS; i += 256) {
        tab.key[i] = 0;
        tab.val[i] = 0;
    }
    for (u32 ys = blockIdx.y * PM_ROWS; ys < h; ys += gridDim.y * PM_ROWS) {
        __syncthreads();
        const u32 yend = min(ys + PM_ROWS, h);
        // This lane's column: labels in rows y - 2 ..= y + 2, holes in rows y - 1 ..= y + 1.
        u32 r[5], q[3];
#pragma unroll
        for (int k = 0; k < 4; k++) r[k] = label_at(L, h, w, ys + k - 2, x, l_forest);
        q[0] = hole_at(E, hole_of, h, w, ys - 1, x, e_forest);
        q[1] = hole_at(E, hole_of, h, w, ys, x, e_forest);
        for (u32 y = ys; y < yend; y++) {
            r[4] = label_at(L, h, w, y + 2, x, l_forest);
            q[2] = hole_at(E, hole_of, h, w, y + 1, x, e_forest);
            // v[dy + 2][dx + 2]: the label at offset (dx, dy) from this lane's site (4-conn
            // needs |dx| + |dy| <= 2 only); o[dy + 1][dx + 1] the hole's cluster there.
            u32 v[5][5], o[3][3];
#pragma unroll
            for (int a = 0; a < 5; a++) {
#pragma unroll
                for (int b = 0; b < 5; b++) {
                    const int d = (a > 2 ? a - 2 : 2 - a) + (b > 2 ? b - 2 : 2 - b);
                    v[a][b] = (CONN8 || d <= 2)
                                  ? __shfl_sync(0xffffffffu, r[a], (int)lane + b - 2)
                                  : OUT;
                }
            }
#pragma unroll
            for (int a = 0; a < 3; a++) {
#pragma unroll
                for (int b = 0; b < 3; b++) {
                    o[a][b] = (CONN8 || a == 1 || b == 1)
                                  ? __shfl_sync(0xffffffffu, q[a], (int)lane + b - 1)
                                  : 0u;
                }
            }
            const u32 c = v[2][2];
            u32 nb = 0, nt = 0, nh = 0;
            if (own && c != 0 && c != OUT) {
#pragma unroll
                for (int k = 0; k < NN; k++) {
                    const int dx = DX[k], dy = DY[k];
                    if (v[dy + 2][dx + 2] != 0) continue;
                    nb++;
                    // s = site + (dx, dy): is this site in s's first slot holding c?
                    bool first = true;
#pragma unroll
                    for (int j = 0; j < NN; j++) {
                        if (DX[j] == -dx && DY[j] == -dy) break;
                        if (v[dy + DY[j] + 2][dx + DX[j] + 2] == c) first = false;
                    }
                    if (first) {
                        nt++;
                        if (o[dy + 1][dx + 1] != c) nh++;
                    }
                }
            }
            q[0] = q[1];
            q[1] = q[2];
#pragma unroll
            for (int k = 0; k < 4; k++) r[k] = r[k + 1];
            const bool has = nb != 0;
            const u32 act = __ballot_sync(0xffffffffu, has);
            if (!has) continue;
            u32 packed = nb | nt << 8 | nh << 16;
#if __CUDA_ARCH__ >= 800
            const u32 grp = __match_any_sync(act, c);
            packed = __reduce_add_sync(grp, packed);
            if (lane != (u32)(__ffs(grp) - 1)) continue;
#else
            (void)act;
#endif
            add_tile(tab, out, c, packed);
        }
        __syncthreads();
        // The tile's sums out; the table emptied for the next strip.
        for (u32 i = tid; i < PM_SLOTS; i += 256) {
            const u32 c = tab.key[i];
            if (c == 0) continue;
            const unsigned long long val = tab.val[i];
            add_global(out, c, (u32)(val & 0x1fffffu), (u32)((val >> 21) & 0x1fffffu),
                       (u32)(val >> 42));
            tab.key[i] = 0;
            tab.val[i] = 0;
        }
    }
}
