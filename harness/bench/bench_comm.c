// bench_comm.c: the collectives table of `parity bench comm` (bench_comm.h) and its run: for each
// collective and message size, one checked call on poisoned receive buffers, then warm-up calls, then
// timed calls (a barrier before each; the time is the slowest rank's). Here the host runner (host
// buffers over MPI, wall-clock time); --device cuda goes to bench_comm_cuda.cu with the same sizes,
// data, checks and rows.
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
    {"all_reduce", false, false, same_count, same_count, all_reduce_factor, run_all_reduce, expect_all_reduce},
    {"all_gather", false, false, block_count, same_count, ring_factor, run_all_gather, expect_all_gather},
    {"reduce_scatter", false, false, same_count, block_count, ring_factor, run_reduce_scatter, expect_reduce_scatter},
    {"all_to_all", false, false, same_count, same_count, ring_factor, run_all_to_all, expect_all_to_all},
    {"broadcast", false, false, same_count, same_count, broadcast_factor, run_broadcast, expect_broadcast},
    // NCCL's own reductions (--device cuda only), beside the rank-order ones: the same values expected
    {"all_reduce_native", false, true, same_count, same_count, all_reduce_factor, NULL, expect_all_reduce},
    {"reduce_scatter_native", false, true, same_count, block_count, ring_factor, NULL, expect_reduce_scatter},
    {"all_reduce_wrong_group", true, false, same_count, same_count, all_reduce_factor, run_wrong_group, expect_all_reduce},
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

void parity_bench_comm_fill(void *buffer, int64_t n, parity_dtype dtype, int rank) {
    for (int64_t j = 0; j < n; j++) store(buffer, j, dtype, (double)parity_bench_comm_value(rank, j));
}

void parity_bench_comm_poison(void *buffer, int64_t n, parity_dtype dtype) {
    for (int64_t i = 0; i < n; i++) store(buffer, i, dtype, 1000); // never a correct value
}

int64_t parity_bench_comm_count_wrong(const parity_bench_collective *collective, const void *recv, int64_t count,
                                      parity_dtype dtype, int rank, int ranks) {
    const int64_t receives = collective->recv_count(count, ranks);
    int64_t wrong = 0;
    for (int64_t i = 0; i < receives; i++)
        if (load(recv, i, dtype) != (double)collective->expected(i, count, rank, ranks)) wrong++;
    return wrong;
}

parity_error *parity_bench_comm_finish_row(parity_comm *comm, const parity_bench_comm_options *options,
                                           const parity_bench_collective *collective, int64_t count, int64_t wrong,
                                           const double *seconds, double *scratch, parity_bench_comm_row *row) {
    const int ranks = parity_comm_size(comm), iterations = options->iterations;
    int64_t total = 0;
    PARITY_TRY(parity_comm_all_reduce(comm, &wrong, &total, 1, PARITY_I64));
    double *times = scratch, *slowest = scratch + (size_t)iterations * (size_t)ranks;
    PARITY_TRY(parity_comm_all_gather(comm, seconds, times, iterations, PARITY_F64));
    for (int it = 0; it < iterations; it++) { // milliseconds, the slowest rank's
        slowest[it] = times[it];
        for (int r = 1; r < ranks; r++)
            if (times[(size_t)r * iterations + it] > slowest[it]) slowest[it] = times[(size_t)r * iterations + it];
        slowest[it] *= 1e3;
    }
    parity_bench_timing timing = parity_bench_summarize(slowest, iterations);
    const double bytes = (double)count * (double)parity_dtype_size(options->dtype), time = timing.median_ms * 1e-3;
    row->collective = collective->name;
    row->bytes = (int64_t)bytes;
    row->count = count;
    row->median_us = time * 1e6;
    row->algorithm_gbps = time > 0 ? bytes / time / 1e9 : 0;
    row->bus_gbps = row->algorithm_gbps * collective->bus_factor(ranks);
    row->wrong = total;
    return NULL;
}

