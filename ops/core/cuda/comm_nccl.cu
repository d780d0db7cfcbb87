// comm_nccl.cu: comm_nccl.h over NCCL, loaded with dlopen on first use (as cublas_library.cu loads
// cuBLAS) so that a binary built with CUDA runs where NCCL is absent; nccl.h gives the types only.
// The communicator is non-blocking (config.blocking = 0): each NCCL call may return ncclInProgress,
// after which ncclCommGetAsyncError is polled until ncclSuccess, and a call's completion is the
// stream's, polled with cudaStreamQuery; every poll has comm_mpi.c's deadline (PARITY_COMM_TIMEOUT_S,
// default 40 s), past which the communicator is aborted. The rank-order sums are a grid-stride kernel
// over the gathered blocks: element i's adds are one thread's loop over the ranks in order, in the
// accumulation type of comm.h, so they are the host loop of comm_mpi.c bit for bit (no FMA: additions
// only; nvcc keeps denormals without --use_fast_math).
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <mutex>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ops/core/cuda/cuda_check.h"

extern "C" {
#include "ops/core/comm_nccl.h"
#include "ops/core/cuda_api.h"
}

namespace {

// ---- the library ----

struct nccl_library {
    decltype(&ncclGetVersion) get_version;
    decltype(&ncclGetUniqueId) get_unique_id;
    decltype(&ncclCommInitRankConfig) init_rank_config;
    decltype(&ncclCommGetAsyncError) get_async_error;
    decltype(&ncclCommFinalize) finalize;
    decltype(&ncclCommDestroy) destroy;
    decltype(&ncclCommAbort) abort;
    decltype(&ncclGetErrorString) error_string;
    decltype(&ncclGetLastError) last_error;
    decltype(&ncclAllReduce) all_reduce;
    decltype(&ncclReduceScatter) reduce_scatter;
    decltype(&ncclAllGather) all_gather;
    decltype(&ncclBroadcast) broadcast;
    decltype(&ncclSend) send;
    decltype(&ncclRecv) recv;
    decltype(&ncclGroupStart) group_start;
    decltype(&ncclGroupEnd) group_end;
};

std::once_flag load_once;
nccl_library library;
bool loaded;
char load_failure[768];

template <typename Function> bool lookup(void *handle, const char *name, const char *symbol, Function &out) {
    out = reinterpret_cast<Function>(dlsym(handle, symbol));
    if (!out) snprintf(load_failure, sizeof load_failure, "NCCL (%s) has no symbol %s: NCCL 2.14 or newer is needed", name, symbol);
    return out != nullptr;
}

void load() {
    const char *chosen = getenv("PARITY_NCCL_LIBRARY");
    const char *names[] = {"libnccl.so.2", "libnccl.so", "/usr/local/cuda/lib64/libnccl.so.2"};
    void *handle = nullptr;
    const char *name = nullptr;
    char why[512] = "";
    if (chosen && *chosen) {
        name = chosen;
        handle = dlopen(chosen, RTLD_NOW | RTLD_LOCAL);
        if (!handle) snprintf(why, sizeof why, "%s", dlerror());
    } else {
        for (const char *candidate : names) {
            if ((handle = dlopen(candidate, RTLD_NOW | RTLD_LOCAL))) {
                name = candidate;
                break;
            }
            if (!why[0]) snprintf(why, sizeof why, "%s", dlerror()); // the first name's reason
        }
    }
    if (!handle) {
        snprintf(load_failure, sizeof load_failure,
                 "cannot load NCCL (%s): %s (install NCCL, or name the library with PARITY_NCCL_LIBRARY)",
                 chosen && *chosen ? chosen : "libnccl.so.2", why);
        return;
    }
    loaded = lookup(handle, name, "ncclGetVersion", library.get_version) &&
             lookup(handle, name, "ncclGetUniqueId", library.get_unique_id) &&
             lookup(handle, name, "ncclCommInitRankConfig", library.init_rank_config) &&
             lookup(handle, name, "ncclCommGetAsyncError", library.get_async_error) &&
             lookup(handle, name, "ncclCommFinalize", library.finalize) &&
             lookup(handle, name, "ncclCommDestroy", library.destroy) && lookup(handle, name, "ncclCommAbort", library.abort) &&
             lookup(handle, name, "ncclGetErrorString", library.error_string) &&
             lookup(handle, name, "ncclGetLastError", library.last_error) &&
             lookup(handle, name, "ncclAllReduce", library.all_reduce) &&
             lookup(handle, name, "ncclReduceScatter", library.reduce_scatter) &&
             lookup(handle, name, "ncclAllGather", library.all_gather) &&
             lookup(handle, name, "ncclBroadcast", library.broadcast) && lookup(handle, name, "ncclSend", library.send) &&
             lookup(handle, name, "ncclRecv", library.recv) && lookup(handle, name, "ncclGroupStart", library.group_start) &&
             lookup(handle, name, "ncclGroupEnd", library.group_end);
    if (!loaded) memset(&library, 0, sizeof library);
}

parity_error *get_library(const nccl_library **out) {
    std::call_once(load_once, load);
    if (!loaded) return PARITY_ERROR(PARITY_ERROR_UNAVAILABLE, "%s", load_failure);
    *out = &library;
    return NULL;
}

// ---- deadlines (comm_mpi.c's rule) ----

double now_seconds() {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + 1e-9 * (double)now.tv_nsec;
}

void pause_after(long polls) {
    if (polls > 1000) { // past the first microseconds, poll gently
        struct timespec pause = {0, 50000};
        nanosleep(&pause, NULL);
    }
}

ncclDataType_t nccl_type(parity_dtype dtype) {
    switch (dtype) {
    case PARITY_F64: return ncclFloat64;
    case PARITY_F32: return ncclFloat32;
    case PARITY_BF16: return ncclBfloat16;
    default: return ncclInt64; // PARITY_I64 (check_call admits nothing else)
    }
}

// ---- the rank-order sum ----

template <typename T, typename A> __global__ void sum_in_rank_order_kernel(const T *blocks, int ranks, int64_t count, T *out) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride) {
        A sum = (A)blocks[i];
        for (int r = 1; r < ranks; r++) sum += (A)blocks[(int64_t)r * count + i];
        out[i] = (T)sum;
    }
}

