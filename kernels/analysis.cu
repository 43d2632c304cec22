// Cluster analysis (HA4's section IV-D idea: features summed as the clusters are found and added
// into the pieces' accumulators, no pass over a label image). A piece is a cluster of the lattice
// with open boundaries; the host joins pieces across periodic seams by winding.
//
// Compiled after canonical.cu into two modules, each giving every piece's root slot
// FLAG | label - 1 (labels 1..=n in raster order of the pieces' first sites, the CPU's
// open-boundary numbering):
// - bit runs (the fast path, src/cuda/bit_runs/mod.rs: run_pieces): br_local_ana sums each tile's
//   components in shared memory and writes one record per component; after the seams are merged
//   and the roots ranked, ana_records adds the records into the accumulators.
// - block union-find (devices whose blocks cannot have bit runs' shared memory): its forest and
//   canon_count / canon_scan / canon_rank, then ana_runs takes the sums run by run from the rows.
// Then:
//   ana_zero    (block union-find) sets the accumulators of the n pieces to their empty values
//               (n read on the device). On the bit runs path br_publish sets the rows of the
//               pieces with edge records empty as it ranks their roots, and ana_records stores
//               the others whole.
//   ana_runs    (block union-find) one warp per 32 sites of a row: a ballot gives the occupied
//               lanes, each run start finds its piece's label (one find, at most two steps after
//               the flatten), the label is broadcast along the run, lanes with equal labels are
//               grouped (__match_any_sync) and each group's leader adds the group's sums with
//               atomics: one set of atomics per (piece, 32-site chunk). Optionally writes the
//               labels.
//   ana_records (bit runs) the tiles' records into the accumulators.
//   ana_border  the pieces of the lattice's four edges (label; size, bounding box), for the
//               host's displacement-tracking join across the periodic seams.
//   ana_hist    the size histogram (exact sizes up to HIST_CAP, larger ones and spanning ones
//               listed) of the pieces that touch no periodic seam, device-resident.
//   ana_hist_records (bit runs) the same from the records: interior ones are whole pieces (their
//               rows are never written for the size counts), edge pieces are read from their rows.
// The size counts on bit runs take neither records nor ranks: br_local_counts (bit_runs.cu)
// counts each tile's interior components itself and keeps each edge component's size at its
// local root, br_flatten adds those into the global roots, and then:
//   ns_edges    each occupied edge site's side of the lattice into its cluster's flags;
//   ns_hist     the histogram of the crossing clusters, from the global roots;
//   ns_border   (periodic) ana_border's output, for the host's join where the device's did
//               not run or overflowed;
//   ns_seam_*   (periodic) the seams' join on the device: the pieces on wrapped edges joined by
//               a union-find with shifts, their clusters counted into the same histogram.
//
// Accumulators are one 64-byte row per piece (Row), so that a record's sums land in the two
// 32-byte sectors of one row rather than in nine arrays, a whole row is written with four
// vector stores (no partial sectors), and the host downloads one contiguous buffer. Sums are
// exact 64-bit integers (the host checks that they cannot overflow).
#pragma once
#include "common.cuh"
#include "canonical.cu"

#define FULL_LABEL 0xffffffffu

#include "analysis_row.cuh"

// The piece (label - 1) of a local root r that is ranked or points at its ranked global root:
// br_spread gives every edge component's local root its root's FLAG | rank, and an analysis
// without labels skips it (its local roots point straight at their global roots, br_flatten).
__device__ __forceinline__ u32 root_piece(const u32* L, u32 r) {
    u32 v = L[r];
    if (!(v & FLAG)) v = L[v - 1];
    return v & ~FLAG;
}

// Rows 0..count[0] set empty (block union-find; bit runs' br_publish sets its edge pieces' rows
// empty, and ana_records stores the interior ones whole).
extern "C" __global__ void __launch_bounds__(256)
ana_zero(const u32* __restrict__ count, Row* a, u32 moments) {
    const bool mom = moments != 0;
    const u32 stride = gridDim.x * blockDim.x;
    const u32 n = count[0];
    for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) put_empty(a + i, mom);
}

// The label - 1 of the piece holding occupied site (y, x).
__device__ __forceinline__ u32 piece_of(const site_t* __restrict__ in, const u32* P, const Geo& g,
                                        u32 y, u32 x) {
    const u32 r = find_root(P, g, key_of_site(in, g, y, x));
    return ld_cg(P + block_of(g, r)) & ~FLAG;
}

// Sums into row r with atomics (after ana_zero): all in the row's two sectors.
__device__ __forceinline__ void add_row(Row* r, u32 cnt, u32 x0, u32 x1, u32 y0, u32 y1, u64 sx,
                                        u64 sy, u64 sxx, u64 syy, u32 first, bool moments) {
    atomicAdd(&r->size, cnt);
    atomicMin(&r->first, first);
    atomicMin(&r->x_min, x0);
    atomicMax(&r->x_max, x1);
    atomicMin(&r->y_min, y0);
    atomicMax(&r->y_max, y1);
    if (moments) {
        atomicAdd(&r->sx, sx);
        atomicAdd(&r->sy, sy);
        atomicAdd(&r->sxx, sxx);
        atomicAdd(&r->syy, syy);
    }
}

