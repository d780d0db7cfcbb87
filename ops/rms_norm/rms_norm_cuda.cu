// rms_norm_cuda.cu: the fused RMSNorm kernels and their launchers (see rms_norm_cuda.h).
#include <algorithm>

#include "ops/core/cuda/bulk_copy.cuh"
#include "ops/core/cuda/exec_stream.cuh"
#include "ops/core/cuda/fused_rows.cuh"

extern "C" {
#include "ops/core/cpu_math.h"
#include "ops/rms_norm/rms_norm_cuda.h"
}

using namespace parity_fused;

namespace {

constexpr int fixed_tile_rows = 64; // FIXED_TILES: rows per dw partial, whatever the device

// Register budgets. Layouts of up to 2 accesses per thread run in blocks of at most 256 threads:
// 6 forward blocks (42 registers) or 3 backward blocks (85 registers: x, dy, w and the row's share of
// dw) per multiprocessor. Longer rows may use 1024-thread blocks. Measured on an H200 at 16384 x 4096
// bf16: backward rows of 1 access in 512-thread blocks (2 per SM) took 0.19 ms against 0.146 ms for
// 256 x 2; a next-row prefetch in either kernel made them slower (the compiler sinks the loads under
// the register cap), as did a persistent forward grid, a forward pipelined through shared memory
// like the backward below (0.083 ms at best against 0.0747) and one warp per row (0.10 ms or more).
template <int ITEMS> constexpr int forward_max_threads() { return ITEMS <= 2 ? 256 : 1024; }
template <int ITEMS> constexpr int forward_min_blocks() { return ITEMS <= 2 ? 6 : 1; }
template <int ITEMS> constexpr int backward_max_threads() { return ITEMS <= 2 ? 256 : 1024; }
template <int ITEMS> constexpr int backward_min_blocks() { return ITEMS <= 2 ? 3 : 1; }

// One row per group of `threads` threads, `blockDim.x / threads` rows per block. The row stays in
// registers (as stored) between the sum of squares and the output.
template <parity_dtype D, int VEC, int ITEMS, bool OFFSET>
__global__ void __launch_bounds__(forward_max_threads<ITEMS>(), forward_min_blocks<ITEMS>()) rms_norm_forward_kernel(const typename element<D>::storage *x,      // (N, H)
                                        const typename element<D>::storage *weight, // (H)
                                        typename element<D>::storage *y,            // (N, H)
                                        typename element<D>::compute *inverse_rms,  // (N)
                                        int64_t rows, int64_t hidden, int threads, typename element<D>::compute eps,
                                        bool vectorized) {
    using C = typename element<D>::compute;
    __shared__ C scratch[32];
    const int groups = blockDim.x / threads, group = threadIdx.x / threads, t = threadIdx.x % threads;
    const int64_t row = (int64_t)blockIdx.x * groups + group;
    const bool active = row < rows;
    const auto *x_row = x + (active ? row : 0) * hidden;

    raw_vector<D, VEC> xs[ITEMS];
#pragma unroll
    for (int i = 0; i < ITEMS; i++) {
        const int64_t column = ((int64_t)i * threads + t) * VEC;
        xs[i] = active && column < hidden ? load_raw<D, VEC>(x_row + column, vectorized) : zero_raw<D, VEC>();
    }
    C sum_squares = 0;
#pragma unroll
    for (int i = 0; i < ITEMS; i++)
#pragma unroll
        for (int j = 0; j < VEC; j++) {
            const C value = element<D>::load(xs[i].v[j]);
            sum_squares += value * value;
        }
    sum_squares = group_sum(sum_squares, scratch, threads);
    const C inverse = C(1) / sqrt(sum_squares / C(hidden) + eps);
    if (!active) return; // no barrier follows
    if (t == 0) inverse_rms[row] = inverse;
    auto *y_row = y + row * hidden;
#pragma unroll
    for (int i = 0; i < ITEMS; i++) {
        const int64_t column = ((int64_t)i * threads + t) * VEC;
        if (column >= hidden) continue;
        C w[VEC], out[VEC];
        load_values<D, VEC>(weight + column, vectorized, w);
#pragma unroll
        for (int j = 0; j < VEC; j++) {
            const C x_hat = element<D>::load(xs[i].v[j]) * inverse;
            out[j] = OFFSET ? x_hat * (C(1) + w[j]) : round_storage<D>(x_hat) * w[j];
        }
        store_values<D, VEC>(y_row + column, vectorized, out);
    }
}

// Block b walks rows [b * rows_per_block, (b + 1) * rows_per_block) with its groups side by side,
// writes dx, and leaves its columns' sum of dy * x_hat in dweight_partial[b] (NULL: no dw).
// x and dy of the row stay in registers as stored; x_hat and g = dy * w_eff are recomputed for dx.
template <parity_dtype D, int VEC, int ITEMS, bool OFFSET>
__global__ void __launch_bounds__(backward_max_threads<ITEMS>(), backward_min_blocks<ITEMS>()) rms_norm_backward_kernel(const typename element<D>::storage *x,         // (N, H)
                                         const typename element<D>::storage *weight,    // (H)
                                         const typename element<D>::storage *doutput,   // (N, H)
                                         const typename element<D>::compute *inverse_rms, // (N)
                                         typename element<D>::storage *dinput,          // (N, H) or NULL
                                         typename element<D>::compute *dweight_partial, // (blocks, H) or NULL
                                         int64_t rows, int64_t hidden, int threads, int64_t rows_per_block,
                                         bool vectorized) {
    using C = typename element<D>::compute;
    extern __shared__ unsigned char combine_bytes[]; // H compute values when the block has several groups
    __shared__ C scratch[32];
    const int groups = blockDim.x / threads, group = threadIdx.x / threads, t = threadIdx.x % threads;
    const int64_t first = (int64_t)blockIdx.x * rows_per_block;
    const int64_t last = first + rows_per_block < rows ? first + rows_per_block : rows;

    C dweight[ITEMS][VEC];
#pragma unroll
    for (int i = 0; i < ITEMS; i++)
#pragma unroll
        for (int j = 0; j < VEC; j++) dweight[i][j] = 0;

    const int64_t iterations = (rows_per_block + groups - 1) / groups; // the same for every group
    for (int64_t iteration = 0; iteration < iterations; iteration++) {
        const int64_t row = first + iteration * groups + group;
        const bool active = row < last;
        const C inverse = active ? inverse_rms[row] : C(0);
        const auto *x_row = x + (active ? row : 0) * hidden;
        const auto *dy_row = doutput + (active ? row : 0) * hidden;
        // x, dy and w (re-read from L1 each row: cheaper than holding it in registers) as stored
        raw_vector<D, VEC> xs[ITEMS], dys[ITEMS], ws[ITEMS];
#pragma unroll
        for (int i = 0; i < ITEMS; i++) {
            const int64_t column = ((int64_t)i * threads + t) * VEC;
            const bool inside = active && column < hidden;
            xs[i] = inside ? load_raw<D, VEC>(x_row + column, vectorized) : zero_raw<D, VEC>();
            dys[i] = inside ? load_raw<D, VEC>(dy_row + column, vectorized) : zero_raw<D, VEC>();
            ws[i] = inside ? load_raw<D, VEC>(weight + column, vectorized) : zero_raw<D, VEC>();
        }
        C dot = 0; // sum of g * x_hat over the row, g = dy * w_eff
#pragma unroll
        for (int i = 0; i < ITEMS; i++)
#pragma unroll
            for (int j = 0; j < VEC; j++) {
                const C x_hat = element<D>::load(xs[i].v[j]) * inverse;
                const C dy = element<D>::load(dys[i].v[j]);
                const C w = OFFSET ? C(1) + element<D>::load(ws[i].v[j]) : element<D>::load(ws[i].v[j]);
                dweight[i][j] += dy * x_hat;
                dot += (dy * w) * x_hat;
            }
        dot = group_sum(dot, scratch, threads);
        const C mean_dot = dot / C(hidden);
        // dx = inverse * (g - x_hat * mean_dot), written from the stored x, dy and w so that only
        // those stay live across the reduction (not the f32 x_hat and g of the first pass)
        const C x_scale = inverse * inverse * mean_dot;
        if (active && dinput) {
            auto *dx_row = dinput + row * hidden;
#pragma unroll
            for (int i = 0; i < ITEMS; i++) {
                const int64_t column = ((int64_t)i * threads + t) * VEC;
                if (column >= hidden) continue;
                C dx[VEC];
#pragma unroll
                for (int j = 0; j < VEC; j++) {
                    const C w = OFFSET ? C(1) + element<D>::load(ws[i].v[j]) : element<D>::load(ws[i].v[j]);
                    dx[j] = (inverse * w) * element<D>::load(dys[i].v[j]) - x_scale * element<D>::load(xs[i].v[j]);
                }
                store_values<D, VEC>(dx_row + column, vectorized, dx);
            }
        }
    }
    if (!dweight_partial) return;
    // The groups' column sums into group 0, in group order, then into dweight_partial[b].
    store_block_partial(dweight, reinterpret_cast<C *>(combine_bytes), dweight_partial, hidden, threads, groups, group, t);
}

// ---- The pipelined backward: rows stream through shared-memory stages filled by bulk copies ------
// The register backward stalls its loads while a row is reduced; here a copy engine fills the next
// STAGES - 1 rows' stages meanwhile, so bytes stay in flight without registers. Measured on an H200
// at 16384 x 4096 bf16: 0.124 ms against 0.147 (persistent) and 0.170 (64-row tiles); see
// reports/baselines/h200/README.md.

// Backward with the layout of rms_norm_backward_kernel (so the same bits: the groups of a block
// take consecutive rows, thread t of a group the vectors t, t + threads, ...), the block's rows
// streaming through STAGES stages, each one iteration's rows of x and of dy (one bulk copy each:
// the rows are consecutive). x, dy and w are 16-byte aligned here and hidden a multiple of VEC.
template <parity_dtype D, int VEC, int ITEMS, int STAGES, bool OFFSET, int MIN_BLOCKS = backward_min_blocks<ITEMS>()>
__global__ void __launch_bounds__(backward_max_threads<ITEMS>(), MIN_BLOCKS)
    rms_norm_backward_pipelined_kernel(const typename element<D>::storage *x,           // (N, H)
                                       const typename element<D>::storage *weight,      // (H)
                                       const typename element<D>::storage *doutput,     // (N, H)
                                       const typename element<D>::compute *inverse_rms, // (N)
                                       typename element<D>::storage *dinput,            // (N, H) or NULL
                                       typename element<D>::compute *dweight_partial,   // (blocks, H) or NULL
                                       int64_t rows, int64_t hidden, int threads, int64_t rows_per_block) {
    using S = typename element<D>::storage;
    using C = typename element<D>::compute;
    // (STAGES, 2 [x, dy], groups, H) storage, then H compute values when the block has several groups
    extern __shared__ __align__(16) unsigned char shared_bytes[];
    __shared__ C scratch[32];
    __shared__ uint64_t barriers[STAGES];
    const int groups = blockDim.x / threads, group = threadIdx.x / threads, t = threadIdx.x % threads;
    const int64_t first = (int64_t)blockIdx.x * rows_per_block;
    const int64_t last = first + rows_per_block < rows ? first + rows_per_block : rows;
    const int64_t stage_elements = (int64_t)groups * hidden; // per tensor
    S *stages = reinterpret_cast<S *>(shared_bytes);
    const int64_t iterations = (last - first + groups - 1) / groups; // the same for every thread of the block
    auto fill = [&](int stage, int64_t iteration) { // thread 0 only
        if (iteration >= iterations) return;
        const int64_t row = first + iteration * groups;
        const int64_t count = last - row < groups ? last - row : groups;
        const uint32_t bytes = (uint32_t)(count * hidden * sizeof(S));
        S *x_stage = stages + (int64_t)stage * 2 * stage_elements;
        barrier_arrive_expect(&barriers[stage], 2 * bytes);
        bulk_load(x_stage, x + row * hidden, bytes, &barriers[stage]);
        bulk_load(x_stage + stage_elements, doutput + row * hidden, bytes, &barriers[stage]);
    };
    if (threadIdx.x == 0) {
#pragma unroll
        for (int s = 0; s < STAGES; s++) barrier_init(&barriers[s], 1);
        barrier_init_fence();
#pragma unroll
        for (int s = 0; s < STAGES; s++) fill(s, s);
    }
    __syncthreads();

    raw_vector<D, VEC> ws[ITEMS];
    C dweight[ITEMS][VEC];
#pragma unroll
    for (int i = 0; i < ITEMS; i++) {
        const int64_t column = ((int64_t)i * threads + t) * VEC;
        ws[i] = column < hidden ? load_raw<D, VEC>(weight + column, true) : zero_raw<D, VEC>();
#pragma unroll
        for (int j = 0; j < VEC; j++) dweight[i][j] = 0;
    }

    for (int64_t iteration = 0; iteration < iterations; iteration++) {
        const int stage = (int)(iteration % STAGES);
        const int64_t row = first + iteration * groups + group;
        const bool active = row < last;
        const C inverse = active ? inverse_rms[row] : C(0);
        const S *x_row = stages + (int64_t)stage * 2 * stage_elements + (int64_t)group * hidden;
        const S *dy_row = x_row + stage_elements;
        barrier_wait(&barriers[stage], (uint32_t)((iteration / STAGES) & 1));
        raw_vector<D, VEC> xs[ITEMS], dys[ITEMS];
#pragma unroll
        for (int i = 0; i < ITEMS; i++) {
            const int64_t column = ((int64_t)i * threads + t) * VEC;
            const bool inside = active && column < hidden;
            xs[i] = inside ? load_raw<D, VEC>(x_row + column, true) : zero_raw<D, VEC>();
            dys[i] = inside ? load_raw<D, VEC>(dy_row + column, true) : zero_raw<D, VEC>();
        }
        C dot = 0; // sum of g * x_hat over the row, g = dy * w_eff
#pragma unroll
        for (int i = 0; i < ITEMS; i++)
#pragma unroll
            for (int j = 0; j < VEC; j++) {
                const C x_hat = element<D>::load(xs[i].v[j]) * inverse;
                const C dy = element<D>::load(dys[i].v[j]);
                const C w = OFFSET ? C(1) + element<D>::load(ws[i].v[j]) : element<D>::load(ws[i].v[j]);
                dweight[i][j] += dy * x_hat;
                dot += (dy * w) * x_hat;
            }
        dot = group_sum(dot, scratch, threads); // its barriers: every thread is done reading the stage
        if (threads == 32) __syncthreads();     // (one-warp groups sum without a barrier)
        if (threadIdx.x == 0) fill(stage, iteration + STAGES);
        const C mean_dot = dot / C(hidden);
        const C x_scale = inverse * inverse * mean_dot;
        if (active && dinput) {
            S *dx_row = dinput + row * hidden;
#pragma unroll
            for (int i = 0; i < ITEMS; i++) {
                const int64_t column = ((int64_t)i * threads + t) * VEC;
                if (column >= hidden) continue;
                C dx[VEC];
#pragma unroll
                for (int j = 0; j < VEC; j++) {
                    const C w = OFFSET ? C(1) + element<D>::load(ws[i].v[j]) : element<D>::load(ws[i].v[j]);
                    dx[j] = (inverse * w) * element<D>::load(dys[i].v[j]) - x_scale * element<D>::load(xs[i].v[j]);
                }
                store_values<D, VEC>(dx_row + column, true, dx);
            }
        }
    }
    if (!dweight_partial) return;
    // The groups' column sums into group 0, in group order, then into dweight_partial[b] (as
    // rms_norm_backward_kernel).
    C *combined = reinterpret_cast<C *>(shared_bytes + (size_t)STAGES * 2 * stage_elements * sizeof(S));
    store_block_partial(dweight, combined, dweight_partial, hidden, threads, groups, group, t);
}

} // namespace

