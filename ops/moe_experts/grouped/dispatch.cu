// dispatch.cu: the MoE token permutation (a stable counting sort by expert, three kernels, no
// atomics on floats and no dependence on atomic order), the weighted combine back to token order,
// and both of their backward pieces (dispatch.h).
#include "ops/moe_experts/grouped/dispatch.h"

#include "ops/core/cuda/cuda_check.h"

namespace parity_moe {

namespace {

using bf16 = __nv_bfloat16;

// An expert index as its bucket: [0, E) as is, anything else the last bucket E.
__device__ __forceinline__ int bucket_of(int64_t index, int experts) {
    return index >= 0 && index < experts ? (int)index : experts;
}

// counts[c][b] (chunks, E + 1) = rows of chunk c in bucket b. Shared-memory integer atomics: the
// totals do not depend on their order.
__global__ void dispatch_count_kernel(const int64_t *indices, int64_t rows, int experts, int *counts) {
    extern __shared__ int chunk_counts[]; // (E + 1)
    for (int b = threadIdx.x; b <= experts; b += blockDim.x) chunk_counts[b] = 0;
    __syncthreads();
    int64_t r = (int64_t)blockIdx.x * kChunkRows + threadIdx.x;
    if (r < rows) atomicAdd(&chunk_counts[bucket_of(indices[r], experts)], 1);
    __syncthreads();
    for (int b = threadIdx.x; b <= experts; b += blockDim.x) counts[(int64_t)blockIdx.x * (experts + 1) + b] = chunk_counts[b];
}

// One block: bucket totals (a thread a bucket, chunks in order), the offsets and tile offsets (one
// thread, buckets in order), then bases[c][b] = offset of b + rows of b in chunks before c.
__global__ void dispatch_scan_kernel(const int *counts, int64_t chunks, int experts, int tile_rows, int64_t *bases,
                                     int64_t *expert_offsets, int64_t *tile_offsets) {
    extern __shared__ int64_t bucket_start[]; // (E + 1) totals, then starts
    const int buckets = experts + 1;
    for (int b = threadIdx.x; b < buckets; b += blockDim.x) {
        int64_t total = 0;
        for (int64_t c = 0; c < chunks; c++) total += counts[c * buckets + b];
        bucket_start[b] = total;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        int64_t offset = 0, tiles = 0;
        for (int b = 0; b < buckets; b++) {
            int64_t total = bucket_start[b];
            expert_offsets[b] = offset; // b == E: the valid rows, where the out-of-range bucket starts
            tile_offsets[b] = tiles;
            bucket_start[b] = offset;
            offset += total;
            tiles += (total + tile_rows - 1) / tile_rows;
        }
    }
    __syncthreads();
    for (int b = threadIdx.x; b < buckets; b += blockDim.x) {
        int64_t running = bucket_start[b];
        for (int64_t c = 0; c < chunks; c++) {
            bases[c * buckets + b] = running;
            running += counts[c * buckets + b];
        }
    }
}

// Row r of chunk c goes to bases[c][b] + (rows of bucket b before r in the chunk).
__global__ void dispatch_place_kernel(const int64_t *indices, int64_t rows, int experts, const int64_t *bases,
                                      int64_t *permuted_rows, int64_t *row_position) {
    __shared__ int chunk_buckets[kChunkRows];
    int64_t r = (int64_t)blockIdx.x * kChunkRows + threadIdx.x;
    int bucket = r < rows ? bucket_of(indices[r], experts) : -1;
    chunk_buckets[threadIdx.x] = bucket;
    __syncthreads();
    if (r >= rows) return;
    int rank = 0;
    for (int j = 0; j < (int)threadIdx.x; j++) rank += chunk_buckets[j] == bucket;
    int64_t position = bases[(int64_t)blockIdx.x * (experts + 1) + bucket] + rank;
    permuted_rows[position] = r;
    row_position[r] = position;
}

__device__ __forceinline__ float load_weight(const void *weights, parity_dtype dtype, int64_t i) {
    if (dtype == PARITY_F32) return static_cast<const float *>(weights)[i];
    return __bfloat162float(static_cast<const bf16 *>(weights)[i]);
}

// output[t, h] = bf16(sum_k w[t, k] y[p(t, k), h]), k in order; rows past the experts add nothing.
__global__ void combine_kernel(const bf16 *y, const int64_t *row_position, const int64_t *expert_offsets, int experts,
                               const void *weights, parity_dtype weights_dtype, int64_t tokens, int64_t top_k,
                               int64_t hidden_size, bf16 *output) {
    const int64_t valid_rows = expert_offsets[experts];
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < tokens * hidden_size;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t t = i / hidden_size, h = i % hidden_size;
        float sum = 0.0f;
        for (int64_t k = 0; k < top_k; k++) {
            int64_t position = row_position[t * top_k + k];
            if (position < valid_rows)
                sum += load_weight(weights, weights_dtype, t * top_k + k) * __bfloat162float(y[position * hidden_size + h]);
        }
        output[i] = __float2bfloat16_rn(sum);
    }
}

// One warp a row r = (t, k): dy[p] = bf16(g w), dw = sum_h g y[p] (lane-strided, then a fixed xor tree).
__global__ void combine_backward_kernel(const bf16 *doutput, const bf16 *y, const int64_t *row_position,
                                        const int64_t *expert_offsets, int experts, const void *weights, void *dweights,
                                        parity_dtype weights_dtype, int64_t rows, int64_t top_k, int64_t hidden_size,
                                        bf16 *dy) {
    const int lane = threadIdx.x % 32;
    const int64_t r = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    if (r >= rows) return;
    const int64_t t = r / top_k, position = row_position[r];
    float dweight = 0.0f;
    if (position < expert_offsets[experts]) {
        float w = load_weight(weights, weights_dtype, r);
        for (int64_t h = lane; h < hidden_size; h += 32) {
            float g = __bfloat162float(doutput[t * hidden_size + h]);
            dweight += g * __bfloat162float(y[position * hidden_size + h]);
            dy[position * hidden_size + h] = __float2bfloat16_rn(g * w);
        }
    }
    for (int offset = 16; offset > 0; offset >>= 1) dweight += __shfl_xor_sync(0xffffffffu, dweight, offset);
    if (lane == 0 && dweights) {
        if (weights_dtype == PARITY_F32) static_cast<float *>(dweights)[r] = dweight;
        else static_cast<bf16 *>(dweights)[r] = __float2bfloat16_rn(dweight);
    }
}

// dhidden[t, h] = bf16(sum_k dx[p(t, k), h]), k in order.
__global__ void dispatch_backward_kernel(const bf16 *dx, const int64_t *row_position, const int64_t *expert_offsets,
                                         int experts, int64_t tokens, int64_t top_k, int64_t hidden_size, bf16 *dhidden) {
    const int64_t valid_rows = expert_offsets[experts];
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < tokens * hidden_size;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t t = i / hidden_size, h = i % hidden_size;
        float sum = 0.0f;
        for (int64_t k = 0; k < top_k; k++) {
            int64_t position = row_position[t * top_k + k];
            if (position < valid_rows) sum += __bfloat162float(dx[position * hidden_size + h]);
        }
        dhidden[i] = __float2bfloat16_rn(sum);
    }
}

