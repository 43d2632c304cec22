// Tile merge (after Šťava & Beneš, "Connected Component Labeling in CUDA", GPU Computing Gems
// 2010): tiles solved in shared memory, their borders merged hierarchically, then a final update.
//
// Per-site union-find (BW = BH = 1): the label array L is the forest, a slot holding its parent's
// site index + 1 and a root r holding r + 1 (common.cuh's convention), so the roots are the
// smallest sites of their clusters and canonical.cu numbers them.
//
//   tm_local    kernel 1: one CTA per TILE x TILE tile reads the tile's sites once, links each
//               row's runs of joined sites to the run's first site (warp ballots), unites the
//               rows in shared memory (atomicMin linking, so the local root is the tile's
//               smallest site of the component) and writes every site's slot: its local root's
//               global index + 1, 0 where empty.
//   tm_merge    kernel 2, once per level l: the seams between the 2x2 sub-tiles of every group of
//               (TILE << (l + 1))^2 sites are merged with union on the global forest. The seams
//               of level l are the tile columns (rows) k * TILE with k an odd multiple of 2^l, so
//               every seam is merged exactly once. The paper loops over each group's borders
//               until nothing changes; common.cuh's lock-free unite (retry on a lost atomicMin)
//               is correct in one pass, so no loop and no change flag.
//   tm_wrap     the periodic edges, literally (a tiny torus may pair a site with itself).
//   tm_final    kernel 4: every site gets its root + 1. One CTA per tile: each distinct target
//               of the tile's slots that lies in the tile (its local roots) is resolved once,
//               the other sites read the result from shared memory; roots are counted for raw
//               numbering. (This replaces the paper's kernel 3, which flattened the tile borders
//               between levels to keep these walks short.)
// Canonical numbering then runs canonical.cu's kernels on L.
#pragma once
#include "common.cuh"

#define TILE 32
// Rows of a tile per thread: CTAs are TILE x (TILE / PER) threads (TILE / FPER in tm_final).
#define PER 4
#define FPER 8
// s_root in tm_final: 0 = not a target, MARK = a target to resolve, else root + 1 (at most
// 2^32 - 2: fewer than 2^32 - 1 sites).
#define MARK 0xffffffffu

// Whether two cells (site values; 0 = empty) are joined.
__device__ __forceinline__ bool tm_joined(u32 a, u32 b) {
#if SEGMENTS
    return a != 0 && a == b;
#else
    return a != 0 && b != 0;
#endif
}

// The root of site k, without changing the forest. Unlike find_root it takes every value as a
// pointer (no FLAG): raw labels of 2^31 sites or more have bit 31 set.
__device__ __forceinline__ u32 tm_root(const u32* P, u32 k) {
    u32 v = ld_cg(P + k);
    while (v != k + 1) {
        k = v - 1;
        v = ld_cg(P + k);
    }
    return k;
}

__device__ __forceinline__ u32 tm_cell(const site_t* __restrict__ in, const Geo& g, u32 y, u32 x) {
    return (u32)in[y * g.w + x];
}

