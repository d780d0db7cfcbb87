// tape.h: reverse-mode differentiation for models written once, as their forward. Every op call
// a model makes goes through a node function (models/autograd/nodes.h, node_op.h) that runs the
// chosen backend's forward on the tape's execution context, records a node (which backend, which
// variables, the saved tensors), and returns output variables. parity_tape_backward then replays the
// nodes in reverse, calling each
// backend's backward and accumulating gradients into the input variables.
//
// Variables are owned by the tape (activations) or borrow a model parameter's storage. Gradients
// are allocated on first use; a second contribution is added (rounded to the variable's dtype,
// as PyTorch's autograd sums gradients in the tensor's dtype).
#ifndef PARITY_TAPE_H
#define PARITY_TAPE_H

#include <stdbool.h>

#include "models/autograd/tape_profile.h"
#include "ops/attention/block_mask.h"
#include "ops/core/exec.h"
#include "ops/core/saved.h"
#include "ops/core/tensor.h"

typedef struct parity_variable {
    char name[96];              // for NaN reports: "model.layers.3.mlp (output)", "model.norm.weight"
    parity_tensor value;
    parity_tensor gradient;     // empty until a gradient arrives
    const parity_exec *exec;    // its tape's context: where gradients are accumulated
    bool requires_gradient;
    bool has_gradient;
    bool gradient_written;      // set whenever its gradient is written; a checking tape clears it per node
} parity_variable;

typedef struct parity_tape parity_tape;
typedef struct parity_node parity_node;

// A block mask the tape keeps (node_attention.c), with the cu_seqlens storage it was built from.
typedef struct parity_tape_block_mask {
    const void *cu_seqlens;
    parity_block_mask mask;
} parity_tape_block_mask;

// A node's backward: reads the gradients of its outputs, accumulates into its inputs.
typedef parity_error *(*parity_node_backward)(parity_tape *tape, parity_node *node);

struct parity_node {
    const char *op;             // registry op name
    const char *backend;        // registry backend name
    parity_node_backward backward;
    parity_saved saved;         // what the backend's forward kept
    void *data;                 // the node function's own record (args copy, variable pointers), freed with free()
    size_t variable_end;        // the tape's variable count when the node was pushed (its outputs lie below)
};

struct parity_tape {
    const parity_exec *exec;    // the step's execution context (its owner runs the step); every node runs on it
    parity_device device;       // exec->device
    parity_dtype dtype;         // activation dtype of the run
    bool recording;             // false: forward only (no nodes kept, saved tensors dropped)
    parity_variable **variables;
    size_t variable_count, variable_capacity;
    parity_node *nodes;
    size_t node_count, node_capacity;
    parity_tape_profile *profile; // NULL, or per-op times of this tape's nodes (tape_profile.h)
    // A checking tape (parity_model_step's rerun of a step that met NaN/Inf): after each node's
    // backward, every gradient it wrote is reduced once and the first non-finite one is named here.
    bool check_gradients;
    char first_non_finite[192];
    // The block masks of this tape's attention nodes (a backend with PARITY_CAP_BLOCK_MASK,
    // node_attention.c): one per distinct visibility (cu_seqlens, causal, sliding_window) of the
    // step, on its device, freed with the tape (the nodes' backward reads them).
    parity_tape_block_mask **block_masks;
    size_t block_mask_count;
};

void parity_tape_init(parity_tape *tape, const parity_exec *exec, parity_dtype dtype, bool recording);
void parity_tape_release(parity_tape *tape);

// A new activation variable with a fresh (uninitialized) value tensor.
parity_error *parity_tape_new_variable(parity_tape *tape, const char *name, parity_dtype dtype, int ndim,
                                       const int64_t *shape, bool requires_gradient, parity_variable **out);
// A variable viewing existing storage (a parameter, an input batch); the tape never frees the value.
parity_error *parity_tape_borrow(parity_tape *tape, const char *name, const parity_tensor *value, bool requires_gradient,
                                 parity_variable **out);
// A variable that takes ownership of `value` (the caller's struct is reset); freed with the tape.
parity_error *parity_tape_adopt(parity_tape *tape, const char *name, parity_tensor *value, bool requires_gradient,
                                parity_variable **out);
// A variable that views another variable's value with a new shape (reshape); its gradient flows
// back to `source` through a recorded reshape node.
parity_error *parity_tape_reshape(parity_tape *tape, parity_variable *source, int ndim, const int64_t *shape,
                                  parity_variable **out);

// Appends a node; on success the tape owns `data` and the saved container's contents.
parity_error *parity_tape_push(parity_tape *tape, const char *op, const char *backend, parity_node_backward backward,
                               parity_saved *saved, void *data);

// Finishes a node function: when the backend's forward failed (`forward_error`), frees the record
// and the saved tensors and returns the error with "<name>: <op> (<backend>)" context; otherwise
// pushes the node. The op node (node_op.c) ends with this call.
parity_error *parity_tape_record(parity_tape *tape, const char *op, const char *backend, const char *name,
                                 parity_error *forward_error, parity_saved *saved, void *record,
                                 parity_node_backward backward);

// Adds `contribution` into variable->gradient (allocating and copying on first use), on the
// variable's execution context.
parity_error *parity_variable_accumulate(parity_variable *variable, const parity_tensor *contribution);
// A zeroed gradient buffer shaped like the variable, for a backward that writes into it directly;
// when the variable already has a gradient, returns a scratch tensor the caller must accumulate
// with parity_variable_accumulate and release. *direct tells which happened.
parity_error *parity_variable_gradient_target(parity_variable *variable, parity_tensor *scratch, parity_tensor **target,
                                              bool *direct);
parity_error *parity_variable_gradient_commit(parity_variable *variable, parity_tensor *scratch, bool direct);

// Seeds d(loss)/d(loss) = 1 and runs every node backwards.
parity_error *parity_tape_backward(parity_tape *tape, parity_variable *loss);

// Where NaN/Inf first appears in the forward: the variables' values in the order they were made
// (parameters and inputs when first used, then each node's outputs), one reduction each (a sync per
// tensor on a GPU: for locating, not for every step). `where` gets "<variable> (forward of <op>,
// <backend>)", "<variable> (an input of the step)" for a borrowed value, or "" when all are finite.
parity_error *parity_tape_find_non_finite_value(parity_tape *tape, char *where, size_t size);

#endif
