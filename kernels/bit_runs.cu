// Bit runs: run-based union-find on bit-packed rows, in shared-memory tiles that are labeled
// twice (once to build the global forest of their edge components, once to write the labels)
// so that the only full-size traffic is reading the lattice twice and writing the labels once.
//
// A tile is TH rows x TW = 1024 columns; one CTA of 512 threads (16 warps) per tile. Lane k of a
// warp holds columns 32k..32k+31 of a row as one 32-bit mask, so run starts, contacts between
// rows and run ranks are a few bit operations and popcounts per 32 sites. The union-find nodes
// are the tile's horizontal runs (maximal sequences of horizontally joined sites), numbered in
// raster order; a node's packed shared-memory entry holds its parent (bits 15..28, the smaller
// node wins, so a local root is its component's first run), its own row (bits 10..14) and column
// (bits 0..9), and EDGE (bit 31) once unions are over and the component touches the tile's edge.
// Rows meet only where a contact between two runs begins (a few per 32 sites): a run's first
// contact becomes its initial parent, with no find or atomic, and the others are unions.
//
// Components that do not touch the tile's edge are complete clusters: their label is known in
// the tile. The others meet in a global forest that lives in the label array L itself: the slot
// of a site index k holds k' + 1 with k' a smaller site of the same cluster, and k + 1 at a root
// (common.cuh's convention; the root is the cluster's first site, its raw label root + 1).
//
//   br_local  labels the tile, writes L[s] = local root + 1 at every tile-edge site (0 where
//             empty) and L[r] = r + 1 at each edge component's local root r; for canonical
//             numbering also the bit mask of the tile's interior roots, row by row (RB).
//   br_merge  unites, with atomicMin linking in L, the sites that face each other across tile
//             seams (and the periodic edges, which are seams between the last and first row or
//             column), starting each find at the site's local root, so that only local roots'
//             slots are ever written (edge sites keep pointing at their local roots).
//   br_edges  (canonical) flatten: every edge site and every edge component's local root point
//             straight at the global root, whose bit joins RB; publish: each global root on an
//             edge component gets FLAG | rank, from RB's counts.
//   br_count  (canonical) counts RB's roots per (row, tile column) in raster order and scans them
//             per chunk of 256 entries; canon_scan then scans the chunks.
//   br_final  labels the tile again; each local root gets its label (interior: its key + 1 or its
//             rank + 1; edge: from the global forest, read only), then every site is written
//             once, 32 consecutive labels per lane.
//
// Raw numbering needs no flatten: br_final's read-only finds only follow slots of local roots,
// and a slot that another tile overwrites with its final label (root + 1) stays a valid pointer.
// Canonical labels need the flatten, since a final rank + 1 is not a pointer; a root's slot holds
// FLAG | rank until its own tile writes rank + 1, and readers accept both.

#define TW 1024u
#define TWW 32u // words per tile row
#if SEGMENTS
#define TH 16u
#define NPLANES 5u
#else
#define TH 32u
#define NPLANES 2u
#endif
#define BR_THREADS 512u
#define BR_WARPS 16u
#define RPW (TH / BR_WARPS) // rows per warp
// Nodes per tile, worst case: TH * TW / 2 runs of occupancy, TH * TW of segments.
#define MAXN 16384u
#define PAR_SHIFT 15
#define OWN_MASK 0x7fffu
#define EDGE 0x80000000u
#define FULL 0xffffffffu

// Planes of per-row masks in shared memory: occupancy, joined to the left neighbour, and (for
// segments, whose joins depend on values) joined to the site above, above-left, above-right.
#define P_OCC 0u
#define P_JL 1u
#define P_V 2u
#define P_DL 3u
#define P_DR 4u

// Shared-memory layout in words (src/cuda/bit_runs.rs mirrors BR_SMEM_WORDS).
#define OFF_PLANES MAXN
#define OFF_EXCL (OFF_PLANES + NPLANES * TH * TWW)
#define OFF_ROWBASE (OFF_EXCL + TH * TWW)
#define OFF_ISROOT (OFF_ROWBASE + 64u)
#define OFF_RBITS (OFF_ISROOT + MAXN / 32u)
#define OFF_RPRE (OFF_RBITS + TH * TWW)
#define OFF_RBASE (OFF_RPRE + TH * TWW)
#define BR_SMEM_WORDS (OFF_RBASE + 64u)

// Counts per chunk in br_count (src/cuda/bit_runs.rs: COUNT_CHUNK).
#define BR_CHUNK 256u

struct BrTile {
    u32 tx, ty;     // tile coordinates
    u32 x0, y0;     // first site
    u32 rows, cols; // rows and columns inside the lattice
};

