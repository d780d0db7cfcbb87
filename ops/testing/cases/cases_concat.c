// cases_concat.c: concat rows (two and three parts, MLA's q_nope ++ q_pe widths, one row, a width-1
// part, a part with no gradient) and invalid calls.
#include <stdio.h>

#include "ops/testing/invalid_call.h"
#include "ops/concat/concat.h"
#include "ops/testing/op_cases.h"

typedef struct concat_params {
    int64_t batch, rows;         // part i (batch, rows, widths[i])
    int count;
    int64_t widths[4];
    int frozen_part;             // index of a part with no gradient (dparts[i] = NULL), or -1
} concat_params;

static void part_name(int i, char *name, size_t size) { snprintf(name, size, "part%d", i); }

static parity_error *concat_setup(op_check_state *state, const void *raw) {
    const concat_params *p = raw;
    int64_t width = 0;
    for (int i = 0; i < p->count; i++) {
        char name[16];
        part_name(i, name, sizeof name);
        op_check_input(state, name, i != p->frozen_part, OP_CHECK_NORMAL, 0, 1, PARITY_SHAPE(p->batch, p->rows, p->widths[i]));
        width += p->widths[i];
    }
    op_check_output(state, "y", true, PARITY_SHAPE(p->batch, p->rows, width));
    op_check_set_attributes(state, &(parity_concat_args){.count = p->count});
    return NULL;
}

#define CONCAT_ROW(label, batch_, rows_, count_, frozen_, ...)                                              \
    {&parity_concat_op, label, concat_setup,                                                                \
     &(const concat_params){batch_, rows_, count_, {__VA_ARGS__}, frozen_}, 0, 0}

static const op_check_case concat_cases[] = {
    CONCAT_ROW("rows=7 widths 13+5", 1, 7, 2, -1, 13, 5),
    CONCAT_ROW("batch=2 rows=3 widths 4+1+7", 2, 3, 3, -1, 4, 1, 7),
    CONCAT_ROW("rows=1 widths 48+16 (MLA q_nope ++ q_pe)", 1, 1, 2, -1, 48, 16),
    CONCAT_ROW("rows=5 widths 1+1", 1, 5, 2, -1, 1, 1),
    CONCAT_ROW("rows=3 widths 6+5+2, part1 frozen", 1, 3, 3, 1, 6, 5, 2),
};
const op_case_list concat_case_list = OP_CASE_LIST(concat_cases);

// ---- invalid calls ----
static parity_error *call_concat(int64_t second_rows, int64_t output_width, int count) {
    invalid_call scratch = {0};
    parity_tensor *first = invalid_call_tensor(&scratch, PARITY_F32, PARITY_SHAPE(7, 13));
    parity_tensor *second = invalid_call_tensor(&scratch, PARITY_F32, PARITY_SHAPE(second_rows, 5));
    parity_tensor *y = invalid_call_tensor(&scratch, PARITY_F32, PARITY_SHAPE(7, output_width));
    const parity_concat_kernels *kernels = invalid_call_kernels(&scratch, PARITY_OP_CONCAT);
    if (kernels) scratch.error = kernels->forward(op_check_cpu_exec(), &(parity_concat_args){{first, second}, count, y}, &scratch.saved);
    return invalid_call_finish(&scratch);
}

static parity_error *call_with_leading_shapes_differing(void) { return call_concat(6, 18, 2); }
static parity_error *call_with_output_too_narrow(void) { return call_concat(7, 17, 2); }
static parity_error *call_with_one_part(void) { return call_concat(7, 13, 1); }

static const op_invalid_case concat_invalid_cases[] = {
    {PARITY_OP_CONCAT, "leading shapes differ", call_with_leading_shapes_differing,
     "concat: parts[1] has shape (6, 5), expected (7, *)"},
    {PARITY_OP_CONCAT, "output width differs from the sum", call_with_output_too_narrow,
     "concat: output has shape (7, 17), expected (7, 18)"},
    {PARITY_OP_CONCAT, "a single part", call_with_one_part, "concat: 1 parts given, expected 2 to 8"},
};
const op_invalid_list concat_invalid_list = OP_CASE_LIST(concat_invalid_cases);
