// swiglu_cuda.h: registration of the CUDA SwiGLU backend "liger_kernel" (ops/swiglu/liger_kernel.cu).
#ifndef PARITY_SWIGLU_CUDA_H
#define PARITY_SWIGLU_CUDA_H

#include "ops/core/error.h"

#ifdef __cplusplus
extern "C" {
#endif

parity_error *parity_swiglu_register_cuda_liger_kernel(void);

#ifdef __cplusplus
}
#endif
#endif
