// bench_check.c: see bench_check.h.
#include "harness/bench/bench_check.h"

#include <stdio.h>
#include <string.h>

static parity_error *setup_from_inputs(op_check_state *state, const void *params) {
    const parity_bench_check_case *check_case = params;
    const parity_bench_inputs *inputs = check_case->inputs;
    const parity_op_descriptor *op = state->op;
    parity_dtype activations = parity_bench_inputs_dtype(inputs);
    for (int slot = 0; slot < op->slot_count; slot++) {
        bool has_gradient;
        const parity_tensor *tensor = parity_bench_inputs_tensor(inputs, slot, &has_gradient);
        if (!tensor) continue;
        const char *name = op->slots[slot].name;
        bool compute = parity_dtype_is_float(tensor->dtype) && tensor->dtype != activations;
        parity_tensor *made;
        if (op->slots[slot].kind == PARITY_SLOT_OUTPUT)
            made = compute ? op_check_output_compute(state, name, has_gradient, tensor->ndim, tensor->shape)
                           : op_check_output(state, name, has_gradient, tensor->ndim, tensor->shape);
        else
            made = op_check_input_copy(state, name, op->slots[slot].kind == PARITY_SLOT_INPUT && has_gradient, compute, tensor);
        if (!made) return PARITY_ERROR(PARITY_ERROR_MEMORY, "%s [%s]: copying %s", op->name, state->case_name, name);
    }
    if (op->attributes_size) op_check_set_attributes(state, parity_bench_inputs_attributes(inputs));
    return NULL;
}

void parity_bench_check_case_init(parity_bench_check_case *out, const parity_bench_op *op, const parity_bench_inputs *inputs,
                                  const char *name) {
    memset(out, 0, sizeof *out);
    out->inputs = inputs;
    snprintf(out->name, sizeof out->name, "%s", name);
    out->test_case = (op_check_case){.op = op->descriptor, .name = out->name, .setup = setup_from_inputs, .params = out};
}

parity_error *parity_bench_check_case_for_shape(parity_bench_check_case *out, const parity_bench_op *op,
                                                const parity_bench_shape *shape, parity_dtype dtype) {
    char text[64], name[96];
    snprintf(name, sizeof name, "shape %s", parity_bench_shape_string(shape, text, sizeof text));
    parity_bench_inputs *inputs = NULL;
    parity_error *error = parity_bench_setup(op, shape, dtype, PARITY_CPU, &inputs);
    if (error) {
        parity_bench_teardown(inputs);
        return parity_error_wrap(error, __FILE__, __LINE__, "%s: inputs of %s", op->descriptor->name, name);
    }
    parity_bench_check_case_init(out, op, inputs, name);
    out->owned = inputs;
    return NULL;
}

void parity_bench_check_case_release(parity_bench_check_case *check_case) {
    parity_bench_teardown(check_case->owned);
    memset(check_case, 0, sizeof *check_case);
}

int64_t parity_bench_check_largest(const parity_bench_op *op, const parity_bench_inputs *inputs) {
    int64_t largest = 0;
    for (int slot = 0; slot < op->descriptor->slot_count; slot++) {
        bool has_gradient;
        const parity_tensor *tensor = parity_bench_inputs_tensor(inputs, slot, &has_gradient);
        if (tensor && tensor->numel > largest) largest = tensor->numel;
    }
    return largest;
}