namespace {

// Stages of the pipelined backward, and the blocks per multiprocessor its registers allow for rows
// of up to 2 accesses per thread (2: 120 registers, no spills; 3 spilled a little and ran 0.133 ms
// against 0.124 at 16384 x 4096 bf16 on an H200).
constexpr int backward_stages = 3;
constexpr int backward_pipelined_min_blocks = 2;
constexpr size_t pipelined_shared_limit = 160 * 1024; // past this the register kernel runs

// The forward's row groups: like row_layout_for's (wide), except that rows of 257 to 512 vectors
// take 128 threads of 4 accesses rather than 256 of 2 (at 16384 x 4096 bf16 on an H200: 0.0709 ms
// against 0.0747: more loads in flight per thread, a shorter reduction).
const row_layout_choice forward_layouts[] = {{256, 1}, {128, 4}, {256, 4}, {512, 4}, {1024, 4}, {1024, 8}};
constexpr int forward_block_threads = 128; // rows of fewer threads share a block

template <parity_dtype D>
parity_error *launch_forward(const parity_exec *exec, const parity_rms_norm_args *args,
                             typename element<D>::compute *inverse_rms, int64_t rows, int64_t hidden,
                             const row_layout &layout) {
    using S = typename element<D>::storage;
    using C = typename element<D>::compute;
    const int groups = std::max(1, forward_block_threads / layout.threads);
    const unsigned block = (unsigned)(groups * layout.threads);
    const unsigned grid = (unsigned)((rows + groups - 1) / groups);
    const S *x = (const S *)args->input->data, *weight = (const S *)args->weight->data;
    S *y = (S *)args->output->data;
    const bool vectorized = layout.vector > 1 && aligned16(x, weight, y);
    const C eps = (C)args->eps;
    const bool offset = args->variant == PARITY_RMS_NORM_OFFSET;
    return dispatch_layout<full_vector<D>()>(layout, [&](auto vec, auto items) -> parity_error * {
        constexpr int VEC = decltype(vec)::value, ITEMS = decltype(items)::value;
        if (offset)
            rms_norm_forward_kernel<D, VEC, ITEMS, true><<<grid, block, 0, parity_cuda_stream(exec)>>>(
                x, weight, y, inverse_rms, rows, hidden, layout.threads, eps, vectorized);
        else
            rms_norm_forward_kernel<D, VEC, ITEMS, false><<<grid, block, 0, parity_cuda_stream(exec)>>>(
                x, weight, y, inverse_rms, rows, hidden, layout.threads, eps, vectorized);
        PARITY_CUDA_TRY_LAUNCH("rms_norm_forward_kernel");
        return NULL;
    });
}

// The backward's blocks: `rows_per_block` rows each (FIXED_TILES: 64; PERSISTENT: the rows shared
// over every resident block).
inline parity_error *backward_rows_per_block(const void *kernel, int block, size_t shared, int64_t rows, int groups,
                                             parity_rms_norm_cuda_policy policy, int device_index,
                                             int64_t *rows_per_block) {
    *rows_per_block = fixed_tile_rows;
    if (policy != PARITY_RMS_NORM_CUDA_PERSISTENT) return NULL;
    int multiprocessors = 1, per_multiprocessor = 0;
    PARITY_TRY(multiprocessor_count(device_index, &multiprocessors));
    PARITY_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_multiprocessor, kernel, block, shared));
    const int64_t resident = (int64_t)multiprocessors * std::max(1, per_multiprocessor);
    const int64_t wanted = (rows + groups - 1) / groups;
    const int64_t blocks = std::max<int64_t>(1, std::min(resident, wanted));
    *rows_per_block = (rows + blocks - 1) / blocks;
    return NULL;
}

