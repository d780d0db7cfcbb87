// eager.cu: L2 normalisation on the GPU (value "eager" on cuda), HF's l2norm with the CPU eager's
// rounding points (ops/l2_norm/l2_norm_math.c), one block per row. PyTorch runs it op by op without
// upcasting, so every intermediate tensor is held in the call's dtype (bf16 in a bf16 run):
//   s = sum(x * x);  r = rsqrt(s + eps);  y = x * r           (1 / sqrt in f64, rounded once)
// Saves r (N) in the call's dtype. Backward (autograd's graph):
//   dr = sum(dy * x);  dt = (-0.5 * dr) * r^3;  dx = dy * r + 2 * (dt * x)
// Row sums run in a fixed tree order (deterministic, independent of the other rows).
#include "ops/core/cuda/exec_stream.cuh"
#include "ops/core/cuda/kernel_math.cuh"

extern "C" {
#include "ops/core/cuda/device_args.h"
#include "ops/l2_norm/l2_norm.h"
#include "ops/builtin_backends.h"
#include "ops/registry.h"
}

using namespace parity_cuda;

static const int l2_threads = 256;

template <parity_dtype D>
__global__ void l2_norm_forward_kernel(const typename scalar<D>::storage *x, // (N, D)
                                       typename scalar<D>::storage *y,       // (N, D)
                                       typename scalar<D>::storage *inverse, // (N)
                                       int64_t rows, int64_t dim, double eps) {
    using C = typename scalar<D>::compute;
    __shared__ C scratch[32];
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const typename scalar<D>::storage *x_row = x + row * dim;
        C partial = 0;
        for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) {
            C value = scalar<D>::load(x_row[i]);
            partial = partial + round_storage<D>(mul_rn(value, value));
        }
        C sum = round_storage<D>(block_sum(partial, scratch));
        C shifted = round_storage<D>(sum + to_compute<D>(eps));
        C inv = stored_f64<D>(1.0 / sqrt((double)shifted));
        if (threadIdx.x == 0) inverse[row] = scalar<D>::store(inv);
        for (int64_t i = threadIdx.x; i < dim; i += blockDim.x)
            y[row * dim + i] = scalar<D>::store(mul_rn(scalar<D>::load(x_row[i]), inv));
    }
}

template <parity_dtype D>
__global__ void l2_norm_backward_kernel(const typename scalar<D>::storage *x,       // (N, D)
                                        const typename scalar<D>::storage *dy,      // (N, D)
                                        const typename scalar<D>::storage *inverse, // (N)
                                        typename scalar<D>::storage *dx,            // (N, D)
                                        int64_t rows, int64_t dim) {
    using C = typename scalar<D>::compute;
    __shared__ C scratch[32];
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        int64_t base = row * dim;
        C inv = scalar<D>::load(inverse[row]);
        C partial = 0;
        for (int64_t i = threadIdx.x; i < dim; i += blockDim.x)
            partial = partial + round_storage<D>(mul_rn(scalar<D>::load(dy[base + i]), scalar<D>::load(x[base + i])));
        C dinverse = round_storage<D>(block_sum(partial, scratch));
        C cube = round_storage<D>(mul_rn(mul_rn(inv, inv), inv));
        C dsum = round_storage<D>(mul_rn(round_storage<D>(mul_rn(C(-0.5), dinverse)), cube));
        for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) {
            C value = scalar<D>::load(x[base + i]);
            C through_product = round_storage<D>(mul_rn(scalar<D>::load(dy[base + i]), inv));
            C through_square = round_storage<D>(mul_rn(C(2), round_storage<D>(mul_rn(dsum, value))));
            dx[base + i] = scalar<D>::store(through_product + through_square);
        }
    }
}

static unsigned row_grid(int64_t rows) { return (unsigned)(rows < 65535 * 4 ? (rows > 0 ? rows : 1) : 65535 * 4); }

