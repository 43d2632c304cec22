// Bond-masked labeling and the device-resident Swendsen–Wang sweep.
//
// Compiled with BW = BH = 1 and ALL_SITES = 1: every site is a node of the union-find forest P
// (the label array itself), a slot holding its parent's site index + 1 and a root r holding
// r + 1; links always go to the smaller index, so a root is the smallest site of its cluster
// (the Swendsen–Wang numbering, and scipy's after canonical.cu's ranking).
//
// A tile is TW x TH sites (one CTA of 32 x 8 threads, TH / 8 rows per thread):
//   sw_local / bl_local  the tile's bonds — from the spins and Philox 4x32-10 (sw_local, bonds
//       activated and labeled in one pass, the spins read once) or from packed bond words
//       (bl_local) — are united in shared memory (runs along rows by warp ballots, then the
//       vertical bonds), every site's slot gets its local root + 1, a bit mask of the local
//       roots is written (one u32 per tile row), and the bonds that leave the tile (right bonds
//       of its last column, down bonds of its last row, wrapping ones included) are saved in BR
//       and BD.
//   sw_border  unites the local roots across those saved bonds (atomicMin linking, path
//       halving); only local roots' slots are ever changed, so every other site keeps pointing
//       at its tile's local root.
//   sw_flip    every local root (compacted: one lane each) finds its global root R and draws
//       the cluster's new spin from word w2 of R's Philox block; every site of the tile takes
//       its local root's.
//   sw_flip_measure  the same, and the observables of the new configuration tallied on the way
//       (cluster sizes by runs, the spin histogram per local root, satisfied bonds from the new
//       spins in shared memory): clusters inside one tile add |c|^2 at once, clusters that
//       cross tiles add their tile's part to sizes[R] (R listed once) for sw_sumsq.
//   sw_sumsq   sums sizes[R]^2 over the listed roots and clears them.
//   bl_final_raw  labels = root + 1 (P compressed in place), roots counted.
// Random numbers (src/mc/mod.rs): key (seed lo, seed hi), counter (site, sweep lo, sweep hi,
// stream << 4 | 1); right bond active when the spins are equal and w0 < thr, down bond likewise
// with w1; a cluster's new spin (w2 * q) >> 32 of its root's block.
#pragma once
#include "common.cuh"

#define TW 32
#define TH 32
#define PER (TH / 8)

// The Philox key and fixed counter words of one sweep, the bond threshold floor(p * 2^32) and q
// (struct SwKey in src/cuda/swendsen_wang.rs).
struct SwKey {
    u32 k0, k1;     // key
    u32 c1, c2, c3; // counter words 1..3
    u32 q;
    u64 thr;
};

// Philox 4x32-10 (Random123's constants; round 0 with the key itself, the key bumped before
// each later round), counter (c0, c1, c2, c3).
__device__ __forceinline__ uint4 philox(u32 c0, const SwKey& k) {
    u32 x0 = c0, x1 = k.c1, x2 = k.c2, x3 = k.c3;
    u32 k0 = k.k0, k1 = k.k1;
#pragma unroll
    for (int r = 0; r < 10; r++) {
        if (r > 0) {
            k0 += 0x9E3779B9u;
            k1 += 0xBB67AE85u;
        }
        const u32 hi0 = __umulhi(0xD2511F53u, x0), lo0 = 0xD2511F53u * x0;
        const u32 hi1 = __umulhi(0xCD9E8D57u, x2), lo1 = 0xCD9E8D57u * x2;
        x0 = hi1 ^ x1 ^ k0;
        x1 = lo1;
        x2 = hi0 ^ x3 ^ k1;
        x3 = lo0;
    }
    return make_uint4(x0, x1, x2, x3);
}

// Unites the sets of a and b (any nodes of them) like common.cuh's unite, and marks every root
// that another set is linked under (flags, when given): a root never marked has no children
// from other tiles, so its cluster lies in its tile.
__device__ __forceinline__ void unite_marked(u32* P, const Geo& g, u8* flags, u32 a, u32 b) {
    bool done;
    do {
        a = find_halving(P, g, a);
        b = find_halving(P, g, b);
        if (a == b) return;
        if (b < a) {
            const u32 t = a;
            a = b;
            b = t;
        }
        if (flags) flags[a] = 1;
        const u32 old = atomicMin(P + b, a + 1);
        done = (old == b + 1);
        b = old - 1;
    } while (!done);
}

