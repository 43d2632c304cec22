// Fixed-p percolation samples, batched: one thread block per lattice generates its sites from
// Philox4x32-10 (or reads them), labels them, finds wrapping by winding and reduces them to one
// record of statistics; no label image leaves the block. The counter layout is documented in
// src/measure/fixed_p.rs (the CPU generates the same lattices from it).
//
// Defines: CONN8 (0/1), BOND (0/1: bond percolation, every site present and joined to its right
// and down neighbours by the open bonds of the right/down bitmaps; CONN8 is 0) and SMALL (1: the
// union-find forest is a u16 per site in shared memory, for lattices of at most 65536 sites; 0: a
// u32 per site in this block's slot of global scratch, with the bitmaps beside it).
//
// Bonds (CONVENTIONS.md): right[y, x] joins (y, x) and (y, x + 1), down[y, x] joins (y, x) and
// (y + 1, x); the last column's right and the last row's down bonds are the links across the
// wrapped edges (step 5), ignored along an open axis. Bond d (0 right, 1 down) of site i is open
// when word j mod 4 of the Philox block with counter [2^31 + j / 4, index, t], j = 2 i + d, is
// below t.
//
// Per lattice, between block barriers:
//  1. occupancy bits (32 sites per word; all set for bonds, with the right/down bond bits) and
//     the forest, each site pointing at the start of its horizontal run inside its word;
//  2. unions of the open sheet (left at word starts, up, and the diagonals for 8-connectivity,
//     skipped where a neighbour in the same run already made them), by CAS on roots (a root
//     links to the smaller root, so a root is its piece's smallest site);
//  3. flatten; root bitmap; each root's slot becomes its piece size - 1 (atomic adds);
//  4. the pieces on the lattice's edges get table slots (2h + 2w of them: left column, right
//     column, top row, bottom row), one canonical slot per piece;
//  5. the links across the wrapped edges, as (canonical slot, canonical slot, periods crossed),
//     de-duplicated against the same link of the previous edge site, joined by one thread in a
//     displacement-tracking union-find over the slots (a link closing a loop with a nonzero net
//     shift wraps its set along that axis; Machta; Newman-Ziff);
//  6. statistics: pieces off the edges are clusters of their own that never percolate; each set
//     of edge pieces is one cluster, which percolates along x when it wraps in x (periodic x) or
//     touches both columns 0 and w - 1 (open x); likewise y.

#define PB_NONE 0xFFFFFFFFu
// Record flags (as SampleStats::flags on the host).
#define PB_X 1u
#define PB_Y 2u
#define PB_BOTH 4u
// Set flags.
#define S_WX 1u
#define S_WY 2u
#define S_L 4u
#define S_R 8u
#define S_T 16u
#define S_B 32u
// Sizes below this are counted in a shared histogram and flushed once per block.
#define PB_HS 64

struct PbParams {
    u64 first;   // sample index of lattice 0 of this launch
    u64 count;   // lattices in this launch
    u64 t;       // threshold: a site is occupied when its word is below t (t <= 2^32)
    u64 input;   // const u8* (count, h, w) lattices to analyse instead of generating, or 0
    u64 out;     // PbRecord* per lattice
    u64 hist;    // u64* n_s histogram (sites + 1 bins), or 0
    u64 scratch; // u32* per-block scratch (SMALL == 0): 3 * n words... see host
    u32 w, h, n, nw;
    u32 wrap_x, wrap_y;
    u32 key0, key1;
    u32 scratch_words; // per block
    u32 max_links;
};

struct PbRecord {
    u32 flags, occupied, largest, percolating;
    u64 finite_s2;
};