// The group's sums (lanes in `grp`, all in row y, columns xc + dx) into piece l.
__device__ __forceinline__ void add_group(Row* a, u32 l, u32 y, u32 w, u32 xc, u32 cnt, u32 sdx,
                                          u32 sdx2, u32 mn, u32 mx, bool moments) {
    const u64 c = cnt, x0 = xc, yy = y;
    add_row(a + l, cnt, xc + mn, xc + mx, y, y, c * x0 + sdx, c * yy,
            c * x0 * x0 + 2ull * x0 * sdx + sdx2, c * yy * yy, y * w + xc + mn, moments);
}

#define ANA_ROWS 32
#define NO_LABEL 0xffffffffu

// 2-D grid: x over 32-site chunks of a row (one warp each, blockDim.x = 32), y over strips of
// ANA_ROWS rows (one warp walks its chunk down a strip; blockDim.y warps per CTA, looping beyond
// 65535 CTA rows). `labels` may be null.
//
// Contention: a large cluster covers most chunks, and one set of atomics per chunk and row on
// its nine words would serialise in L2. So each warp keeps one piece's sums in lane 0's
// registers (the cache): the group of that piece goes there by shuffles, and the cache takes
// the largest group's piece when its piece is absent from a row (flushing the old one).
extern "C" __global__ void __launch_bounds__(256)
ana_runs(const site_t* __restrict__ in, const u32* P, Geo g, Row* a, u32* labels, u32 moments) {
    const u32 lane = threadIdx.x;
    const u32 xc = blockIdx.x * 32;
    const u32 x = xc + lane;
    const bool inside = x < g.w;
    const bool mom = moments != 0;
    for (u32 ys = (blockIdx.y * blockDim.y + threadIdx.y) * ANA_ROWS; ys < g.h;
         ys += gridDim.y * blockDim.y * ANA_ROWS) {
        const u32 yend = min(ys + ANA_ROWS, g.h);
        // The cache (meaningful in lane 0).
        u32 c_lab = NO_LABEL, c_cnt = 0, c_x0 = 0xffffffffu, c_x1 = 0, c_y0 = 0, c_y1 = 0;
        u32 c_first = 0xffffffffu;
        u64 c_sx = 0, c_sy = 0, c_sxx = 0, c_syy = 0;
        for (u32 y = ys; y < yend; y++) {
            const u32 idx = y * g.w + x;
            const bool occ = inside && in[idx] != 0;
            const u32 ball = __ballot_sync(0xffffffffu, occ);
            if (ball == 0) {
                if (labels && inside) labels[idx] = 0;
                continue;
            }
            // Run starts inside this chunk (lane 0 starts one when occupied).
            const u32 starts = ball & ~(ball << 1);
            u32 lab = 0;
            if ((starts >> lane) & 1u) lab = piece_of(in, P, g, y, x);
            const u32 upto = starts & (0xffffffffu >> (31 - lane));
            const int src = upto ? 31 - __clz(upto) : 0;
            const u32 mine = __shfl_sync(0xffffffffu, lab, src);
            if (labels && inside) labels[idx] = occ ? mine + 1 : 0u;
#if __CUDA_ARCH__ >= 800
            u32 cnt = 0, sdx = 0, sdx2 = 0, mn = 0, mx = 0;
            bool leader = false;
            if (occ) {
                const u32 grp = __match_any_sync(ball, mine);
                cnt = __popc(grp);
                sdx = __reduce_add_sync(grp, lane);
                sdx2 = __reduce_add_sync(grp, lane * lane);
                mn = __reduce_min_sync(grp, lane);
                mx = __reduce_max_sync(grp, lane);
                leader = lane == (u32)(__ffs(grp) - 1);
            }
            const u32 cl = __shfl_sync(0xffffffffu, c_lab, 0);
            u32 hit = __ballot_sync(0xffffffffu, leader && mine == cl);
            if (hit == 0) {
                // The largest group takes the cache.
                const u32 best = __reduce_max_sync(0xffffffffu, leader ? (cnt << 5) | lane : 0u);
                if ((best >> 5) >= 4) {
                    const u32 b = best & 31u;
                    const u32 nl = __shfl_sync(0xffffffffu, mine, b);
                    if (lane == 0) {
                        if (c_lab != NO_LABEL) {
                            add_row(a + c_lab, c_cnt, c_x0, c_x1, c_y0, c_y1, c_sx, c_sy, c_sxx,
                                    c_syy, c_first, mom);
                        }
                        c_lab = nl;
                        c_cnt = 0;
                        c_x0 = 0xffffffffu;
                        c_first = 0xffffffffu;
                        c_x1 = 0;
                        c_y0 = y;
                        c_sx = c_sy = c_sxx = c_syy = 0;
                    }
                    hit = 1u << b;
                }
            }
            if (hit) {
                const u32 h = __ffs(hit) - 1;
                const u32 vc = __shfl_sync(0xffffffffu, cnt, h);
                const u32 vs = __shfl_sync(0xffffffffu, sdx, h);
                const u32 vs2 = __shfl_sync(0xffffffffu, sdx2, h);
                const u32 vmn = __shfl_sync(0xffffffffu, mn, h);
                const u32 vmx = __shfl_sync(0xffffffffu, mx, h);
                if (lane == 0) {
                    const u64 c = vc, x0 = xc, yy = y;
                    c_cnt += vc;
                    c_x0 = min(c_x0, xc + vmn);
                    c_first = min(c_first, y * g.w + xc + vmn);
                    c_x1 = max(c_x1, xc + vmx);
                    c_y1 = y;
                    if (mom) {
                        c_sx += c * x0 + vs;
                        c_sy += c * yy;
                        c_sxx += c * x0 * x0 + 2ull * x0 * vs + vs2;
                        c_syy += c * yy * yy;
                    }
                }
            }
            if (leader && !((hit >> lane) & 1u)) {
                add_group(a, mine, y, g.w, xc, cnt, sdx, sdx2, mn, mx, mom);
            }
#else
            // Older devices: one set of atomics per site.
            if (occ) add_group(a, mine, y, g.w, xc, 1, lane, lane * lane, lane, lane, mom);
#endif
        }
        if (lane == 0 && c_lab != NO_LABEL) {
            add_row(a + c_lab, c_cnt, c_x0, c_x1, c_y0, c_y1, c_sx, c_sy, c_sxx, c_syy, c_first,
                    mom);
        }
    }
}

