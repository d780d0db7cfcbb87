// golden_seal.h: the seal of a golden file, what makes a damaged golden impossible to read silently.
// A golden is one HDF5 file created with a 512-byte user block (HDF5 leaves it alone and keeps its
// own data after it); the seal is a small text header written into that block once the HDF5 image
// is complete: a signature, the golden format (= schema_version), the payload length and the
// SHA-256 of every byte after the block. A reader checks the seal on the bytes it read before any
// of them reaches libhdf5, so a flipped bit, a truncated or extended file, or a file that is not a
// golden never gets as far as the library (which has crashed, hung and allocated gigabytes on
// damaged files). The layout (docs/golden-format.md):
//
//   "\x89parity golden\r\n\x1a\n"      18-byte signature (binary-safe, like PNG's)
//   "format 3\n"                       PARITY_GOLDEN_SCHEMA_VERSION
//   "payload_bytes <N>\n"              decimal, no leading zeros: file size - 512
//   "payload_sha256 <64 hex>\n"        lowercase, of bytes [512, 512 + N)
//   NUL bytes up to 512
//
// A seal is accepted only when it is byte for byte the seal this parity writes for those payload
// bytes, so every byte of the block is checked, padding included.
#ifndef PARITY_GOLDEN_SEAL_H
#define PARITY_GOLDEN_SEAL_H

#include <stddef.h>
#include <stdint.h>

#include "ops/core/error.h"

#define PARITY_GOLDEN_SEAL_BYTES 512 // the HDF5 user block: a power of two >= 512, as HDF5 requires
// The largest golden read or written (the whole file is read into memory to be checked). Today's
// goldens are 24-95 kB; a large model's parameter list and a long batch stay far below this.
#define PARITY_GOLDEN_MAX_BYTES ((size_t)64 << 20)

// Writes the seal of image[PARITY_GOLDEN_SEAL_BYTES, size) into image[0, PARITY_GOLDEN_SEAL_BYTES)
// for format `format`. `size` must exceed the seal (an HDF5 image follows it).
void parity_golden_seal(uint8_t *image, size_t size, int format);
// Checks the seal of the `size` bytes of a golden named `name` (for messages): a DATA error naming
// it and what is wrong (empty, too short, an old-format golden without a seal, not a golden, an older
// format (regenerate it) or a newer one, truncated, bytes appended, damaged payload, damaged seal);
// NULL when the seal matches.
parity_error *parity_golden_seal_check(const char *name, const uint8_t *data, size_t size, int format);
// Reads the whole file `path` into a malloc'ed buffer: an IO error when it cannot be opened or read,
// or is not a regular file; a DATA error when it is larger than PARITY_GOLDEN_MAX_BYTES (nothing is
// read) or changes size while being read.
parity_error *parity_golden_read_bytes(const char *path, uint8_t **data, size_t *size);

#endif
