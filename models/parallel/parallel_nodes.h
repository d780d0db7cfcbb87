// parallel_nodes.h: the tape nodes that move activations between ranks (issue 16's layouts), each
// with the exchange that is its backward. Host (CPU) tensors only: the MPI transport moves host
// buffers (ops/core/comm.h); a device tensor is a USAGE error naming the node.
#ifndef PARITY_PARALLEL_NODES_H
#define PARITY_PARALLEL_NODES_H

#include <stdbool.h>

#include "models/autograd/tape.h"
#include "ops/core/comm.h"

// Ulysses, over the sequence group of `ranks` = S ranks, each holding `rows` rows of `columns`
// consecutive tokens of the same whole rows (its shard s at columns [s columns, (s + 1) columns)):
//   to_heads:     (rows * columns, Hx, D)     -> (rows * S * columns, Hx / S, D)  all tokens, heads of rank s
//   to_sequence:  (rows * S * columns, h, D)  -> (rows * columns, S * h, D)       its tokens, every head
// Each is the other's backward. Hx must divide by S (the caller says why not, before calling).
parity_error *parity_node_ulysses(parity_tape *tape, const char *name, parity_comm *sequence, int64_t rows, int64_t columns,
                                  bool to_heads, parity_variable *input, parity_variable **out);

// (n, ...) on each of the group's ranks -> (size * n, ...): rank r's rows at [r n, (r + 1) n); the
// backward sums every rank's gradient of this rank's rows (a reduce-scatter), so a value computed
// identically on every rank from the gathered rows, with its loss weight divided by the group size,
// has the whole batch's gradient (the load-balancing loss over every rank's router logits).
parity_error *parity_node_gather_rows(parity_tape *tape, const char *name, parity_comm *group, parity_variable *input,
                                      parity_variable **out);

// Expert-parallel dispatch over the expert group (E experts, E / size on each rank, rank e holding
// [e E / size, (e + 1) E / size)): every (token n, slot j) goes to the rank of its expert, in (n, j)
// order per destination; a rank receives the items of every rank in rank order.
//   hidden (N, H), indices (N, K) int64, weights (N, K) -> received hidden (M, H), local expert
//   indices (M, 1) int64 (the expert minus the rank's first), weights (M, 1)
// The returned plan (owned by the tape) is what parity_node_expert_combine sends back with. Backward:
// the items' hidden and weight gradients go back and are added per token / slot.
typedef struct parity_expert_plan parity_expert_plan;
parity_error *parity_node_expert_dispatch(parity_tape *tape, const char *name, parity_comm *experts, int64_t num_experts,
                                          parity_variable *hidden, parity_variable *indices, parity_variable *weights,
                                          parity_variable **received_hidden, parity_variable **local_indices,
                                          parity_variable **received_weights, const parity_expert_plan **plan);
// The experts' outputs of the received items (M, H) -> back to their tokens (N, H): each token's K
// items added in the order they were sent (by destination rank, then slot). Backward: the token's
// gradient to each of its items.
parity_error *parity_node_expert_combine(parity_tape *tape, const char *name, const parity_expert_plan *plan,
                                         parity_variable *expert_outputs, parity_variable **out);

#endif
