// Multi-strip labeling (src/cuda/multi/): the lattice is cut into horizontal strips, each strip
// is labeled alone by a family's raw numbering (every occupied site holds its strip-local root
// + 1, a root r holds r + 1, no site points anywhere else), and the host joins the strips at
// their seams. These kernels apply the join's answer to one strip:
//   st_mark       writes the host's value into the slots of the strip's *demoted* roots (local
//                 roots that the seam join put under a smaller root, possibly in another strip).
//   st_raw_final  raw numbering, elementwise: every site takes its global root + 1.
//   st_count      canonical numbering: the roots per segment, as canon_count counts them but
//                 without pointing sites anywhere (the labels are flat already, and a demoted
//                 root's slot holds FLAG | value, which is no pointer).
//   st_gather     reads the slots of a list of roots (their FLAG | rank after canon_rank).
//   st_final      canonical numbering, elementwise: every site takes offset + rank + 1.
// Demoted slots hold FLAG | value. In st_final the value is (number - 1 - offset) modulo 2^31,
// so that adding the strip's offset to every flagged slot gives every cluster its global number
// with one formula (the labels must stay below 2^31). Each pass writes a root's slot only from
// the root's own thread and only with the value every reader derives from the slot before or
// after that write, so the passes are race-free.
#pragma once
#include "common.cuh"
#include "canonical.cu"

// Elementwise kernels: grid-stride loops over u64 indices (a strip may hold up to 2^32 sites).
#define ST_THREADS 256

// L[pairs[2i]] = pairs[2i + 1] for i < m.
extern "C" __global__ void __launch_bounds__(ST_THREADS)
st_mark(u32* L, const u32* __restrict__ pairs, u32 m) {
    for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < m; i += gridDim.x * blockDim.x) {
        L[pairs[2 * i]] = pairs[2 * i + 1];
    }
}

// Raw numbering. Demoted slots hold FLAG | (global root + 1); their own sites are skipped here
// (st_mark clears the flag afterwards). Every other site v -> its local root v - 1: a demoted
// root gives its global root, an undemoted one is a global root itself, at v - 1 + offset. An
// undemoted root's own thread may have rewritten its slot already, but without the flag, so
// readers take the same branch either way.
__device__ __forceinline__ u32 st_raw_one(const u32* L, u32 v, u32 offset) {
    if (v == 0 || (v & FLAG)) return v;
    const u32 u = ld_cg(L + (v - 1));
    return (u & FLAG) ? (u & ~FLAG) : v + offset;
}

// The label of a flagged slot: (v + offset) modulo 2^31, + 1.
__device__ __forceinline__ u32 st_number(u32 v, u32 offset) { return ((v + offset) & ~FLAG) + 1; }

// Canonical numbering, after canon_rank (every undemoted root's slot holds FLAG | local rank)
// and st_mark (every demoted one FLAG | number - 1 - offset). A site that is not a root points
// at one, whose slot holds the flag or, once the root's own thread has been here, the label.
__device__ __forceinline__ u32 st_final_one(const u32* L, u32 v, u32 offset) {
    if (v == 0) return 0u;
    if (v & FLAG) return st_number(v, offset);
    const u32 u = ld_cg(L + (v - 1));
    return (u & FLAG) ? st_number(u, offset) : u;
}

// One elementwise pass of `one` over n labels: 16-byte loads and stores when `vec` (the array
// is 16-byte aligned), the tail one by one. Only changed words are stored.
template <u32 (*one)(const u32*, u32, u32)>
__device__ __forceinline__ void st_pass(u32* L, u64 n, u32 offset, u32 vec) {
    const u64 stride = (u64)gridDim.x * blockDim.x;
    const u64 first = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    const u64 n4 = vec ? n / 4 : 0;
    for (u64 i = first; i < n4; i += stride) {
        const uint4 v = reinterpret_cast<const uint4*>(L)[i];
        const uint4 o = make_uint4(one(L, v.x, offset), one(L, v.y, offset), one(L, v.z, offset),
                                   one(L, v.w, offset));
        if (o.x != v.x || o.y != v.y || o.z != v.z || o.w != v.w)
            reinterpret_cast<uint4*>(L)[i] = o;
    }
    for (u64 i = n4 * 4 + first; i < n; i += stride) {
        const u32 v = L[i];
        const u32 o = one(L, v, offset);
        if (o != v) L[i] = o;
    }
}

extern "C" __global__ void __launch_bounds__(ST_THREADS)
st_raw_final(u32* L, u64 n, u32 offset, u32 vec) {
    st_pass<st_raw_one>(L, n, offset, vec);
}

extern "C" __global__ void __launch_bounds__(SEG_THREADS)
st_count(const site_t* __restrict__ in, u32* L, Geo g, u32* counts) {
    count_segment(in, L, g, counts, false);
}

// out[i] = L[idx[i]] for i < m.
extern "C" __global__ void __launch_bounds__(ST_THREADS)
st_gather(const u32* L, const u32* __restrict__ idx, u32 m, u32* out) {
    for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < m; i += gridDim.x * blockDim.x) {
        out[i] = ld_cg(L + idx[i]);
    }
}

extern "C" __global__ void __launch_bounds__(ST_THREADS)
st_final(u32* L, u64 n, u32 offset, u32 vec) {
    st_pass<st_final_one>(L, n, offset, vec);
}
