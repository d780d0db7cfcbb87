// comm_mpi.c: comm.h over MPI (Open MPI 4.1 on Debian 12, the GPU host's OpenMPI): the transport is
// bytes (MPI_BYTE), so every dtype travels exactly; sums are made here, in rank order (comm.h), after
// an all-gather (all_reduce) or an all-to-all (reduce_scatter) of the ranks' values. MPI is
// initialized on the first parity_comm_world (MPI_THREAD_FUNNELED: only the calling thread
// communicates) with MPI_ERRORS_RETURN on the world, so a failed call is a parity error naming the
// collective, never an abort. Counts travel as int: a call moves in pieces of at most 1 GiB a rank
// (one piece below that), each piece one element per rank of a datatype strided over the ranks'
// blocks. A process not started by a launcher with more than one rank is a world of one rank that
// never touches MPI (no MPI_Init: a single-device run pays nothing for it); its collectives are
// copies through the same code (sums of one rank, rounded as above). No collective waits forever:
// each is started non-blocking and polled, and a rank that has waited PARITY_COMM_TIMEOUT_S seconds
// (default 40, so every rank has stopped within a minute) for the others returns a DEVICE error naming the collective, the group and itself,
// so a rank that died or hangs ends the run (the CLI aborts every rank, exit 3) instead of leaving
// every rank blocked.
#include "ops/core/comm.h"

#include <errno.h>
#include <mpi.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct parity_comm {
    MPI_Comm handle; // unused for a one-rank world (self)
    int rank, size;
    char name[32];
    bool world, self;
    bool prefix; // one of the cached prefixes of the world (parity_comm_world_prefix): not freed by callers
};

static parity_comm world_comm;
static bool started_here; // MPI_Init was ours, so MPI_Finalize is too

static char first_failure[512]; // parity_comm_failure

typedef struct rank_place {
    long long pid;
    char host[64];
} rank_place;
static rank_place *rank_places; // the world's ranks (parity_comm_world), or NULL

const char *parity_comm_failure(void) { return first_failure[0] ? first_failure : NULL; }

void parity_comm_record_failure(const parity_error *error) {
    if (error && !first_failure[0]) snprintf(first_failure, sizeof first_failure, "%s", parity_error_message(error));
}

// Records the first failure of a collective (the ranks no longer pair up) and passes the error on.
static parity_error *failed(parity_error *error) {
    parity_comm_record_failure(error);
    return error;
}

static parity_error *mpi_error(int code, const char *what, const parity_comm *comm) {
    char message[MPI_MAX_ERROR_STRING] = "";
    int length = 0;
    MPI_Error_string(code, message, &length);
    return failed(PARITY_ERROR(PARITY_ERROR_DEVICE, "MPI %s over the %s group (rank %d of %d): %s", what,
                               comm ? comm->name : "world", comm ? comm->rank : -1, comm ? comm->size : 0, message));
}

#define MPI_TRY(call, what, comm)                                                                                     \
    do {                                                                                                              \
        int mpi_code_ = (call);                                                                                       \
        if (mpi_code_ != MPI_SUCCESS) return mpi_error(mpi_code_, (what), (comm));                                    \
    } while (0)

