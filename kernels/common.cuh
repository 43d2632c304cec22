// Shared helpers for every clusterlab kernel family.
//
// The host prepends a block of #defines and then this file to each family's source (NVRTC has no
// include path for embedded strings). The defines are:
//   SITE_T    the site type: unsigned char, unsigned short or unsigned int
//   CONN8     1 for 8-connectivity, 0 for 4-connectivity
//   SEGMENTS  1 when neighbours join only if they hold the same nonzero value
//   BW, BH    the union-find block shape (1x1, 2x1 or 2x2 sites)
//   ALL_SITES 1 when every site is occupied (bond-masked labeling: no site array is read)
//
// The union-find forest P has one slot per block of sites (block index by * wb + bx); a slot holds
// the *key* of the block's parent + 1, where a block's key is its first occupied site in raster
// order (a site index). A root r holds r + 1; empty blocks are never read. Nodes always link to
// smaller keys, so a root is the smallest site of its cluster and root + 1 is the raw label.
// With 1x1 blocks P is the label array itself.
#pragma once

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;

// Programmatic dependent launch (src/cuda/runtime/launch.rs, Gpu::launch_after), compute
// capability 9.0 on: a kernel launched that way may begin while the kernel before it ends, and
// calls pdl_wait() before it touches what the work before it writes; pdl_wait() returns once that
// work is done and its writes are visible. It does nothing after a plain launch (or on older
// devices). No kernel lets the next one start early (griddepcontrol.launch_dependents): blocks
// waiting for the kernel before them held the room of the one working, and 16384² 8-connected
// labels took 2 % longer with it (BENCHMARKS.md, "Programmatic dependent launch").
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
// For a kernel whose threads wait only where they need what came before: one thread waits in
// any case, so that the kernel cannot end before the work before it (the next kernel's
// pdl_wait() waits for this one alone).
__device__ __forceinline__ void pdl_anchor() {
    if (blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0) pdl_wait();
}

// Marks a root's slot during canonical numbering: FLAG | label - 1.
#define FLAG 0x80000000u

// Exact sizes of the size counts' histogram (analysis.cu's ana_hist and ana_hist_records, bit
// runs' direct counts in br_records; src/cuda/analysis.rs: HIST_CAP); larger ones are listed.
#define HIST_CAP 1024

#ifndef ALL_SITES
#define ALL_SITES 0
#endif

#ifndef SITE_T
#define SITE_T unsigned char
#endif
typedef SITE_T site_t;

// Lattice geometry, passed by value. wdiv = ceil(2^64 / w) (0 when w == 1) divides a site index
// by w exactly with one high multiply (for indices and widths below 2^32).
struct Geo {
    u32 h, w;   // sites
    u32 hb, wb; // blocks
    u64 wdiv;
};

__device__ __forceinline__ u32 div_w(const Geo& g, u32 k) {
    return g.wdiv == 0 ? k : (u32)__umul64hi((u64)k, g.wdiv);
}

// The block holding site k.
__device__ __forceinline__ u32 block_of(const Geo& g, u32 k) {
#if BW == 1 && BH == 1
    (void)g;
    return k;
#else
    const u32 y = div_w(g, k);
    const u32 x = k - y * g.w;
    return (y / BH) * g.wb + x / BW;
#endif
}

// Whether two sites with values a (the site) and b (its neighbour) are joined.
__device__ __forceinline__ bool joined_values(site_t a, site_t b) {
#if SEGMENTS
    return a != 0 && a == b;
#else
    return a != 0 && b != 0;
#endif
}

// With ALL_SITES (bond-masked labeling) every site is occupied and `in` is never read.
__device__ __forceinline__ bool occ_at(const site_t* __restrict__ in, u32 idx) {
#if ALL_SITES
    (void)in;
    (void)idx;
    return true;
#else
    return in[idx] != 0;
#endif
}

// L2-coherent load: union-find slots change under concurrent atomics from other multiprocessors,
// whose L1 copies would be stale.
__device__ __forceinline__ u32 ld_cg(const u32* p) { return __ldcg(p); }

