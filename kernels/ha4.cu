// HA4 (Hennequin, Lacassagne, Cabaret & Meunier, 2018), 2 sites per thread, and its 8-connected
// and segment variants.
//
// A run is a maximal horizontal run of joined sites (occupied, or of one nonzero value for
// segments). Only run starts are union-find nodes: the forest is the label array L itself
// (1x1 blocks, see common.cuh), a start s holding its parent + 1, a root s + 1. Other slots are
// unused until the relabel writes them, except one: the last site of every 64-site chunk, when it
// is occupied and not a start, holds its run start + 1: a node too (a slot pointing at an ancestor),
// so that the chunk-parallel kernels enter the run that comes into a chunk from the left there,
// without walking the row or reading the marker first.
//
// A warp handles a chunk of 64 sites of one row: lane l holds bits l and l + 32 (coalesced
// loads and stores), and two ballots give 64-bit masks.
//
//   ha4_strip   CTA (32, HA_ROWS): a strip of HA_ROWS rows, one warp per row walking it 64 sites
//               at a time (the paper's strip labeling): run starts are initialised as roots, and
//               each row's runs are united with the runs of the row above in the strip (Playne &
//               Hawick's union), only at run starts.
//   ha4_border  one warp per chunk of the row pairs across strip borders (and, for a periodic y
//               axis, the pair (h - 1, 0)).
//   ha4_wrap    the periodic x edge of each row (and its diagonals), literally.
//   ha4_relabel one warp per chunk: the chunk's nodes are listed by rank and each lane walks one
//               to its root; every site is written once (its run's root + 1, 0 where empty);
//               roots are counted.
// Canonical numbering then runs canonical.cu's kernels on the relabeled L.
//
// Joins between a run A of row y and a run B of row y - 1 (same x range):
//   vertical: at the first site where both are joined, which is A's or B's start;
//   8-connectivity: A's start a joined to (y - 1, a - 1) but not to (y - 1, a), and B's start b
//   joined to (y, b - 1) but not to (y, b). Any two 8-adjacent runs meet one of these.
#pragma once
#include "common.cuh"

#ifndef HA_ROWS
#define HA_ROWS 4
#endif

#define HA_FULL 0xffffffffu

// HA's finds use plain (L1-cacheable) loads, as the paper's kernels do, not common.cuh's L2
// loads: a slot only ever moves to an ancestor + 1, so a stale copy still names an ancestor, and
// ha_unite's atomicMin returns the slot's true value, so a stale root costs at most a retry.
// Within ha4_strip every slot a CTA reads was written by that CTA (its strip), hence never stale.
__device__ __forceinline__ u32 ha_find(u32* L, u32 k) {
    while (true) {
        const u32 v = L[k];
        if (v == k + 1) return k;
        const u32 p = v - 1;
        const u32 vp = L[p];
        if (vp == p + 1) return p;
        L[k] = vp; // path halving: a valid ancestor
        k = vp - 1;
    }
}

// Playne & Hawick's union (common.cuh's unite) over ha_find.
__device__ __forceinline__ void ha_unite(u32* L, u32 a, u32 b) {
    while (true) {
        a = ha_find(L, a);
        b = ha_find(L, b);
        if (a == b) return;
        const u32 hi = a < b ? b : a, lo = a < b ? a : b;
        const u32 old = atomicMin(L + hi, lo + 1);
        if (old == hi + 1) return;
        // hi was no longer a root: unite lo with what it points to now.
        a = lo;
        b = old - 1;
    }
}

// Whether horizontally or vertically adjacent sites of values a and b are joined.
__device__ __forceinline__ bool ha_joined(u32 a, u32 b) {
#if SEGMENTS
    return a != 0 && a == b;
#else
    return a != 0 && b != 0;
#endif
}

// Bits 0..=b.
__device__ __forceinline__ u64 ha_upto(u32 b) { return ~0ull >> (63 - b); }