int parity_comm_launched_size(void) {
    // Open MPI's mpirun, MPICH / Hydra (PMI), a Slurm job step started by srun (not the allocation alone)
    static const char *const variables[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS"};
    for (size_t i = 0; i < sizeof variables / sizeof variables[0]; i++) {
        const char *value = getenv(variables[i]);
        if (value && *value) {
            long size = strtol(value, NULL, 10);
            if (size > 0 && size < (1 << 24)) return (int)size;
        }
    }
    return 1;
}

parity_error *parity_comm_world(parity_comm **out) {
    *out = NULL;
    if (!world_comm.world && parity_comm_launched_size() == 1) {
        world_comm = (parity_comm){.rank = 0, .size = 1, .world = true, .self = true};
        snprintf(world_comm.name, sizeof world_comm.name, "world");
    }
    if (world_comm.world) {
        *out = &world_comm;
        return NULL;
    }
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (finalized) return PARITY_ERROR(PARITY_ERROR_USAGE, "MPI was finalized: no communicator after parity_comm_finalize");
    if (!initialized) {
        int provided = 0;
        int code = MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
        if (code != MPI_SUCCESS) return mpi_error(code, "initialization", NULL);
        started_here = true;
    }
    MPI_TRY(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "error handler", NULL);
    world_comm.handle = MPI_COMM_WORLD;
    MPI_TRY(MPI_Comm_rank(MPI_COMM_WORLD, &world_comm.rank), "rank", NULL);
    MPI_TRY(MPI_Comm_size(MPI_COMM_WORLD, &world_comm.size), "size", NULL);
    snprintf(world_comm.name, sizeof world_comm.name, "world");
    // every rank's pid and host, while all are alive, so a timed-out rank can say which are gone
    rank_places = calloc((size_t)world_comm.size, sizeof *rank_places);
    if (rank_places) {
        rank_place mine = {.pid = (long long)getpid()};
        gethostname(mine.host, sizeof mine.host - 1);
        if (MPI_Allgather(&mine, (int)sizeof mine, MPI_BYTE, rank_places, (int)sizeof mine, MPI_BYTE, MPI_COMM_WORLD) !=
            MPI_SUCCESS) {
            free(rank_places);
            rank_places = NULL;
        }
    }
    world_comm.world = true;
    *out = &world_comm;
    return NULL;
}

// "; rank 1 (pid 123 on this host) is gone" for the world's ranks on this host that no longer exist.
static void gone_ranks(char *out, size_t size) {
    out[0] = '\0';
    if (!rank_places) return;
    char host[64] = "";
    gethostname(host, sizeof host - 1);
    size_t used = 0;
    for (int r = 0; r < world_comm.size && used < size; r++) {
        if (r == world_comm.rank || strcmp(rank_places[r].host, host) != 0) continue;
        if (kill((pid_t)rank_places[r].pid, 0) == 0 || errno != ESRCH) continue;
        used += (size_t)snprintf(out + used, size - used, "; rank %d (pid %lld on this host) is gone", r, rank_places[r].pid);
    }
}

int parity_comm_rank(const parity_comm *comm) { return comm->rank; }
int parity_comm_size(const parity_comm *comm) { return comm->size; }
const char *parity_comm_name(const parity_comm *comm) { return comm->name; }

parity_error *parity_comm_split(parity_comm *comm, int color, int key, const char *name, parity_comm **out) {
    *out = NULL;
    PARITY_CHECK(color >= 0, PARITY_ERROR_USAGE, "MPI split of the %s group: color %d is negative", comm->name, color);
    parity_comm *group = calloc(1, sizeof *group);
    if (!group) return PARITY_ERROR(PARITY_ERROR_MEMORY, "MPI split of the %s group", comm->name);
    snprintf(group->name, sizeof group->name, "%s", name ? name : "split");
    if (comm->self) {
        group->size = 1;
        group->self = true;
        *out = group;
        return NULL;
    }
    // MPI_Comm_split blocks without a deadline: a barrier with one first, so a rank that died or hangs
    // before the split is a timed-out error here, not a hang inside MPI
    parity_error *arrived = parity_comm_barrier(comm);
    if (arrived) {
        arrived = parity_error_wrap(arrived, __FILE__, __LINE__, "before splitting the %s group into %s groups", comm->name,
                                    group->name);
        free(group);
        return arrived;
    }
    int code = MPI_Comm_split(comm->handle, color, key, &group->handle);
    if (code == MPI_SUCCESS) code = MPI_Comm_set_errhandler(group->handle, MPI_ERRORS_RETURN);
    if (code == MPI_SUCCESS) code = MPI_Comm_rank(group->handle, &group->rank);
    if (code == MPI_SUCCESS) code = MPI_Comm_size(group->handle, &group->size);
    if (code != MPI_SUCCESS) {
        parity_error *error = mpi_error(code, "split", comm);
        if (group->handle != MPI_COMM_NULL && group->handle) MPI_Comm_free(&group->handle);
        free(group);
        return error;
    }
    *out = group;
    return NULL;
}

enum { MOST_PREFIX_RANKS = 1024 };
static parity_comm *prefixes[MOST_PREFIX_RANKS + 1];
static bool prefix_made[MOST_PREFIX_RANKS + 1];

parity_error *parity_comm_world_prefix(int ranks, parity_comm **out) {
    *out = NULL;
    parity_comm *world;
    PARITY_TRY(parity_comm_world(&world));
    PARITY_CHECK(ranks >= 1 && ranks <= world->size && ranks <= MOST_PREFIX_RANKS, PARITY_ERROR_USAGE,
                 "the first %d ranks of a world of %d", ranks, world->size);
    if (ranks == world->size) {
        *out = world;
        return NULL;
    }
    if (!prefix_made[ranks]) {
        parity_comm *group = NULL;
        char name[32];
        snprintf(name, sizeof name, "first %d ranks", ranks);
        PARITY_TRY(parity_comm_split(world, world->rank < ranks ? 0 : 1, world->rank, name, &group));
        if (world->rank < ranks) {
            group->prefix = true;
            prefixes[ranks] = group;
        } else {
            parity_comm_free(group);
        }
        prefix_made[ranks] = true;
    }
    *out = prefixes[ranks];
    return NULL;
}

void parity_comm_free(parity_comm *comm) {
    if (!comm || comm->world || comm->prefix) return;
    if (comm->self) {
        free(comm);
        return;
    }
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&comm->handle);
    free(comm);
}

