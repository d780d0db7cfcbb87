// exec_stream.cuh: an execution context's stream as the cudaStream_t a launch takes,
//   kernel<<<grid, block, shared_bytes, parity_cuda_stream(exec)>>>(...)
// (the legacy default stream for a NULL exec, ops/core/exec.h), and the zero-fill and copy that are
// part of a kernel's work, queued on that stream. For .cu files only.
#ifndef PARITY_CUDA_EXEC_STREAM_CUH
#define PARITY_CUDA_EXEC_STREAM_CUH

#include <cuda_runtime.h>

#include "ops/core/cuda/cuda_check.h"

extern "C" {
#include "ops/core/exec.h"
#include "ops/core/tensor.h"
}

inline cudaStream_t parity_cuda_stream(const parity_exec *exec) { return (cudaStream_t)parity_exec_stream(exec); }

// Zeroes a contiguous CUDA tensor on exec's stream.
inline parity_error *parity_cuda_zero_on(const parity_exec *exec, parity_tensor *tensor) {
    if (!parity_tensor_is_contiguous(tensor))
        return PARITY_ERROR(PARITY_ERROR_SHAPE, "zero-fill of a non-contiguous CUDA tensor");
    PARITY_CUDA_TRY(cudaMemsetAsync(tensor->data, 0, parity_tensor_nbytes(tensor), parity_cuda_stream(exec)));
    return NULL;
}

// destination = source (contiguous CUDA tensors of one dtype and shape) on exec's stream.
inline parity_error *parity_cuda_copy_on(const parity_exec *exec, parity_tensor *destination, const parity_tensor *source) {
    char a[200], b[200];
    if (destination->dtype != source->dtype || !parity_tensor_same_shape(destination, source) ||
        !parity_tensor_is_contiguous(destination) || !parity_tensor_is_contiguous(source))
        return PARITY_ERROR(PARITY_ERROR_SHAPE, "device copy from %s into %s: needs one dtype and shape, contiguous",
                            parity_tensor_describe(source, a, sizeof a), parity_tensor_describe(destination, b, sizeof b));
    PARITY_CUDA_TRY(cudaMemcpyAsync(destination->data, source->data, parity_tensor_nbytes(source), cudaMemcpyDeviceToDevice,
                                    parity_cuda_stream(exec)));
    return NULL;
}

#endif