__device__ __forceinline__ BrTile br_tile(const Geo& g, u32 tiles_x) {
    BrTile t;
    t.ty = blockIdx.x / tiles_x;
    t.tx = blockIdx.x - t.ty * tiles_x;
    t.x0 = t.tx * TW;
    t.y0 = t.ty * TH;
    t.rows = min(TH, g.h - t.y0);
    t.cols = min(TW, g.w - t.x0);
    return t;
}

__device__ __forceinline__ u32* plane(u32* sm, u32 p, u32 r) {
    return sm + OFF_PLANES + (p * TH + r) * TWW;
}

// Bit j set when byte j of v is nonzero.
__device__ __forceinline__ u32 nz4(u32 v) {
    u32 t = (((v & 0x7f7f7f7fu) + 0x7f7f7f7fu) | v) & 0x80808080u;
    return ((t >> 7) * 0x00204081u) >> 21 & 0xfu;
}

// Bit 31 of the previous lane's m (0 in lane 0: the tile's left edge).
__device__ __forceinline__ u32 from_left(u32 m, u32 lane) {
    const u32 p = __shfl_up_sync(FULL, m, 1);
    return lane ? p >> 31 : 0u;
}
// Bit 0 of the next lane's m (0 in lane 31: the tile's right edge).
__device__ __forceinline__ u32 from_right(u32 m, u32 lane) {
    const u32 q = __shfl_down_sync(FULL, m, 1);
    return lane < 31 ? q & 1u : 0u;
}
// m's bit x - 1 at position x, and bit x + 1 at position x, across the lanes of a row.
__device__ __forceinline__ u32 shl1(u32 m, u32 lane) { return (m << 1) | from_left(m, lane); }
__device__ __forceinline__ u32 shr1(u32 m, u32 lane) { return (m >> 1) | (from_right(m, lane) << 31); }

__device__ __forceinline__ u32 warp_incl_scan(u32 v, u32 lane) {
#pragma unroll
    for (u32 o = 1; o < 32; o <<= 1) {
        const u32 y = __shfl_up_sync(FULL, v, o);
        if (lane >= o) v += y;
    }
    return v;
}

// Bits 0..=i.
__device__ __forceinline__ u32 le_mask(u32 i) { return FULL >> (31 - i); }

__device__ __forceinline__ u32 e_par(u32 e) { return (e & ~EDGE) >> PAR_SHIFT; }

// The local root of node x, halving the path (plain stores of a valid ancestor that keep x's own
// fields; only non-roots are stored to).
__device__ __forceinline__ u32 br_find(u32* ent, u32 x) {
    volatile u32* e = ent;
    while (true) {
        const u32 ex = e[x];
        const u32 p = e_par(ex);
        if (p == x) return x;
        const u32 gp = e_par(e[p]);
        if (gp == p) return p;
        e[x] = (ex & (OWN_MASK | EDGE)) | (gp << PAR_SHIFT);
        x = gp;
    }
}

// The local root of node x without stores.
__device__ __forceinline__ u32 br_find_ro(const u32* ent, u32 x) {
    const volatile u32* e = ent;
    u32 p = e_par(e[x]);
    while (p != x) {
        x = p;
        p = e_par(e[x]);
    }
    return x;
}

// Links the larger root under the smaller with atomicMin; a lost race is retried from the value
// the atomic returned.
__device__ __forceinline__ void br_unite(u32* ent, u32 a, u32 b) {
    while (true) {
        a = br_find(ent, a);
        b = br_find(ent, b);
        if (a == b) return;
        if (a > b) {
            const u32 t = a;
            a = b;
            b = t;
        }
        const u32 own = ((volatile u32*)ent)[b] & OWN_MASK;
        const u32 old = atomicMin(ent + b, (a << PAR_SHIFT) | own);
        const u32 op = e_par(old);
        if (op == b) return;
        b = op;
    }
}

// The site index of node n, from its own fields.
__device__ __forceinline__ u32 node_key(const u32* ent, const Geo& g, const BrTile& t, u32 n) {
    const u32 e = ent[n];
    return (t.y0 + ((e >> 10) & 31u)) * g.w + t.x0 + (e & 1023u);
}

// Occupancy of the 32 sites of row y from column x (bit i = column x + i), zero outside.
// vec: u8 sites, rows 16-byte aligned.
__device__ __forceinline__ u32 load_occ(const site_t* __restrict__ in, const Geo& g, u32 y, u32 x,
                                        u32 vec) {
    if (x >= g.w) return 0u;
    const u32 base = y * g.w + x;
    if (sizeof(site_t) == 1 && vec && x + 32u <= g.w) {
        const uint4* p = reinterpret_cast<const uint4*>(in + base);
        const uint4 a = __ldg(p), b = __ldg(p + 1);
        return nz4(a.x) | nz4(a.y) << 4 | nz4(a.z) << 8 | nz4(a.w) << 12 | nz4(b.x) << 16 |
               nz4(b.y) << 20 | nz4(b.z) << 24 | nz4(b.w) << 28;
    }
    const u32 n = min(32u, g.w - x);
    u32 m = 0;
    for (u32 i = 0; i < n; i++) m |= (u32)(in[base + i] != 0) << i;
    return m;
}

