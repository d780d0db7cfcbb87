// bench_comm_cuda.cu: the device runner of `parity bench comm --device cuda` (bench_comm.h): the same
// sizes, values, checks and rows as the host runner, on device buffers over NCCL (comm_nccl.h), one
// GPU a rank, on the stream of an execution context of that GPU. Per (collective, size): the sent
// values and a poisoned receive buffer are copied up, one checked call is read back and compared
// with the exact expected values, then warm-up calls, then timed calls: an MPI barrier, a CUDA event,
// the call queued, a CUDA event, the wait (with comm_nccl.h's deadline) and the events' elapsed time;
// the row takes the median of the slowest rank's times. No L2 flush between calls (as nccl-tests).
// all_reduce_wrong_group (the checker's check) runs the rank-order all_reduce over an NCCL
// communicator of the wrong group, made once.
#include <cuda_runtime.h>
#include <stdlib.h>
#include <string.h>

#include "ops/core/cuda/cuda_check.h"

extern "C" {
#include "harness/bench/bench_comm.h"
#include "ops/core/comm_nccl.h"
#include "ops/core/exec.h"
}

namespace {

struct device_bench {
    parity_comm *comm;
    const parity_bench_comm_options *options;
    parity_exec *exec;
    cudaStream_t stream;
    parity_nccl_comm *nccl;
    parity_comm *wrong_group;         // all_reduce_wrong_group's, made on first use
    parity_nccl_comm *wrong_nccl;
    void *send, *recv;                // device, the largest message each
    void *host_send, *host_recv;      // host staging
    double *seconds, *scratch;        // this rank's timed calls; finish_row's room
    cudaEvent_t start, stop;
};

// Which NCCL communicator and call a collective of the table is on this device.
parity_error *prepare(device_bench *bench, const parity_bench_collective *collective, int64_t count,
                      parity_nccl_comm **nccl, parity_nccl_call *call) {
    const int ranks = parity_comm_size(bench->comm);
    *nccl = bench->nccl;
    *call = parity_nccl_call{};
    call->send = bench->send;
    call->recv = bench->recv;
    call->dtype = bench->options->dtype;
    const char *name = collective->name;
    if (strcmp(name, "all_reduce") == 0) {
        call->collective = PARITY_NCCL_ALL_REDUCE, call->count = count;
    } else if (strcmp(name, "all_reduce_native") == 0) {
        call->collective = PARITY_NCCL_ALL_REDUCE_NATIVE, call->count = count;
    } else if (strcmp(name, "all_gather") == 0) {
        call->collective = PARITY_NCCL_ALL_GATHER, call->count = count / ranks;
    } else if (strcmp(name, "reduce_scatter") == 0) {
        call->collective = PARITY_NCCL_REDUCE_SCATTER, call->count = count / ranks;
    } else if (strcmp(name, "reduce_scatter_native") == 0) {
        call->collective = PARITY_NCCL_REDUCE_SCATTER_NATIVE, call->count = count / ranks;
    } else if (strcmp(name, "all_to_all") == 0) {
        call->collective = PARITY_NCCL_ALL_TO_ALL, call->count = count / ranks;
    } else if (strcmp(name, "broadcast") == 0) {
        call->collective = PARITY_NCCL_BROADCAST, call->count = count, call->root = 0;
    } else if (strcmp(name, "all_reduce_wrong_group") == 0) {
        // every rank but the last reduces among themselves, the last alone (bench_comm.c's host form)
        if (!bench->wrong_nccl) {
            const int rank = parity_comm_rank(bench->comm), last = ranks - 1;
            PARITY_TRY(parity_comm_split(bench->comm, rank == last && last > 0 ? 1 : 0, rank, "all but the last rank",
                                         &bench->wrong_group));
            PARITY_TRY(parity_nccl_comm_create(bench->wrong_group, parity_nccl_device(bench->nccl), &bench->wrong_nccl));
        }
        *nccl = bench->wrong_nccl;
        call->collective = PARITY_NCCL_ALL_REDUCE, call->count = count;
    } else {
        return PARITY_ERROR(PARITY_ERROR_USAGE, "bench comm: %s has no NCCL form", name);
    }
    return NULL;
}

parity_error *copy(void *to, const void *from, size_t bytes, cudaMemcpyKind kind, cudaStream_t stream) {
    PARITY_CUDA_TRY(cudaMemcpyAsync(to, from, bytes, kind, stream));
    PARITY_CUDA_TRY(cudaStreamSynchronize(stream)); // only copies are queued here (every call was waited for)
    return NULL;
}

parity_error *measure(device_bench *bench, const parity_bench_collective *collective, int64_t count,
                      parity_bench_comm_row *row) {
    const parity_bench_comm_options *options = bench->options;
    const int rank = parity_comm_rank(bench->comm), ranks = parity_comm_size(bench->comm);
    const parity_dtype dtype = options->dtype;
    const size_t element = parity_dtype_size(dtype);
    const int64_t sends = collective->send_count(count, ranks), receives = collective->recv_count(count, ranks);
    parity_nccl_comm *nccl;
    parity_nccl_call call;
    PARITY_TRY(prepare(bench, collective, count, &nccl, &call));
    const char *what = collective->name;
    parity_bench_comm_fill(bench->host_send, sends, dtype, rank);
    parity_bench_comm_poison(bench->host_recv, receives, dtype);
    PARITY_TRY(copy(bench->send, bench->host_send, (size_t)sends * element, cudaMemcpyHostToDevice, bench->stream));
    PARITY_TRY(copy(bench->recv, bench->host_recv, (size_t)receives * element, cudaMemcpyHostToDevice, bench->stream));
    if (call.collective == PARITY_NCCL_BROADCAST && rank == call.root) // in place: the root's values in recv, once
        PARITY_TRY(copy(bench->recv, bench->send, (size_t)count * element, cudaMemcpyDeviceToDevice, bench->stream));
    PARITY_TRY(parity_nccl_run(nccl, &call, bench->stream));
    PARITY_TRY(copy(bench->host_recv, bench->recv, (size_t)receives * element, cudaMemcpyDeviceToHost, bench->stream));
    const int64_t wrong = parity_bench_comm_count_wrong(collective, bench->host_recv, count, dtype, rank, ranks);
    for (int w = 0; w < options->warmup; w++) PARITY_TRY(parity_nccl_run(nccl, &call, bench->stream));
    for (int it = 0; it < options->iterations; it++) {
        PARITY_TRY(parity_comm_barrier(bench->comm));
        PARITY_CUDA_TRY(cudaEventRecord(bench->start, bench->stream));
        PARITY_TRY(parity_nccl_start(nccl, &call, bench->stream));
        PARITY_CUDA_TRY(cudaEventRecord(bench->stop, bench->stream));
        PARITY_TRY(parity_nccl_wait(nccl, bench->stream, what));
        float milliseconds = 0;
        PARITY_CUDA_TRY(cudaEventElapsedTime(&milliseconds, bench->start, bench->stop));
        bench->seconds[it] = 1e-3 * (double)milliseconds;
    }
    return parity_bench_comm_finish_row(bench->comm, options, collective, count, wrong, bench->seconds, bench->scratch, row);
}

parity_error *open_bench(device_bench *bench, int64_t largest) {
    const parity_bench_comm_options *options = bench->options;
    const int device = options->device.index, ranks = parity_comm_size(bench->comm);
    // the communicator first: it checks every rank has a device and NCCL before any rank allocates
    PARITY_TRY(parity_nccl_comm_create(bench->comm, device, &bench->nccl));
    PARITY_TRY(parity_exec_create(options->device, &bench->exec));
    bench->stream = (cudaStream_t)parity_exec_stream(bench->exec);
    const size_t bytes = (size_t)largest * parity_dtype_size(options->dtype);
    PARITY_CUDA_TRY(cudaSetDevice(device));
    cudaError_t status = cudaMalloc(&bench->send, bytes);
    if (status == cudaSuccess) status = cudaMalloc(&bench->recv, bytes);
    if (status != cudaSuccess) {
        cudaGetLastError();
        return PARITY_ERROR(PARITY_ERROR_MEMORY, "bench comm: two device buffers of %zu bytes on cuda:%d: %s", bytes, device,
                            cudaGetErrorString(status));
    }
    PARITY_CUDA_TRY(cudaEventCreate(&bench->start));
    PARITY_CUDA_TRY(cudaEventCreate(&bench->stop));
    bench->host_send = malloc(bytes);
    bench->host_recv = malloc(bytes);
    bench->seconds = (double *)malloc((size_t)options->iterations * sizeof(double));
    bench->scratch = (double *)malloc((size_t)options->iterations * (size_t)(ranks + 1) * sizeof(double));
    if (!bench->host_send || !bench->host_recv || !bench->seconds || !bench->scratch)
        return PARITY_ERROR(PARITY_ERROR_MEMORY, "bench comm: host buffers of %zu bytes", bytes);
    return NULL;
}

void close_bench(device_bench *bench) {
    if (bench->exec) cudaSetDevice(bench->options->device.index);
    // after a failure the communicators were aborted: nothing of theirs is still queued
    parity_nccl_comm_destroy(bench->wrong_nccl);
    parity_comm_free(bench->wrong_group);
    parity_nccl_comm_destroy(bench->nccl);
    if (bench->start) cudaEventDestroy(bench->start);
    if (bench->stop) cudaEventDestroy(bench->stop);
    if (bench->send) cudaFree(bench->send);
    if (bench->recv) cudaFree(bench->recv);
    parity_exec_destroy(bench->exec);
    free(bench->host_send);
    free(bench->host_recv);
    free(bench->seconds);
    free(bench->scratch);
}

} // namespace

extern "C" parity_error *parity_bench_comm_run_cuda(parity_comm *comm, const parity_bench_comm_options *options,
                                                    const parity_bench_collective *const *chosen, int chosen_count,
                                                    const int64_t *counts, int sizes, parity_bench_comm_row *rows,
                                                    int *row_count) {
    *row_count = 0;
    PARITY_CHECK(options->device.type == PARITY_DEVICE_CUDA, PARITY_ERROR_USAGE, "bench comm: the device runner needs cuda");
    device_bench bench = {};
    bench.comm = comm;
    bench.options = options;
    parity_error *error = open_bench(&bench, counts[sizes - 1]);
    for (int c = 0; !error && c < chosen_count; c++)
        for (int s = 0; !error && s < sizes; s++) {
            error = measure(&bench, chosen[c], counts[s], &rows[*row_count]);
            if (!error) (*row_count)++;
        }
    // a failed collective left the ranks unpaired: no communicator is finalized (a collective step)
    if (error && parity_comm_failure() && parity_comm_size(comm) > 1)
        bench.nccl = bench.wrong_nccl = NULL; // aborted, or left as the ranks part (the process ends)
    close_bench(&bench);
    return error;
}
