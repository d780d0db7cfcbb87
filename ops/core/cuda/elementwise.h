// elementwise.h: device-side tensor helpers behind tensor.c for CUDA tensors (gradient accumulation,
// dtype conversion, fills, sums of squares, sketches), so such work never stages through the host.
// Implemented in ops/core/cuda/elementwise.cu; in a build without CUDA, ops/core/cuda_stub.c answers
// each call with "parity was built without CUDA". Tensors must be contiguous and on one CUDA device. Each call is
// queued on exec's stream (the legacy default stream for a NULL exec, ops/core/exec.h), so later work
// on that stream sees its result.
#ifndef PARITY_CUDA_ELEMENTWISE_H
#define PARITY_CUDA_ELEMENTWISE_H

#include "ops/core/error.h"
#include "ops/core/exec.h"
#include "ops/core/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

// destination += source (same dtype and shape), each sum computed exactly in f64 and rounded once to
// the dtype: bitwise the same as parity_tensor_add_into on the CPU.
parity_error *parity_cuda_add_into(const parity_exec *exec, parity_tensor *destination, const parity_tensor *source);
// destination = source converted to destination's dtype (same shape): float <- float or int with one
// round-to-nearest-even, int64 <-> int32.
parity_error *parity_cuda_convert(const parity_exec *exec, parity_tensor *destination, const parity_tensor *source);
// Every element of a float tensor set to `value` rounded once to its dtype (NaN allowed).
parity_error *parity_cuda_fill(const parity_exec *exec, parity_tensor *tensor, double value);
// *out = sum of the squares of a float tensor's elements, accumulated in f64 in a fixed order (a fixed
// grid of block partials summed on the host in block order): bitwise repeatable for a given numel.
// The partials live in exec's device and host scratch; waits for exec's stream (the result is on the
// host). USAGE error for a NULL exec.
parity_error *parity_cuda_sum_of_squares(const parity_exec *exec, const parity_tensor *tensor, double *out);
// out[j] = the gradient sketch of a float tensor (ops/core/sketch.h) under the signs of `name_hash`,
// accumulated in f64 in the sum of squares' fixed order (block partials, K per block, summed on the
// host in block order): bitwise repeatable for a given numel, the CPU's signs in another order of
// summation. Partials in exec's scratch; waits for exec's stream. USAGE error for a NULL exec.
parity_error *parity_cuda_sketch(const parity_exec *exec, const parity_tensor *tensor, uint64_t name_hash,
                                 double out[PARITY_SKETCH_K]);

#ifdef __cplusplus
}
#endif
#endif