// One warp's chunk of 64 sites of a row.
struct Chunk {
    u32 v[2];   // values of bits lane and lane + 32 (0 outside the lattice)
    u32 lv[2];  // values of bits lane - 1 and lane + 31 (bit -1: the site before the chunk)
    u64 starts; // run starts
    u32 base;   // site index of bit 0
    u32 carry;  // node of the run of bit -1 (when it is occupied): its start, or the marked site -1
};

// The run start of occupied bit b: the last start at or before b, else the run entering from
// the left.
__device__ __forceinline__ u32 ha_run(const Chunk& a, u32 b) {
    const u64 m = a.starts & ha_upto(b);
    return m ? a.base + 63 - __clzll(m) : a.carry;
}

// The run start of bit b - 1 (b may be 0).
__device__ __forceinline__ u32 ha_run_before(const Chunk& a, u32 b) {
    return b == 0 ? a.carry : ha_run(a, b - 1);
}

// Left neighbours' values and the start mask, from v[] and pv, the value of bit -1.
__device__ __forceinline__ void ha_masks(Chunk& a, u32 pv) {
    const u32 lane = threadIdx.x & 31;
    const u32 up0 = __shfl_up_sync(HA_FULL, a.v[0], 1);
    const u32 up1 = __shfl_up_sync(HA_FULL, a.v[1], 1);
    const u32 last0 = __shfl_sync(HA_FULL, a.v[0], 31);
    a.lv[0] = lane ? up0 : pv;
    a.lv[1] = lane ? up1 : last0;
    const u32 s0 = __ballot_sync(HA_FULL, a.v[0] != 0 && !ha_joined(a.v[0], a.lv[0]));
    const u32 s1 = __ballot_sync(HA_FULL, a.v[1] != 0 && !ha_joined(a.v[1], a.lv[1]));
    a.starts = (u64)s0 | ((u64)s1 << 32);
}

// Unites the runs of chunk a (row y) with those of chunk u (row y - 1, same columns).
__device__ __forceinline__ void ha_merge(u32* L, const Chunk& a, const Chunk& u) {
    const u32 lane = threadIdx.x & 31;
#pragma unroll
    for (u32 k = 0; k < 2; k++) {
        const u32 b = lane + 32 * k;
        const u32 v = a.v[k], vu = u.v[k];
        const bool sa = (a.starts >> b) & 1, su = (u.starts >> b) & 1;
        const bool vert = ha_joined(v, vu);
        if (vert && (sa || su)) ha_unite(L, ha_run(a, b), ha_run(u, b));
#if CONN8
        if (sa && !vert && ha_joined(v, u.lv[k])) ha_unite(L, a.base + b, ha_run_before(u, b));
        if (su && !vert && ha_joined(vu, a.lv[k])) ha_unite(L, u.base + b, ha_run_before(a, b));
#endif
    }
}

// The 4-connected strip pass's two unions per lane (bits lane and lane + 32), walked in lockstep:
// every round loads the current node of each side of each pending union (all four loads in flight
// together), moves non-roots up one step, and links pairs of roots with atomicMin (a lost race
// continues from the value it returned). Walking them one after the other, as ha_merge does, puts
// two chains of dependent loads end to end: the strip pass was 20-30 % slower (H200). The
// 8-connected pass keeps ha_merge: six unions in lockstep need registers that cost occupancy.
__device__ __forceinline__ void ha_merge_lockstep(u32* L, const Chunk& a, const Chunk& u) {
    const u32 lane = threadIdx.x & 31;
    u32 ta[2], tb[2];
    bool tw[2];
#pragma unroll
    for (u32 k = 0; k < 2; k++) {
        const u32 b = lane + 32 * k;
        const bool sa = (a.starts >> b) & 1, su = (u.starts >> b) & 1;
        tw[k] = ha_joined(a.v[k], u.v[k]) && (sa || su);
        ta[k] = ha_run(a, b);
        tb[k] = ha_run(u, b);
    }
    while (tw[0] || tw[1]) {
        u32 va[2], vb[2];
#pragma unroll
        for (int t = 0; t < 2; t++) {
            va[t] = tw[t] ? L[ta[t]] : 0u;
            vb[t] = tw[t] ? L[tb[t]] : 0u;
        }
#pragma unroll
        for (int t = 0; t < 2; t++) {
            if (!tw[t]) continue;
            const bool ra = va[t] == ta[t] + 1, rb = vb[t] == tb[t] + 1;
            if (!ra) ta[t] = va[t] - 1;
            if (!rb) tb[t] = vb[t] - 1;
            if (ra && rb) {
                if (ta[t] == tb[t]) {
                    tw[t] = false;
                } else {
                    const u32 hi = max(ta[t], tb[t]), lo = min(ta[t], tb[t]);
                    const u32 old = atomicMin(L + hi, lo + 1);
                    if (old == hi + 1) {
                        tw[t] = false;
                    } else {
                        ta[t] = lo;
                        tb[t] = old - 1;
                    }
                }
            }
        }
    }
}