__device__ __forceinline__ uint4 pb_philox(uint4 c, u32 k0, u32 k1) {
#pragma unroll
    for (int r = 0; r < 10; r++) {
        const u32 hi0 = __umulhi(0xD2511F53u, c.x), lo0 = 0xD2511F53u * c.x;
        const u32 hi1 = __umulhi(0xCD9E8D57u, c.z), lo1 = 0xCD9E8D57u * c.z;
        c = make_uint4(hi1 ^ c.y ^ k0, lo1, hi0 ^ c.w ^ k1, lo0);
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    return c;
}

// ---- the forest, u16 (shared) or u32 (global), through one set of overloads ----

__device__ __forceinline__ u32 pget(volatile u16* p, u32 i) { return p[i]; }
__device__ __forceinline__ u32 pget(volatile u32* p, u32 i) { return p[i]; }
__device__ __forceinline__ void pset(volatile u16* p, u32 i, u32 v) { p[i] = (u16)v; }
__device__ __forceinline__ void pset(volatile u32* p, u32 i, u32 v) { p[i] = v; }

// CAS of slot i from `expect` to `val`; true when it was `expect`. u16 slots go through the
// aligned 32-bit word (plain 16-bit stores to the other half make the CAS retry, never get lost).
__device__ __forceinline__ bool pcas(volatile u16* p, u32 i, u32 expect, u32 val) {
    u32* w = (u32*)((size_t)(p + i) & ~(size_t)3);
    const u32 sh = (i & 1) * 16;
    u32 old = *(volatile u32*)w;
    while (true) {
        if (((old >> sh) & 0xFFFFu) != expect) return false;
        const u32 nv = (old & ~(0xFFFFu << sh)) | (val << sh);
        const u32 prev = atomicCAS(w, old, nv);
        if (prev == old) return true;
        old = prev;
    }
}
__device__ __forceinline__ bool pcas(volatile u32* p, u32 i, u32 expect, u32 val) {
    return atomicCAS((u32*)(p + i), expect, val) == expect;
}
// Adds c to slot i (counts stay below 65536 for u16 slots: no carry into the other half).
__device__ __forceinline__ void paddn(volatile u16* p, u32 i, u32 c) {
    u32* w = (u32*)((size_t)(p + i) & ~(size_t)3);
    atomicAdd(w, c << ((i & 1) * 16));
}
__device__ __forceinline__ void paddn(volatile u32* p, u32 i, u32 c) { atomicAdd((u32*)(p + i), c); }

template <typename PT> __device__ __forceinline__ u32 pfind(PT* par, u32 x) {
    while (true) {
        const u32 p = pget(par, x);
        if (p == x) return x;
        const u32 g = pget(par, p);
        if (g == p) return p;
        pset(par, x, g); // path halving: g is an ancestor of x
        x = g;
    }
}

// The root without writing: flattening threads then write only their own sites' slots, so a
// slot once pointed at its root stays there.
template <typename PT> __device__ __forceinline__ u32 pfind_ro(PT* par, u32 x) {
    u32 p = pget(par, x);
    while (p != x) {
        x = p;
        p = pget(par, x);
    }
    return x;
}

template <typename PT> __device__ __forceinline__ void punite(PT* par, u32 a, u32 b) {
    while (true) {
        a = pfind(par, a);
        b = pfind(par, b);
        if (a == b) return;
        if (a < b) {
            const u32 t = a;
            a = b;
            b = t;
        }
        if (pcas(par, a, a, b)) return;
    }
}

__device__ __forceinline__ bool bit(const volatile u32* bits, u32 i) {
    return (bits[i >> 5] >> (i & 31)) & 1u;
}

// The site of edge slot j: left column, right column, top row, bottom row.
__device__ __forceinline__ u32 slot_site(const PbParams& P, u32 j) {
    if (j < P.h) return j * P.w;
    j -= P.h;
    if (j < P.h) return j * P.w + P.w - 1;
    j -= P.h;
    if (j < P.w) return j;
    j -= P.w;
    return (P.h - 1) * P.w + j;
}

// Link number e of the wrapped edges: (source slot, target slot, kx, ky), or false when the link
// does not exist (an axis that does not wrap). Sources: the right column (x-seam, e < h * D) and
// the bottom row (y-seam); D = 1 or 3 offsets (d - 1 for 8-connectivity).
__device__ __forceinline__ bool link_of(const PbParams& P, u32 e, u32* s, u32* t, int* kx, int* ky) {
    const u32 D = CONN8 ? 3 : 1;
    const u32 nx = P.wrap_x ? P.h * D : 0;
    if (e < nx) {
        const u32 y = e / D;
        const int d = CONN8 ? (int)(e - y * D) - 1 : 0;
        int ty = (int)y + d;
        *ky = 0;
        if (ty < 0) {
            if (!P.wrap_y) return false;
            ty += P.h;
            *ky = -1;
        } else if (ty >= (int)P.h) {
            if (!P.wrap_y) return false;
            ty -= P.h;
            *ky = 1;
        }
        *kx = 1;
        *s = P.h + y;
        *t = (u32)ty;
        return true;
    }
    e -= nx;
    const u32 x = e / D;
    const int d = CONN8 ? (int)(e - x * D) - 1 : 0;
    int tx = (int)x + d;
    *kx = 0;
    if (tx < 0) {
        if (!P.wrap_x) return false;
        tx += P.w;
        *kx = -1;
    } else if (tx >= (int)P.w) {
        if (!P.wrap_x) return false;
        tx -= P.w;
        *kx = 1;
    }
    *ky = 1;
    *s = 2 * P.h + P.w + x;
    *t = 2 * P.h + (u32)tx;
    return true;
}

struct PbShared {
    u32 nlinks, occupied, largest, percolating, flags, pad;
    u64 s2;
};

// Seam union-find over table slots (one thread).
__device__ u32 seam_find(u32* up, int* ox, int* oy, u32 x, int* ax, int* ay) {
    int sx = 0, sy = 0;
    u32 r = x;
    while (up[r] != r) {
        sx += ox[r];
        sy += oy[r];
        r = up[r];
    }
    // Compress, keeping each node's offset to the root.
    u32 cur = x;
    int rx = sx, ry = sy;
    while (up[cur] != cur) {
        const u32 nx = up[cur];
        const int cx = ox[cur], cy = oy[cur];
        up[cur] = r;
        ox[cur] = rx;
        oy[cur] = ry;
        rx -= cx;
        ry -= cy;
        cur = nx;
    }
    *ax = sx;
    *ay = sy;
    return r;
}

// Whether link e (see link_of) has its bond open: always for sites; for bonds the right bond of
// the source in the right column (x-seam) or the down bond of the source in the bottom row.
__device__ __forceinline__ bool link_open(const PbParams& P, u32 e, const volatile u32* rbit,
                                          const volatile u32* dbit) {
#if BOND
    const u32 nx = P.wrap_x ? P.h : 0;
    return e < nx ? bit(rbit, e * P.w + P.w - 1) : bit(dbit, (P.h - 1) * P.w + (e - nx));
#else
    return true;
#endif
}

template <typename PT>
__device__ void pb_lattice(const PbParams& P, u64 k, PT* par, volatile u32* occ, volatile u32* rootb,
                           volatile u32* rbit, volatile u32* dbit, unsigned char* tables,
                           PbShared* sh, u32* hs) {
    const u32 n = P.n, w = P.w, h = P.h, nw = P.nw;
    const u32 T = 2 * (h + w);
    u32* troot = (u32*)tables;
    u32* canon = troot + T;
    u32* up = canon + T;
    int* ox = (int*)(up + T);
    int* oy = ox + T;
    u32* tsz = (u32*)(oy + T);
    u32* ssize = tsz + T;
    u32* sflag = ssize + T;
    u32* la = sflag + T;
    u32* lb = la + P.max_links;
    u32* lk = lb + P.max_links;
    const u32 tid = threadIdx.x, nt = blockDim.x;
    const u64 idx = P.first + k;

    if (tid == 0) {
        sh->nlinks = 0;
        sh->occupied = 0;
        sh->largest = 0;
        sh->percolating = 0;
        sh->flags = 0;
        sh->s2 = 0;
    }
    // 1. Occupancy and the run-start forest.
    const u32 t32 = (u32)P.t;
    for (u32 wi = tid; wi < nw; wi += nt) {
        u32 bits = 0;
        const u32 base = wi * 32;
#if BOND
        // Runs continue through open right bonds (the forest below reads them as `bits`).
        u32 rb = 0, db = 0;
#pragma unroll
        for (u32 j = 0; j < 16; j++) {
            if (base + 2 * j >= n) break;
            const uint4 r = pb_philox(
                make_uint4(0x80000000u + wi * 16 + j, (u32)idx, (u32)(idx >> 32), t32), P.key0, P.key1);
            const u32 q = 2 * j;
            rb |= (u32)((u64)r.x < P.t) << q;
            db |= (u32)((u64)r.y < P.t) << q;
            rb |= (u32)((u64)r.z < P.t) << (q + 1);
            db |= (u32)((u64)r.w < P.t) << (q + 1);
        }
        const u32 live = n - base < 32 ? (1u << (n - base)) - 1u : 0xFFFFFFFFu;
        rbit[wi] = rb & live;
        dbit[wi] = db & live;
        occ[wi] = live;
        bits = rb & live;
#else
        if (P.input) {
            const u8* in = (const u8*)P.input + k * (u64)n;
            for (u32 q = 0; q < 32 && base + q < n; q++) bits |= (u32)(in[base + q] != 0) << q;
        } else {
#pragma unroll
            for (u32 j = 0; j < 8; j++) {
                if (base + 4 * j >= n) break;
                const uint4 r = pb_philox(make_uint4(wi * 8 + j, (u32)idx, (u32)(idx >> 32), t32),
                                          P.key0, P.key1);
                const u32 q = 4 * j;
                bits |= (u32)((u64)r.x < P.t) << q;
                bits |= (u32)((u64)r.y < P.t) << (q + 1);
                bits |= (u32)((u64)r.z < P.t) << (q + 2);
                bits |= (u32)((u64)r.w < P.t) << (q + 3);
            }
            if (n - base < 32) bits &= (1u << (n - base)) - 1u;
        }
        occ[wi] = bits;
#endif
        u32 y = base / w, x = base - y * w;
        u32 start = base;
        for (u32 q = 0; q < 32 && base + q < n; q++) {
            const u32 i = base + q;
#if BOND
            // Every site is present; it continues the run when the right bond of its left
            // neighbour (same row) is open.
            const bool o = true;
#else
            const bool o = (bits >> q) & 1u;
#endif
            if (o && !(q > 0 && x > 0 && ((bits >> (q - 1)) & 1u))) start = i;
            pset(par, i, o ? start : i);
            if (++x == w) {
                x = 0;
                y++;
            }
        }
    }
    for (u32 j = tid; j < T; j += nt) {
        sflag[j] = 0;
        ssize[j] = 0;
    }
    __syncthreads();
    // 2. Unions of the open sheet.
    for (u32 wi = tid; wi < nw; wi += nt) {
        u32 bits = occ[wi];
        const u32 base = wi * 32, y0 = base / w, x0 = base - y0 * w;
        while (bits) {
            const u32 q = __ffs(bits) - 1;
            bits &= bits - 1;
            const u32 i = base + q;
            u32 x = x0 + q, y = y0;
            while (x >= w) { // a word may span rows (several when w < 32)
                x -= w;
                y++;
            }
#if BOND
            // Joined to the left through right[i - 1], up through down[i - w]; the up link adds
            // nothing when the left neighbour's up link and the bond between the two above close
            // the square (the left neighbour, in the same run, made it).
            const bool left = x > 0 && bit(rbit, i - 1);
            if (left && q == 0) punite(par, i, i - 1);
            if (y == 0) continue;
            if (bit(dbit, i - w) && !(left && bit(dbit, i - w - 1) && bit(rbit, i - w - 1)))
                punite(par, i, i - w);
#else
            const bool left = x > 0 && bit(occ, i - 1);
            if (left && q == 0) punite(par, i, i - 1);
            if (y == 0) continue;
            const bool upo = bit(occ, i - w);
            if (upo) {
                if (!(left && bit(occ, i - w - 1))) punite(par, i, i - w);
            }
#endif
#if CONN8
            else {
                if (x > 0 && !left && bit(occ, i - w - 1)) punite(par, i, i - w - 1);
                const bool right = x + 1 < w && bit(occ, i + 1);
                if (x + 1 < w && !right && bit(occ, i - w + 1)) punite(par, i, i - w + 1);
            }
#endif
        }
    }
    __syncthreads();
    // 3. Flatten, roots, occupied count.
    u32 occupied = 0;
    for (u32 wi = tid; wi < nw; wi += nt) {
        u32 bits = occ[wi], roots = 0;
        occupied += __popc(bits);
        const u32 base = wi * 32, x0 = base - (base / w) * w;
        u32 prev_q = 64, prev_r = 0;
        while (bits) {
            const u32 q = __ffs(bits) - 1;
            bits &= bits - 1;
            const u32 i = base + q;
            u32 x = x0 + q;
            while (x >= w) x -= w;
            // The left neighbour in the same row, when joined to this site, has the same root: no
            // find. Adjacent sites are joined; adjacent bond sites only through an open bond.
#if BOND
            const bool joined = prev_q + 1 == q && x != 0 && bit(rbit, i - 1);
#else
            const bool joined = prev_q + 1 == q && x != 0;
#endif
            const u32 r = joined ? prev_r : pfind_ro(par, i);
            if (r != i) pset(par, i, r);
            else roots |= 1u << q;
            prev_q = q;
            prev_r = r;
        }
        rootb[wi] = roots;
    }
    atomicAdd(&sh->occupied, occupied);
    __syncthreads();
    for (u32 wi = tid; wi < nw; wi += nt) {
        u32 bits = rootb[wi];
        while (bits) {
            const u32 q = __ffs(bits) - 1;
            bits &= bits - 1;
            pset(par, wi * 32 + q, 0);
        }
    }
    __syncthreads();
    for (u32 wi = tid; wi < nw; wi += nt) {
        u32 bits = occ[wi] & ~rootb[wi];
        u32 cur = PB_NONE, cnt = 0;
        while (bits) {
            const u32 q = __ffs(bits) - 1;
            bits &= bits - 1;
            const u32 r = pget(par, wi * 32 + q);
            if (r != cur) {
                if (cnt) paddn(par, cur, cnt);
                cur = r;
                cnt = 0;
            }
            cnt++; // one atomic per run of sites with the same root
        }
        if (cnt) paddn(par, cur, cnt);
    }
    __syncthreads();
    // 4. Edge slots: root, piece size, then one canonical slot per piece.
    for (u32 j = tid; j < T; j += nt) {
        const u32 s = slot_site(P, j);
        if (bit(occ, s)) {
            const u32 r = bit(rootb, s) ? s : pget(par, s);
            troot[j] = r;
            tsz[j] = pget(par, r) + 1;
        } else {
            troot[j] = PB_NONE;
        }
    }
    __syncthreads();
    for (u32 j = tid; j < T; j += nt) {
        const u32 r = troot[j];
        if (r != PB_NONE) {
            pset(par, r, j); // any slot of the piece wins
            atomicAnd((u32*)&rootb[r >> 5], ~(1u << (r & 31)));
        }
    }
    __syncthreads();
    for (u32 j = tid; j < T; j += nt) {
        const u32 r = troot[j];
        up[j] = j;
        ox[j] = 0;
        oy[j] = 0;
        if (r == PB_NONE) {
            canon[j] = PB_NONE;
            continue;
        }
        const u32 c = pget(par, r);
        canon[j] = c;
        u32 f = 0;
        if (j < h) f = P.wrap_x ? 0 : S_L;
        else if (j < 2 * h) f = P.wrap_x ? 0 : S_R;
        else if (j < 2 * h + w) f = P.wrap_y ? 0 : S_T;
        else f = P.wrap_y ? 0 : S_B;
        if (f) atomicOr(&sflag[c], f);
        if (c == j) ssize[j] = tsz[j];
    }
    __syncthreads();
    // 5. Links across the wrapped edges, then the winding union-find.
    const u32 D = CONN8 ? 3 : 1;
    const u32 nl = (P.wrap_x ? h * D : 0) + (P.wrap_y ? w * D : 0);
    for (u32 e = tid; e < nl; e += nt) {
        u32 s, t;
        int kx, ky;
        if (!link_of(P, e, &s, &t, &kx, &ky) || !link_open(P, e, rbit, dbit)) continue;
        const u32 a = canon[s], b = canon[t];
        if (a == PB_NONE || b == PB_NONE) continue;
        const u32 kk = (u32)(kx + 1) | ((u32)(ky + 1) << 2);
        // The same link of the previous edge site (same offset) adds nothing.
        const u32 nx = P.wrap_x ? h * D : 0;
        const bool first = e < nx ? e < D : e - nx < D;
        if (!first) {
            u32 s2, t2;
            int kx2, ky2;
            if (link_of(P, e - D, &s2, &t2, &kx2, &ky2) && link_open(P, e - D, rbit, dbit) &&
                canon[s2] == a && canon[t2] == b && kx2 == kx && ky2 == ky)
                continue;
        }
        const u32 at = atomicAdd(&sh->nlinks, 1u);
        la[at] = a;
        lb[at] = b;
        lk[at] = kk;
    }
    __syncthreads();
    if (tid == 0) {
        const u32 m = sh->nlinks;
        for (u32 l = 0; l < m; l++) {
            const u32 a = la[l], b = lb[l], kk = lk[l];
            const int kx = (int)(kk & 3) - 1, ky = (int)(kk >> 2) - 1;
            int oax, oay, obx, oby;
            const u32 ra = seam_find(up, ox, oy, a, &oax, &oay);
            const u32 rb = seam_find(up, ox, oy, b, &obx, &oby);
            if (ra == rb) {
                if (obx - oax - kx != 0) sflag[ra] |= S_WX;
                if (oby - oay - ky != 0) sflag[ra] |= S_WY;
                continue;
            }
            const int rx = kx - obx + oax, ry = ky - oby + oay; // shift(rb) - shift(ra)
            if (ra < rb) {
                up[rb] = ra;
                ox[rb] = rx;
                oy[rb] = ry;
                sflag[ra] |= sflag[rb];
            } else {
                up[ra] = rb;
                ox[ra] = -rx;
                oy[ra] = -ry;
                sflag[rb] |= sflag[ra];
            }
        }
    }
    __syncthreads();
    // Sizes and flags of each set at its root slot.
    for (u32 j = tid; j < T; j += nt) {
        if (canon[j] != j) continue;
        u32 r = j;
        while (up[r] != r) r = up[r];
        if (r != j) {
            atomicAdd(&ssize[r], ssize[j]);
            atomicOr(&sflag[r], sflag[j]);
        }
    }
    __syncthreads();
    // 6. Statistics.
    u32 largest = 0;
    u64 s2 = 0;
    for (u32 wi = tid; wi < nw; wi += nt) {
        u32 bits = rootb[wi];
        while (bits) {
            const u32 q = __ffs(bits) - 1;
            bits &= bits - 1;
            const u32 s = pget(par, wi * 32 + q) + 1;
            largest = max(largest, s);
            s2 += (u64)s * s;
            if (P.hist) {
                if (s < PB_HS) atomicAdd(&hs[s], 1u);
                else atomicAdd((u64*)P.hist + s, 1ull);
            }
        }
    }
    u32 perc = 0, flags = 0;
    for (u32 j = tid; j < T; j += nt) {
        if (canon[j] != j || up[j] != j) continue;
        const u32 s = ssize[j], f = sflag[j];
        const bool px = (f & S_WX) || ((f & (S_L | S_R)) == (S_L | S_R));
        const bool py = (f & S_WY) || ((f & (S_T | S_B)) == (S_T | S_B));
        largest = max(largest, s);
        if (px || py) {
            perc += s;
            flags |= (px ? PB_X : 0) | (py ? PB_Y : 0) | (px && py ? PB_BOTH : 0);
        } else {
            s2 += (u64)s * s;
            if (P.hist) {
                if (s < PB_HS) atomicAdd(&hs[s], 1u);
                else atomicAdd((u64*)P.hist + s, 1ull);
            }
        }
    }
    if (largest) atomicMax(&sh->largest, largest);
    if (s2) atomicAdd((unsigned long long*)&sh->s2, (unsigned long long)s2);
    if (perc) atomicAdd(&sh->percolating, perc);
    if (flags) atomicOr(&sh->flags, flags);
    __syncthreads();
    if (tid == 0) {
        PbRecord* out = (PbRecord*)P.out + k;
        out->flags = sh->flags;
        out->occupied = sh->occupied;
        out->largest = sh->largest;
        out->percolating = sh->percolating;
        out->finite_s2 = sh->s2;
    }
    __syncthreads();
}

// The lattice of one sample as bytes (1 = occupied; the layout of step 1), for lattices whose edge
// tables do not fit in a block's shared memory: the host labels and counts them with the full-
// lattice analyzer on the same stream. One thread per Philox block of four sites.
struct PgParams {
    u64 out; // u8* n sites
    u64 t;   // threshold (t <= 2^32)
    u32 n, idx_lo, idx_hi, key0, key1, pad;
};

extern "C" __global__ void pb_generate(const PgParams P) {
    const u32 b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= (P.n + 3) / 4) return;
    const uint4 r = pb_philox(make_uint4(b, P.idx_lo, P.idx_hi, (u32)P.t), P.key0, P.key1);
    unsigned char* out = (unsigned char*)P.out + 4 * (u64)b;
    const u32 left = P.n - 4 * b;
    out[0] = (u64)r.x < P.t;
    if (left > 1) out[1] = (u64)r.y < P.t;
    if (left > 2) out[2] = (u64)r.z < P.t;
    if (left > 3) out[3] = (u64)r.w < P.t;
}

