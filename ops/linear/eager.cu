// eager.cu: the linear layer on the GPU (value "eager" on cuda), as PyTorch's F.linear:
//   y = x W^T + b      the bias is written into y first, then one GEMM with beta = 1 (addmm): the
//                      bias joins the f32 accumulation and the result is rounded once
// Backward (saves nothing):
//   dx = dy W          (N, out) x (out, in)
//   dW = dy^T x        (out, N) x (N, in)
//   db = sum over rows of dy in row order, compute precision, rounded once (ordered_column_sum.cuh)
// GEMMs through ops/core/cuda/blas.h: f64 DGEMM, f32 without TF32, bf16 with f32 accumulation.
#include "ops/core/cuda/exec_stream.cuh"
#include "ops/core/cuda/kernel_math.cuh"
#include "ops/core/cuda/ordered_column_sum.cuh"

#include <type_traits>

extern "C" {
#include "ops/core/cuda/blas.h"
#include "ops/core/cuda/device_args.h"
#include "ops/linear/linear.h"
#include "ops/builtin_backends.h"
#include "ops/registry.h"
}

using namespace parity_cuda;

template <typename T>
__global__ void linear_broadcast_bias_kernel(const T *bias, // (out)
                                             T *y,          // (N, out)
                                             int64_t rows, int64_t out_features) {
    PARITY_CUDA_FOR_EACH(index, rows * out_features) y[index] = bias[index % out_features];
}

// db's terms for bf16: dy (N, out) widened to f32, exactly (phase 1 of ordered_column_sum.cuh; f32 and
// f64 sum dy in place).
template <parity_dtype D>
__global__ void linear_bias_terms_kernel(const typename scalar<D>::storage *dy, // (N, out)
                                         int64_t row0, int64_t count, int64_t out_features, int64_t ld,
                                         typename scalar<D>::compute *terms) {  // (count, ld)
    using C = typename scalar<D>::compute;
    ordered_sum_terms<C>(
        row0, count, out_features, ld,
        [&](int64_t row, int64_t j) { return scalar<D>::load(dy[row * out_features + j]); }, terms);
}

// db = the ordered column sums of dy (rows, out_features), rounded once.
template <parity_dtype D>
static parity_error *linear_bias_gradient(const parity_exec *exec, parity_device device,
                                          const typename scalar<D>::storage *dy, // (N, out)
                                          int64_t rows, int64_t out_features,
                                          typename scalar<D>::storage *dbias) {  // (out)
    using T = typename scalar<D>::storage;
    using C = typename scalar<D>::compute;
    if constexpr (std::is_same<T, C>::value) {
        return ordered_column_sum_of<D>(exec, dy, rows, out_features, dbias);
    } else {
        auto make_terms = [&](int64_t row0, int64_t count, C *terms, int64_t ld) -> parity_error * {
            linear_bias_terms_kernel<D><<<ordered_sum_term_grid(count, out_features), ordered_sum_term_threads, 0,
                                          parity_cuda_stream(exec)>>>(dy, row0, count, out_features, ld, terms);
            PARITY_CUDA_TRY_LAUNCH("linear_bias_terms_kernel");
            return NULL;
        };
        return ordered_column_sum<D>(exec, device, rows, out_features, make_terms, dbias);
    }
}

static parity_error *check_devices(const parity_linear_args *args) {
    parity_device device = args->input->device;
    PARITY_TRY(parity_cuda_check_tensor("linear", "input", args->input, device));
    PARITY_TRY(parity_cuda_check_tensor("linear", "weight", args->weight, device));
    PARITY_TRY(parity_cuda_check_tensor("linear", "bias", args->bias, device));
    PARITY_TRY(parity_cuda_check_tensor("linear", "output", args->output, device));
    return use_device(device);
}