// Loads the chunk of row y starting at column x0 (a whole warp).
__device__ __forceinline__ Chunk ha_load(const site_t* __restrict__ in, const Geo& g, u32 y,
                                         u32 x0) {
    const u32 lane = threadIdx.x & 31;
    Chunk a;
    a.base = y * g.w + x0;
    a.v[0] = x0 + lane < g.w ? (u32)in[a.base + lane] : 0u;
    a.v[1] = x0 + lane + 32 < g.w ? (u32)in[a.base + lane + 32] : 0u;
    // The run entering from the left is entered at the previous chunk's last site: a start, or a
    // marker holding its start + 1 (or, once relabeled, its root + 1), so a valid node either way;
    // reading the marker first only put a dependent load in front of every chunk.
    u32 pv = 0;
    if (x0 > 0 && lane == 0) pv = in[a.base - 1];
    pv = __shfl_sync(HA_FULL, pv, 0);
    a.carry = a.base - 1;
    ha_masks(a, pv);
    return a;
}

// Grid: ceil(h / HA_ROWS) CTAs of (32, HA_ROWS); warp ty walks row blockIdx.x * HA_ROWS + ty.
// Every warp slot of a multiprocessor is filled (64 / HA_ROWS CTAs, at most 32 registers): the
// pass is bound by the latency of its unions, and at 38 registers, 3/4 of the slots, the
// 8-connected pass took 35 % longer (H200).
extern "C" __global__ void __launch_bounds__(32 * HA_ROWS, 64 / HA_ROWS)
ha4_strip(const site_t* __restrict__ in, u32* L, Geo g) {
    // The rows' chunks, double-buffered so that one barrier per chunk suffices.
    __shared__ u32 s_v[2][HA_ROWS][64];
    __shared__ u64 s_starts[2][HA_ROWS];
    __shared__ u32 s_pv[2][HA_ROWS];
    __shared__ u32 s_carry[2][HA_ROWS];
    const u32 lane = threadIdx.x, ty = threadIdx.y;
    const u32 y = blockIdx.x * HA_ROWS + ty;
    const bool row = y < g.h;
    const u32 nch = (g.w + 63) / 64;
    const u32 rowbase = row ? y * g.w : 0u;
    u32 pv = 0, carry = 0;
    // The next chunk's sites are loaded before the current one is worked on.
    u32 n0 = 0, n1 = 0;
    if (row) {
        if (lane < g.w) n0 = in[rowbase + lane];
        if (lane + 32 < g.w) n1 = in[rowbase + lane + 32];
    }
    for (u32 c = 0; c < nch; c++) {
        const u32 x0 = c * 64;
        Chunk a;
        a.v[0] = n0;
        a.v[1] = n1;
        a.base = rowbase + x0;
        a.carry = carry;
        n0 = n1 = 0;
        if (row && c + 1 < nch) {
            if (x0 + 64 + lane < g.w) n0 = in[a.base + 64 + lane];
            if (x0 + 96 + lane < g.w) n1 = in[a.base + 96 + lane];
        }
        ha_masks(a, pv);
        // Every start a root.
        if ((a.starts >> lane) & 1) L[a.base + lane] = a.base + lane + 1;
        if ((a.starts >> (lane + 32)) & 1) L[a.base + lane + 32] = a.base + lane + 33;
        // The marker on the chunk's last site.
        const u32 lastb = min(63u, g.w - 1 - x0);
        if (lane == (lastb & 31)) {
            const u32 v = lastb < 32 ? a.v[0] : a.v[1]; // not a.v[i]: no local memory
            if (v && !((a.starts >> lastb) & 1)) L[a.base + lastb] = ha_run(a, lastb) + 1;
        }
        const u32 buf = c & 1;
        s_v[buf][ty][lane] = a.v[0];
        s_v[buf][ty][lane + 32] = a.v[1];
        if (lane == 0) {
            s_starts[buf][ty] = a.starts;
            s_pv[buf][ty] = pv;
            s_carry[buf][ty] = a.carry;
        }
        __syncthreads();
        if (row && ty > 0) {
            Chunk u;
            u.v[0] = s_v[buf][ty - 1][lane];
            u.v[1] = s_v[buf][ty - 1][lane + 32];
            u.lv[0] = lane ? s_v[buf][ty - 1][lane - 1] : s_pv[buf][ty - 1];
            u.lv[1] = s_v[buf][ty - 1][lane + 31];
            u.starts = s_starts[buf][ty - 1];
            u.carry = s_carry[buf][ty - 1];
            u.base = a.base - g.w;
#if CONN8
            ha_merge(L, a, u);
#else
            ha_merge_lockstep(L, a, u);
#endif
        }
        const u32 v63 = __shfl_sync(HA_FULL, a.v[1], 31);
        carry = v63 ? ha_run(a, 63) : 0u;
        pv = v63;
    }
}

