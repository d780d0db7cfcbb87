// golden_case.c: suite cases and their goldens (golden_case.h).
#include "harness/golden_case.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "golden/sha256.h"
#include "harness/text.h"
#include "models/checkpoint/checkpoint.h"
#include "ops/core/file.h"

// Logits are summed only when the full (tokens x vocab) fp64 logits stay this small.
#define LOGITS_SUM_MAX_ELEMENTS (1 << 22)

void parity_case_release(parity_case *c) {
    free(c->config_text);
    parity_case_batch_release(&c->batch);
    memset(c, 0, sizeof *c);
}

// Adds the bytes of `path` to a running checksum.
static parity_error *checksum_file(parity_sha256 *context, const char *path) {
    FILE *file = fopen(path, "rb");
    if (!file) return PARITY_ERROR(PARITY_ERROR_IO, "%s: cannot open for checksumming: %s", path, strerror(errno));
    unsigned char buffer[1 << 16];
    size_t got;
    while ((got = fread(buffer, 1, sizeof buffer, file)) > 0) parity_sha256_update(context, buffer, got);
    bool failed = ferror(file) != 0;
    fclose(file);
    return failed ? PARITY_ERROR(PARITY_ERROR_IO, "%s: read error while checksumming", path) : NULL;
}

// Checkpoint: sha256 of its safetensors bytes (model.safetensors, or the shards in index order
// concatenated). Drawn weights: sha256 of the config text, the seed and the initializer range.
static parity_error *weight_checksum(parity_case *c) {
    parity_sha256 context;
    parity_sha256_begin(&context);
    const parity_suite_model *model = c->model;
    if (model->checkpoint[0]) {
        char **files = NULL;
        size_t count = 0;
        PARITY_TRY(parity_checkpoint_files(model->checkpoint, &files, &count));
        parity_error *error = NULL;
        for (size_t i = 0; i < count; i++) {
            if (!error) error = checksum_file(&context, files[i]);
            free(files[i]);
        }
        free(files);
        PARITY_TRY(error);
        parity_text_format(c->weight_source, sizeof c->weight_source, "checkpoint %s", model->checkpoint);
    } else {
        char suffix[128];
        parity_text_format(suffix, sizeof suffix, "\nseed=%llu initializer_range=%.17g", (unsigned long long)model->seed,
                           model->initializer_range > 0 ? model->initializer_range : 0.02);
        parity_sha256_update(&context, c->config_text, strlen(c->config_text));
        parity_sha256_update(&context, suffix, strlen(suffix));
        parity_text_format(c->weight_source, sizeof c->weight_source, "seed %llu from %s (initializer_range %g)",
                           (unsigned long long)model->seed, model->config,
                           model->initializer_range > 0 ? model->initializer_range : 0.02);
    }
    parity_sha256_end(&context, c->weight_sha256);
    return NULL;
}

parity_error *parity_case_prepare(const parity_suite *suite, const parity_suite_model *model,
                                  const parity_suite_batch *batch, parity_case *out) {
    memset(out, 0, sizeof *out);
    out->suite = suite;
    out->model = model;
    out->batch_spec = batch;
    if (model->checkpoint[0]) parity_text_format(out->config_path, sizeof out->config_path, "%s/config.json", model->checkpoint);
    else parity_text_format(out->config_path, sizeof out->config_path, "%s", model->config);
    size_t config_size;
    parity_error *error = parity_read_file(out->config_path, &out->config_text, &config_size);
    if (!error) error = parity_model_config_parse(out->config_text, out->config_path, &out->config);
    if (!error) error = parity_model_requirements_of(&out->config, &out->requirements);
    if (!error) error = weight_checksum(out);
    if (!error) error = parity_case_batch_make(batch, out->config.vocab_size, &out->batch);
    if (error) {
        parity_case_release(out);
        return parity_error_wrap(error, __FILE__, __LINE__, "suite %s, model %s, batch %s", suite->name, model->name,
                                 batch->name);
    }
    return NULL;
}

void parity_golden_path_of(const char *golden_dir, const char *suite, const char *model, const char *case_name, char *out,
                           size_t size) {
    parity_text_format(out, size, "%s/%s/%s/%s.h5", golden_dir, suite, model, case_name);
}