void parity_comm_abort(int exit_code) {
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (!initialized || finalized || world_comm.self || world_comm.size <= 1) return;
    fflush(NULL);
    MPI_Abort(MPI_COMM_WORLD, exit_code);
}

void parity_comm_finalize(void) {
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (initialized && !finalized && started_here) MPI_Finalize();
}

// ---- every collective started non-blocking and waited for with a deadline ----

double parity_comm_timeout_seconds(void) {
    const char *text = getenv("PARITY_COMM_TIMEOUT_S");
    if (text && *text) {
        char *end;
        double value = strtod(text, &end);
        if (end != text && !*end && value > 0) return value;
    }
    return 40;
}

static double now_seconds(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + 1e-9 * (double)now.tv_nsec;
}

// `code` is the start of a non-blocking collective on *request; waits for it up to the deadline.
static parity_error *finish(int code, MPI_Request *request, const char *what, const parity_comm *comm) {
    if (code != MPI_SUCCESS) return mpi_error(code, what, comm);
    const double limit = parity_comm_timeout_seconds(), started = now_seconds();
    for (long polls = 0;; polls++) {
        int done = 0;
        code = MPI_Test(request, &done, MPI_STATUS_IGNORE);
        if (code != MPI_SUCCESS) return mpi_error(code, what, comm);
        if (done) return NULL;
        if (polls > 1000) { // past the first microseconds, poll gently
            struct timespec pause = {0, 50000};
            nanosleep(&pause, NULL);
        }
        const double waited = now_seconds() - started;
        if (waited > limit) {
            char gone[256];
            gone_ranks(gone, sizeof gone);
            return failed(PARITY_ERROR(PARITY_ERROR_DEVICE,
                                       "MPI %s over the %s group: rank %d of %d waited %.0f s for the others (a rank "
                                       "died, hangs or took another path; PARITY_COMM_TIMEOUT_S sets the limit)%s",
                                       what, comm->name, comm->rank, comm->size, waited, gone));
        }
    }
}

