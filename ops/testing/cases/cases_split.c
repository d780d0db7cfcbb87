// cases_split.c: split rows (two and three parts, MLA's kv_a_proj widths, one row, width-1 parts,
// a part with no gradient) and invalid calls.
#include <stdio.h>

#include "ops/testing/invalid_call.h"
#include "ops/split/split.h"
#include "ops/testing/op_cases.h"

typedef struct split_params {
    int64_t batch, rows;         // x (batch, rows, sum of widths); part i (batch, rows, widths[i])
    int count;
    int64_t widths[4];
    int unused_part;             // index of a part with no gradient (dparts[i] = NULL), or -1
} split_params;

static void part_name(int i, char *name, size_t size) { snprintf(name, size, "part%d", i); }

static parity_error *split_setup(op_check_state *state, const void *raw) {
    const split_params *p = raw;
    int64_t width = 0;
    for (int i = 0; i < p->count; i++) width += p->widths[i];
    op_check_input(state, "x", true, OP_CHECK_NORMAL, 0, 1, PARITY_SHAPE(p->batch, p->rows, width));
    for (int i = 0; i < p->count; i++) {
        char name[16];
        part_name(i, name, sizeof name);
        op_check_output(state, name, i != p->unused_part, PARITY_SHAPE(p->batch, p->rows, p->widths[i]));
    }
    op_check_set_attributes(state, &(parity_split_args){.count = p->count});
    return NULL;
}

#define SPLIT_ROW(label, batch_, rows_, count_, unused_, ...)                                                          \
    {&parity_split_op, label, split_setup, &(const split_params){batch_, rows_, count_, {__VA_ARGS__}, unused_}, 0, 0}

static const op_check_case split_cases[] = {
    SPLIT_ROW("rows=7 widths 13+5", 1, 7, 2, -1, 13, 5),
    SPLIT_ROW("batch=2 rows=3 widths 4+1+7", 2, 3, 3, -1, 4, 1, 7),
    SPLIT_ROW("rows=1 widths 48+16 (MLA kv_a_proj)", 1, 1, 2, -1, 48, 16),
    SPLIT_ROW("rows=5 widths 1+1", 1, 5, 2, -1, 1, 1),
    SPLIT_ROW("rows=3 widths 6+5+2, part2 unused", 1, 3, 3, 2, 6, 5, 2),
};
const op_case_list split_case_list = OP_CASE_LIST(split_cases);

// ---- invalid calls ----
static parity_error *call_split(int64_t second_rows, int64_t second_width) {
    invalid_call scratch = {0};
    parity_tensor *x = invalid_call_tensor(&scratch, PARITY_BF16, PARITY_SHAPE(7, 18));
    parity_tensor *first = invalid_call_tensor(&scratch, PARITY_BF16, PARITY_SHAPE(7, 13));
    parity_tensor *second = invalid_call_tensor(&scratch, PARITY_BF16, PARITY_SHAPE(second_rows, second_width));
    const parity_split_kernels *kernels = invalid_call_kernels(&scratch, PARITY_OP_SPLIT);
    if (kernels) scratch.error = kernels->forward(op_check_cpu_exec(), &(parity_split_args){x, 2, {first, second}}, &scratch.saved);
    return invalid_call_finish(&scratch);
}

static parity_error *call_with_widths_not_summing(void) { return call_split(7, 4); }
static parity_error *call_with_leading_shapes_differing(void) { return call_split(8, 5); }

static const op_invalid_case split_invalid_cases[] = {
    {PARITY_OP_SPLIT, "widths do not sum to the input's", call_with_widths_not_summing,
     "split: the parts' last dimensions sum to 17, expected 18 (input's last dimension)"},
    {PARITY_OP_SPLIT, "leading shapes differ", call_with_leading_shapes_differing,
     "split: parts[1] has shape (8, 5), expected (7, *)"},
};
const op_invalid_list split_invalid_list = OP_CASE_LIST(split_invalid_cases);
