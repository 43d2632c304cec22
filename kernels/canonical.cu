// Canonical (scipy) numbering of union-find roots, shared by every kernel family.
//
// After a family has built its forest P (slots = parent key + 1, roots = smallest site of each
// cluster, a root r holding r + 1), four kernels write labels 1..=n in raster order of the roots.
// Roots are recognised by their own slot, so counting and ranking them needs no find:
//   canon_count  one CTA per segment of SEG_SITES consecutive sites: counts the segment's roots.
//                With P = L (1x1 blocks) it also points every site straight at its root.
//   canon_scan   one CTA: exclusive scan of the segment counts (in place) and the total.
//   canon_rank   one CTA per segment: ranks the segment's roots in raster order and writes
//                FLAG | label - 1 into each root's slot.
//   canon_final  one thread per block of sites: every site of the block gets the label read at
//                the end of its key's path (0 where empty).
// With P = L a root's slot holds FLAG | label - 1 until its own thread writes the label; every
// other site points straight at its root, so readers accept both and no second array is needed.
// Needs fewer than 2^31 sites (FLAG must not be a valid pointer).
//
// In a segment, thread t handles sites seg * SEG_SITES + i * SEG_THREADS + t for i < SEG_ITEMS
// ("row" i of the segment), so that accesses are coalesced.
#pragma once
#include "common.cuh"

#define SEG_THREADS 256
#define SEG_ITEMS 16
#define SEG_SHIFT 12 // log2(SEG_THREADS * SEG_ITEMS)
#define SEG_WARPS (SEG_THREADS / 32)

// Whether site (y, x) is the key (first occupied site) of its block.
__device__ __forceinline__ bool is_key(const site_t* __restrict__ in, u32 h, u32 w, u32 y, u32 x) {
#if BW == 1 && BH == 1
    (void)h;
    return occ_at(in, y * w + x);
#else
    const u32 y0 = y - y % BH, x0 = x - x % BW;
    const u32 m = block_mask(in, h, w, y0, x0);
    const u32 bit = (y - y0) * BW + (x - x0);
    return ((m >> bit) & 1u) && (m & ((1u << bit) - 1u)) == 0;
#endif
}

// Bit i set when site i * SEG_THREADS + threadIdx.x of segment `seg` is a root. With P = L and
// `compress`, every other occupied site is pointed straight at its root.
__device__ __forceinline__ u32 segment_roots(const site_t* __restrict__ in, u32* P, const Geo& g,
                                             u32 seg, bool compress) {
    const u32 n = g.h * g.w;
    const u32 base = seg << SEG_SHIFT;
    u32 roots = 0;
#pragma unroll 4
    for (u32 i = 0; i < SEG_ITEMS; i++) {
        const u32 p = base + i * SEG_THREADS + threadIdx.x;
        if (p >= n) break;
        const u32 y = div_w(g, p), x = p - y * g.w;
        if (!is_key(in, g.h, g.w, y, x)) continue;
        const u32 b = (y / BH) * g.wb + x / BW;
        const u32 v = ld_cg(P + b);
        if (v == p + 1) {
            roots |= 1u << i;
        } else {
#if BW == 1 && BH == 1
            if (compress) {
                const u32 r = find_root(P, g, v - 1);
                if (r + 1 != v) P[b] = r + 1;
            }
#else
            (void)compress;
#endif
        }
    }
    return roots;
}

// counts[seg] = the roots of this CTA's segment (one CTA of SEG_THREADS per segment). With
// `compress` (and P = L) every other occupied site is pointed straight at its root on the way.
__device__ __forceinline__ void count_segment(const site_t* __restrict__ in, u32* P, const Geo& g,
                                              u32* counts, bool compress) {
    __shared__ u32 s_sum[SEG_WARPS];
    const u32 roots = segment_roots(in, P, g, blockIdx.x, compress);
    u32 c = __popc(roots);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) c += __shfl_down_sync(0xffffffffu, c, o);
    if ((threadIdx.x & 31) == 0) s_sum[threadIdx.x >> 5] = c;
    __syncthreads();
    if (threadIdx.x == 0) {
        u32 t = 0;
#pragma unroll
        for (u32 i = 0; i < SEG_WARPS; i++) t += s_sum[i];
        counts[blockIdx.x] = t;
    }
}

extern "C" __global__ void __launch_bounds__(SEG_THREADS)
canon_count(const site_t* __restrict__ in, u32* P, Geo g, u32* counts) {
    count_segment(in, P, g, counts, true);
}

