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

// The nudge of element i (parity_rng_nudge_ulps): -1 (one unit in the last place toward zero), +1
// (away from zero) or 0, with probabilities 1/4, 1/4, 1/2, from the two low bits of word i.
PARITY_HOST_DEVICE int parity_rng_nudge_direction(parity_rng_stream stream, uint64_t index) {
    uint32_t bits = parity_philox_word(stream.seed, stream.name_hash, index) & 3u;
    return bits == 0 ? -1 : bits == 1 ? 1 : 0;
}

// `magnitude_bits` (the value's bits without the sign) moved by `direction` units in the last place,
// staying finite and not crossing zero; infinities and NaNs (>= infinity_bits) are left alone.
PARITY_HOST_DEVICE uint64_t parity_rng_nudged_magnitude(uint64_t magnitude_bits, uint64_t infinity_bits, int direction) {
    if (magnitude_bits >= infinity_bits) return magnitude_bits;
    if (direction > 0 && magnitude_bits + 1 < infinity_bits) return magnitude_bits + 1;
    if (direction < 0 && magnitude_bits > 0) return magnitude_bits - 1;
    return magnitude_bits;
}

#endif
