// Block-based union-find (after Allegretti, Bolelli & Grana's BUF), with a shared-memory pass.
//
// One union-find node per block of sites whose occupied sites are always connected to each other:
//   occupancy, 8-connectivity: 2x2 blocks (any two sites of a 2x2 block are neighbours);
//   occupancy, 4-connectivity: 2x1 blocks (two horizontal neighbours);
//   segments: 1x1 blocks, i.e. per-site union-find (a larger block may hold several values).
// The forest P has one slot per block (a compact array; the label array itself for 1x1 blocks)
// holding the parent's key + 1 (see common.cuh).
//
//   buf_local   one CTA per tile of TILE x TILE blocks: reads the tile's sites once, links each
//               row's runs of joined blocks straight to the run's smallest node (warp ballots),
//               unites the rows in shared memory (local roots = smallest key, as globally), and
//               writes every block's slot as its local root's key + 1. This is the
//               initialisation, and most unions never touch global memory.
//   buf_border  unites the blocks on the tiles' borders with their neighbours in other tiles,
//               globally (atomicMin linking, path halving), reading the border blocks' cells
//               that buf_local saved (contiguous, so the lattice is not read again).
//   buf_wrap    the periodic edges, literally.
//   buf_flatten points the local root of every block on a tile's edge at its global root, so
//               that every later find takes at most two steps.
//   buf_final_raw  every site gets its block's root + 1 (0 where empty); roots are counted.
// Canonical numbering then runs canonical.cu's kernels on P.
#pragma once
#include "common.cuh"

#define TILE 32

// Border cells saved by buf_local, read by buf_border:
//   rows RB[(ty * 2 + side) * wb + bx]: side 0 = the tile's first block row, 1 = its row TILE - 1;
//   cols CB[(tx * 2 + side) * hb + by]: side 0 = the tile's first block column, 1 = column TILE - 1.
// Rows and columns that the lattice cuts off are neither written nor read.

// Local node of block (ly, lx) of a tile, ordered like the blocks' keys: a 2x2 block whose top
// row is empty has its key in the bottom row, after every key of the top rows.
__device__ __forceinline__ u32 local_node(u32 ly, u32 lx, u32 c) {
#if BH == 2 && !SEGMENTS
    const u32 t = (c & ((1u << BW) - 1)) == 0;
    return ((ly * 2 + t) * TILE) | lx;
#else
    (void)c;
    return ly * TILE + lx;
#endif
}

__device__ __forceinline__ u32 local_node_y(u32 node) {
#if BH == 2 && !SEGMENTS
    return node / (2 * TILE);
#else
    return node / TILE;
#endif
}

// Grid: (tiles across, min(tiles down, 65535)); CTA: (TILE, 8) threads, TILE / 8 blocks each;
// warp y handles rows y, y + 8, ... of the tile, lane x its column x.
extern "C" __global__ void __launch_bounds__(256)
buf_local(const site_t* __restrict__ in, u32* P, Geo g, u32* RB, u32* CB) {
    __shared__ u32 s_par[TILE * TILE * BH];
    __shared__ u32 s_cell[TILE * TILE];
    const u32 lx = threadIdx.x;
    const u32 bx = blockIdx.x * TILE + lx;
    const u32 tiles_y = (g.hb + TILE - 1) / TILE;
    const u32 le_mask = 0xffffffffu >> (31 - lx); // lanes 0..=lx
    constexpr u32 PER = TILE / 8;
    for (u32 ty = blockIdx.y; ty < tiles_y; ty += gridDim.y) {
#pragma unroll
        for (u32 k = 0; k < PER; k++) {
            const u32 ly = threadIdx.y + 8 * k;
            const u32 by = ty * TILE + ly;
            const u32 c = block_cell(in, g, by, bx);
            s_cell[ly * TILE + lx] = c;
            if (bx < g.wb && by < g.hb) {
                if (ly == 0) RB[(ty * 2) * g.wb + bx] = c;
                if (ly == TILE - 1) RB[(ty * 2 + 1) * g.wb + bx] = c;
                if (lx == 0) CB[(blockIdx.x * 2) * g.hb + by] = c;
                if (lx == TILE - 1) CB[(blockIdx.x * 2 + 1) * g.hb + by] = c;
            }
        }
        __syncthreads();
        // Runs of horizontally joined blocks: every block points at its run's smallest node.
#pragma unroll
        for (u32 k = 0; k < PER; k++) {
            const u32 ly = threadIdx.y + 8 * k;
            const u32 c = s_cell[ly * TILE + lx];
            const bool jl = c && lx > 0 && joined_left(c, s_cell[ly * TILE + lx - 1]);
            const u32 occ = __ballot_sync(0xffffffffu, c != 0);
            const u32 join = __ballot_sync(0xffffffffu, jl);
#if BH == 2 && !SEGMENTS
            // Blocks whose key is in the top row: the run's smallest node is the first of them.
            const u32 top = __ballot_sync(0xffffffffu, (c & ((1u << BW) - 1)) != 0);
#endif
            if (c) {
                const u32 starts = occ & ~join;
                const u32 start = 31 - __clz(starts & le_mask);
                // The run ends before the next start or the next empty block after `start`.
                const u32 after = (starts | ~occ) & ~(0xffffffffu >> (31 - start));
                const u32 run = (after ? (1u << (__ffs(after) - 1)) : 0u) - (1u << start);
#if BH == 2 && !SEGMENTS
                const u32 tops = top & run;
                const u32 rep = tops ? __ffs(tops) - 1 : start;
                const u32 rep_node = ((ly * 2 + ((tops == 0) ? 1u : 0u)) * TILE) | rep;
#else
                const u32 rep_node = ly * TILE + start;
#endif
                s_par[local_node(ly, lx, c)] = rep_node;
            }
        }
        __syncthreads();
        // Rows: the upper neighbours (left neighbours are in the run already).
#pragma unroll
        for (u32 k = 0; k < PER; k++) {
            const u32 ly = threadIdx.y + 8 * k;
            const u32 c = s_cell[ly * TILE + lx];
            if (!c || ly == 0) continue;
            const u32 node = local_node(ly, lx, c);
            auto get = [&](int dy, int dx) -> u32 {
                const int ny = (int)ly + dy, nx = (int)lx + dx;
                if (ny < 0 || nx < 0 || nx >= TILE) return 0u;
                return s_cell[ny * TILE + nx];
            };
            auto join = [&](int dy, int dx, u32 nc) {
                if (dy != 0) local_unite(s_par, node, local_node(ly + dy, lx + dx, nc));
            };
            for_each_join(c, get, join);
        }
        __syncthreads();
#pragma unroll
        for (u32 k = 0; k < PER; k++) {
            const u32 ly = threadIdx.y + 8 * k;
            const u32 by = ty * TILE + ly;
            if (bx >= g.wb || by >= g.hb) continue;
            const u32 c = s_cell[ly * TILE + lx];
            u32 v = 0;
            if (c) {
                const u32 root = local_find(s_par, local_node(ly, lx, c));
                const u32 ry = local_node_y(root), rx = root % TILE;
                v = cell_key(g, s_cell[ry * TILE + rx], ty * TILE + ry, blockIdx.x * TILE + rx) + 1;
            }
            P[by * g.wb + bx] = v;
        }
        __syncthreads();
    }
}