// Exclusive scan of `counts` in place and the total into *total_out: one CTA of 1024 threads,
// 4096 entries per step (4 consecutive entries per thread), so loads and stores are coalesced.
extern "C" __global__ void __launch_bounds__(1024)
canon_scan(u32* counts, u32 nseg, u32* total_out) {
    pdl_wait();
    __shared__ u32 scratch[32];
    u32 carry = 0;
    for (u32 c0 = 0; c0 < nseg; c0 += 4 * blockDim.x) {
        const u32 i0 = c0 + 4 * threadIdx.x;
        u32 v[4];
        u32 s = 0;
#pragma unroll
        for (u32 k = 0; k < 4; k++) {
            v[k] = i0 + k < nseg ? counts[i0 + k] : 0u;
            s += v[k];
        }
        u32 total;
        u32 off = carry + block_exclusive_scan(s, scratch, &total);
#pragma unroll
        for (u32 k = 0; k < 4; k++) {
            if (i0 + k < nseg) counts[i0 + k] = off;
            off += v[k];
        }
        carry += total;
        __syncthreads();
    }
    if (threadIdx.x == 0) *total_out = carry;
}

extern "C" __global__ void __launch_bounds__(SEG_THREADS)
canon_rank(const site_t* __restrict__ in, u32* P, Geo g, const u32* __restrict__ bases) {
    __shared__ u32 scratch[32];
    __shared__ u32 s_cnt[SEG_ITEMS * SEG_WARPS];
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const u32 seg = blockIdx.x;
    const u32 roots = segment_roots(in, P, g, seg, false);
    // Roots per (row, warp), scanned in raster order.
#pragma unroll
    for (u32 i = 0; i < SEG_ITEMS; i++) {
        const u32 ballot = __ballot_sync(0xffffffffu, (roots >> i) & 1u);
        if (lane == 0) s_cnt[i * SEG_WARPS + warp] = __popc(ballot);
    }
    __syncthreads();
    const u32 entries = SEG_ITEMS * SEG_WARPS;
    const u32 mine = threadIdx.x < entries ? s_cnt[threadIdx.x] : 0u;
    u32 total;
    const u32 before = block_exclusive_scan(mine, scratch, &total);
    __syncthreads();
    if (threadIdx.x < entries) s_cnt[threadIdx.x] = before;
    __syncthreads();
    const u32 first = bases[seg];
    const u32 below = (1u << lane) - 1u;
    const u32 base = seg << SEG_SHIFT;
#pragma unroll
    for (u32 i = 0; i < SEG_ITEMS; i++) {
        const u32 ballot = __ballot_sync(0xffffffffu, (roots >> i) & 1u);
        if ((roots >> i) & 1u) {
            const u32 rank = first + s_cnt[i * SEG_WARPS + warp] + __popc(ballot & below);
            const u32 p = base + i * SEG_THREADS + threadIdx.x;
            P[block_of(g, p)] = FLAG | rank;
        }
    }
}

// One thread per block of sites; 2-D grid: x over block columns (32 per CTA row), y over block
// rows (8 per CTA, looping beyond 65535 CTA rows).
extern "C" __global__ void __launch_bounds__(256)
canon_final(const site_t* __restrict__ in, u32* L, const u32* P, Geo g) {
    const u32 bx = blockIdx.x * blockDim.x + threadIdx.x;
    if (bx >= g.wb) return;
    const u32 x0 = bx * BW;
    for (u32 by = blockIdx.y * blockDim.y + threadIdx.y; by < g.hb; by += gridDim.y * blockDim.y) {
        const u32 y0 = by * BH;
        const u32 m = block_mask(in, g.h, g.w, y0, x0);
        u32 label = 0;
        if (m) {
            const u32 v = ld_cg(P + by * g.wb + bx);
            if (v & FLAG) {
                label = (v & ~FLAG) + 1;
            } else {
#if BW == 1 && BH == 1
                // P = L: canon_count pointed this site at its root, whose slot holds
                // FLAG | label - 1 or, once the root's own thread has been here, the label.
                const u32 u = ld_cg(P + (v - 1));
                label = (u & FLAG) ? (u & ~FLAG) + 1 : u;
#else
                // A separate forest, unchanged while this runs: follow the path to the root.
                const u32 r = find_root(P, g, v - 1);
                label = (ld_cg(P + block_of(g, r)) & ~FLAG) + 1;
#endif
            }
        }
#pragma unroll
        for (u32 dy = 0; dy < BH; dy++) {
#pragma unroll
            for (u32 dx = 0; dx < BW; dx++) {
                if ((BH == 1 || y0 + dy < g.h) && (BW == 1 || x0 + dx < g.w)) {
                    L[(y0 + dy) * g.w + x0 + dx] = ((m >> (dy * BW + dx)) & 1u) ? label : 0u;
                }
            }
        }
    }
}
