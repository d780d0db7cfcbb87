// eager.cu: SwiGLU on the GPU (value "eager" on cuda), the CPU eager's math and rounding points
// (ops/swiglu/eager.c, silu.h):
//   s = silu(gate) stored in the activation dtype;  y = s * up stored
// Backward: dup = stored(dy * s), ds = stored(dy * up), dgate = stored(silu_backward(ds, gate)).
// Nothing is saved: s is recomputed from gate. exp runs in f64 and is rounded once to the compute
// type, as the CPU's correctly rounded exp.
#include "ops/core/cuda/exec_stream.cuh"
#include "ops/core/cuda/kernel_math.cuh"
#include "ops/swiglu/silu.cuh"

extern "C" {
#include "ops/core/cuda/device_args.h"
#include "ops/builtin_backends.h"
#include "ops/registry.h"
#include "ops/swiglu/swiglu.h"
}

using namespace parity_cuda;

template <parity_dtype D>
__global__ void swiglu_forward_kernel(const typename scalar<D>::storage *gate, // (count)
                                      const typename scalar<D>::storage *up,   // (count)
                                      typename scalar<D>::storage *y,          // (count)
                                      int64_t count) {
    PARITY_CUDA_FOR_EACH(i, count) {
        auto activation = round_storage<D>(silu_value(scalar<D>::load(gate[i])));
        y[i] = scalar<D>::store(activation * scalar<D>::load(up[i]));
    }
}

template <parity_dtype D>
__global__ void swiglu_backward_kernel(const typename scalar<D>::storage *gate, // (count)
                                       const typename scalar<D>::storage *up,   // (count)
                                       const typename scalar<D>::storage *dy,   // (count)
                                       typename scalar<D>::storage *dgate,      // (count) or NULL
                                       typename scalar<D>::storage *dup,        // (count) or NULL
                                       int64_t count) {
    PARITY_CUDA_FOR_EACH(i, count) {
        auto x = scalar<D>::load(gate[i]), g = scalar<D>::load(dy[i]);
        if (dup) dup[i] = scalar<D>::store(g * round_storage<D>(silu_value(x)));
        if (dgate) {
            auto dactivation = round_storage<D>(g * scalar<D>::load(up[i]));
            dgate[i] = scalar<D>::store(silu_gradient(dactivation, x));
        }
    }
}

static parity_error *check_devices(const parity_swiglu_args *args) {
    parity_device device = args->gate->device;
    PARITY_TRY(parity_cuda_check_tensor("swiglu", "gate", args->gate, device));
    PARITY_TRY(parity_cuda_check_tensor("swiglu", "up", args->up, device));
    PARITY_TRY(parity_cuda_check_tensor("swiglu", "output", args->output, device));
    return use_device(device);
}

static parity_error *swiglu_cuda_forward(const parity_exec *exec, const parity_swiglu_args *args, parity_saved *saved) {
    PARITY_TRY(parity_swiglu_check(args));
    PARITY_TRY(check_devices(args));
    int64_t count = args->gate->numel;
    if (count == 0) return NULL;
    return dispatch_float(args->gate->dtype, "swiglu", [&](auto tag) -> parity_error * {
        constexpr parity_dtype D = decltype(tag)::value;
        using T = typename scalar<D>::storage;
        swiglu_forward_kernel<D><<<grid_for(count), 256, 0, parity_cuda_stream(exec)>>>(
            (const T *)args->gate->data, (const T *)args->up->data, (T *)args->output->data, count);
        PARITY_CUDA_TRY_LAUNCH("swiglu_forward_kernel");
        return NULL;
    });
}

static parity_error *swiglu_cuda_backward(const parity_exec *exec, const parity_swiglu_args *args,
                                          const parity_saved *saved, const parity_swiglu_grads *grads) {
    PARITY_TRY(parity_swiglu_check(args));
    PARITY_TRY(parity_swiglu_check_grads(args, grads));
    PARITY_TRY(check_devices(args));
    parity_device device = args->gate->device;
    PARITY_TRY(parity_cuda_check_tensor("swiglu", "doutput", grads->doutput, device));
    PARITY_TRY(parity_cuda_check_tensor("swiglu", "dgate", grads->dgate, device));
    PARITY_TRY(parity_cuda_check_tensor("swiglu", "dup", grads->dup, device));
    int64_t count = args->gate->numel;
    if (count == 0 || (!grads->dgate && !grads->dup)) return NULL;
    return dispatch_float(args->gate->dtype, "swiglu", [&](auto tag) -> parity_error * {
        constexpr parity_dtype D = decltype(tag)::value;
        using T = typename scalar<D>::storage;
        swiglu_backward_kernel<D><<<grid_for(count), 256, 0, parity_cuda_stream(exec)>>>(
            (const T *)args->gate->data, (const T *)args->up->data, (const T *)grads->doutput->data,
            grads->dgate ? (T *)grads->dgate->data : nullptr, grads->dup ? (T *)grads->dup->data : nullptr, count);
        PARITY_CUDA_TRY_LAUNCH("swiglu_backward_kernel");
        return NULL;
    });
}

static const parity_swiglu_kernels swiglu_cuda_kernels = {swiglu_cuda_forward, swiglu_cuda_backward};

PARITY_BACKEND_REGISTRATION(swiglu, eager, cuda) {
    parity_backend backend = {};
    backend.op = PARITY_OP_SWIGLU;
    backend.name = "eager";
    backend.device = PARITY_DEVICE_CUDA;
    backend.dtypes = PARITY_FLOAT_DTYPES;
    backend.capabilities = PARITY_CAP_BATCH_INVARIANT | PARITY_CAP_DETERMINISTIC | PARITY_CAP_SEQUENCE_PARALLEL |
                           PARITY_CAP_EXPERT_PARALLEL;
    backend.kernels = &swiglu_cuda_kernels;
    backend.description = "SwiGLU silu(gate) * up on the GPU, f64/f32/bf16";
    return parity_registry_add(&backend);
}
