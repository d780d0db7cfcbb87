// builtin_backends.h: the table of registration functions for every backend compiled into parity.
// Adding a built-in backend family = adding a row in builtin_backends.c.
#ifndef PARITY_BUILTIN_BACKENDS_H
#define PARITY_BUILTIN_BACKENDS_H

#include <stddef.h>

#include "ops/core/error.h"

typedef struct parity_builtin_backend_family {
    const char *what; // "rms_norm cpu", ...
    parity_error *(*register_backends)(void);
} parity_builtin_backend_family;

extern const parity_builtin_backend_family parity_builtin_backends[];
extern const size_t parity_builtin_backend_count;

#endif