// What both labeling passes do: load the tile's rows as masks, number the runs, unite them in
// shared memory, and mark the components that touch the tile's edge. Returns the node count.
__device__ __forceinline__ u32 br_label_tile(const site_t* __restrict__ in, const Geo& g,
                                             const BrTile& t, u32 vec, u32* sm) {
    u32* ent = sm;
    u32* excl_pl = sm + OFF_EXCL;
    u32* rowbase = sm + OFF_ROWBASE;
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;

    // 1. Masks of every row.
#pragma unroll
    for (u32 j = 0; j < RPW; j++) {
        const u32 r = warp + j * BR_WARPS;
        const u32 y = t.y0 + r;
        const u32 x = t.x0 + 32u * lane;
        u32 occ = 0, jl = 0;
#if SEGMENTS
        u32 v = 0, dl = 0, dr = 0;
        if (r < t.rows && x < g.w) {
            const u32 n = min(32u, g.w - x);
            const u32 base = y * g.w + x;
            const bool up = r > 0;
            site_t ap = lane ? in[base - 1] : (site_t)0;
            site_t bp = (up && lane) ? in[base - g.w - 1] : (site_t)0;
            site_t bc = up ? in[base - g.w] : (site_t)0;
            for (u32 i = 0; i < n; i++) {
                const site_t a = in[base + i];
                const bool right = (32u * lane + i + 1 < TW) && (x + i + 1 < g.w);
                const site_t bn = (up && right) ? in[base - g.w + i + 1] : (site_t)0;
                if (a != 0) {
                    const u32 bit = 1u << i;
                    occ |= bit;
                    if (a == ap) jl |= bit;
                    if (a == bc) v |= bit;
#if CONN8
                    if (a == bp) dl |= bit;
                    if (a == bn) dr |= bit;
#endif
                }
                ap = a;
                bp = bc;
                bc = bn;
            }
        }
        plane(sm, P_V, r)[lane] = v;
        plane(sm, P_DL, r)[lane] = dl;
        plane(sm, P_DR, r)[lane] = dr;
#else
        if (r < t.rows) occ = load_occ(in, g, y, x, vec & 1u);
        jl = occ & shl1(occ, lane);
#endif
        plane(sm, P_OCC, r)[lane] = occ;
        plane(sm, P_JL, r)[lane] = jl;
    }
    for (u32 i = threadIdx.x; i < MAXN / 32u; i += BR_THREADS) sm[OFF_ISROOT + i] = 0;
    __syncthreads();

    // 2. Run starts and their ranks in each row; row totals.
#pragma unroll
    for (u32 j = 0; j < RPW; j++) {
        const u32 r = warp + j * BR_WARPS;
        const u32 rs = plane(sm, P_OCC, r)[lane] & ~plane(sm, P_JL, r)[lane];
        const u32 c = __popc(rs);
        const u32 incl = warp_incl_scan(c, lane);
        excl_pl[r * TWW + lane] = incl - c;
        if (lane == 31) rowbase[r] = incl;
    }
    __syncthreads();
    if (warp == 0) {
        const u32 tot = lane < TH ? rowbase[lane] : 0u;
        const u32 incl = warp_incl_scan(tot, lane);
        __syncwarp();
        if (lane < TH) rowbase[lane] = incl - tot;
        if (lane == 31) rowbase[TH] = incl;
    }
    __syncthreads();
    const u32 nodes = rowbase[TH];

    // 3. Contacts with the row above where they begin (a contact continues the one at x - 1
    // when both runs continue too; a diagonal one is implied by a vertical one of either run's
    // neighbour, or by the same pair at x - 1). Each run's first contact in its start's word
    // becomes its parent (the row above has smaller nodes), with no find and no atomic; the
    // other contacts are unions, step 4.
    u32 rem_v[RPW], rem_dl[RPW], rem_dr[RPW];
#pragma unroll
    for (u32 j = 0; j < RPW; j++) {
        const u32 r = warp + j * BR_WARPS;
        const u32 occA = plane(sm, P_OCC, r)[lane], jlA = plane(sm, P_JL, r)[lane];
        const u32 rsA = occA & ~jlA;
        const u32 nbA = rowbase[r] + excl_pl[r * TWW + lane];
        u32 ev = 0, edl = 0, edr = 0, rsB = 0, nbB = 0, rsB_next = 0;
        if (r > 0 && r < t.rows) { // uniform across the warp
            const u32 occB = plane(sm, P_OCC, r - 1)[lane], jlB = plane(sm, P_JL, r - 1)[lane];
            rsB = occB & ~jlB;
            nbB = rowbase[r - 1] + excl_pl[(r - 1) * TWW + lane];
#if SEGMENTS
            const u32 v = plane(sm, P_V, r)[lane];
#else
            const u32 v = occA & occB;
#endif
            ev = v & ~(shl1(v, lane) & jlA & jlB);
#if CONN8
#if SEGMENTS
            const u32 dl = plane(sm, P_DL, r)[lane], dr = plane(sm, P_DR, r)[lane];
#else
            const u32 dl = occA & shl1(occB, lane), dr = occA & shr1(occB, lane);
#endif
            const u32 jlBr = shr1(jlB, lane);
            edl = dl & ~(v & jlB) & ~(shl1(dl, lane) & jlA & shl1(jlB, lane)) &
                  ~(shl1(v, lane) & jlA);
            edr = dr & ~(v & jlBr) & ~(shl1(dr, lane) & jlA & jlBr) &
                  ~(shr1(v, lane) & shr1(jlA, lane));
            rsB_next = from_right(rsB, lane);
#endif
        }
        const u32 stop = ~occA | rsA; // where runs end
        u32 m = rsA, n = nbA;
        while (m) {
            const u32 i = __ffs(m) - 1;
            m &= m - 1;
            const u32 after = stop & ~le_mask(i);
            const u32 end = after ? __ffs(after) - 1 : 32u;
            const u32 run = (end == 32 ? FULL : (1u << end) - 1u) & ~((1u << i) - 1u);
            const u32 cand = (ev | edl | edr) & run;
            u32 par = n;
            if (cand) {
                const u32 f = __ffs(cand) - 1;
                const u32 bit = 1u << f, le = le_mask(f);
                if (ev & bit) {
                    par = nbB + __popc(rsB & le) - 1;
                    ev &= ~bit;
                } else if (edl & bit) {
                    par = f == 0 ? nbB - 1 : nbB + __popc(rsB & (le >> 1)) - 1;
                    edl &= ~bit;
                } else {
                    par = f == 31 ? nbB + __popc(rsB) + rsB_next - 1
                                  : nbB + __popc(rsB & ((le << 1) | 1u)) - 1;
                    edr &= ~bit;
                }
            }
            ent[n] = (par << PAR_SHIFT) | (r << 10) | (32u * lane + i);
            n++;
        }
        rem_v[j] = ev;
        rem_dl[j] = edl;
        rem_dr[j] = edr;
    }
    __syncthreads();

    // 4. The remaining contacts: unions.
#pragma unroll
    for (u32 j = 0; j < RPW; j++) {
        const u32 r = warp + j * BR_WARPS;
        const u32 ev = rem_v[j], edl = rem_dl[j], edr = rem_dr[j];
        u32 all = ev | edl | edr;
        if (r == 0 || r >= t.rows) continue; // uniform across the warp
        const u32 occA = plane(sm, P_OCC, r)[lane], jlA = plane(sm, P_JL, r)[lane];
        const u32 occB = plane(sm, P_OCC, r - 1)[lane], jlB = plane(sm, P_JL, r - 1)[lane];
        const u32 rsA = occA & ~jlA, rsB = occB & ~jlB;
        const u32 nbA = rowbase[r] + excl_pl[r * TWW + lane];
        const u32 nbB = rowbase[r - 1] + excl_pl[(r - 1) * TWW + lane];
#if CONN8
        const u32 rsB_next = from_right(rsB, lane);
#else
        (void)edl;
        (void)edr;
#endif
        while (all) {
            const u32 i = __ffs(all) - 1;
            all &= all - 1;
            const u32 le = le_mask(i);
            const u32 na = nbA + __popc(rsA & le) - 1;
            if ((ev >> i) & 1u) br_unite(ent, na, nbB + __popc(rsB & le) - 1);
#if CONN8
            if ((edl >> i) & 1u) {
                const u32 nb = i == 0 ? nbB - 1 : nbB + __popc(rsB & (le >> 1)) - 1;
                br_unite(ent, na, nb);
            }
            if ((edr >> i) & 1u) {
                const u32 nb = i == 31 ? nbB + __popc(rsB) + rsB_next - 1
                                       : nbB + __popc(rsB & ((le << 1) | 1u)) - 1;
                br_unite(ent, na, nb);
            }
#endif
        }
    }
    __syncthreads();

    // Path compression, node-parallel (full warps), so that the finds below (run by one or two
    // lanes for the edge columns) take a step or two instead of climbing chains of inherited
    // parents.
    for (u32 n = threadIdx.x; n < nodes; n += BR_THREADS) {
        const u32 r = br_find(ent, n);
        if (e_par(ent[n]) != r) ent[n] = (ent[n] & (OWN_MASK | EDGE)) | (r << PAR_SHIFT);
    }
    __syncthreads();

    // 5. Components on the tile's edge: every run of the first and last rows, the runs holding
    // the first and last columns.
    const u32 last_row = t.rows - 1, last_col = t.cols - 1;
#pragma unroll
    for (u32 j = 0; j < RPW; j++) {
        const u32 r = warp + j * BR_WARPS;
        if (r >= t.rows) continue;
        const u32 occ = plane(sm, P_OCC, r)[lane];
        const u32 rs = occ & ~plane(sm, P_JL, r)[lane];
        const u32 nb = rowbase[r] + excl_pl[r * TWW + lane];
        if (r == 0 || r == last_row) {
            for (u32 k = 0, m = rs; m; m &= m - 1, k++) atomicOr(ent + br_find(ent, nb + k), EDGE);
        } else {
            if (lane == 0 && (occ & 1u)) atomicOr(ent + br_find(ent, nb), EDGE);
            if (lane == (last_col >> 5) && ((occ >> (last_col & 31)) & 1u))
                atomicOr(ent + br_find(ent, nb + __popc(rs & le_mask(last_col & 31)) - 1), EDGE);
        }
    }
    __syncthreads();
    return nodes;
}

