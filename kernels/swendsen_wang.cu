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
//       its local root's. With
//       `measure`, the cluster sizes: clusters inside one tile add |c|^2 at once, clusters that
//       cross tiles add their tile's part to sizes[R] (R listed once) for sw_sumsq.
//   sw_sumsq   sums sizes[R]^2 over the listed roots and clears them.
//   sw_measure satisfied bonds and the spin-count histogram of the new configuration.
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
            const u32 start = 31 - __clz(starts & le_mask);
            s_par[ly * TW + lx] = ly * TW + start;
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
            local_unite(s_par, ly * TW + lx, (ly - 1) * TW + lx);
        }
        __syncthreads();
#pragma unroll
        for (u32 k = 0; k < PER; k++) {
            const u32 ly = threadIdx.y + 8 * k;
            const u32 y = ty * TH + ly;
            const bool inside = x < g.w && y < g.h;
            const u32 node = ly * TW + lx;
            const u32 r = inside ? local_find(s_par, node) : node;
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

// The (rank + 1)-th local root among this warp's rows of the tile (masks m[k] of rows
// threadIdx.y + 8k): its node in the tile.
__device__ __forceinline__ u32 nth_root(const u32 (&m)[PER], u32 rank) {
    u32 k = 0, mk = 0;
    bool found = false;
#pragma unroll
    for (u32 j = 0; j < PER; j++) {
        const u32 c = __popc(m[j]);
        if (!found) {
            if (rank < c) {
                k = j;
                mk = m[j];
                found = true;
            } else {
                rank -= c;
            }
        }
    }
    for (u32 i = 0; i < rank; i++) mk &= mk - 1;
    return (threadIdx.y + 8 * k) * TW + (__ffs(mk) - 1);
}

// New spins (and, with `measure`, cluster sizes). Grid and CTA as sw_local. The local roots of
// a warp's rows are handled compactly (one lane each, a few per warp row), so the finds and the
// Philox blocks of the new spins cost a fraction of a pass. obs[1] receives the sum of |c|^2
// over the clusters inside one tile.
extern "C" __global__ void __launch_bounds__(256)
sw_flip(u8* spins, u32* P, Geo g, SwKey key, const u32* __restrict__ RM, u8* flags, u32* sizes,
        u32* list, u32* list_n, u64* obs, u32 measure) {
    __shared__ u8 s_new[TW * TH];
    __shared__ u32 s_cnt[TW * TH];
    __shared__ u32 s_root[TW * TH];
    const u32 lx = threadIdx.x, tx = blockIdx.x;
    const u32 x = tx * TW + lx;
    const u32 tiles_x = (g.w + TW - 1) / TW, tiles_y = (g.h + TH - 1) / TH;
    u64 sq = 0;
    for (u32 ty = blockIdx.y; ty < tiles_y; ty += gridDim.y) {
        u32 m[PER];
        u32 total = 0;
#pragma unroll
        for (u32 k = 0; k < PER; k++) {
            const u32 ly = threadIdx.y + 8 * k;
            const u32 y = ty * TH + ly;
            m[k] = y < g.h ? RM[(u64)y * tiles_x + tx] : 0u;
            total += __popc(m[k]);
            if (measure) s_cnt[ly * TW + lx] = 0;
        }
        for (u32 t = lx; t < total; t += 32) {
            const u32 node = nth_root(m, t);
            const u32 site = (ty * TH + node / TW) * g.w + tx * TW + node % TW;
            const u32 r = find_halving(P, g, site);
            s_new[node] = (u8)(((u64)philox(r, key).z * key.q) >> 32);
            s_root[node] = r;
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
            if (measure) {
                // One shared atomic per distinct cluster in the warp row.
                const u32 same = __match_any_sync(0xffffffffu, inside ? loc[k] : 0xffffffffu);
                if (inside && lx == (u32)(__ffs(same) - 1)) atomicAdd(s_cnt + loc[k], (u32)__popc(same));
            }
        }
        __syncthreads();
#pragma unroll
        for (u32 k = 0; k < PER; k++) {
            const u32 y = ty * TH + threadIdx.y + 8 * k;
            if (x < g.w && y < g.h) spins[y * g.w + x] = s_new[loc[k]];
        }
        if (measure) {
            // A uniform loop over the warp's roots, so that the list grows by one atomic per warp.
            for (u32 t0 = 0; t0 < total; t0 += 32) {
                const u32 t = t0 + lx;
                bool append = false;
                u32 r = 0;
                if (t < total) {
                    const u32 node = nth_root(m, t);
                    const u32 site = (ty * TH + node / TW) * g.w + tx * TW + node % TW;
                    const u32 c = s_cnt[node];
                    r = s_root[node];
                    const bool marked = flags[site] != 0;
                    if (marked) flags[site] = 0;
                    if (r == site && !marked) {
                        sq += (u64)c * c;
                    } else {
                        append = atomicAdd(sizes + r, c) == 0;
                    }
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
        }
        __syncthreads();
    }
    if (measure) warp_add64(obs + 1, sq);
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

// obs[0] += equal neighbour pairs (each bond once: right and down, wrapping where the axis
// wraps), obs[2 + v] += sites holding v. Grid-stride over sites, CTA 256. For q <= 4 each thread
// counts in registers; otherwise one shared atomic per distinct value in a warp.
extern "C" __global__ void __launch_bounds__(256)
sw_measure(const u8* __restrict__ spins, Geo g, u32 wrap_x, u32 wrap_y, u32 q, u64* obs) {
    __shared__ u32 s_hist[256];
    for (u32 i = threadIdx.x; i < 256; i += blockDim.x) s_hist[i] = 0;
    __syncthreads();
    const u64 n = (u64)g.h * g.w;
    const u32 lane = threadIdx.x & 31;
    const bool small = q <= 4;
    u32 c[4] = {0, 0, 0, 0};
    u64 sat = 0;
    for (u64 i0 = (u64)blockIdx.x * blockDim.x; i0 < n; i0 += (u64)gridDim.x * blockDim.x) {
        const u64 i = i0 + threadIdx.x;
        const bool valid = i < n;
        u32 s = 0x100; // no spin value
        if (valid) {
            s = spins[i];
            const u32 y = div_w(g, (u32)i), x = (u32)i - y * g.w;
            if (x + 1 < g.w || wrap_x) sat += s == spins[x + 1 < g.w ? i + 1 : (u64)y * g.w];
            if (y + 1 < g.h || wrap_y) sat += s == spins[y + 1 < g.h ? i + g.w : (u64)x];
        }
        if (small) {
#pragma unroll
            for (u32 v = 0; v < 4; v++) c[v] += s == v;
        } else {
            const u32 same = __match_any_sync(0xffffffffu, s);
            if (valid && lane == (u32)(__ffs(same) - 1)) atomicAdd(s_hist + s, (u32)__popc(same));
        }
    }
    if (small) {
#pragma unroll
        for (u32 v = 0; v < 4; v++) {
            u32 t = c[v];
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) t += __shfl_down_sync(0xffffffffu, t, o);
            if (lane == 0 && t) atomicAdd(s_hist + v, t);
        }
    }
    warp_add64(obs, sat);
    __syncthreads();
    for (u32 v = threadIdx.x; v < q; v += blockDim.x) {
        if (s_hist[v]) atomicAdd((unsigned long long*)(obs + 2 + v), (unsigned long long)s_hist[v]);
    }
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