parity_error *parity_case_evaluate(const parity_case *c, parity_dtype dtype, parity_device device,
                                   const parity_exec *exec, const parity_op_names *names, bool want_logits,
                                   parity_timer *timer, int warmup_steps, int timed_steps,
                                   const parity_adaptive_timing *adaptive, uint64_t jitter_seed, parity_evaluation *out) {
    memset(out, 0, sizeof *out); // released by every caller, also when the batch is refused below
    parity_batch batch;
    PARITY_TRY(parity_case_batch_to_batch(&c->batch, c->config.vocab_size, &batch));
    parity_evaluation_options options = {
        .checkpoint = c->model->checkpoint[0] ? c->model->checkpoint : NULL,
        .config_path = c->model->checkpoint[0] ? NULL : c->model->config,
        .seed = c->model->seed,
        .initializer_range = c->model->initializer_range,
        .batch = &batch,
        .dtype = dtype,
        .device = device,
        .exec = exec,
        .eager_baseline = true,
        .names = names,
        .requirements = &c->requirements,
        .want_logits = want_logits,
        .timer = timer,
        .warmup_steps = warmup_steps,
        .timed_steps = timed_steps,
        .adaptive = adaptive ? *adaptive : (parity_adaptive_timing){0},
        .jitter_seed = jitter_seed,
        .layout = c->layout,
    };
    parity_error *error = parity_evaluate(&options, out);
    parity_batch_release(&batch);
    return error;
}

parity_device parity_golden_device(const parity_suite *suite) {
    for (size_t i = 0; i < suite->device_count; i++) {
        bool wants_gpu = strcmp(suite->devices[i], "cuda") == 0 || strcmp(suite->devices[i], "best") == 0;
        if (wants_gpu && parity_cuda_device_count(NULL, 0) > 0) return PARITY_CUDA(0);
    }
    return PARITY_CPU;
}

static parity_error *batch_tensor(const int64_t *values, int64_t rows, int64_t length, parity_tensor *out) {
    PARITY_TRY(parity_tensor_alloc(out, PARITY_I64, PARITY_CPU, PARITY_SHAPE(rows, length)));
    memcpy(out->data, values, (size_t)(rows * length) * sizeof(int64_t));
    return NULL;
}

