// fla.cu: gated RMSNorm "fla" on CUDA (flash-linear-attention's FusedRMSNormGated, Qwen3.5's
// default): y = (w * x_hat) * silu(gate) in one pass each way instead of eager's separate norm,
// activation and product kernels.
//   forward:  one row group of threads per row (the row layout of fused_rows.cuh: a function of D
//             and the dtype), sum of x^2, then y; saves the row's inverse rms (compute precision).
//   backward: each block walks a range of rows and writes dx and dgate from one read of x, gate
//             and dy, keeping its columns' share of dw in registers; the per-block partials are
//             summed by a second small kernel in a fixed order.
// Rounding follows the eager reference (HF Qwen3_5RMSNormGated): x_hat rounded to the input dtype,
// h = w * x_hat rounded, y = h * silu(float(gate)); backward in the compute precision with dh, g and
// the dw terms rounded where autograd stores them. silu uses the compute type's exp (expf for
// f32/bf16), not the correctly rounded one of the CPU reference.
#include <algorithm>

#include "ops/core/cuda/exec_stream.cuh"
#include "ops/core/cuda/fused_rows.cuh"

extern "C" {
#include "ops/builtin_backends.h"
#include "ops/core/cpu_math.h"
#include "ops/registry.h"
#include "ops/rms_norm_gated/rms_norm_gated.h"
}

using namespace parity_fused;

