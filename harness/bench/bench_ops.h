// bench_ops.h: what `parity bench op` knows about each op it can time: the op's descriptor
// (ops/op_descriptor.h: the kernel call, and the work model that turns times into GB/s or TFLOP/s:
// the bytes that must move, each input read once and each output written once, or the flops; its
// size format is the shape the op takes), its default shapes (those of ../shared/perf-anchors.md
// first), and how to build random inputs on the device once, by the descriptor's slots (shared by
// every backend, so all run on the same data).
#ifndef PARITY_BENCH_OPS_H
#define PARITY_BENCH_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ops/core/exec.h"
#include "ops/core/saved.h"
#include "ops/core/tensor.h"
#include "ops/op_descriptor.h"
#include "ops/registry.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PARITY_BENCH_MAX_DIMS PARITY_OP_MAX_SIZES

typedef struct parity_bench_shape {
    int64_t dims[PARITY_BENCH_MAX_DIMS];
    int count;
} parity_bench_shape;

// The device tensors of one op's call, made once for every backend (bench_ops.c).
typedef struct parity_bench_inputs parity_bench_inputs;

// A part of an op that a backend can time alone, beside a torch peer timing the same part ("part" in
// its row): moe_experts' gate_up grouped GEMM. Its rows' pass is the part's name. A backend without
// the part (prepare gives *state NULL and no error) has no row.
typedef struct parity_bench_part {
    const char *name;                         // "gate_up GEMM": the rows' pass, the torch peer's "part"
    double (*flops)(const int64_t *sizes);    // the part's own count
    double (*bytes)(const int64_t *sizes, parity_dtype dtype); // what it must move at the least
    // untimed set-up for the backend's `kernels` on the inputs; *state NULL: the backend has no such part
    parity_error *(*prepare)(const parity_exec *exec, const void *kernels, parity_bench_inputs *inputs, void **state);
    parity_error *(*run)(const parity_exec *exec, const void *kernels, void *state); // the timed call
    void (*release)(const void *kernels, void *state);                                // NULL state: no-op
} parity_bench_part;

typedef struct parity_bench_op {
    const parity_op_descriptor *descriptor; // name, kernel call, work model (never NULL here)
    const char *const *default_shapes;      // NULL-terminated
    bool forward_pass;                      // also time the forward alone ("fwd"); "fwd+bwd" is always timed
    // Random inputs, outputs and gradient buffers on `device` (dtype of the activations), by slot, and
    // the op's attributes. Outputs and gradients are allocated here, before any timing: peak memory
    // counts only what the op adds.
    parity_error *(*setup)(const parity_bench_shape *shape, parity_dtype dtype, parity_device device,
                           parity_bench_inputs *inputs);
    const parity_bench_part *part; // NULL: none
} parity_bench_op;

// The ops `parity bench op` can time, in a fixed order; NULL when `name` is not one of them.
const parity_bench_op *parity_bench_find_op(const char *name);
size_t parity_bench_op_count(void);
const parity_bench_op *parity_bench_op_at(size_t index);

// Makes `op`'s inputs for `shape` (*out is set even on error; release it with parity_bench_teardown).
parity_error *parity_bench_setup(const parity_bench_op *op, const parity_bench_shape *shape, parity_dtype dtype,
                                 parity_device device, parity_bench_inputs **out);
// What `backend` needs beyond the inputs (the descriptor's prepare: attention's block mask, built from
// the inputs' visibility for a backend that runs on one), replacing what the previous backend got;
// before timing, so the build is never timed.
parity_error *parity_bench_prepare(const parity_bench_op *op, parity_bench_inputs *inputs, const parity_backend *backend);
// A backend's forward and backward on the inputs, through the op's descriptor, on `exec` (the bench's
// context on the device).
parity_error *parity_bench_forward(const parity_exec *exec, const parity_bench_op *op, parity_bench_inputs *inputs,
                                   const void *kernels, parity_saved *saved);
parity_error *parity_bench_backward(const parity_exec *exec, const parity_bench_op *op, parity_bench_inputs *inputs,
                                    const void *kernels, const parity_saved *saved);
void parity_bench_teardown(parity_bench_inputs *inputs); // NULL is a no-op

// What the inputs hold, for the correctness check on them (bench_check.h): the tensor of a slot
// (NULL: the call leaves it out) and whether it has a gradient buffer (an input's) or an incoming
// gradient (an output's); the attributes (op->attributes_size bytes); the activations' dtype.
const parity_tensor *parity_bench_inputs_tensor(const parity_bench_inputs *inputs, int slot, bool *has_gradient);
const void *parity_bench_inputs_attributes(const parity_bench_inputs *inputs);
parity_dtype parity_bench_inputs_dtype(const parity_bench_inputs *inputs);

// Parses "16384x4096" into `shape` for `op`; SHAPE error naming the op's format otherwise.
parity_error *parity_bench_parse_shape(const parity_bench_op *op, const char *text, parity_bench_shape *shape);
// "16384x4096".
const char *parity_bench_shape_string(const parity_bench_shape *shape, char *buffer, size_t size);

#ifdef __cplusplus
}
#endif
#endif