// The tiles' borders, from the saved border cells. mode 0: the blocks of each tile's first row
// (all their cross-tile joins); grid (ceil(wb / 256), min(tiles down, 65535)), CTA 256.
// mode 1: the blocks of each tile's first and last columns below its first row; grid
// (ceil(hb / 256), min(2 * tiles across, 65535)), CTA 256, lanes along the column.
extern "C" __global__ void __launch_bounds__(256)
buf_border(u32* P, Geo g, const u32* __restrict__ RB, const u32* __restrict__ CB, u32 mode) {
    const u32 tiles_x = (g.wb + TILE - 1) / TILE, tiles_y = (g.hb + TILE - 1) / TILE;
    if (mode == 0) {
        const u32 bx = blockIdx.x * blockDim.x + threadIdx.x;
        if (bx >= g.wb) return;
        const u32 lx = bx % TILE;
        for (u32 ty = blockIdx.y; ty < tiles_y; ty += gridDim.y) {
            const u32 by = ty * TILE;
            const u32* row = RB + (ty * 2) * g.wb;
            const u32 c = row[bx];
            if (!c) continue;
            if (ty == 0 && lx != 0) continue; // no cross-tile neighbour
            const u32* above = ty > 0 ? RB + ((ty - 1) * 2 + 1) * g.wb : nullptr;
            auto get = [&](int dy, int dx) -> u32 {
                if (dy == 0) return bx > 0 ? row[bx - 1] : 0u;
                if (ty == 0) return 0u;
                const u32 nbx = bx + dx;
                if ((dx < 0 && bx == 0) || nbx >= g.wb) return 0u;
                return above[nbx];
            };
            const u32 key = cell_key(g, c, by, bx);
            auto join = [&](int dy, int dx, u32 nc) {
                if (dy < 0 || (dx < 0 && lx == 0)) unite(P, g, key, cell_key(g, nc, by + dy, bx + dx));
            };
            for_each_join(c, get, join);
        }
    } else {
        const u32 by = blockIdx.x * blockDim.x + threadIdx.x;
        if (by >= g.hb || by % TILE == 0) return;
        for (u32 slot = blockIdx.y; slot < 2 * tiles_x; slot += gridDim.y) {
            const u32 tx = slot / 2, side = slot & 1;
            // Only edges with a tile on the other side.
            if ((side == 0 && tx == 0) || (side == 1 && tx + 1 >= tiles_x)) continue;
            const u32 bx = tx * TILE + side * (TILE - 1);
            const u32* col = CB + (tx * 2 + side) * g.hb;
            const u32 c = col[by];
            if (!c) continue;
            // The neighbouring tile's facing column.
            const u32* other = side == 0 ? CB + ((tx - 1) * 2 + 1) * g.hb : CB + ((tx + 1) * 2) * g.hb;
            auto get = [&](int dy, int dx) -> u32 {
                if (dx == 0) return col[by - 1];             // up: the same column
                if ((dx < 0) == (side == 0)) return other[by + dy]; // across the edge
                return 0u;                                   // inside the tile: not joined here
            };
            const u32 key = cell_key(g, c, by, bx);
            auto join = [&](int dy, int dx, u32 nc) {
                if ((dx < 0 && side == 0) || (dx > 0 && side == 1))
                    unite(P, g, key, cell_key(g, nc, by + dy, bx + dx));
            };
            for_each_join(c, get, join);
        }
    }
}

