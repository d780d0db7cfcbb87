// parallel.h: a parallel layout made real on the ranks of this run (issue 16): the groups each
// reduction and exchange goes over, this rank's coordinates, and its share of a batch. Made once
// per evaluation, collectively over the world (ops/core/comm.h), before the model is built; the
// model (models/model.h) and its families read it, never the layout's text.
//
//   rank r = d * sp + s              d: data shard (rows), s: sequence shard (columns)
//   sequence group   the sp ranks of one data shard, by s: the Ulysses all-to-all around attention
//   expert group     ep consecutive ranks (r / ep), by r % ep: the tokens' dispatch and combine
//   expert replicas  the world / ep ranks holding the same expert shard (r % ep): its gradient sums
// Dense gradients are summed over the layout's world (the test-only wrong group leaves the last
// rank's out, models/model_parallel.c).
#ifndef PARITY_PARALLEL_H
#define PARITY_PARALLEL_H

#include "models/batch.h"
#include "models/parallel/layout.h"
#include "ops/core/comm.h"

typedef struct parity_parallel {
    parity_layout layout;
    int rank, ranks;                  // in the world
    int dp_rank, sp_rank, ep_rank;    // d, s and r % ep
    parity_comm *world;               // the layout's ranks: the world's first `ranks` (parity_comm_world_prefix)
    parity_comm *sequence, *experts, *expert_replicas; // owned
} parity_parallel;

// Collective over the process's world (ops/core/comm.h), which needs at least
// parity_layout_ranks(layout) ranks (a USAGE error says how to launch it otherwise). Its first ranks
// run the layout, collectively among them once their group exists (parity_comm_world_prefix, made
// over the whole world the first time); a rank past them gets *out = NULL and *idle = true. The
// test-only stall fault hangs its rank here.
parity_error *parity_parallel_create(const parity_layout *layout, parity_parallel **out, bool *idle);
void parity_parallel_free(parity_parallel *parallel); // NULL: no-op

// This rank's share of a whole CPU batch: rows [d B / dp, (d + 1) B / dp), then under sp the columns
// [s T / sp, (s + 1) T / sp) of each (with the rows' documents for attention, parity_batch_columns);
// its loss divides by the whole batch's target count. A batch that does not split evenly is
// UNSUPPORTED with the reason (a packed row is one sample for dp).
parity_error *parity_parallel_shard_batch(const parity_parallel *parallel, const parity_batch *whole, parity_batch *out);

// Element offset in the whole loss input (N, width) of local token row `row` (each local row holds
// batch->row_length consecutive tokens of one whole row): where its sketch terms sit.
int64_t parity_parallel_token_offset(const parity_parallel *parallel, const parity_batch *shard, int64_t row);

#endif
