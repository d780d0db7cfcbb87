// cuda_backends.cu: registers every CUDA backend family of this build. Adding a family = one row.
extern "C" {
#include "ops/cuda_backends.h"
}

typedef parity_error *(*cuda_family_registration)(void);

static const struct {
    const char *what;
    cuda_family_registration register_family;
} cuda_families[] = {
    {"none yet", nullptr}, // rows land with the CUDA backends
};

extern "C" parity_error *parity_register_cuda_backends(void) {
    for (const auto &family : cuda_families) {
        if (!family.register_family) continue;
        parity_error *error = family.register_family();
        if (error) return parity_error_wrap(error, __FILE__, __LINE__, "registering the CUDA %s backends", family.what);
    }
    return NULL;
}