#ifdef TW
// The exact sum of a u64 over the lanes of `grp`, in three chunks of at most 22 bits (sm_80's
// warp reductions are 32-bit; 32 chunks cannot overflow one).
#if __CUDA_ARCH__ >= 800
__device__ __forceinline__ u64 grp_sum64(u32 grp, u64 v) {
    const u32 lo = __reduce_add_sync(grp, (u32)v & 0x3fffffu);
    const u32 mid = __reduce_add_sync(grp, (u32)(v >> 22) & 0x3fffffu);
    const u32 hi = __reduce_add_sync(grp, (u32)(v >> 44));
    return (u64)lo + ((u64)mid << 22) + ((u64)hi << 44);
}
#endif

// Bit runs' module only (br_local_ana's records, kernels/bit_runs.cu: BrRec). After br_spread
// every local root's slot in L holds FLAG | the piece's label - 1. A thread per record moves the
// record's sums from tile to lattice coordinates and stores them into the piece's accumulators:
// plainly for interior records (the piece is that one component), with atomics for edge records
// (into rows br_publish set empty). Grid-stride over count[0] + count[1] records; with `edges_only` (the size
// counts, whose ana_hist_records takes the interior records' sizes straight from the records)
// over the edge records alone. An interior record's piece is its root's rank: from L, or, when
// RB is given (the forest-only tile pass wrote no interior root's slot), from the masks as
// br_publish computes it: the chunk's and the entry's first ranks, the roots before the root's
// word in its entry (PRE, br_count) and those before it in its word.
extern "C" __global__ void __launch_bounds__(256)
ana_records(const u32* L, Geo g, Row* a, BrRec rec, u32 moments, u32 edges_only,
            const u32* __restrict__ RB, const u32* __restrict__ CNT,
            const u32* __restrict__ CHUNK, const u16* __restrict__ PRE, u32 tiles_x) {
    pdl_wait(); // (Gpu::launch_after)
    // Interior rows staged per warp (64 bytes a record), then stored four lanes a row.
    __shared__ uint4 stage[8][32][4];
    // The block's hot piece (below) and its sums.
    __shared__ u32 hot, h_size, h_first, h_xmn, h_xmx, h_ymn, h_ymx, cand[8], cand_n[8];
    __shared__ unsigned long long h_sx, h_sy, h_sxx, h_syy;
    const u32 ni = edges_only ? 0u : rec.count[0];
    const u32 ne = rec.count[1], total = ni + ne;
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const u32 stride = gridDim.x * blockDim.x;
    const bool mom = moments != 0;
    // The hot piece: the commonest among a sample of 256 edge records (a warp's largest group,
    // the largest of the eight). Pieces that cross many tiles, the percolating one above all,
    // have edge records everywhere, and their atomics on one row would serialise in L2: the
    // block sums that piece's records in shared memory and adds them once.
    {
        u32 l = FULL_LABEL;
        if (ne > 0) {
            const u32 k = (u32)(((u64)(blockIdx.x * blockDim.x + threadIdx.x) * 2654435761ull) % ne);
            l = root_piece(L, rec.root[rec.cap - 1 - k]);
        }
        u32 n = 0;
#if __CUDA_ARCH__ >= 800
        n = __popc(__match_any_sync(FULL, l));
#endif
        // The warp's largest group (ties: the larger label; any choice is correct).
        u32 best = (n << 24) | (lane), bl = l;
#pragma unroll
        for (u32 o = 16; o > 0; o >>= 1) {
            const u32 ob = __shfl_xor_sync(FULL, best, o), ol = __shfl_xor_sync(FULL, bl, o);
            if (ob > best) {
                best = ob;
                bl = ol;
            }
        }
        if (lane == 0) {
            cand[warp] = bl;
            cand_n[warp] = best >> 24;
        }
        if (threadIdx.x == 0) {
            h_size = 0;
            h_first = h_xmn = h_ymn = FULL_LABEL;
            h_xmx = h_ymx = 0;
            h_sx = h_sy = h_sxx = h_syy = 0;
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            u32 hb = 0, hl = FULL_LABEL;
            for (u32 w = 0; w < blockDim.x / 32; w++)
                if (cand_n[w] > hb) {
                    hb = cand_n[w];
                    hl = cand[w];
                }
            hot = hb > 1 ? hl : FULL_LABEL;
        }
        __syncthreads();
    }
    const u32 hot_l = hot;
    for (u32 i0 = blockIdx.x * blockDim.x + (threadIdx.x & ~31u); i0 < total; i0 += stride) {
        const u32 i = i0 + lane;
        const bool valid = i < total, edge = i >= ni;
        u32 l = FULL_LABEL, s = 0, xmn = 0, xmx = 0, ymn = 0, ymx = 0, first = 0;
        u64 sx = 0, sy = 0, sxx = 0, syy = 0;
        if (valid) {
            const u32 j = edge ? rec.cap - 1 - (i - ni) : i;
            const u32 site = rec.root[j];
            const u32 ys = div_w(g, site);
            if (RB != nullptr && !edge) {
                l = br_mask_rank(RB, CNT, CHUNK, PRE, tiles_x, ys, site - ys * g.w);
            } else {
                l = root_piece(L, site);
            }
            // The local root is the component's first site in the tile.
            first = site;
            const u32 x0 = (site - ys * g.w) & ~(TW - 1), y0 = ys - ys % TH;
            const u64 A = rec.a[j], B = rec.b[j];
            const u32 box = rec.box[j];
            s = rec_size(A);
            xmn = x0 + box_x_min(box);
            xmx = x0 + box_x_max(box);
            ymn = y0 + box_y_min(box);
            ymx = y0 + box_y_max(box);
            if (mom) {
                const u64 n = s, X = x0, Y = y0;
                const u64 lx = rec_sx(B), lxx = rec_sxx(B);
                const u64 ly = rec_sy(A), lyy = rec_syy(A);
                sx = X * n + lx;
                sxx = X * X * n + 2ull * X * lx + lxx;
                sy = Y * n + ly;
                syy = Y * Y * n + 2ull * Y * ly + lyy;
            }
        }
        // Interior records are whole pieces: their rows are stored whole. Staged so that each
        // store instruction writes eight whole rows (their ranks are mostly consecutive) rather
        // than a 16-byte piece of 32 scattered rows.
        const u32 inner = __ballot_sync(FULL, valid && !edge);
        if (inner) {
            if (valid && !edge) {
                uint4* st = stage[warp][lane];
                st[0] = make_uint4((u32)sx, (u32)(sx >> 32), (u32)sy, (u32)(sy >> 32));
                st[1] = make_uint4((u32)sxx, (u32)(sxx >> 32), (u32)syy, (u32)(syy >> 32));
                st[2] = make_uint4(s, xmn, xmx, ymn);
                st[3] = make_uint4(ymx, 0u, 0u, first);
            }
            __syncwarp();
            const u32 c = lane & 3u;
#pragma unroll
            for (u32 q = 0; q < 4; q++) {
                const u32 r = 8u * q + (lane >> 2);
                const u32 lr = __shfl_sync(FULL, l, r);
                // (Without moments their sector is never read.)
                if (((inner >> r) & 1u) && (mom || c >= 2))
                    reinterpret_cast<uint4*>(a + lr)[c] = stage[warp][r][c];
            }
            __syncwarp();
        }
        // Edge records: grouped by piece in the warp, each group's first lane adds the group's
        // sums (single records add their own); the hot piece's go to the block's sums.
        const u32 active = __ballot_sync(FULL, valid && edge);
        if (!(valid && edge)) continue;
#if __CUDA_ARCH__ >= 800
        const u32 grp = __match_any_sync(active, l);
        if (grp & (grp - 1)) {
            s = __reduce_add_sync(grp, s);
            xmn = __reduce_min_sync(grp, xmn);
            xmx = __reduce_max_sync(grp, xmx);
            ymn = __reduce_min_sync(grp, ymn);
            ymx = __reduce_max_sync(grp, ymx);
            first = __reduce_min_sync(grp, first);
            if (mom) {
                sx = grp_sum64(grp, sx);
                sy = grp_sum64(grp, sy);
                sxx = grp_sum64(grp, sxx);
                syy = grp_sum64(grp, syy);
            }
            if (lane != (u32)(__ffs(grp) - 1)) continue;
        }
#else
        (void)active;
#endif
        if (l == hot_l) {
            atomicAdd(&h_size, s);
            atomicMin(&h_first, first);
            atomicMin(&h_xmn, xmn);
            atomicMax(&h_xmx, xmx);
            atomicMin(&h_ymn, ymn);
            atomicMax(&h_ymx, ymx);
            if (mom) {
                atomicAdd(&h_sx, (unsigned long long)sx);
                atomicAdd(&h_sy, (unsigned long long)sy);
                atomicAdd(&h_sxx, (unsigned long long)sxx);
                atomicAdd(&h_syy, (unsigned long long)syy);
            }
            continue;
        }
        add_row(a + l, s, xmn, xmx, ymn, ymx, sx, sy, sxx, syy, first, mom);
    }
    __syncthreads();
    if (threadIdx.x == 0 && h_size > 0)
        add_row(a + hot_l, h_size, h_xmn, h_xmx, h_ymn, h_ymx, h_sx, h_sy, h_sxx, h_syy, h_first,
                mom);
}
#endif

