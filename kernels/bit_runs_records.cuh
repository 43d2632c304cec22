// Bit runs' cluster-analysis records (br_local_ana, kernels/bit_runs.cu): the record format and
// the tile pass that sums each local component into one record. Included by bit_runs.cu, whose
// tile geometry and shared-memory layout (OFF_ACC, ACC_FIELDS, ...) it uses; analysis.cu's
// ana_records reads the records back with the same helpers.
#pragma once

// The cluster analysis's records of a tile's components (br_local_ana). Each local component
// gets one record: its local root's site and its sums in tile coordinates (x < 1024, y < 32), packed
// so that no field can carry into the next:
//   a   = size (bits 0..15) | sum y (16..34) | sum y^2 (35..58)
//   b   = sum x (bits 0..23) | sum x^2 (24..57)
//   box = x_min (bits 0..9) | x_max (10..19) | y_min (20..24) | y_max (25..29)
// Interior components (whole clusters) fill the arrays from the front, edge components from the
// back (index cap - 1 - j); count[0] and count[1] count them. src/cuda/bit_runs/mod.rs: Records.
// With `hist` (the size counts) an interior component of at most HIST_CAP sites gets no record:
// it is a whole cluster that neither wraps nor spans, so only its size is wanted, and the tile
// counts it in a shared histogram added into `hist` (HIST_CAP + 1 words) at the end.
struct BrRec {
    u32* root;
    u64* a;
    u64* b;
    u32* box;
    u32* count;
    u32* hist;
    u32 cap;
    u32 slots;   // shared-memory accumulators (ana_shared_bytes)
    u32 moments; // 0: sizes and boxes only (n_s, regions): the coordinate sums are left 0
};

// The record's packed fields (as above).
__device__ __forceinline__ u64 pack_a(u32 size, u32 sy, u32 syy) {
    return (u64)size | (u64)sy << 16 | (u64)syy << 35;
}
__device__ __forceinline__ u64 pack_b(u32 sx, u64 sxx) { return (u64)sx | sxx << 24; }
__device__ __forceinline__ u32 pack_box(u32 x_min, u32 x_max, u32 y_min, u32 y_max) {
    return x_min | x_max << 10 | y_min << 20 | y_max << 25;
}
// And back (analysis.cu's ana_records).
__device__ __forceinline__ u32 rec_size(u64 a) { return (u32)(a & 0xffffu); }
__device__ __forceinline__ u64 rec_sy(u64 a) { return (a >> 16) & 0x7ffffull; }
__device__ __forceinline__ u64 rec_syy(u64 a) { return a >> 35; }
__device__ __forceinline__ u64 rec_sx(u64 b) { return b & 0xffffffull; }
__device__ __forceinline__ u64 rec_sxx(u64 b) { return b >> 24; }
__device__ __forceinline__ u32 box_x_min(u32 box) { return box & 1023u; }
__device__ __forceinline__ u32 box_x_max(u32 box) { return (box >> 10) & 1023u; }
__device__ __forceinline__ u32 box_y_min(u32 box) { return (box >> 20) & 31u; }
__device__ __forceinline__ u32 box_y_max(u32 box) { return box >> 25; }

// Sums over the run of `len` sites from column c: of x, and of x^2 (the sum of squares 0..=m is
// m (m + 1) (2m + 1) / 6, below 2^32 for m < 1024).
__device__ __forceinline__ u32 run_sx(u32 c, u32 len) { return len * c + len * (len - 1) / 2; }
__device__ __forceinline__ u32 run_sq(u32 c, u32 len) {
    const u32 e = c + len - 1;
    return e * (e + 1) * (2 * e + 1) / 6 - (c ? (c - 1) * c * (2 * c - 1) / 6 : 0u);
}

// The length of the run that starts at column c of a row whose joins to the left are jl: up to
// the next site that is not joined to its left neighbour (JL clear: empty, or another run's
// start).
__device__ __forceinline__ u32 run_len(const u32* jl, u32 c) {
    u32 w = c >> 5;
    const u32 b = c & 31;
    u32 z = b == 31 ? 0u : ~jl[w] & (FULL << (b + 1));
    while (!z && ++w < TWW) z = ~jl[w];
    const u32 end = z ? 32u * w + __ffs(z) - 1 : TW;
    return end - c;
}