// The tile pass shared by both bond sources: `bonds(y, x)` gives bit 0 = the right bond of
// (y, x), bit 1 = its down bond (already dropped where the axis does not wrap).
// Grid: (tiles across, min(tiles down, 65535)); CTA (TW, 8).
template <class Bonds>
__device__ __forceinline__ void tile_local(u32* P, const Geo& g, u8* BR, u8* BD, u32* RM,
                                           Bonds bonds) {
    __shared__ u32 s_par[TW * TH];
    __shared__ u8 s_bits[TW * TH]; // bit 0: right bond inside the tile, bit 1: down bond
    const u32 lx = threadIdx.x, tx = blockIdx.x;
    const u32 x = tx * TW + lx;
    const u32 tiles_x = (g.w + TW - 1) / TW, tiles_y = (g.h + TH - 1) / TH;
    const u32 le_mask = 0xffffffffu >> (31 - lx);
    for (u32 ty = blockIdx.y; ty < tiles_y; ty += gridDim.y) {
        u32 st[PER]; // the lane starting each site's run along its row
#pragma unroll
        for (u32 k = 0; k < PER; k++) {
            const u32 ly = threadIdx.y + 8 * k;
            const u32 y = ty * TH + ly;
            const bool inside = x < g.w && y < g.h;
            const u32 bits = inside ? bonds(y, x) : 0u;
            if (inside) {
                if (lx == TW - 1 || x == g.w - 1) BR[(u64)tx * g.h + y] = (u8)(bits & 1u);
                if (ly == TH - 1 || y == g.h - 1) BD[(u64)ty * g.w + x] = (u8)(bits >> 1);
            }
            // Bonds inside the tile; those leaving it go through BR / BD.
            const bool right_in = (bits & 1u) && lx < TW - 1 && x + 1 < g.w;
            const bool down_in = ((bits >> 1) & 1u) && ly < TH - 1 && y + 1 < g.h;
            const u32 rmask = __ballot_sync(0xffffffffu, right_in);
            const bool jl = inside && lx > 0 && ((rmask >> (lx - 1)) & 1u);
            const u32 starts = ~__ballot_sync(0xffffffffu, jl);
            st[k] = 31 - __clz(starts & le_mask);
            s_par[ly * TW + lx] = ly * TW + st[k];
            s_bits[ly * TW + lx] = (u8)((u32)right_in | ((u32)down_in << 1));
        }
        __syncthreads();
        // Vertical bonds: a bond whose left neighbours form a square with it (both rows joined
        // to the left, the left column's bond present) joins runs already joined there.
#pragma unroll
        for (u32 k = 0; k < PER; k++) {
            const u32 ly = threadIdx.y + 8 * k;
            if (ly == 0 || !(s_bits[(ly - 1) * TW + lx] & 2u)) continue;
            if (lx > 0 && (s_bits[ly * TW + lx - 1] & 1u) && s_bits[(ly - 1) * TW + lx - 1] == 3u)
                continue;
            local_unite(s_par, ly * TW + st[k], (ly - 1) * TW + lx);
        }
        __syncthreads();
        // Only a run's first site looks for its root (the others still point at it); the run
        // shares the result by a shuffle.
#pragma unroll
        for (u32 k = 0; k < PER; k++) {
            const u32 ly = threadIdx.y + 8 * k;
            const u32 y = ty * TH + ly;
            const bool inside = x < g.w && y < g.h;
            const u32 node = ly * TW + lx;
            u32 r = node;
            if (inside && st[k] == lx) r = local_find(s_par, node);
            r = __shfl_sync(0xffffffffu, r, st[k]);
            const u32 roots = __ballot_sync(0xffffffffu, inside && r == node);
            if (RM && lx == 0 && y < g.h) RM[(u64)y * tiles_x + tx] = roots;
            if (inside) P[(u64)y * g.w + x] = (ty * TH + r / TW) * g.w + tx * TW + r % TW + 1;
        }
        __syncthreads();
    }
}

