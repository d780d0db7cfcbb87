// eager.cu: RMSNorm on the GPU (value "eager" on cuda), the CPU eager's math and rounding points
// (ops/rms_norm/eager.c, rms_statistics.c), one block per row:
//   inv = rsqrt(mean(x^2) + eps)      squares and their sum in the compute precision (f32 for bf16),
//                                     mean + eps and 1 / sqrt evaluated in f64 and rounded once
//   x_hat = x * inv
//   standard: y = w * round_to_input_dtype(x_hat);   offset: y = x_hat * (1 + w)
// Saves inv (N) in the compute precision. Backward, with g = dy * w_eff:
//   dx = inv * (g - x_hat * mean(g * x_hat))           one block per row
//   dw = sum over rows of dy * x_hat, in row order     (deterministic; ops/core/cuda/ordered_column_sum.cuh)
// Block sums run in a fixed tree order: deterministic and independent of the other rows.
#include "ops/core/cuda/exec_stream.cuh"
#include "ops/core/cuda/kernel_math.cuh"
#include "ops/core/cuda/ordered_column_sum.cuh"
#include "ops/rms_norm/rms_statistics.cuh"

extern "C" {
#include "ops/core/cpu_math.h"
#include "ops/core/cuda/device_args.h"
#include "ops/builtin_backends.h"
#include "ops/registry.h"
#include "ops/rms_norm/rms_norm.h"
}

using namespace parity_cuda;

template <parity_dtype D>
__device__ __forceinline__ typename scalar<D>::compute effective_weight(typename scalar<D>::storage w, bool offset) {
    using C = typename scalar<D>::compute;
    C value = scalar<D>::load(w);
    return offset ? C(1) + value : value;
}

template <parity_dtype D>
__global__ void rms_norm_forward_kernel(const typename scalar<D>::storage *x, // (N, H)
                                        const typename scalar<D>::storage *w, // (H)
                                        typename scalar<D>::storage *y,       // (N, H)
                                        typename scalar<D>::compute *inverse, // (N)
                                        int64_t rows, int64_t hidden, double eps, bool offset) {
    using C = typename scalar<D>::compute;
    __shared__ C scratch[32];
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const typename scalar<D>::storage *x_row = x + row * hidden;
        C inv = rms_inverse_row<D>(x_row, hidden, eps, scratch);
        if (threadIdx.x == 0) inverse[row] = inv;
        for (int64_t i = threadIdx.x; i < hidden; i += blockDim.x) {
            C x_hat = mul_rn(scalar<D>::load(x_row[i]), inv);
            C value = offset ? mul_rn(x_hat, effective_weight<D>(w[i], true))
                             : mul_rn(round_storage<D>(x_hat), scalar<D>::load(w[i]));
            y[row * hidden + i] = scalar<D>::store(value);
        }
    }
}

template <parity_dtype D>
__global__ void rms_norm_input_gradient_kernel(const typename scalar<D>::storage *x,       // (N, H)
                                               const typename scalar<D>::storage *w,       // (H)
                                               const typename scalar<D>::storage *dy,      // (N, H)
                                               const typename scalar<D>::compute *inverse, // (N)
                                               typename scalar<D>::storage *dx,            // (N, H)
                                               int64_t rows, int64_t hidden, bool offset) {
    using C = typename scalar<D>::compute;
    __shared__ C scratch[32];
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        auto g_of = [&](int64_t i) -> C {
            return mul_rn(scalar<D>::load(dy[row * hidden + i]), effective_weight<D>(w[i], offset));
        };
        rms_input_gradient_row<D>(x + row * hidden, hidden, inverse[row], g_of, dx + row * hidden, scratch);
    }
}

// dw's terms dy * x_hat for rows row0 .. row0 + count - 1 (phase 1 of ordered_column_sum.cuh).
template <parity_dtype D>
__global__ void rms_norm_weight_terms_kernel(const typename scalar<D>::storage *x,       // (N, H)
                                             const typename scalar<D>::storage *dy,      // (N, H)
                                             const typename scalar<D>::compute *inverse, // (N)
                                             int64_t row0, int64_t count, int64_t hidden, int64_t ld,
                                             typename scalar<D>::compute *terms) {       // (count, ld)
    using C = typename scalar<D>::compute;
    ordered_sum_terms<C>(
        row0, count, hidden, ld,
        [&](int64_t row, int64_t i) {
            C x_hat = mul_rn(scalar<D>::load(x[row * hidden + i]), inverse[row]);
            return mul_rn(scalar<D>::load(dy[row * hidden + i]), x_hat);
        },
        terms);
}

static parity_error *check_devices(const parity_rms_norm_args *args) {
    parity_device device = args->input->device;
    PARITY_TRY(parity_cuda_check_tensor("rms_norm", "input", args->input, device));
    PARITY_TRY(parity_cuda_check_tensor("rms_norm", "weight", args->weight, device));
    PARITY_TRY(parity_cuda_check_tensor("rms_norm", "output", args->output, device));
    return use_device(device);
}