// bf16 as dtype.h's bits: f32 sums, rounded once (dtype.h's round-to-nearest-even, NaNs as the host's)
__global__ void sum_in_rank_order_bf16_kernel(const uint16_t *blocks, int ranks, int64_t count, uint16_t *out) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride) {
        float sum = parity_bf16_to_f32(blocks[i]);
        for (int r = 1; r < ranks; r++) sum += parity_bf16_to_f32(blocks[(int64_t)r * count + i]);
        out[i] = parity_f32_to_bf16(sum);
    }
}

parity_error *queue_sum(const void *blocks, int ranks, int64_t count, parity_dtype dtype, void *out, cudaStream_t stream) {
    if (count == 0) return NULL;
    const int threads = 256;
    const int64_t wanted = (count + threads - 1) / threads;
    const int grid = (int)(wanted < 65536 ? wanted : 65536);
    switch (dtype) {
    case PARITY_F64:
        sum_in_rank_order_kernel<double, double><<<grid, threads, 0, stream>>>((const double *)blocks, ranks, count, (double *)out);
        break;
    case PARITY_F32:
        sum_in_rank_order_kernel<float, float><<<grid, threads, 0, stream>>>((const float *)blocks, ranks, count, (float *)out);
        break;
    case PARITY_I64:
        sum_in_rank_order_kernel<int64_t, int64_t>
            <<<grid, threads, 0, stream>>>((const int64_t *)blocks, ranks, count, (int64_t *)out);
        break;
    default:
        sum_in_rank_order_bf16_kernel<<<grid, threads, 0, stream>>>((const uint16_t *)blocks, ranks, count, (uint16_t *)out);
        break;
    }
    PARITY_CUDA_TRY_LAUNCH("sum_in_rank_order_kernel");
    return NULL;
}

bool moves(parity_dtype dtype) {
    return dtype == PARITY_F64 || dtype == PARITY_F32 || dtype == PARITY_BF16 || dtype == PARITY_I64;
}

} // namespace