// ---- transport in bytes, in pieces whose per-rank size fits an int ----

enum { PIECE_BYTES = 1 << 30 };

static parity_error *byte_size(const parity_comm *comm, const char *what, int64_t count, parity_dtype dtype, int64_t *bytes) {
    PARITY_CHECK(count >= 0, PARITY_ERROR_USAGE, "MPI %s over the %s group: count %lld is negative", what, comm->name,
                 (long long)count);
    PARITY_CHECK(dtype == PARITY_F64 || dtype == PARITY_F32 || dtype == PARITY_BF16 || dtype == PARITY_I64 ||
                     dtype == PARITY_I32 || dtype == PARITY_U8,
                 PARITY_ERROR_USAGE, "MPI %s: dtype %s is not one the collectives move", what, parity_dtype_name(dtype));
    *bytes = count * (int64_t)parity_dtype_size(dtype);
    return NULL;
}

// Pieces of at most PIECE_BYTES: the per-rank blocks are `bytes` apart in the buffer, so each piece
// moves as one element of a datatype of `piece` bytes whose extent is `bytes` (element r lands at
// r * bytes past the piece's offset). One piece for a call under 1 GiB a rank: the same code.
static parity_error *strided_piece(const parity_comm *comm, const char *what, int piece, int64_t bytes,
                                   MPI_Datatype *out) {
    MPI_Datatype block;
    MPI_TRY(MPI_Type_contiguous(piece, MPI_BYTE, &block), what, comm);
    int code = MPI_Type_create_resized(block, 0, (MPI_Aint)bytes, out);
    MPI_Type_free(&block);
    if (code == MPI_SUCCESS) code = MPI_Type_commit(out);
    if (code != MPI_SUCCESS) {
        MPI_Type_free(out);
        return mpi_error(code, what, comm);
    }
    return NULL;
}

// exchange false: recv (size * bytes) <- every rank's send (bytes), block r from rank r (all-gather).
// exchange true: block s of send (bytes each) -> block r of rank s's recv (all-to-all).
static parity_error *move_bytes(parity_comm *comm, const char *what, bool exchange, const void *send, void *recv,
                                int64_t bytes) {
    if (comm->self) {
        memcpy(recv, send, (size_t)bytes);
        return NULL;
    }
    for (int64_t offset = 0; offset < bytes; offset += PIECE_BYTES) {
        int piece = (int)(bytes - offset < PIECE_BYTES ? bytes - offset : PIECE_BYTES);
        MPI_Datatype strided;
        PARITY_TRY(strided_piece(comm, what, piece, bytes, &strided));
        MPI_Request request;
        const char *from = (const char *)send + offset;
        char *to = (char *)recv + offset;
        int code = exchange ? MPI_Ialltoall(from, 1, strided, to, 1, strided, comm->handle, &request)
                            : MPI_Iallgather(from, piece, MPI_BYTE, to, 1, strided, comm->handle, &request);
        parity_error *error = finish(code, &request, what, comm);
        MPI_Type_free(&strided);
        if (error) return error;
    }
    return NULL;
}

// out[i] = sum over r in order of blocks[r * count + i], in ACCUMULATE, stored as T.
#define SUM_IN_RANK_ORDER(T, ACCUMULATE)                                                                              \
    do {                                                                                                              \
        const T *x = blocks;                                                                                          \
        for (int64_t i = 0; i < count; i++) {                                                                         \
            ACCUMULATE sum = x[i];                                                                                    \
            for (int r = 1; r < ranks; r++) sum += x[(int64_t)r * count + i];                                         \
            ((T *)out)[i] = (T)sum;                                                                                   \
        }                                                                                                             \
    } while (0)

