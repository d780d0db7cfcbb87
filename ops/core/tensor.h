// tensor.h: a strided n-d array on a device. Tensors are plain values; an owning tensor frees its
// storage in parity_tensor_release, a view (parity_tensor_wrap, parity_tensor_reshape) does not.
// Shapes are listed outermost first, strides count elements. bf16/f16 are stored as uint16_t.
#ifndef PARITY_TENSOR_H
#define PARITY_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ops/core/device.h"
#include "ops/core/dtype.h"
#include "ops/core/error.h"
#include "ops/core/exec.h"
#include "ops/core/sketch.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PARITY_MAX_DIMS 8

typedef struct parity_tensor {
    void *data;
    parity_dtype dtype;
    parity_device device;
    int ndim;
    int64_t shape[PARITY_MAX_DIMS];
    int64_t strides[PARITY_MAX_DIMS]; // in elements
    int64_t numel;
    size_t allocated_bytes;           // > 0 only when the tensor owns `data`
    bool owns_data;
} parity_tensor;

// Expands to `ndim, shape` for the calls below: parity_tensor_alloc(&t, PARITY_F32, PARITY_CPU, PARITY_SHAPE(B, T, H)).
#define PARITY_SHAPE(...) (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__}

// Contiguous, uninitialized. Rejects negative sizes, ndim outside 0..PARITY_MAX_DIMS, overflow.
parity_error *parity_tensor_alloc(parity_tensor *out, parity_dtype dtype, parity_device device, int ndim,
                                  const int64_t *shape);
// Contiguous, zero-filled.
parity_error *parity_tensor_zeros(parity_tensor *out, parity_dtype dtype, parity_device device, int ndim,
                                  const int64_t *shape);
// A contiguous, non-owning view of existing memory.
parity_tensor parity_tensor_wrap(void *data, parity_dtype dtype, parity_device device, int ndim, const int64_t *shape);
// Frees owned storage and resets the tensor to empty. Safe on an empty or already released tensor.
void parity_tensor_release(parity_tensor *tensor);

bool parity_tensor_is_contiguous(const parity_tensor *tensor);
size_t parity_tensor_nbytes(const parity_tensor *tensor); // numel * element size
bool parity_tensor_same_shape(const parity_tensor *a, const parity_tensor *b);
// "(2, 40, 64) bf16 cuda:0"
const char *parity_tensor_describe(const parity_tensor *tensor, char *buffer, size_t size);
// "(2, 40, 64)"
const char *parity_tensor_shape_string(const parity_tensor *tensor, char *buffer, size_t size);

// A non-owning view with a new shape over a contiguous tensor (same numel).
parity_error *parity_tensor_reshape(parity_tensor *out, const parity_tensor *source, int ndim, const int64_t *shape);
// A non-owning view with dimensions `dim_a` and `dim_b` swapped (strides permuted, no copy).
parity_error *parity_tensor_transpose(parity_tensor *out, const parity_tensor *source, int dim_a, int dim_b);

// Copies `source` into `destination` (same dtype and shape, any devices). CPU to CPU honors strides;
// copies that involve a GPU need both tensors contiguous.
parity_error *parity_tensor_copy(parity_tensor *destination, const parity_tensor *source);
// Allocates `out` on `device` with `dtype` and fills it from `source`, converting the dtype with exact
// round-to-nearest-even (float <-> float, int <-> int, int -> float). The result is contiguous.
// GPU to GPU conversions run on the device; conversions from or to the CPU convert on the host.
// The move of loading and setup: its copies are synchronous, and a GPU conversion goes on the legacy
// default stream (exec.h); a step converts with parity_tensor_convert on its context.
parity_error *parity_tensor_to(parity_tensor *out, const parity_tensor *source, parity_device device, parity_dtype dtype);
// Allocates `out` on source's device with `dtype` and fills it from `source`, rounding as
// parity_tensor_to does; on a GPU the conversion kernel is queued on exec's stream.
parity_error *parity_tensor_convert(const parity_exec *exec, parity_tensor *out, const parity_tensor *source,
                                    parity_dtype dtype);
parity_error *parity_tensor_fill_zero(parity_tensor *tensor);
// Every element of a float tensor set to `value` rounded once to its dtype (CPU, or CUDA on exec's stream).
parity_error *parity_tensor_fill_value(const parity_exec *exec, parity_tensor *tensor, double value);
// destination += source, element by element, each sum rounded once to the destination's dtype
// (PyTorch's in-place add for f32/bf16 gives the same correctly rounded sums). Both tensors on the CPU,
// or both on one CUDA device (a device kernel on exec's stream, contiguous tensors, bitwise the CPU's sums).
parity_error *parity_tensor_add_into(const parity_exec *exec, parity_tensor *destination, const parity_tensor *source);

// *out = sum of the squares of a float tensor's elements in f64: CPU in index order; CUDA on the device
// in a fixed block order (bitwise repeatable, not bitwise the CPU's order), on exec's stream and with its
// scratch (a CUDA tensor needs a context; the call waits for the stream).
parity_error *parity_tensor_sum_of_squares(const parity_exec *exec, const parity_tensor *tensor, double *out);
// out[j] = the gradient sketch of a float tensor (ops/core/sketch.h): sum_i x_i * r_j(i) in f64, the
// signs r_j(i) from the stream of `name` at the tensor's logical flat index i. CPU in index order
// (strides honored); CUDA (contiguous) on the device in a fixed block order, on exec's stream with its
// scratch, like the sum of squares: the same signs, the sum in another order.
parity_error *parity_tensor_sketch(const parity_exec *exec, const parity_tensor *tensor, const char *name,
                                   double out[PARITY_SKETCH_K]);
// The same for a tensor that is the part of a larger one starting at element `first` (a data-parallel
// shard of the loss input): element i is element first + i of the whole, so the shards' sketches add
// up to the whole's. CPU tensors; a CUDA tensor only with first = 0.
parity_error *parity_tensor_sketch_at(const parity_exec *exec, const parity_tensor *tensor, const char *name, int64_t first,
                                      double out[PARITY_SKETCH_K]);

// CPU element access by logical flat index (row-major over the shape, honoring strides), as f64.
double parity_tensor_get(const parity_tensor *tensor, int64_t flat_index);
// Stores with the tensor's dtype (rounding to nearest even for bf16/f16/f32).
void parity_tensor_set(parity_tensor *tensor, int64_t flat_index, double value);
// Element offset (in elements from data) of a logical flat index.
int64_t parity_tensor_offset(const parity_tensor *tensor, int64_t flat_index);

// NUMERIC error naming `name`, the first non-finite element's index and value, when any element of a
// float tensor is NaN or Inf. Works for CPU and CUDA tensors (a CUDA tensor is copied to the host).
parity_error *parity_tensor_check_finite(const parity_tensor *tensor, const char *name);

#ifdef __cplusplus
}
#endif
#endif
