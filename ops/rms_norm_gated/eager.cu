// eager.cu: the gated RMSNorm on the GPU (value "eager" on cuda), the CPU eager's math and rounding
// points (ops/rms_norm_gated/eager.c), one block per row:
//   inv = rsqrt(mean(x^2) + eps);  x_hat = round_to_input_dtype(x * inv)
//   h = stored(w * x_hat);  y = h * silu(gate) rounded once
// Saves inv (N) in the compute precision. Backward, as autograd stores its tensors:
//   dh = stored(dy * silu(gate)),  dgate = silu_backward(dy * h, gate),  g = stored(dh * w)
//   dx = inv * (g - x_hat' * mean(g * x_hat')), x_hat' = x * inv unrounded  (one block per row)
//   dw = sum over rows of stored(dh * x_hat), in row order           (ops/core/cuda/ordered_column_sum.cuh)
#include "ops/core/cuda/exec_stream.cuh"
#include "ops/core/cuda/kernel_math.cuh"
#include "ops/core/cuda/ordered_column_sum.cuh"
#include "ops/rms_norm/rms_statistics.cuh"
#include "ops/swiglu/silu.cuh"

extern "C" {
#include "ops/core/cpu_math.h"
#include "ops/core/cuda/device_args.h"
#include "ops/builtin_backends.h"
#include "ops/registry.h"
#include "ops/rms_norm_gated/rms_norm_gated.h"
}

using namespace parity_cuda;

// One element's forward intermediates: x_hat (input dtype) and h = w * x_hat (input dtype).
template <parity_dtype D>
__device__ __forceinline__ typename scalar<D>::compute gated_h(typename scalar<D>::storage x,
                                                               typename scalar<D>::storage w,
                                                               typename scalar<D>::compute inv,
                                                               typename scalar<D>::compute *x_hat) {
    *x_hat = round_storage<D>(mul_rn(scalar<D>::load(x), inv));
    return round_storage<D>(mul_rn(scalar<D>::load(w), *x_hat));
}

template <parity_dtype D>
__global__ void rms_norm_gated_forward_kernel(const typename scalar<D>::storage *x,    // (N, D)
                                              const typename scalar<D>::storage *gate, // (N, D)
                                              const typename scalar<D>::storage *w,    // (D)
                                              typename scalar<D>::storage *y,          // (N, D)
                                              typename scalar<D>::compute *inverse,    // (N)
                                              int64_t rows, int64_t hidden, double eps) {
    using C = typename scalar<D>::compute;
    __shared__ C scratch[32];
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        int64_t base = row * hidden;
        C inv = rms_inverse_row<D>(x + base, hidden, eps, scratch);
        if (threadIdx.x == 0) inverse[row] = inv;
        for (int64_t i = threadIdx.x; i < hidden; i += blockDim.x) {
            C x_hat;
            C h = gated_h<D>(x[base + i], w[i], inv, &x_hat);
            y[base + i] = scalar<D>::store(mul_rn(h, silu_value(scalar<D>::load(gate[base + i]))));
        }
    }
}

template <parity_dtype D>
__global__ void rms_norm_gated_input_gradient_kernel(const typename scalar<D>::storage *x,       // (N, D)
                                                     const typename scalar<D>::storage *gate,    // (N, D)
                                                     const typename scalar<D>::storage *w,       // (D)
                                                     const typename scalar<D>::storage *dy,      // (N, D)
                                                     const typename scalar<D>::compute *inverse, // (N)
                                                     typename scalar<D>::storage *dx,            // (N, D) or NULL
                                                     typename scalar<D>::storage *dgate,         // (N, D) or NULL
                                                     int64_t rows, int64_t hidden) {
    using C = typename scalar<D>::compute;
    __shared__ C scratch[32];
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        int64_t base = row * hidden;
        C inv = inverse[row];
        if (dgate)
            for (int64_t i = threadIdx.x; i < hidden; i += blockDim.x) {
                C x_hat;
                C h = gated_h<D>(x[base + i], w[i], inv, &x_hat);
                C dactivation = mul_rn(scalar<D>::load(dy[base + i]), h);
                dgate[base + i] = scalar<D>::store(silu_gradient(dactivation, scalar<D>::load(gate[base + i])));
            }
        if (dx) {
            auto g_of = [&](int64_t i) -> C {
                C dh = round_storage<D>(mul_rn(scalar<D>::load(dy[base + i]), silu_value(scalar<D>::load(gate[base + i]))));
                return round_storage<D>(mul_rn(dh, scalar<D>::load(w[i])));
            };
            rms_input_gradient_row<D>(x + base, hidden, inv, g_of, dx + base, scratch);
        }
    }
}

