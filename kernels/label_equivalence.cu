// Label equivalence (Kalentev, Rai, Kemnitz & Schneider 2011), without a reference array:
// every occupied site starts with a label of its cluster (see le_init); each iteration
//   scanning: m = the smallest label among the site's joined neighbours; if m is smaller than the
//             site's label l, the root l - 1 is lowered to m (atomicMin) and the done flag cleared;
//   analysis: every site follows its label chain to the end (pointer jumping).
// until a scan changes nothing. The labels are then the smallest site index + 1 of each cluster.
//
// le_solve runs all iterations in one cooperative launch (all CTAs resident), separated by grid
// barriers, so the host never waits on the done flag. state[0..2]: barrier; state[2..4]: the
// changed flags of even/odd iterations; state[4..6]: the root counts of even/odd iterations.
// Compiled with BW = BH = 1, so canonical.cu's kernels number the result (with P = L).
#pragma once
#include "common.cuh"

// Initial labels: each occupied site gets the index + 1 of the first site of its horizontal run
// within its warp's 32 sites (one ballot), not its own index + 1 as in the paper: a label of the
// same cluster whose own site carries it, so the iterations reach the same fixed point, from far
// fewer labels. (Tile-wide components in shared memory cut the iterations further but cost more
// than they saved: 7-12 ms at 16384² with a union-find, serialised on the roots of dense tiles,
// and 36-50 ms with label propagation, against about 4 ms of iterations saved; H100.)
extern "C" __global__ void __launch_bounds__(256)
le_init(const site_t* __restrict__ in, u32* L, u32 n, u32 w) {
    const u32 lane = threadIdx.x & 31;
    const u64 stride = (u64)gridDim.x * blockDim.x;
    // Whole warps iterate together (base is the warp's first site), so the ballot sees all lanes.
    for (u64 base = (u64)blockIdx.x * blockDim.x + (threadIdx.x & ~31u); base < n; base += stride) {
        const u32 p = (u32)base + lane;
        const bool ok = p < n;
        const site_t v = ok ? in[p] : (site_t)0;
        const site_t left = __shfl_up_sync(0xffffffffu, v, 1);
        const bool joined_left = lane > 0 && ok && p % w != 0 && joined_values(v, left);
        const u32 starts = __ballot_sync(0xffffffffu, v != 0 && !joined_left);
        const u32 s = 31 - __clz(starts & (0xffffffffu >> (31 - lane)));
        if (ok) L[p] = v != 0 ? (u32)base + s + 1 : 0u;
    }
}

// One coordinate moved by d in {-1, 0, 1} on an axis of length n; false when it leaves an open axis.
__device__ __forceinline__ bool le_step(u32 c, int d, u32 n, u32 wraps, u32* out) {
    if (d < 0) {
        if (c > 0) *out = c - 1;
        else if (wraps) *out = n - 1;
        else return false;
    } else if (d > 0) {
        if (c + 1 < n) *out = c + 1;
        else if (wraps) *out = 0;
        else return false;
    } else {
        *out = c;
    }
    return true;
}

// Neighbour (y + dy, x + dx) with the boundary applied, taken literally on tiny tori.
__device__ __forceinline__ bool le_neighbour(u32 h, u32 w, u32 y, u32 x, int dy, int dx,
                                             u32 wrap_x, u32 wrap_y, u32* q) {
    u32 ny, nx;
    if (!le_step(y, dy, h, wrap_y, &ny) || !le_step(x, dx, w, wrap_x, &nx)) return false;
    *q = ny * w + nx;
    return true;
}

// The label of the neighbours of site p = (y, x) joined to it, lowered into m. Without segments a
// site is occupied exactly when its label is nonzero, so only labels are read (as Kalentev et
// al.'s scanning does); with segments the values decide.
__device__ __forceinline__ u32 le_join(const site_t* __restrict__ in, const u32* L, site_t v, u32 q,
                                       u32 m) {
    const u32 lq = L[q];
#if SEGMENTS
    return in[q] == v ? min(m, lq) : m;
#else
    (void)in;
    (void)v;
    return lq ? min(m, lq) : m;
#endif
}

