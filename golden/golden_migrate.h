// golden_migrate.h: converting a golden of an older schema to the current one without touching a
// value (`parity golden migrate FILE...`), and the bit-for-bit comparison that proves it. Goldens
// made on hardware that is not at hand (the gpu-nightly ones, on an H200) cannot be regenerated, so
// a schema change must carry their values over exactly: every number, string and batch byte is read
// from the old file, written into the new format with a note of the migration, read back from the
// new image and compared bit for bit before the old file is replaced (atomically).
#ifndef PARITY_GOLDEN_MIGRATE_H
#define PARITY_GOLDEN_MIGRATE_H

#include <stddef.h>

#include "golden/golden.h"

// What a comparison covered: the evidence a migration prints.
typedef struct parity_golden_comparison {
    size_t numbers;      // float64 values (losses, grad norms, logits sums, per-parameter norms) and the seed
    size_t strings;      // provenance and run strings, the config text, parameter names, precision names
    size_t tensor_bytes; // bytes of the batch tensors and logits samples
} parity_golden_comparison;

// NULL when `a` and `b` hold the same golden bit for bit: every provenance and run string, the config
// text, the weight seed, the batch tensors (dtype, shape, bytes), every value (compared as bits, so
// NaN and -0 count), name and logits sample of /expected and each precision in order. schema_version
// and `migrated` are not compared. Otherwise a DATA error naming `name` and the first difference.
// `counts` (may be NULL) says how much was compared.
parity_error *parity_golden_compare(const char *name, const parity_golden *a, const parity_golden *b,
                                    parity_golden_comparison *counts);

typedef struct parity_golden_migration {
    bool migrated;       // false: the file already had the current schema (checked, left as it was)
    int from_version;    // the schema it had
    parity_golden_comparison compared;
} parity_golden_migration;

// Migrates the golden `path` in place: a schema_version 1 file is decoded
// (parity_golden_decode_schema1), given the note "schema_version 1 -> 2 <by>; values and provenance
// unchanged" in `migrated`, encoded, decoded back from the new image, compared with the old values
// (parity_golden_compare), and only then written over `path` atomically. A current, intact golden is
// left untouched (out->migrated false). A damaged, foreign or other-schema file is a DATA error
// naming it, and the file stays as it was.
parity_error *parity_golden_migrate(const char *path, const char *by, parity_golden_migration *out);

#endif