// Packed bond words (PackedBonds' rows read as u32 words, nw32 per row).
extern "C" __global__ void __launch_bounds__(256)
bl_local(const u32* __restrict__ R, const u32* __restrict__ D, u32 nw32, Geo g, u32 wrap_x,
         u32 wrap_y, u32* P, u8* BR, u8* BD) {
    auto bonds = [&](u32 y, u32 x) -> u32 {
        const u64 word = (u64)y * nw32 + x / 32;
        u32 r = (R[word] >> (x % 32)) & 1u;
        u32 d = (D[word] >> (x % 32)) & 1u;
        if (x + 1 == g.w && !wrap_x) r = 0;
        if (y + 1 == g.h && !wrap_y) d = 0;
        return r | (d << 1);
    };
    tile_local(P, g, BR, BD, nullptr, bonds);
}

// Bond activation from the spins (read once here) and Philox words w0 / w1.
extern "C" __global__ void __launch_bounds__(256)
sw_local(const u8* __restrict__ spins, Geo g, u32 wrap_x, u32 wrap_y, SwKey key, u32* P, u8* BR,
         u8* BD, u32* RM) {
    auto bonds = [&](u32 y, u32 x) -> u32 {
        const u32 site = y * g.w + x;
        const u8 s = spins[site];
        const uint4 b = philox(site, key);
        const u32 xr = x + 1 < g.w ? site + 1 : y * g.w;
        const u32 yd = y + 1 < g.h ? site + g.w : x;
        const bool r = (x + 1 < g.w || wrap_x) && s == spins[xr] && (u64)b.x < key.thr;
        const bool d = (y + 1 < g.h || wrap_y) && s == spins[yd] && (u64)b.y < key.thr;
        return (u32)r | ((u32)d << 1);
    };
    tile_local(P, g, BR, BD, RM, bonds);
}

// The saved bonds that leave a tile: items [0, tiles_x * h) are the right bonds of each tile's
// last column (item tx * h + y), then [.., + tiles_y * w) the down bonds of each tile's last row
// (item ty * w + x). Grid-stride, CTA 256.
extern "C" __global__ void __launch_bounds__(256)
sw_border(u32* P, Geo g, const u8* __restrict__ BR, const u8* __restrict__ BD, u8* flags) {
    const u32 tiles_x = (g.w + TW - 1) / TW, tiles_y = (g.h + TH - 1) / TH;
    const u64 nr = (u64)tiles_x * g.h, total = nr + (u64)tiles_y * g.w;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (u64)gridDim.x * blockDim.x) {
        u32 a, b;
        if (i < nr) {
            if (!BR[i]) continue;
            const u32 tx = (u32)(i / g.h), y = (u32)(i - (u64)tx * g.h);
            const u32 x = min(tx * TW + TW - 1, g.w - 1);
            a = y * g.w + x;
            b = y * g.w + (x + 1 < g.w ? x + 1 : 0);
        } else {
            const u64 j = i - nr;
            if (!BD[j]) continue;
            const u32 ty = (u32)(j / g.w), x = (u32)(j - (u64)ty * g.w);
            const u32 y = min(ty * TH + TH - 1, g.h - 1);
            a = y * g.w + x;
            b = (y + 1 < g.h ? y + 1 : 0) * g.w + x;
        }
        // A site's slot is its local root + 1 (or, for a local root, an ancestor's): either
        // names its set.
        unite_marked(P, g, flags, ld_cg(P + a) - 1, ld_cg(P + b) - 1);
    }
}

// Sum of a u64 over a warp, added to *dst by lane 0 (all 32 lanes must call it).
__device__ __forceinline__ void warp_add64(u64* dst, u64 v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0 && v) atomicAdd((unsigned long long*)dst, (unsigned long long)v);
}

// A measured flip sums the parts of each cross-tile cluster inside the tile first (a shared
// hash table keyed by the global root; a tile has at most 4 * 32 edge sites, so at most that
// many such clusters), so that a cluster spanning the lattice costs one global atomic per tile,
// not one per local root.
#define HSLOTS 256
#define EMPTY 0xffffffffu

