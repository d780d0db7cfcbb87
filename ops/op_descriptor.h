// op_descriptor.h: one record per op (ops/<op>/descriptor.c), the single description of an op that
// its three users share, as ggml's test-backend-ops uses one struct for its eval, grad and perf modes:
//   the autograd node (models/autograd/node_op.h) runs forward and backward on tape variables,
//   the op tests (suites/tests/op_check.h) run them on the rows of suites/tests/cases_<op>.c,
//   `parity bench` (harness/bench/) times them and turns times into GB/s or TFLOP/s.
// A descriptor names the op's tensors (slots, in a fixed order), builds the op's args and grads
// structs from tensors given by slot plus the op's attributes (the args builder), makes the one call
// of a backend's kernel table, and, for the ops `parity bench` times, holds the work model: the
// bytes that must move and the flops of one call at the op's sizes.
#ifndef PARITY_OP_DESCRIPTOR_H
#define PARITY_OP_DESCRIPTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ops/core/saved.h"
#include "ops/core/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PARITY_OP_MAX_SLOTS 10      // concat and split: 8 parts and their other tensor
#define PARITY_OP_MAX_SIZES 4       // the sizes of a work model ("ROWSxHIDDEN", ...)

typedef enum parity_op_slot_kind {
    PARITY_SLOT_INPUT,  // read by the forward; the backward writes its gradient (NULL: not wanted)
    PARITY_SLOT_DATA,   // read, never differentiated: ids, targets, positions, cu_seqlens, indices
    PARITY_SLOT_OUTPUT, // written by the forward; its incoming gradient is read by the backward
} parity_op_slot_kind;

typedef struct parity_op_slot {
    const char *name;   // the tensor's name in the op tests ("x", "weight", "y", "part0", ...)
    parity_op_slot_kind kind;
    bool optional;      // may be NULL (a bias, cu_seqlens, the logits, parts past the count)
} parity_op_slot;

// The work of one call at `sizes` (the op's `size_format`, e.g. {rows, hidden}): bytes that must move
// (each input read once, each output written once) and, for flop-bound ops, flops.
typedef struct parity_op_work_model {
    const char *size_format; // "ROWSxHIDDEN", ...
    int size_count;
    bool flop_bound;         // rated in TFLOP/s against the GEMM ceiling instead of GB/s
    double (*bytes)(const int64_t *sizes, parity_dtype dtype, bool with_backward);
    double (*flops)(const int64_t *sizes, bool with_backward); // flop-bound ops only
    // Bytes of the gradient buffers a caller of fwd+bwd owns (reported beside the extra peak memory).
    double (*gradient_bytes)(const int64_t *sizes, parity_dtype dtype);
} parity_op_work_model;

// `tensors` and `gradients` are indexed by slot (PARITY_OP_MAX_SLOTS entries at most). gradients[i]
// is, for an INPUT slot, the gradient the backward overwrites (NULL: not wanted); for an OUTPUT slot,
// the incoming gradient (NULL: none; see needs_every_output_gradient); unused for DATA slots.
// `attributes` are the op's hyper-parameters, of the type its descriptor.c names: for most ops the
// op's args struct, whose tensor fields the args builder ignores and overwrites from the slots.
typedef struct parity_op_descriptor {
    const char *name;               // the registry op name (PARITY_OP_*)
    const parity_op_slot *slots;
    int slot_count;
    size_t attributes_size;         // bytes of the attributes (0: the op has none; NULL is passed)
    bool needs_every_output_gradient; // the backward reads every output's gradient: a caller gives zeros
                                      // for an output that received none
    parity_error *(*forward)(const void *kernels, const void *attributes, parity_tensor *const *tensors,
                             parity_saved *saved);
    parity_error *(*backward)(const void *kernels, const void *attributes, parity_tensor *const *tensors,
                              parity_tensor *const *gradients, const parity_saved *saved);
    const parity_op_work_model *work; // NULL: `parity bench` does not time this op
} parity_op_descriptor;

// The index of the slot named `name`, or -1.
int parity_op_slot_index(const parity_op_descriptor *op, const char *name);

// Every op built into parity (ops/builtin_ops.c), in a fixed order; NULL past the end or for an
// unknown name.
size_t parity_builtin_op_count(void);
const parity_op_descriptor *parity_builtin_op_at(size_t index);
const parity_op_descriptor *parity_builtin_op_find(const char *name);

// The one call of a backend's kernel table, from the two builders a descriptor.c defines first:
//   static parity_<op>_args args_of(const void *attributes, parity_tensor *const *tensors);
//   static parity_<op>_grads grads_of(parity_tensor *const *gradients, parity_<op>_args *args);
// (grads_of may also drop from the backward's args what the backward does not take). Expands to the
// static `kernel_forward` and `kernel_backward` that the descriptor points to.
#define PARITY_OP_KERNEL_CALLS(op)                                                                           \
    static parity_error *kernel_forward(const void *kernels, const void *attributes, parity_tensor *const *tensors, \
                                        parity_saved *saved) {                                               \
        parity_##op##_args args = args_of(attributes, tensors);                                              \
        return ((const parity_##op##_kernels *)kernels)->forward(&args, saved);                              \
    }                                                                                                        \
    static parity_error *kernel_backward(const void *kernels, const void *attributes, parity_tensor *const *tensors, \
                                         parity_tensor *const *gradients, const parity_saved *saved) {       \
        parity_##op##_args args = args_of(attributes, tensors);                                              \
        parity_##op##_grads grads = grads_of(gradients, &args);                                              \
        return ((const parity_##op##_kernels *)kernels)->backward(&args, saved, &grads);                     \
    }

#define PARITY_OP_SLOT_COUNT(slots) ((int)(sizeof(slots) / sizeof((slots)[0])))

#ifdef __cplusplus
}
#endif
#endif