static parity_error *linear_cuda_forward(const parity_exec *exec, const parity_linear_args *args, parity_saved *saved) {
    int64_t rows, in_features, out_features;
    PARITY_TRY(parity_linear_check(args, &rows, &in_features, &out_features));
    PARITY_TRY(check_devices(args));
    if (rows == 0) return NULL;
    parity_dtype dtype = args->input->dtype;
    if (args->bias)
        PARITY_TRY(dispatch_float(dtype, "linear", [&](auto tag) -> parity_error * {
            using T = typename scalar<decltype(tag)::value>::storage;
            linear_broadcast_bias_kernel<T><<<grid_for(rows * out_features), 256, 0, parity_cuda_stream(exec)>>>(
                (const T *)args->bias->data, (T *)args->output->data, rows, out_features);
            PARITY_CUDA_TRY_LAUNCH("linear_broadcast_bias_kernel");
            return NULL;
        }));
    parity_cuda_gemm_desc gemm = parity_cuda_gemm_packed(dtype, 1, rows, out_features, in_features, false, true,
                                                         args->input->data, args->weight->data, args->output->data);
    gemm.beta = args->bias ? 1.0 : 0.0;
    PARITY_TRY_CONTEXT(parity_cuda_gemm(exec, &gemm), "linear forward");
    return NULL;
}

static parity_error *linear_cuda_backward(const parity_exec *exec, const parity_linear_args *args,
                                          const parity_saved *saved, const parity_linear_grads *grads) {
    int64_t rows, in_features, out_features;
    PARITY_TRY(parity_linear_check(args, &rows, &in_features, &out_features));
    PARITY_TRY(parity_linear_check_grads(args, grads));
    PARITY_TRY(check_devices(args));
    parity_device device = args->input->device;
    PARITY_TRY(parity_cuda_check_tensor("linear", "doutput", grads->doutput, device));
    PARITY_TRY(parity_cuda_check_tensor("linear", "dinput", grads->dinput, device));
    PARITY_TRY(parity_cuda_check_tensor("linear", "dweight", grads->dweight, device));
    PARITY_TRY(parity_cuda_check_tensor("linear", "dbias", grads->dbias, device));
    parity_dtype dtype = args->input->dtype;
    if (grads->dinput && rows > 0) {
        parity_cuda_gemm_desc gemm = parity_cuda_gemm_packed(dtype, 1, rows, in_features, out_features, false, false,
                                                             grads->doutput->data, args->weight->data, grads->dinput->data);
        PARITY_TRY_CONTEXT(parity_cuda_gemm(exec, &gemm), "linear backward: dinput");
    }
    if (grads->dweight) {
        parity_cuda_gemm_desc gemm = parity_cuda_gemm_packed(dtype, 1, out_features, in_features, rows, true, false,
                                                             grads->doutput->data, args->input->data, grads->dweight->data);
        PARITY_TRY_CONTEXT(parity_cuda_gemm(exec, &gemm), "linear backward: dweight");
    }
    if (grads->dbias)
        PARITY_TRY(dispatch_float(dtype, "linear", [&](auto tag) -> parity_error * {
            constexpr parity_dtype D = decltype(tag)::value;
            using T = typename scalar<D>::storage;
            return linear_bias_gradient<D>(exec, device, (const T *)grads->doutput->data, rows, out_features,
                                           (T *)grads->dbias->data);
        }));
    return NULL;
}

static const parity_linear_kernels linear_cuda_kernels = {linear_cuda_forward, linear_cuda_backward};

PARITY_BACKEND_REGISTRATION(linear, eager, cuda) {
    parity_backend backend = {};
    backend.op = PARITY_OP_LINEAR;
    backend.name = "eager";
    backend.device = PARITY_DEVICE_CUDA;
    backend.dtypes = PARITY_FLOAT_DTYPES;
    // cuBLAS is bitwise reproducible run to run on one GPU model; its blocking depends on N, so no
    // batch invariance.
    backend.capabilities = PARITY_CAP_DETERMINISTIC | PARITY_CAP_SEQUENCE_PARALLEL | PARITY_CAP_EXPERT_PARALLEL;
    backend.kernels = &linear_cuda_kernels;
    backend.description = "linear layer y = x W^T + b through cuBLAS (bf16 with f32 accumulation), f64/f32/bf16";
    return parity_registry_add(&backend);
}
