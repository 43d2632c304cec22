// Seeded regions (PARAFILL's connected regions, label-based): predicate mask, labeling by the
// crate's labeler with root-index labels (label = root site + 1), roots of the seeds marked in
// the predicate mask (value 2), mask of the marked components; absorption labels the complement
// and keeps the components that touch no open edge.
//
// The comparison |v - r| <= t is done in float, as on the CPU (no fast math: bit-identical).
#pragma once
#include "common.cuh"

// A site meets the criterion when every channel does. ref and tol hold c floats each.
template <typename T>
__device__ __forceinline__ void predicate(const T* __restrict__ f, u32 n, u32 c,
                                          const float* __restrict__ ref,
                                          const float* __restrict__ tol, u8* __restrict__ pred) {
    const u32 stride = gridDim.x * blockDim.x;
    if (c == 1) {
        const float r = ref[0], t = tol[0];
        for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
            pred[i] = fabsf((float)f[i] - r) <= t;
        }
        return;
    }
    for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        bool ok = true;
        for (u32 k = 0; k < c; ++k) {
            ok = ok && fabsf((float)f[(u64)i * c + k] - ref[k]) <= tol[k];
        }
        pred[i] = ok;
    }
}

extern "C" __global__ void rg_pred_u8(const u8* __restrict__ f, u32 n, u32 c,
                                      const float* __restrict__ ref,
                                      const float* __restrict__ tol, u8* __restrict__ pred) {
    predicate<u8>(f, n, c, ref, tol, pred);
}

extern "C" __global__ void rg_pred_f32(const float* __restrict__ f, u32 n, u32 c,
                                       const float* __restrict__ ref,
                                       const float* __restrict__ tol, u8* __restrict__ pred) {
    predicate<float>(f, n, c, ref, tol, pred);
}

// Marks the root of each seed's component (seeds that met the criterion have a label).
extern "C" __global__ void rg_mark(const u32* __restrict__ labels,
                                   const u32* __restrict__ seeds, u32 k, u8* pred) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < k) {
        const u32 l = labels[seeds[i]];
        if (l != 0) pred[l - 1] = 2;
    }
}

// out |= site's component is marked (first: out = ..., no read).
extern "C" __global__ void rg_mask(const u32* __restrict__ labels, const u8* __restrict__ pred,
                                   u8* __restrict__ out, u32 n, u32 first) {
    const u32 stride = gridDim.x * blockDim.x;
    for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const u32 l = labels[i];
        const bool in = l != 0 && pred[l - 1] == 2;
        if (first) {
            out[i] = in;
        } else if (in) {
            out[i] = 1;
        }
    }
}

// The complement of the mask, as an occupancy lattice.
extern "C" __global__ void rg_complement(const u8* __restrict__ out, u8* __restrict__ comp,
                                         u32 n) {
    const u32 stride = gridDim.x * blockDim.x;
    for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        comp[i] = out[i] == 0;
    }
}

// Marks (2) the roots of the complement components on the open edges: thread i < w walks the
// top and bottom rows (when y does not wrap), w <= i < w + h the left and right columns (when x
// does not wrap).
extern "C" __global__ void rg_edges(const u32* __restrict__ labels, u8* comp, u32 h, u32 w,
                                    u32 wrap_x, u32 wrap_y) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    u32 a, b;
    if (i < w) {
        if (wrap_y) return;
        a = i;
        b = (h - 1) * w + i;
    } else if (i < w + h) {
        if (wrap_x) return;
        const u32 y = i - w;
        a = y * w;
        b = y * w + w - 1;
    } else {
        return;
    }
    const u32 la = labels[a], lb = labels[b];
    if (la != 0) comp[la - 1] = 2;
    if (lb != 0) comp[lb - 1] = 2;
}

// Absorbs the complement components whose root is not marked.
extern "C" __global__ void rg_absorb(const u32* __restrict__ labels, const u8* __restrict__ comp,
                                     u8* __restrict__ out, u32 n) {
    const u32 stride = gridDim.x * blockDim.x;
    for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const u32 l = labels[i];
        if (l != 0 && comp[l - 1] != 2) out[i] = 1;
    }
}

// Each seed's channel values (for Reference::Seed on a device field).
template <typename T>
__device__ __forceinline__ void gather(const T* __restrict__ f, const u32* __restrict__ seeds,
                                       u32 k, u32 c, float* __restrict__ vals) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < k * c) {
        const u32 s = i / c, ch = i - s * c;
        vals[i] = (float)f[(u64)seeds[s] * c + ch];
    }
}

extern "C" __global__ void rg_gather_u8(const u8* __restrict__ f, const u32* __restrict__ seeds,
                                        u32 k, u32 c, float* __restrict__ vals) {
    gather<u8>(f, seeds, k, c, vals);
}

extern "C" __global__ void rg_gather_f32(const float* __restrict__ f,
                                         const u32* __restrict__ seeds, u32 k, u32 c,
                                         float* __restrict__ vals) {
    gather<float>(f, seeds, k, c, vals);
}