// The first labeling pass. Grid: one CTA of BR_THREADS per tile (tiles_x * tiles_y);
// dynamic shared memory BR_SMEM_WORDS words, which allows two CTAs per multiprocessor (hence the
// launch bounds: up to 64 registers a thread). RB: canonical numbering's root masks, or null.
extern "C" __global__ void __launch_bounds__(BR_THREADS, 2)
br_local(const site_t* __restrict__ in, u32* L, Geo g, u32 tiles_x, u32 vec, u32* RB) {
    extern __shared__ u32 sm[];
    const BrTile t = br_tile(g, tiles_x);
    const u32 nodes = br_label_tile(in, g, t, vec, sm);
    u32* ent = sm;
    const u32* excl_pl = sm + OFF_EXCL;
    const u32* rowbase = sm + OFF_ROWBASE;
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const u32 last_row = t.rows - 1, last_col = t.cols - 1;

    // Edge sites point at their local roots.
#pragma unroll
    for (u32 j = 0; j < RPW; j++) {
        const u32 r = warp + j * BR_WARPS;
        if (r >= t.rows) continue;
        const u32 y = t.y0 + r, x = t.x0 + 32u * lane;
        const u32 occ = plane(sm, P_OCC, r)[lane];
        const u32 rs = occ & ~plane(sm, P_JL, r)[lane];
        const u32 nb = rowbase[r] + excl_pl[r * TWW + lane];
        if (r == 0 || r == last_row) {
            if (x < g.w) {
                const u32 n = min(32u, g.w - x);
                u32 cur = (occ & ~rs & 1u) ? node_key(ent, g, t, br_find(ent, nb - 1)) + 1 : 0u;
                u32 next = nb;
                for (u32 i = 0; i < n; i++) {
                    if ((rs >> i) & 1u) cur = node_key(ent, g, t, br_find(ent, next++)) + 1;
                    L[y * g.w + x + i] = ((occ >> i) & 1u) ? cur : 0u;
                }
            }
        } else {
            if (lane == 0)
                L[y * g.w + t.x0] = (occ & 1u) ? node_key(ent, g, t, br_find(ent, nb)) + 1 : 0u;
            if (lane == (last_col >> 5)) {
                const u32 b = last_col & 31;
                L[y * g.w + t.x0 + last_col] =
                    ((occ >> b) & 1u)
                        ? node_key(ent, g, t, br_find(ent, nb + __popc(rs & le_mask(b)) - 1)) + 1
                        : 0u;
            }
        }
    }
    // Edge components' local roots are roots of the global forest.
    for (u32 n = threadIdx.x; n < nodes; n += BR_THREADS) {
        const u32 e = ent[n];
        if ((e & EDGE) && e_par(e) == n) {
            const u32 k = node_key(ent, g, t, n);
            L[k] = k + 1;
        }
    }
    // Canonical numbering: the interior roots, one bit per site, in raster order.
    if (RB != nullptr) {
#pragma unroll
        for (u32 j = 0; j < RPW; j++) {
            const u32 r = warp + j * BR_WARPS;
            if (r >= t.rows) continue;
            u32 rs = plane(sm, P_OCC, r)[lane] & ~plane(sm, P_JL, r)[lane];
            u32 n = rowbase[r] + excl_pl[r * TWW + lane];
            u32 bits = 0;
            while (rs) {
                const u32 i = __ffs(rs) - 1;
                rs &= rs - 1;
                const u32 e = ent[n];
                if (!(e & EDGE) && e_par(e) == n) bits |= 1u << i;
                n++;
            }
            RB[(((t.y0 + r) * tiles_x + t.tx) << 5) + lane] = bits;
        }
    }
}

