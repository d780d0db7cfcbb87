// bench_comm.c: the collectives table of `parity bench comm` (bench_comm.h) and its run: for each
// collective and message size, one checked call on poisoned receive buffers, then warm-up calls, then
// timed calls (a barrier before each; the time is the slowest rank's), all on host buffers over MPI.
#include "harness/bench/bench_comm.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness/bench/bench_stats.h"

int64_t parity_bench_comm_value(int rank, int64_t j) { return ((int64_t)(rank + 1) * 7 + j * 3) % 17 - 8; }

// ---- the collectives: sizes, bus factors, expected values ----
// `count` is the message's element count, a multiple of the rank count (the runner makes it so);
// c = count / ranks is one rank's block where the collective has blocks.

static int64_t same_count(int64_t count, int ranks) { return (void)ranks, count; }
static int64_t block_count(int64_t count, int ranks) { return count / ranks; }
static double all_reduce_factor(int ranks) { return 2.0 * (ranks - 1) / ranks; }
static double ring_factor(int ranks) { return (double)(ranks - 1) / ranks; }
static double broadcast_factor(int ranks) { return (void)ranks, 1.0; }

static int64_t sum_over_ranks(int ranks, int64_t j) {
    int64_t sum = 0;
    for (int r = 0; r < ranks; r++) sum += parity_bench_comm_value(r, j);
    return sum;
}

static parity_error *run_all_reduce(parity_comm *comm, const void *send, void *recv, int64_t count, parity_dtype dtype) {
    return parity_comm_all_reduce(comm, send, recv, count, dtype);
}
static int64_t expect_all_reduce(int64_t i, int64_t count, int rank, int ranks) {
    return (void)count, (void)rank, sum_over_ranks(ranks, i);
}

static parity_error *run_all_gather(parity_comm *comm, const void *send, void *recv, int64_t count, parity_dtype dtype) {
    return parity_comm_all_gather(comm, send, recv, count / parity_comm_size(comm), dtype);
}
static int64_t expect_all_gather(int64_t i, int64_t count, int rank, int ranks) {
    int64_t c = count / ranks;
    return (void)rank, parity_bench_comm_value((int)(i / c), i % c);
}

static parity_error *run_reduce_scatter(parity_comm *comm, const void *send, void *recv, int64_t count, parity_dtype dtype) {
    return parity_comm_reduce_scatter(comm, send, recv, count / parity_comm_size(comm), dtype);
}
static int64_t expect_reduce_scatter(int64_t i, int64_t count, int rank, int ranks) {
    return sum_over_ranks(ranks, (int64_t)rank * (count / ranks) + i);
}

static parity_error *run_all_to_all(parity_comm *comm, const void *send, void *recv, int64_t count, parity_dtype dtype) {
    return parity_comm_all_to_all(comm, send, recv, count / parity_comm_size(comm), dtype);
}
static int64_t expect_all_to_all(int64_t i, int64_t count, int rank, int ranks) {
    int64_t c = count / ranks; // block i / c came from rank i / c, which sent its block `rank` there
    return parity_bench_comm_value((int)(i / c), (int64_t)rank * c + i % c);
}

static parity_error *run_broadcast(parity_comm *comm, const void *send, void *recv, int64_t count, parity_dtype dtype) {
    if (parity_comm_rank(comm) == 0) memcpy(recv, send, (size_t)count * parity_dtype_size(dtype));
    return parity_comm_broadcast(comm, recv, count, dtype, 0);
}
static int64_t expect_broadcast(int64_t i, int64_t count, int rank, int ranks) {
    return (void)count, (void)rank, (void)ranks, parity_bench_comm_value(0, i);
}

// Test-only: the reduction over the wrong group (every rank but the last, which reduces alone), the
// kind of bug VeOmni's HSDP grad_norm had; its #wrong must not be 0 with two ranks or more.
static parity_error *run_wrong_group(parity_comm *comm, const void *send, void *recv, int64_t count, parity_dtype dtype) {
    const int rank = parity_comm_rank(comm), last = parity_comm_size(comm) - 1;
    parity_comm *group;
    PARITY_TRY(parity_comm_split(comm, rank == last && last > 0 ? 1 : 0, rank, "all but the last rank", &group));
    parity_error *error = parity_comm_all_reduce(group, send, recv, count, dtype);
    parity_comm_free(group);
    return error;
}