unsigned elementwise_blocks(int64_t count) {
    int64_t blocks = (count + 255) / 256;
    if (blocks < 1) blocks = 1;
    if (blocks > 65535 * 16) blocks = 65535 * 16;
    return (unsigned)blocks;
}

} // namespace

parity_error *moe_dispatch(const int64_t *expert_indices, int64_t rows, int experts, int tile_rows, int *counts,
                           int64_t *bases, const dispatch_plan &plan, cudaStream_t stream) {
    int64_t chunks = dispatch_chunks(rows);
    size_t bucket_bytes = (size_t)(experts + 1) * sizeof(int64_t);
    if (bucket_bytes > 48 * 1024)
        return PARITY_ERROR(PARITY_ERROR_UNSUPPORTED, "moe_experts: fused_triton dispatch handles up to %d experts, got %d",
                            48 * 1024 / 8 - 1, experts);
    if (chunks > 0) {
        dispatch_count_kernel<<<(unsigned)chunks, kChunkRows, (experts + 1) * sizeof(int), stream>>>(expert_indices, rows,
                                                                                                      experts, counts);
        PARITY_CUDA_TRY_LAUNCH("moe dispatch_count_kernel");
    }
    dispatch_scan_kernel<<<1, 1024, bucket_bytes, stream>>>(counts, chunks, experts, tile_rows, bases, plan.expert_offsets,
                                                            plan.tile_offsets);
    PARITY_CUDA_TRY_LAUNCH("moe dispatch_scan_kernel");
    if (chunks > 0) {
        dispatch_place_kernel<<<(unsigned)chunks, kChunkRows, 0, stream>>>(expert_indices, rows, experts, bases,
                                                                            plan.permuted_rows, plan.row_position);
        PARITY_CUDA_TRY_LAUNCH("moe dispatch_place_kernel");
    }
    return NULL;
}

parity_error *moe_combine(const bf16 *y, const int64_t *row_position, const int64_t *expert_offsets, int experts,
                          const void *weights, parity_dtype weights_dtype, int64_t tokens, int64_t top_k, int64_t hidden_size,
                          bf16 *output, cudaStream_t stream) {
    if (tokens == 0) return NULL;
    combine_kernel<<<elementwise_blocks(tokens * hidden_size), 256, 0, stream>>>(
        y, row_position, expert_offsets, experts, weights, weights_dtype, tokens, top_k, hidden_size, output);
    PARITY_CUDA_TRY_LAUNCH("moe combine_kernel");
    return NULL;
}

parity_error *moe_combine_backward(const bf16 *doutput, const bf16 *y, const int64_t *row_position,
                                   const int64_t *expert_offsets, int experts, const void *weights, void *dweights,
                                   parity_dtype weights_dtype, int64_t tokens, int64_t top_k, int64_t hidden_size, bf16 *dy,
                                   cudaStream_t stream) {
    int64_t rows = tokens * top_k;
    if (rows == 0) return NULL;
    int64_t blocks = (rows + 7) / 8; // 8 warps of 256 threads, a row each
    combine_backward_kernel<<<(unsigned)blocks, 256, 0, stream>>>(doutput, y, row_position, expert_offsets, experts, weights,
                                                                  dweights, weights_dtype, rows, top_k, hidden_size, dy);
    PARITY_CUDA_TRY_LAUNCH("moe combine_backward_kernel");
    return NULL;
}

parity_error *moe_dispatch_backward(const bf16 *dx, const int64_t *row_position, const int64_t *expert_offsets, int experts,
                                    int64_t tokens, int64_t top_k, int64_t hidden_size, bf16 *dhidden, cudaStream_t stream) {
    if (tokens == 0) return NULL;
    dispatch_backward_kernel<<<elementwise_blocks(tokens * hidden_size), 256, 0, stream>>>(
        dx, row_position, expert_offsets, experts, tokens, top_k, hidden_size, dhidden);
    PARITY_CUDA_TRY_LAUNCH("moe dispatch_backward_kernel");
    return NULL;
}

} // namespace parity_moe