// Adds c to r's entry; false when the table is full (never with current marks: each such part
// holds an edge site).
__device__ __forceinline__ bool hash_add(u32* keys, u32* vals, u32 r, u32 c) {
    u32 h = (r * 2654435761u) >> 24;
    for (u32 i = 0; i < HSLOTS; i++) {
        const u32 old = atomicCAS(keys + h, EMPTY, r);
        if (old == EMPTY || old == r) {
            atomicAdd(vals + h, c);
            return true;
        }
        h = (h + 1) & (HSLOTS - 1);
    }
    return false;
}

// The new spin of the cluster whose global root is r.
__device__ __forceinline__ u32 new_spin(u32 r, const SwKey& key) {
    return (u32)(((u64)philox(r, key).z * key.q) >> 32);
}

// Whether the leaving bond of edge site `own` (new spin s) to `nb` is satisfied: an active bond
// (saved bit) joins one cluster; otherwise the neighbour's spin is drawn at its global root,
// found from its local root (nb's slot; only local roots' slots are ever rewritten).
__device__ __forceinline__ u32 edge_satisfied(u32* P, const Geo& g, const SwKey& key, u8 active,
                                              u32 nb, u32 s) {
    if (active) return 1;
    return new_spin(find_halving(P, g, ld_cg(P + nb) - 1), key) == s;
}

