// cases_embedding.c: embedding rows (repeated ids that must accumulate, V = 1, one position, ids of
// rank 2, rows of the table no id touches) and invalid calls (id out of range, wrong ids dtype).
#include "ops/testing/invalid_call.h"
#include "ops/embedding/embedding.h"
#include "ops/testing/op_cases.h"

typedef struct embedding_params {
    int64_t vocab, hidden;
    int64_t batch, positions;       // ids (batch, positions)
    const int64_t *ids;             // batch * positions values
    int64_t padding_idx;            // -1: none
} embedding_params;

static parity_error *embedding_setup(op_check_state *state, const void *raw) {
    const embedding_params *p = raw;
    op_check_indices(state, "ids", p->ids, PARITY_SHAPE(p->batch, p->positions));
    op_check_input(state, "weight", true, OP_CHECK_NORMAL, 0, 1, PARITY_SHAPE(p->vocab, p->hidden));
    op_check_output(state, "y", true, PARITY_SHAPE(p->batch, p->positions, p->hidden));
    op_check_set_attributes(state, &(parity_embedding_args){.has_padding_idx = p->padding_idx >= 0,
                                                           .padding_idx = p->padding_idx});
    return NULL;
}

#define EMBEDDING_PADDED_ROW(label, vocab_, hidden_, batch_, positions_, padding_, ...)                              \
    {&parity_embedding_op, label, embedding_setup,                                                                   \
     &(const embedding_params){vocab_, hidden_, batch_, positions_, (const int64_t[]){__VA_ARGS__}, padding_}, 0, 0}
#define EMBEDDING_ROW(label, vocab_, hidden_, batch_, positions_, ...)                                     \
    EMBEDDING_PADDED_ROW(label, vocab_, hidden_, batch_, positions_, -1, __VA_ARGS__)

static const op_check_case embedding_cases[] = {
    // A padding_idx no id uses changes nothing (test_embedding_padding.c covers an id that does).
    EMBEDDING_PADDED_ROW("padding_idx=3 V=7 N=6", 7, 5, 1, 6, 3, 1, 4, 6, 0, 2, 5),
    EMBEDDING_ROW("V=11 H=13 N=7 repeated ids", 11, 13, 1, 7, 3, 0, 10, 3, 3, 7, 0),
    EMBEDDING_ROW("V=1 H=5 N=4", 1, 5, 1, 4, 0, 0, 0, 0),
    EMBEDDING_ROW("V=17 H=48 N=1", 17, 48, 1, 1, 16),
    EMBEDDING_ROW("V=5 H=3 ids (2, 3)", 5, 3, 2, 3, 4, 1, 1, 0, 4, 2),
};
const op_case_list embedding_case_list = OP_CASE_LIST(embedding_cases);

// ---- invalid calls ----
static parity_error *call_embedding(parity_dtype ids_dtype, int64_t last_id) {
    invalid_call scratch = {0};
    parity_tensor *ids = invalid_call_tensor(&scratch, ids_dtype, PARITY_SHAPE(4));
    parity_tensor *weight = invalid_call_tensor(&scratch, PARITY_F32, PARITY_SHAPE(5, 8));
    parity_tensor *y = invalid_call_tensor(&scratch, PARITY_F32, PARITY_SHAPE(4, 8));
    if (!scratch.error) parity_tensor_set(ids, 3, (double)last_id);
    const parity_embedding_kernels *kernels = invalid_call_kernels(&scratch, PARITY_OP_EMBEDDING);
    if (kernels) scratch.error = kernels->forward(op_check_cpu_exec(), &(parity_embedding_args){.ids = ids, .weight = weight, .output = y}, &scratch.saved);
    return invalid_call_finish(&scratch);
}

static parity_error *call_with_id_past_the_vocabulary(void) { return call_embedding(PARITY_I64, 5); }
static parity_error *call_with_negative_id(void) { return call_embedding(PARITY_I64, -1); }
static parity_error *call_with_float_ids(void) { return call_embedding(PARITY_F32, 1); }

static const op_invalid_case embedding_invalid_cases[] = {
    {PARITY_OP_EMBEDDING, "id past the vocabulary", call_with_id_past_the_vocabulary,
     "embedding: id 5 at position 3 is outside [0, 5)"},
    {PARITY_OP_EMBEDDING, "negative id", call_with_negative_id, "embedding: id -1 at position 3 is outside [0, 5)"},
    {PARITY_OP_EMBEDDING, "float ids", call_with_float_ids, "embedding: ids is fp32, expected int64"},
};
const op_invalid_list embedding_invalid_list = OP_CASE_LIST(embedding_invalid_cases);
