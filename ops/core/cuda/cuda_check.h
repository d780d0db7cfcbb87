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

// After a kernel launch: reports launch-configuration errors immediately, naming the kernel
// (`kernel_name`, a string: "rms_norm_forward_kernel").
#define PARITY_CUDA_TRY_LAUNCH(kernel_name)                                                         \
    do {                                                                                            \
        cudaError_t parity_cuda_status_ = cudaGetLastError();                                       \
        if (parity_cuda_status_ != cudaSuccess)                                                     \
            return PARITY_ERROR(PARITY_ERROR_DEVICE, "CUDA launch of %s failed: %s (%s)", kernel_name, \
                                cudaGetErrorString(parity_cuda_status_), cudaGetErrorName(parity_cuda_status_)); \
    } while (0)

#endif
