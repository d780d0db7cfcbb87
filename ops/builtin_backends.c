// builtin_backends.c: every backend family built into parity registers itself from this table.
// Families land with the issues that implement them; until then the kernel-selection vocabulary
// (harness/config) reports their values as "not built yet".
#include "ops/builtin_backends.h"

const parity_builtin_backend_family parity_builtin_backends[] = {
    {"none", NULL}, // placeholder row: replaced by the first real family
};
const size_t parity_builtin_backend_count = 0;
