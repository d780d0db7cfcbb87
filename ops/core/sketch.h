// sketch.h: the gradient sketch, host and device. A sketch of a tensor x (n elements, any float
// dtype) is PARITY_SKETCH_K fixed random projections
//     s_j = sum_i x_i * r_j(i),   r_j(i) = +1 or -1 (Rademacher), j = 0 .. K-1,
// accumulated in f64. The signs of element i are the low K bits of word i of the Philox stream
// (PARITY_SKETCH_SEED, FNV-1a hash of the tensor's name) (ops/core/philox.h): bit j set means
// r_j(i) = -1. So the signs depend only on (name, i), never on the device, dtype or layout, and the CPU
// and CUDA reductions (ops/core/tensor.h, ops/core/cuda/elementwise.h) see the same ones; only their
// order of summation differs. E[s_j^2] = |x|^2: a sketch component is in the units of the norm, but
// unlike the norm it changes sign with x and moves when x turns, which is what lets `parity run` see
// a gradient's direction (models/step_result.h, harness/tolerance.h).
#ifndef PARITY_SKETCH_H
#define PARITY_SKETCH_H

#include <stdint.h>

#include "ops/core/philox.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PARITY_SKETCH_K 4
#define PARITY_SKETCH_SEED 0x736b65746368ull // "sketch" in ASCII: a key no weight or batch stream uses

#define PARITY_SKETCH_SIGN_MASK ((1u << PARITY_SKETCH_K) - 1u)

// The K sign bits of element i of a tensor whose name hashes to name_hash (bit j: r_j(i) = -1).
PARITY_HOST_DEVICE uint32_t parity_sketch_signs(uint64_t name_hash, uint64_t i) {
    return parity_philox_word(PARITY_SKETCH_SEED, name_hash, i) & PARITY_SKETCH_SIGN_MASK;
}

// The words of elements 4 b .. 4 b + 3 (one Philox block; word k & PARITY_SKETCH_SIGN_MASK is
// parity_sketch_signs(name_hash, 4 b + k)): a quarter of the Philox work for a loop that walks
// the elements in order.
PARITY_HOST_DEVICE parity_philox_block parity_sketch_sign_block(uint64_t name_hash, uint64_t b) {
    return parity_philox_block_at(PARITY_SKETCH_SEED, name_hash, b);
}

// sums[j] += r_j(i) * value for every j, given element i's sign bits: the one accumulation step both
// devices run. r_j(i) * value is exact (+-1 times a double), so a fused multiply-add rounds as the
// separate sum does; no branch on the random bits.
PARITY_HOST_DEVICE void parity_sketch_add(double sums[PARITY_SKETCH_K], uint32_t signs, double value) {
    for (int j = 0; j < PARITY_SKETCH_K; j++) sums[j] += (1.0 - 2.0 * (double)((signs >> j) & 1u)) * value;
}

#ifdef __cplusplus
}
#endif
#endif
