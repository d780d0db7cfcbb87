// eager.cu: the sigmoid gate on the GPU (value "eager" on cuda), the CPU eager's math and rounding
// points (ops/sigmoid_gate/eager.c):
//   s = sigmoid(gate) computed in f64, held in the storage dtype;  y = x * s rounded once
// Backward, one thread per gate element (a broadcast gate (N, 1) sums its D products in order):
//   dx = dy * s;  ds = sum of stored(dy * x), rounded to storage;  dgate = stored(stored(ds * stored(1 - s)) * s)
#include "ops/core/cuda/exec_stream.cuh"
#include "ops/core/cuda/kernel_math.cuh"

extern "C" {
#include "ops/core/cuda/device_args.h"
#include "ops/builtin_backends.h"
#include "ops/registry.h"
#include "ops/sigmoid_gate/sigmoid_gate.h"
}

using namespace parity_cuda;

// sigmoid(g) as a tensor of the dtype holds it: 1 / (1 + exp(-g)) in f64, rounded to compute, then storage.
template <parity_dtype D> __device__ __forceinline__ typename scalar<D>::compute stored_sigmoid(typename scalar<D>::compute g) {
    return stored_f64<D>(1.0 / (1.0 + exp(-(double)g)));
}

template <parity_dtype D>
__global__ void sigmoid_gate_forward_kernel(const typename scalar<D>::storage *x,    // (N * D)
                                            const typename scalar<D>::storage *gate, // (N * D / group)
                                            typename scalar<D>::storage *y,          // (N * D)
                                            int64_t count, int64_t group) {
    PARITY_CUDA_FOR_EACH(i, count) {
        auto s = stored_sigmoid<D>(scalar<D>::load(gate[i / group]));
        y[i] = scalar<D>::store(scalar<D>::load(x[i]) * s);
    }
}

template <parity_dtype D>
__global__ void sigmoid_gate_backward_kernel(const typename scalar<D>::storage *x,    // (N * D)
                                             const typename scalar<D>::storage *gate, // (gates)
                                             const typename scalar<D>::storage *dy,   // (N * D)
                                             typename scalar<D>::storage *dx,         // (N * D) or NULL
                                             typename scalar<D>::storage *dgate,      // (gates) or NULL
                                             int64_t gates, int64_t group) {
    using C = typename scalar<D>::compute;
    PARITY_CUDA_FOR_EACH(g, gates) {
        C s = stored_sigmoid<D>(scalar<D>::load(gate[g]));
        C ds = 0;
        for (int64_t i = g * group; i < (g + 1) * group; i++) {
            C upstream = scalar<D>::load(dy[i]);
            if (dx) dx[i] = scalar<D>::store(upstream * s);
            ds = ds + round_storage<D>(upstream * scalar<D>::load(x[i]));
        }
        if (dgate) {
            ds = round_storage<D>(ds);
            C one_minus_s = round_storage<D>(C(1) - s);
            dgate[g] = scalar<D>::store(round_storage<D>(ds * one_minus_s) * s);
        }
    }
}

static parity_error *check_devices(const parity_sigmoid_gate_args *args) {
    parity_device device = args->input->device;
    PARITY_TRY(parity_cuda_check_tensor("sigmoid_gate", "input", args->input, device));
    PARITY_TRY(parity_cuda_check_tensor("sigmoid_gate", "gate", args->gate, device));
    PARITY_TRY(parity_cuda_check_tensor("sigmoid_gate", "output", args->output, device));
    return use_device(device);
}

static parity_error *sigmoid_gate_cuda_forward(const parity_exec *exec, const parity_sigmoid_gate_args *args,
                                               parity_saved *saved) {
    int64_t rows, width, group;
    PARITY_TRY(parity_sigmoid_gate_check(args, &rows, &width, &group));
    PARITY_TRY(check_devices(args));
    int64_t count = rows * width;
    if (count == 0) return NULL;
    return dispatch_float(args->input->dtype, "sigmoid_gate", [&](auto tag) -> parity_error * {
        constexpr parity_dtype D = decltype(tag)::value;
        using T = typename scalar<D>::storage;
        sigmoid_gate_forward_kernel<D><<<grid_for(count), 256, 0, parity_cuda_stream(exec)>>>(
            (const T *)args->input->data, (const T *)args->gate->data, (T *)args->output->data, count, group);
        PARITY_CUDA_TRY_LAUNCH("sigmoid_gate_forward_kernel");
        return NULL;
    });
}

static parity_error *sigmoid_gate_cuda_backward(const parity_exec *exec, const parity_sigmoid_gate_args *args,
                                                const parity_saved *saved, const parity_sigmoid_gate_grads *grads) {
    int64_t rows, width, group;
    PARITY_TRY(parity_sigmoid_gate_check(args, &rows, &width, &group));
    PARITY_TRY(parity_sigmoid_gate_check_grads(args, grads));
    PARITY_TRY(check_devices(args));
    parity_device device = args->input->device;
    PARITY_TRY(parity_cuda_check_tensor("sigmoid_gate", "doutput", grads->doutput, device));
    PARITY_TRY(parity_cuda_check_tensor("sigmoid_gate", "dinput", grads->dinput, device));
    PARITY_TRY(parity_cuda_check_tensor("sigmoid_gate", "dgate", grads->dgate, device));
    int64_t gates = rows * width / group;
    if (gates == 0 || (!grads->dinput && !grads->dgate)) return NULL;
    return dispatch_float(args->input->dtype, "sigmoid_gate", [&](auto tag) -> parity_error * {
        constexpr parity_dtype D = decltype(tag)::value;
        using T = typename scalar<D>::storage;
        sigmoid_gate_backward_kernel<D><<<grid_for(gates), 256, 0, parity_cuda_stream(exec)>>>(
            (const T *)args->input->data, (const T *)args->gate->data, (const T *)grads->doutput->data,
            grads->dinput ? (T *)grads->dinput->data : nullptr, grads->dgate ? (T *)grads->dgate->data : nullptr, gates,
            group);
        PARITY_CUDA_TRY_LAUNCH("sigmoid_gate_backward_kernel");
        return NULL;
    });
}

static const parity_sigmoid_gate_kernels sigmoid_gate_cuda_kernels = {sigmoid_gate_cuda_forward,
                                                                      sigmoid_gate_cuda_backward};

PARITY_BACKEND_REGISTRATION(sigmoid_gate, eager, cuda) {
    parity_backend backend = {};
    backend.op = PARITY_OP_SIGMOID_GATE;
    backend.name = "eager";
    backend.device = PARITY_DEVICE_CUDA;
    backend.dtypes = PARITY_FLOAT_DTYPES;
    backend.capabilities = PARITY_CAP_BATCH_INVARIANT | PARITY_CAP_DETERMINISTIC | PARITY_CAP_SEQUENCE_PARALLEL |
                           PARITY_CAP_EXPERT_PARALLEL;
    backend.kernels = &sigmoid_gate_cuda_kernels;
    backend.description = "x * sigmoid(gate) on the GPU, gate of x's shape or broadcast over the last dim, f64/f32/bf16";
    return parity_registry_add(&backend);
}