// The root of key k, halving the path on the way (each visited node is pointed at its
// grandparent with a plain store: a valid ancestor, so concurrent unions stay correct).
__device__ __forceinline__ u32 find_halving(u32* P, const Geo& g, u32 k) {
    u32 bk = block_of(g, k);
    while (true) {
        const u32 v = ld_cg(P + bk);
        if (v == k + 1) return k;
        const u32 par = v - 1;
        const u32 bp = block_of(g, par);
        const u32 vp = ld_cg(P + bp);
        if (vp == par + 1) return par;
        P[bk] = vp;
        k = vp - 1;
        bk = block_of(g, k);
    }
}

// The root of key k without changing the forest. A root's slot holds k + 1 or, once canonical
// numbering has reached it, FLAG | label - 1.
__device__ __forceinline__ u32 find_root(const u32* P, const Geo& g, u32 k) {
    u32 v = ld_cg(P + block_of(g, k));
    while (!(v & FLAG) && v != k + 1) {
        k = v - 1;
        v = ld_cg(P + block_of(g, k));
    }
    return k;
}

// Joins the sets of keys a and b: the larger root is linked under the smaller with atomicMin,
// and a lost race is retried from the value the atomic returned (Playne & Hawick's union).
__device__ __forceinline__ void unite(u32* P, const Geo& g, u32 a, u32 b) {
    bool done;
    do {
        a = find_halving(P, g, a);
        b = find_halving(P, g, b);
        if (a < b) {
            const u32 old = atomicMin(P + block_of(g, b), a + 1);
            done = (old == b + 1);
            b = old - 1;
        } else if (b < a) {
            const u32 old = atomicMin(P + block_of(g, a), b + 1);
            done = (old == a + 1);
            a = old - 1;
        } else {
            done = true;
        }
    } while (!done);
}

// Union-find in shared memory over a tile's local nodes (block union-find's and tile merge's
// local passes): the local root of node x, halving the path (plain stores of a valid ancestor).
__device__ __forceinline__ u32 local_find(u32* s_par, u32 x) {
    volatile u32* par = s_par;
    while (true) {
        const u32 p = par[x];
        if (p == x) return x;
        const u32 gp = par[p];
        if (gp == p) return p;
        par[x] = gp;
        x = gp;
    }
}

__device__ __forceinline__ void local_unite(u32* s_par, u32 a, u32 b) {
    bool done;
    do {
        a = local_find(s_par, a);
        b = local_find(s_par, b);
        if (a < b) {
            const u32 old = atomicMin(s_par + b, a);
            done = (old == b);
            b = old;
        } else if (b < a) {
            const u32 old = atomicMin(s_par + a, b);
            done = (old == a);
            a = old;
        } else {
            done = true;
        }
    } while (!done);
}

// Occupancy mask of the block whose top-left site is (y0, x0): bit (dy * BW + dx) is set when
// site (y0 + dy, x0 + dx) is inside the lattice and occupied.
__device__ __forceinline__ u32 block_mask(const site_t* __restrict__ in, u32 h, u32 w, u32 y0, u32 x0) {
    u32 m = 0;
#pragma unroll
    for (u32 dy = 0; dy < BH; dy++) {
#pragma unroll
        for (u32 dx = 0; dx < BW; dx++) {
            if ((BH == 1 || y0 + dy < h) && (BW == 1 || x0 + dx < w)) {
                if (occ_at(in, (y0 + dy) * w + x0 + dx)) m |= 1u << (dy * BW + dx);
            }
        }
    }
    return m;
}

// The key site (first occupied site in raster order) of a block with nonzero mask m.
__device__ __forceinline__ u32 block_key(u32 m, u32 w, u32 y0, u32 x0) {
    const u32 bit = __ffs(m) - 1;
    const u32 dy = bit / BW, dx = bit % BW;
    return (y0 + dy) * w + x0 + dx;
}