static void sum_in_rank_order(const void *blocks, int ranks, int64_t count, parity_dtype dtype, void *out) {
    switch (dtype) {
    case PARITY_F64: SUM_IN_RANK_ORDER(double, double); break;
    case PARITY_F32: SUM_IN_RANK_ORDER(float, float); break;
    case PARITY_I64: SUM_IN_RANK_ORDER(int64_t, int64_t); break;
    case PARITY_I32: SUM_IN_RANK_ORDER(int32_t, int64_t); break;
    case PARITY_U8: SUM_IN_RANK_ORDER(uint8_t, unsigned); break;
    default: { // PARITY_BF16 (byte_size admits nothing else): f32 sums, rounded once
        const uint16_t *x = blocks;
        for (int64_t i = 0; i < count; i++) {
            float sum = parity_bf16_to_f32(x[i]);
            for (int r = 1; r < ranks; r++) sum += parity_bf16_to_f32(x[(int64_t)r * count + i]);
            ((uint16_t *)out)[i] = parity_f32_to_bf16(sum);
        }
        break;
    }
    }
}
#undef SUM_IN_RANK_ORDER

parity_error *parity_comm_all_reduce(parity_comm *comm, const void *send, void *recv, int64_t count, parity_dtype dtype) {
    int64_t bytes = 0;
    PARITY_TRY(byte_size(comm, "all_reduce", count, dtype, &bytes));
    if (count == 0) return NULL;
    void *gathered = malloc((size_t)(bytes * comm->size));
    if (!gathered) return PARITY_ERROR(PARITY_ERROR_MEMORY, "MPI all_reduce: %d x %lld bytes", comm->size, (long long)bytes);
    parity_error *error = move_bytes(comm, "all_reduce", false, send, gathered, bytes);
    if (!error) sum_in_rank_order(gathered, comm->size, count, dtype, recv);
    free(gathered);
    return error;
}

parity_error *parity_comm_all_gather(parity_comm *comm, const void *send, void *recv, int64_t count, parity_dtype dtype) {
    int64_t bytes = 0;
    PARITY_TRY(byte_size(comm, "all_gather", count, dtype, &bytes));
    return count == 0 ? NULL : move_bytes(comm, "all_gather", false, send, recv, bytes);
}

parity_error *parity_comm_reduce_scatter(parity_comm *comm, const void *send, void *recv, int64_t count,
                                         parity_dtype dtype) {
    int64_t bytes = 0;
    PARITY_TRY(byte_size(comm, "reduce_scatter", count, dtype, &bytes));
    if (count == 0) return NULL;
    void *exchanged = malloc((size_t)(bytes * comm->size));
    if (!exchanged)
        return PARITY_ERROR(PARITY_ERROR_MEMORY, "MPI reduce_scatter: %d x %lld bytes", comm->size, (long long)bytes);
    parity_error *error = move_bytes(comm, "reduce_scatter", true, send, exchanged, bytes);
    if (!error) sum_in_rank_order(exchanged, comm->size, count, dtype, recv);
    free(exchanged);
    return error;
}

parity_error *parity_comm_all_to_all(parity_comm *comm, const void *send, void *recv, int64_t count, parity_dtype dtype) {
    int64_t bytes = 0;
    PARITY_TRY(byte_size(comm, "all_to_all", count, dtype, &bytes));
    return count == 0 ? NULL : move_bytes(comm, "all_to_all", true, send, recv, bytes);
}

