// fused_rows.cuh: what the fused CUDA backends (liger_kernel, triton, fla) share beyond
// kernel_math.cuh. For .cu files only.
//   - element<D>: kernel_math.cuh's scalar<D> with bf16 in its hardware form (__nv_bfloat16, one
//     cvt.rn.bf16.f32 per store: the same round-to-nearest-even as parity_f32_to_bf16, at memory
//     speed). f32 and bf16 compute in f32, f64 in f64.
//   - load_values / store_values: VEC consecutive elements as one 16-byte access when the caller
//     says the addresses allow it, element by element otherwise. Which thread holds which element
//     never depends on that choice, so results do not either.
//   - row_layout: how one row of `hidden` elements spreads over a group of threads (VEC elements
//     per access, ITEMS accesses per thread, `threads` threads): a function of hidden and the dtype
//     only, never of the number of rows, which is what makes the row kernels batch invariant.
//   - group_sum: the sum over one row group's threads in a fixed tree order (every thread of the
//     group gets the same bits).
//   - store_block_partial / sum_partials: a row-walking backward's column sums (RMSNorm's dw) added
//     over the block's groups, then over the blocks, each in a fixed order.
#ifndef PARITY_CUDA_FUSED_ROWS_CUH
#define PARITY_CUDA_FUSED_ROWS_CUH

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include <mutex>
#include <type_traits>

#include "ops/core/cuda/cuda_check.h"
#include "ops/core/cuda/exec_stream.cuh"
#include "ops/core/cuda/kernel_math.cuh"

extern "C" {
#include "ops/core/device.h"
#include "ops/core/dtype.h"
#include "ops/core/memory.h"
#include "ops/core/tensor.h"
}

