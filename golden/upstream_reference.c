// upstream_reference.c: reference.json reader.
#include "golden/upstream_reference.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/core/file.h"

parity_error *parity_upstream_run_read(const char *directory, const char *tag, parity_step_result *out) {
    memset(out, 0, sizeof *out);
    out->aux_loss = out->logits_sum = NAN;
    char path[1024];
    snprintf(path, sizeof path, "%s/reference.json", directory);
    char *text;
    size_t size;
    PARITY_TRY(parity_read_file(path, &text, &size));
    cJSON *root = cJSON_Parse(text);
    free(text);
    parity_error *error = NULL;
    const cJSON *run = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "runs"), tag);
    const cJSON *loss = cJSON_GetObjectItemCaseSensitive(run, "loss");
    const cJSON *aux = cJSON_GetObjectItemCaseSensitive(run, "aux_loss");
    const cJSON *grad_norm = cJSON_GetObjectItemCaseSensitive(run, "grad_norm");
    const cJSON *norms = cJSON_GetObjectItemCaseSensitive(run, "param_grad_norms");
    if (!root) error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: not valid JSON", path);
    else if (!run) error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: no run '%s'", path, tag);
    else if (!cJSON_IsNumber(loss) || !cJSON_IsNumber(grad_norm) || !cJSON_IsObject(norms))
        error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: run '%s' lacks loss, grad_norm or param_grad_norms", path, tag);
    if (!error) {
        out->loss = loss->valuedouble;
        out->grad_norm = grad_norm->valuedouble;
        out->has_aux_loss = cJSON_IsNumber(aux);
        if (out->has_aux_loss) out->aux_loss = aux->valuedouble;
        size_t count = (size_t)cJSON_GetArraySize(norms);
        out->parameter_names = calloc(count ? count : 1, sizeof *out->parameter_names);
        out->parameter_grad_norms = calloc(count ? count : 1, sizeof *out->parameter_grad_norms);
        if (!out->parameter_names || !out->parameter_grad_norms) error = PARITY_ERROR(PARITY_ERROR_MEMORY, "%s", path);
        for (const cJSON *item = norms->child; item && !error; item = item->next) {
            if (!cJSON_IsNumber(item)) {
                error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: norm of '%s' is not a number", path, item->string);
                break;
            }
            snprintf(out->parameter_names[out->parameter_count], sizeof out->parameter_names[0], "%s", item->string);
            out->parameter_grad_norms[out->parameter_count++] = item->valuedouble;
        }
    }
    cJSON_Delete(root);
    if (error) parity_step_result_release(out);
    return error;
}
