// eager.c: the reference embedding on the CPU (value "eager"), as F.embedding computes it:
//   y[i, :] = W[ids[i], :]                       an exact copy in every dtype
// Backward (saves nothing), as PyTorch's embedding_dense_backward: dW is zeroed, then each
// position's row of dy is added to the row of its id, in position order, accumulated in the
// compute precision (f32 for bf16) and rounded once to the storage dtype. Repeated ids accumulate.
#include <stdlib.h>

#include "ops/core/cpu_math.h"
#include "ops/embedding/embedding.h"
#include "ops/builtin_backends.h"
#include "ops/registry.h"

static parity_error *embedding_eager_forward(const parity_exec *exec, const parity_embedding_args *args,
                                             parity_saved *saved) {
    int64_t positions, vocab, hidden;
    PARITY_TRY(parity_embedding_check(args, &positions, &vocab, &hidden));
    PARITY_TRY(parity_check_cpu("embedding", "weight", args->weight));

    int64_t *ids = NULL;
    parity_cpu_values w = {0}, y = {0};
    parity_error *error = parity_cpu_indices_load(args->ids, "embedding ids", &ids);
    if (!error) error = parity_embedding_check_ids(ids, positions, vocab);
    if (!error) error = parity_cpu_values_load(args->weight, "embedding weight", &w);
    if (!error) error = parity_cpu_values_new(positions * hidden, &y);
    if (!error) {
        for (int64_t position = 0; position < positions; position++)
            for (int64_t i = 0; i < hidden; i++) y.data[position * hidden + i] = w.data[ids[position] * hidden + i];
        parity_cpu_values_store(args->output, y.data);
    }
    free(ids);
    parity_cpu_values_free(&w);
    parity_cpu_values_free(&y);
    return error;
}

static parity_error *embedding_eager_backward(const parity_exec *exec, const parity_embedding_args *args,
                                              const parity_saved *saved, const parity_embedding_grads *grads) {
    int64_t positions, vocab, hidden;
    PARITY_TRY(parity_embedding_check(args, &positions, &vocab, &hidden));
    PARITY_TRY(parity_embedding_check_grads(args, grads));
    if (!grads->dweight) return NULL;
    parity_dtype dtype = args->weight->dtype;

    int64_t *ids = NULL;
    parity_cpu_values dy = {0}, dw = {0};
    parity_error *error = parity_cpu_indices_load(args->ids, "embedding ids", &ids);
    if (!error) error = parity_embedding_check_ids(ids, positions, vocab);
    if (!error) error = parity_cpu_values_load(grads->doutput, "embedding doutput", &dy);
    if (!error) error = parity_cpu_values_new(vocab * hidden, &dw);
    if (!error) {
        for (int64_t position = 0; position < positions; position++) {
            if (args->has_padding_idx && ids[position] == args->padding_idx) continue; // the padding row stays at zero
            double *dw_row = dw.data + ids[position] * hidden;
            const double *dy_row = dy.data + position * hidden;
            for (int64_t i = 0; i < hidden; i++) dw_row[i] = parity_round_compute(dw_row[i] + dy_row[i], dtype);
        }
        parity_cpu_values_store(grads->dweight, dw.data);
    }
    free(ids);
    parity_cpu_values_free(&dy);
    parity_cpu_values_free(&dw);
    return error;
}

static const parity_embedding_kernels embedding_eager_kernels = {embedding_eager_forward, embedding_eager_backward};

PARITY_BACKEND_REGISTRATION(embedding, eager, cpu) {
    return parity_registry_add(&(parity_backend){
        .op = PARITY_OP_EMBEDDING,
        .name = "eager",
        .device = PARITY_DEVICE_CPU,
        .dtypes = PARITY_FLOAT_DTYPES,
        .capabilities = PARITY_CAP_BATCH_INVARIANT | PARITY_CAP_DETERMINISTIC,
        .kernels = &embedding_eager_kernels,
        .description = "reference embedding lookup with scatter-add backward, f64/f32/bf16",
    });
}
