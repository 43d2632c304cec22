// Label equivalence (Kalentev, Rai, Kemnitz & Schneider 2011), without a reference array:
// every occupied site starts with its own index + 1; each iteration
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

extern "C" __global__ void __launch_bounds__(256)
le_init(const site_t* __restrict__ in, u32* L, u32 n) {
    for (u64 p = (u64)blockIdx.x * blockDim.x + threadIdx.x; p < n; p += (u64)gridDim.x * blockDim.x) {
        L[p] = in[p] != 0 ? (u32)p + 1 : 0u;
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

extern "C" __global__ void __launch_bounds__(256)
le_solve(const site_t* __restrict__ in, u32* L, u32 h, u32 w, u32 wrap_x, u32 wrap_y,
         u32* state, u32* count_out) {
    const u32 n = h * w;
    const u64 stride = (u64)gridDim.x * blockDim.x;
    const u64 first = (u64)blockIdx.x * blockDim.x + threadIdx.x;
#if CONN8
    const int DY[8] = {-1, -1, -1, 0, 0, 1, 1, 1};
    const int DX[8] = {-1, 0, 1, -1, 1, -1, 0, 1};
    const int NN = 8;
#else
    const int DY[4] = {-1, 0, 0, 1};
    const int DX[4] = {0, -1, 1, 0};
    const int NN = 4;
#endif
    for (u32 iter = 0;; iter++) {
        const u32 f = iter & 1;
        bool changed = false;
        u32 roots = 0;
        // Scanning.
        for (u64 pp = first; pp < n; pp += stride) {
            const u32 p = (u32)pp;
            const u32 l = ld_cg(L + p);
            if (l == 0) continue;
            const site_t v = in[p];
            const u32 y = p / w, x = p - y * w;
            u32 m = l;
#pragma unroll
            for (int k = 0; k < NN; k++) {
                u32 q;
                if (le_neighbour(h, w, y, x, DY[k], DX[k], wrap_x, wrap_y, &q) && joined_values(v, in[q])) {
                    m = min(m, ld_cg(L + q));
                }
            }
            if (m < l) {
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
        for (u64 pp = first; pp < n; pp += stride) {
            const u32 p = (u32)pp;
            const u32 l = ld_cg(L + p);
            if (l == 0) continue;
            u32 r = l, t = ld_cg(L + (r - 1));
            while (t != r) {
                r = t;
                t = ld_cg(L + (r - 1));
            }
            if (r != l) L[p] = r;
        }
        grid_barrier(state);
    }
}