static parity_error *check_devices(const parity_l2_norm_args *args) {
    parity_device device = args->input->device;
    PARITY_TRY(parity_cuda_check_tensor("l2_norm", "input", args->input, device));
    PARITY_TRY(parity_cuda_check_tensor("l2_norm", "output", args->output, device));
    return use_device(device);
}

static parity_error *l2_norm_cuda_forward(const parity_exec *exec, const parity_l2_norm_args *args,
                                          parity_saved *saved) {
    int64_t rows, dim;
    PARITY_TRY(parity_l2_norm_check(args, &rows, &dim));
    PARITY_TRY(check_devices(args));
    parity_dtype dtype = args->input->dtype;
    parity_tensor *inverse;
    PARITY_TRY(parity_saved_alloc(saved, &inverse, dtype, args->input->device, PARITY_CUDA_SHAPE(rows)));
    if (rows == 0) return NULL;
    return dispatch_float(dtype, "l2_norm", [&](auto tag) -> parity_error * {
        constexpr parity_dtype D = decltype(tag)::value;
        using T = typename scalar<D>::storage;
        l2_norm_forward_kernel<D><<<row_grid(rows), l2_threads, 0, parity_cuda_stream(exec)>>>(
            (const T *)args->input->data, (T *)args->output->data, (T *)inverse->data, rows, dim, args->eps);
        PARITY_CUDA_TRY_LAUNCH("l2_norm_forward_kernel");
        return NULL;
    });
}

static parity_error *l2_norm_cuda_backward(const parity_exec *exec, const parity_l2_norm_args *args,
                                           const parity_saved *saved, const parity_l2_norm_grads *grads) {
    int64_t rows, dim;
    PARITY_TRY(parity_l2_norm_check(args, &rows, &dim));
    PARITY_TRY(parity_l2_norm_check_grads(args, grads));
    PARITY_TRY(check_devices(args));
    const parity_tensor *inverse;
    PARITY_TRY(parity_saved_get(saved, 0, &inverse));
    if (!grads->dinput || rows == 0) return NULL;
    parity_device device = args->input->device;
    PARITY_TRY(parity_cuda_check_tensor("l2_norm", "doutput", grads->doutput, device));
    PARITY_TRY(parity_cuda_check_tensor("l2_norm", "dinput", grads->dinput, device));
    PARITY_TRY(parity_cuda_check_tensor("l2_norm", "saved inverse norms", inverse, device));
    return dispatch_float(args->input->dtype, "l2_norm", [&](auto tag) -> parity_error * {
        constexpr parity_dtype D = decltype(tag)::value;
        using T = typename scalar<D>::storage;
        l2_norm_backward_kernel<D><<<row_grid(rows), l2_threads, 0, parity_cuda_stream(exec)>>>(
            (const T *)args->input->data, (const T *)grads->doutput->data, (const T *)inverse->data,
            (T *)grads->dinput->data, rows, dim);
        PARITY_CUDA_TRY_LAUNCH("l2_norm_backward_kernel");
        return NULL;
    });
}

static const parity_l2_norm_kernels l2_norm_cuda_kernels = {l2_norm_cuda_forward, l2_norm_cuda_backward};

PARITY_BACKEND_REGISTRATION(l2_norm, eager, cuda) {
    parity_backend backend = {};
    backend.op = PARITY_OP_L2_NORM;
    backend.name = "eager";
    backend.device = PARITY_DEVICE_CUDA;
    backend.dtypes = PARITY_FLOAT_DTYPES;
    backend.capabilities = PARITY_CAP_BATCH_INVARIANT | PARITY_CAP_DETERMINISTIC | PARITY_CAP_SEQUENCE_PARALLEL |
                           PARITY_CAP_EXPERT_PARALLEL;
    backend.kernels = &l2_norm_cuda_kernels;
    backend.description = "L2 normalisation over the last dimension (HF l2norm) on the GPU, f64/f32/bf16";
    return parity_registry_add(&backend);
}
