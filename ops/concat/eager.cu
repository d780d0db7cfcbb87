// eager.cu: concatenation along the last dimension on the GPU (value "eager" on cuda), as
// torch.cat(dim=-1): each part's (N, D_i) block is one strided device copy (cudaMemcpy2DAsync on the
// execution context's stream) into its columns of the output; backward copies the columns of dy back
// into each dpart. Exact in every dtype.
#include "ops/core/cuda/exec_stream.cuh"
#include "ops/core/cuda/kernel_math.cuh"

extern "C" {
#include "ops/concat/concat.h"
#include "ops/core/cuda/device_args.h"
#include "ops/builtin_backends.h"
#include "ops/registry.h"
}

using namespace parity_cuda;

// rows x width elements from columns [source_offset, +width) of a (rows, source_width) matrix into
// columns [destination_offset, +width) of a (rows, destination_width) matrix.
static parity_error *copy_columns(const parity_exec *exec, void *destination, int64_t destination_width,
                                  int64_t destination_offset, const void *source, int64_t source_width,
                                  int64_t source_offset, int64_t width, int64_t rows, size_t element) {
    if (rows == 0 || width == 0) return NULL;
    PARITY_CUDA_TRY(cudaMemcpy2DAsync((char *)destination + destination_offset * element, destination_width * element,
                                      (const char *)source + source_offset * element, source_width * element,
                                      width * element, rows, cudaMemcpyDeviceToDevice, parity_cuda_stream(exec)));
    return NULL;
}

static parity_error *check_devices(const parity_concat_args *args) {
    parity_device device = args->output->device;
    for (int i = 0; i < args->count; i++) PARITY_TRY(parity_cuda_check_tensor("concat", "parts[i]", args->parts[i], device));
    PARITY_TRY(parity_cuda_check_tensor("concat", "output", args->output, device));
    return use_device(device);
}

static parity_error *concat_cuda_forward(const parity_exec *exec, const parity_concat_args *args, parity_saved *saved) {
    int64_t rows;
    PARITY_TRY(parity_concat_check(args, &rows));
    PARITY_TRY(check_devices(args));
    const parity_tensor *output = args->output;
    int64_t width = output->shape[output->ndim - 1], offset = 0;
    size_t element = parity_dtype_size(output->dtype);
    for (int i = 0; i < args->count; i++) {
        int64_t part_width = args->parts[i]->shape[args->parts[i]->ndim - 1];
        PARITY_TRY(copy_columns(exec, output->data, width, offset, args->parts[i]->data, part_width, 0, part_width,
                                rows, element));
        offset += part_width;
    }
    return NULL;
}

static parity_error *concat_cuda_backward(const parity_exec *exec, const parity_concat_args *args,
                                          const parity_saved *saved, const parity_concat_grads *grads) {
    int64_t rows;
    PARITY_TRY(parity_concat_check(args, &rows));
    PARITY_TRY(parity_concat_check_grads(args, grads));
    PARITY_TRY(check_devices(args));
    parity_device device = args->output->device;
    PARITY_TRY(parity_cuda_check_tensor("concat", "doutput", grads->doutput, device));
    const parity_tensor *output = args->output;
    int64_t width = output->shape[output->ndim - 1], offset = 0;
    size_t element = parity_dtype_size(output->dtype);
    for (int i = 0; i < args->count; i++) {
        int64_t part_width = args->parts[i]->shape[args->parts[i]->ndim - 1];
        if (grads->dparts[i]) {
            PARITY_TRY(parity_cuda_check_tensor("concat", "dparts[i]", grads->dparts[i], device));
            PARITY_TRY(copy_columns(exec, grads->dparts[i]->data, part_width, 0, grads->doutput->data, width, offset,
                                    part_width, rows, element));
        }
        offset += part_width;
    }
    return NULL;
}

static const parity_concat_kernels concat_cuda_kernels = {concat_cuda_forward, concat_cuda_backward};

PARITY_BACKEND_REGISTRATION(concat, eager, cuda) {
    parity_backend backend = {};
    backend.op = PARITY_OP_CONCAT;
    backend.name = "eager";
    backend.device = PARITY_DEVICE_CUDA;
    backend.dtypes = PARITY_FLOAT_DTYPES;
    backend.capabilities = PARITY_CAP_BATCH_INVARIANT | PARITY_CAP_DETERMINISTIC | PARITY_CAP_SEQUENCE_PARALLEL |
                           PARITY_CAP_EXPERT_PARALLEL;
    backend.kernels = &concat_cuda_kernels;
    backend.description = "concatenation along the last dimension on the GPU (strided device copies), f64/f32/bf16";
    return parity_registry_add(&backend);
}