// The lattice edges' sites in the border order of ana_border and ns_border: i < 2w rows 0 and
// h - 1, then columns 0 and w - 1. Returns the edge's NS_* bit.
#define NS_LEFT 1u
#define NS_RIGHT 2u
#define NS_TOP 4u
#define NS_BOTTOM 8u
__device__ __forceinline__ u32 border_site(const Geo& g, u32 i, u32* x, u32* y) {
    if (i < 2 * g.w) {
        *y = i < g.w ? 0 : g.h - 1;
        *x = i < g.w ? i : i - g.w;
        return i < g.w ? NS_TOP : NS_BOTTOM;
    }
    const u32 j = i - 2 * g.w;
    *x = j < g.h ? 0 : g.w - 1;
    *y = j < g.h ? j : j - g.h;
    return j < g.h ? NS_LEFT : NS_RIGHT;
}

// Per edge site i of e = 2(w + h): rows 0 and h - 1 (i < 2w), then columns 0 and w - 1: out[i]
// = its piece's label (0 when empty), and, when `info`, out[e + 5i ..] = the piece's size,
// x_min, x_max, y_min, y_max (so that a table's join downloads the labels alone).
extern "C" __global__ void __launch_bounds__(256)
ana_border(const site_t* __restrict__ in, const u32* P, Geo g, const Row* a, u32* out, u32 info) {
    pdl_wait(); // (Gpu::launch_after)
    const u32 e = 2 * (g.w + g.h);
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= e) return;
    u32 y, x;
    border_site(g, i, &x, &y);
    if (!occ_at(in, y * g.w + x)) {
        out[i] = 0;
        return;
    }
    const u32 l = piece_of(in, P, g, y, x);
    out[i] = l + 1;
    if (!info) return;
    const Row& r = a[l];
    u32* o = out + e + 5 * i;
    o[0] = r.size;
    o[1] = r.x_min;
    o[2] = r.x_max;
    o[3] = r.y_min;
    o[4] = r.y_max;
}

