// ordered_column_sum.cuh: out[c] = the serial sum over rows r = 0, 1, ..., R - 1 of term(r, c), starting
// from zero (`sum = sum + term(r, c)`), bit for bit that loop, for the weight and bias gradients of the
// eager backends (the CPU's row order, deterministic). The serial loop run by one thread per column
// waits on one global load a row; here a block of 256 threads takes 32 columns: warps 1-7 compute a
// tile of 64 rows x 32 columns of terms into shared memory (coalesced, many loads in flight) while warp
// 0 adds the previous tile in row order, lane c owning column c (double buffered, one barrier a tile).
// Only the rows that exist are added (a padded zero would turn a -0 sum into +0). For .cu files only.
#ifndef PARITY_CORE_CUDA_ORDERED_COLUMN_SUM_CUH
#define PARITY_CORE_CUDA_ORDERED_COLUMN_SUM_CUH

#include <stdint.h>

namespace parity_cuda {

constexpr int ordered_sum_columns = 32;  // columns a block, one per lane of warp 0
constexpr int ordered_sum_rows = 64;     // rows a tile
constexpr int ordered_sum_threads = 256; // warp 0 adds, warps 1-7 compute the terms

// Blocks for `columns` columns (launch with ordered_sum_threads threads).
inline unsigned ordered_sum_blocks(int64_t columns) {
    int64_t blocks = (columns + ordered_sum_columns - 1) / ordered_sum_columns;
    return (unsigned)(blocks > 0 ? blocks : 1);
}

// term(row, column) -> C; store(column, sum). Call from every thread of the block.
template <typename C, typename Term, typename Store>
__device__ void ordered_column_sum(int64_t rows, int64_t columns, Term term, Store store) {
    constexpr int R = ordered_sum_rows, W = ordered_sum_columns;
    __shared__ C tile[2][R][W + 1];
    const int64_t column0 = (int64_t)blockIdx.x * W;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int producers = (int)blockDim.x - 32;
    const int64_t tiles = (rows + R - 1) / R;
    auto produce = [&](int64_t t, int buffer) {
        for (int i = (int)threadIdx.x - 32; i < R * W; i += producers) {
            int r = i / W, c = i % W;
            int64_t row = t * R + r, column = column0 + c;
            tile[buffer][r][c] = row < rows && column < columns ? term(row, column) : C(0);
        }
    };
    C sum = 0;
    if (warp != 0 && tiles > 0) produce(0, 0);
    __syncthreads();
    for (int64_t t = 0; t < tiles; t++) {
        if (warp == 0) {
            int64_t left = rows - t * R;
            int count = left < R ? (int)left : R;
            for (int r = 0; r < count; r++) sum = sum + tile[t % 2][r][lane];
        } else if (t + 1 < tiles) {
            produce(t + 1, (int)((t + 1) % 2));
        }
        __syncthreads();
    }
    if (warp == 0 && column0 + lane < columns) store(column0 + lane, sum);
}

} // namespace parity_cuda

#endif