// Grid: (tiles across, min(tiles down, 65535)); CTA (TILE, TILE / PER): warp ly handles tile
// rows ly, ly + TILE / PER, ..., lane lx the tile's column lx.
extern "C" __global__ void __launch_bounds__(TILE * TILE / PER)
tm_local(const site_t* __restrict__ in, u32* P, Geo g) {
    __shared__ u32 s_cell[TILE * TILE];
    __shared__ u32 s_par[TILE * TILE];
    constexpr u32 ROWS = TILE / PER;
    const u32 lx = threadIdx.x;
    const u32 x = blockIdx.x * TILE + lx;
    const u32 tiles_y = (g.h + TILE - 1) / TILE;
    const u32 le_mask = 0xffffffffu >> (31 - lx); // lanes 0..=lx
    for (u32 ty = blockIdx.y; ty < tiles_y; ty += gridDim.y) {
        u32 c[PER], start[PER];
        bool jl[PER];
#pragma unroll
        for (u32 k = 0; k < PER; k++) {
            const u32 ly = threadIdx.y + ROWS * k;
            const u32 y = ty * TILE + ly;
            c[k] = (x < g.w && y < g.h) ? tm_cell(in, g, y, x) : 0u;
            s_cell[ly * TILE + lx] = c[k];
        }
        // Runs of horizontally joined sites: every site points at its run's first site, the
        // smallest node of the run (no unions).
#pragma unroll
        for (u32 k = 0; k < PER; k++) {
            const u32 ly = threadIdx.y + ROWS * k;
            const u32 left = __shfl_up_sync(0xffffffffu, c[k], 1);
            jl[k] = lx > 0 && tm_joined(c[k], left);
            const u32 occ = __ballot_sync(0xffffffffu, c[k] != 0);
            const u32 join = __ballot_sync(0xffffffffu, jl[k]);
            start[k] = 31 - __clz((occ & ~join) & le_mask);
            if (c[k]) s_par[ly * TILE + lx] = ly * TILE + start[k];
        }
        __syncthreads();
        // The row above, one union per place where a run meets a run above: a site whose left
        // neighbour is joined to it and to the site above-left leaves the union to that
        // neighbour (joins are transitive: equal values, or all occupied). A diagonal is
        // skipped where the site above, or the site beside this one, already bridges it.
#pragma unroll
        for (u32 k = 0; k < PER; k++) {
            const u32 ly = threadIdx.y + ROWS * k;
            const u32 node = ly * TILE + lx;
            if (!c[k] || ly == 0) continue;
            if (tm_joined(c[k], s_cell[node - TILE])) {
                if (!(jl[k] && tm_joined(c[k], s_cell[node - TILE - 1])))
                    local_unite(s_par, node, node - TILE);
            }
#if CONN8
            else {
                if (lx > 0 && !jl[k] && tm_joined(c[k], s_cell[node - TILE - 1]))
                    local_unite(s_par, node, node - TILE - 1);
                if (lx < TILE - 1 && !tm_joined(c[k], s_cell[node + 1]) &&
                    tm_joined(c[k], s_cell[node - TILE + 1]))
                    local_unite(s_par, node, node - TILE + 1);
            }
#endif
        }
        __syncthreads();
        // Each run's first site finds the run's root; the run's other sites take it by shuffle.
#pragma unroll
        for (u32 k = 0; k < PER; k++) {
            const u32 ly = threadIdx.y + ROWS * k;
            const u32 y = ty * TILE + ly;
            const u32 node = ly * TILE + lx;
            u32 r = 0;
            if (c[k] && start[k] == lx) r = local_find(s_par, node);
            r = __shfl_sync(0xffffffffu, r, c[k] ? start[k] : lx);
            if (x >= g.w || y >= g.h) continue;
            P[y * g.w + x] = c[k] ? (ty * TILE + r / TILE) * g.w + blockIdx.x * TILE + r % TILE + 1 : 0u;
        }
        __syncthreads();
    }
}

// Seams of one level: items [0, nv * h) are the vertical seams (seam j at column
// x = (2j + 1) * 2^level * TILE, one item per row), items [nv * h, nv * h + nh * w) the
// horizontal ones (seam j at row y = (2j + 1) * 2^level * TILE, one item per column).
// 1-D grid, CTA 256.
extern "C" __global__ void __launch_bounds__(256)
tm_merge(const site_t* __restrict__ in, u32* P, Geo g, u32 level, u32 nv, u32 nh) {
    // Fewer than 2^32 items: nv * h + nh * w is about h * w / 32 at level 0.
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    const u32 nvert = nv * g.h;
    if (i < nvert) {
        // Sites a = (y, x - 1) | b = (y, x) across the seam, c = (y + 1, x - 1), d = (y + 1, x).
        const u32 j = i / g.h, y = i - j * g.h;
        const u32 x = ((2 * j + 1) << level) * TILE;
        const u32 a = tm_cell(in, g, y, x - 1), b = tm_cell(in, g, y, x);
        if (!a && !b) return;
        const u32 ka = y * g.w + x - 1;
        if (tm_joined(a, b)) {
            // The diagonals go through b (a ~ b ~ d) and a (b ~ a ~ c), whose vertical links are
            // merged elsewhere.
            unite(P, g, ka, ka + 1);
            return;
        }
#if CONN8
        if (y + 1 < g.h) {
            const u32 kc = ka + g.w;
            if (a && tm_joined(a, tm_cell(in, g, y + 1, x))) unite(P, g, ka, kc + 1);
            if (b && tm_joined(b, tm_cell(in, g, y + 1, x - 1))) unite(P, g, ka + 1, kc);
        }
#endif
    } else if (i - nvert < nh * g.w) {
        // Sites a = (y - 1, x) over b = (y, x); diagonals only within the tile column (the ones
        // across a tile column edge belong to the vertical seams).
        const u32 k = i - nvert;
        const u32 j = k / g.w, x = k - j * g.w;
        const u32 y = ((2 * j + 1) << level) * TILE;
        const u32 a = tm_cell(in, g, y - 1, x);
        if (!a) return;
        const u32 ka = (y - 1) * g.w + x;
        if (tm_joined(a, tm_cell(in, g, y, x))) {
            unite(P, g, ka, ka + g.w);
            return;
        }
#if CONN8
        if (x % TILE != 0 && tm_joined(a, tm_cell(in, g, y, x - 1))) unite(P, g, ka, ka + g.w - 1);
        if (x + 1 < g.w && (x + 1) % TILE != 0 && tm_joined(a, tm_cell(in, g, y, x + 1)))
            unite(P, g, ka, ka + g.w + 1);
#endif
    }
}

