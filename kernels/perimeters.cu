// Perimeters, hulls and filled areas on the GPU, for occupancy lattices with open boundaries
// (src/cuda/perimeters.rs). They read what analysis.cu leaves: the cluster labels L (1..=n,
// 0 = empty) and rows of the lattice, and the region labels E (1..=m, 0 = occupied) and rows
// of its complement labeled with the dual connectivity. Definitions: CONVENTIONS.md; the CPU's
// passes (src/cpu/analysis) are the oracle.
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
//                  nesting costs one thread's walk rather than a launch per level.
//   pm_sites       per occupied site: its (site, empty neighbour) bonds; each empty neighbour s
//                  counts for the site perimeter only at the first of s's neighbour slots (in
//                  raster order) that holds this cluster, so that every (empty site, cluster)
//                  pair is counted once, and for the hull unless s's region is a hole of this
//                  cluster. A warp walks a strip of rows with a five-row window of labels in
//                  registers; its sums are grouped per cluster as ana_runs groups its runs.
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

extern "C" __global__ void __launch_bounds__(256)
pm_complement(const site_t* __restrict__ in, u8* __restrict__ out, u32 n) {
    const u32 stride = gridDim.x * blockDim.x;
    for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        out[i] = in[i] == 0;
    }
}

__device__ __forceinline__ bool on_edge(const Row& r, u32 h, u32 w) {
    return r.x_min == 0 || r.y_min == 0 || r.x_max == w - 1 || r.y_max == h - 1;
}

// base[p] += cnt for the lanes of `act`, each with its own p: the lanes with one p add their
// sum with one atomic by their first lane, since most nodes of a lattice near p_c share one
// parent (the percolating cluster or the outside's largest hole), whose word would serialise
// them. Call from every lane of `act`.
__device__ __forceinline__ void grouped_add(u32* base, u32 act, u32 p, u32 cnt) {
#if __CUDA_ARCH__ >= 800
    const u32 grp = __match_any_sync(act, p);
    cnt = __reduce_add_sync(grp, cnt);
    if ((threadIdx.x & 31) != (u32)(__ffs(grp) - 1)) return;
#else
    (void)act;
#endif
    atomicAdd(base + p, cnt);
}

// `kids` must be zero. Warp-uniform loop (the grouped atomics need whole warps).
extern "C" __global__ void __launch_bounds__(256)
pm_nodes(const Row* __restrict__ rc, const Row* __restrict__ re, u32 n, u32 m,
         const u32* __restrict__ L, const u32* __restrict__ E, u32 h, u32 w, u32* parent,
         u64* sub, u32* kids, u32* hole_of) {
    const u32 stride = gridDim.x * blockDim.x;
    for (u32 v0 = blockIdx.x * blockDim.x + (threadIdx.x & ~31u); v0 < n + m; v0 += stride) {
        const u32 v = v0 + (threadIdx.x & 31);
        u32 p = NONE;
        if (v < n) {
            const Row& r = rc[v];
            sub[v] = r.size;
            if (r.first >= w) {
                const u32 e = E[r.first - w] - 1;
                if (!on_edge(re[e], h, w)) p = n + e;
            }
            parent[v] = p;
        } else if (v < n + m) {
            const Row& r = re[v - n];
            sub[v] = r.size;
            u32 hole = 0;
            if (!on_edge(r, h, w)) {
                hole = L[r.first - w];
                p = hole - 1;
            }
            hole_of[v - n] = hole;
            parent[v] = p;
        }
        const bool has = p != NONE;
        const u32 act = __ballot_sync(0xffffffffu, has);
        if (has) grouped_add(kids, act, p, 1u);
    }
}

// `done` must be zero; `kids` is not written, so a node's leaf test cannot race. The leaves of
// a warp add into their parents grouped (see grouped_add); the lane that completes a parent
// carries on alone (few nodes above the leaves have siblings in the same warp).
extern "C" __global__ void __launch_bounds__(256)
pm_filled(const u32* __restrict__ parent, const u32* __restrict__ kids, u64* sub, u32* done,
          u32 total) {
    const u32 stride = gridDim.x * blockDim.x;
    for (u32 v0 = blockIdx.x * blockDim.x + (threadIdx.x & ~31u); v0 < total; v0 += stride) {
        const u32 v = v0 + (threadIdx.x & 31);
        const bool leaf = v < total && kids[v] == 0;
        const u32 p = leaf ? parent[v] : NONE;
        const bool has = p != NONE;
        const u32 act = __ballot_sync(0xffffffffu, has);
        if (!has) continue;
        // A leaf's subtree is its own size, below 2^31, and leaves are disjoint: a u32 sum.
        // (As grouped_add, but the lane that adds also tests for the parent's last child.)
        bool leader;
#if __CUDA_ARCH__ >= 800
        const u32 grp = __match_any_sync(act, p);
        const u32 s32 = __reduce_add_sync(grp, (u32)sub[v]);
        const u32 cnt = __popc(grp);
        leader = (threadIdx.x & 31) == (u32)(__ffs(grp) - 1);
#else
        (void)act;
        const u32 s32 = (u32)sub[v], cnt = 1;
        leader = true;
#endif
        if (!leader) continue;
        atomicAdd(sub + p, (u64)s32);
        __threadfence();
        if (atomicAdd(done + p, cnt) + cnt != kids[p]) continue;
        // The last children: every other child's sum is in (fenced before its count).
        __threadfence();
        u64 s = atomicAdd(sub + p, 0ull);
        u32 q = parent[p];
        while (q != NONE) {
            atomicAdd(sub + q, s);
            __threadfence();
            if (atomicAdd(done + q, 1u) + 1 != kids[q]) break;
            __threadfence();
            s = atomicAdd(sub + q, 0ull);
            q = parent[q];
        }
    }
}