// dw's terms stored(dh * x_hat) for rows row0 .. row0 + count - 1 (phase 1 of ordered_column_sum.cuh).
template <parity_dtype D>
__global__ void rms_norm_gated_weight_terms_kernel(const typename scalar<D>::storage *x,       // (N, D)
                                                   const typename scalar<D>::storage *gate,    // (N, D)
                                                   const typename scalar<D>::storage *dy,      // (N, D)
                                                   const typename scalar<D>::compute *inverse, // (N)
                                                   int64_t row0, int64_t count, int64_t hidden, int64_t ld,
                                                   typename scalar<D>::compute *terms) {       // (count, ld)
    using C = typename scalar<D>::compute;
    ordered_sum_terms<C>(
        row0, count, hidden, ld,
        [&](int64_t row, int64_t i) {
            int64_t at = row * hidden + i;
            C x_hat = round_storage<D>(mul_rn(scalar<D>::load(x[at]), inverse[row]));
            C dh = round_storage<D>(mul_rn(scalar<D>::load(dy[at]), silu_value(scalar<D>::load(gate[at]))));
            return round_storage<D>(mul_rn(dh, x_hat));
        },
        terms);
}

static parity_error *check_devices(const parity_rms_norm_gated_args *args) {
    parity_device device = args->input->device;
    PARITY_TRY(parity_cuda_check_tensor("rms_norm_gated", "input", args->input, device));
    PARITY_TRY(parity_cuda_check_tensor("rms_norm_gated", "gate", args->gate, device));
    PARITY_TRY(parity_cuda_check_tensor("rms_norm_gated", "weight", args->weight, device));
    PARITY_TRY(parity_cuda_check_tensor("rms_norm_gated", "output", args->output, device));
    return use_device(device);
}

static parity_error *rms_norm_gated_cuda_forward(const parity_exec *exec, const parity_rms_norm_gated_args *args,
                                                 parity_saved *saved) {
    int64_t rows, hidden;
    PARITY_TRY(parity_rms_norm_gated_check(args, &rows, &hidden));
    PARITY_TRY(check_devices(args));
    parity_dtype dtype = args->input->dtype;
    parity_tensor *inverse;
    PARITY_TRY(parity_saved_alloc(saved, &inverse, parity_compute_dtype(dtype), args->input->device, PARITY_CUDA_SHAPE(rows)));
    if (rows == 0) return NULL;
    return dispatch_float(dtype, "rms_norm_gated", [&](auto tag) -> parity_error * {
        constexpr parity_dtype D = decltype(tag)::value;
        using T = typename scalar<D>::storage;
        using C = typename scalar<D>::compute;
        rms_norm_gated_forward_kernel<D><<<rms_row_grid(rows), rms_row_threads, 0, parity_cuda_stream(exec)>>>(
            (const T *)args->input->data, (const T *)args->gate->data, (const T *)args->weight->data,
            (T *)args->output->data, (C *)inverse->data, rows, hidden, args->eps);
        PARITY_CUDA_TRY_LAUNCH("rms_norm_gated_forward_kernel");
        return NULL;
    });
}

