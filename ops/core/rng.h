// rng.h: filling tensors from named Philox streams. Weights drawn from (seed, HF parameter name)
// are the same on every device and in every dtype's rounding of the same f64 values.
#ifndef PARITY_RNG_H
#define PARITY_RNG_H

#include <stdint.h>

#include "ops/core/error.h"
#include "ops/core/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum parity_rng_distribution {
    PARITY_RNG_UNIFORM, // parameter_a = low, parameter_b = high; bit-identical on CPU and GPU
    PARITY_RNG_NORMAL,  // parameter_a = mean, parameter_b = std; Box-Muller from words (2k, 2k+1);
                        // GPU log/cos may differ from the host's by an ulp of f64 before rounding
} parity_rng_distribution;

typedef struct parity_rng_stream {
    uint64_t seed;
    uint64_t name_hash;
} parity_rng_stream;

parity_rng_stream parity_rng_stream_named(uint64_t seed, const char *name);
// Raw 32-bit words [offset, offset + count) of the stream.
void parity_rng_words(parity_rng_stream stream, uint64_t offset, uint32_t *out, int64_t count);
// Fills a contiguous float tensor (CPU or CUDA): element i takes the i-th value of the stream, computed
// in f64 and rounded once to the tensor's dtype. A CUDA fill runs on exec's stream and returns once it
// is done (exec NULL outside a step: the legacy default stream, ops/core/exec.h).
parity_error *parity_rng_fill(const parity_exec *exec, parity_tensor *tensor, parity_rng_stream stream,
                              parity_rng_distribution distribution, double parameter_a, double parameter_b);
// Rounding-level noise: moves each element of a contiguous float tensor (CPU or CUDA) by one unit in
// the last place of its own dtype, toward or away from zero, or leaves it, with probabilities 1/4,
// 1/4, 1/2 drawn from the stream (the same elements move on every device). `parity run` uses it to
// measure how far eager itself moves under rounding-size changes (harness/tolerance.h). A CUDA tensor is
// nudged on exec's stream.
parity_error *parity_rng_nudge_ulps(const parity_exec *exec, parity_tensor *tensor, parity_rng_stream stream);
// Fills an int64/int32 tensor with integers uniform in [0, bound) (token ids, routing tests).
parity_error *parity_rng_fill_integers(parity_tensor *tensor, parity_rng_stream stream, int64_t bound);

// The GPU side (ops/core/cuda/rng_fill.cu); declared here for rng.c. parity_rng_words_cuda writes the
// words into device memory on exec's device and stream and returns once they are there.
parity_error *parity_rng_fill_cuda(const parity_exec *exec, parity_tensor *tensor, parity_rng_stream stream,
                                   parity_rng_distribution distribution, double parameter_a, double parameter_b);
parity_error *parity_rng_nudge_ulps_cuda(const parity_exec *exec, parity_tensor *tensor, parity_rng_stream stream);
parity_error *parity_rng_words_cuda(const parity_exec *exec, parity_rng_stream stream, uint64_t offset,
                                    uint32_t *device_out, int64_t count);

#ifdef __cplusplus
}
#endif
#endif