// New spins of a grid of tiles (CTA (TW, 8); grid (tiles across, some tiles down, looping)).
// The local roots of a warp's rows are handled compactly (listed in shared memory, one lane
// each), so the finds and the Philox blocks of the new spins cost a fraction of a pass. With M (measured sweeps) the
// observables of the new configuration are tallied on the way, without reading the spins again:
//   cluster sizes  each local root's part is counted by runs of equal local roots along the
//       warp's row (a shuffle and a ballot, one shared atomic per run); clusters inside one tile
//       add |c|^2 to obs[1] at once, the others add their tile's part to sizes[R] (R listed
//       once) for sw_sumsq;
//   histogram  obs[2 + v] += the part's size at each local root, v its new spin;
//   satisfied bonds  obs[0]: inside the tile from the new spins in shared memory, across its
//       right and bottom edges from the saved bonds or the neighbour's root (edge_satisfied).
template <bool M>
__device__ __forceinline__ void flip_tiles(u8* spins, u32* P, const Geo& g, u32 wrap_x,
                                           u32 wrap_y, const SwKey& key,
                                           const u32* __restrict__ RM, const u8* __restrict__ BR,
                                           const u8* __restrict__ BD, u8* flags, u32* sizes,
                                           u32* list, u32* list_n, u64* obs) {
    __shared__ u8 s_new[TW * TH];
    __shared__ u16 s_list[8][PER * TW]; // each warp's local roots (nodes), in raster order
    __shared__ u32 s_root[M ? TW * TH : 1];
    __shared__ u32 s_cnt[M ? TW * TH : 1];
    __shared__ u8 s_spin[M ? TW * TH : 1];
    __shared__ u32 s_key[M ? HSLOTS : 1], s_val[M ? HSLOTS : 1], s_hist[M ? 256 : 1];
    const u32 lx = threadIdx.x, tx = blockIdx.x, tid = threadIdx.y * TW + lx;
    const u32 x = tx * TW + lx;
    const u32 tiles_x = (g.w + TW - 1) / TW, tiles_y = (g.h + TH - 1) / TH;
    u64 sq = 0;
    u32 sat = 0, hc[4] = {0, 0, 0, 0};
    if (M) {
        s_key[tid] = EMPTY;
        s_val[tid] = 0;
        s_hist[tid] = 0;
    }
    for (u32 ty = blockIdx.y; ty < tiles_y; ty += gridDim.y) {
        u32 m[PER];
        u32 total = 0;
#pragma unroll
        for (u32 k = 0; k < PER; k++) {
            const u32 ly = threadIdx.y + 8 * k;
            const u32 y = ty * TH + ly;
            m[k] = y < g.h ? RM[(u64)y * tiles_x + tx] : 0u;
            if ((m[k] >> lx) & 1u)
                s_list[threadIdx.y][total + __popc(m[k] & ((1u << lx) - 1u))] = (u16)(ly * TW + lx);
            total += __popc(m[k]);
            if (M) s_cnt[ly * TW + lx] = 0;
        }
        __syncwarp();
        // The warp's local roots, one lane each.
        for (u32 t = lx; t < total; t += 32) {
            const u32 node = s_list[threadIdx.y][t];
            const u32 site = (ty * TH + node / TW) * g.w + tx * TW + node % TW;
            const u32 r = find_halving(P, g, site);
            s_new[node] = (u8)new_spin(r, key);
            if (M) s_root[node] = r;
        }
        __syncthreads();
        u32 loc[PER];
#pragma unroll
        for (u32 k = 0; k < PER; k++) {
            const u32 ly = threadIdx.y + 8 * k;
            const u32 y = ty * TH + ly;
            const bool inside = x < g.w && y < g.h;
            loc[k] = ly * TW + lx;
            if (inside && !((m[k] >> lx) & 1u)) {
                const u32 r = ld_cg(P + (y * g.w + x)) - 1;
                const u32 ry = div_w(g, r), rx = r - ry * g.w;
                loc[k] = (ry - ty * TH) * TW + (rx - tx * TW);
            }
            if (M) {
                // A run of equal local roots along the row: its first lane adds its length.
                const u32 lv = inside ? loc[k] : EMPTY;
                const u32 prev = __shfl_up_sync(0xffffffffu, lv, 1);
                const bool head = !inside || lx == 0 || prev != lv;
                const u32 heads = __ballot_sync(0xffffffffu, head);
                if (inside && head) {
                    const u32 above = lx == 31 ? 0u : (heads >> (lx + 1)) << (lx + 1);
                    const u32 end = above ? (u32)(__ffs(above) - 1) : 32u;
                    atomicAdd(s_cnt + lv, end - lx);
                }
            }
        }
        __syncthreads();
#pragma unroll
        for (u32 k = 0; k < PER; k++) {
            const u32 ly = threadIdx.y + 8 * k;
            const u32 y = ty * TH + ly;
            const bool inside = x < g.w && y < g.h;
            const u8 s = s_new[loc[k]];
            if (inside) spins[y * g.w + x] = s;
            if (M) {
                s_spin[ly * TW + lx] = s;
                const u8 right = (u8)__shfl_down_sync(0xffffffffu, (u32)s, 1);
                if (inside && lx < TW - 1 && x + 1 < g.w) sat += s == right;
            }
        }
        if (M) {
            for (u32 t = lx; t < total; t += 32) {
                const u32 node = s_list[threadIdx.y][t];
                const u32 site = (ty * TH + node / TW) * g.w + tx * TW + node % TW;
                const u32 c = s_cnt[node], v = s_new[node], r = s_root[node];
#pragma unroll
                for (u32 j = 0; j < 4; j++) hc[j] += v == j ? c : 0u;
                if (v >= 4) atomicAdd(s_hist + v, c);
                const bool marked = flags[site] != 0;
                if (marked) flags[site] = 0;
                if (r == site && !marked) {
                    sq += (u64)c * c;
                } else if (!hash_add(s_key, s_val, r, c) && atomicAdd(sizes + r, c) == 0) {
                    list[atomicAdd(list_n, 1u)] = r;
                }
            }
            __syncthreads();
#pragma unroll
            for (u32 k = 0; k < PER; k++) {
                const u32 ly = threadIdx.y + 8 * k;
                const u32 y = ty * TH + ly;
                if (x < g.w && ly < TH - 1 && y + 1 < g.h)
                    sat += s_spin[ly * TW + lx] == s_spin[(ly + 1) * TW + lx];
            }
            if (threadIdx.y == 6) {
                // The right edge: lane = row.
                const u32 y = ty * TH + lx, xl = min(TW - 1, g.w - 1 - tx * TW), xe = tx * TW + xl;
                if (y < g.h && (xe + 1 < g.w || wrap_x)) {
                    const u32 nb = y * g.w + (xe + 1 < g.w ? xe + 1 : 0);
                    sat += edge_satisfied(P, g, key, BR[(u64)tx * g.h + y], nb,
                                          s_spin[lx * TW + xl]);
                }
            } else if (threadIdx.y == 7) {
                // The bottom edge: lane = column.
                const u32 yl = min(TH - 1, g.h - 1 - ty * TH), ye = ty * TH + yl;
                if (x < g.w && (ye + 1 < g.h || wrap_y)) {
                    const u32 nb = (ye + 1 < g.h ? ye + 1 : 0) * g.w + x;
                    sat += edge_satisfied(P, g, key, BD[(u64)ty * g.w + x], nb,
                                          s_spin[yl * TW + lx]);
                }
            }
            // Flush the table: one global atomic per cluster, listed by the tile that adds first.
            const u32 r = s_key[tid];
            bool append = false;
            if (r != EMPTY) {
                append = atomicAdd(sizes + r, s_val[tid]) == 0;
                s_key[tid] = EMPTY;
                s_val[tid] = 0;
            }
            const u32 am = __ballot_sync(0xffffffffu, append);
            if (am) {
                const u32 leader = __ffs(am) - 1;
                u32 base = 0;
                if (lx == leader) base = atomicAdd(list_n, (u32)__popc(am));
                base = __shfl_sync(0xffffffffu, base, leader);
                if (append) list[base + __popc(am & ((1u << lx) - 1u))] = r;
            }
        }
        __syncthreads();
    }
    if (M) {
        warp_add64(obs, sat);
        warp_add64(obs + 1, sq);
#pragma unroll
        for (u32 j = 0; j < 4; j++) warp_add64(obs + 2 + j, hc[j]);
        if (key.q > 4) {
            __syncthreads();
            if (tid >= 4 && tid < key.q && s_hist[tid])
                atomicAdd((unsigned long long*)(obs + 2 + tid), (unsigned long long)s_hist[tid]);
        }
    }
}