static const parity_bench_collective collectives[] = {
    {"all_reduce", false, same_count, same_count, all_reduce_factor, run_all_reduce, expect_all_reduce},
    {"all_gather", false, block_count, same_count, ring_factor, run_all_gather, expect_all_gather},
    {"reduce_scatter", false, same_count, block_count, ring_factor, run_reduce_scatter, expect_reduce_scatter},
    {"all_to_all", false, same_count, same_count, ring_factor, run_all_to_all, expect_all_to_all},
    {"broadcast", false, same_count, same_count, broadcast_factor, run_broadcast, expect_broadcast},
    {"all_reduce_wrong_group", true, same_count, same_count, all_reduce_factor, run_wrong_group, expect_all_reduce},
};

size_t parity_bench_collective_count(void) { return sizeof collectives / sizeof collectives[0]; }

const parity_bench_collective *parity_bench_collective_at(size_t index) {
    return index < parity_bench_collective_count() ? &collectives[index] : NULL;
}

const parity_bench_collective *parity_bench_collective_find(const char *name) {
    for (size_t i = 0; i < parity_bench_collective_count(); i++)
        if (strcmp(collectives[i].name, name) == 0) return &collectives[i];
    return NULL;
}

// ---- buffers ----

static void store(void *buffer, int64_t i, parity_dtype dtype, double value) {
    switch (dtype) {
    case PARITY_F64: ((double *)buffer)[i] = value; break;
    case PARITY_F32: ((float *)buffer)[i] = (float)value; break;
    default: ((uint16_t *)buffer)[i] = parity_f64_to_bf16(value); break; // PARITY_BF16
    }
}

static double load(const void *buffer, int64_t i, parity_dtype dtype) {
    switch (dtype) {
    case PARITY_F64: return ((const double *)buffer)[i];
    case PARITY_F32: return ((const float *)buffer)[i];
    default: return parity_bf16_to_f32(((const uint16_t *)buffer)[i]); // PARITY_BF16
    }
}

static double seconds_now(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + 1e-9 * (double)now.tv_nsec;
}

// One (collective, message) row: the checked call, warm-up, timed iterations; `times` has room for
// `iterations` x ranks doubles.
static parity_error *measure(parity_comm *comm, const parity_bench_comm_options *options,
                             const parity_bench_collective *collective, int64_t count, void *send, void *recv,
                             double *times, double *slowest, parity_bench_comm_row *row) {
    const int rank = parity_comm_rank(comm), ranks = parity_comm_size(comm);
    const parity_dtype dtype = options->dtype;
    const int64_t sends = collective->send_count(count, ranks), receives = collective->recv_count(count, ranks);
    for (int64_t j = 0; j < sends; j++) store(send, j, dtype, (double)parity_bench_comm_value(rank, j));
    for (int64_t i = 0; i < receives; i++) store(recv, i, dtype, 1000); // poison: never a correct value
    PARITY_TRY(collective->run(comm, send, recv, count, dtype));
    int64_t wrong = 0, total = 0;
    for (int64_t i = 0; i < receives; i++)
        if (load(recv, i, dtype) != (double)collective->expected(i, count, rank, ranks)) wrong++;
    PARITY_TRY(parity_comm_all_reduce(comm, &wrong, &total, 1, PARITY_I64));
    for (int w = 0; w < options->warmup; w++) PARITY_TRY(collective->run(comm, send, recv, count, dtype));
    double *mine = times + (size_t)options->iterations * (size_t)ranks; // scratch after the gathered block
    for (int it = 0; it < options->iterations; it++) {
        PARITY_TRY(parity_comm_barrier(comm));
        double start = seconds_now();
        PARITY_TRY(collective->run(comm, send, recv, count, dtype));
        mine[it] = seconds_now() - start;
    }
    PARITY_TRY(parity_comm_all_gather(comm, mine, times, options->iterations, PARITY_F64));
    for (int it = 0; it < options->iterations; it++) { // milliseconds, the slowest rank's
        slowest[it] = times[it];
        for (int r = 1; r < ranks; r++)
            if (times[(size_t)r * options->iterations + it] > slowest[it]) slowest[it] = times[(size_t)r * options->iterations + it];
        slowest[it] *= 1e3;
    }
    parity_bench_timing timing = parity_bench_summarize(slowest, options->iterations);
    const double bytes = (double)count * (double)parity_dtype_size(dtype), seconds = timing.median_ms * 1e-3;
    row->collective = collective->name;
    row->bytes = (int64_t)bytes;
    row->count = count;
    row->median_us = seconds * 1e6;
    row->algorithm_gbps = seconds > 0 ? bytes / seconds / 1e9 : 0;
    row->bus_gbps = row->algorithm_gbps * collective->bus_factor(ranks);
    row->wrong = total;
    return NULL;
}