// What the union rules look at for block (by, bx): its occupancy mask, or in segment mode
// (1x1 blocks) its site value; 0 = empty or outside the lattice.
__device__ __forceinline__ u32 block_cell(const site_t* __restrict__ in, const Geo& g, u32 by, u32 bx) {
    if (by >= g.hb || bx >= g.wb) return 0;
#if SEGMENTS
    return (u32)in[by * g.w + bx];
#else
    return block_mask(in, g.h, g.w, by * BH, bx * BW);
#endif
}

// The key of block (by, bx) whose cell is c (nonzero).
__device__ __forceinline__ u32 cell_key(const Geo& g, u32 c, u32 by, u32 bx) {
#if SEGMENTS
    (void)c;
    return by * g.w + bx;
#else
    return block_key(c, g.w, by * BH, bx * BW);
#endif
}

// The key of the block that holds site (y, x) (which must be occupied).
__device__ __forceinline__ u32 key_of_site(const site_t* __restrict__ in, const Geo& g, u32 y, u32 x) {
#if BW == 1 && BH == 1
    (void)in;
    return y * g.w + x;
#else
    const u32 y0 = y - y % BH, x0 = x - x % BW;
    return block_key(block_mask(in, g.h, g.w, y0, x0), g.w, y0, x0);
#endif
}

// Whether a block with cell c (nonzero) is joined to its left neighbour, whose cell is cl.
__device__ __forceinline__ bool joined_left(u32 c, u32 cl) {
#if SEGMENTS
    return cl == c;
#elif CONN8
    return (c & 5) && (cl & 10);
#else
    return (c & 1) && (cl & 2);
#endif
}

// The joins of a block with cell c (nonzero) to its backward neighbours (left, up-left, up,
// up-right), given get(dy, dx) -> the neighbour block's cell (0 when empty or outside). Calls
// join(dy, dx, neighbour cell) for each neighbour block it must be united with. Diagonals that
// the upper block already bridges (it joins its own left/right neighbour) are skipped.
template <class Get, class Join>
__device__ __forceinline__ void for_each_join(u32 c, Get get, Join join) {
#if SEGMENTS
    const u32 cl = get(0, -1);
    if (joined_left(c, cl)) join(0, -1, cl);
    const u32 cu = get(-1, 0);
    if (cu == c) join(-1, 0, cu);
#if CONN8
    if (cu != c) {
        const u32 cul = get(-1, -1);
        if (cul == c) join(-1, -1, cul);
        const u32 cur = get(-1, 1);
        if (cur == c) join(-1, 1, cur);
    }
#endif
#elif CONN8
    // 2x2 blocks, mask bits: 1 = a (top left), 2 = b, 4 = c (bottom left), 8 = d.
    if (c & 5) {
        const u32 ml = get(0, -1);
        if (joined_left(c, ml)) join(0, -1, ml);
    }
    const u32 mu = get(-1, 0);
    if ((c & 3) && (mu & 12)) join(-1, 0, mu);
    if ((c & 1) && !(mu & 4)) {
        const u32 mul = get(-1, -1);
        if (mul & 8) join(-1, -1, mul);
    }
    if ((c & 2) && !(mu & 8)) {
        const u32 mur = get(-1, 1);
        if (mur & 4) join(-1, 1, mur);
    }
#else
    // 2x1 blocks, mask bits: 1 = a (left), 2 = b (right).
    if (c & 1) {
        const u32 ml = get(0, -1);
        if (joined_left(c, ml)) join(0, -1, ml);
    }
    const u32 mu = get(-1, 0);
    if (c & mu & 3) join(-1, 0, mu);
#endif
}

// Warp-aggregated atomicAdd of a per-thread value (all 32 lanes must call it).
__device__ __forceinline__ void warp_add(u32* target, u32 v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0 && v) atomicAdd(target, v);
}