static parity_error *rms_norm_cuda_forward(const parity_exec *exec, const parity_rms_norm_args *args,
                                           parity_saved *saved) {
    int64_t rows, hidden;
    PARITY_TRY(parity_rms_norm_check(args, &rows, &hidden));
    PARITY_TRY(check_devices(args));
    parity_dtype dtype = args->input->dtype;
    parity_tensor *inverse;
    PARITY_TRY(parity_saved_alloc(saved, &inverse, parity_compute_dtype(dtype), args->input->device, PARITY_CUDA_SHAPE(rows)));
    if (rows == 0 || hidden == 0) return NULL;
    bool offset = args->variant == PARITY_RMS_NORM_OFFSET;
    return dispatch_float(dtype, "rms_norm", [&](auto tag) -> parity_error * {
        constexpr parity_dtype D = decltype(tag)::value;
        using T = typename scalar<D>::storage;
        using C = typename scalar<D>::compute;
        rms_norm_forward_kernel<D><<<rms_row_grid(rows), rms_row_threads, 0, parity_cuda_stream(exec)>>>(
            (const T *)args->input->data, (const T *)args->weight->data, (T *)args->output->data, (C *)inverse->data,
            rows, hidden, args->eps, offset);
        PARITY_CUDA_TRY_LAUNCH("rms_norm_forward_kernel");
        return NULL;
    });
}

static parity_error *rms_norm_cuda_backward(const parity_exec *exec, const parity_rms_norm_args *args,
                                            const parity_saved *saved, const parity_rms_norm_grads *grads) {
    int64_t rows, hidden;
    PARITY_TRY(parity_rms_norm_check(args, &rows, &hidden));
    PARITY_TRY(parity_rms_norm_check_grads(args, grads));
    PARITY_TRY(check_devices(args));
    parity_device device = args->input->device;
    PARITY_TRY(parity_cuda_check_tensor("rms_norm", "doutput", grads->doutput, device));
    PARITY_TRY(parity_cuda_check_tensor("rms_norm", "dinput", grads->dinput, device));
    PARITY_TRY(parity_cuda_check_tensor("rms_norm", "dweight", grads->dweight, device));
    const parity_tensor *inverse;
    PARITY_TRY(parity_saved_get(saved, 0, &inverse));
    PARITY_TRY(parity_cuda_check_tensor("rms_norm", "saved inverse rms", inverse, device));
    bool offset = args->variant == PARITY_RMS_NORM_OFFSET;
    return dispatch_float(args->input->dtype, "rms_norm", [&](auto tag) -> parity_error * {
        constexpr parity_dtype D = decltype(tag)::value;
        using T = typename scalar<D>::storage;
        using C = typename scalar<D>::compute;
        const T *x = (const T *)args->input->data, *dy = (const T *)grads->doutput->data;
        if (grads->dinput && rows > 0 && hidden > 0) {
            rms_norm_input_gradient_kernel<D><<<rms_row_grid(rows), rms_row_threads, 0, parity_cuda_stream(exec)>>>(
                x, (const T *)args->weight->data, dy, (const C *)inverse->data, (T *)grads->dinput->data, rows, hidden,
                offset);
            PARITY_CUDA_TRY_LAUNCH("rms_norm_input_gradient_kernel");
        }
        if (grads->dweight && hidden > 0) {
            const C *inv = (const C *)inverse->data;
            auto make_terms = [&](int64_t row0, int64_t count, C *terms, int64_t ld) -> parity_error * {
                rms_norm_weight_terms_kernel<D>
                    <<<ordered_sum_term_grid(count, hidden), ordered_sum_term_threads, 0, parity_cuda_stream(exec)>>>(
                        x, dy, inv, row0, count, hidden, ld, terms);
                PARITY_CUDA_TRY_LAUNCH("rms_norm_weight_terms_kernel");
                return NULL;
            };
            PARITY_TRY(ordered_column_sum<D>(exec, device, rows, hidden, make_terms, (T *)grads->dweight->data));
        }
        return NULL;
    });
}

static const parity_rms_norm_kernels rms_norm_cuda_kernels = {rms_norm_cuda_forward, rms_norm_cuda_backward};

PARITY_BACKEND_REGISTRATION(rms_norm, eager, cuda) {
    parity_backend backend = {};
    backend.op = PARITY_OP_RMS_NORM;
    backend.name = "eager";
    backend.device = PARITY_DEVICE_CUDA;
    backend.dtypes = PARITY_FLOAT_DTYPES;
    backend.capabilities = PARITY_CAP_OFFSET_WEIGHT | PARITY_CAP_BATCH_INVARIANT | PARITY_CAP_DETERMINISTIC |
                           PARITY_CAP_SEQUENCE_PARALLEL | PARITY_CAP_EXPERT_PARALLEL;
    backend.kernels = &rms_norm_cuda_kernels;
    backend.description = "RMSNorm (standard and (1 + w) offset) on the GPU, f64/f32/bf16";
    return parity_registry_add(&backend);
}
