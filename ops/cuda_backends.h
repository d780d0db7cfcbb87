// cuda_backends.h: registration of every CUDA backend family. Defined in ops/cuda_backends.cu in
// CUDA builds and by ops/cuda_backends_without_cuda.c otherwise (registers nothing: without CUDA
// every cuda value of the vocabulary reports why it is unavailable).
#ifndef PARITY_CUDA_BACKENDS_H
#define PARITY_CUDA_BACKENDS_H

#include "ops/core/error.h"

#ifdef __cplusplus
extern "C" {
#endif

parity_error *parity_register_cuda_backends(void);

#ifdef __cplusplus
}
#endif
#endif