parity_error *parity_bench_comm_run(parity_comm *comm, const parity_bench_comm_options *options,
                                    parity_bench_comm_row **rows, int *row_count) {
    *rows = NULL;
    *row_count = 0;
    const int ranks = parity_comm_size(comm);
    const parity_dtype dtype = options->dtype;
    PARITY_CHECK(dtype == PARITY_F32 || dtype == PARITY_F64 || dtype == PARITY_BF16, PARITY_ERROR_USAGE,
                 "bench comm: dtype %s (fp32, fp64 or bf16)", parity_dtype_name(dtype));
    PARITY_CHECK(dtype != PARITY_BF16 || ranks <= 16, PARITY_ERROR_USAGE,
                 "bench comm: bf16 over %d ranks: the checked sums are exact in bf16 up to 16 ranks", ranks);
    PARITY_CHECK(options->min_bytes > 0 && options->max_bytes >= options->min_bytes && options->factor >= 2 &&
                     options->iterations > 0 && options->warmup >= 0,
                 PARITY_ERROR_USAGE, "bench comm: sizes %lld..%lld by %d, %d iterations, %d warm-up",
                 (long long)options->min_bytes, (long long)options->max_bytes, options->factor, options->iterations,
                 options->warmup);
    const size_t element = parity_dtype_size(dtype);
    // the message sizes: every count a multiple of the rank count, at least one element a rank
    int sizes = 0;
    int64_t counts[64];
    for (int64_t bytes = options->min_bytes; bytes <= options->max_bytes && sizes < 64; bytes *= options->factor) {
        int64_t count = (int64_t)((size_t)bytes / element) / ranks * ranks;
        counts[sizes++] = count > 0 ? count : ranks;
        if (bytes > options->max_bytes / options->factor) break;
    }
    const parity_bench_collective *chosen[16];
    int chosen_count = 0;
    if (options->collectives) {
        for (int i = 0; i < options->collective_count && chosen_count < 16; i++) chosen[chosen_count++] = options->collectives[i];
    } else {
        for (size_t i = 0; i < parity_bench_collective_count() && chosen_count < 16; i++)
            if (!collectives[i].test_only) chosen[chosen_count++] = &collectives[i];
    }
    const int64_t largest = counts[sizes - 1];
    void *send = malloc((size_t)largest * element), *recv = malloc((size_t)largest * element);
    double *times = malloc((size_t)options->iterations * (size_t)(ranks + 1) * sizeof *times);
    double *slowest = malloc((size_t)options->iterations * sizeof *slowest);
    parity_bench_comm_row *out = calloc((size_t)(sizes * chosen_count), sizeof *out);
    parity_error *error = send && recv && times && slowest && out
                              ? NULL
                              : PARITY_ERROR(PARITY_ERROR_MEMORY, "bench comm: buffers of %lld elements",
                                             (long long)largest);
    int count = 0;
    for (int c = 0; !error && c < chosen_count; c++)
        for (int s = 0; !error && s < sizes; s++) {
            error = measure(comm, options, chosen[c], counts[s], send, recv, times, slowest, &out[count]);
            if (!error) count++;
        }
    free(send);
    free(recv);
    free(times);
    free(slowest);
    if (error) {
        free(out);
        return error;
    }
    *rows = out;
    *row_count = count;
    return NULL;
}