struct parity_nccl_comm {
    ncclComm_t handle; // NULL once aborted
    int rank, size, device;
    bool failed;       // a call failed or timed out: the communicator was aborted, no further call
    char name[48];
    void *scratch;     // the gathered blocks of the rank-order sums
    size_t scratch_bytes;
    cudaEvent_t scratch_free; // recorded after the last use of the scratch
    bool scratch_used;
};

// ---- errors: every NCCL failure aborts the communicator and is comm.h's first failure ----

static parity_error *broken(parity_nccl_comm *nccl, parity_error *error) {
    if (nccl && nccl->handle) {
        library.abort(nccl->handle); // frees the communicator; queued NCCL kernels stop
        nccl->handle = NULL;
    }
    if (nccl) nccl->failed = true;
    parity_comm_record_failure(error);
    return error;
}

static parity_error *nccl_error(parity_nccl_comm *nccl, const char *what, ncclResult_t code, const char *file, int line) {
    const char *detail = library.last_error ? library.last_error(nccl ? nccl->handle : NULL) : "";
    return broken(nccl, parity_error_new(PARITY_ERROR_DEVICE, file, line, "NCCL %s over the %s group (rank %d of %d, cuda:%d): %s%s%s",
                                         what, nccl->name, nccl->rank, nccl->size, nccl->device,
                                         library.error_string ? library.error_string(code) : "error",
                                         detail && *detail ? ": " : "", detail ? detail : ""));
}

static parity_error *cuda_error(parity_nccl_comm *nccl, const char *what, cudaError_t status, const char *file, int line) {
    return broken(nccl, parity_error_new(PARITY_ERROR_DEVICE, file, line,
                                         "NCCL %s over the %s group (rank %d of %d, cuda:%d): CUDA: %s (%s)", what, nccl->name,
                                         nccl->rank, nccl->size, nccl->device, cudaGetErrorString(status),
                                         cudaGetErrorName(status)));
}

static parity_error *timed_out(parity_nccl_comm *nccl, const char *what, double waited, const char *file, int line) {
    return broken(nccl, parity_error_new(PARITY_ERROR_DEVICE, file, line,
                                         "NCCL %s over the %s group: rank %d of %d (cuda:%d) waited %.0f s for the others (a "
                                         "rank died, hangs or took another path; PARITY_COMM_TIMEOUT_S sets the limit); the "
                                         "communicator was aborted",
                                         what, nccl->name, nccl->rank, nccl->size, nccl->device, waited));
}

#define NCCL_FAILED(nccl, what, code) nccl_error((nccl), (what), (code), __FILE__, __LINE__)
#define CUDA_FAILED(nccl, what, status) cuda_error((nccl), (what), (status), __FILE__, __LINE__)

// Polls the communicator's state until NCCL has finished what it was doing in the background
// (initialization, an enqueue that returned ncclInProgress), with the deadline.
static parity_error *settle(parity_nccl_comm *nccl, const char *what) {
    const double limit = parity_comm_timeout_seconds(), started = now_seconds();
    for (long polls = 0;; polls++) {
        ncclResult_t state = ncclInProgress;
        ncclResult_t code = library.get_async_error(nccl->handle, &state);
        if (code != ncclSuccess) return NCCL_FAILED(nccl, what, code);
        if (state == ncclSuccess) return NULL;
        if (state != ncclInProgress) return NCCL_FAILED(nccl, what, state);
        const double waited = now_seconds() - started;
        if (waited > limit) return timed_out(nccl, what, waited, __FILE__, __LINE__);
        pause_after(polls);
    }
}

// The result of an NCCL call on the non-blocking communicator: done, in progress (settled here), or failed.
static parity_error *called(parity_nccl_comm *nccl, const char *what, ncclResult_t code) {
    if (code == ncclSuccess) return NULL;
    if (code == ncclInProgress) return settle(nccl, what);
    return NCCL_FAILED(nccl, what, code);
}

extern "C" parity_error *parity_nccl_version(int *version) {
    const nccl_library *nccl;
    PARITY_TRY(get_library(&nccl));
    ncclResult_t code = nccl->get_version(version);
    if (code != ncclSuccess) return PARITY_ERROR(PARITY_ERROR_DEVICE, "ncclGetVersion: %s", nccl->error_string(code));
    return NULL;
}

