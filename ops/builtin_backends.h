// builtin_backends.h: how a backend built into parity registers. Its own file, ops/<op>/<value>.c or
// .cu, CPU and CUDA alike, ends with one registration function that calls parity_registry_add once:
//
//   PARITY_BACKEND_REGISTRATION(rms_norm, liger_kernel, cuda) {
//       parity_backend backend = {...};
//       return parity_registry_add(&backend);
//   }
//
// The build lists every such definition in the sources it compiles (mk/backend_table.sh writes
// $(BUILD)/generated/backend_table.c: a CUDA file only in CUDA builds), so the table keeps an explicit
// reference to each backend's object file (libparity.a drops unreferenced ones) and a new backend is
// its file alone. parity_registry_register_builtins registers them family by family, in the order of
// ops/builtin_ops.c (on each device "eager" first, then the file order), and checks that each function
// registered the (op, value, device) its line names.
#ifndef PARITY_BUILTIN_BACKENDS_H
#define PARITY_BUILTIN_BACKENDS_H

#include <stddef.h>

#include "ops/core/device.h"
#include "ops/core/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct parity_builtin_backend {
    const char *op;     // "rms_norm"
    const char *name;   // "liger_kernel"
    parity_device_type device;
    const char *source; // "ops/rms_norm/liger_kernel.cu"
    parity_error *(*register_backend)(void);
} parity_builtin_backend;

// The generated table (every backend of this build) and its length.
extern const parity_builtin_backend parity_builtin_backends[];
extern const size_t parity_builtin_backend_count;

#ifdef __cplusplus
#define PARITY_BACKEND_LINKAGE extern "C"
#else
#define PARITY_BACKEND_LINKAGE
#endif

// Opens the definition of a backend's registration function, parity_register_<op>_<value>_<device>;
// `device` is cpu or cuda. The line must start the line, as written above, for the build to find it.
#define PARITY_BACKEND_REGISTRATION(op, value, device)                                                     \
    PARITY_BACKEND_LINKAGE parity_error *parity_register_##op##_##value##_##device(void);                  \
    PARITY_BACKEND_LINKAGE parity_error *parity_register_##op##_##value##_##device(void)

#ifdef __cplusplus
}
#endif
#endif
