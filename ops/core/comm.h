// comm.h: collectives behind one small interface (issue 16), for the multi-rank layouts (data parallel,
// FSDP, Ulysses, expert parallel) and `parity bench comm`. A communicator is a group of ranks; every
// call is collective (each rank of the group makes it with the same counts and dtype) and blocking.
// Buffers are contiguous host arrays of `dtype` (the MPI transport, comm_mpi.c; the same collectives on
// CUDA device buffers over NCCL, with the same sums, are comm_nccl.h's, made from one of these).
//
// Sums are in a fixed order, the same on every rank and every run: element i of a reduction is
//   ((x_0[i] + x_1[i]) + x_2[i]) + ... + x_{n-1}[i]     (x_r: rank r's values, ranks in group order)
// accumulated in f64 for fp64, f32 for fp32 and bf16 (bf16 rounded once at the end), so a layout is
// reproducible and equal to a serial sum in rank order; MPI's own reductions promise no order, so
// these gather the ranks' values and add them locally.
//
// Errors are PARITY_ERROR_DEVICE with the collective, the group and MPI's message; an MPI error never
// aborts the process (the world's error handler returns).
#ifndef PARITY_COMM_H
#define PARITY_COMM_H

#include <stdint.h>

#include "ops/core/dtype.h"
#include "ops/core/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct parity_comm parity_comm;

// The group of every rank the process was launched with (mpirun / srun), MPI initialized on the first
// call; a process started without a launcher (or by one, with one rank) is a world of one rank that
// never initializes MPI. Owned by the library: do not free.
parity_error *parity_comm_world(parity_comm **out);
// Whether this process was started by an MPI launcher with more than one rank (from the launcher's
// environment; no MPI call), so callers can decide before initializing anything.
int parity_comm_launched_size(void);

int parity_comm_rank(const parity_comm *comm);
int parity_comm_size(const parity_comm *comm);
const char *parity_comm_name(const parity_comm *comm); // "world", or the name given to a split

// Sub-groups (dp, sp, ep): the ranks with the same `color` form a group, ordered by `key`; `name`
// (copied) appears in errors. Collective over `comm`. Free with parity_comm_free.
parity_error *parity_comm_split(parity_comm *comm, int color, int key, const char *name, parity_comm **out);
void parity_comm_free(parity_comm *comm); // NULL, the world and prefixes are no-ops

// The group of the world's first `ranks` ranks (1 <= ranks <= world size; the world itself for all of
// them), owned by the library and made once per count: the first call for a count is collective over
// the world (every rank makes it, in the same order of counts), later ones are not. A rank past them
// gets *out = NULL.
parity_error *parity_comm_world_prefix(int ranks, parity_comm **out);

// (count) -> (count) on every rank: the sum in rank order.
parity_error *parity_comm_all_reduce(parity_comm *comm, const void *send, void *recv, int64_t count, parity_dtype dtype);
// (count) -> (size * count): rank r's values at [r * count, (r + 1) * count).
parity_error *parity_comm_all_gather(parity_comm *comm, const void *send, void *recv, int64_t count, parity_dtype dtype);
// (size * count) -> (count): rank r gets the rank-order sum of everyone's block r.
parity_error *parity_comm_reduce_scatter(parity_comm *comm, const void *send, void *recv, int64_t count,
                                         parity_dtype dtype);
// (size * count) -> (size * count): block s of rank r's send goes to block r of rank s's recv.
parity_error *parity_comm_all_to_all(parity_comm *comm, const void *send, void *recv, int64_t count, parity_dtype dtype);
// The uneven all-to-all (expert-parallel dispatch): send holds size blocks in rank order, block s of
// send_counts[s] elements for rank s; recv gets size blocks in rank order, block r of recv_counts[r]
// elements from rank r. The counts must match across ranks (rank s's recv_counts[r] is rank r's
// send_counts[s]; parity_comm_all_to_all of the counts, count 1 in PARITY_I64, exchanges them first).
// A block must be under 2 GiB.
parity_error *parity_comm_all_to_all_v(parity_comm *comm, const void *send, const int64_t *send_counts, void *recv,
                                       const int64_t *recv_counts, parity_dtype dtype);
// `count` elements from `root` to every rank, in place.
parity_error *parity_comm_broadcast(parity_comm *comm, void *buffer, int64_t count, parity_dtype dtype, int root);
parity_error *parity_comm_barrier(parity_comm *comm);

// Before any collective of a piece of work: whether every rank was asked for the same work. `data`
// (`bytes` of it) describes what this rank is about to do (its options, suite, config, batch); a
// 64-bit fingerprint of it is gathered from every rank, and a rank whose fingerprint differs from
// rank 0's is a USAGE error on every rank: "rank R was given other WHAT than rank 0".
parity_error *parity_comm_check_agreement(parity_comm *comm, const char *what, const void *data, size_t bytes);

// Ends MPI if the library started it (at exit of the CLI; later calls are errors).
void parity_comm_finalize(void);
// For a rank that failed while others may still wait for it (MPI_Finalize would wait for them too):
// ends every rank of the run at once with `exit_code` (MPI_Abort). Without MPI started, or in a
// one-rank world, it returns and the caller exits as usual.
void parity_comm_abort(int exit_code);
// NULL while every collective finished; after one failed or timed out (a rank died, hangs or took
// another path), that first failure's message, for good: the ranks no longer pair up, so a caller
// makes no further collective (a run records the combo, writes its reports and ends with exit 3).
const char *parity_comm_failure(void);
// How long a rank waits for the others in one collective before it errors: PARITY_COMM_TIMEOUT_S
// seconds, default 40 (the MPI and NCCL transports both).
double parity_comm_timeout_seconds(void);
// Records `error` (not taken) as that first failure when none is recorded yet: for another transport
// over the same ranks (comm_nccl.h), whose failed collective leaves the ranks unpaired as well.
void parity_comm_record_failure(const parity_error *error);

#ifdef __cplusplus
}
#endif
#endif
