// cpu_math.h: the few helpers every CPU eager kernel uses. Eager kernels read their inputs as f64
// arrays, compute with explicit rounding to the precision a GPU eager path would use, and store
// each output rounded once to its dtype. That keeps every kernel one readable piece of math for
// all three dtypes:
//   f64  -> everything in f64
//   f32  -> arithmetic rounded to f32 (parity_round_compute), accumulation in f32
//   bf16 -> storage bf16, arithmetic and accumulation in f32, outputs rounded to bf16
// Computing an f32 operation in f64 and rounding once to f32 gives exactly the f32 result for
// + - * / sqrt (53 >= 2*24 + 2), so the emulation is exact, not approximate.
#ifndef PARITY_CPU_MATH_H
#define PARITY_CPU_MATH_H

#include <stdint.h>

#include "ops/core/dtype.h"
#include "ops/core/error.h"
#include "ops/core/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

// The precision arithmetic runs in for a storage dtype: f64 for f64, f32 otherwise.
static inline parity_dtype parity_compute_dtype(parity_dtype storage) {
    return storage == PARITY_F64 ? PARITY_F64 : PARITY_F32;
}

// Rounds an intermediate to the compute precision of `storage` (identity for f64).
static inline double parity_round_compute(double value, parity_dtype storage) {
    return storage == PARITY_F64 ? value : (double)(float)value;
}

// Rounds to the storage dtype itself (what a tensor of that dtype would hold).
static inline double parity_round_storage(double value, parity_dtype storage) {
    return parity_round_to_dtype(value, storage);
}

// A CPU tensor's values as a contiguous f64 array (row-major over its shape). `*owned` is set when
// the array was converted and must be freed with parity_cpu_values_free.
typedef struct parity_cpu_values {
    double *data;
    int64_t count;
    bool owned;
} parity_cpu_values;

parity_error *parity_cpu_values_load(const parity_tensor *tensor, const char *name, parity_cpu_values *out);
parity_error *parity_cpu_values_new(int64_t count, parity_cpu_values *out); // zero-filled, owned
void parity_cpu_values_free(parity_cpu_values *values);
// Stores `values` (row-major) into `tensor`, rounding each once to the tensor's dtype.
void parity_cpu_values_store(parity_tensor *tensor, const double *values);
// Integer tensors (int64/int32) as an int64 array copy.
parity_error *parity_cpu_indices_load(const parity_tensor *tensor, const char *name, int64_t **out);

// Shape checks that produce "op: tensor name has shape (..), expected (..)" messages.
parity_error *parity_check_tensor(const char *op, const char *name, const parity_tensor *tensor, parity_dtype dtype,
                                  int ndim, const int64_t *shape);
// -1 in `shape` accepts any size in that dimension.
#define PARITY_ANY (-1)
parity_error *parity_check_cpu(const char *op, const char *name, const parity_tensor *tensor);

#ifdef __cplusplus
}
#endif
#endif
