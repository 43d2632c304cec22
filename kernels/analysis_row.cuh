// One piece's accumulators (src/cuda/analysis.rs: PieceRow), shared by analysis.cu, which
// fills them, and perimeters.cu, which reads them: the sums of coordinates (only with moments)
// fill the first 32-byte sector; size, bounding box and first site (raster index, for the tree
// of holes) the second; sxx_hi and syy_hi stay 0.
#pragma once
#include "common.cuh"

struct __align__(64) Row {
    u64 sx, sy, sxx, syy;
    u32 size, x_min, x_max, y_min, y_max;
    u32 sxx_hi, syy_hi, first;
};

// Stores a whole row: the moments sector only when `moments` (it is never read otherwise).
__device__ __forceinline__ void put_row(Row* r, u32 size, u32 x0, u32 x1, u32 y0, u32 y1, u64 sx,
                                        u64 sy, u64 sxx, u64 syy, u32 first, bool moments) {
    if (moments) {
        ulonglong2* m = reinterpret_cast<ulonglong2*>(r);
        m[0] = make_ulonglong2(sx, sy);
        m[1] = make_ulonglong2(sxx, syy);
    }
    uint4* b = reinterpret_cast<uint4*>(&r->size);
    b[0] = make_uint4(size, x0, x1, y0);
    b[1] = make_uint4(y1, 0u, 0u, first);
}

// The empty row (minima at their largest, for atomicMin).
__device__ __forceinline__ void put_empty(Row* r, bool moments) {
    put_row(r, 0, 0xffffffffu, 0, 0xffffffffu, 0, 0, 0, 0, 0, 0xffffffffu, moments);
}

// Lists a cluster one by one in a histogram's tail: (size, span bits: 1 = x, 2 = y) pairs,
// *tail_n counting them (entries beyond tail_cap are dropped; the host checks the count).
__device__ __forceinline__ void tail_append(u32* tail, u32 tail_cap, u32* tail_n, u32 s, u32 span) {
    const u32 t = atomicAdd(tail_n, 1u);
    if (t < tail_cap) {
        tail[2 * t] = s;
        tail[2 * t + 1] = span;
    }
}
