// op_descriptor.h: one record per op (ops/<op>/descriptor.c), the single description of an op that
// its three users share, as ggml's test-backend-ops uses one struct for its eval, grad and perf modes:
//   the autograd node (models/autograd/node_op.h) runs forward and backward on tape variables,
//   the op tests (ops/testing/op_check.h) run them on the rows of ops/testing/cases/cases_<op>.c,
//   `parity bench` (harness/bench/) times them and turns times into GB/s or TFLOP/s.
// A descriptor names the op's tensors (slots, in a fixed order) and where each goes in the op's args
// and grads structs, so one args builder (parity_op_build_args/grads) fills them from tensors given by
// slot plus the op's attributes; it makes the one call of a backend's kernel table; and, for the ops
// `parity bench` times, it holds the work model: the bytes that must move and the flops of one call
// at the op's sizes.
#ifndef PARITY_OP_DESCRIPTOR_H
#define PARITY_OP_DESCRIPTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ops/core/exec.h"
#include "ops/core/saved.h"
#include "ops/core/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

struct parity_backend;

#define PARITY_OP_MAX_SLOTS 10      // concat and split: 8 parts and their other tensor
#define PARITY_OP_MAX_SIZES 6       // the sizes of a work model ("ROWSxHIDDEN", ...; attention has 6)
#define PARITY_OP_NO_FIELD ((size_t)-1)

typedef enum parity_op_slot_kind {
    PARITY_SLOT_INPUT,  // read by the forward; the backward writes its gradient (NULL: not wanted)
    PARITY_SLOT_DATA,   // read, never differentiated: ids, targets, positions, cu_seqlens, indices
    PARITY_SLOT_OUTPUT, // written by the forward; its incoming gradient is read by the backward
} parity_op_slot_kind;

typedef struct parity_op_slot {
    const char *name;   // the tensor's name in the op tests ("x", "weight", "y", "part0", ...)
    parity_op_slot_kind kind;
    size_t args_field;  // offset of the tensor's pointer in the op's args struct
    size_t grads_field; // offset of its gradient's pointer in the grads struct, or PARITY_OP_NO_FIELD
    bool optional;      // may be NULL (a bias, cu_seqlens, the logits, parts past the count)
    bool forward_only;  // the backward's args get NULL here (no backward reads it: cross_entropy's logits)
} parity_op_slot;

typedef enum parity_op_attributes {
    PARITY_ATTRIBUTES_NONE,    // no hyper-parameters; NULL is passed
    PARITY_ATTRIBUTES_ARGS,    // the op's args struct, whose tensor fields the builder overwrites
    PARITY_ATTRIBUTES_POINTED, // a struct of attributes_size bytes that args point to at attributes_field
} parity_op_attributes;

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
// `attributes` are the op's hyper-parameters, of the kind and type its descriptor.c names.
typedef struct parity_op_descriptor {
    const char *name;               // the registry op name (PARITY_OP_*)
    const parity_op_slot *slots;
    int slot_count;
    size_t args_size, grads_size;   // sizeof the op's args and grads structs
    parity_op_attributes attributes;
    size_t attributes_size;         // bytes a caller passes (0 for PARITY_ATTRIBUTES_NONE)
    size_t attributes_field;        // PARITY_ATTRIBUTES_POINTED: offset of the pointer in args
    bool needs_every_output_gradient; // the backward reads every output's gradient: a caller gives zeros
                                      // for an output that received none
    // The one call of a backend's kernel table, on `exec` (ops/core/exec.h).
    parity_error *(*forward)(const parity_exec *exec, const void *kernels, const void *attributes,
                             parity_tensor *const *tensors, parity_saved *saved);
    parity_error *(*backward)(const parity_exec *exec, const void *kernels, const void *attributes,
                              parity_tensor *const *tensors, parity_tensor *const *gradients, const parity_saved *saved);
    const parity_op_work_model *work; // NULL: `parity bench` does not time this op
    // Per-call data a backend needs beyond the slots, built from the call's visibility (attention:
    // the block mask of a backend with PARITY_CAP_BLOCK_MASK); NULL for the ops that have none. The
    // op tests and `parity bench` call it once per (backend, inputs) through parity_op_prepare; the
    // model builds the same data itself (models/autograd/nodes/node_attention.c).
    parity_error *(*prepare)(const struct parity_backend *backend, void *attributes, parity_tensor *const *tensors,
                             void **prepared);
    void (*release_prepared)(void *prepared);
} parity_op_descriptor;

// The args builder: `args` (op->args_size bytes) from the attributes and the slots' tensors, for the
// forward or (forward_only slots left NULL) the backward; `grads` (op->grads_size bytes) from the
// slots' gradients.
void parity_op_build_args(const parity_op_descriptor *op, const void *attributes, parity_tensor *const *tensors,
                          bool for_backward, void *args);
