// step_result.c: copying, releasing and looking up a step result (step_result.h).
#include "models/step_result.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

parity_error *parity_step_result_copy(const parity_step_result *source, parity_step_result *out) {
    *out = *source;
    memset(&out->logits, 0, sizeof out->logits);
    size_t count = source->parameter_count ? source->parameter_count : 1;
    out->parameter_names = calloc(count, sizeof *out->parameter_names);
    out->parameter_grad_norms = calloc(count, sizeof *out->parameter_grad_norms);
    if (!out->parameter_names || !out->parameter_grad_norms) {
        parity_step_result_release(out);
        return PARITY_ERROR(PARITY_ERROR_MEMORY, "copying a step result of %zu parameters", source->parameter_count);
    }
    memcpy(out->parameter_names, source->parameter_names, source->parameter_count * sizeof *out->parameter_names);
    memcpy(out->parameter_grad_norms, source->parameter_grad_norms, source->parameter_count * sizeof *out->parameter_grad_norms);
    return NULL;
}

void parity_step_result_release(parity_step_result *result) {
    free(result->parameter_names);
    free(result->parameter_grad_norms);
    parity_tensor_release(&result->logits);
    memset(result, 0, sizeof *result);
}

double parity_step_result_norm(const parity_step_result *result, const char *name, size_t hint) {
    if (hint < result->parameter_count && strcmp(result->parameter_names[hint], name) == 0)
        return result->parameter_grad_norms[hint];
    for (size_t i = 0; i < result->parameter_count; i++)
        if (strcmp(result->parameter_names[i], name) == 0) return result->parameter_grad_norms[i];
    return NAN;
}
