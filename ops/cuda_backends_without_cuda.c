// cuda_backends_without_cuda.c: the CPU-only build registers no CUDA backend.
#include "ops/cuda_backends.h"

parity_error *parity_register_cuda_backends(void) { return NULL; }