// Both backward kernels hold a row the same way (layout), so the pipelined one (16-byte aligned
// tensors, hidden a multiple of the width, stages that fit) gives the register one's bits.
template <parity_dtype D, int STAGES = backward_stages, int MIN_BLOCKS = backward_pipelined_min_blocks>
parity_error *launch_backward(const parity_exec *exec, const parity_rms_norm_args *args,
                              const typename element<D>::compute *inverse_rms, const parity_rms_norm_grads *grads,
                              int64_t rows, int64_t hidden, const row_layout &layout,
                              parity_rms_norm_cuda_policy policy, bool allow_pipelined = true) {
    using S = typename element<D>::storage;
    using C = typename element<D>::compute;
    const int device_index = args->input->device.index;
    const int groups = std::min(8, std::max(1, 256 / layout.threads));
    const unsigned block = (unsigned)(groups * layout.threads);
    const size_t combine = groups > 1 ? (size_t)hidden * sizeof(C) : 0;
    const S *x = (const S *)args->input->data, *weight = (const S *)args->weight->data;
    const S *dy = (const S *)grads->doutput->data;
    S *dx = grads->dinput ? (S *)grads->dinput->data : nullptr;
    const bool aligned = aligned16(x, weight, dy, dx);
    const bool vectorized = layout.vector > 1 && aligned;
    const bool offset = args->variant == PARITY_RMS_NORM_OFFSET;
    const size_t stages_bytes = (size_t)STAGES * 2 * groups * hidden * sizeof(S);
    const bool pipelined = allow_pipelined && vectorized && stages_bytes + combine <= pipelined_shared_limit;

    return dispatch_layout<full_vector<D>()>(layout, [&](auto vec, auto items) -> parity_error * {
        constexpr int VEC = decltype(vec)::value, ITEMS = decltype(items)::value;
        auto registers = offset ? rms_norm_backward_kernel<D, VEC, ITEMS, true> : rms_norm_backward_kernel<D, VEC, ITEMS, false>;
        constexpr int min_blocks = ITEMS <= 2 && MIN_BLOCKS > 0 ? MIN_BLOCKS : backward_min_blocks<ITEMS>();
        auto streamed = offset ? rms_norm_backward_pipelined_kernel<D, VEC, ITEMS, STAGES, true, min_blocks>
                               : rms_norm_backward_pipelined_kernel<D, VEC, ITEMS, STAGES, false, min_blocks>;
        const size_t shared = pipelined ? stages_bytes + combine : combine;
        if (pipelined)
            PARITY_CUDA_TRY(cudaFuncSetAttribute(streamed, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shared));
        int64_t rows_per_block = 0;
        PARITY_TRY(backward_rows_per_block(pipelined ? (const void *)streamed : (const void *)registers, (int)block,
                                           shared, rows, groups, policy, device_index, &rows_per_block));
        const int64_t blocks = (rows + rows_per_block - 1) / rows_per_block;
        pool_scratch partial;
        if (grads->dweight)
            PARITY_TRY(
                partial.alloc(args->input->device, (size_t)(blocks * hidden) * sizeof(C), parity_cuda_stream(exec)));
        if (pipelined) {
            streamed<<<(unsigned)blocks, block, shared, parity_cuda_stream(exec)>>>(
                x, weight, dy, inverse_rms, dx, partial.as<C>(), rows, hidden, layout.threads, rows_per_block);
            PARITY_CUDA_TRY_LAUNCH("rms_norm_backward_pipelined_kernel");
        } else {
            registers<<<(unsigned)blocks, block, shared, parity_cuda_stream(exec)>>>(
                x, weight, dy, inverse_rms, dx, partial.as<C>(), rows, hidden, layout.threads, rows_per_block,
                vectorized);
            PARITY_CUDA_TRY_LAUNCH("rms_norm_backward_kernel");
        }
        parity_error *error = NULL;
        if (grads->dweight)
            error = sum_partials<D>(exec, partial.as<const C>(), blocks, hidden, (S *)grads->dweight->data);
        return error;
    });
}

