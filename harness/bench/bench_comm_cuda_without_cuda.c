// bench_comm_cuda_without_cuda.c: bench_comm_cuda.cu's entry point in a build without CUDA: `parity
// bench comm --device cuda` is an UNAVAILABLE error (exit 2) saying so, never the host path instead.
#include "harness/bench/bench_comm.h"

parity_error *parity_bench_comm_run_cuda(parity_comm *comm, const parity_bench_comm_options *options,
                                         const parity_bench_collective *const *chosen, int chosen_count,
                                         const int64_t *counts, int sizes, parity_bench_comm_row *rows, int *row_count) {
    (void)comm, (void)options, (void)chosen, (void)chosen_count, (void)counts, (void)sizes, (void)rows;
    *row_count = 0;
    return PARITY_ERROR(PARITY_ERROR_UNAVAILABLE,
                        "bench comm --device cuda: parity was built without CUDA (rebuild with CUDA=1 where nvcc is "
                        "present); --device cpu times MPI on host buffers");
}
