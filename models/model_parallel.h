// model_parallel.h: a model under a parallel layout (models/parallel/parallel.h): where each of its
// parameters lives on this rank and how a step's gradients become the whole batch's. Decided once,
// when the layout is applied (parity_model_apply_layout, models/model.h); the step reads the
// placements, never the names.
//   expert parameters (".experts.gate_up_proj", ".experts.down_proj") under ep: rows [e E / ep,
//     (e + 1) E / ep) of the fused experts tensor, e = this rank's expert shard;
//   fsdp: each parameter (an expert shard under ep) is a flat slice of ceil(numel / G) elements
//     (zero-padded) over the G ranks holding the same copy, gathered when the forward first uses it
//     and its gradient reduce-scattered back to the slice.
#ifndef PARITY_MODEL_PARALLEL_H
#define PARITY_MODEL_PARALLEL_H

#include "models/model.h"

typedef struct parity_parameter_placement {
    bool expert;                       // split along dim 0 over the expert group
    bool sharded;                      // fsdp: value is this rank's flat slice
    int ndim;
    int64_t shape[PARITY_MAX_DIMS];    // what the forward uses on this rank (an expert shard's shape under ep)
    int64_t numel;                     // of `shape`
    int64_t whole_numel;               // of the whole parameter (every expert)
    int64_t slice;                     // fsdp: elements per rank of its shard group
} parity_parameter_placement;

// The group a parameter's copies live on (its gradient sums, its fsdp shards): the world for a dense
// parameter, the expert replicas for an expert shard.
parity_comm *parity_model_copies_group(const parity_model *model, const parity_parameter_placement *placement);

// parity_model_parameter's gather: the whole value of a sharded parameter, adopted by the tape.
parity_error *parity_model_gather_parameter(parity_model *model, parity_tape *tape, size_t index, parity_variable **out);

// After the backward, collectively: which parameters got a gradient on any rank (an expert without
// tokens here still takes part in its sums, with zeros). has[p] in, out.
parity_error *parity_model_agree_gradients(const parity_model *model, bool *has);

// Parameter `index`'s local gradient (the shape the forward used; taken over) -> the whole batch's
// gradient of this rank's piece in parameter->gradient (the fsdp slice, the expert shard), and the
// whole parameter's squared norm and sketch from every piece.
parity_error *parity_model_reduce_gradient(parity_model *model, const parity_exec *exec, size_t index, parity_tensor *local,
                                           bool measure, double *squared_norm, double *sketch);

#endif
