// bench_comm.h: `parity bench comm`, the collectives of ops/core/comm.h timed and checked the way
// nccl-tests does it: one row per (collective, message size), the time a call takes (median over the
// iterations of the slowest rank's time), the algorithm bandwidth (size / time) and the bus bandwidth
// (algbw x the collective's factor: what each link moves, comparable across rank counts), and an exact
// #wrong column (elements of the result that differ from the expected values, over every rank).
// The sent values are small integers, exact in every dtype and in their sums over up to 16 ranks, so
// a correct collective has #wrong = 0 and any other count is a bug.
// Two devices: cpu, host buffers over MPI (comm_mpi.c, wall-clock time); cuda, device buffers over
// NCCL (comm_nccl.h: one GPU a rank, CUDA events around each call; bench_comm_cuda.cu), where the
// table adds NCCL's own reductions (all_reduce_native, reduce_scatter_native: no order promised)
// beside parity's rank-order ones.
#ifndef PARITY_BENCH_COMM_H
#define PARITY_BENCH_COMM_H

#include <stdbool.h>
#include <stdint.h>

#include "ops/core/comm.h"
#include "ops/core/device.h"
#include "ops/core/dtype.h"
#include "ops/core/error.h"

#ifdef __cplusplus
extern "C" {
#endif

// One collective of the table: its size convention ("size" is the bytes of the larger buffer, as in
// nccl-tests), bus factor, the values each rank sends and the result each rank expects.
typedef struct parity_bench_collective {
    const char *name;
    bool test_only; // a deliberately wrong collective (--with-test-collectives): it must show #wrong > 0
    bool cuda_only; // NCCL's own reduction (--device cuda): run is NULL
    // elements each rank sends and receives for a message of `count` elements (the size's count)
    int64_t (*send_count)(int64_t count, int ranks);
    int64_t (*recv_count)(int64_t count, int ranks);
    double (*bus_factor)(int ranks);
    // recv <- the collective of every rank's send (counts as above), on the host (MPI)
    parity_error *(*run)(parity_comm *comm, const void *send, void *recv, int64_t count, parity_dtype dtype);
    // the expected value of recv[i] on `rank` (each rank r sent parity_bench_comm_value(r, j) at j)
    int64_t (*expected)(int64_t i, int64_t count, int rank, int ranks);
} parity_bench_collective;

size_t parity_bench_collective_count(void);
const parity_bench_collective *parity_bench_collective_at(size_t index);
const parity_bench_collective *parity_bench_collective_find(const char *name);

// What rank `rank` sends at index j: an integer in [-8, 8].
int64_t parity_bench_comm_value(int rank, int64_t j);

typedef struct parity_bench_comm_options {
    parity_device device;          // cpu (MPI, host buffers) or cuda:N (NCCL, this rank's GPU)
    const parity_bench_collective *const *collectives; // NULL: every one not test_only (nor cuda_only on the cpu)
    int collective_count;
    parity_dtype dtype;            // fp32 (default), fp64 or bf16
    int64_t min_bytes, max_bytes;  // message sizes: min, min * factor, ..., up to max
    int factor;
    int warmup, iterations;
} parity_bench_comm_options;

typedef struct parity_bench_comm_row {
    const char *collective;
    int64_t bytes, count;          // the message: bytes of the larger buffer, its element count
    double median_us;              // median over the iterations of the slowest rank's time
    double algorithm_gbps, bus_gbps;
    int64_t wrong;                 // over every rank
} parity_bench_comm_row;

// Runs every (collective, size) over `comm` on options->device; on every rank the same rows (times and
// #wrong agreed by collectives). *rows is malloc'ed; free it. A cuda_only collective on the cpu is a
// USAGE error; cuda without a device, NCCL or a CUDA build is UNAVAILABLE (never the cpu instead).
parity_error *parity_bench_comm_run(parity_comm *comm, const parity_bench_comm_options *options,
                                    parity_bench_comm_row **rows, int *row_count);

// ---- shared by the host and the device runner (bench_comm.c, bench_comm_cuda.cu) ----

// buffer[j] = parity_bench_comm_value(rank, j) for j < n, in options' dtype.
void parity_bench_comm_fill(void *buffer, int64_t n, parity_dtype dtype, int rank);
// buffer[i] = a value no correct result has, for i < n.
void parity_bench_comm_poison(void *buffer, int64_t n, parity_dtype dtype);
// Elements of recv[0, receives) that differ from collective->expected on this rank.
int64_t parity_bench_comm_count_wrong(const parity_bench_collective *collective, const void *recv, int64_t count,
                                      parity_dtype dtype, int rank, int ranks);
// The row of a (collective, count) from this rank's `wrong` and its times of the timed calls
// (`seconds`, options->iterations of them): summed and gathered over `comm` (collective), the median
// of the slowest rank's times. `scratch` has room for options->iterations x (ranks + 1) doubles.
parity_error *parity_bench_comm_finish_row(parity_comm *comm, const parity_bench_comm_options *options,
                                           const parity_bench_collective *collective, int64_t count, int64_t wrong,
                                           const double *seconds, double *scratch, parity_bench_comm_row *row);
// The device runner (bench_comm_cuda.cu; an UNAVAILABLE error in a build without CUDA): the rows of
// `chosen` x `counts` on options->device, into `rows` (room for chosen_count x sizes).
parity_error *parity_bench_comm_run_cuda(parity_comm *comm, const parity_bench_comm_options *options,
                                         const parity_bench_collective *const *chosen, int chosen_count,
                                         const int64_t *counts, int sizes, parity_bench_comm_row *rows, int *row_count);

#ifdef __cplusplus
}
#endif
#endif
