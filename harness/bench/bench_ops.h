// bench_ops.h: what `parity bench op` knows about each op it can time: the shape it takes, its
// default shapes (those of ../shared/perf-anchors.md first), how to build random inputs on the device
// once (shared by every backend, so all run on the same data), how to call a backend's forward and
// backward on them, and the work model: the bytes that must move (each input read once, each output
// written once) or the flops, so times become GB/s or TFLOP/s.
#ifndef PARITY_BENCH_OPS_H
#define PARITY_BENCH_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ops/core/exec.h"
#include "ops/core/saved.h"
#include "ops/core/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PARITY_BENCH_MAX_DIMS 4

typedef struct parity_bench_shape {
    int64_t dims[PARITY_BENCH_MAX_DIMS];
    int count;
} parity_bench_shape;

typedef struct parity_bench_op {
    const char *op;                  // registry op name
    const char *shape_format;        // "ROWSxHIDDEN", ...
    int shape_dims;
    const char *const *default_shapes; // NULL-terminated
    bool forward_pass;               // also time the forward alone ("fwd"); "fwd+bwd" is always timed
    bool flop_bound;                 // report TFLOP/s against the GEMM ceiling instead of GB/s
    // Random inputs, outputs and gradient buffers on `device` (dtype of the activations). Outputs and
    // gradients are allocated here, before any timing: peak memory counts only what the op adds.
    parity_error *(*setup)(const parity_bench_shape *shape, parity_dtype dtype, parity_device device, void **inputs);
    // One call of the backend (`kernels`) on `exec` (the bench's context on `device`).
    parity_error *(*forward)(const parity_exec *exec, void *inputs, const void *kernels, parity_saved *saved);
    parity_error *(*backward)(const parity_exec *exec, void *inputs, const void *kernels, const parity_saved *saved);
    void (*teardown)(void *inputs);
    // Bytes that must move (forward, or forward + backward), and flops (flop_bound ops).
    double (*bytes)(const parity_bench_shape *shape, parity_dtype dtype, bool with_backward);
    double (*flops)(const parity_bench_shape *shape, bool with_backward);
    // Bytes of the gradient buffers the caller owns (reported beside the extra peak memory).
    double (*gradient_bytes)(const parity_bench_shape *shape, parity_dtype dtype);
} parity_bench_op;

// The ops `parity bench op` can time, in a fixed order; NULL when `name` is not one of them.
const parity_bench_op *parity_bench_find_op(const char *name);
size_t parity_bench_op_count(void);
const parity_bench_op *parity_bench_op_at(size_t index);

// Parses "16384x4096" into `shape` for `op`; SHAPE error naming the op's format otherwise.
parity_error *parity_bench_parse_shape(const parity_bench_op *op, const char *text, parity_bench_shape *shape);
// "16384x4096".
const char *parity_bench_shape_string(const parity_bench_shape *shape, char *buffer, size_t size);

#ifdef __cplusplus
}
#endif
#endif