static double seconds_now(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + 1e-9 * (double)now.tv_nsec;
}

// One (collective, message) row on the host: the checked call, warm-up, timed iterations; `times` has
// room for `iterations` x (ranks + 2) doubles.
static parity_error *measure(parity_comm *comm, const parity_bench_comm_options *options,
                             const parity_bench_collective *collective, int64_t count, void *send, void *recv,
                             double *times, parity_bench_comm_row *row) {
    const int rank = parity_comm_rank(comm), ranks = parity_comm_size(comm);
    const parity_dtype dtype = options->dtype;
    parity_bench_comm_fill(send, collective->send_count(count, ranks), dtype, rank);
    parity_bench_comm_poison(recv, collective->recv_count(count, ranks), dtype);
    PARITY_TRY(collective->run(comm, send, recv, count, dtype));
    const int64_t wrong = parity_bench_comm_count_wrong(collective, recv, count, dtype, rank, ranks);
    for (int w = 0; w < options->warmup; w++) PARITY_TRY(collective->run(comm, send, recv, count, dtype));
    double *mine = times + (size_t)options->iterations * (size_t)(ranks + 1); // after finish_row's scratch
    for (int it = 0; it < options->iterations; it++) {
        PARITY_TRY(parity_comm_barrier(comm));
        double start = seconds_now();
        PARITY_TRY(collective->run(comm, send, recv, count, dtype));
        mine[it] = seconds_now() - start;
    }
    return parity_bench_comm_finish_row(comm, options, collective, count, wrong, mine, times, row);
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
    const bool on_cuda = options->device.type == PARITY_DEVICE_CUDA;
    PARITY_CHECK(on_cuda || options->device.type == PARITY_DEVICE_CPU, PARITY_ERROR_USAGE,
                 "bench comm: device %s (cpu or cuda)", parity_device_type_name(options->device.type));
    const parity_bench_collective *chosen[16];
    int chosen_count = 0;
    if (options->collectives) {
        for (int i = 0; i < options->collective_count && chosen_count < 16; i++) chosen[chosen_count++] = options->collectives[i];
    } else {
        for (size_t i = 0; i < parity_bench_collective_count() && chosen_count < 16; i++)
            if (!collectives[i].test_only && (on_cuda || !collectives[i].cuda_only)) chosen[chosen_count++] = &collectives[i];
    }
    for (int c = 0; c < chosen_count; c++)
        PARITY_CHECK(on_cuda || !chosen[c]->cuda_only, PARITY_ERROR_USAGE,
                     "bench comm: %s is NCCL's own reduction: it runs with --device cuda", chosen[c]->name);
    parity_bench_comm_row *out = calloc((size_t)(sizes * chosen_count), sizeof *out);
    if (!out) return PARITY_ERROR(PARITY_ERROR_MEMORY, "bench comm: %d rows", sizes * chosen_count);
    int count = 0;
    parity_error *error = NULL;
    if (on_cuda) {
        error = parity_bench_comm_run_cuda(comm, options, chosen, chosen_count, counts, sizes, out, &count);
    } else {
        const int64_t largest = counts[sizes - 1];
        void *send = malloc((size_t)largest * element), *recv = malloc((size_t)largest * element);
        double *times = malloc((size_t)options->iterations * (size_t)(ranks + 2) * sizeof *times);
        error = send && recv && times ? NULL
                                      : PARITY_ERROR(PARITY_ERROR_MEMORY, "bench comm: buffers of %lld elements",
                                                     (long long)largest);
        for (int c = 0; !error && c < chosen_count; c++)
            for (int s = 0; !error && s < sizes; s++) {
                error = measure(comm, options, chosen[c], counts[s], send, recv, times, &out[count]);
                if (!error) count++;
            }
        free(send);
        free(recv);
        free(times);
    }
    if (error) {
        free(out);
        return error;
    }
    *rows = out;
    *row_count = count;
    return NULL;
}
