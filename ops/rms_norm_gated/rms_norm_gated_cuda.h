// rms_norm_gated_cuda.h: registration of the CUDA gated RMSNorm backend "fla" (ops/rms_norm_gated/fla.cu).
#ifndef PARITY_RMS_NORM_GATED_CUDA_H
#define PARITY_RMS_NORM_GATED_CUDA_H

#include "ops/core/error.h"

#ifdef __cplusplus
extern "C" {
#endif

parity_error *parity_rms_norm_gated_register_cuda_fla(void);

#ifdef __cplusplus
}
#endif
#endif