// Histogram of the sizes of the pieces that touch no periodic seam (those are whole clusters):
// hist[s] for s <= HIST_CAP; larger or spanning ones go to `tail` as (size, span bits: 1 = x,
// 2 = y) pairs, *tail_n counting them (entries beyond tail_cap are dropped; the host checks).
// hist_row counts the piece of a row into the block's shared histogram `sh`.
__device__ __forceinline__ void hist_row(const Row* r, const Geo& g, u32 wrap_x, u32 wrap_y,
                                         u32* sh, u32* tail, u32 tail_cap, u32* tail_n) {
    // Size and box: one 32-byte sector of the row.
    const uint4 q = *reinterpret_cast<const uint4*>(&r->size);
    const u32 x0 = q.y, x1 = q.z, y0 = q.w, y1 = r->y_max;
    const bool on_x = x0 == 0 || x1 == g.w - 1;
    const bool on_y = y0 == 0 || y1 == g.h - 1;
    if ((wrap_x && on_x) || (wrap_y && on_y)) return;
    const u32 span = ((x0 == 0 && x1 == g.w - 1) ? 1u : 0u) | ((y0 == 0 && y1 == g.h - 1) ? 2u : 0u);
    const u32 s = q.x;
    if (span || s > HIST_CAP) tail_append(tail, tail_cap, tail_n, s, span);
    else atomicAdd(sh + s, 1u);
}

__device__ __forceinline__ void hist_clear(u32* sh) {
    for (u32 i = threadIdx.x; i <= HIST_CAP; i += blockDim.x) sh[i] = 0;
    __syncthreads();
}

__device__ __forceinline__ void hist_flush(const u32* sh, u32* hist) {
    __syncthreads();
    for (u32 i = threadIdx.x; i <= HIST_CAP; i += blockDim.x) {
        if (sh[i]) atomicAdd(hist + i, sh[i]);
    }
}

extern "C" __global__ void __launch_bounds__(256)
ana_hist(const u32* __restrict__ count, const Row* a, Geo g, u32 wrap_x, u32 wrap_y, u32* hist,
         u32* tail, u32 tail_cap, u32* tail_n) {
    __shared__ u32 sh[HIST_CAP + 1];
    hist_clear(sh);
    const u32 n = *count;
    for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        hist_row(a + i, g, wrap_x, wrap_y, sh, tail, tail_cap, tail_n);
    hist_flush(sh, hist);
}

#ifdef TW
// Bit runs' module only: ana_hist from the records, after ana_records with `edges_only`. An
// interior record is a whole piece inside one tile (it touches no edge of the lattice, so it
// neither wraps nor spans): its size comes from the record, and its row is never written. A
// piece with edge records is counted from its row by the one record whose root is the piece's
// first site (the row's `first`, the least of its records' roots).
extern "C" __global__ void __launch_bounds__(256)
ana_hist_records(const u32* L, const Row* a, BrRec rec, Geo g, u32 wrap_x, u32 wrap_y, u32* hist,
                 u32* tail, u32 tail_cap, u32* tail_n) {
    pdl_wait(); // (Gpu::launch_after)
    __shared__ u32 sh[HIST_CAP + 1];
    hist_clear(sh);
    const u32 ni = rec.count[0], total = ni + rec.count[1];
    for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
        if (i < ni) {
            const u32 s = rec_size(rec.a[i]);
            if (s > HIST_CAP) {
                tail_append(tail, tail_cap, tail_n, s, 0);
            } else {
                atomicAdd(sh + s, 1u);
            }
            continue;
        }
        const u32 site = rec.root[rec.cap - 1 - (i - ni)];
        const Row* r = a + root_piece(L, site);
        if (r->first == site) hist_row(r, g, wrap_x, wrap_y, sh, tail, tail_cap, tail_n);
    }
    hist_flush(sh, hist);
}