parity_error *check_devices(const parity_rms_norm_args *args, const parity_rms_norm_grads *grads, const char *backend) {
    const parity_device device = args->input->device;
    if (device.type != PARITY_DEVICE_CUDA)
        return PARITY_ERROR(PARITY_ERROR_USAGE, "rms_norm: input is on %s; the %s backend runs on cuda",
                            parity_device_type_name(device.type), backend);
    PARITY_TRY(parity_cuda_check_tensor("rms_norm", "input", args->input, device));
    PARITY_TRY(parity_cuda_check_tensor("rms_norm", "weight", args->weight, device));
    PARITY_TRY(parity_cuda_check_tensor("rms_norm", "output", args->output, device));
    if (grads) {
        PARITY_TRY(parity_cuda_check_tensor("rms_norm", "doutput", grads->doutput, device));
        PARITY_TRY(parity_cuda_check_tensor("rms_norm", "dinput", grads->dinput, device));
        PARITY_TRY(parity_cuda_check_tensor("rms_norm", "dweight", grads->dweight, device));
    }
    return NULL;
}

parity_error *layout_of(const parity_rms_norm_args *args, int64_t hidden, bool forward, const char *backend,
                        row_layout *layout) {
    int full_width = (int)(16 / parity_dtype_size(args->input->dtype));
    const bool fits = forward ? row_layout_from(hidden, full_width, forward_layouts, 6, layout)
                              : row_layout_for(hidden, full_width, false, layout);
    if (!fits)
        return PARITY_ERROR(PARITY_ERROR_UNSUPPORTED,
                            "rms_norm: the %s backend holds a row in one block's registers; hidden %lld is too long "
                            "(at most %d elements, or %d when hidden is not a multiple of %d)",
                            backend, (long long)hidden, 8192 * full_width, 8192, full_width);
    return NULL;
}

} // namespace

