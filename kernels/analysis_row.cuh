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