// The size counts from the forest (bit runs, 32-bit, raw: br_local_counts, br_merge, br_flatten
// with its sizes; no ranking, no records). The lattice edges a cluster touches go into sf's
// high word as NS_* bits (border_site).
__device__ __forceinline__ u32 ns_edge_site(const Geo& g, u32 i, u32* side) {
    u32 x, y;
    *side = border_site(g, i, &x, &y);
    return y * g.w + x;
}

// The global root of a tile-edge site (its slot holds its local root + 1, which points at its
// global root after br_flatten).
__device__ __forceinline__ u32 ns_root(const u32* L, u32 site) {
    const u32 r = ld_cg(L + site) - 1u;
    const u32 v = ld_cg(L + r);
    return v == r + 1u ? r : v - 1u;
}

// Every occupied edge site's side into its cluster's flags (read first: the large cluster meets
// the edges at many sites); with RN (periodic) the site's border index into RN at its global
// root (ns_seam_nodes). Grid: ceil(2(w + h) / 256) CTAs of 256.
extern "C" __global__ void __launch_bounds__(256)
ns_edges(const site_t* __restrict__ in, const u32* L, Geo g, u64* sf, u32* RN) {
    pdl_wait(); // (Gpu::launch_after)
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= 2 * (g.w + g.h)) return;
    u32 side;
    const u32 site = ns_edge_site(g, i, &side);
    if (!occ_at(in, site)) return;
    const u32 R = ns_root(L, site);
    // (Periodic: one of its edge sites, whichever stores last, is the piece's seam node.)
    if (RN != nullptr) RN[R] = i;
    const u64 bit = (u64)side << 32;
    if (!(__ldcg(sf + R) & bit)) atomicOr((unsigned long long*)(sf + R), (unsigned long long)bit);
}

// The histogram of the clusters that cross a tile's edge, from their global roots (ER after
// br_flatten with `globals`: a thread a word, grid-strided), as ana_hist's: those on a periodic
// seam are left to the host's join, those larger than HIST_CAP or spanning are listed.
extern "C" __global__ void __launch_bounds__(256)
ns_hist(const u32* __restrict__ ER, const u64* sf, Geo g, u32 tiles_x, u32 words, u32 wrap_x,
        u32 wrap_y, u32* hist, u32* tail, u32 tail_cap) {
    pdl_wait(); // (Gpu::launch_after)
    __shared__ u32 sh[HIST_CAP + 1];
    hist_clear(sh);
    // Four words a thread in one 16-byte load (`words` is a multiple of 32): the mask is mostly
    // zero words, and one load at a time left the pass waiting on memory.
    const uint4* ER4 = reinterpret_cast<const uint4*>(ER);
    for (u32 q = blockIdx.x * blockDim.x + threadIdx.x; q < words / 4u;
         q += gridDim.x * blockDim.x) {
        const uint4 w4 = ER4[q];
        const u32 ws[4] = {w4.x, w4.y, w4.z, w4.w};
#pragma unroll
        for (u32 j = 0; j < 4; j++) {
            u32 word = ws[j];
            if (!word) continue;
            const u32 base = mask_site(g, tiles_x, 4u * q + j);
            while (word) {
                const u32 b = __ffs(word) - 1;
                word &= word - 1;
                const u64 v = sf[base + b];
                const u32 s = (u32)v, f = (u32)(v >> 32);
                if ((wrap_x && (f & (NS_LEFT | NS_RIGHT))) ||
                    (wrap_y && (f & (NS_TOP | NS_BOTTOM))))
                    continue;
                const u32 span = ((f & (NS_LEFT | NS_RIGHT)) == (NS_LEFT | NS_RIGHT) ? 1u : 0u) |
                                 ((f & (NS_TOP | NS_BOTTOM)) == (NS_TOP | NS_BOTTOM) ? 2u : 0u);
                if (span || s > HIST_CAP) ns_list(hist, tail, tail_cap, s, span);
                else atomicAdd(sh + s, 1u);
            }
        }
    }
    hist_flush(sh, hist);
}

// ana_border's output for the size counts' join on a periodic lattice: out[i] = the global root
// + 1 of edge site i (0 when empty), out[e + 5i ..] = its cluster's size and a bounding box that
// says only which edges it touches (x_min 0 or 1, x_max w - 1 or 0, likewise y), which is all
// the join reads of it. After ns_edges. Grid: ceil(2(w + h) / 256) CTAs of 256.
extern "C" __global__ void __launch_bounds__(256)
ns_border(const site_t* __restrict__ in, const u32* L, Geo g, const u64* sf, u32* out) {
    pdl_wait(); // (Gpu::launch_after)
    const u32 e = 2 * (g.w + g.h);
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= e) return;
    u32 side;
    const u32 site = ns_edge_site(g, i, &side);
    if (!occ_at(in, site)) {
        out[i] = 0;
        return;
    }
    const u32 R = ns_root(L, site);
    out[i] = R + 1;
    const u64 v = sf[R];
    const u32 f = (u32)(v >> 32);
    u32* o = out + e + 5 * i;
    o[0] = (u32)v;
    o[1] = (f & NS_LEFT) ? 0u : 1u;
    o[2] = (f & NS_RIGHT) ? g.w - 1 : 0u;
    o[3] = (f & NS_TOP) ? 0u : 1u;
    o[4] = (f & NS_BOTTOM) ? g.h - 1 : 0u;
}
// The periodic seams' join on the device (ns_edges with RN, then ns_seam_nodes, ns_seam_link,
// ns_seam_sum, ns_seam_count): the pieces that touch a wrapped edge are the nodes of a
// union-find with shifts (src/measure/wrapping: Machta; Newman–Ziff), one node per piece, at the
// border index (border_site) of one of its edge sites. The links are the host join's
// (Joined::join_edges), one thread each; a link whose ends already share a root closes a loop,
// and a loop whose shifts disagree makes the cluster wrap. A node's word packs its parent (low
// 32 bits) and its shift relative to the parent (x, y as 16-bit integers): roots are hooked by
// one 64-bit CAS, so a word is never seen half written. A shift beyond 16 bits (impossible
// below 32768 sites a side: seams_cannot_overflow in src/cuda/analysis/counts.rs) sets hist[0],
// which the host reads as "join these seams yourself" (ns_border's output is there for it on
// such lattices); hist[0] is otherwise unused (sizes start at 1). Per border entry: W (u64),
// SZ (u64), NO (u32: its piece's node, FULL for none), FL (u32: wrap bits 1 = x, 2 = y; the
// NS_* edges << 4).
#define SEAM_MAX 32767
struct Seam {
    u64* W;
    u64* SZ;
    u32* NO;
    u32* FL;
};