static int environment_int(const char *const *names, size_t count, int fallback) {
    for (size_t i = 0; i < count; i++) {
        const char *value = getenv(names[i]);
        if (value && *value) {
            char *end;
            long parsed = strtol(value, &end, 10);
            if (end != value && !*end && parsed >= 0 && parsed < (1 << 24)) return (int)parsed;
        }
    }
    return fallback;
}

extern "C" parity_error *parity_nccl_local_device(int *device_index) {
    *device_index = -1;
    char reason[256] = "";
    int devices = parity_cuda_runtime_device_count(reason, sizeof reason);
    if (devices <= 0) return PARITY_ERROR(PARITY_ERROR_UNAVAILABLE, "NCCL needs a CUDA device: %s", reason);
    static const char *const local_rank[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"};
    static const char *const local_size[] = {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"};
    const int rank = environment_int(local_rank, 3, 0), ranks = environment_int(local_size, 2, 1);
    if (ranks > devices)
        return PARITY_ERROR(PARITY_ERROR_UNAVAILABLE,
                            "%d ranks on this host and %d CUDA device%s: NCCL needs a GPU of its own for every rank (run "
                            "at most %d rank%s a host)",
                            ranks, devices, devices == 1 ? "" : "s", devices, devices == 1 ? "" : "s");
    *device_index = rank % devices;
    return NULL;
}

extern "C" int parity_nccl_rank(const parity_nccl_comm *nccl) { return nccl->rank; }
extern "C" int parity_nccl_size(const parity_nccl_comm *nccl) { return nccl->size; }
extern "C" int parity_nccl_device(const parity_nccl_comm *nccl) { return nccl->device; }
extern "C" const char *parity_nccl_name(const parity_nccl_comm *nccl) { return nccl->name; }

// This rank's own readiness (a device, the library), before any rank waits for another.
static parity_error *ready_here(int device_index) {
    char reason[256] = "";
    int devices = parity_cuda_runtime_device_count(reason, sizeof reason);
    if (devices <= 0) return PARITY_ERROR(PARITY_ERROR_UNAVAILABLE, "NCCL needs a CUDA device: %s", reason);
    if (device_index < 0 || device_index >= devices)
        return PARITY_ERROR(PARITY_ERROR_UNAVAILABLE, "NCCL on cuda:%d: there %s %d CUDA device%s", device_index,
                            devices == 1 ? "is" : "are", devices, devices == 1 ? "" : "s");
    const nccl_library *unused;
    return get_library(&unused);
}

extern "C" parity_error *parity_nccl_comm_create(parity_comm *comm, int device_index, parity_nccl_comm **out) {
    *out = NULL;
    const int rank = parity_comm_rank(comm), size = parity_comm_size(comm);
    // every rank says whether it can take part, so that one that cannot stops every rank at once
    // instead of leaving the others in NCCL's initialization until the deadline
    parity_error *mine = ready_here(device_index);
    int64_t *states = (int64_t *)calloc((size_t)size, sizeof *states);
    if (!states) {
        parity_error_free(mine);
        return PARITY_ERROR(PARITY_ERROR_MEMORY, "NCCL over the %s group: %d ranks' states", parity_comm_name(comm), size);
    }
    int64_t state = mine ? 1 : 0;
    parity_error *error = parity_comm_all_gather(comm, &state, states, 1, PARITY_I64);
    for (int r = 0; !error && !mine && r < size; r++)
        if (states[r])
            error = PARITY_ERROR(PARITY_ERROR_UNAVAILABLE,
                                 "NCCL over the %s group: rank %d cannot take part (its own message says why)",
                                 parity_comm_name(comm), r);
    free(states);
    if (mine) {
        parity_error_free(error);
        return parity_error_wrap(mine, __FILE__, __LINE__, "NCCL over the %s group (rank %d of %d)", parity_comm_name(comm),
                                 rank, size);
    }
    if (error) return error;

    // rank 0's id, with whether it could make one, to every rank
    struct {
        int64_t ok;
        ncclUniqueId id;
    } shared;
    memset(&shared, 0, sizeof shared);
    ncclResult_t id_code = ncclSuccess;
    if (rank == 0) {
        id_code = library.get_unique_id(&shared.id);
        shared.ok = id_code == ncclSuccess;
    }
    PARITY_TRY_CONTEXT(parity_comm_broadcast(comm, &shared, (int64_t)sizeof shared, PARITY_U8, 0),
                       "sending NCCL's id over the %s group", parity_comm_name(comm));
    if (!shared.ok)
        return PARITY_ERROR(PARITY_ERROR_DEVICE, "NCCL over the %s group: rank 0 could not make the NCCL id%s%s",
                            parity_comm_name(comm), rank == 0 ? ": " : "", rank == 0 ? library.error_string(id_code) : "");

    parity_nccl_comm *nccl = (parity_nccl_comm *)calloc(1, sizeof *nccl);
    if (!nccl) return PARITY_ERROR(PARITY_ERROR_MEMORY, "NCCL over the %s group", parity_comm_name(comm));
    nccl->rank = rank;
    nccl->size = size;
    nccl->device = device_index;
    snprintf(nccl->name, sizeof nccl->name, "%s", parity_comm_name(comm));
    cudaError_t status = cudaSetDevice(device_index);
    if (status == cudaSuccess) status = cudaEventCreateWithFlags(&nccl->scratch_free, cudaEventDisableTiming);
    if (status != cudaSuccess) {
        error = CUDA_FAILED(nccl, "initialization", status);
        free(nccl);
        return error;
    }
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    config.commName = nccl->name;
    ncclResult_t code = library.init_rank_config(&nccl->handle, size, shared.id, rank, &config);
    error = code == ncclSuccess || code == ncclInProgress ? settle(nccl, "initialization") : NCCL_FAILED(nccl, "initialization", code);
    if (error) {
        cudaEventDestroy(nccl->scratch_free);
        free(nccl);
        return error;
    }
    *out = nccl;
    return NULL;
}

extern "C" void parity_nccl_comm_destroy(parity_nccl_comm *nccl) {
    if (!nccl) return;
    cudaSetDevice(nccl->device);
    if (nccl->handle && !nccl->failed) {
        // finalize flushes the communicator's work (collective: every rank); past the deadline, abort
        parity_error *error = called(nccl, "finalize", library.finalize(nccl->handle));
        if (error) parity_error_free(error); // aborted (handle NULL) and recorded
        if (nccl->handle) library.destroy(nccl->handle);
    } else if (nccl->handle) {
        library.abort(nccl->handle);
    }
    if (nccl->scratch) cudaFree(nccl->scratch); // waits for the device: nothing still reads it
    cudaEventDestroy(nccl->scratch_free);
    free(nccl);
}

extern "C" const char *parity_nccl_collective_name(parity_nccl_collective collective) {
    switch (collective) {
    case PARITY_NCCL_ALL_REDUCE: return "all_reduce";
    case PARITY_NCCL_ALL_GATHER: return "all_gather";
    case PARITY_NCCL_REDUCE_SCATTER: return "reduce_scatter";
    case PARITY_NCCL_ALL_TO_ALL: return "all_to_all";
    case PARITY_NCCL_ALL_TO_ALL_V: return "all_to_all_v";
    case PARITY_NCCL_BROADCAST: return "broadcast";
    case PARITY_NCCL_ALL_REDUCE_NATIVE: return "all_reduce_native";
    case PARITY_NCCL_REDUCE_SCATTER_NATIVE: return "reduce_scatter_native";
    }
    return "collective";
}

// The scratch of a rank-order sum, at least `bytes`, usable on `stream` (after its previous use,
// whatever stream that was on). Plain cudaMalloc, as nccl-tests' buffers: growing waits (with the
// deadline) for the last use of the old one before freeing it.
static parity_error *scratch_for(parity_nccl_comm *nccl, size_t bytes, cudaStream_t stream, const char *what) {
    if (nccl->scratch_bytes < bytes && nccl->scratch) {
        const double limit = parity_comm_timeout_seconds(), started = now_seconds();
        for (long polls = 0;; polls++) {
            cudaError_t status = cudaEventQuery(nccl->scratch_free);
            if (status == cudaSuccess) break;
            if (status != cudaErrorNotReady) return CUDA_FAILED(nccl, what, status);
            const double waited = now_seconds() - started;
            if (waited > limit) return timed_out(nccl, what, waited, __FILE__, __LINE__);
            pause_after(polls);
        }
        cudaError_t status = cudaFree(nccl->scratch);
        nccl->scratch = NULL;
        nccl->scratch_bytes = 0;
        nccl->scratch_used = false;
        if (status != cudaSuccess) return CUDA_FAILED(nccl, what, status);
    }
    if (nccl->scratch_used) {
        cudaError_t status = cudaStreamWaitEvent(stream, nccl->scratch_free, 0);
        if (status != cudaSuccess) return CUDA_FAILED(nccl, what, status);
    }
    if (nccl->scratch) return NULL;
    cudaError_t status = cudaMalloc(&nccl->scratch, bytes);
    if (status != cudaSuccess) {
        cudaGetLastError();
        nccl->scratch = NULL;
        return PARITY_ERROR(PARITY_ERROR_MEMORY, "NCCL %s over the %s group (rank %d, cuda:%d): a scratch of %zu bytes: %s",
                            what, nccl->name, nccl->rank, nccl->device, bytes, cudaGetErrorString(status));
    }
    nccl->scratch_bytes = bytes;
    return NULL;
}

// block s of send (count elements each) -> block r of rank s's recv: a group of sends and receives
static parity_error *exchange(parity_nccl_comm *nccl, const char *what, const void *send, const int64_t *send_counts,
                              void *recv, const int64_t *recv_counts, int64_t count, parity_dtype dtype, cudaStream_t stream) {
    const size_t element = parity_dtype_size(dtype);
    const ncclDataType_t type = nccl_type(dtype);
    ncclResult_t code = library.group_start();
    if (code != ncclSuccess) return NCCL_FAILED(nccl, what, code);
    size_t sent = 0, received = 0;
    for (int peer = 0; peer < nccl->size && code == ncclSuccess; peer++) {
        const size_t out = (size_t)(send_counts ? send_counts[peer] : count), in = (size_t)(recv_counts ? recv_counts[peer] : count);
        if (out) code = library.send((const char *)send + sent * element, out, type, peer, nccl->handle, stream);
        if (in && (code == ncclSuccess || code == ncclInProgress))
            code = library.recv((char *)recv + received * element, in, type, peer, nccl->handle, stream);
        if (code == ncclInProgress) code = ncclSuccess; // settled by the group's end
        sent += out;
        received += in;
    }
    ncclResult_t end = library.group_end(); // always: a group left open would swallow every later call
    if (code != ncclSuccess) return NCCL_FAILED(nccl, what, code);
    return called(nccl, what, end);
}

static parity_error *check_call(parity_nccl_comm *nccl, const parity_nccl_call *call, const char *what) {
    if (nccl->failed || !nccl->handle)
        return PARITY_ERROR(PARITY_ERROR_DEVICE,
                            "NCCL %s over the %s group (rank %d of %d): the communicator was aborted after an earlier "
                            "failure (%s)",
                            what, nccl->name, nccl->rank, nccl->size, parity_comm_failure() ? parity_comm_failure() : "");
    PARITY_CHECK(moves(call->dtype), PARITY_ERROR_USAGE, "NCCL %s: dtype %s is not one the collectives move (fp64, fp32, bf16, int64)",
                 what, parity_dtype_name(call->dtype));
    PARITY_CHECK(call->count >= 0, PARITY_ERROR_USAGE, "NCCL %s over the %s group: count %lld is negative", what, nccl->name,
                 (long long)call->count);
    if (call->collective == PARITY_NCCL_BROADCAST)
        PARITY_CHECK(call->root >= 0 && call->root < nccl->size, PARITY_ERROR_USAGE,
                     "NCCL broadcast over the %s group: root %d of %d ranks", nccl->name, call->root, nccl->size);
    if (call->collective == PARITY_NCCL_ALL_TO_ALL_V) {
        PARITY_CHECK(call->send_counts && call->recv_counts, PARITY_ERROR_USAGE,
                     "NCCL all_to_all_v over the %s group: needs send_counts and recv_counts", nccl->name);
        for (int r = 0; r < nccl->size; r++)
            PARITY_CHECK(call->send_counts[r] >= 0 && call->recv_counts[r] >= 0, PARITY_ERROR_USAGE,
                         "NCCL all_to_all_v over the %s group: rank %d's block for rank %d (%lld sent, %lld received) is negative",
                         nccl->name, nccl->rank, r, (long long)call->send_counts[r], (long long)call->recv_counts[r]);
    }
    return NULL;
}

extern "C" parity_error *parity_nccl_start(parity_nccl_comm *nccl, const parity_nccl_call *call, void *raw_stream) {
    const char *what = parity_nccl_collective_name(call->collective);
    PARITY_TRY(check_call(nccl, call, what));
    if (call->count == 0 && call->collective != PARITY_NCCL_ALL_TO_ALL_V) return NULL;
    cudaStream_t stream = (cudaStream_t)raw_stream;
    cudaError_t status = cudaSetDevice(nccl->device);
    if (status != cudaSuccess) return CUDA_FAILED(nccl, what, status);
    const size_t count = (size_t)call->count, element = parity_dtype_size(call->dtype);
    const ncclDataType_t type = nccl_type(call->dtype);
    switch (call->collective) {
    case PARITY_NCCL_ALL_GATHER:
        return called(nccl, what, library.all_gather(call->send, call->recv, count, type, nccl->handle, stream));
    case PARITY_NCCL_BROADCAST:
        return called(nccl, what, library.broadcast(call->recv, call->recv, count, type, call->root, nccl->handle, stream));
    case PARITY_NCCL_ALL_TO_ALL:
        return exchange(nccl, what, call->send, NULL, call->recv, NULL, call->count, call->dtype, stream);
    case PARITY_NCCL_ALL_TO_ALL_V:
        return exchange(nccl, what, call->send, call->send_counts, call->recv, call->recv_counts, 0, call->dtype, stream);
    case PARITY_NCCL_ALL_REDUCE_NATIVE:
        return called(nccl, what, library.all_reduce(call->send, call->recv, count, type, ncclSum, nccl->handle, stream));
    case PARITY_NCCL_REDUCE_SCATTER_NATIVE:
        return called(nccl, what, library.reduce_scatter(call->send, call->recv, count, type, ncclSum, nccl->handle, stream));
    case PARITY_NCCL_ALL_REDUCE:
    case PARITY_NCCL_REDUCE_SCATTER: {
        // every rank's values (all_reduce: its whole buffer; reduce_scatter: its block for this rank)
        // side by side in the scratch, then the ordered sum
        PARITY_TRY(scratch_for(nccl, (size_t)nccl->size * count * element, stream, what));
        parity_error *error =
            call->collective == PARITY_NCCL_ALL_REDUCE
                ? called(nccl, what, library.all_gather(call->send, nccl->scratch, count, type, nccl->handle, stream))
                : exchange(nccl, what, call->send, NULL, nccl->scratch, NULL, call->count, call->dtype, stream);
        if (!error) error = queue_sum(nccl->scratch, nccl->size, call->count, call->dtype, call->recv, stream);
        if (error) return broken(nccl, error);
        status = cudaEventRecord(nccl->scratch_free, stream);
        if (status != cudaSuccess) return CUDA_FAILED(nccl, what, status);
        nccl->scratch_used = true;
        return NULL;
    }
    }
    return PARITY_ERROR(PARITY_ERROR_USAGE, "NCCL: collective %d is not one of comm_nccl.h's", (int)call->collective);
}

extern "C" parity_error *parity_nccl_wait(parity_nccl_comm *nccl, void *raw_stream, const char *what) {
    cudaStream_t stream = (cudaStream_t)raw_stream;
    if (nccl->failed || !nccl->handle)
        return PARITY_ERROR(PARITY_ERROR_DEVICE, "NCCL %s over the %s group (rank %d of %d): the communicator was aborted",
                            what, nccl->name, nccl->rank, nccl->size);
    cudaError_t status = cudaSetDevice(nccl->device);
    if (status != cudaSuccess) return CUDA_FAILED(nccl, what, status);
    const double limit = parity_comm_timeout_seconds(), started = now_seconds();
    for (long polls = 0;; polls++) {
        status = cudaStreamQuery(stream);
        if (status == cudaSuccess) return NULL;
        if (status != cudaErrorNotReady) return CUDA_FAILED(nccl, what, status);
        ncclResult_t state = ncclSuccess;
        ncclResult_t code = library.get_async_error(nccl->handle, &state);
        if (code != ncclSuccess) return NCCL_FAILED(nccl, what, code);
        if (state != ncclSuccess && state != ncclInProgress) return NCCL_FAILED(nccl, what, state);
        const double waited = now_seconds() - started;
        if (waited > limit) return timed_out(nccl, what, waited, __FILE__, __LINE__);
        pause_after(polls);
    }
}

extern "C" parity_error *parity_nccl_run(parity_nccl_comm *nccl, const parity_nccl_call *call, void *stream) {
    PARITY_TRY(parity_nccl_start(nccl, call, stream));
    return parity_nccl_wait(nccl, stream, parity_nccl_collective_name(call->collective));
}

extern "C" parity_error *parity_nccl_all_reduce(parity_nccl_comm *nccl, const void *send, void *recv, int64_t count,
                                                parity_dtype dtype, void *stream) {
    parity_nccl_call call = {PARITY_NCCL_ALL_REDUCE, send, recv, count, dtype, NULL, NULL, 0};
    return parity_nccl_run(nccl, &call, stream);
}

extern "C" parity_error *parity_nccl_all_gather(parity_nccl_comm *nccl, const void *send, void *recv, int64_t count,
                                                parity_dtype dtype, void *stream) {
    parity_nccl_call call = {PARITY_NCCL_ALL_GATHER, send, recv, count, dtype, NULL, NULL, 0};
    return parity_nccl_run(nccl, &call, stream);
}

extern "C" parity_error *parity_nccl_reduce_scatter(parity_nccl_comm *nccl, const void *send, void *recv, int64_t count,
                                                    parity_dtype dtype, void *stream) {
    parity_nccl_call call = {PARITY_NCCL_REDUCE_SCATTER, send, recv, count, dtype, NULL, NULL, 0};
    return parity_nccl_run(nccl, &call, stream);
}

extern "C" parity_error *parity_nccl_all_to_all(parity_nccl_comm *nccl, const void *send, void *recv, int64_t count,
                                                parity_dtype dtype, void *stream) {
    parity_nccl_call call = {PARITY_NCCL_ALL_TO_ALL, send, recv, count, dtype, NULL, NULL, 0};
    return parity_nccl_run(nccl, &call, stream);
}

extern "C" parity_error *parity_nccl_all_to_all_v(parity_nccl_comm *nccl, const void *send, const int64_t *send_counts,
                                                  void *recv, const int64_t *recv_counts, parity_dtype dtype, void *stream) {
    parity_nccl_call call = {PARITY_NCCL_ALL_TO_ALL_V, send, recv, 0, dtype, send_counts, recv_counts, 0};
    return parity_nccl_run(nccl, &call, stream);
}

extern "C" parity_error *parity_nccl_broadcast(parity_nccl_comm *nccl, void *buffer, int64_t count, parity_dtype dtype,
                                               int root, void *stream) {
    parity_nccl_call call = {PARITY_NCCL_BROADCAST, NULL, buffer, count, dtype, NULL, NULL, root};
    return parity_nccl_run(nccl, &call, stream);
}

extern "C" parity_error *parity_nccl_sum_in_rank_order(int device_index, const void *blocks, int ranks, int64_t count,
                                                       parity_dtype dtype, void *out, void *stream) {
    PARITY_CHECK(moves(dtype), PARITY_ERROR_USAGE, "rank-order sum: dtype %s (fp64, fp32, bf16, int64)", parity_dtype_name(dtype));
    PARITY_CHECK(ranks >= 1 && count >= 0, PARITY_ERROR_USAGE, "rank-order sum: %d ranks of %lld elements", ranks,
                 (long long)count);
    char reason[256] = "";
    const int devices = parity_cuda_runtime_device_count(reason, sizeof reason);
    PARITY_CHECK(device_index >= 0 && device_index < devices, PARITY_ERROR_UNAVAILABLE, "rank-order sum on cuda:%d: %s",
                 device_index, devices > 0 ? "no such device" : reason);
    PARITY_CUDA_TRY(cudaSetDevice(device_index));
    return queue_sum(blocks, ranks, count, dtype, out, (cudaStream_t)stream);
}