// Unmeasured sweeps' new spins. Grid and CTA as sw_local.
extern "C" __global__ void __launch_bounds__(256)
sw_flip(u8* spins, u32* P, Geo g, u32 wrap_x, u32 wrap_y, SwKey key, const u32* __restrict__ RM,
        const u8* __restrict__ BR, const u8* __restrict__ BD, u8* flags, u32* sizes, u32* list,
        u32* list_n, u64* obs) {
    flip_tiles<false>(spins, P, g, wrap_x, wrap_y, key, RM, BR, BD, flags, sizes, list, list_n,
                      obs);
}

// Measured sweeps' new spins and tallies (obs: satisfied bonds, sum of |c|^2 over the clusters
// inside one tile, q spin counts). CTA as sw_local; each CTA loops over several tiles down, so
// that the tallies' atomics stay few.
extern "C" __global__ void __launch_bounds__(256)
sw_flip_measure(u8* spins, u32* P, Geo g, u32 wrap_x, u32 wrap_y, SwKey key,
                const u32* __restrict__ RM, const u8* __restrict__ BR, const u8* __restrict__ BD,
                u8* flags, u32* sizes, u32* list, u32* list_n, u64* obs) {
    flip_tiles<true>(spins, P, g, wrap_x, wrap_y, key, RM, BR, BD, flags, sizes, list, list_n,
                     obs);
}

// Sum of sizes[R]^2 over the *list_n listed roots into obs[1]; the sizes are cleared.
// Grid-stride, CTA 256.
extern "C" __global__ void __launch_bounds__(256)
sw_sumsq(u32* sizes, const u32* __restrict__ list, const u32* __restrict__ list_n, u64* obs) {
    const u32 n = *list_n;
    u64 sq = 0;
    for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const u32 r = list[i];
        const u64 c = sizes[r];
        sizes[r] = 0;
        sq += c * c;
    }
    warp_add64(obs + 1, sq);
}

// Raw bond labels: every site gets its root + 1 (P is the label array: root + 1 is a valid
// pointer, so concurrent finds stay correct); roots are counted. Grid-stride, CTA 256.
extern "C" __global__ void __launch_bounds__(256)
bl_final_raw(u32* P, Geo g, u32* count) {
    const u64 n = (u64)g.h * g.w;
    u32 roots = 0;
    for (u64 i0 = (u64)blockIdx.x * blockDim.x; i0 < n; i0 += (u64)gridDim.x * blockDim.x) {
        const u64 i = i0 + threadIdx.x;
        if (i < n) {
            const u32 site = (u32)i;
            const u32 v = ld_cg(P + site);
            const u32 r = v == site + 1 ? site : find_root(P, g, v - 1);
            roots += r == site;
            if (r + 1 != v) P[site] = r + 1;
        }
    }
    warp_add(count, roots);
}
