// rng_value.h: the value of element i of a stream for each distribution, shared verbatim by the CPU
// fill (rng.c) and the GPU fill (cuda/rng_fill.cu) so both compute the same thing.
#ifndef PARITY_RNG_VALUE_H
#define PARITY_RNG_VALUE_H

#include <math.h>

#include "ops/core/philox.h"
#include "ops/core/rng.h"

PARITY_HOST_DEVICE double parity_rng_value(parity_rng_stream stream, parity_rng_distribution distribution, double a,
                                           double b, uint64_t index) {
    if (distribution == PARITY_RNG_UNIFORM) return parity_philox_uniform(stream.seed, stream.name_hash, index, a, b);
    // Box-Muller on the pair (2k, 2k+1): even elements take the cosine, odd ones the sine.
    uint64_t pair = index >> 1;
    uint32_t word0 = parity_philox_word(stream.seed, stream.name_hash, 2 * pair);
    uint32_t word1 = parity_philox_word(stream.seed, stream.name_hash, 2 * pair + 1);
    double u0 = ((double)word0 + 1.0) * (1.0 / 4294967296.0); // (0, 1]: log is finite
    double u1 = (double)word1 * (1.0 / 4294967296.0);
    double radius = sqrt(-2.0 * log(u0));
    double angle = 6.283185307179586 * u1;
    double z = (index & 1) ? radius * sin(angle) : radius * cos(angle);
    return PARITY_ADD_RN(a, PARITY_MUL_RN(b, z));
}

#endif
