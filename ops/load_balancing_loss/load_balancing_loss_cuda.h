// load_balancing_loss_cuda.h: registration of the CUDA load-balancing-loss backend "triton"
// (ops/load_balancing_loss/triton.cu).
#ifndef PARITY_LOAD_BALANCING_LOSS_CUDA_H
#define PARITY_LOAD_BALANCING_LOSS_CUDA_H

#include "ops/core/error.h"

#ifdef __cplusplus
extern "C" {
#endif

parity_error *parity_load_balancing_loss_register_cuda_triton(void);

#ifdef __cplusplus
}
#endif
#endif
