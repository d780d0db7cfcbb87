// eager.cu: split along the last dimension on the GPU (value "eager" on cuda), the inverse of
// concat: each part's columns of the input are one strided device copy (cudaMemcpy2DAsync on the
// execution context's stream); backward
// writes each dpart into its columns of dinput, and zeros where a part has no gradient. Exact.
#include "ops/core/cuda/exec_stream.cuh"
#include "ops/core/cuda/kernel_math.cuh"

extern "C" {
#include "ops/core/cuda/device_args.h"
#include "ops/builtin_backends.h"
#include "ops/registry.h"
#include "ops/split/split.h"
}

using namespace parity_cuda;

static parity_error *check_devices(const parity_split_args *args) {
    parity_device device = args->input->device;
    PARITY_TRY(parity_cuda_check_tensor("split", "input", args->input, device));
    for (int i = 0; i < args->count; i++) PARITY_TRY(parity_cuda_check_tensor("split", "parts[i]", args->parts[i], device));
    return use_device(device);
}

static parity_error *split_cuda_forward(const parity_exec *exec, const parity_split_args *args, parity_saved *saved) {
    int64_t rows;
    PARITY_TRY(parity_split_check(args, &rows));
    PARITY_TRY(check_devices(args));
    const parity_tensor *input = args->input;
    int64_t width = input->shape[input->ndim - 1], offset = 0;
    size_t element = parity_dtype_size(input->dtype);
    for (int i = 0; i < args->count; i++) {
        int64_t part_width = args->parts[i]->shape[args->parts[i]->ndim - 1];
        if (rows > 0 && part_width > 0)
            PARITY_CUDA_TRY(cudaMemcpy2DAsync(
                args->parts[i]->data, part_width * element, (const char *)input->data + offset * element,
                width * element, part_width * element, rows, cudaMemcpyDeviceToDevice, parity_cuda_stream(exec)));
        offset += part_width;
    }
    return NULL;
}

static parity_error *split_cuda_backward(const parity_exec *exec, const parity_split_args *args,
                                         const parity_saved *saved, const parity_split_grads *grads) {
    int64_t rows;
    PARITY_TRY(parity_split_check(args, &rows));
    PARITY_TRY(parity_split_check_grads(args, grads));
    PARITY_TRY(check_devices(args));
    if (!grads->dinput) return NULL;
    parity_device device = args->input->device;
    PARITY_TRY(parity_cuda_check_tensor("split", "dinput", grads->dinput, device));
    const parity_tensor *input = args->input;
    int64_t width = input->shape[input->ndim - 1], offset = 0;
    size_t element = parity_dtype_size(input->dtype);
    char *dinput = (char *)grads->dinput->data;
    for (int i = 0; i < args->count; i++) {
        int64_t part_width = args->parts[i]->shape[args->parts[i]->ndim - 1];
        if (rows > 0 && part_width > 0) {
            if (grads->dparts[i]) {
                PARITY_TRY(parity_cuda_check_tensor("split", "dparts[i]", grads->dparts[i], device));
                PARITY_CUDA_TRY(cudaMemcpy2DAsync(dinput + offset * element, width * element, grads->dparts[i]->data,
                                                  part_width * element, part_width * element, rows,
                                                  cudaMemcpyDeviceToDevice, parity_cuda_stream(exec)));
            } else {
                PARITY_CUDA_TRY(cudaMemset2DAsync(dinput + offset * element, width * element, 0, part_width * element,
                                                  rows, parity_cuda_stream(exec)));
            }
        }
        offset += part_width;
    }
    return NULL;
}

static const parity_split_kernels split_cuda_kernels = {split_cuda_forward, split_cuda_backward};

PARITY_BACKEND_REGISTRATION(split, eager, cuda) {
    parity_backend backend = {};
    backend.op = PARITY_OP_SPLIT;
    backend.name = "eager";
    backend.device = PARITY_DEVICE_CUDA;
    backend.dtypes = PARITY_FLOAT_DTYPES;
    backend.capabilities = PARITY_CAP_BATCH_INVARIANT | PARITY_CAP_DETERMINISTIC | PARITY_CAP_SEQUENCE_PARALLEL |
                           PARITY_CAP_EXPERT_PARALLEL;
    backend.kernels = &split_cuda_kernels;
    backend.description = "split along the last dimension on the GPU (strided device copies), f64/f32/bf16";
    return parity_registry_add(&backend);
}