extern "C" parity_error *parity_rms_norm_cuda_forward(const parity_exec *exec, const parity_rms_norm_args *args,
                                                      parity_saved *saved, const char *backend) {
    int64_t rows, hidden;
    PARITY_TRY(parity_rms_norm_check(args, &rows, &hidden));
    PARITY_TRY(check_devices(args, NULL, backend));
    row_layout layout;
    PARITY_TRY(layout_of(args, hidden, true, backend, &layout));
    const parity_dtype dtype = args->input->dtype;
    parity_tensor *inverse_rms;
    int64_t shape[1] = {rows};
    PARITY_TRY(parity_saved_alloc(saved, &inverse_rms, parity_compute_dtype(dtype), args->input->device, 1, shape));
    if (rows == 0) return NULL;
    PARITY_CUDA_TRY(cudaSetDevice(args->input->device.index));
    return dispatch_float(dtype, "rms_norm", [&](auto tag) -> parity_error * {
        constexpr parity_dtype D = decltype(tag)::value;
        return launch_forward<D>(exec, args, (typename element<D>::compute *)inverse_rms->data, rows, hidden, layout);
    });
}

extern "C" parity_error *parity_rms_norm_cuda_backward(const parity_exec *exec, const parity_rms_norm_args *args,
                                                       const parity_saved *saved, const parity_rms_norm_grads *grads,
                                                       parity_rms_norm_cuda_policy policy, const char *backend) {
    int64_t rows, hidden;
    PARITY_TRY(parity_rms_norm_check(args, &rows, &hidden));
    PARITY_TRY(parity_rms_norm_check_grads(args, grads));
    PARITY_TRY(check_devices(args, grads, backend));
    row_layout layout;
    PARITY_TRY(layout_of(args, hidden, false, backend, &layout));
    const parity_tensor *inverse_rms;
    PARITY_TRY(parity_saved_get(saved, 0, &inverse_rms));
    PARITY_CUDA_TRY(cudaSetDevice(args->input->device.index));
    if (rows == 0) {
        if (grads->dweight)
            PARITY_CUDA_TRY(cudaMemsetAsync(grads->dweight->data, 0, parity_tensor_nbytes(grads->dweight),
                                            parity_cuda_stream(exec)));
        return NULL;
    }
    return dispatch_float(args->input->dtype, "rms_norm", [&](auto tag) -> parity_error * {
        constexpr parity_dtype D = decltype(tag)::value;
        return launch_backward<D>(exec, args, (const typename element<D>::compute *)inverse_rms->data, grads, rows,
                                  hidden, layout, policy);
    });
}