void parity_op_build_grads(const parity_op_descriptor *op, parity_tensor *const *gradients, void *grads);

// For the op tests and `parity bench`: whatever `backend` needs beyond the slots for calls on
// `tensors` (by slot), pointed at from the caller's copy of the attributes (op->prepare; for an op
// without one, nothing). *prepared is what the caller releases with parity_op_release_prepared after
// its last call with those attributes (NULL when nothing was built).
parity_error *parity_op_prepare(const parity_op_descriptor *op, const struct parity_backend *backend, void *attributes,
                                parity_tensor *const *tensors, void **prepared);
void parity_op_release_prepared(const parity_op_descriptor *op, void *prepared); // NULL is a no-op

// The index of the slot named `name`, or -1.
int parity_op_slot_index(const parity_op_descriptor *op, const char *name);

// Every op built into parity (ops/builtin_ops.c), in a fixed order; NULL past the end or for an
// unknown name.
size_t parity_builtin_op_count(void);
const parity_op_descriptor *parity_builtin_op_at(size_t index);
const parity_op_descriptor *parity_builtin_op_find(const char *name);

// ---- for descriptor.c ----
// The offset of a tensor-pointer field of struct `type` (a compile error for a field of another type).
#define PARITY_OP_TENSOR_FIELD(type, field)                                                                  \
    _Generic(((type *)0)->field, const parity_tensor *: offsetof(type, field), parity_tensor *: offsetof(type, field))

// A slot of op `op` whose tensor is args.field and whose gradient is grads.gradient (an input's
// gradient written by the backward, an output's incoming one); then .optional / .forward_only.
#define PARITY_OP_SLOT(op, name_, kind_, field, gradient, ...)                                               \
    {.name = name_, .kind = kind_, .args_field = PARITY_OP_TENSOR_FIELD(parity_##op##_args, field),            \
     .grads_field = PARITY_OP_TENSOR_FIELD(parity_##op##_grads, gradient), __VA_ARGS__}
// A slot without a gradient: data, or an output nobody differentiates.
#define PARITY_OP_SLOT_WITHOUT_GRADIENT(op, name_, kind_, field, ...)                                        \
    {.name = name_, .kind = kind_, .args_field = PARITY_OP_TENSOR_FIELD(parity_##op##_args, field),            \
     .grads_field = PARITY_OP_NO_FIELD, __VA_ARGS__}

// Attributes that are the op's args struct (its tensor fields ignored).
#define PARITY_OP_ARGS_ATTRIBUTES(op) .attributes = PARITY_ATTRIBUTES_ARGS, .attributes_size = sizeof(parity_##op##_args)

// Defines parity_<op>_op from the file's `slots` and the one call of a backend's kernel table
// (kernel_forward, kernel_backward); the other fields (attributes, work model, ...) follow.
#define PARITY_OP_DESCRIPTOR(op, op_name, ...)                                                               \
    static parity_error *kernel_forward(const parity_exec *exec, const void *kernels, const void *attributes,   \
                                        parity_tensor *const *tensors, parity_saved *saved) {                \
        parity_##op##_args args;                                                                             \
        parity_op_build_args(&parity_##op##_op, attributes, tensors, false, &args);                          \
        return ((const parity_##op##_kernels *)kernels)->forward(exec, &args, saved);                        \
    }                                                                                                        \
    static parity_error *kernel_backward(const parity_exec *exec, const void *kernels, const void *attributes,  \
                                         parity_tensor *const *tensors, parity_tensor *const *gradients,     \
                                         const parity_saved *saved) {                                        \
        parity_##op##_args args;                                                                             \
        parity_##op##_grads grads;                                                                           \
        parity_op_build_args(&parity_##op##_op, attributes, tensors, true, &args);                           \
        parity_op_build_grads(&parity_##op##_op, gradients, &grads);                                         \
        return ((const parity_##op##_kernels *)kernels)->backward(exec, &args, saved, &grads);               \
    }                                                                                                        \
    const parity_op_descriptor parity_##op##_op = {.name = op_name,                                          \
                                                   .slots = slots,                                           \
                                                   .slot_count = (int)(sizeof slots / sizeof slots[0]),      \
                                                   .args_size = sizeof(parity_##op##_args),                  \
                                                   .grads_size = sizeof(parity_##op##_grads),                \
                                                   .forward = kernel_forward,                                \
                                                   .backward = kernel_backward,                              \
                                                   __VA_ARGS__};

#ifdef __cplusplus
}
#endif
#endif