__device__ __forceinline__ Seam seam_at(u64* base, u32 e) {
    return Seam{base, base + e, (u32*)(base + 2 * (u64)e), (u32*)(base + 2 * (u64)e) + e};
}

__device__ __forceinline__ u64 seam_word(u32 parent, int dx, int dy) {
    return (u64)parent | ((u64)(u16)(short)dx << 32) | ((u64)(u16)(short)dy << 48);
}

// Whether a piece with edge bits f lies on a wrapped edge (ns_hist leaves it to the join).
__device__ __forceinline__ bool seam_piece(u32 f, u32 wrap_x, u32 wrap_y) {
    return (wrap_x && (f & (NS_LEFT | NS_RIGHT))) || (wrap_y && (f & (NS_TOP | NS_BOTTOM)));
}

// The root of node x and x's shift relative to it; x's own word is pointed at the root after.
__device__ __forceinline__ u32 seam_find(u64* W, u32 x, int* dx, int* dy) {
    int sx = 0, sy = 0;
    u32 r = x;
    u64 v = __ldcg(W + r);
    u32 hops = 0;
    while ((u32)v != r) {
        sx += (short)(u16)(v >> 32);
        sy += (short)(u16)(v >> 48);
        r = (u32)v;
        v = __ldcg(W + r);
        hops++;
    }
    // (A store of a true relation: x's position relative to an ancestor never changes.)
    if (hops > 1 && abs(sx) <= SEAM_MAX && abs(sy) <= SEAM_MAX) W[x] = seam_word(r, sx, sy);
    *dx = sx;
    *dy = sy;
    return r;
}

// Each occupied edge site of a piece on a wrapped edge: its piece's node (RN, claimed in
// ns_edges by one of the piece's edge sites); the nodes start as roots of their own.
extern "C" __global__ void __launch_bounds__(256)
ns_seam_nodes(const site_t* __restrict__ in, const u32* L, Geo g, const u64* sf, const u32* RN,
              u32 wrap_x, u32 wrap_y, u64* seam) {
    pdl_wait(); // (Gpu::launch_after)
    const u32 e = 2 * (g.w + g.h);
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= e) return;
    const Seam s = seam_at(seam, e);
    u32 side, node = FULL;
    const u32 site = ns_edge_site(g, i, &side);
    if (occ_at(in, site)) {
        const u32 R = ns_root(L, site);
        if (seam_piece((u32)(__ldcg(sf + R) >> 32), wrap_x, wrap_y)) node = RN[R];
    }
    s.NO[i] = node;
    if (node == i) {
        s.W[i] = seam_word(i, 0, 0);
        s.SZ[i] = 0;
        s.FL[i] = 0;
    }
}

// The link "the shift of b's piece minus a's is (kx, ky)" (Joined::link, concurrently).
// SEAM_SELF=1 (default 0 until the GPU tests have run with it; BENCHMARKS.md, seventeenth
// session: 0.01-0.03 ms off n_s on an 8-connected 16384^2 torus, H100, and gpu_analysis --check
// exact): a link between two edge sites of one piece (the spanning cluster's, mostly) closes a
// loop of shift k on that node without a find; one lane per node and warp sets the flags not
// yet set in the node's own word, and ns_seam_sum ORs each node's into its root.
#ifndef SEAM_SELF
#define SEAM_SELF 0
#endif
__device__ __forceinline__ void seam_link(const Seam& s, u32* hist, u32 a, u32 b, int kx, int ky) {
    a = s.NO[a];
    b = s.NO[b];
    if (a == FULL || b == FULL) return;
#if SEAM_SELF
    if (a == b) {
        u32 f = (kx != 0 ? 1u : 0u) | (ky != 0 ? 2u : 0u);
        const u32 peers = __match_any_sync(__activemask(), a);
        f = (__any_sync(peers, f & 1u) ? 1u : 0u) | (__any_sync(peers, f & 2u) ? 2u : 0u);
        if ((threadIdx.x & 31u) != (u32)(__ffs(peers) - 1)) return;
        if (f & ~__ldcg(s.FL + a)) atomicOr(s.FL + a, f);
        return;
    }
#endif
    while (true) {
        int ax, ay, bx, by;
        const u32 ra = seam_find(s.W, a, &ax, &ay);
        const u32 rb = seam_find(s.W, b, &bx, &by);
        if (ra == rb) {
            const u32 f = (bx - ax - kx != 0 ? 1u : 0u) | (by - ay - ky != 0 ? 2u : 0u);
            if (f) atomicOr(s.FL + ra, f);
            return;
        }
        int rx = kx - bx + ax, ry = ky - by + ay; // shift(rb) - shift(ra)
        u32 root = ra, child = rb;
        if (rb < ra) {
            root = rb;
            child = ra;
            rx = -rx;
            ry = -ry;
        }
        if (abs(rx) > SEAM_MAX || abs(ry) > SEAM_MAX) {
            atomicOr(hist, 1u);
            return;
        }
        const u64 was = seam_word(child, 0, 0);
        if (atomicCAS((unsigned long long*)(s.W + child), (unsigned long long)was,
                      (unsigned long long)seam_word(root, rx, ry)) == was)
            return;
        // Another link hooked `child` first: find again.
    }
}

