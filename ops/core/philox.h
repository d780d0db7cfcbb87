// philox.h: the Philox 4x32-10 counter-based generator (Salmon et al., SC'11), host and device.
// A stream is named by (seed, parameter name): the seed is the 64-bit key and the name's 64-bit
// FNV-1a hash fills the upper half of the 128-bit counter, so element i of a stream depends only on
// (seed, name, i) and CPU and GPU fills are bit-identical. Values derived from the 32-bit words use
// only exactly rounded arithmetic (no fused multiply-add), so uniform fills match bit for bit too.
#ifndef PARITY_PHILOX_H
#define PARITY_PHILOX_H

#include <stdint.h>

#include "ops/core/dtype.h" // PARITY_HOST_DEVICE

#ifdef __cplusplus
extern "C" {
#endif

typedef struct parity_philox_block {
    uint32_t word[4];
} parity_philox_block;

#define PARITY_PHILOX_M0 0xD2511F53u
#define PARITY_PHILOX_M1 0xCD9E8D57u
#define PARITY_PHILOX_W0 0x9E3779B9u
#define PARITY_PHILOX_W1 0xBB67AE85u

PARITY_HOST_DEVICE void parity_philox_multiply(uint32_t a, uint32_t b, uint32_t *high, uint32_t *low) {
    uint64_t product = (uint64_t)a * (uint64_t)b;
    *high = (uint32_t)(product >> 32);
    *low = (uint32_t)product;
}

// One 128-bit output block for counter `counter` under key (key0, key1).
PARITY_HOST_DEVICE parity_philox_block parity_philox4x32_10(parity_philox_block counter, uint32_t key0, uint32_t key1) {
    for (int round = 0; round < 10; round++) {
        uint32_t high0, low0, high1, low1;
        parity_philox_multiply(PARITY_PHILOX_M0, counter.word[0], &high0, &low0);
        parity_philox_multiply(PARITY_PHILOX_M1, counter.word[2], &high1, &low1);
        parity_philox_block next;
        next.word[0] = high1 ^ counter.word[1] ^ key0;
        next.word[1] = low1;
        next.word[2] = high0 ^ counter.word[3] ^ key1;
        next.word[3] = low0;
        counter = next;
        key0 += PARITY_PHILOX_W0;
        key1 += PARITY_PHILOX_W1;
    }
    return counter;
}

// Words [4 * block_index, 4 * block_index + 4) of stream (seed, name_hash): one Philox block.
PARITY_HOST_DEVICE parity_philox_block parity_philox_block_at(uint64_t seed, uint64_t name_hash, uint64_t block_index) {
    parity_philox_block counter = {{(uint32_t)block_index, (uint32_t)(block_index >> 32), (uint32_t)name_hash,
                                    (uint32_t)(name_hash >> 32)}};
    return parity_philox4x32_10(counter, (uint32_t)seed, (uint32_t)(seed >> 32));
}

// The 32-bit word at position `index` of stream (seed, name_hash).
PARITY_HOST_DEVICE uint32_t parity_philox_word(uint64_t seed, uint64_t name_hash, uint64_t index) {
    return parity_philox_block_at(seed, name_hash, index >> 2).word[index & 3];
}

// Uniform in [0, 1) with 24 random bits: exact in f32 and f64.
PARITY_HOST_DEVICE double parity_philox_unit(uint32_t word) { return (double)(word >> 8) * (1.0 / 16777216.0); }

#ifdef __CUDA_ARCH__
#define PARITY_MUL_RN(a, b) __dmul_rn((a), (b))
#define PARITY_ADD_RN(a, b) __dadd_rn((a), (b))
#else
#define PARITY_MUL_RN(a, b) ((a) * (b))
#define PARITY_ADD_RN(a, b) ((a) + (b))
#endif

// low + (high - low) * u, with each operation rounded separately on host and device alike.
PARITY_HOST_DEVICE double parity_philox_uniform(uint64_t seed, uint64_t name_hash, uint64_t index, double low, double high) {
    double unit = parity_philox_unit(parity_philox_word(seed, name_hash, index));
    return PARITY_ADD_RN(low, PARITY_MUL_RN(PARITY_ADD_RN(high, -low), unit));
}

// 64-bit FNV-1a of a NUL-terminated name (host only: names are hashed before a launch).
static inline uint64_t parity_philox_hash_name(const char *name) {
    uint64_t hash = 0xcbf29ce484222325ull;
    for (const unsigned char *p = (const unsigned char *)name; p && *p; p++) {
        hash ^= *p;
        hash *= 0x100000001b3ull;
    }
    return hash;
}

#ifdef __cplusplus
}
#endif
#endif
