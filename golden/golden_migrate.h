// golden_migrate.h: what `parity golden migrate FILE...` does with a golden of an older schema. Schema
// 3 added every parameter's gradient sketch and the loss input's (golden.h): they are computed from
// gradients, which no golden stores, so no older golden can be brought to schema 3 without inventing
// values. An older golden is recognized (schema 1: HDF5 without a seal; schema 2: sealed, format 2),
// left untouched, and refused with why and what to do: regenerate it with `parity golden generate
// --force`, on the kind of device it was made on (the gpu-nightly goldens on a GPU). A current golden
// is checked whole and left as it is.
#ifndef PARITY_GOLDEN_MIGRATE_H
#define PARITY_GOLDEN_MIGRATE_H

#include "golden/golden.h"

// NULL when `path` is an intact golden of the current schema (*version = PARITY_GOLDEN_SCHEMA_VERSION).
// Otherwise a DATA error naming the file: a golden of an older schema (*version = 1 or 2) with why it
// cannot be converted and how to regenerate it, or what is wrong with a damaged or foreign file
// (*version = 0), as parity_golden_read words it; an unreadable file is an IO error. Never writes.
parity_error *parity_golden_migrate(const char *path, int *version);

#endif
