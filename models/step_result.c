// step_result.c: copying, releasing and looking up a step result (step_result.h).
#include "models/step_result.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

parity_error *parity_step_result_copy(const parity_step_result *source, parity_step_result *out) {
    *out = *source;
    memset(&out->logits, 0, sizeof out->logits);
    out->parameter_grad_sketches = NULL; // (the source's until copied below: a failed copy must not free it)
    out->parameter_numels = NULL;
    size_t count = source->parameter_count ? source->parameter_count : 1;
    out->parameter_names = calloc(count, sizeof *out->parameter_names);
    out->parameter_grad_norms = calloc(count, sizeof *out->parameter_grad_norms);
    if (!out->parameter_names || !out->parameter_grad_norms) {
        parity_step_result_release(out);
        return PARITY_ERROR(PARITY_ERROR_MEMORY, "copying a step result of %zu parameters", source->parameter_count);
    }
    memcpy(out->parameter_names, source->parameter_names, source->parameter_count * sizeof *out->parameter_names);
    memcpy(out->parameter_grad_norms, source->parameter_grad_norms, source->parameter_count * sizeof *out->parameter_grad_norms);
    if (source->parameter_grad_sketches) {
        size_t bytes = count * PARITY_SKETCH_K * sizeof *out->parameter_grad_sketches;
        out->parameter_grad_sketches = malloc(bytes);
        if (!out->parameter_grad_sketches) {
            parity_step_result_release(out);
            return PARITY_ERROR(PARITY_ERROR_MEMORY, "copying the sketches of %zu parameters", source->parameter_count);
        }
        memcpy(out->parameter_grad_sketches, source->parameter_grad_sketches, bytes);
    }
    if (source->parameter_numels) {
        out->parameter_numels = malloc(count * sizeof *out->parameter_numels);
        if (!out->parameter_numels) {
            parity_step_result_release(out);
            return PARITY_ERROR(PARITY_ERROR_MEMORY, "copying the sizes of %zu parameters", source->parameter_count);
        }
        memcpy(out->parameter_numels, source->parameter_numels, count * sizeof *out->parameter_numels);
    }
    return NULL;
}

void parity_step_result_release(parity_step_result *result) {
    free(result->parameter_names);
    free(result->parameter_grad_norms);
    free(result->parameter_grad_sketches);
    free(result->parameter_numels);
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

const double *parity_step_result_sketch(const parity_step_result *result, const char *name, size_t hint) {
    if (!result->parameter_grad_sketches) return NULL;
    if (hint < result->parameter_count && strcmp(result->parameter_names[hint], name) == 0)
        return result->parameter_grad_sketches + hint * PARITY_SKETCH_K;
    for (size_t i = 0; i < result->parameter_count; i++)
        if (strcmp(result->parameter_names[i], name) == 0) return result->parameter_grad_sketches + i * PARITY_SKETCH_K;
    return NULL;
}

int64_t parity_step_result_numel(const parity_step_result *result, const char *name, size_t hint) {
    if (!result->parameter_numels) return 0;
    if (hint < result->parameter_count && strcmp(result->parameter_names[hint], name) == 0)
        return result->parameter_numels[hint];
    for (size_t i = 0; i < result->parameter_count; i++)
        if (strcmp(result->parameter_names[i], name) == 0) return result->parameter_numels[i];
    return 0;
}

double parity_sketch_cosine(const double a[PARITY_SKETCH_K], const double b[PARITY_SKETCH_K]) {
    double a_largest = 0, b_largest = 0;
    for (int j = 0; j < PARITY_SKETCH_K; j++) {
        if (!isfinite(a[j]) || !isfinite(b[j])) return NAN;
        a_largest = fmax(a_largest, fabs(a[j]));
        b_largest = fmax(b_largest, fabs(b[j]));
    }
    if (a_largest == 0 && b_largest == 0) return 1.0;
    if (a_largest == 0 || b_largest == 0) return 0.0;
    // each sketch scaled by its largest component first: no overflow or underflow in the squares
    double dot = 0, a_squared = 0, b_squared = 0;
    for (int j = 0; j < PARITY_SKETCH_K; j++) {
        double x = a[j] / a_largest, y = b[j] / b_largest;
        dot += x * y;
        a_squared += x * x;
        b_squared += y * y;
    }
    return dot / (sqrt(a_squared) * sqrt(b_squared));
}