namespace parity_fused {

using parity_cuda::dispatch_float;

template <parity_dtype D> using element = parity_cuda::scalar<D, parity_cuda::bf16_form::hardware>;

// A compute value rounded to what the storage dtype holds (identity for f32 and f64).
template <parity_dtype D> __device__ __forceinline__ typename element<D>::compute round_storage(typename element<D>::compute v) {
    return parity_cuda::round_storage<D, parity_cuda::bf16_form::hardware>(v);
}

// Elements per 16-byte access.
template <parity_dtype D> constexpr int full_vector() { return (int)(16 / sizeof(typename element<D>::storage)); }

template <typename T, int N> struct alignas(sizeof(T) * N) packed {
    T v[N];
};

template <parity_dtype D, int VEC>
__device__ __forceinline__ void load_values(const typename element<D>::storage *source, bool vectorized,
                                            typename element<D>::compute (&out)[VEC]) {
    using S = typename element<D>::storage;
    if (VEC > 1 && vectorized) {
        packed<S, VEC> data = *reinterpret_cast<const packed<S, VEC> *>(source);
#pragma unroll
        for (int j = 0; j < VEC; j++) out[j] = element<D>::load(data.v[j]);
    } else {
#pragma unroll
        for (int j = 0; j < VEC; j++) out[j] = element<D>::load(source[j]);
    }
}

template <parity_dtype D, int VEC>
__device__ __forceinline__ void store_values(typename element<D>::storage *destination, bool vectorized,
                                             const typename element<D>::compute (&values)[VEC]) {
    using S = typename element<D>::storage;
    if (VEC > 1 && vectorized) {
        packed<S, VEC> data;
#pragma unroll
        for (int j = 0; j < VEC; j++) data.v[j] = element<D>::store(values[j]);
        *reinterpret_cast<packed<S, VEC> *>(destination) = data;
    } else {
#pragma unroll
        for (int j = 0; j < VEC; j++) destination[j] = element<D>::store(values[j]);
    }
}

// VEC storage elements as they sit in memory: kept in registers between passes, so a row costs
// half the registers of its f32 values in bf16.
template <parity_dtype D, int VEC> using raw_vector = packed<typename element<D>::storage, VEC>;

template <parity_dtype D, int VEC>
__device__ __forceinline__ raw_vector<D, VEC> load_raw(const typename element<D>::storage *source, bool vectorized) {
    if (VEC > 1 && vectorized) return *reinterpret_cast<const raw_vector<D, VEC> *>(source);
    raw_vector<D, VEC> out;
#pragma unroll
    for (int j = 0; j < VEC; j++) out.v[j] = source[j];
    return out;
}

template <parity_dtype D, int VEC> __device__ __forceinline__ raw_vector<D, VEC> zero_raw() {
    raw_vector<D, VEC> out;
#pragma unroll
    for (int j = 0; j < VEC; j++) out.v[j] = element<D>::store(0);
    return out;
}

// True when every pointer is 16-byte aligned (NULL counts as aligned).
inline bool aligned16(const void *a, const void *b = nullptr, const void *c = nullptr, const void *d = nullptr,
                      const void *e = nullptr, const void *f = nullptr) {
    const void *pointers[] = {a, b, c, d, e, f};
    for (const void *p : pointers)
        if ((uintptr_t)p % 16 != 0) return false;
    return true;
}

// How one row spreads over a group of `threads` threads: thread t of the group holds the VEC
// elements at column (i * threads + t) * VEC for i < ITEMS.
struct row_layout {
    int vector;  // VEC: the 16-byte width when hidden is a multiple of it, else 1
    int items;   // ITEMS: 1, 2, 4 or 8
    int threads; // a multiple of 32, at most 1024
};

// One candidate shape of a row group: up to `cap` threads with `items` accesses each.
struct row_layout_choice {
    int cap, items;
};

// The layout for rows of `hidden` elements from the first of `count` choices whose threads hold the
// row; false when none does.
inline bool row_layout_from(int64_t hidden, int full_width, const row_layout_choice *choices, int count,
                            row_layout *out) {
    int vector = hidden % full_width == 0 ? full_width : 1;
    int64_t vectors = hidden / vector;
    for (int i = 0; i < count; i++) {
        int64_t threads = (vectors + choices[i].items - 1) / choices[i].items;
        if (threads <= choices[i].cap) {
            out->vector = vector;
            out->items = choices[i].items;
            out->threads = (int)((threads + 31) / 32 * 32);
            return true;
        }
    }
    return false;
}

// The layout for rows of `hidden` elements; false when a row does not fit in one group's
// registers (more than 1024 threads x 8 accesses). `few_items` prefers more threads with fewer
// accesses each (kernels that hold several tensors of the row, like a backward).
inline bool row_layout_for(int64_t hidden, int full_width, bool few_items, row_layout *out) {
    static const row_layout_choice wide[] = {{256, 1}, {256, 2}, {256, 4}, {512, 4}, {1024, 4}, {1024, 8}};
    static const row_layout_choice narrow[] = {{256, 1}, {512, 1}, {512, 2}, {1024, 2}, {1024, 4}, {1024, 8}};
    return row_layout_from(hidden, full_width, few_items ? narrow : wide, 6, out);
}

// Calls fn(integral_constant<VEC>, integral_constant<ITEMS>) for the layout's compile-time shape.
template <int FULL, typename Fn> auto dispatch_layout(const row_layout &layout, Fn &&fn) {
    using one = std::integral_constant<int, 1>;
    using full = std::integral_constant<int, FULL>;
    if (layout.vector == FULL) {
        switch (layout.items) {
        case 1: return fn(full{}, std::integral_constant<int, 1>{});
        case 2: return fn(full{}, std::integral_constant<int, 2>{});
        case 4: return fn(full{}, std::integral_constant<int, 4>{});
        default: return fn(full{}, std::integral_constant<int, 8>{});
        }
    }
    switch (layout.items) {
    case 1: return fn(one{}, std::integral_constant<int, 1>{});
    case 2: return fn(one{}, std::integral_constant<int, 2>{});
    case 4: return fn(one{}, std::integral_constant<int, 4>{});
    default: return fn(one{}, std::integral_constant<int, 8>{});
    }
}

// Sum over the `threads` consecutive threads of this thread's group (threads a multiple of 32, the
// group's warps consecutive), in a fixed order; every thread of the group gets the same value.
// Every thread of the block must call it (it may __syncthreads). `scratch` holds 32 values.
template <typename T> __device__ __forceinline__ T group_sum(T value, T *scratch, int threads) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) value += __shfl_xor_sync(0xffffffffu, value, offset);
    if (threads == 32) return value;
    int warp = threadIdx.x >> 5, first_warp = (threadIdx.x / threads) * (threads >> 5);
    __syncthreads(); // the previous call's readers are done with scratch
    if ((threadIdx.x & 31) == 0) scratch[warp] = value;
    __syncthreads();
    T total = 0;
    for (int w = 0; w < (threads >> 5); w++) total += scratch[first_warp + w];
    return total;
}

// Warp-level sum in a butterfly: all 32 lanes get the same bits.
template <typename T> __device__ __forceinline__ T warp_sum(T value) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) value += __shfl_xor_sync(0xffffffffu, value, offset);
    return value;
}

template <typename T> __device__ __forceinline__ T warp_max(T value) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) value = max(value, __shfl_xor_sync(0xffffffffu, value, offset));
    return value;
}

