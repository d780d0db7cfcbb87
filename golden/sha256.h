// sha256.h: SHA-256 (FIPS 180-4) of bytes and of files, as 64 lowercase hex digits: the checksums a
// golden records for its weights (model.safetensors, or the config text when weights come from a
// seed) and its batch, so that `parity golden verify` can tell whether its inputs changed.
#ifndef PARITY_SHA256_H
#define PARITY_SHA256_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ops/core/error.h"

typedef struct parity_sha256 {
    uint32_t state[8];
    uint64_t length;        // bytes hashed so far
    uint8_t block[64];
    size_t block_used;
} parity_sha256;

void parity_sha256_begin(parity_sha256 *hash);
void parity_sha256_update(parity_sha256 *hash, const void *bytes, size_t length);
// Writes 64 hex digits and a NUL into hex[65].
void parity_sha256_end(parity_sha256 *hash, char hex[65]);

void parity_sha256_bytes(const void *bytes, size_t length, char hex[65]);
// IO error naming the file when it cannot be opened or read.
parity_error *parity_sha256_file(const char *path, char hex[65]);
// Whether `text` is exactly 64 lowercase hex digits.
bool parity_sha256_is_hex(const char *text);

#endif