parity_error *parity_comm_all_to_all_v(parity_comm *comm, const void *send, const int64_t *send_counts, void *recv,
                                       const int64_t *recv_counts, parity_dtype dtype) {
    int64_t element = 0;
    PARITY_TRY(byte_size(comm, "all_to_all_v", 1, dtype, &element));
    const int size = comm->size;
    int *counts = calloc((size_t)size * 4, sizeof *counts);
    if (!counts) return PARITY_ERROR(PARITY_ERROR_MEMORY, "MPI all_to_all_v over the %s group: %d ranks' counts", comm->name, size);
    int *send_bytes = counts, *send_at = counts + size, *recv_bytes = counts + 2 * size, *recv_at = counts + 3 * size;
    int64_t sent = 0, received = 0;
    parity_error *error = NULL;
    for (int r = 0; r < size && !error; r++) {
        const int64_t out_bytes = send_counts[r] * element, in_bytes = recv_counts[r] * element;
        if (send_counts[r] < 0 || recv_counts[r] < 0 || out_bytes >= INT32_MAX || in_bytes >= INT32_MAX ||
            sent >= INT32_MAX || received >= INT32_MAX)
            error = PARITY_ERROR(PARITY_ERROR_USAGE,
                                 "MPI all_to_all_v over the %s group: rank %d's block for rank %d (%lld sent, %lld received "
                                 "elements) is negative or not under 2 GiB",
                                 comm->name, comm->rank, r, (long long)send_counts[r], (long long)recv_counts[r]);
        send_bytes[r] = (int)out_bytes, send_at[r] = (int)sent, recv_bytes[r] = (int)in_bytes, recv_at[r] = (int)received;
        sent += out_bytes, received += in_bytes;
    }
    if (!error && comm->self) {
        memcpy(recv, send, (size_t)sent);
    } else if (!error) {
        MPI_Request request;
        int code = MPI_Ialltoallv(send, send_bytes, send_at, MPI_BYTE, recv, recv_bytes, recv_at, MPI_BYTE, comm->handle,
                                  &request);
        error = finish(code, &request, "all_to_all_v", comm);
    }
    free(counts);
    return error;
}

parity_error *parity_comm_broadcast(parity_comm *comm, void *buffer, int64_t count, parity_dtype dtype, int root) {
    int64_t bytes = 0;
    PARITY_TRY(byte_size(comm, "broadcast", count, dtype, &bytes));
    PARITY_CHECK(root >= 0 && root < comm->size, PARITY_ERROR_USAGE, "MPI broadcast over the %s group: root %d of %d ranks",
                 comm->name, root, comm->size);
    if (comm->self) return NULL;
    for (int64_t offset = 0; offset < bytes; offset += PIECE_BYTES) {
        int piece = (int)(bytes - offset < PIECE_BYTES ? bytes - offset : PIECE_BYTES);
        MPI_Request request;
        PARITY_TRY(finish(MPI_Ibcast((char *)buffer + offset, piece, MPI_BYTE, root, comm->handle, &request), &request,
                          "broadcast", comm));
    }
    return NULL;
}

parity_error *parity_comm_barrier(parity_comm *comm) {
    if (comm->self) return NULL;
    MPI_Request request;
    return finish(MPI_Ibarrier(comm->handle, &request), &request, "barrier", comm);
}

// FNV-1a, 64 bits: enough to tell two ranks' work apart (nothing here defends against an adversary).
static uint64_t fingerprint(const void *data, size_t bytes) {
    uint64_t hash = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < bytes; i++) hash = (hash ^ ((const unsigned char *)data)[i]) * 0x100000001b3ull;
    return hash ^ (uint64_t)bytes;
}

parity_error *parity_comm_check_agreement(parity_comm *comm, const char *what, const void *data, size_t bytes) {
    if (comm->size == 1) return NULL;
    int64_t mine = (int64_t)fingerprint(data, bytes);
    int64_t *all = malloc((size_t)comm->size * sizeof *all);
    if (!all) return PARITY_ERROR(PARITY_ERROR_MEMORY, "checking the ranks agree on the %s", what);
    parity_error *error = parity_comm_all_gather(comm, &mine, all, 1, PARITY_I64);
    for (int r = 1; !error && r < comm->size; r++)
        if (all[r] != all[0])
            error = PARITY_ERROR(PARITY_ERROR_USAGE,
                                 "rank %d was given other %s than rank 0 (over the %s group of %d ranks): every rank "
                                 "must be given the same work",
                                 r, what, comm->name, comm->size);
    free(all);
    return error;
}