// Unites the global sets of two edge sites' local roots when the sites are joined.
__device__ __forceinline__ void br_join(const site_t* __restrict__ in, u32* L, const Geo& g,
                                        site_t cs, u32 ls, u32 o) {
    if (joined_values(cs, in[o])) unite(L, g, ls - 1, ld_cg(L + o) - 1);
}

// The two lines (rows or columns) that seam j faces across, among `tiles` tiles of `span` lines
// over n lines: seam j < tiles - 1 lies between tiles j and j + 1, seam tiles - 1 is the periodic
// edge between line n - 1 and line 0.
__device__ __forceinline__ void seam_lines(u32 j, u32 tiles, u32 span, u32 n, u32* before,
                                           u32* after) {
    *after = j + 1 < tiles ? (j + 1) * span : 0u;
    *before = j + 1 < tiles ? *after - 1 : n - 1;
}

// The seams. mode 0: rows; seam j < tiles_y - 1 is between tile rows j and j + 1, seam
// tiles_y - 1 the periodic y edge; grid (ceil(w / 256), min(seams, 65535)), CTA 256, one thread
// per column. mode 1: columns, likewise, one thread per row.
extern "C" __global__ void __launch_bounds__(256)
br_merge(const site_t* __restrict__ in, u32* L, Geo g, u32 tiles_x, u32 tiles_y, u32 wrap_x,
         u32 wrap_y, u32 mode) {
    if (mode == 0) {
        const u32 x = blockIdx.x * blockDim.x + threadIdx.x;
        if (x >= g.w) return;
        const u32 seams = tiles_y - 1 + wrap_y;
        for (u32 j = blockIdx.y; j < seams; j += gridDim.y) {
            u32 yt, yb;
            seam_lines(j, tiles_y, TH, g.h, &yt, &yb);
            const u32 b = yb * g.w + x, t = yt * g.w + x;
            const site_t cb = in[b];
            if (!cb) continue;
            const u32 lb = ld_cg(L + b);
            const site_t ct = in[t];
            const bool vert = joined_values(cb, ct);
            const u32 lt = vert ? ld_cg(L + t) : 0u;
            if (vert) {
                // The same pair of local components as at x - 1: already united there.
                const bool dup = x > 0 && joined_values(in[b - 1], in[t - 1]) &&
                                 ld_cg(L + b - 1) == lb && ld_cg(L + t - 1) == lt;
                if (!dup) unite(L, g, lb - 1, lt - 1);
            }
#if CONN8
            if (x > 0 || wrap_x) {
                const u32 o = yt * g.w + (x > 0 ? x - 1 : g.w - 1);
                if (!(vert && ld_cg(L + o) == lt)) br_join(in, L, g, cb, lb, o);
            }
            if (x + 1 < g.w || wrap_x) {
                const u32 o = yt * g.w + (x + 1 < g.w ? x + 1 : 0u);
                if (!(vert && ld_cg(L + o) == lt)) br_join(in, L, g, cb, lb, o);
            }
#endif
        }
    } else {
        const u32 y = blockIdx.x * blockDim.x + threadIdx.x;
        if (y >= g.h) return;
        const u32 seams = tiles_x - 1 + wrap_x;
        for (u32 j = blockIdx.y; j < seams; j += gridDim.y) {
            u32 xl, xr;
            seam_lines(j, tiles_x, TW, g.w, &xl, &xr);
            const u32 s = y * g.w + xr;
            const site_t cs = in[s];
            if (!cs) continue;
            const u32 ls = ld_cg(L + s);
            br_join(in, L, g, cs, ls, y * g.w + xl);
#if CONN8
            if (y > 0 || wrap_y) br_join(in, L, g, cs, ls, (y > 0 ? y - 1 : g.h - 1) * g.w + xl);
            if (y + 1 < g.h || wrap_y) br_join(in, L, g, cs, ls, (y + 1 < g.h ? y + 1 : 0u) * g.w + xl);
#endif
        }
    }
}