// Grid (ceil(chunks per row / 8), min(pairs + wrap_y, 65535)), CTA (32, 8): warp ty handles
// chunk blockIdx.x * 8 + ty of row pairs j = blockIdx.y, blockIdx.y + gridDim.y, ...: pair
// j < pairs is rows ((j + 1) * HA_ROWS - 1, (j + 1) * HA_ROWS), pair `pairs` (periodic y) is
// rows (h - 1, 0).
extern "C" __global__ void __launch_bounds__(256)
ha4_border(const site_t* __restrict__ in, u32* L, Geo g, u32 pairs, u32 wrap_y) {
    const u32 nch = (g.w + 63) / 64;
    const u32 c = blockIdx.x * blockDim.y + threadIdx.y;
    if (c >= nch) return; // whole warps
    for (u32 j = blockIdx.y; j < pairs + wrap_y; j += gridDim.y) {
        const u32 yl = j < pairs ? (j + 1) * HA_ROWS : 0u;
        const u32 yu = j < pairs ? yl - 1 : g.h - 1;
        const Chunk a = ha_load(in, g, yl, c * 64);
        const Chunk u = ha_load(in, g, yu, c * 64);
        ha_merge(L, a, u);
    }
}

// Sites (y1, x1) and (y2, x2), each in column 0 or w - 1: a row's first occupied site is a start
// and its last one a start or a marker, so both are nodes.
__device__ __forceinline__ void ha_wrap_pair(const site_t* __restrict__ in, u32* L, const Geo& g,
                                             u32 y1, u32 x1, u32 y2, u32 x2) {
    const u32 p = y1 * g.w + x1, q = y2 * g.w + x2;
    if (ha_joined(in[p], in[q])) ha_unite(L, p, q);
}

// The periodic x edge: one thread per row (grid ceil(h / 256), CTA 256). The y edge is
// ha4_border's last pair; the corners' diagonals are here.
extern "C" __global__ void __launch_bounds__(256)
ha4_wrap(const site_t* __restrict__ in, u32* L, Geo g, u32 wrap_y) {
    const u32 y = blockIdx.x * blockDim.x + threadIdx.x;
    if (y >= g.h) return;
    const u32 w = g.w;
    ha_wrap_pair(in, L, g, y, w - 1, y, 0);
#if CONN8
    if (y > 0 || wrap_y) {
        const u32 yp = y > 0 ? y - 1 : g.h - 1;
        ha_wrap_pair(in, L, g, y, 0, yp, w - 1);
        ha_wrap_pair(in, L, g, y, w - 1, yp, 0);
    }
#else
    (void)wrap_y;
#endif
}