// Adds every thread's v into *target with one atomic per block (of 256 threads at most): on a
// small lattice, one per warp on a single word serialises the whole grid behind it. All threads
// of the block must call it.
__device__ __forceinline__ void block_add(u32* target, u32 v) {
    __shared__ u32 part[8];
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = v;
    __syncthreads();
    if (threadIdx.x < 32) {
        v = threadIdx.x < (blockDim.x >> 5) ? part[threadIdx.x] : 0u;
#pragma unroll
        for (int o = 4; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
        if (threadIdx.x == 0 && v) atomicAdd(target, v);
    }
}

// Exclusive prefix sum over the threads of a 1-D block of blockDim.x threads (a multiple of 32,
// at most 1024); `total` receives the block's sum. `scratch` holds 32 words of shared memory.
__device__ __forceinline__ u32 block_exclusive_scan(u32 v, u32* scratch, u32* total) {
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const u32 nwarps = blockDim.x >> 5;
    u32 x = v;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const u32 y = __shfl_up_sync(0xffffffffu, x, o);
        if (lane >= (u32)o) x += y;
    }
    __syncthreads();
    if (lane == 31) scratch[warp] = x;
    __syncthreads();
    if (warp == 0) {
        u32 s = lane < nwarps ? scratch[lane] : 0;
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
            const u32 y = __shfl_up_sync(0xffffffffu, s, o);
            if (lane >= (u32)o) s += y;
        }
        scratch[lane] = s;
    }
    __syncthreads();
    const u32 warp_base = warp > 0 ? scratch[warp - 1] : 0;
    *total = scratch[nwarps - 1];
    return warp_base + x - v;
}

// A barrier across the whole grid. Only for kernels launched cooperatively (all blocks resident).
// bar[0] counts arrivals, bar[1] is the generation.
__device__ __forceinline__ void grid_barrier(u32* bar) {
    __syncthreads();
    if (threadIdx.x == 0) {
        const u32 nblocks = gridDim.x;
        volatile u32* gen = bar + 1;
        const u32 g = *gen;
        __threadfence();
        const u32 arrived = atomicAdd(bar, 1u);
        if (arrived == nblocks - 1) {
            atomicExch(bar, 0u);
            __threadfence();
            atomicAdd(bar + 1, 1u);
        } else {
            while (*gen == g) {
                __nanosleep(32);
            }
        }
        __threadfence();
    }
    __syncthreads();
}

// Joins sites (y1, x1) and (y2, x2) across a periodic edge when their values are joined.
__device__ __forceinline__ void wrap_pair(const site_t* __restrict__ in, u32* P, const Geo& g,
                                          u32 y1, u32 x1, u32 y2, u32 x2) {
    if (joined_values(in[y1 * g.w + x1], in[y2 * g.w + x2]))
        unite(P, g, key_of_site(in, g, y1, x1), key_of_site(in, g, y2, x2));
}

// The periodic edges, taken literally (a tiny torus may pair a site with itself: a no-op), for
// forests whose keys are found with key_of_site. Item i of the grid: i < h, the x-wrapping edge of
// row y = i; h <= i < h + w, the y-wrapping edge of column x = i - h.
__device__ __forceinline__ void wrap_edges(const site_t* __restrict__ in, u32* P, const Geo& g,
                                           u32 wrap_x, u32 wrap_y) {
    const u32 h = g.h, w = g.w;
    const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < h) {
        if (!wrap_x) return;
        const u32 y = (u32)i;
        wrap_pair(in, P, g, y, w - 1, y, 0);
#if CONN8
        if (y > 0 || wrap_y) {
            const u32 yp = y > 0 ? y - 1 : h - 1;
            wrap_pair(in, P, g, y, 0, yp, w - 1);
            wrap_pair(in, P, g, y, w - 1, yp, 0);
        }
#endif
    } else if (i < (u64)h + w) {
        if (!wrap_y) return;
        const u32 x = (u32)(i - h);
        wrap_pair(in, P, g, 0, x, h - 1, x);
#if CONN8
        if (x > 0 || wrap_x) wrap_pair(in, P, g, 0, x, h - 1, x > 0 ? x - 1 : w - 1);
        if (x + 1 < w || wrap_x) wrap_pair(in, P, g, 0, x, h - 1, x + 1 < w ? x + 1 : 0);
#endif
    }
}