// Dynamic shared memory: [PbShared][hs: PB_HS u32][tables][SMALL: occ, rootb, (BOND: right and
// down bond bits), forest]; with SMALL == 0 the bitmaps and forest lie in global scratch, in
// the same order.
extern "C" __global__ void __launch_bounds__(1024) pb_batch(const PbParams P, u32 tables_bytes) {
    extern __shared__ __align__(16) unsigned char smem[];
    PbShared* sh = (PbShared*)smem;
    u32* hs = (u32*)(smem + 32);
    unsigned char* tables = smem + 32 + 4 * PB_HS;
    for (u32 s = threadIdx.x; s < PB_HS; s += blockDim.x) hs[s] = 0;
#if SMALL
    volatile u32* occ = (volatile u32*)(tables + tables_bytes);
#else
    volatile u32* occ = (u32*)P.scratch + (u64)blockIdx.x * P.scratch_words;
#endif
    volatile u32* rootb = occ + P.nw;
    volatile u32* rbit = rootb + P.nw;
    volatile u32* dbit = rbit + (BOND ? P.nw : 0);
#if SMALL
    volatile u16* par = (volatile u16*)(dbit + (BOND ? P.nw : 0));
#else
    volatile u32* par = dbit + (BOND ? P.nw : 0);
#endif
    __syncthreads();
    for (u64 k = blockIdx.x; k < P.count; k += gridDim.x)
        pb_lattice(P, k, par, occ, rootb, rbit, dbit, tables, sh, hs);
    if (P.hist)
        for (u32 s = threadIdx.x; s < PB_HS; s += blockDim.x)
            if (hs[s]) atomicAdd((u64*)P.hist + s, (u64)hs[s]);
}