parity_error *parity_golden_compute(const parity_case *c, parity_device device, const parity_provenance *provenance,
                                    parity_golden *out) {
    memset(out, 0, sizeof *out);
    out->schema_version = PARITY_GOLDEN_SCHEMA_VERSION;
    parity_text_format(out->git_sha, sizeof out->git_sha, "%s", provenance->git_sha);
    parity_text_format(out->created, sizeof out->created, "%s", provenance->created);
    parity_text_format(out->host, sizeof out->host, "%s", provenance->host);
    parity_text_format(out->device, sizeof out->device, "%s", provenance->device);
    parity_text_format(out->compiler, sizeof out->compiler, "%s", provenance->compiler);
    parity_text_format(out->libraries, sizeof out->libraries, "%s", provenance->libraries);
    parity_text_format(out->command, sizeof out->command, "%s", provenance->command);
    parity_text_format(out->suite, sizeof out->suite, "%s", c->suite->name);
    parity_text_format(out->model, sizeof out->model, "%s", c->model->name);
    parity_text_format(out->case_name, sizeof out->case_name, "%s", c->batch_spec->name);
    parity_text_format(out->model_type, sizeof out->model_type, "%s", c->config.model_type);
    parity_text_format(out->weight_source, sizeof out->weight_source, "%s", c->weight_source);
    parity_text_format(out->weight_sha256, sizeof out->weight_sha256, "%s", c->weight_sha256);
    out->weight_seed = c->model->seed;
    parity_text_format(out->batch_source, sizeof out->batch_source, "%s", c->batch.source);
    parity_text_format(out->batch_sha256, sizeof out->batch_sha256, "%s", c->batch.sha256);
    out->model_config_json = strdup(c->config_text);
    parity_error *error = out->model_config_json ? NULL : PARITY_ERROR(PARITY_ERROR_MEMORY, "golden config text");
    if (!error) error = batch_tensor(c->batch.input_ids, c->batch.rows, c->batch.length, &out->input_ids);
    if (!error) error = batch_tensor(c->batch.labels, c->batch.rows, c->batch.length, &out->labels);
    if (!error && c->batch.position_ids)
        error = batch_tensor(c->batch.position_ids, c->batch.rows, c->batch.length, &out->position_ids);

    bool want_logits = c->batch.rows * c->batch.length * c->config.vocab_size <= LOGITS_SUM_MAX_ELEMENTS;
    const parity_dtype dtypes[3] = {PARITY_F64, PARITY_F32, PARITY_BF16};
    for (int d = 0; d < 3 && !error; d++) {
        parity_evaluation evaluation;
        error = parity_case_evaluate(c, dtypes[d], device, NULL, NULL, want_logits, NULL, 0, 0, NULL, 0, &evaluation);
        if (!error && evaluation.step.first_non_finite[0])
            error = PARITY_ERROR(PARITY_ERROR_NUMERIC, "eager %s produced NaN/Inf, first in %s", parity_dtype_name(dtypes[d]),
                                 evaluation.step.first_non_finite);
        if (!error && d == 0) error = parity_step_result_copy(&evaluation.step, &out->expected);
        if (!error && d > 0) {
            parity_golden_precision *precision = &out->precisions[out->precision_count++];
            parity_text_format(precision->dtype, sizeof precision->dtype, "%s", parity_dtype_name(dtypes[d]));
            error = parity_step_result_copy(&evaluation.step, &precision->eager);
        }
        parity_evaluation_release(&evaluation);
        if (error)
            error = parity_error_wrap(error, __FILE__, __LINE__, "golden of %s/%s, eager %s", c->model->name,
                                      c->batch_spec->name, parity_dtype_name(dtypes[d]));
    }
    if (error) parity_golden_release(out);
    return error;
}

parity_error *parity_golden_check_owner(const char *path, const parity_golden *golden, const parity_case *c) {
    if (strcmp(golden->suite, c->suite->name) == 0 && strcmp(golden->model, c->model->name) == 0 &&
        strcmp(golden->case_name, c->batch_spec->name) == 0)
        return NULL;
    return PARITY_ERROR(PARITY_ERROR_DATA,
                        "%s: golden of suite '%s' (model %s, batch %s), not of suite '%s' (model %s, batch %s): a golden "
                        "belongs to the one suite case it was made for; make this one with parity golden generate --suite %s",
                        path, golden->suite, golden->model, golden->case_name, c->suite->name, c->model->name,
                        c->batch_spec->name, c->suite->name);
}

parity_error *parity_golden_check_case(const char *path, const parity_golden *golden, const parity_case *c) {
    const char *regenerate = "regenerate it with parity golden generate --force";
    PARITY_TRY(parity_golden_check_owner(path, golden, c));
    if (parity_model_traits_find(golden->model_type) != c->config.traits)
        return PARITY_ERROR(PARITY_ERROR_DATA, "%s: golden is for model_type '%s', the suite's model %s is '%s'; %s", path,
                            golden->model_type, c->model->name, c->config.model_type, regenerate);
    if (!golden->model_config_json || strcmp(golden->model_config_json, c->config_text) != 0)
        return PARITY_ERROR(PARITY_ERROR_DATA, "%s: golden was made from a different config.json than %s; %s", path,
                            c->config_path, regenerate);
    if (strcmp(golden->weight_sha256, c->weight_sha256) != 0)
        return PARITY_ERROR(PARITY_ERROR_DATA, "%s: golden weights sha256 %.12s... differs from the suite's %s (%.12s...); %s",
                            path, golden->weight_sha256, c->weight_source, c->weight_sha256, regenerate);
    if (strcmp(golden->batch_sha256, c->batch.sha256) != 0)
        return PARITY_ERROR(PARITY_ERROR_DATA, "%s: golden batch sha256 %.12s... differs from the suite's batch %s (%.12s...); %s",
                            path, golden->batch_sha256, c->batch.source, c->batch.sha256, regenerate);
    return NULL;
}