__device__ __forceinline__ u32 label_at(const u32* __restrict__ L, u32 h, u32 w, long long y,
                                        long long x) {
    if (y < 0 || x < 0 || y >= (long long)h || x >= (long long)w) return OUT;
    return L[(u32)y * w + (u32)x];
}

__device__ __forceinline__ void add_perim(PerimRow* out, u32 c, u32 b, u32 t, u32 hl) {
    PerimRow* r = out + (c - 1);
    atomicAdd(&r->bond, (u64)b);
    if (t) atomicAdd(&r->site, t);
    if (hl) atomicAdd(&r->hull, hl);
}

// 2-D grid: x over PM_OWN-column chunks (one warp each, blockDim.x = 32), y over strips of
// PM_ROWS rows (blockDim.y warps per CTA, looping beyond 65535 CTA rows). `out` must be zero.
extern "C" __global__ void __launch_bounds__(256)
pm_sites(const u32* __restrict__ L, const u32* __restrict__ E, const u32* __restrict__ hole_of,
         u32 h, u32 w, PerimRow* out) {
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
    const u32 lane = threadIdx.x;
    const long long x = (long long)blockIdx.x * PM_OWN + (long long)lane - 2;
    const bool own = lane >= 2 && lane < 2 + PM_OWN && x < (long long)w;
    for (u32 ys = (blockIdx.y * blockDim.y + threadIdx.y) * PM_ROWS; ys < h;
         ys += gridDim.y * blockDim.y * PM_ROWS) {
        const u32 yend = min(ys + PM_ROWS, h);
        // This lane's column in rows y - 2 ..= y + 2.
        u32 r[5];
#pragma unroll
        for (int k = 0; k < 4; k++) r[k] = label_at(L, h, w, (long long)ys + k - 2, x);
        // The cache (meaningful in lane 0): one cluster's sums kept in registers.
        u32 c_lab = 0, c_b = 0, c_t = 0, c_h = 0;
        for (u32 y = ys; y < yend; y++) {
            r[4] = label_at(L, h, w, (long long)y + 2, x);
            // v[dy + 2][dx + 2]: the label at offset (dx, dy) from this lane's site.
            u32 v[5][5];
#pragma unroll
            for (int a = 0; a < 5; a++) {
#pragma unroll
                for (int b = 0; b < 5; b++) {
                    v[a][b] = __shfl_sync(0xffffffffu, r[a], (int)lane + b - 2);
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
                        const u32 e = E[(u32)((long long)(y + dy) * w + x + dx)];
                        if (hole_of[e - 1] != c) nh++;
                    }
                }
            }
#pragma unroll
            for (int k = 0; k < 4; k++) r[k] = r[k + 1];
            const bool has = nb != 0;
            const u32 act = __ballot_sync(0xffffffffu, has);
            if (act == 0) continue;
#if __CUDA_ARCH__ >= 800
            u32 gb = 0, gt = 0, gh = 0, cnt = 0;
            bool leader = false;
            if (has) {
                const u32 grp = __match_any_sync(act, c);
                gb = __reduce_add_sync(grp, nb);
                gt = __reduce_add_sync(grp, nt);
                gh = __reduce_add_sync(grp, nh);
                cnt = __popc(grp);
                leader = lane == (u32)(__ffs(grp) - 1);
            }
            const u32 cl = __shfl_sync(0xffffffffu, c_lab, 0);
            u32 hit = __ballot_sync(0xffffffffu, leader && c == cl);
            if (hit == 0) {
                // The largest group takes the cache (the percolating cluster's, mostly).
                const u32 best = __reduce_max_sync(0xffffffffu, leader ? (cnt << 5) | lane : 0u);
                if ((best >> 5) >= 4) {
                    const u32 b = best & 31u;
                    const u32 nl = __shfl_sync(0xffffffffu, c, b);
                    if (lane == 0) {
                        if (c_lab != 0) add_perim(out, c_lab, c_b, c_t, c_h);
                        c_lab = nl;
                        c_b = c_t = c_h = 0;
                    }
                    hit = 1u << b;
                }
            }
            if (hit) {
                const u32 src = __ffs(hit) - 1;
                const u32 vb = __shfl_sync(0xffffffffu, gb, src);
                const u32 vt = __shfl_sync(0xffffffffu, gt, src);
                const u32 vh = __shfl_sync(0xffffffffu, gh, src);
                if (lane == 0) {
                    c_b += vb;
                    c_t += vt;
                    c_h += vh;
                }
            }
            if (leader && !((hit >> lane) & 1u)) add_perim(out, c, gb, gt, gh);
#else
            if (has) add_perim(out, c, nb, nt, nh);
#endif
        }
        if (lane == 0 && c_lab != 0) add_perim(out, c_lab, c_b, c_t, c_h);
    }
}
