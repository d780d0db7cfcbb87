// comm_nccl_stub.c: comm_nccl.h where ops/core/cuda/comm_nccl.cu is not built (CUDA=0, no nvcc, or no
// nccl.h beside the CUDA toolkit: the Makefile picks one of the two): every call is an UNAVAILABLE
// error saying which, nothing pretends to work and nothing falls back to the host.
#include "ops/core/comm_nccl.h"

#include <stdio.h>

#include "ops/core/cuda_api.h"

static parity_error *unavailable(const char *what) {
    return PARITY_ERROR(PARITY_ERROR_UNAVAILABLE, "NCCL %s: %s", what,
                        parity_cuda_built() ? "parity was built without NCCL (no nccl.h beside the CUDA toolkit)"
                                            : "parity was built without CUDA (rebuild with CUDA=1 where nvcc is present)");
}

parity_error *parity_nccl_local_device(int *device_index) {
    *device_index = -1;
    return unavailable("device");
}

parity_error *parity_nccl_version(int *version) {
    *version = 0;
    return unavailable("library");
}

parity_error *parity_nccl_comm_create(parity_comm *comm, int device_index, parity_nccl_comm **out) {
    (void)comm;
    (void)device_index;
    *out = NULL;
    return unavailable("initialization");
}

void parity_nccl_comm_destroy(parity_nccl_comm *nccl) { (void)nccl; }

// No communicator exists in this build, so these are never reached with one.
int parity_nccl_rank(const parity_nccl_comm *nccl) { return (void)nccl, 0; }
int parity_nccl_size(const parity_nccl_comm *nccl) { return (void)nccl, 0; }
int parity_nccl_device(const parity_nccl_comm *nccl) { return (void)nccl, -1; }
const char *parity_nccl_name(const parity_nccl_comm *nccl) { return (void)nccl, ""; }

const char *parity_nccl_collective_name(parity_nccl_collective collective) {
    static const char *const names[] = {"all_reduce", "all_gather",        "reduce_scatter",       "all_to_all",
                                        "all_to_all_v", "broadcast",       "all_reduce_native",    "reduce_scatter_native"};
    return (unsigned)collective < sizeof names / sizeof names[0] ? names[collective] : "collective";
}

parity_error *parity_nccl_start(parity_nccl_comm *nccl, const parity_nccl_call *call, void *stream) {
    (void)nccl;
    (void)stream;
    return unavailable(parity_nccl_collective_name(call->collective));
}

parity_error *parity_nccl_wait(parity_nccl_comm *nccl, void *stream, const char *what) {
    (void)nccl;
    (void)stream;
    return unavailable(what);
}

parity_error *parity_nccl_run(parity_nccl_comm *nccl, const parity_nccl_call *call, void *stream) {
    return parity_nccl_start(nccl, call, stream);
}

parity_error *parity_nccl_all_reduce(parity_nccl_comm *nccl, const void *send, void *recv, int64_t count, parity_dtype dtype,
                                     void *stream) {
    (void)nccl, (void)send, (void)recv, (void)count, (void)dtype, (void)stream;
    return unavailable("all_reduce");
}

parity_error *parity_nccl_all_gather(parity_nccl_comm *nccl, const void *send, void *recv, int64_t count, parity_dtype dtype,
                                     void *stream) {
    (void)nccl, (void)send, (void)recv, (void)count, (void)dtype, (void)stream;
    return unavailable("all_gather");
}

parity_error *parity_nccl_reduce_scatter(parity_nccl_comm *nccl, const void *send, void *recv, int64_t count,
                                         parity_dtype dtype, void *stream) {
    (void)nccl, (void)send, (void)recv, (void)count, (void)dtype, (void)stream;
    return unavailable("reduce_scatter");
}

parity_error *parity_nccl_all_to_all(parity_nccl_comm *nccl, const void *send, void *recv, int64_t count, parity_dtype dtype,
                                     void *stream) {
    (void)nccl, (void)send, (void)recv, (void)count, (void)dtype, (void)stream;
    return unavailable("all_to_all");
}

parity_error *parity_nccl_all_to_all_v(parity_nccl_comm *nccl, const void *send, const int64_t *send_counts, void *recv,
                                       const int64_t *recv_counts, parity_dtype dtype, void *stream) {
    (void)nccl, (void)send, (void)send_counts, (void)recv, (void)recv_counts, (void)dtype, (void)stream;
    return unavailable("all_to_all_v");
}

parity_error *parity_nccl_broadcast(parity_nccl_comm *nccl, void *buffer, int64_t count, parity_dtype dtype, int root,
                                    void *stream) {
    (void)nccl, (void)buffer, (void)count, (void)dtype, (void)root, (void)stream;
    return unavailable("broadcast");
}

parity_error *parity_nccl_sum_in_rank_order(int device_index, const void *blocks, int ranks, int64_t count,
                                            parity_dtype dtype, void *out, void *stream) {
    (void)device_index, (void)blocks, (void)ranks, (void)count, (void)dtype, (void)out, (void)stream;
    return unavailable("rank-order sum");
}