static parity_error *rms_norm_gated_cuda_backward(const parity_exec *exec, const parity_rms_norm_gated_args *args,
                                                  const parity_saved *saved, const parity_rms_norm_gated_grads *grads) {
    int64_t rows, hidden;
    PARITY_TRY(parity_rms_norm_gated_check(args, &rows, &hidden));
    PARITY_TRY(parity_rms_norm_gated_check_grads(args, grads));
    PARITY_TRY(check_devices(args));
    parity_device device = args->input->device;
    PARITY_TRY(parity_cuda_check_tensor("rms_norm_gated", "doutput", grads->doutput, device));
    PARITY_TRY(parity_cuda_check_tensor("rms_norm_gated", "dinput", grads->dinput, device));
    PARITY_TRY(parity_cuda_check_tensor("rms_norm_gated", "dgate", grads->dgate, device));
    PARITY_TRY(parity_cuda_check_tensor("rms_norm_gated", "dweight", grads->dweight, device));
    const parity_tensor *inverse;
    PARITY_TRY(parity_saved_get(saved, 0, &inverse));
    PARITY_TRY(parity_cuda_check_tensor("rms_norm_gated", "saved inverse rms", inverse, device));
    return dispatch_float(args->input->dtype, "rms_norm_gated", [&](auto tag) -> parity_error * {
        constexpr parity_dtype D = decltype(tag)::value;
        using T = typename scalar<D>::storage;
        using C = typename scalar<D>::compute;
        const T *x = (const T *)args->input->data, *gate = (const T *)args->gate->data, *dy = (const T *)grads->doutput->data;
        if ((grads->dinput || grads->dgate) && rows > 0) {
            rms_norm_gated_input_gradient_kernel<D>
                <<<rms_row_grid(rows), rms_row_threads, 0, parity_cuda_stream(exec)>>>(
                    x, gate, (const T *)args->weight->data, dy, (const C *)inverse->data,
                    grads->dinput ? (T *)grads->dinput->data : nullptr,
                    grads->dgate ? (T *)grads->dgate->data : nullptr, rows, hidden);
            PARITY_CUDA_TRY_LAUNCH("rms_norm_gated_input_gradient_kernel");
        }
        if (grads->dweight) {
            const C *inv = (const C *)inverse->data;
            auto make_terms = [&](int64_t row0, int64_t count, C *terms, int64_t ld) -> parity_error * {
                rms_norm_gated_weight_terms_kernel<D>
                    <<<ordered_sum_term_grid(count, hidden), ordered_sum_term_threads, 0, parity_cuda_stream(exec)>>>(
                        x, gate, dy, inv, row0, count, hidden, ld, terms);
                PARITY_CUDA_TRY_LAUNCH("rms_norm_gated_weight_terms_kernel");
                return NULL;
            };
            PARITY_TRY(ordered_column_sum<D>(exec, device, rows, hidden, make_terms, (T *)grads->dweight->data));
        }
        return NULL;
    });
}

static const parity_rms_norm_gated_kernels rms_norm_gated_cuda_kernels = {rms_norm_gated_cuda_forward,
                                                                          rms_norm_gated_cuda_backward};

PARITY_BACKEND_REGISTRATION(rms_norm_gated, eager, cuda) {
    parity_backend backend = {};
    backend.op = PARITY_OP_RMS_NORM_GATED;
    backend.name = "eager";
    backend.device = PARITY_DEVICE_CUDA;
    backend.dtypes = PARITY_FLOAT_DTYPES;
    backend.capabilities = PARITY_CAP_BATCH_INVARIANT | PARITY_CAP_DETERMINISTIC | PARITY_CAP_SEQUENCE_PARALLEL |
                           PARITY_CAP_EXPERT_PARALLEL;
    backend.kernels = &rms_norm_gated_cuda_kernels;
    backend.description = "gated RMSNorm (Qwen3.5: w * x_hat * silu(gate)) on the GPU, f64/f32/bf16";
    return parity_registry_add(&backend);
}
