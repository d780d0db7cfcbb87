// eager.cu: the residual add on the GPU (value "eager" on cuda), the CPU eager's math:
//   y = a + b          in the compute precision (f32 for bf16), rounded once to the storage dtype
// Backward (saves nothing): da = db = dy, device copies. All on the execution context's stream.
#include "ops/core/cuda/exec_stream.cuh"
#include "ops/core/cuda/kernel_math.cuh"

extern "C" {
#include "ops/add/add.h"
#include "ops/core/cuda/device_args.h"
#include "ops/builtin_backends.h"
#include "ops/registry.h"
}

using namespace parity_cuda;

template <parity_dtype D>
__global__ void add_forward_kernel(const typename scalar<D>::storage *a, // (count)
                                   const typename scalar<D>::storage *b, // (count)
                                   typename scalar<D>::storage *y,       // (count)
                                   int64_t count) {
    PARITY_CUDA_FOR_EACH(i, count) y[i] = scalar<D>::store(scalar<D>::load(a[i]) + scalar<D>::load(b[i]));
}

static parity_error *check_devices(const parity_add_args *args) {
    parity_device device = args->a->device;
    PARITY_TRY(parity_cuda_check_tensor("add", "a", args->a, device));
    PARITY_TRY(parity_cuda_check_tensor("add", "b", args->b, device));
    PARITY_TRY(parity_cuda_check_tensor("add", "output", args->output, device));
    return use_device(device);
}

static parity_error *add_cuda_forward(const parity_exec *exec, const parity_add_args *args, parity_saved *saved) {
    PARITY_TRY(parity_add_check(args));
    PARITY_TRY(check_devices(args));
    int64_t count = args->a->numel;
    if (count == 0) return NULL;
    return dispatch_float(args->a->dtype, "add", [&](auto tag) -> parity_error * {
        constexpr parity_dtype D = decltype(tag)::value;
        using T = typename scalar<D>::storage;
        add_forward_kernel<D><<<grid_for(count), 256, 0, parity_cuda_stream(exec)>>>(
            (const T *)args->a->data, (const T *)args->b->data, (T *)args->output->data, count);
        PARITY_CUDA_TRY_LAUNCH("add_forward_kernel");
        return NULL;
    });
}

static parity_error *add_cuda_backward(const parity_exec *exec, const parity_add_args *args, const parity_saved *saved,
                                       const parity_add_grads *grads) {
    PARITY_TRY(parity_add_check(args));
    PARITY_TRY(parity_add_check_grads(args, grads));
    PARITY_TRY(check_devices(args));
    parity_device device = args->a->device;
    PARITY_TRY(parity_cuda_check_tensor("add", "doutput", grads->doutput, device));
    PARITY_TRY(parity_cuda_check_tensor("add", "da", grads->da, device));
    PARITY_TRY(parity_cuda_check_tensor("add", "db", grads->db, device));
    if (grads->da) PARITY_TRY(parity_cuda_copy_on(exec, grads->da, grads->doutput));
    if (grads->db) PARITY_TRY(parity_cuda_copy_on(exec, grads->db, grads->doutput));
    return NULL;
}

static const parity_add_kernels add_cuda_kernels = {add_cuda_forward, add_cuda_backward};

PARITY_BACKEND_REGISTRATION(add, eager, cuda) {
    parity_backend backend = {};
    backend.op = PARITY_OP_ADD;
    backend.name = "eager";
    backend.device = PARITY_DEVICE_CUDA;
    backend.dtypes = PARITY_FLOAT_DTYPES;
    backend.capabilities = PARITY_CAP_BATCH_INVARIANT | PARITY_CAP_DETERMINISTIC | PARITY_CAP_SEQUENCE_PARALLEL |
                           PARITY_CAP_EXPERT_PARALLEL;
    backend.kernels = &add_cuda_kernels;
    backend.description = "residual add y = a + b on the GPU, f64/f32/bf16";
    return parity_registry_add(&backend);
}
