// eager.cu: one head broadcast to H heads on the GPU (value "eager" on cuda), as torch expand +
// contiguous: y[n, h, :] = x[n, 0, :], exact copies. Backward sums the heads' gradients in head
// order in the compute precision (f32 for bf16) and rounds once, one thread per (n, i).
#include "ops/core/cuda/exec_stream.cuh"
#include "ops/core/cuda/kernel_math.cuh"

extern "C" {
#include "ops/broadcast_heads/broadcast_heads.h"
#include "ops/core/cuda/device_args.h"
#include "ops/builtin_backends.h"
#include "ops/registry.h"
}

using namespace parity_cuda;

template <typename T>
__global__ void broadcast_heads_forward_kernel(const T *x, // (N, 1, D)
                                               T *y,       // (N, H, D)
                                               int64_t rows, int64_t heads, int64_t head_dim) {
    PARITY_CUDA_FOR_EACH(index, rows * heads * head_dim) {
        int64_t i = index % head_dim, row = index / (heads * head_dim);
        y[index] = x[row * head_dim + i];
    }
}

template <parity_dtype D>
__global__ void broadcast_heads_backward_kernel(const typename scalar<D>::storage *dy, // (N, H, D)
                                                typename scalar<D>::storage *dx,       // (N, 1, D)
                                                int64_t rows, int64_t heads, int64_t head_dim) {
    PARITY_CUDA_FOR_EACH(index, rows * head_dim) {
        int64_t i = index % head_dim, row = index / head_dim;
        typename scalar<D>::compute sum = 0;
        for (int64_t head = 0; head < heads; head++) sum = sum + scalar<D>::load(dy[(row * heads + head) * head_dim + i]);
        dx[index] = scalar<D>::store(sum);
    }
}

static parity_error *check_devices(const parity_broadcast_heads_args *args) {
    parity_device device = args->input->device;
    PARITY_TRY(parity_cuda_check_tensor("broadcast_heads", "input", args->input, device));
    PARITY_TRY(parity_cuda_check_tensor("broadcast_heads", "output", args->output, device));
    return use_device(device);
}

static parity_error *broadcast_heads_cuda_forward(const parity_exec *exec, const parity_broadcast_heads_args *args,
                                                  parity_saved *saved) {
    int64_t rows, heads, head_dim;
    PARITY_TRY(parity_broadcast_heads_check(args, &rows, &heads, &head_dim));
    PARITY_TRY(check_devices(args));
    int64_t count = rows * heads * head_dim;
    if (count == 0) return NULL;
    return dispatch_float(args->input->dtype, "broadcast_heads", [&](auto tag) -> parity_error * {
        using T = typename scalar<decltype(tag)::value>::storage;
        broadcast_heads_forward_kernel<T><<<grid_for(count), 256, 0, parity_cuda_stream(exec)>>>(
            (const T *)args->input->data, (T *)args->output->data, rows, heads, head_dim);
        PARITY_CUDA_TRY_LAUNCH("broadcast_heads_forward_kernel");
        return NULL;
    });
}

static parity_error *broadcast_heads_cuda_backward(const parity_exec *exec, const parity_broadcast_heads_args *args,
                                                   const parity_saved *saved,
                                                   const parity_broadcast_heads_grads *grads) {
    int64_t rows, heads, head_dim;
    PARITY_TRY(parity_broadcast_heads_check(args, &rows, &heads, &head_dim));
    PARITY_TRY(parity_broadcast_heads_check_grads(args, grads));
    PARITY_TRY(check_devices(args));
    if (!grads->dinput) return NULL;
    parity_device device = args->input->device;
    PARITY_TRY(parity_cuda_check_tensor("broadcast_heads", "doutput", grads->doutput, device));
    PARITY_TRY(parity_cuda_check_tensor("broadcast_heads", "dinput", grads->dinput, device));
    int64_t count = rows * head_dim;
    if (count == 0) return NULL;
    return dispatch_float(args->input->dtype, "broadcast_heads", [&](auto tag) -> parity_error * {
        constexpr parity_dtype D = decltype(tag)::value;
        using T = typename scalar<D>::storage;
        broadcast_heads_backward_kernel<D><<<grid_for(count), 256, 0, parity_cuda_stream(exec)>>>(
            (const T *)grads->doutput->data, (T *)grads->dinput->data, rows, heads, head_dim);
        PARITY_CUDA_TRY_LAUNCH("broadcast_heads_backward_kernel");
        return NULL;
    });
}

static const parity_broadcast_heads_kernels broadcast_heads_cuda_kernels = {broadcast_heads_cuda_forward,
                                                                            broadcast_heads_cuda_backward};

PARITY_BACKEND_REGISTRATION(broadcast_heads, eager, cuda) {
    parity_backend backend = {};
    backend.op = PARITY_OP_BROADCAST_HEADS;
    backend.name = "eager";
    backend.device = PARITY_DEVICE_CUDA;
    backend.dtypes = PARITY_FLOAT_DTYPES;
    backend.capabilities = PARITY_CAP_BATCH_INVARIANT | PARITY_CAP_DETERMINISTIC | PARITY_CAP_SEQUENCE_PARALLEL |
                           PARITY_CAP_EXPERT_PARALLEL;
    backend.kernels = &broadcast_heads_cuda_kernels;
    backend.description = "broadcast of one head to H heads (MLA k_pe) on the GPU, f64/f32/bf16";
    return parity_registry_add(&backend);
}