// Sums over the set bits of m of their positions, and of their squares (bit k of a position
// counted by a popcount against the mask of positions with bit k set).
__device__ __forceinline__ u32 bit_sum(u32 m) {
    return __popc(m & 0xaaaaaaaau) + 2u * __popc(m & 0xccccccccu) + 4u * __popc(m & 0xf0f0f0f0u) +
           8u * __popc(m & 0xff00ff00u) + 16u * __popc(m & 0xffff0000u);
}
__device__ __forceinline__ u32 bit_sq(u32 m) {
    const u32 pat[5] = {0xaaaaaaaau, 0xccccccccu, 0xf0f0f0f0u, 0xff00ff00u, 0xffff0000u};
    u32 s = 0;
#pragma unroll
    for (u32 k = 0; k < 5; k++) {
        s += (1u << (2 * k)) * __popc(m & pat[k]);
#pragma unroll
        for (u32 l = k + 1; l < 5; l++) s += (2u << (k + l)) * __popc(m & pat[k] & pat[l]);
    }
    return s;
}

// Band node n's sums as the accumulators take them (size, sum y, sum y^2, sum x, sum x^2 low 16
// bits and the rest, x_min, x_max, y_max); r is a row of its band. Its run is its band's (the OR
// of the band's rows), found by its rank among the band's runs (a local root's own fields are
// its component's first site, which may lie in another of its runs), and its sites are the two
// rows' in that run; without moments the coordinate sums are left 0.
__device__ __forceinline__ void band_sums(const u32* sm, u32 n, u32 r, bool mom,
                                          u32 v[ACC_FIELDS]) {
    u32* smw = const_cast<u32*>(sm);
    const u32 b = r >> 1;
    const u32 *m = band_occ(smw, b), *jl = band_jl(smw, b);
    // The run's start: the word whose first run's rank is the last not above the node's, then
    // the start of that rank in it.
    const u32* excl = sm + OFF_EXCL + b * TWW;
    u32 k = n - sm[OFF_ROWBASE + b], w = 0;
#pragma unroll
    for (u32 step = 16; step; step >>= 1)
        if (excl[w + step] <= k) w += step;
    u32 st = m[w] & ~jl[w];
    for (k -= excl[w]; k; k--) st &= st - 1;
    const u32 start = 32u * w + __ffs(st) - 1u;
    const u32 end = start + run_len(jl, start) - 1u;
    const u32 *top = plane(smw, P_OCC, 2u * b), *bot = plane(smw, P_OCC, 2u * b + 1u);
    u32 nt = 0, nb = 0, sx = 0, sq = 0;
    for (w = start >> 5; w <= end >> 5; w++) {
        u32 mask = FULL;
        if (w == start >> 5) mask &= ~((1u << (start & 31u)) - 1u);
        if (w == end >> 5) mask &= le_mask(end & 31u);
        const u32 t = top[w] & mask, bo = bot[w] & mask;
        const u32 ct = __popc(t), cb = __popc(bo);
        nt += ct;
        nb += cb;
        if (mom) {
            const u32 x0 = 32u * w, s1 = bit_sum(t) + bit_sum(bo);
            sx += (ct + cb) * x0 + s1;
            sq += (ct + cb) * x0 * x0 + 2u * x0 * s1 + bit_sq(t) + bit_sq(bo);
        }
    }
    const u32 yt = 2u * b, yb = yt + 1u;
    v[0] = nt + nb;
    v[1] = nt * yt + nb * yb;
    v[2] = nt * yt * yt + nb * yb * yb;
    v[3] = sx;
    v[4] = sq & 0xffffu;
    v[5] = sq >> 16;
    v[6] = start;
    v[7] = end;
    v[8] = nb ? yb : yt;
}