// Grid (ceil(chunks per row / 8), R), R <= min(h, 65535), CTA (32, 8): warp ty handles chunk
// blockIdx.x * 8 + ty of rows blockIdx.y, blockIdx.y + gridDim.y, ... Writes root + 1 at every
// occupied site, 0 elsewhere, and counts roots into *count (once per CTA).
//
// The chunk's nodes (the run entering from the left, when bit 0 continues it, then the starts in
// bit order) are ranked and listed in shared memory, and lane j walks node j to its root: one
// chain per lane, so a warp's walk costs its longest chain, not the sum of a lane's chains. Each
// site then takes the root of its run's node by rank. A start's slot becomes its root + 1 and a
// marker its run's root + 1: still valid pointers for concurrent walks.
extern "C" __global__ void __launch_bounds__(256)
ha4_relabel(const site_t* __restrict__ in, u32* L, Geo g, u32* count) {
    const u32 lane = threadIdx.x;
    const u32 nch = (g.w + 63) / 64;
    const u32 c = blockIdx.x * blockDim.y + threadIdx.y;
    __shared__ u32 s_roots[8];
    __shared__ u32 s_walk[8][65];
    u32* walk = s_walk[threadIdx.y];
    u32 roots = 0;
    // Whole warps skip (c >= nch) together; no early return, for the barrier below.
    for (u32 y = blockIdx.y; c < nch && y < g.h; y += gridDim.y) {
        const u32 x0 = c * 64;
        const Chunk a = ha_load(in, g, y, x0);
        const u32 v00 = __shfl_sync(HA_FULL, a.v[0], 0);
        const u32 nc = (v00 != 0 && !(a.starts & 1)) ? 1u : 0u;
        const u64 lo0 = a.starts & ((1ull << lane) - 1), lo1 = a.starts & ((1ull << (lane + 32)) - 1);
        const bool s0 = (a.starts >> lane) & 1, s1 = (a.starts >> (lane + 32)) & 1;
        const u32 total = nc + __popcll(a.starts);
        __syncwarp();
        if (s0) walk[nc + __popcll(lo0)] = a.base + lane;
        if (s1) walk[nc + __popcll(lo1)] = a.base + lane + 32;
        if (lane == 0 && nc) walk[0] = a.carry;
        __syncwarp();
        for (u32 j = lane; j < total; j += 32) {
            const u32 k0 = walk[j];
            u32 k = k0, v = L[k];
            while (v != k + 1) {
                k = v - 1;
                v = L[k];
            }
            walk[j] = k;
            // The entering run's node belongs to the previous chunk, which counts it.
            roots += k == k0 && (j > 0 || !nc);
        }
        __syncwarp();
        // Rank of the node of bit b's run: nc + starts at or below b - 1 (0, the entering run,
        // when there is none).
        const u32 l0 = a.v[0] ? walk[nc + __popcll(lo0) + s0 - 1] + 1 : 0u;
        const u32 l1 = a.v[1] ? walk[nc + __popcll(lo1) + s1 - 1] + 1 : 0u;
        if (x0 + lane < g.w) L[a.base + lane] = l0;
        if (x0 + lane + 32 < g.w) L[a.base + lane + 32] = l1;
    }
    // One atomic per CTA: same-address atomics serialise in L2, and a 4-connected lattice at
    // p_c has a root in nearly every chunk.
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) roots += __shfl_down_sync(0xffffffffu, roots, o);
    if (lane == 0) s_roots[threadIdx.y] = roots;
    __syncthreads();
    if (threadIdx.y == 0) {
        u32 r = lane < blockDim.y ? s_roots[lane] : 0u;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) r += __shfl_down_sync(0xffffffffu, r, o);
        if (lane == 0 && r) atomicAdd(count, r);
    }
}