// The periodic edges (wrap_edges in common.cuh: with 1x1 blocks a site's key is its index).
extern "C" __global__ void __launch_bounds__(256)
tm_wrap(const site_t* __restrict__ in, u32* P, Geo g, u32 wrap_x, u32 wrap_y) {
    wrap_edges(in, P, g, wrap_x, wrap_y);
}

// Kernel 4: every site's slot becomes its root + 1, after all merges. Grid as tm_local, CTA
// (TILE, TILE / FPER): smaller CTAs, so that more tiles wait on their walks at once.
// A site's slot holds its local root + 1 unless a merge's path halving moved it to another
// ancestor; the local roots' slots hold the merges' links. So each target that lies in the tile
// is resolved once (by the thread of that site) and shared through s_root; targets elsewhere
// are walked directly. Concurrent CTAs only ever store roots + 1, valid pointers, so walks stay
// correct. With `counting`, the roots (slots that point at themselves) are added to *count.
extern "C" __global__ void __launch_bounds__(TILE * TILE / FPER)
tm_final(u32* P, Geo g, u32* count, u32 counting) {
    __shared__ u32 s_root[TILE * TILE];
    constexpr u32 ROWS = TILE / FPER;
    const u32 lx = threadIdx.x;
    const u32 x0 = blockIdx.x * TILE;
    const u32 x = x0 + lx;
    const u32 tiles_y = (g.h + TILE - 1) / TILE;
    u32 roots = 0;
    for (u32 ty = blockIdx.y; ty < tiles_y; ty += gridDim.y) {
        const u32 y0 = ty * TILE;
        u32 v[FPER];
        u32 loc[FPER]; // the target's node in this tile, or MARK when elsewhere
#pragma unroll
        for (u32 k = 0; k < FPER; k++) {
            const u32 ly = threadIdx.y + ROWS * k;
            const u32 y = y0 + ly;
            v[k] = (x < g.w && y < g.h) ? ld_cg(P + y * g.w + x) : 0u;
            s_root[ly * TILE + lx] = 0;
        }
        __syncthreads();
#pragma unroll
        for (u32 k = 0; k < FPER; k++) {
            loc[k] = MARK;
            if (v[k]) {
                const u32 t = v[k] - 1;
                const u32 yt = div_w(g, t), xt = t - yt * g.w;
                if (yt - y0 < TILE && xt - x0 < TILE) {
                    loc[k] = (yt - y0) * TILE + (xt - x0);
                    s_root[loc[k]] = MARK;
                }
            }
        }
        __syncthreads();
#pragma unroll
        for (u32 k = 0; k < FPER; k++) {
            const u32 ly = threadIdx.y + ROWS * k;
            const u32 node = ly * TILE + lx;
            if (s_root[node] == MARK) {
                // A target is occupied, so v[k] != 0 here.
                const u32 s = (y0 + ly) * g.w + x;
                const u32 r = v[k] == s + 1 ? s : tm_root(P, v[k] - 1);
                s_root[node] = r + 1;
            }
        }
        __syncthreads();
#pragma unroll
        for (u32 k = 0; k < FPER; k++) {
            if (!v[k]) continue;
            const u32 ly = threadIdx.y + ROWS * k;
            const u32 s = (y0 + ly) * g.w + x;
            // This site's own root when other sites of the tile point at it, else its target's.
            const u32 own = s_root[ly * TILE + lx];
            const u32 label = own != 0       ? own
                              : loc[k] != MARK ? s_root[loc[k]]
                                               : tm_root(P, v[k] - 1) + 1;
            roots += (v[k] == s + 1);
            if (label != v[k]) P[s] = label;
        }
        __syncthreads();
    }
    if (counting) warp_add(count, roots);
}
