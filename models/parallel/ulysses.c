// ulysses.c: the Ulysses all-to-all as a tape node (parallel_nodes.h): sequence shards <-> head
// shards around attention, so each rank attends over the whole sequence for 1 / S of the heads.
#include <stdlib.h>
#include <string.h>

#include "models/parallel/parallel_nodes.h"

typedef struct ulysses_record {
    parity_variable *input, *output;
    parity_comm *sequence;
    int64_t rows, columns;
    bool to_heads;
} ulysses_record;

// The exchange on plain host tensors. to_heads: x (rows * columns, S * h, D) -> y (rows * S * columns, h, D);
// otherwise x (rows * S * columns, h, D) -> y (rows * columns, S * h, D). Block b of the all-to-all
// buffers is the (rows * columns, h, D) piece for / from rank b.
static parity_error *exchange(parity_comm *sequence, int64_t rows, int64_t columns, bool to_heads, const parity_tensor *x,
                              parity_tensor *y) {
    const int S = parity_comm_size(sequence);
    const size_t element = parity_dtype_size(x->dtype);
    const int64_t local = rows * columns;                               // this rank's tokens
    const int64_t h = to_heads ? x->shape[1] / S : x->shape[1];         // heads per rank
    const size_t piece = (size_t)(h * x->shape[2]) * element;           // one token's h heads
    const size_t block = (size_t)local * piece;
    char *send = malloc(block * (size_t)S), *recv = malloc(block * (size_t)S);
    if (!send || !recv) {
        free(send), free(recv);
        return PARITY_ERROR(PARITY_ERROR_MEMORY, "Ulysses all-to-all: %d blocks of %zu bytes", S, block);
    }
    const char *in = x->data;
    char *out = y->data;
    for (int b = 0; b < S; b++)
        for (int64_t i = 0; i < local; i++) {
            char *to = send + (size_t)b * block + (size_t)i * piece;
            if (to_heads) { // token i's heads [b h, (b + 1) h)
                memcpy(to, in + ((size_t)i * (size_t)S + (size_t)b) * piece, piece);
            } else { // the token of row i / columns at column b * columns + i % columns
                const int64_t token = (i / columns) * S * columns + b * columns + i % columns;
                memcpy(to, in + (size_t)token * piece, piece);
            }
        }
    parity_error *error = parity_comm_all_to_all(sequence, send, recv, (int64_t)block, PARITY_U8);
    for (int b = 0; !error && b < S; b++)
        for (int64_t i = 0; i < local; i++) {
            const char *from = recv + (size_t)b * block + (size_t)i * piece;
            if (to_heads) { // rank b's token i is whole-row token (row, b * columns + column)
                const int64_t token = (i / columns) * S * columns + b * columns + i % columns;
                memcpy(out + (size_t)token * piece, from, piece);
            } else { // rank b's heads of this rank's token i
                memcpy(out + ((size_t)i * (size_t)S + (size_t)b) * piece, from, piece);
            }
        }
    free(send), free(recv);
    return error;
}

static parity_error *output_of(parity_comm *sequence, int64_t rows, int64_t columns, bool to_heads, const parity_tensor *x,
                               parity_tensor *y) {
    const int S = parity_comm_size(sequence);
    const int64_t tokens = to_heads ? rows * columns * S : rows * columns;
    const int64_t heads = to_heads ? x->shape[1] / S : x->shape[1] * S;
    PARITY_TRY(parity_tensor_alloc(y, x->dtype, PARITY_CPU, PARITY_SHAPE(tokens, heads, x->shape[2])));
    parity_error *error = exchange(sequence, rows, columns, to_heads, x, y);
    if (error) parity_tensor_release(y);
    return error;
}

static parity_error *ulysses_backward(parity_tape *tape, parity_node *node) {
    ulysses_record *record = node->data;
    if (!record->output->has_gradient || !record->input->requires_gradient) return NULL;
    parity_tensor gradient;
    PARITY_TRY(output_of(record->sequence, record->rows, record->columns, !record->to_heads, &record->output->gradient,
                         &gradient));
    parity_error *error = parity_variable_accumulate(record->input, &gradient);
    parity_tensor_release(&gradient);
    return error;
}

parity_error *parity_node_ulysses(parity_tape *tape, const char *name, parity_comm *sequence, int64_t rows, int64_t columns,
                                  bool to_heads, parity_variable *input, parity_variable **out) {
    const parity_tensor *x = &input->value;
    const int S = parity_comm_size(sequence);
    char shape[96];
    PARITY_CHECK(x->device.type == PARITY_DEVICE_CPU && parity_tensor_is_contiguous(x), PARITY_ERROR_USAGE,
                 "%s: Ulysses all-to-all: the input must be a contiguous CPU tensor (the MPI transport)", name);
    const int64_t tokens = to_heads ? rows * columns : rows * columns * S;
    PARITY_CHECK(x->ndim == 3 && x->shape[0] == tokens && (!to_heads || x->shape[1] % S == 0), PARITY_ERROR_SHAPE,
                 "%s: Ulysses all-to-all %s over %d ranks: input %s, expected (%lld, heads%s, D)", name,
                 to_heads ? "to heads" : "to sequence", S, parity_tensor_shape_string(x, shape, sizeof shape),
                 (long long)tokens, to_heads ? " divisible by the ranks" : "");
    parity_tensor y;
    PARITY_TRY_CONTEXT(output_of(sequence, rows, columns, to_heads, x, &y), "%s: Ulysses all-to-all", name);
    parity_error *error = parity_tape_adopt(tape, name, &y, input->requires_gradient, out);
    if (error) {
        parity_tensor_release(&y);
        return error;
    }
    ulysses_record *record = malloc(sizeof *record);
    if (!record) return PARITY_ERROR(PARITY_ERROR_MEMORY, "recording the Ulysses all-to-all");
    *record = (ulysses_record){input, *out, sequence, rows, columns, to_heads};
    return parity_tape_push(tape, "ulysses_all_to_all", "mpi", ulysses_backward, NULL, record);
}