// The end of a row-walking backward that sums columns over its rows (RMSNorm's dw): thread t of
// group `group` (of `groups` groups of `threads` threads) holds in sums[i][j] its share of column
// (i * threads + t) * VEC + j, the row layout's. The groups' shares are added into group 0's in group
// order through `combined` (hidden compute values of shared memory), then group 0 writes them to row
// blockIdx.x of `partial` (blocks, hidden). Every thread of the block calls it (it may
// __syncthreads), as the kernel's last statement.
template <typename C, int VEC, int ITEMS>
__device__ __forceinline__ void store_block_partial(C (&sums)[ITEMS][VEC], C *combined, C *partial, int64_t hidden,
                                                    int threads, int groups, int group, int t) {
    for (int source = 1; source < groups; source++) {
        if (group == source) {
#pragma unroll
            for (int i = 0; i < ITEMS; i++) {
                const int64_t column = ((int64_t)i * threads + t) * VEC;
                if (column < hidden)
#pragma unroll
                    for (int j = 0; j < VEC; j++) combined[column + j] = sums[i][j];
            }
        }
        __syncthreads();
        if (group == 0) {
#pragma unroll
            for (int i = 0; i < ITEMS; i++) {
                const int64_t column = ((int64_t)i * threads + t) * VEC;
                if (column < hidden)
#pragma unroll
                    for (int j = 0; j < VEC; j++) sums[i][j] += combined[column + j];
            }
        }
        __syncthreads();
    }
    if (group != 0) return;
    C *row = partial + (int64_t)blockIdx.x * hidden;
#pragma unroll
    for (int i = 0; i < ITEMS; i++) {
        const int64_t column = ((int64_t)i * threads + t) * VEC;
        if (column < hidden)
#pragma unroll
            for (int j = 0; j < VEC; j++) row[column + j] = sums[i][j];
    }
}

// out[c] = sum over b < blocks of partial[b, c], stored to D: each column sums 32 strided slices,
// then the 32 slice sums in order. The second stage of the dweight reductions (fixed order).
template <parity_dtype D>
__global__ void sum_partials_kernel(const typename element<D>::compute *partial, // (blocks, columns)
                                    int64_t blocks, int64_t columns,
                                    typename element<D>::storage *out) { // (columns)
    using C = typename element<D>::compute;
    __shared__ C slices[32][33];
    const int64_t column = (int64_t)blockIdx.x * 32 + threadIdx.x;
    C sum = 0;
    if (column < columns)
        for (int64_t b = threadIdx.y; b < blocks; b += 32) sum += partial[b * columns + column];
    slices[threadIdx.y][threadIdx.x] = sum;
    __syncthreads();
    if (threadIdx.y != 0 || column >= columns) return;
    C total = 0;
    for (int slice = 0; slice < 32; slice++) total += slices[slice][threadIdx.x];
    out[column] = element<D>::store(total);
}

template <parity_dtype D>
inline parity_error *sum_partials(const parity_exec *exec, const typename element<D>::compute *partial, int64_t blocks,
                                  int64_t columns, typename element<D>::storage *out) {
    if (columns == 0) return NULL;
    sum_partials_kernel<D>
        <<<(unsigned)((columns + 31) / 32), dim3(32, 32), 0, parity_cuda_stream(exec)>>>(partial, blocks, columns, out);
    PARITY_CUDA_TRY_LAUNCH("sum_partials_kernel");
    return NULL;
}

// Scratch memory from the device's stream-ordered pool (cudaMallocAsync on the caller's stream, the
// execution context's), given back with cudaFreeAsync on that stream by the destructor: unlike cudaMalloc/cudaFree it neither maps pages
// on every call nor synchronizes the device, so a kernel's scratch costs no host stall. The pool
// keeps what it got (release threshold raised once per device). Counted in parity_memory's
// current/peak bytes while held.
struct pool_scratch {
    void *data = nullptr;
    size_t bytes = 0;
    parity_device device = {PARITY_DEVICE_CUDA, 0};
    cudaStream_t stream = 0;
    pool_scratch() = default;
    pool_scratch(const pool_scratch &) = delete;
    pool_scratch &operator=(const pool_scratch &) = delete;
    ~pool_scratch() { release(); }

    parity_error *alloc(parity_device on, size_t size, cudaStream_t on_stream) {
        release();
        PARITY_TRY(keep_pool(on.index));
        PARITY_CUDA_TRY(cudaMallocAsync(&data, size ? size : 1, on_stream));
        device = on;
        stream = on_stream;
        bytes = size;
        parity_memory_account(device, bytes, false);
        return NULL;
    }
    template <typename T> T *as(size_t byte_offset = 0) const { return (T *)((unsigned char *)data + byte_offset); }
    void release() {
        if (!data) return;
        cudaFreeAsync(data, stream);
        parity_memory_account(device, bytes, true);
        data = nullptr;
        bytes = 0;
    }

  private:
    static parity_error *keep_pool(int device_index) {
        static std::mutex lock;
        static bool configured[64];
        std::lock_guard<std::mutex> guard(lock);
        if (device_index < 0 || device_index >= 64 || configured[device_index]) return NULL;
        cudaMemPool_t pool;
        PARITY_CUDA_TRY(cudaDeviceGetDefaultMemPool(&pool, device_index));
        uint64_t threshold = UINT64_MAX;
        PARITY_CUDA_TRY(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
        configured[device_index] = true;
        return NULL;
    }
};

// The device's multiprocessor count (for persistent grids).
inline parity_error *multiprocessor_count(int device_index, int *count) {
    PARITY_CUDA_TRY(cudaDeviceGetAttribute(count, cudaDevAttrMultiProcessorCount, device_index));
    return NULL;
}

} // namespace parity_fused

#endif
