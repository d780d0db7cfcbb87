// golden.h: an eager fp64 golden stored in HDF5 (golden/<suite>/<model>/<case>.h5): what every
// combo of a suite is compared with. It records where it came from (provenance), exactly what was
// run (model config, weight source with checksum, the batch itself), the expected fp64 values, and
// how far eager itself lands in each lower precision (the basis of the tolerance rule).
// The file layout is documented in golden/golden.c and docs/golden-format.md: one HDF5 file behind
// a 512-byte seal (golden_seal.h) that carries the SHA-256 of the HDF5 bytes, checked before libhdf5
// sees any of them.
#ifndef PARITY_GOLDEN_H
#define PARITY_GOLDEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "models/step_result.h"
#include "ops/core/error.h"
#include "ops/core/tensor.h"

// 3: every values set has each parameter's gradient sketch (parameter_grad_sketches) and, where the
// model exposes it, the loss input's gradient norm and sketch (step_result.h). 2: sealed
// (golden_seal.h), fletcher32 on every numeric dataset, checksummed object headers, the optional
// `migrated` note. 1: plain HDF5. Older goldens are refused with "regenerate" (golden_migrate.h says
// why they cannot be converted).
#define PARITY_GOLDEN_SCHEMA_VERSION 3

typedef struct parity_golden_precision {
    char dtype[16];           // "fp32", "bf16"
    parity_step_result eager; // eager's own values in that dtype (error = |eager - fp64|)
} parity_golden_precision;

typedef struct parity_golden {
    int schema_version;
    // provenance
    char git_sha[64], created[32], host[128], device[160], compiler[128], libraries[512], command[1024];
    char migrated[256]; // "" unless converted from an older schema: when, by what, from which version
    // what was run
    char suite[64], model[64], case_name[64];
    char model_type[64];
    char *model_config_json;  // the config.json text (owned)
    char weight_source[1024]; // "checkpoint <dir>" or "seed <N> from config"
    char weight_sha256[65];   // of model.safetensors (checkpoint) or of the config text (seed)
    uint64_t weight_seed;
    char batch_source[1024];  // batch file path, or "plain [B, T] seed N" / "packed [...] seed N"
    char batch_sha256[65];
    parity_tensor input_ids, labels, position_ids; // int64 (B, T); position_ids empty when absent
    // expected values (eager, fp64). Each values set (these and every precision's) has every
    // parameter's norm and sketch, the loss input's when the model has one, and may keep a few
    // logits rows in its own dtype in .logits (the file's optional logits_sample; bf16 is stored as
    // uint16 with dtype = "bf16"); first_non_finite is always "" (the values are finite).
    parity_step_result expected;
    parity_golden_precision precisions[2];
    size_t precision_count;
} parity_golden;

// Writes atomically (a temporary file beside it, synced, renamed into place: ops/core/file.h),
// creating parent directories. Refuses to replace an existing file unless `force` (a USAGE error that
// says "use --force"); nothing is left behind on failure. Checks the golden first (USAGE error naming
// the field): required strings set, sha256 fields 64 hex digits, config JSON valid, batch 2-D
// integers, finite values (norms, sketches), every precision with the same parameter names and the
// same loss input (present or not) as `expected`. schema_version 0 means "current".
// The file written is parity_golden_encode's image: sealed before the temporary file is renamed.
parity_error *parity_golden_write(const char *path, const parity_golden *golden, bool force);
// The whole file a golden is, in memory (malloc'ed): the seal, then the HDF5 image. Checks the golden
// as parity_golden_write does; `path` names it in errors. Touches no file.
parity_error *parity_golden_encode(const char *path, const parity_golden *golden, uint8_t **image, size_t *size);
// Reads the whole file (at most PARITY_GOLDEN_MAX_BYTES) and decodes it (parity_golden_decode).
// A missing, damaged, truncated, old-format or schema-mismatched file is a DATA/IO error naming the
// file and what is wrong (an older schema: regenerate it).
parity_error *parity_golden_read(const char *path, parity_golden *out);
// Decodes the `size` bytes of a golden file named `name` (for messages): checks the seal first
// (parity_golden_seal_check: nothing unchecked reaches libhdf5), then opens the checked bytes in
// memory with libhdf5 and validates every item. Never exits, never touches the disk; a failure
// leaves `out` zeroed. The entry point for fuzzing the golden reader.
parity_error *parity_golden_decode(const char *name, const uint8_t *data, size_t size, parity_golden *out);
// Frees everything the golden owns (config text, batch tensors, name, norm and sketch arrays, which
// are malloc'ed; logits samples) and zeroes it. Safe on a zeroed or partly filled golden.
void parity_golden_release(parity_golden *golden);
// The eager values of `dtype` ("fp32", "bf16"), or NULL.
const parity_step_result *parity_golden_eager(const parity_golden *golden, const char *dtype);
// Prints the golden readably (what `parity golden show FILE` shows): provenance, the run (model,
// weights, batch), the expected fp64 values, eager's error per dtype (|eager - fp64| and relative),
// and the per-parameter gradient norms with each dtype's relative error and sketch cosine.
// (golden/golden_format.c)
void parity_golden_describe(const parity_golden *golden, FILE *stream);

#endif