__device__ __forceinline__ void put_record(const BrRec& rec, u32 j, u32 site, u64 a, u64 b,
                                           u32 box) {
    rec.root[j] = site;
    rec.a[j] = a;
    rec.b[j] = b;
    rec.box[j] = box;
}

// The tile's records, after every node points straight at its local root (`mine`: this thread's
// roots, bit k for node threadIdx.x + 512 k; OFF_MULTI: the roots of more than one run). A
// single-run component's record is its run's; the others' runs are summed into `slots`
// shared-memory accumulators, in rounds of `slots` components when a tile has more (each
// multi-run root's parent field, free once the finds are over, holds its accumulator number).
// The loops go over the nodes warp by warp (lane l of warp w takes node 32 w + l + 512 k), so
// that a warp's records are consecutive (ballots rank them) and its runs of one component are
// summed in registers before one lane's atomics (a large component's runs are dense in raster
// order). Leaves the nodes' own fields (row, column, EDGE) and non-roots' parents as they were.
// BAND: the nodes are bands' runs (band_sums).
template <bool BAND>
__device__ __forceinline__ void br_records(u32* sm, const Geo& g, const BrTile& t, u32 nodes,
                                           u32 mine, const BrRec& rec) {
    u32* ent = sm;
    const u32* multi = sm + OFF_MULTI;
    u32* scan = sm + OFF_SCAN;
    // Accumulators: ACC_FIELDS arrays of `slots` words (32-bit shared atomics are native; sums of
    // x^2 in two halves, so that 16384 runs cannot overflow either).
    u32* acc = sm + OFF_ACC;
    const u32 S = rec.slots;
    const bool mom = rec.moments != 0;
    // The size counts' histogram, after the accumulators (the host leaves room:
    // src/cuda/bit_runs/layout.rs, direct_hist_slots).
    const bool direct = rec.hist != nullptr;
    u32* sh = acc + ACC_FIELDS * S;
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const u32 lt = (1u << lane) - 1u;
#define IS_MULTI(n) ((multi[(n) >> 5] >> ((n) & 31)) & 1u)
    // (The scans' barriers below order the clearing before the first count.)
    if (direct)
        for (u32 i = threadIdx.x; i <= HIST_CAP; i += BR_THREADS) sh[i] = 0;

    // This thread's interior, edge and multi-run roots; the first record of each warp (the
    // block scan's offset of its lane 0).
    u32 ci = 0, ce = 0, cm = 0;
    for (u32 m = mine; m; m &= m - 1) {
        const u32 n = threadIdx.x + BR_THREADS * (__ffs(m) - 1);
        if (ent[n] & EDGE) ce++;
        else ci += !direct;
        cm += IS_MULTI(n);
    }
    u32 tot_ie, tot_m;
    const u32 off_ie = block_exclusive_scan(ci | ce << 16, scan, &tot_ie);
    const u32 off_m = block_exclusive_scan(cm, scan, &tot_m);
    if (threadIdx.x == 0) {
        scan[32] = atomicAdd(rec.count, tot_ie & 0xffffu);
        scan[33] = atomicAdd(rec.count + 1, tot_ie >> 16);
    }
    __syncthreads();
    const u32 w_ie = __shfl_sync(FULL, off_ie, 0);
    const u32 first_i = scan[32] + (w_ie & 0xffffu), first_e = scan[33] + (w_ie >> 16);
    const u32 w_m = __shfl_sync(FULL, off_m, 0);

    // Single-run components' records; accumulator numbers for the others.
    for (u32 k = 0, ji = first_i, je = first_e, jm = w_m; 32u * warp + BR_THREADS * k < nodes;
         k++) {
        const u32 n = threadIdx.x + BR_THREADS * k;
        const bool root = n < nodes && ((mine >> k) & 1u);
        const u32 e = root ? ent[n] : 0u;
        const bool many = root && IS_MULTI(n);
        const u32 bi = __ballot_sync(FULL, root && !(e & EDGE));
        const u32 be = __ballot_sync(FULL, root && (e & EDGE));
        const u32 bm = __ballot_sync(FULL, many);
        const u32 j = (e & EDGE) ? rec.cap - 1 - (je + __popc(be & lt)) : ji + __popc(bi & lt);
        if (many) {
            ent[n] = (e & (OWN_MASK | EDGE)) | ((jm + __popc(bm & lt)) << PAR_SHIFT);
        } else if (root && !BAND) {
            const u32 r = (e >> 10) & 31u, c = e & 1023u;
            const u32 len = run_len(plane(sm, P_JL, r), c);
            // (A run has at most TW <= HIST_CAP sites.)
            if (direct && !(e & EDGE)) atomicAdd(sh + len, 1u);
            else put_record(rec, j, node_key(ent, g, t, n), pack_a(len, len * r, len * r * r),
                       pack_b(run_sx(c, len), mom ? run_sq(c, len) : 0u),
                       pack_box(c, c + len - 1, r, r));
        } else if (root) {
            const u32 r = (e >> 10) & 31u;
            u32 v[ACC_FIELDS];
            band_sums(sm, n, r, mom, v);
            // (A band's run has up to 2 TW sites, beyond HIST_CAP.)
            if (direct && !(e & EDGE) && v[0] <= HIST_CAP) {
                atomicAdd(sh + v[0], 1u);
            } else {
                const u32 jj = (direct && !(e & EDGE)) ? atomicAdd(rec.count, 1u) : j;
                put_record(rec, jj, node_key(ent, g, t, n), pack_a(v[0], v[1], v[2]),
                           pack_b(v[3], mom ? (u64)v[4] + ((u64)v[5] << 16) : 0ull),
                           pack_box(v[6], v[7], r, v[8]));
            }
        }
        ji += __popc(bi);
        je += __popc(be);
        jm += __popc(bm);
    }
    __syncthreads();

    for (u32 base = 0; base < tot_m; base += rec.slots) {
        for (u32 i = threadIdx.x; i < ACC_FIELDS * S; i += BR_THREADS)
            acc[i] = i < S * ACC_XMIN || i >= S * (ACC_XMIN + 1) ? 0u : FULL;
        __syncthreads();
        for (u32 k = 0; 32u * warp + BR_THREADS * k < nodes; k++) {
            const u32 n = threadIdx.x + BR_THREADS * k;
            u32 s = FULL, e = 0;
            if (n < nodes) {
                e = ent[n];
                const bool root = (mine >> k) & 1u;
                const u32 R = root ? n : e_par(e);
                if (IS_MULTI(R)) {
                    s = e_par(root ? e : ent[R]) - base;
                    if (s >= rec.slots) s = FULL;
                }
            }
            u32 v[ACC_FIELDS];
            if (!BAND) {
                const u32 r = (e >> 10) & 31u, c = e & 1023u, len = run_len(plane(sm, P_JL, r), c);
                const u32 last = c + len - 1, sq = mom ? run_sq(c, len) : 0u;
                v[0] = len;
                v[1] = len * r;
                v[2] = len * r * r;
                v[3] = run_sx(c, len);
                v[4] = sq & 0xffffu;
                v[5] = sq >> 16;
                v[6] = c;
                v[7] = last;
                v[8] = r;
            } else {
                // (Only lanes that add to an accumulator want their node's sums.)
                v[0] = v[1] = v[2] = v[3] = v[4] = v[5] = v[7] = v[8] = 0;
                v[6] = FULL;
                if (s != FULL) band_sums(sm, n, (e >> 10) & 31u, mom, v);
            }
            // Lanes holding runs of one component side by side (a large component's runs are
            // dense in raster order) sum them into the first lane of the stretch (a segmented
            // reduction by shuffles), which alone adds the sums; elsewhere every lane adds its
            // own. (__match_any_sync groups all equal lanes but costs more than it saves where
            // components are small.)
            const u32 prev = __shfl_up_sync(FULL, s, 1);
            const u32 heads = __ballot_sync(FULL, lane == 0 || prev != s || s == FULL);
#if __CUDA_ARCH__ >= 800
            if (heads == 1u) {
                // The whole warp holds runs of one component (a dense lattice's large one): one
                // full-warp reduction per field, into lane 0.
#pragma unroll
                for (u32 f = 0; f < ACC_FIELDS; f++) {
                    if (!mom && f > 0 && f < ACC_XMIN) continue;
                    v[f] = f < ACC_XMIN    ? __reduce_add_sync(FULL, v[f])
                           : f == ACC_XMIN ? __reduce_min_sync(FULL, v[f])
                                           : __reduce_max_sync(FULL, v[f]);
                }
                if (lane) s = FULL;
            } else
#endif
            if (heads != FULL) {
                const u32 above = lane == 31 ? 0u : heads & (FULL << (lane + 1));
                const u32 stretch_end = above ? __ffs(above) - 1 : 32u;
                // Only as many rounds as the warp's longest stretch needs (most are one or two
                // runs long where components are small).
#if __CUDA_ARCH__ >= 800
                const u32 longest =
                    __reduce_max_sync(FULL, ((heads >> lane) & 1u) ? stretch_end - lane : 0u);
#else
                const u32 longest = 32u;
#endif
#pragma unroll
                for (u32 o = 1; o < 32; o <<= 1) {
                    if (o >= longest) break;
                    const bool take = lane + o < stretch_end;
#pragma unroll
                    for (u32 f = 0; f < ACC_FIELDS; f++) {
                        // (Uniform: without moments the coordinate sums stay unsummed.)
                        if (!mom && f > 0 && f < ACC_XMIN) continue;
                        const u32 t = __shfl_down_sync(FULL, v[f], o);
                        if (take) v[f] = f < ACC_XMIN ? v[f] + t : f == ACC_XMIN ? min(v[f], t) : max(v[f], t);
                    }
                }
                if (!((heads >> lane) & 1u)) s = FULL;
            }
            if (s == FULL) continue;
#pragma unroll
            for (u32 f = 0; f < ACC_XMIN; f++)
                if (f == 0 || mom) atomicAdd(acc + f * S + s, v[f]);
            atomicMin(acc + ACC_XMIN * S + s, v[ACC_XMIN]);
            atomicMax(acc + (ACC_XMIN + 1) * S + s, v[ACC_XMIN + 1]);
            atomicMax(acc + (ACC_XMIN + 2) * S + s, v[ACC_XMIN + 2]);
        }
        __syncthreads();
        for (u32 k = 0, ji = first_i, je = first_e; 32u * warp + BR_THREADS * k < nodes; k++) {
            const u32 n = threadIdx.x + BR_THREADS * k;
            const bool root = n < nodes && ((mine >> k) & 1u);
            const u32 e = root ? ent[n] : 0u;
            const u32 bi = __ballot_sync(FULL, root && !(e & EDGE));
            const u32 be = __ballot_sync(FULL, root && (e & EDGE));
            const u32 j = (e & EDGE) ? rec.cap - 1 - (je + __popc(be & lt)) : ji + __popc(bi & lt);
            ji += __popc(bi);
            je += __popc(be);
            if (!root || !IS_MULTI(n)) continue;
            const u32 s = e_par(e) - base;
            if (s >= rec.slots) continue;
            const u32 r = (e >> 10) & 31u;
            const u32* q = acc + s;
            u32 jj = j;
            if (direct && !(e & EDGE)) {
                if (q[0] <= HIST_CAP) {
                    atomicAdd(sh + q[0], 1u);
                    continue;
                }
                jj = atomicAdd(rec.count, 1u);
            }
            put_record(rec, jj, node_key(ent, g, t, n), pack_a(q[0], q[S], q[2 * S]),
                       pack_b(q[3 * S], (u64)q[4 * S] + ((u64)q[5 * S] << 16)),
                       pack_box(q[6 * S], q[7 * S], r, q[8 * S]));
        }
        __syncthreads();
    }
    if (direct) {
        __syncthreads();
        for (u32 i = threadIdx.x; i <= HIST_CAP; i += BR_THREADS)
            if (sh[i]) atomicAdd(rec.hist + i, sh[i]);
    }
#undef IS_MULTI
}
