// comm_nccl.h: the collectives of comm.h on CUDA device buffers, over NCCL (issue 16), for the
// multi-rank layouts on GPUs and `parity bench comm --device cuda`. An NCCL communicator is made from
// an MPI one (parity_comm, comm.h): the same ranks in the same order, one GPU a rank; rank 0's NCCL id
// travels by parity_comm_broadcast. Buffers are device pointers on the communicator's GPU; work is
// queued on the stream given (a cudaStream_t as void *, e.g. parity_exec_stream's).
//
// Sums: parity_nccl_all_reduce and parity_nccl_reduce_scatter keep comm.h's contract, the sum of
// element i in rank order, ((x_0 + x_1) + x_2) + ..., accumulated in f64 for fp64, f32 for fp32 and
// bf16 (bf16 rounded once), int64 for int64: NCCL moves the ranks' values (an all-gather or an
// all-to-all into a scratch buffer of the communicator) and a small kernel adds them in rank order, so
// the result is bitwise reproducible and equal to the MPI path's (comm_mpi.c) for the same values.
// NCCL's own reductions (ring / tree, an order that depends on the algorithm and the rank count) are
// here as the *_native calls, for `parity bench comm` to compare with: they promise no order.
//
// Every call that waits does so with a deadline: NCCL runs non-blocking (config.blocking = 0), its
// initialization, enqueueing and the stream's completion are polled (ncclCommGetAsyncError,
// cudaStreamQuery), and after PARITY_COMM_TIMEOUT_S seconds (default 40, as comm_mpi.c) the
// communicator is aborted (ncclCommAbort) and the call returns a DEVICE error naming the collective,
// the group and the rank; it is recorded as comm.h's parity_comm_failure, and the communicator takes
// no further call. libnccl.so.2 is loaded on first use (dlopen; PARITY_NCCL_LIBRARY names another
// file), so parity runs where NCCL is absent: the calls are then UNAVAILABLE errors naming the
// library, as they are without a CUDA device and in a build without CUDA (comm_nccl_stub.c). Nothing
// falls back to the host path.
#ifndef PARITY_COMM_NCCL_H
#define PARITY_COMM_NCCL_H

#include <stddef.h>
#include <stdint.h>

#include "ops/core/comm.h"
#include "ops/core/dtype.h"
#include "ops/core/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct parity_nccl_comm parity_nccl_comm;

// The GPU of this rank, one a rank: the launcher's local rank (OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID
// or SLURM_LOCALID; 0 without a launcher) modulo the CUDA device count. UNAVAILABLE without a device
// (the reason: none present, built without CUDA) or when this host runs more ranks than it has devices
// (OMPI_COMM_WORLD_LOCAL_SIZE & co.): NCCL cannot put two ranks of a communicator on one GPU.
parity_error *parity_nccl_local_device(int *device_index);
// The NCCL version of the loaded library (e.g. 22809 for 2.28.9), loading it; UNAVAILABLE naming the
// library when it cannot be loaded.
parity_error *parity_nccl_version(int *version);

// Collective over `comm`: an NCCL communicator of its ranks (same rank numbers, named after it) on
// cuda:device_index. Free with parity_nccl_comm_destroy.
parity_error *parity_nccl_comm_create(parity_comm *comm, int device_index, parity_nccl_comm **out);
// Finishes the communicator's work (with the deadline; aborted past it) and frees it, its scratch
// too. NULL is a no-op. Collective over the ranks (NCCL's finalize), like the creation.
void parity_nccl_comm_destroy(parity_nccl_comm *nccl);

int parity_nccl_rank(const parity_nccl_comm *nccl);
int parity_nccl_size(const parity_nccl_comm *nccl);
int parity_nccl_device(const parity_nccl_comm *nccl);
const char *parity_nccl_name(const parity_nccl_comm *nccl);