// Points block b's local root (and b) at their global root.
__device__ __forceinline__ void flatten_block(u32* P, const Geo& g, u32 b) {
    const u32 v = ld_cg(P + b);
    if (v == 0) return;
    const u32 local = v - 1;
    const u32 r = find_halving(P, g, local);
    if (r != local) {
        P[block_of(g, local)] = r + 1;
        P[b] = r + 1;
    }
}

// The periodic edges (wrap_edges in common.cuh); grid: ceil((h + w) / 256) CTAs of 256.
extern "C" __global__ void __launch_bounds__(256)
buf_wrap(const site_t* __restrict__ in, u32* P, Geo g, u32 wrap_x, u32 wrap_y) {
    wrap_edges(in, P, g, wrap_x, wrap_y);
}

// Points the local root of the blocks on tile edges at their global root, after all unions:
// the chains between local roots can be long, and every block's find starts with a step to its
// local root. Reads only P (a block's slot holds its local root's key + 1, or a shortcut).
// mode 0: each tile's first and last block rows; grid (ceil(wb / 256), min(2 * tiles down,
// 65535)), CTA 256. mode 1: each tile's first and last block columns, other rows; grid
// (ceil(2 * tiles across / 32), min(ceil(hb / 8), 65535)), CTA (32, 8).
extern "C" __global__ void __launch_bounds__(256)
buf_flatten(u32* P, Geo g, u32 mode) {
    const u32 tiles_x = (g.wb + TILE - 1) / TILE, tiles_y = (g.hb + TILE - 1) / TILE;
    auto last_of = [](u32 tile, u32 n) { return min(tile * TILE + TILE - 1, n - 1); };
    if (mode == 0) {
        const u32 bx = blockIdx.x * blockDim.x + threadIdx.x;
        if (bx >= g.wb) return;
        for (u32 r = blockIdx.y; r < 2 * tiles_y; r += gridDim.y) {
            const u32 tile = r / 2;
            const u32 by = (r & 1) ? last_of(tile, g.hb) : tile * TILE;
            if ((r & 1) && by == tile * TILE) continue; // a one-row tile
            flatten_block(P, g, by * g.wb + bx);
        }
    } else {
        const u32 slot = blockIdx.x * blockDim.x + threadIdx.x;
        if (slot >= 2 * tiles_x) return;
        const u32 tile = slot / 2;
        const u32 bx = (slot & 1) ? last_of(tile, g.wb) : tile * TILE;
        if ((slot & 1) && bx == tile * TILE) return; // a one-column tile
        for (u32 by = blockIdx.y * blockDim.y + threadIdx.y; by < g.hb; by += gridDim.y * blockDim.y) {
            const u32 ly = by % TILE;
            if (ly == 0 || by == last_of(by / TILE, g.hb)) continue; // mode 0's rows
            flatten_block(P, g, by * g.wb + bx);
        }
    }
}

// Raw labels: every site of a block gets its root + 1 (0 where empty); roots are counted. With
// P = L (1x1 blocks), writing root + 1 leaves a valid pointer, so concurrent finds stay correct.
// Grid and CTA as canon_final.
extern "C" __global__ void __launch_bounds__(256)
buf_final_raw(const site_t* __restrict__ in, u32* L, u32* P, Geo g, u32* count) {
    u32 roots = 0;
    const u32 bx = blockIdx.x * blockDim.x + threadIdx.x;
    const u32 x0 = bx * BW;
    for (u32 by0 = blockIdx.y * blockDim.y; by0 < g.hb; by0 += gridDim.y * blockDim.y) {
        const u32 by = by0 + threadIdx.y;
        if (bx >= g.wb || by >= g.hb) continue;
        const u32 y0 = by * BH;
        const u32 m = block_mask(in, g.h, g.w, y0, x0);
        u32 label = 0;
        if (m) {
            // Start from the block's own slot, find with path halving, and point the slot at the
            // root: blocks run roughly in raster order, so later finds meet compressed paths.
            const u32 key = block_key(m, g.w, y0, x0);
            const u32 b = by * g.wb + bx;
            const u32 v = ld_cg(P + b);
            u32 r = key;
            if (v != key + 1) {
#if BW == 1 && BH == 1
                // P = L: other sites' slots are their final labels once written, so no
                // stores into them (root + 1 written below is a valid pointer).
                r = find_root(P, g, v - 1);
#else
                r = find_halving(P, g, v - 1);
                if (r + 1 != v) P[b] = r + 1;
#endif
            }
            roots += (r == key);
            label = r + 1;
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
    warp_add(count, roots);
}