// The links across the wrapped edges, in Joined::join_edges' pairs: columns w - 1 and 0 (and
// with 8-connectivity both diagonals, across the corner when y wraps too), rows h - 1 and 0
// (and both diagonals). Thread t: t < 3h the x seam's straight, down and up links, then the y
// seam's 3w. Border indices: row 0 at x, row h - 1 at w + x, column 0 at 2w + y, column w - 1
// at 2w + h + y.
extern "C" __global__ void __launch_bounds__(256)
ns_seam_link(Geo g, u32 wrap_x, u32 wrap_y, u32 conn8, u64* seam, u32* hist) {
    pdl_wait(); // (Gpu::launch_after)
    const u32 w = g.w, h = g.h, e = 2 * (w + h);
    const u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= 3 * (w + h)) return;
    const Seam s = seam_at(seam, e);
    const u32 left = 2 * w, right = 2 * w + h, bottom = w;
    if (t < 3 * h) {
        if (!wrap_x) return;
        const u32 kind = t / h, y = t - kind * h;
        if (kind == 0) {
            seam_link(s, hist, right + y, left + y, 1, 0);
        } else if (conn8 && kind == 1) {
            // right[y] with left[y + 1]; the last row's across the corner when y wraps.
            if (y + 1 < h) seam_link(s, hist, right + y, left + y + 1, 1, 0);
            else if (wrap_y) seam_link(s, hist, right + y, left, 1, 1);
        } else if (conn8) {
            if (y + 1 < h) seam_link(s, hist, left + y, right + y + 1, -1, 0);
            else if (wrap_y) seam_link(s, hist, left + y, right, -1, 1);
        }
    } else {
        if (!wrap_y) return;
        const u32 u = t - 3 * h, kind = u / w, x = u - kind * w;
        if (kind == 0) seam_link(s, hist, bottom + x, x, 0, 1);
        else if (conn8 && kind == 1 && x + 1 < w) seam_link(s, hist, bottom + x, x + 1, 0, 1);
        else if (conn8 && kind == 2 && x + 1 < w) seam_link(s, hist, bottom + x + 1, x, 0, 1);
    }
}

// Each node's piece's size, edges and loop flags into its root.
extern "C" __global__ void __launch_bounds__(256)
ns_seam_sum(const u32* L, Geo g, const u64* sf, u64* seam) {
    pdl_wait(); // (Gpu::launch_after)
    const u32 e = 2 * (g.w + g.h);
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= e) return;
    const Seam s = seam_at(seam, e);
    if (s.NO[i] != i) return;
    u32 side;
    const u64 v = sf[ns_root(L, ns_edge_site(g, i, &side))];
    int dx, dy;
    const u32 r = seam_find(s.W, i, &dx, &dy);
    atomicAdd((unsigned long long*)(s.SZ + r), (unsigned long long)(u32)v);
    atomicOr(s.FL + r, s.FL[i] | ((u32)(v >> 32) << 4));
}

// Each joined cluster (a root node) into the histogram, or listed with (size, bits: 1 = spans
// x, 2 = spans y, 4 = wraps x, 8 = wraps y) when larger than HIST_CAP or percolating; nothing
// when the join overflowed (hist[0], the host joins).
extern "C" __global__ void __launch_bounds__(256)
ns_seam_count(Geo g, u32 wrap_x, u32 wrap_y, const u64* seam, u32* hist, u32* tail,
              u32 tail_cap) {
    pdl_wait(); // (Gpu::launch_after)
    const u32 e = 2 * (g.w + g.h);
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= e || __ldcg(hist) != 0) return;
    const Seam s = seam_at(const_cast<u64*>(seam), e);
    if (s.NO[i] != i || (u32)s.W[i] != i) return;
    const u64 size = s.SZ[i];
    const u32 f = s.FL[i], ns = f >> 4;
    const u32 bits = (!wrap_x && (ns & NS_LEFT) && (ns & NS_RIGHT) ? 1u : 0u) |
                     (!wrap_y && (ns & NS_TOP) && (ns & NS_BOTTOM) ? 2u : 0u) | ((f & 3u) << 2);
    if (bits || size > HIST_CAP) tail_append(tail, tail_cap, hist + HIST_CAP + 1, (u32)size, bits);
    else atomicAdd(hist + size, 1u);
}
#endif