// A collective to queue, with comm.h's conventions of counts (count is per rank block where the
// collective has blocks) and dtypes: fp64, fp32, bf16, int64.
typedef enum parity_nccl_collective {
    PARITY_NCCL_ALL_REDUCE,        // (count) -> (count): the rank-order sum (all-gather + ordered sum)
    PARITY_NCCL_ALL_GATHER,        // (count) -> (size * count)
    PARITY_NCCL_REDUCE_SCATTER,    // (size * count) -> (count): the rank-order sum (all-to-all + ordered sum)
    PARITY_NCCL_ALL_TO_ALL,        // (size * count) -> (size * count): ncclSend / ncclRecv per peer in a group
    PARITY_NCCL_ALL_TO_ALL_V,      // uneven blocks: send_counts / recv_counts (host arrays of size), as comm.h
    PARITY_NCCL_BROADCAST,         // (count) from `root`'s recv to every rank's recv, in place
    PARITY_NCCL_ALL_REDUCE_NATIVE, // ncclAllReduce (sum): NCCL's order
    PARITY_NCCL_REDUCE_SCATTER_NATIVE, // ncclReduceScatter (sum): NCCL's order
} parity_nccl_collective;

typedef struct parity_nccl_call {
    parity_nccl_collective collective;
    const void *send; // unused by a broadcast
    void *recv;
    int64_t count;
    parity_dtype dtype;
    const int64_t *send_counts, *recv_counts; // PARITY_NCCL_ALL_TO_ALL_V only
    int root;                                 // PARITY_NCCL_BROADCAST only
} parity_nccl_call;

// "all_reduce", "all_reduce_native", ...
const char *parity_nccl_collective_name(parity_nccl_collective collective);

// Queues `call` on `stream` and returns once NCCL has enqueued it (the result is ready for later work
// on the stream, and after parity_nccl_wait). For timing with CUDA events around the queued work.
parity_error *parity_nccl_start(parity_nccl_comm *nccl, const parity_nccl_call *call, void *stream);
// Returns once everything queued on `stream` has finished, polling it and NCCL's error state with the
// deadline; `what` names the collective in errors.
parity_error *parity_nccl_wait(parity_nccl_comm *nccl, void *stream, const char *what);
// parity_nccl_start, then parity_nccl_wait: the blocking form every layout uses.
parity_error *parity_nccl_run(parity_nccl_comm *nccl, const parity_nccl_call *call, void *stream);

// The blocking collectives, comm.h's signatures with the stream last.
parity_error *parity_nccl_all_reduce(parity_nccl_comm *nccl, const void *send, void *recv, int64_t count, parity_dtype dtype,
                                     void *stream);
parity_error *parity_nccl_all_gather(parity_nccl_comm *nccl, const void *send, void *recv, int64_t count, parity_dtype dtype,
                                     void *stream);
parity_error *parity_nccl_reduce_scatter(parity_nccl_comm *nccl, const void *send, void *recv, int64_t count,
                                         parity_dtype dtype, void *stream);
parity_error *parity_nccl_all_to_all(parity_nccl_comm *nccl, const void *send, void *recv, int64_t count, parity_dtype dtype,
                                     void *stream);
parity_error *parity_nccl_all_to_all_v(parity_nccl_comm *nccl, const void *send, const int64_t *send_counts, void *recv,
                                       const int64_t *recv_counts, parity_dtype dtype, void *stream);
parity_error *parity_nccl_broadcast(parity_nccl_comm *nccl, void *buffer, int64_t count, parity_dtype dtype, int root,
                                    void *stream);

// The ordered sum behind all_reduce and reduce_scatter, on its own (for tests): out[i] = the sum over
// r = 0, 1, ..., ranks - 1 in order of blocks[r * count + i] (device pointers on cuda:device_index),
// accumulated and rounded as above, queued on `stream`.
parity_error *parity_nccl_sum_in_rank_order(int device_index, const void *blocks, int ranks, int64_t count,
                                            parity_dtype dtype, void *out, void *stream);

#ifdef __cplusplus
}
#endif
#endif
