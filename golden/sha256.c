// sha256.c: a plain SHA-256 (FIPS 180-4, section 6.2): 64-byte blocks, 64 rounds, big-endian words.
#include "golden/sha256.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static const uint32_t round_constants[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01,
    0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc,
    0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
    0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08,
    0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
    0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

static uint32_t rotate_right(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

static void compress(uint32_t state[8], const uint8_t block[64]) {
    uint32_t w[64];
    for (int t = 0; t < 16; t++)
        w[t] = (uint32_t)block[4 * t] << 24 | (uint32_t)block[4 * t + 1] << 16 | (uint32_t)block[4 * t + 2] << 8 | block[4 * t + 3];
    for (int t = 16; t < 64; t++) {
        uint32_t s0 = rotate_right(w[t - 15], 7) ^ rotate_right(w[t - 15], 18) ^ (w[t - 15] >> 3);
        uint32_t s1 = rotate_right(w[t - 2], 17) ^ rotate_right(w[t - 2], 19) ^ (w[t - 2] >> 10);
        w[t] = w[t - 16] + s0 + w[t - 7] + s1;
    }
    uint32_t a = state[0], b = state[1], c = state[2], d = state[3], e = state[4], f = state[5], g = state[6], h = state[7];
    for (int t = 0; t < 64; t++) {
        uint32_t t1 = h + (rotate_right(e, 6) ^ rotate_right(e, 11) ^ rotate_right(e, 25)) + ((e & f) ^ (~e & g)) +
                      round_constants[t] + w[t];
        uint32_t t2 = (rotate_right(a, 2) ^ rotate_right(a, 13) ^ rotate_right(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        h = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
    }
    state[0] += a, state[1] += b, state[2] += c, state[3] += d, state[4] += e, state[5] += f, state[6] += g, state[7] += h;
}

void parity_sha256_begin(parity_sha256 *hash) {
    static const uint32_t initial[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                        0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(hash->state, initial, sizeof initial);
    hash->length = 0;
    hash->block_used = 0;
}

void parity_sha256_update(parity_sha256 *hash, const void *bytes, size_t length) {
    const uint8_t *p = bytes;
    hash->length += length;
    while (length > 0) {
        size_t take = 64 - hash->block_used < length ? 64 - hash->block_used : length;
        memcpy(hash->block + hash->block_used, p, take);
        hash->block_used += take, p += take, length -= take;
        if (hash->block_used == 64) {
            compress(hash->state, hash->block);
            hash->block_used = 0;
        }
    }
}

void parity_sha256_end(parity_sha256 *hash, char hex[65]) {
    uint64_t bit_length = hash->length * 8;
    uint8_t padding[72] = {0x80};
    size_t pad = (hash->block_used < 56 ? 56 : 120) - hash->block_used; // up to the length field
    for (int i = 0; i < 8; i++) padding[pad + i] = (uint8_t)(bit_length >> (56 - 8 * i));
    parity_sha256_update(hash, padding, pad + 8);
    for (int i = 0; i < 8; i++) snprintf(hex + 8 * i, 9, "%08x", hash->state[i]);
}

void parity_sha256_bytes(const void *bytes, size_t length, char hex[65]) {
    parity_sha256 hash;
    parity_sha256_begin(&hash);
    parity_sha256_update(&hash, bytes, length);
    parity_sha256_end(&hash, hex);
}

parity_error *parity_sha256_file(const char *path, char hex[65]) {
    FILE *stream = fopen(path, "rb");
    if (!stream) return PARITY_ERROR(PARITY_ERROR_IO, "%s: cannot open: %s", path, strerror(errno));
    parity_sha256 hash;
    parity_sha256_begin(&hash);
    uint8_t buffer[1 << 16];
    size_t got;
    while ((got = fread(buffer, 1, sizeof buffer, stream)) > 0) parity_sha256_update(&hash, buffer, got);
    bool failed = ferror(stream);
    fclose(stream);
    if (failed) return PARITY_ERROR(PARITY_ERROR_IO, "%s: read failed while hashing", path);
    parity_sha256_end(&hash, hex);
    return NULL;
}

bool parity_sha256_is_hex(const char *text) {
    for (int i = 0; i < 64; i++)
        if (!((text[i] >= '0' && text[i] <= '9') || (text[i] >= 'a' && text[i] <= 'f'))) return false;
    return text[64] == '\0';
}
