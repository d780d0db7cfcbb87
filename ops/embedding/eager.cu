// eager.cu: the embedding lookup on the GPU (value "eager" on cuda), as F.embedding:
//   y[p, :] = W[ids[p], :]                       an exact copy in every dtype
// The ids are copied to the host once per call: they are validated there ("id 40 at position 3 is
// outside [0, 37)"), and backward groups the positions by id on the host (a counting sort, stable in
// position order) so the scatter-add needs no atomics:
//   dW = 0;  dW[id, i] = sum over the positions p holding id, in position order, of dy[p, i]
// one thread per (distinct id, i), accumulated in the compute precision (f32 for bf16: no bf16
// atomics, no f32 scratch) and rounded once. That is the CPU eager's order, so the result is
// deterministic and bitwise the CPU's. Positions holding padding_idx contribute nothing.
#include <stdlib.h>
#include <string.h>

#include "ops/core/cuda/exec_stream.cuh"
#include "ops/core/cuda/kernel_math.cuh"

extern "C" {
#include "ops/core/cuda/device_args.h"
#include "ops/core/cuda_api.h"
#include "ops/embedding/embedding.h"
#include "ops/builtin_backends.h"
#include "ops/registry.h"
}

using namespace parity_cuda;

template <typename T>
__global__ void embedding_forward_kernel(const int64_t *ids, // (N)
                                         const T *weight,    // (V, H)
                                         T *y,               // (N, H)
                                         int64_t positions, int64_t hidden) {
    PARITY_CUDA_FOR_EACH(index, positions * hidden) y[index] = weight[ids[index / hidden] * hidden + index % hidden];
}

template <parity_dtype D>
__global__ void embedding_backward_kernel(const int64_t *segment_ids,     // (U) distinct ids with a gradient
                                          const int64_t *segment_starts,  // (U + 1) into sorted_positions
                                          const int64_t *sorted_positions, // (M) grouped by id, position order
                                          const typename scalar<D>::storage *dy, // (N, H)
                                          typename scalar<D>::storage *dweight,  // (V, H), zeroed
                                          int64_t segments, int64_t hidden) {
    PARITY_CUDA_FOR_EACH(index, segments * hidden) {
        int64_t segment = index / hidden, i = index % hidden;
        typename scalar<D>::compute sum = 0;
        for (int64_t k = segment_starts[segment]; k < segment_starts[segment + 1]; k++)
            sum = sum + scalar<D>::load(dy[sorted_positions[k] * hidden + i]);
        dweight[segment_ids[segment] * hidden + i] = scalar<D>::store(sum);
    }
}

static parity_error *check_devices(const parity_embedding_args *args) {
    parity_device device = args->weight->device;
    PARITY_TRY(parity_cuda_check_tensor("embedding", "ids", args->ids, device));
    PARITY_TRY(parity_cuda_check_tensor("embedding", "weight", args->weight, device));
    PARITY_TRY(parity_cuda_check_tensor("embedding", "output", args->output, device));
    return use_device(device);
}

// The ids' values on the host, validated against the vocabulary.
static parity_error *load_ids(const parity_embedding_args *args, int64_t positions, int64_t vocab, int64_t **ids) {
    PARITY_TRY(parity_cuda_indices_to_host(args->ids, "embedding ids", ids));
    parity_error *error = parity_embedding_check_ids(*ids, positions, vocab);
    if (error) {
        free(*ids);
        *ids = NULL;
    }
    return error;
}

static parity_error *embedding_cuda_forward(const parity_exec *exec, const parity_embedding_args *args,
                                            parity_saved *saved) {
    int64_t positions, vocab, hidden;
    PARITY_TRY(parity_embedding_check(args, &positions, &vocab, &hidden));
    PARITY_TRY(check_devices(args));
    int64_t *ids;
    PARITY_TRY(load_ids(args, positions, vocab, &ids));
    free(ids);
    if (positions == 0) return NULL;
    return dispatch_float(args->weight->dtype, "embedding", [&](auto tag) -> parity_error * {
        using T = typename scalar<decltype(tag)::value>::storage;
        embedding_forward_kernel<T><<<grid_for(positions * hidden), 256, 0, parity_cuda_stream(exec)>>>(
            (const int64_t *)args->ids->data, (const T *)args->weight->data, (T *)args->output->data, positions,
            hidden);
        PARITY_CUDA_TRY_LAUNCH("embedding_forward_kernel");
        return NULL;
    });
}

