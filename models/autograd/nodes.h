// nodes.h: one function per op that a model calls. Each runs the bound backend's forward on tape
// variables, records the node for backward, and returns the output variables (owned by the tape).
// `name` labels outputs for NaN reports ("model.layers.2.self_attn").
#ifndef PARITY_NODES_H
#define PARITY_NODES_H

#include "models/autograd/tape.h"
#include "ops/attention/attention.h"
#include "ops/cross_entropy/cross_entropy.h"
#include "ops/registry.h"
#include "ops/rms_norm/rms_norm.h"

// (N, H) -> (N, H)
parity_error *parity_node_rms_norm(parity_tape *tape, const parity_backend *backend, const char *name, parity_variable *input,
                                   parity_variable *weight, double eps, parity_rms_norm_variant variant, parity_variable **out);

// hidden (N, H), weight (V, H), targets (N) int64 -> loss () ; logits (N, V) when `logits` is non-NULL.
parity_error *parity_node_cross_entropy(parity_tape *tape, const parity_backend *backend, const char *name,
                                        parity_variable *hidden, parity_variable *weight, const parity_tensor *targets,
                                        int64_t num_items_in_batch, parity_variable **loss, parity_variable **logits);

// query (N, Hq, D), key (N, Hk, D), value (N, Hk, Dv), cu_seqlens (S + 1) -> (N, Hq, Dv)
parity_error *parity_node_attention(parity_tape *tape, const parity_backend *backend, const char *name, parity_variable *query,
                                    parity_variable *key, parity_variable *value, const parity_tensor *cu_seqlens, double scale,
                                    bool causal, int64_t sliding_window, parity_variable **out);

#endif