// The smallest label among site p's joined neighbours and its own label l.
__device__ __forceinline__ u32 le_min(const site_t* __restrict__ in, const u32* L, u32 h, u32 w,
                                      u32 y, u32 x, u32 p, u32 l, u32 wrap_x, u32 wrap_y) {
#if CONN8
    const int DY[8] = {-1, -1, -1, 0, 0, 1, 1, 1};
    const int DX[8] = {-1, 0, 1, -1, 1, -1, 0, 1};
    const int NN = 8;
#else
    const int DY[4] = {-1, 0, 0, 1};
    const int DX[4] = {0, -1, 1, 0};
    const int NN = 4;
#endif
#if SEGMENTS
    const site_t v = in[p];
#else
    const site_t v = 1;
#endif
    u32 m = l;
    if (x > 0 && x + 1 < w && y > 0 && y + 1 < h) {
        // Interior: no boundary to apply.
#pragma unroll
        for (int k = 0; k < NN; k++) m = le_join(in, L, v, p + DY[k] * (int)w + DX[k], m);
    } else {
#pragma unroll
        for (int k = 0; k < NN; k++) {
            u32 q;
            if (le_neighbour(h, w, y, x, DY[k], DX[k], wrap_x, wrap_y, &q)) m = le_join(in, L, v, q, m);
        }
    }
    return m;
}

// The CTA of 256 threads works on tiles of LE_TW x LE_TH sites (one site per thread), grid-stride
// over the tiles: no division per site, and the neighbours a CTA reads share cache lines.
#define LE_TW 32
#define LE_TH 8

// Loads of L are plain (L1-cacheable), as in the paper's kernels: within a phase a stale copy of
// a label is an older label of the same cluster (labels only decrease), so it can only delay a
// change by an iteration; and every grid barrier ends with a GPU-scope fence, so each phase starts
// from the labels the previous one left, and the scan that changes nothing sees the final ones.
extern "C" __global__ void __launch_bounds__(256)
le_solve(const site_t* __restrict__ in, u32* L, u32 h, u32 w, u32 wrap_x, u32 wrap_y,
         u32* state, u32* count_out) {
    const u32 tiles_x = (w + LE_TW - 1) / LE_TW;
    const u64 tiles = (u64)tiles_x * ((h + LE_TH - 1) / LE_TH);
    const u32 lx = threadIdx.x % LE_TW, ly = threadIdx.x / LE_TW;
    for (u32 iter = 0;; iter++) {
        const u32 f = iter & 1;
        bool changed = false;
        u32 roots = 0;
        // Scanning. (A warp-aggregated atomicMin here, one per label and warp, measured slower
        // on every lattice but one: 15.9 against 14.2 ms at 16384², 8-conn, H100.)
        for (u64 t = blockIdx.x; t < tiles; t += gridDim.x) {
            const u32 ty = (u32)(t / tiles_x), tx = (u32)(t - (u64)ty * tiles_x);
            const u32 y = ty * LE_TH + ly, x = tx * LE_TW + lx;
            if (y >= h || x >= w) continue;
            const u32 p = y * w + x;
            const u32 l = L[p];
            if (l == 0) continue;
            u32 m = le_min(in, L, h, w, y, x, p, l, wrap_x, wrap_y);
            if (m < l) {
                // One more step down label m's chain: a smaller label of the same cluster, read
                // for free while the root is lowered anyway (fewer iterations, same fixed point).
                m = min(m, L[m - 1]);
                atomicMin(L + (l - 1), m);
                changed = true;
            } else if (l == p + 1) {
                roots++;
            }
        }
        const int any = __syncthreads_or(changed);
        if (threadIdx.x == 0 && any) atomicExch(state + 2 + f, 1u);
        warp_add(state + 4 + f, roots);
        grid_barrier(state);
        if (ld_cg(state + 2 + f) == 0) {
            // Nothing changed: every cluster carries its smallest site's label, and this scan
            // counted the roots.
            if (blockIdx.x == 0 && threadIdx.x == 0) *count_out = ld_cg(state + 4 + f);
            return;
        }
        if (blockIdx.x == 0 && threadIdx.x == 0) {
            state[2 + (f ^ 1)] = 0;
            state[4 + (f ^ 1)] = 0;
        }
        // Analysis: follow each chain to its end.
        for (u64 t = blockIdx.x; t < tiles; t += gridDim.x) {
            const u32 ty = (u32)(t / tiles_x), tx = (u32)(t - (u64)ty * tiles_x);
            const u32 y = ty * LE_TH + ly, x = tx * LE_TW + lx;
            if (y >= h || x >= w) continue;
            const u32 p = y * w + x;
            const u32 l = L[p];
            if (l == 0) continue;
            u32 r = l, t2 = L[r - 1];
            while (t2 != r) {
                r = t2;
                t2 = L[r - 1];
            }
            if (r != l) L[p] = r;
        }
        grid_barrier(state);
    }
}
