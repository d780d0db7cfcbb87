// cuda_check.h: turns CUDA runtime failures into parity errors with file:line and the call's text.
// For .cu files only.
#ifndef PARITY_CUDA_CHECK_H
#define PARITY_CUDA_CHECK_H

#include <cuda_runtime.h>

#include "ops/core/error.h"

#define PARITY_CUDA_TRY(call)                                                                       \
    do {                                                                                            \
        cudaError_t parity_cuda_status_ = (call);                                                   \
        if (parity_cuda_status_ != cudaSuccess)                                                     \
            return PARITY_ERROR(PARITY_ERROR_DEVICE, "CUDA call %s failed: %s (%s)", #call,        \
                                cudaGetErrorString(parity_cuda_status_), cudaGetErrorName(parity_cuda_status_)); \
    } while (0)

// After a kernel launch: reports launch-configuration errors immediately.
#define PARITY_CUDA_TRY_LAUNCH(kernel_name) PARITY_CUDA_TRY(cudaGetLastError())

#endif