// The root of site k in L without stores (canonical flags are not set yet).
__device__ __forceinline__ u32 br_root(const u32* L, u32 k) {
    u32 v = ld_cg(L + k);
    while (v != k + 1) {
        k = v - 1;
        v = ld_cg(L + k);
    }
    return k;
}

// Where root R's bit lies in RB.
__device__ __forceinline__ u32 rb_entry(const Geo& g, u32 tiles_x, u32 R, u32* x_out) {
    const u32 y = div_w(g, R);
    const u32 x = R - y * g.w;
    *x_out = x;
    return y * tiles_x + x / TW;
}

// Canonical numbering's passes over the tile-edge sites. part 0: each tile's first and last rows;
// grid (ceil(w / 256), min(2 * tiles_y, 65535)); part 1: each tile's first and last columns; grid
// (ceil(h / 256), min(2 * tiles_x, 65535)); CTA 256.
// mode 0 (flatten): edge sites and their local roots point straight at the global root, and a
// global root that is an edge component's local root gets its bit in RB. mode 1 (publish): each
// such root's slot becomes FLAG | rank.
extern "C" __global__ void __launch_bounds__(256)
br_edges(u32* L, Geo g, u32* RB, const u32* __restrict__ CNT, const u32* __restrict__ CHUNK,
         u32 tiles_x, u32 tiles_y, u32 part, u32 mode) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    const u32 lane = threadIdx.x & 31;
    const u32 lines = part == 0 ? 2 * tiles_y : 2 * tiles_x;
    for (u32 j = blockIdx.y; j < lines; j += gridDim.y) {
        u32 s = 0;
        bool ok;
        if (part == 0) {
            const u32 ty = j >> 1;
            const u32 y = (j & 1) ? min(ty * TH + TH, g.h) - 1 : ty * TH;
            ok = i < g.w;
            s = y * g.w + i;
        } else {
            const u32 tx = j >> 1;
            const u32 x = (j & 1) ? min(tx * TW + TW, g.w) - 1 : tx * TW;
            ok = i < g.h;
            s = i * g.w + x;
        }
        const u32 v = ok ? ld_cg(L + s) : 0u;
        if (mode == 0) {
            // Every edge site, so that each edge component's local root is reached (also one
            // whose only edge site is itself, whose slot the merge may have linked onward).
            const u32 r = v - 1;
            const u32 R = v ? br_root(L, r) : FULL;
            const u32 Rl = __shfl_up_sync(FULL, R, 1);
            if (v == 0) continue;
            if (R != r) L[r] = R + 1;
            if (R != s) L[s] = R + 1;
            if (R == r && !(lane > 0 && Rl == R)) {
                u32 x;
                const u32 e = rb_entry(g, tiles_x, R, &x);
                atomicOr(RB + (e << 5) + ((x % TW) >> 5), 1u << (x & 31));
            }
        } else {
            // After the flatten, v = R + 1 for the global root R, or FLAG | rank at a root that
            // is numbered already. Neighbours with the same v number the same root: the first
            // does it.
            const u32 vl = __shfl_up_sync(FULL, v, 1);
            if (v == 0 || (v & FLAG) || (lane > 0 && vl == v)) continue;
            const u32 R = v - 1;
            if (ld_cg(L + R) & FLAG) continue;
            u32 x;
            const u32 e = rb_entry(g, tiles_x, R, &x);
            const u32* words = RB + (e << 5);
            const u32 w = (x % TW) >> 5;
            u32 rank = CHUNK[e / BR_CHUNK] + CNT[e] + __popc(words[w] & ((1u << (x & 31)) - 1u));
            for (u32 k = 0; k < w; k++) rank += __popc(words[k]);
            L[R] = FLAG | rank;
        }
    }
}