namespace {

const char backend_name[] = "fla";

template <typename C> __device__ __forceinline__ C sigmoid_of(C x) { return C(1) / (C(1) + exp(-x)); }

// Block-size bounds matching the launches (row layouts of fused_rows.cuh): forward layouts of up to
// 2 accesses run in blocks of <= 256 threads, backward layouts of 1 access in blocks of <= 512.
template <int ITEMS> constexpr int forward_max_threads() { return ITEMS <= 2 ? 256 : 1024; }
template <int ITEMS> constexpr int backward_max_threads() { return ITEMS <= 1 ? 512 : 1024; }

template <parity_dtype D, int VEC, int ITEMS>
__global__ void __launch_bounds__(forward_max_threads<ITEMS>()) rms_norm_gated_forward_kernel(const typename element<D>::storage *x,      // (N, D)
                                              const typename element<D>::storage *gate,   // (N, D)
                                              const typename element<D>::storage *weight, // (D)
                                              typename element<D>::storage *y,            // (N, D)
                                              typename element<D>::compute *inverse_rms,  // (N)
                                              int64_t rows, int64_t hidden, int threads,
                                              typename element<D>::compute eps, bool vectorized) {
    using C = typename element<D>::compute;
    __shared__ C scratch[32];
    const int groups = blockDim.x / threads, group = threadIdx.x / threads, t = threadIdx.x % threads;
    const int64_t row = (int64_t)blockIdx.x * groups + group;
    const bool active = row < rows;
    const int64_t base = (active ? row : 0) * hidden;
    raw_vector<D, VEC> xs[ITEMS];
    C sum_squares = 0;
#pragma unroll
    for (int i = 0; i < ITEMS; i++) {
        const int64_t column = ((int64_t)i * threads + t) * VEC;
        xs[i] = active && column < hidden ? load_raw<D, VEC>(x + base + column, vectorized) : zero_raw<D, VEC>();
#pragma unroll
        for (int j = 0; j < VEC; j++) {
            const C value = element<D>::load(xs[i].v[j]);
            sum_squares += value * value;
        }
    }
    sum_squares = group_sum(sum_squares, scratch, threads);
    const C inverse = C(1) / sqrt(sum_squares / C(hidden) + eps);
    if (!active) return;
    if (t == 0) inverse_rms[row] = inverse;
#pragma unroll
    for (int i = 0; i < ITEMS; i++) {
        const int64_t column = ((int64_t)i * threads + t) * VEC;
        if (column >= hidden) continue;
        C w[VEC], g[VEC], out[VEC];
        load_values<D, VEC>(weight + column, vectorized, w);
        load_values<D, VEC>(gate + base + column, vectorized, g);
#pragma unroll
        for (int j = 0; j < VEC; j++) {
            const C x_hat = round_storage<D>(element<D>::load(xs[i].v[j]) * inverse);
            const C h = round_storage<D>(w[j] * x_hat);
            out[j] = h * (g[j] * sigmoid_of(g[j]));
        }
        store_values<D, VEC>(y + base + column, vectorized, out);
    }
}

// Block b walks rows [b * rows_per_block, (b + 1) * rows_per_block); dweight_partial[b] gets its
// columns' dw (NULL: no dw). dinput / dgate NULL: not written.
template <parity_dtype D, int VEC, int ITEMS>
__global__ void __launch_bounds__(backward_max_threads<ITEMS>()) rms_norm_gated_backward_kernel(const typename element<D>::storage *x,          // (N, D)
                                               const typename element<D>::storage *gate,       // (N, D)
                                               const typename element<D>::storage *weight,     // (D)
                                               const typename element<D>::storage *doutput,    // (N, D)
                                               const typename element<D>::compute *inverse_rms, // (N)
                                               typename element<D>::storage *dinput,           // (N, D) or NULL
                                               typename element<D>::storage *dgate,            // (N, D) or NULL
                                               typename element<D>::compute *dweight_partial,  // (blocks, D) or NULL
                                               int64_t rows, int64_t hidden, int threads, int64_t rows_per_block,
                                               bool vectorized) {
    using C = typename element<D>::compute;
    extern __shared__ unsigned char combine_bytes[];
    __shared__ C scratch[32];
    const int groups = blockDim.x / threads, group = threadIdx.x / threads, t = threadIdx.x % threads;
    const int64_t first = (int64_t)blockIdx.x * rows_per_block;
    const int64_t last = first + rows_per_block < rows ? first + rows_per_block : rows;
    C dweight[ITEMS][VEC];
#pragma unroll
    for (int i = 0; i < ITEMS; i++)
#pragma unroll
        for (int j = 0; j < VEC; j++) dweight[i][j] = 0;

    const int64_t iterations = (rows_per_block + groups - 1) / groups;
    for (int64_t iteration = 0; iteration < iterations; iteration++) {
        const int64_t row = first + iteration * groups + group;
        const bool active = row < last;
        const C inverse = active ? inverse_rms[row] : C(0);
        const int64_t base = (active ? row : 0) * hidden;
        C x_hat[ITEMS][VEC], g[ITEMS][VEC]; // x_hat in the compute precision; g = dloss / dx_hat
        C dot = 0;
#pragma unroll
        for (int i = 0; i < ITEMS; i++) {
            const int64_t column = ((int64_t)i * threads + t) * VEC;
            if (!(active && column < hidden)) {
#pragma unroll
                for (int j = 0; j < VEC; j++) x_hat[i][j] = g[i][j] = 0;
                continue;
            }
            C xv[VEC], gv[VEC], dy[VEC], w[VEC], dgate_out[VEC];
            load_values<D, VEC>(x + base + column, vectorized, xv);
            load_values<D, VEC>(gate + base + column, vectorized, gv);
            load_values<D, VEC>(doutput + base + column, vectorized, dy);
            load_values<D, VEC>(weight + column, vectorized, w);
#pragma unroll
            for (int j = 0; j < VEC; j++) {
                x_hat[i][j] = xv[j] * inverse;
                const C x_hat_stored = round_storage<D>(x_hat[i][j]);
                const C h = round_storage<D>(w[j] * x_hat_stored);
                const C sigmoid = sigmoid_of(gv[j]);
                const C activation = gv[j] * sigmoid;
                const C dh = round_storage<D>(dy[j] * activation);
                const C dactivation = dy[j] * h;
                dgate_out[j] = dactivation * sigmoid * (C(1) + gv[j] * (C(1) - sigmoid));
                dweight[i][j] += round_storage<D>(dh * x_hat_stored);
                g[i][j] = round_storage<D>(dh * w[j]);
                dot += g[i][j] * x_hat[i][j];
            }
            if (dgate) store_values<D, VEC>(dgate + base + column, vectorized, dgate_out);
        }
        dot = group_sum(dot, scratch, threads);
        const C mean_dot = dot / C(hidden);
        if (active && dinput) {
#pragma unroll
            for (int i = 0; i < ITEMS; i++) {
                const int64_t column = ((int64_t)i * threads + t) * VEC;
                if (column >= hidden) continue;
                C dx[VEC];
#pragma unroll
                for (int j = 0; j < VEC; j++) dx[j] = inverse * (g[i][j] - x_hat[i][j] * mean_dot);
                store_values<D, VEC>(dinput + base + column, vectorized, dx);
            }
        }
    }
    if (!dweight_partial) return;
    // The groups' column sums into group 0, in group order, then into dweight_partial[b].
    store_block_partial(dweight, reinterpret_cast<C *>(combine_bytes), dweight_partial, hidden, threads, groups, group, t);
}

parity_error *check_devices(const parity_rms_norm_gated_args *args, const parity_rms_norm_gated_grads *grads) {
    const parity_device device = args->input->device;
    if (device.type != PARITY_DEVICE_CUDA)
        return PARITY_ERROR(PARITY_ERROR_USAGE, "rms_norm_gated: input is on %s; the %s backend runs on cuda",
                            parity_device_type_name(device.type), backend_name);
    PARITY_TRY(parity_cuda_check_tensor("rms_norm_gated", "input", args->input, device));
    PARITY_TRY(parity_cuda_check_tensor("rms_norm_gated", "gate", args->gate, device));
    PARITY_TRY(parity_cuda_check_tensor("rms_norm_gated", "weight", args->weight, device));
    PARITY_TRY(parity_cuda_check_tensor("rms_norm_gated", "output", args->output, device));
    if (grads) {
        PARITY_TRY(parity_cuda_check_tensor("rms_norm_gated", "doutput", grads->doutput, device));
        PARITY_TRY(parity_cuda_check_tensor("rms_norm_gated", "dinput", grads->dinput, device));
        PARITY_TRY(parity_cuda_check_tensor("rms_norm_gated", "dgate", grads->dgate, device));
        PARITY_TRY(parity_cuda_check_tensor("rms_norm_gated", "dweight", grads->dweight, device));
    }
    return NULL;
}

parity_error *layout_of(parity_dtype dtype, int64_t hidden, bool backward, row_layout *layout) {
    int full_width = (int)(16 / parity_dtype_size(dtype));
    if (!row_layout_for(hidden, full_width, backward, layout))
        return PARITY_ERROR(PARITY_ERROR_UNSUPPORTED,
                            "rms_norm_gated: the %s backend holds a row in one block's registers; D %lld is too long",
                            backend_name, (long long)hidden);
    return NULL;
}

parity_error *forward(const parity_exec *exec, const parity_rms_norm_gated_args *args, parity_saved *saved) {
    int64_t rows, hidden;
    PARITY_TRY(parity_rms_norm_gated_check(args, &rows, &hidden));
    PARITY_TRY(check_devices(args, NULL));
    row_layout layout;
    PARITY_TRY(layout_of(args->input->dtype, hidden, false, &layout));
    parity_tensor *inverse_rms;
    int64_t shape[1] = {rows};
    PARITY_TRY(parity_saved_alloc(saved, &inverse_rms, parity_compute_dtype(args->input->dtype), args->input->device, 1,
                                  shape));
    if (rows == 0) return NULL;
    PARITY_CUDA_TRY(cudaSetDevice(args->input->device.index));
    return dispatch_float(args->input->dtype, "rms_norm_gated", [&](auto tag) -> parity_error * {
        constexpr parity_dtype D = decltype(tag)::value;
        using S = typename element<D>::storage;
        using C = typename element<D>::compute;
        const int groups = std::max(1, 256 / layout.threads);
        const unsigned block = (unsigned)(groups * layout.threads), grid = (unsigned)((rows + groups - 1) / groups);
        const bool vectorized = layout.vector > 1 && aligned16(args->input->data, args->gate->data, args->weight->data,
                                                               args->output->data);
        return dispatch_layout<full_vector<D>()>(layout, [&](auto vec, auto items) -> parity_error * {
            constexpr int VEC = decltype(vec)::value, ITEMS = decltype(items)::value;
            rms_norm_gated_forward_kernel<D, VEC, ITEMS><<<grid, block, 0, parity_cuda_stream(exec)>>>(
                (const S *)args->input->data, (const S *)args->gate->data, (const S *)args->weight->data,
                (S *)args->output->data, (C *)inverse_rms->data, rows, hidden, layout.threads, (C)args->eps,
                vectorized);
            PARITY_CUDA_TRY_LAUNCH("rms_norm_gated_forward_kernel");
            return NULL;
        });
    });
}

parity_error *backward(const parity_exec *exec, const parity_rms_norm_gated_args *args, const parity_saved *saved,
                       const parity_rms_norm_gated_grads *grads) {
    int64_t rows, hidden;
    PARITY_TRY(parity_rms_norm_gated_check(args, &rows, &hidden));
    PARITY_TRY(parity_rms_norm_gated_check_grads(args, grads));
    PARITY_TRY(check_devices(args, grads));
    row_layout layout;
    PARITY_TRY(layout_of(args->input->dtype, hidden, true, &layout));
    const parity_tensor *inverse_rms;
    PARITY_TRY(parity_saved_get(saved, 0, &inverse_rms));
    const int device_index = args->input->device.index;
    PARITY_CUDA_TRY(cudaSetDevice(device_index));
    if (rows == 0) {
        if (grads->dweight)
            PARITY_CUDA_TRY(cudaMemsetAsync(grads->dweight->data, 0, parity_tensor_nbytes(grads->dweight),
                                            parity_cuda_stream(exec)));
        return NULL;
    }
    int multiprocessors = 1;
    PARITY_TRY(multiprocessor_count(device_index, &multiprocessors));
    return dispatch_float(args->input->dtype, "rms_norm_gated", [&](auto tag) -> parity_error * {
        constexpr parity_dtype D = decltype(tag)::value;
        using S = typename element<D>::storage;
        using C = typename element<D>::compute;
        const int groups = std::min(8, std::max(1, 512 / layout.threads));
        const unsigned block = (unsigned)(groups * layout.threads);
        const size_t shared = groups > 1 ? (size_t)hidden * sizeof(C) : 0;
        const bool vectorized =
            layout.vector > 1 && aligned16(args->input->data, args->gate->data, args->weight->data, grads->doutput->data,
                                           grads->dinput ? grads->dinput->data : nullptr,
                                           grads->dgate ? grads->dgate->data : nullptr);
        return dispatch_layout<full_vector<D>()>(layout, [&](auto vec, auto items) -> parity_error * {
            constexpr int VEC = decltype(vec)::value, ITEMS = decltype(items)::value;
            auto kernel = rms_norm_gated_backward_kernel<D, VEC, ITEMS>;
            int per_multiprocessor = 0;
            PARITY_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_multiprocessor, kernel, (int)block, shared));
            const int64_t resident = (int64_t)multiprocessors * std::max(1, per_multiprocessor);
            const int64_t wanted = std::max<int64_t>(1, std::min(resident, (rows + groups - 1) / groups));
            const int64_t rows_per_block = (rows + wanted - 1) / wanted;
            const int64_t blocks = (rows + rows_per_block - 1) / rows_per_block;
            pool_scratch partial;
            if (grads->dweight)
                PARITY_TRY(partial.alloc(args->input->device, (size_t)(blocks * hidden) * sizeof(C),
                                         parity_cuda_stream(exec)));
            kernel<<<(unsigned)blocks, block, shared, parity_cuda_stream(exec)>>>(
                (const S *)args->input->data, (const S *)args->gate->data, (const S *)args->weight->data,
                (const S *)grads->doutput->data, (const C *)inverse_rms->data,
                grads->dinput ? (S *)grads->dinput->data : nullptr, grads->dgate ? (S *)grads->dgate->data : nullptr,
                partial.as<C>(), rows, hidden, layout.threads, rows_per_block, vectorized);
            PARITY_CUDA_TRY_LAUNCH("rms_norm_gated_backward_kernel");
            parity_error *error = NULL;
            if (grads->dweight)
                error = sum_partials<D>(exec, partial.as<const C>(), blocks, hidden, (S *)grads->dweight->data);
            return error;
        });
    });
}

const parity_rms_norm_gated_kernels kernels = {forward, backward};

} // namespace

PARITY_BACKEND_REGISTRATION(rms_norm_gated, fla, cuda) {
    parity_backend backend = {};
    backend.op = PARITY_OP_RMS_NORM_GATED;
    backend.name = backend_name;
    backend.device = PARITY_DEVICE_CUDA;
    backend.dtypes = PARITY_FLOAT_DTYPES;
    backend.capabilities = PARITY_CAP_DETERMINISTIC | PARITY_CAP_SEQUENCE_PARALLEL | PARITY_CAP_EXPERT_PARALLEL;
    backend.kernels = &kernels;
    backend.description = "fused gated RMSNorm (w * x_hat * silu(gate)), one pass each way, f64/f32/bf16";
    return parity_registry_add(&backend);
}
