// parallel.c: the groups of a layout on this run's ranks, and a rank's share of a batch (parallel.h).
#include "models/parallel/parallel.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int axis(int value) { return value > 0 ? value : 1; }

void parity_parallel_free(parity_parallel *parallel) {
    if (!parallel) return;
    parity_comm_free(parallel->sequence);
    parity_comm_free(parallel->experts);
    parity_comm_free(parallel->expert_replicas);
    free(parallel);
}

parity_error *parity_parallel_create(const parity_layout *layout, parity_parallel **out, bool *idle) {
    *out = NULL;
    *idle = false;
    PARITY_TRY(parity_layout_check(layout));
    parity_comm *everyone;
    PARITY_TRY(parity_comm_world(&everyone));
    const int ranks = parity_layout_ranks(layout), rank = parity_comm_rank(everyone);
    char name[64];
    parity_layout_name(layout, name, sizeof name);
    PARITY_CHECK(parity_comm_size(everyone) >= ranks, PARITY_ERROR_USAGE,
                 "layout %s needs %d ranks, but this run has %d (launch it with mpirun -np %d)", name[0] ? name : "(one rank)",
                 ranks, parity_comm_size(everyone), ranks);
    if (layout->fault_stall_rank == rank + 1) // test-only: a hung rank, before any collective
        for (;;) pause();
    if (layout->fault_kill_rank == rank + 1) raise(SIGKILL); // test-only: a rank that dies, as kill -9 ends it
    parity_comm *world;
    PARITY_TRY(parity_comm_world_prefix(ranks, &world)); // made once per rank count (the run makes them up front)
    if (!world) {
        *idle = true;
        return NULL;
    }
    parity_parallel *parallel = calloc(1, sizeof *parallel);
    if (!parallel) return PARITY_ERROR(PARITY_ERROR_MEMORY, "a parallel layout");
    parallel->layout = *layout;
    parallel->layout.dp = axis(layout->dp), parallel->layout.sp = axis(layout->sp), parallel->layout.ep = axis(layout->ep);
    const int sp = parallel->layout.sp, ep = parallel->layout.ep;
    parallel->world = world;
    parallel->rank = rank;
    parallel->ranks = ranks;
    parallel->dp_rank = rank / sp;
    parallel->sp_rank = rank % sp;
    parallel->ep_rank = rank % ep;
    parity_error *error = parity_comm_split(world, parallel->dp_rank, parallel->sp_rank, "sequence", &parallel->sequence);
    if (!error) error = parity_comm_split(world, rank / ep, rank % ep, "experts", &parallel->experts);
    if (!error) error = parity_comm_split(world, rank % ep, rank / ep, "expert replicas", &parallel->expert_replicas);
    if (error) {
        parity_parallel_free(parallel);
        return error;
    }
    *out = parallel;
    return NULL;
}

parity_error *parity_parallel_shard_batch(const parity_parallel *parallel, const parity_batch *whole, parity_batch *out) {
    memset(out, 0, sizeof *out);
    const int dp = parallel->layout.dp, sp = parallel->layout.sp;
    PARITY_CHECK(whole->rows % dp == 0, PARITY_ERROR_UNSUPPORTED,
                 "data parallel over %d ranks: the batch's %lld rows do not split evenly (a packed row is one sample)", dp,
                 (long long)whole->rows);
    PARITY_CHECK(whole->row_length % sp == 0, PARITY_ERROR_UNSUPPORTED,
                 "sequence parallel over %d ranks: rows of %lld tokens do not split evenly", sp,
                 (long long)whole->row_length);
    const int64_t rows = whole->rows / dp;
    parity_batch rows_of_shard;
    PARITY_TRY(parity_batch_rows(whole, parallel->dp_rank * rows, rows, &rows_of_shard));
    parity_error *error = NULL;
    if (sp > 1) {
        const int64_t columns = whole->row_length / sp;
        error = parity_batch_columns(&rows_of_shard, parallel->sp_rank * columns, columns, out);
        parity_batch_release(&rows_of_shard);
    } else {
        *out = rows_of_shard;
    }
    if (!error) out->num_items_in_batch = whole->num_items_in_batch > 0 ? whole->num_items_in_batch : whole->valid_target_count;
    return error;
}

int64_t parity_parallel_token_offset(const parity_parallel *parallel, const parity_batch *shard, int64_t row) {
    const int64_t whole_row = shard->sequence_row_length > 0 ? shard->sequence_row_length : shard->row_length;
    const int64_t first_row = (int64_t)parallel->dp_rank * shard->rows;
    return (first_row + row) * whole_row + (int64_t)parallel->sp_rank * shard->row_length;
}
