// cublas_library.cu: dlopen of libcublas (once, thread-safe) and lookup of the entry points
// parity uses. cublas_v2.h maps several names to their _v2 symbols; the table uses those symbols.
#include <dlfcn.h>
#include <mutex>
#include <string.h>

#include "ops/core/cuda/cublas_library.h"

namespace {

std::once_flag load_once;
parity_cublas_library library;
char load_failure[512];

template <typename Function> bool lookup(void *handle, const char *symbol, Function &out) {
    out = reinterpret_cast<Function>(dlsym(handle, symbol));
    if (!out) snprintf(load_failure, sizeof load_failure, "libcublas has no symbol %s", symbol);
    return out != nullptr;
}

void load() {
    const char *names[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so"};
    void *handle = nullptr;
    for (const char *name : names)
        if ((handle = dlopen(name, RTLD_NOW | RTLD_LOCAL))) break;
    if (!handle) {
        snprintf(load_failure, sizeof load_failure, "cannot load cuBLAS (libcublas.so.13): %s", dlerror());
        return;
    }
    bool ok = lookup(handle, "cublasCreate_v2", library.create) && lookup(handle, "cublasDestroy_v2", library.destroy) &&
              lookup(handle, "cublasSetStream_v2", library.set_stream) &&
              lookup(handle, "cublasSetMathMode", library.set_math_mode) &&
              lookup(handle, "cublasGetStatusString", library.status_string) &&
              lookup(handle, "cublasGetStatusName", library.status_name) && lookup(handle, "cublasDgemm_v2", library.dgemm) &&
              lookup(handle, "cublasDgemmStridedBatched", library.dgemm_strided_batched) &&
              lookup(handle, "cublasGemmEx", library.gemm_ex) &&
              lookup(handle, "cublasGemmStridedBatchedEx", library.gemm_strided_batched_ex);
    if (!ok) memset(&library, 0, sizeof library);
}

} // namespace

parity_error *parity_cublas_library_get(const parity_cublas_library **out) {
    std::call_once(load_once, load);
    if (!library.create) return PARITY_ERROR(PARITY_ERROR_UNAVAILABLE, "%s", load_failure);
    *out = &library;
    return NULL;
}