// Roots per (row, tile column) entry, in raster order: CNT[e] = the entry's first rank within its
// chunk of BR_CHUNK entries, CHUNK[c] = the chunk's total (scanned by canon_scan afterwards).
// Grid: ceil(entries / BR_CHUNK) CTAs of 256 threads.
extern "C" __global__ void __launch_bounds__(256)
br_count(const u32* __restrict__ RB, u32 entries, u32* CNT, u32* CHUNK) {
    __shared__ u32 s_cnt[BR_CHUNK];
    __shared__ u32 scratch[32];
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const u32 first = blockIdx.x * BR_CHUNK;
#pragma unroll 4
    for (u32 i = 0; i < 32; i++) {
        const u32 e = first + warp * 32 + i;
        u32 c = e < entries ? __popc(RB[(e << 5) + lane]) : 0u;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) c += __shfl_xor_sync(FULL, c, o);
        if (lane == 0) s_cnt[warp * 32 + i] = c;
    }
    __syncthreads();
    u32 total;
    const u32 before = block_exclusive_scan(s_cnt[threadIdx.x], scratch, &total);
    if (first + threadIdx.x < entries) CNT[first + threadIdx.x] = before;
    if (threadIdx.x == 0) CHUNK[blockIdx.x] = total;
}

// The second labeling pass: every site's label. Grid and shared memory as br_local. canonical:
// RB, CNT and CHUNK are br_count's and canon_scan's results; raw: roots are counted into *count.
extern "C" __global__ void __launch_bounds__(BR_THREADS, 2)
br_final(const site_t* __restrict__ in, u32* L, Geo g, u32 tiles_x, u32 vec, u32 canonical,
         const u32* __restrict__ RB, const u32* __restrict__ CNT, const u32* __restrict__ CHUNK,
         u32* count) {
    extern __shared__ u32 sm[];
    const BrTile t = br_tile(g, tiles_x);
    u32* ent = sm;
    const u32* excl_pl = sm + OFF_EXCL;
    const u32* rowbase = sm + OFF_ROWBASE;
    u32* isroot = sm + OFF_ISROOT;
    u32* rbits = sm + OFF_RBITS;
    u32* rpre = sm + OFF_RPRE;
    u32* rbase = sm + OFF_RBASE;
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (canonical) {
        // Ranks of the tile's roots: each row's first rank and the roots before each word.
#pragma unroll
        for (u32 j = 0; j < RPW; j++) {
            const u32 r = warp + j * BR_WARPS;
            if (r >= t.rows) continue;
            const u32 e = (t.y0 + r) * tiles_x + t.tx;
            const u32 word = RB[(e << 5) + lane];
            const u32 c = __popc(word);
            rpre[r * TWW + lane] = warp_incl_scan(c, lane) - c;
            rbits[r * TWW + lane] = word;
            if (lane == 0) rbase[r] = CHUNK[e / BR_CHUNK] + CNT[e];
        }
    }
    const u32 nodes = br_label_tile(in, g, t, vec, sm);

    // Every node straight at its root (read-only finds, so no stale halving store can land
    // after the final one); roots flagged.
    for (u32 n = threadIdx.x; n < nodes; n += BR_THREADS) {
        const u32 r = br_find_ro(ent, n);
        if (r == n) {
            atomicOr(isroot + (n >> 5), 1u << (n & 31));
        } else {
            ent[n] = (ent[n] & (OWN_MASK | EDGE)) | (r << PAR_SHIFT);
        }
    }
    __syncthreads();
    // Each root's label replaces its entry.
    u32 roots = 0;
    for (u32 n = threadIdx.x; n < nodes; n += BR_THREADS) {
        if (!((isroot[n >> 5] >> (n & 31)) & 1u)) continue;
        const u32 e = ent[n];
        const u32 row = (e >> 10) & 31u, col = e & 1023u;
        const u32 key = (t.y0 + row) * g.w + t.x0 + col;
        u32 label;
        if (e & EDGE) {
            if (canonical) {
                const u32 v = ld_cg(L + key);
                if (v & FLAG) {
                    label = (v & ~FLAG) + 1;
                } else {
                    const u32 u = ld_cg(L + (v - 1));
                    label = (u & FLAG) ? (u & ~FLAG) + 1 : u;
                }
            } else {
                const u32 R = br_root(L, key);
                roots += R == key;
                label = R + 1;
            }
        } else if (canonical) {
            const u32 w = col >> 5;
            label = rbase[row] + rpre[row * TWW + w] +
                    __popc(rbits[row * TWW + w] & ((1u << (col & 31)) - 1u)) + 1;
        } else {
            roots++;
            label = key + 1;
        }
        ent[n] = label;
    }
    __syncthreads();

    // Every site once: lane k writes the 32 labels of its word.
#pragma unroll
    for (u32 j = 0; j < RPW; j++) {
        const u32 r = warp + j * BR_WARPS;
        if (r >= t.rows) continue;
        const u32 y = t.y0 + r, x = t.x0 + 32u * lane;
        if (x >= g.w) continue;
        const u32 occ = plane(sm, P_OCC, r)[lane];
        const u32 rs = occ & ~plane(sm, P_JL, r)[lane];
        u32 next = rowbase[r] + excl_pl[r * TWW + lane];
        auto lab = [&](u32 n) -> u32 {
            return ((isroot[n >> 5] >> (n & 31)) & 1u) ? ent[n] : ent[e_par(ent[n])];
        };
        u32 cur = (occ & ~rs & 1u) ? lab(next - 1) : 0u;
        u32* out = L + y * g.w + x;
        if ((vec & 2u) && x + 32u <= g.w) {
#pragma unroll
            for (u32 q = 0; q < 8; q++) {
                u32 v4[4];
#pragma unroll
                for (u32 k = 0; k < 4; k++) {
                    const u32 i = q * 4 + k;
                    if ((rs >> i) & 1u) cur = lab(next++);
                    v4[k] = ((occ >> i) & 1u) ? cur : 0u;
                }
                reinterpret_cast<uint4*>(out)[q] = make_uint4(v4[0], v4[1], v4[2], v4[3]);
            }
        } else {
            const u32 n = min(32u, g.w - x);
            for (u32 i = 0; i < n; i++) {
                if ((rs >> i) & 1u) cur = lab(next++);
                out[i] = ((occ >> i) & 1u) ? cur : 0u;
            }
        }
    }
    if (!canonical) warp_add(count, roots);
}