// Host-side grouping of positions by id: segment_ids (U), segment_starts (U + 1), sorted_positions (M),
// packed one after the other in `plan` (U + U + 1 + M values); padding positions are left out.
static parity_error *group_positions(const parity_embedding_args *args, const int64_t *ids, int64_t positions,
                                     int64_t vocab, int64_t **plan, int64_t *segments, int64_t *grouped) {
    int64_t *counts = (int64_t *)calloc((size_t)vocab + 1, sizeof *counts);
    if (!counts) return PARITY_ERROR(PARITY_ERROR_MEMORY, "embedding: counting ids over a vocabulary of %lld", (long long)vocab);
    *segments = 0;
    *grouped = 0;
    for (int64_t p = 0; p < positions; p++) {
        if (args->has_padding_idx && ids[p] == args->padding_idx) continue;
        if (counts[ids[p]]++ == 0) (*segments)++;
        (*grouped)++;
    }
    int64_t *out = (int64_t *)malloc((size_t)(2 * *segments + 1 + *grouped + 1) * sizeof *out);
    if (!out) {
        free(counts);
        return PARITY_ERROR(PARITY_ERROR_MEMORY, "embedding: grouping %lld positions", (long long)positions);
    }
    int64_t *segment_ids = out, *starts = out + *segments, *sorted = starts + *segments + 1;
    // counts -> each id's first slot in `sorted` (ids in increasing order), segments in that order
    int64_t segment = 0, next = 0;
    for (int64_t id = 0; id < vocab; id++) {
        if (!counts[id]) continue;
        segment_ids[segment] = id;
        starts[segment++] = next;
        int64_t count = counts[id];
        counts[id] = next;
        next += count;
    }
    starts[segment] = next;
    for (int64_t p = 0; p < positions; p++) { // stable: position order within an id
        if (args->has_padding_idx && ids[p] == args->padding_idx) continue;
        sorted[counts[ids[p]]++] = p;
    }
    free(counts);
    *plan = out;
    return NULL;
}

static parity_error *embedding_cuda_backward(const parity_exec *exec, const parity_embedding_args *args,
                                             const parity_saved *saved, const parity_embedding_grads *grads) {
    int64_t positions, vocab, hidden;
    PARITY_TRY(parity_embedding_check(args, &positions, &vocab, &hidden));
    PARITY_TRY(parity_embedding_check_grads(args, grads));
    PARITY_TRY(check_devices(args));
    if (!grads->dweight) return NULL;
    parity_device device = args->weight->device;
    PARITY_TRY(parity_cuda_check_tensor("embedding", "doutput", grads->doutput, device));
    PARITY_TRY(parity_cuda_check_tensor("embedding", "dweight", grads->dweight, device));
    int64_t *ids, *plan = NULL, segments = 0, grouped = 0;
    PARITY_TRY(load_ids(args, positions, vocab, &ids));
    parity_error *error = group_positions(args, ids, positions, vocab, &plan, &segments, &grouped);
    free(ids);
    if (error) return error;
    parity_tensor host_plan = parity_tensor_wrap(plan, PARITY_I64, PARITY_CPU, PARITY_CUDA_SHAPE(2 * segments + 1 + grouped));
    parity_tensor device_plan = {};
    error = parity_tensor_to(&device_plan, &host_plan, device, PARITY_I64);
    free(plan);
    if (!error) error = parity_cuda_zero_on(exec, grads->dweight);
    if (!error && segments > 0) {
        const int64_t *segment_ids = (const int64_t *)device_plan.data, *starts = segment_ids + segments,
                      *sorted = starts + segments + 1;
        error = dispatch_float(args->weight->dtype, "embedding", [&](auto tag) -> parity_error * {
            constexpr parity_dtype D = decltype(tag)::value;
            using T = typename scalar<D>::storage;
            embedding_backward_kernel<D><<<grid_for(segments * hidden), 256, 0, parity_cuda_stream(exec)>>>(
                segment_ids, starts, sorted, (const T *)grads->doutput->data, (T *)grads->dweight->data, segments,
                hidden);
            PARITY_CUDA_TRY_LAUNCH("embedding_backward_kernel");
            return NULL;
        });
    }
    // The plan must outlive the kernel: device memory is freed on the legacy stream, after every kernel
    // queued before it (ops/core/cuda/cuda_runtime.cu), so releasing it here needs no wait.
    parity_tensor_release(&device_plan);
    return error;
}

static const parity_embedding_kernels embedding_cuda_kernels = {embedding_cuda_forward, embedding_cuda_backward};

PARITY_BACKEND_REGISTRATION(embedding, eager, cuda) {
    parity_backend backend = {};
    backend.op = PARITY_OP_EMBEDDING;
    backend.name = "eager";
    backend.device = PARITY_DEVICE_CUDA;
    backend.dtypes = PARITY_FLOAT_DTYPES;
    backend.capabilities = PARITY_CAP_BATCH_INVARIANT | PARITY_CAP_DETERMINISTIC | PARITY_CAP_SEQUENCE_PARALLEL |
                           PARITY_CAP_EXPERT_PARALLEL;
    backend.kernels = &embedding_cuda_kernels;
    backend.description = "embedding lookup on the GPU, deterministic grouped scatter-add backward, f64/f32/bf16";
    return parity_registry_add(&backend);
}
