// runner.c: planning and running a suite (runner.h).
#include "harness/runner.h"

#include <fnmatch.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness/progress.h"
#include "harness/provenance.h"
#include "harness/text.h"
#include "harness/tolerance.h"

// ---- planning ----

void parity_run_plan_release(parity_run_plan *plan) {
    for (size_t i = 0; i < plan->case_count; i++) parity_case_release(&plan->cases[i]);
    free(plan->cases);
    free(plan->selected);
    free(plan->case_index);
    parity_combo_list_release(&plan->combos);
    memset(plan, 0, sizeof *plan);
}

static parity_error *resolve_device(const char *name, bool listing, parity_device *out) {
    if (strcmp(name, "best") == 0) *out = parity_device_best();
    else if (strcmp(name, "cpu") == 0) *out = PARITY_CPU;
    else if (strcmp(name, "cuda") == 0) *out = PARITY_CUDA(0);
    else return PARITY_ERROR(PARITY_ERROR_USAGE, "device '%s' is not one of cpu, cuda, best", name);
    if (listing || out->type == PARITY_DEVICE_CPU) return NULL;
    parity_device_info info;
    parity_error *error = parity_device_query(*out, &info);
    if (!error) return NULL;
    parity_error *absent = PARITY_ERROR(PARITY_ERROR_DEVICE, "device %s is absent: %s", name, parity_error_message(error));
    parity_error_free(error);
    return absent;
}

static parity_error *plan_devices(const parity_suite *suite, const parity_run_options *options, parity_run_plan *plan) {
    const char *names[PARITY_SUITE_MAX_DEVICES];
    size_t count = 0;
    if (options->device) names[count++] = options->device;
    else
        for (size_t i = 0; i < suite->device_count; i++) names[count++] = suite->devices[i];
    for (size_t i = 0; i < count; i++) {
        parity_device device;
        PARITY_TRY(resolve_device(names[i], options->listing, &device));
        bool seen = false;
        for (size_t j = 0; j < plan->device_count; j++) seen = seen || parity_device_equal(plan->devices[j], device);
        if (!seen) plan->devices[plan->device_count++] = device;
    }
    return NULL;
}

static parity_error *plan_dtypes(const parity_suite *suite, const parity_run_options *options, parity_dtype *dtypes,
                                 size_t *count) {
    *count = 0;
    if (!options->dtype) {
        for (size_t i = 0; i < suite->dtype_count; i++) dtypes[(*count)++] = suite->dtypes[i];
        return NULL;
    }
    parity_dtype dtype;
    if (!parity_dtype_parse(options->dtype, &dtype) || (dtype != PARITY_F64 && dtype != PARITY_F32 && dtype != PARITY_BF16))
        return PARITY_ERROR(PARITY_ERROR_USAGE, "--dtype '%s' is not one of fp64, fp32, bf16", options->dtype);
    dtypes[(*count)++] = dtype;
    return NULL;
}

parity_error *parity_run_plan_build(const parity_suite *suite, const parity_run_options *options, parity_run_plan *out) {
    memset(out, 0, sizeof *out);
    PARITY_TRY(parity_suite_check_ranks(suite));
    if (options->model && !parity_suite_find_model(suite, options->model)) {
        char names[512] = "";
        for (size_t i = 0; i < suite->model_count; i++)
            parity_text_extend(names, sizeof names, "%s%s", i ? ", " : "", suite->models[i].name);
        return PARITY_ERROR(PARITY_ERROR_USAGE, "--model: suite %s has no model '%s' (models: %s)", suite->name,
                            options->model, names);
    }
    parity_dtype dtypes[PARITY_SUITE_MAX_DTYPES];
    size_t dtype_count;
    PARITY_TRY(plan_dtypes(suite, options, dtypes, &dtype_count));
    PARITY_TRY(plan_devices(suite, options, out));

    size_t total_cases = 0;
    for (size_t m = 0; m < suite->model_count; m++) {
        size_t count;
        parity_suite_model_batches(suite, &suite->models[m], &count);
        total_cases += count;
    }
    out->cases = calloc(total_cases ? total_cases : 1, sizeof *out->cases);
    if (!out->cases) return PARITY_ERROR(PARITY_ERROR_MEMORY, "planning the run");
    parity_combo_options combo_options = {options->with_test_backends, options->fixed};
    parity_error *error = NULL;
    size_t *case_of = NULL, case_capacity = 0;
    for (size_t m = 0; m < suite->model_count && !error; m++) {
        const parity_suite_model *model = &suite->models[m];
        if (options->model && strcmp(options->model, model->name) != 0) continue;
        size_t batch_count;
        const parity_suite_batch *batches = parity_suite_model_batches(suite, model, &batch_count);
        for (size_t b = 0; b < batch_count && !error; b++) {
            parity_case *c = &out->cases[out->case_count];
            error = parity_case_prepare(suite, model, &batches[b], c);
            if (error) break;
            out->case_count++;
            for (size_t d = 0; d < dtype_count && !error; d++)
                for (size_t v = 0; v < out->device_count && !error; v++) {
                    size_t before = out->combos.count;
                    error = parity_combos_enumerate(suite, model, &c->config, &batches[b], dtypes[d], out->devices[v],
                                                    &combo_options, &out->combos);
                    if (!error && out->combos.count > case_capacity) {
                        case_capacity = out->combos.capacity;
                        size_t *grown = realloc(case_of, case_capacity * sizeof *case_of);
                        if (!grown) error = PARITY_ERROR(PARITY_ERROR_MEMORY, "planning the run");
                        else case_of = grown;
                    }
                    for (size_t i = before; !error && i < out->combos.count; i++) case_of[i] = out->case_count - 1;
                }
        }
    }
    out->case_index = case_of;
    out->selected = calloc(out->combos.count ? out->combos.count : 1, sizeof *out->selected);
    if (!error && !out->selected) error = PARITY_ERROR(PARITY_ERROR_MEMORY, "planning the run");
    for (size_t i = 0; !error && i < out->combos.count; i++) {
        out->selected[i] = !options->filter || fnmatch(options->filter, out->combos.items[i].id, 0) == 0;
        out->selected_count += out->selected[i];
    }
    if (error) parity_run_plan_release(out);
    return error;
}

// ---- timing ----

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median_of(double *sorted, size_t count) {
    qsort(sorted, count, sizeof *sorted, compare_doubles);
    return count % 2 ? sorted[count / 2] : 0.5 * (sorted[count / 2 - 1] + sorted[count / 2]);
}

void parity_timing_summary(const double *samples, size_t count, double *median, double *noise) {
    *median = NAN;
    *noise = NAN;
    if (count == 0) return;
    double *scratch = malloc(count * sizeof *scratch);
    if (!scratch) return;
    memcpy(scratch, samples, count * sizeof *scratch);
    *median = median_of(scratch, count);
    for (size_t i = 0; i < count; i++) scratch[i] = fabs(samples[i] - *median);
    double deviation = median_of(scratch, count);
    *noise = *median > 0 ? deviation / *median : NAN;
    free(scratch);
}

// ---- comparing ----

// The values a combo is compared on, copied out of a step result.
typedef struct step_values {
    double loss, aux_loss, grad_norm;
    bool has_aux_loss;
    size_t count;
    char (*names)[160];
    double *norms;
    char first_non_finite[192];
} step_values;

static void step_values_release(step_values *values) {
    free(values->names);
    free(values->norms);
    memset(values, 0, sizeof *values);
}

static parity_error *step_values_copy(const parity_step_result *step, step_values *out) {
    memset(out, 0, sizeof *out);
    out->loss = step->loss;
    out->aux_loss = step->aux_loss;
    out->has_aux_loss = step->has_aux_loss;
    out->grad_norm = step->grad_norm;
    out->count = step->parameter_count;
    parity_text_format(out->first_non_finite, sizeof out->first_non_finite, "%s", step->first_non_finite);
    out->names = calloc(out->count ? out->count : 1, sizeof *out->names);
    out->norms = calloc(out->count ? out->count : 1, sizeof *out->norms);
    if (!out->names || !out->norms) {
        step_values_release(out);
        return PARITY_ERROR(PARITY_ERROR_MEMORY, "copying step values");
    }
    memcpy(out->names, step->parameter_names, out->count * sizeof *out->names);
    memcpy(out->norms, step->parameter_grad_norms, out->count * sizeof *out->norms);
    return NULL;
}

// Zeroed values with the names of `source` (for accumulating a spread).
static parity_error *step_values_copy_shape(const step_values *source, step_values *out) {
    memset(out, 0, sizeof *out);
    out->has_aux_loss = source->has_aux_loss;
    out->count = source->count;
    out->names = calloc(out->count ? out->count : 1, sizeof *out->names);
    out->norms = calloc(out->count ? out->count : 1, sizeof *out->norms);
    if (!out->names || !out->norms) {
        step_values_release(out);
        return PARITY_ERROR(PARITY_ERROR_MEMORY, "jitter spread values");
    }
    memcpy(out->names, source->names, out->count * sizeof *out->names);
    return NULL;
}

static void step_values_from_golden(const parity_golden_values *golden, step_values *out) {
    memset(out, 0, sizeof *out);
    out->loss = golden->loss;
    out->aux_loss = golden->aux_loss;
    out->has_aux_loss = golden->has_aux_loss;
    out->grad_norm = golden->grad_norm;
    out->count = golden->parameter_count;
    out->names = golden->parameter_names; // borrowed: never released
    out->norms = golden->parameter_grad_norms;
}

// The gradient norm of `name` in `values`, NAN when absent (index `hint` is tried first).
static double norm_named(const step_values *values, const char *name, size_t hint) {
    if (hint < values->count && strcmp(values->names[hint], name) == 0) return values->norms[hint];
    for (size_t i = 0; i < values->count; i++)
        if (strcmp(values->names[i], name) == 0) return values->norms[i];
    return NAN;
}

static parity_error *add_metric(parity_combo_result *result, const parity_metric *metric) {
    return parity_metric_add(result, metric);
}

// Fills the metrics of `result` and returns whether all pass.
static parity_error *compare(parity_tolerance_rule rule, parity_dtype dtype, const parity_golden_values *golden_values,
                             const step_values *value, const step_values *eager, const step_values *spread,
                             parity_combo_result *result) {
    step_values golden;
    step_values_from_golden(golden_values, &golden);
    parity_metric metric;
    if (rule == PARITY_RULE_VEOMNI) {
        parity_tolerance_check_veomni("loss", value->loss, eager->loss, &metric);
        PARITY_TRY(add_metric(result, &metric));
        parity_tolerance_check_veomni("grad_norm", value->grad_norm, eager->grad_norm, &metric);
        return add_metric(result, &metric);
    }
    parity_tolerance_check("loss", PARITY_METRIC_LOSS_LIKE, dtype, value->loss, golden.loss, eager->loss,
                           spread ? spread->loss : 0.0, &metric);
    PARITY_TRY(add_metric(result, &metric));
    if (golden.has_aux_loss) {
        parity_tolerance_check("aux_loss", PARITY_METRIC_LOSS_LIKE, dtype, value->has_aux_loss ? value->aux_loss : NAN,
                               golden.aux_loss, eager->aux_loss, spread ? spread->aux_loss : 0.0, &metric);
        PARITY_TRY(add_metric(result, &metric));
    }
    parity_tolerance_check("grad_norm", PARITY_METRIC_GRADIENT, dtype, value->grad_norm, golden.grad_norm, eager->grad_norm,
                           spread ? spread->grad_norm : 0.0, &metric);
    PARITY_TRY(add_metric(result, &metric));
    for (size_t i = 0; i < golden.count; i++) {
        char name[192];
        parity_text_format(name, sizeof name, "grad_norm:%s", golden.names[i]);
        parity_tolerance_check(name, PARITY_METRIC_GRADIENT, dtype, norm_named(value, golden.names[i], i), golden.norms[i],
                               norm_named(eager, golden.names[i], i), spread ? norm_named(spread, golden.names[i], i) : 0.0,
                               &metric);
        PARITY_TRY(add_metric(result, &metric));
    }
    return NULL;
}

// Status and reason from the metrics (the worst one names the failure).
static void judge(parity_combo_result *result, const step_values *value) {
    if (value->first_non_finite[0]) {
        result->status = PARITY_COMBO_FAIL;
        parity_text_format(result->reason, sizeof result->reason, "NaN/Inf first appeared in %s", value->first_non_finite);
        return;
    }
    const parity_metric *worst = NULL;
    size_t failing = 0;
    for (size_t i = 0; i < result->metric_count; i++) {
        const parity_metric *metric = &result->metrics[i];
        if (!metric->pass) failing++;
        if (!worst || metric->ratio > worst->ratio || (isnan(metric->value) && !isnan(worst->value))) worst = metric;
    }
    if (!failing) {
        result->status = PARITY_COMBO_PASS;
        return;
    }
    result->status = PARITY_COMBO_FAIL;
    if (isnan(worst->value))
        parity_text_format(result->reason, sizeof result->reason, "%s: no value (the combo did not report it)", worst->name);
    else
        parity_text_format(result->reason, sizeof result->reason,
                           "%zu metric%s out of tolerance; worst %s: error %.3g > tolerance %.3g (ratio %.3g)", failing,
                           failing == 1 ? "" : "s", worst->name, worst->error, worst->tolerance, worst->ratio);
}

// ---- running ----

typedef struct group_state {
    bool baseline_ran, baseline_ok;
    char baseline_id[320];
    char baseline_problem[1024];
    step_values eager;                 // the baseline's values (eager_same_dtype)
    step_values spread;                // per metric, the largest |jittered eager - eager| (names as eager's)
    bool has_spread;
} group_state;

static void fill_record(const parity_suite *suite, const parity_combo_plan *plan, parity_combo_result *record) {
    parity_text_format(record->id, sizeof record->id, "%s", plan->id);
    parity_text_format(record->suite, sizeof record->suite, "%s", suite->name);
    parity_text_format(record->model, sizeof record->model, "%s", plan->model->name);
    parity_text_format(record->batch, sizeof record->batch, "%s", plan->batch->name);
    parity_text_format(record->dtype, sizeof record->dtype, "%s", parity_dtype_name(plan->dtype));
    parity_device_format(plan->device, record->device, sizeof record->device);
    record->field_count = 0;
    if (plan->backend[0]) {
        parity_text_format(record->fields[0].field, sizeof record->fields[0].field, "modeling_backend");
        parity_text_format(record->fields[0].value, sizeof record->fields[0].value, "%s", plan->backend);
        record->field_count = 1;
    }
    for (size_t i = 0; i < plan->choice_count && record->field_count < PARITY_COMBO_MAX_FIELDS; i++) {
        parity_field_choice *choice = &record->fields[record->field_count++];
        parity_text_format(choice->field, sizeof choice->field, "%s", plan->fields[i]->name);
        parity_text_format(choice->value, sizeof choice->value, "%s", plan->values[i]);
    }
    record->is_eager_baseline = plan->is_baseline;
    record->status = plan->status;
    parity_text_format(record->reason, sizeof record->reason, "%s", plan->reason);
}

static bool golden_on_device_type(const parity_golden *golden, parity_device device) {
    bool golden_on_cpu = strncmp(golden->device, "cpu", 3) == 0;
    return golden_on_cpu == (device.type == PARITY_DEVICE_CPU);
}

// The jitter spread of a group (harness/tolerance.h): eager again PARITY_JITTER_RUNS times with the
// embedding table nudged by rounding-level noise (seeds 1, 2, ...); per metric the largest distance
// from the unjittered eager. A jittered run that fails takes the baseline down with it (the combos
// of the group then report "no tolerance" with the reason), as a failed baseline does.
static parity_error *measure_jitter_spread(const parity_combo_plan *plan, const parity_exec *exec, const parity_case *c,
                                           group_state *group) {
    step_values *spread = &group->spread;
    PARITY_TRY(step_values_copy_shape(&group->eager, spread));
    group->has_spread = true;
    for (int run = 1; run <= PARITY_JITTER_RUNS; run++) {
        parity_evaluation evaluation;
        parity_error *run_error = parity_case_evaluate(c, plan->dtype, plan->device, exec, NULL, false, NULL, 0, 0,
                                                       (uint64_t)run, &evaluation);
        step_values jittered = {0};
        if (!run_error) run_error = step_values_copy(&evaluation.step, &jittered);
        parity_evaluation_release(&evaluation); // filled even when the run failed (as run_combo's)
        if (run_error) {
            char message[800];
            group->baseline_ok = false;
            parity_text_format(group->baseline_problem, sizeof group->baseline_problem, "jittered eager run %d: %s", run,
                               parity_error_format(run_error, message, sizeof message));
            parity_error_free(run_error);
            break;
        }
        spread->loss = fmax(spread->loss, fabs(jittered.loss - group->eager.loss));
        if (group->eager.has_aux_loss && jittered.has_aux_loss)
            spread->aux_loss = fmax(spread->aux_loss, fabs(jittered.aux_loss - group->eager.aux_loss));
        spread->grad_norm = fmax(spread->grad_norm, fabs(jittered.grad_norm - group->eager.grad_norm));
        for (size_t i = 0; i < spread->count; i++) // fmax drops a NaN (a name the jittered run lacks)
            spread->norms[i] = fmax(spread->norms[i], fabs(norm_named(&jittered, spread->names[i], i) - group->eager.norms[i]));
        step_values_release(&jittered);
    }
    return NULL;
}

// Runs one combo (plan->status PASS) and fills its record (when `record` is not NULL).
static parity_error *run_combo(const parity_suite *suite, const parity_combo_plan *plan, const parity_exec *exec,
                               const parity_case *c, const parity_golden *golden, group_state *group,
                               parity_combo_result *record) {
    parity_ops_settings settings = {0};
    parity_ops_source source = {.kind = PARITY_OPS_FROM_COMMAND_LINE};
    parity_error *error = NULL;
    for (size_t i = 0; i < plan->choice_count && !error; i++)
        error = parity_ops_settings_add(&settings, plan->fields[i]->name, plan->values[i], &source);
    parity_timer timer;
    if (!error) error = parity_timer_create(exec, &timer);
    if (error) {
        parity_ops_settings_free(&settings);
        return error;
    }
    parity_evaluation evaluation;
    parity_error *run_error = parity_case_evaluate(c, plan->dtype, plan->device, exec, &settings, false, &timer,
                                                   suite->warmup, suite->repeats, 0, &evaluation);
    parity_ops_settings_free(&settings);
    parity_timer_release(&timer);

    step_values value = {0};
    if (!run_error) run_error = step_values_copy(&evaluation.step, &value);
    if (plan->is_baseline) {
        group->baseline_ran = true;
        group->baseline_ok = !run_error && !value.first_non_finite[0];
        parity_text_format(group->baseline_id, sizeof group->baseline_id, "%s", plan->id);
        if (run_error) parity_error_format(run_error, group->baseline_problem, sizeof group->baseline_problem);
        else if (value.first_non_finite[0])
            parity_text_format(group->baseline_problem, sizeof group->baseline_problem, "NaN/Inf first appeared in %s",
                               value.first_non_finite);
        if (group->baseline_ok) error = step_values_copy(&evaluation.step, &group->eager);
        if (group->baseline_ok && !error && suite->tolerance == PARITY_RULE_PARITY && plan->dtype != PARITY_F64)
            error = measure_jitter_spread(plan, exec, c, group);
    }
    if (record && !error) {
        if (run_error) {
            parity_error_kind kind = parity_error_kind_of(run_error);
            record->status = kind == PARITY_ERROR_UNSUPPORTED || kind == PARITY_ERROR_UNAVAILABLE ? PARITY_COMBO_NOT_SUPPORTED
                                                                                                 : PARITY_COMBO_ERROR;
            parity_error_format(run_error, record->reason, sizeof record->reason);
        } else {
            record->tokens = evaluation.token_count;
            record->peak_memory_bytes = evaluation.peak_memory_bytes;
            record->warmup_count = (size_t)suite->warmup;
            error = parity_combo_set_samples(record, evaluation.step_ms, evaluation.step_ms_count);
            parity_timing_summary(evaluation.step_ms, evaluation.step_ms_count, &record->median_ms, &record->noise);
            // The baseline is checked against the golden's own eager error when the golden was made
            // on this kind of device (a changed eager kernel or a stale golden shows); otherwise it is
            // the reference by definition.
            step_values reference = group->eager;
            step_values golden_eager;
            const parity_golden_values *stored = plan->dtype == PARITY_F64 ? &golden->expected
                                                                           : parity_golden_eager(golden, parity_dtype_name(plan->dtype));
            if (plan->is_baseline && stored && golden_on_device_type(golden, plan->device)) {
                step_values_from_golden(stored, &golden_eager);
                reference = golden_eager;
            }
            if (!error)
                error = compare(suite->tolerance, plan->dtype, &golden->expected, &value, &reference,
                                group->has_spread ? &group->spread : NULL, record);
            if (!error) judge(record, &value);
        }
    }
    parity_error_free(run_error);
    step_values_release(&value);
    parity_evaluation_release(&evaluation);
    return error;
}

static void fill_context(const parity_suite *suite, const parity_run_plan *plan, const parity_exec *exec,
                         const parity_run_options *options, parity_results *results) {
    parity_results_context *context = &results->context;
    context->schema_version = PARITY_RESULTS_SCHEMA_VERSION;
    parity_provenance provenance;
    parity_provenance_collect(plan->device_count ? plan->devices[0] : PARITY_CPU, options->argc, options->argv, &provenance);
    parity_text_format(context->suite, sizeof context->suite, "%s", suite->name);
    parity_text_format(context->git_sha, sizeof context->git_sha, "%s", provenance.git_sha);
    parity_text_format(context->host, sizeof context->host, "%s", provenance.host);
    parity_text_format(context->device, sizeof context->device, "%s", provenance.device);
    for (size_t i = 1; i < plan->device_count; i++) {
        parity_provenance other;
        parity_provenance_collect(plan->devices[i], 0, NULL, &other);
        parity_text_extend(context->device, sizeof context->device, "; %s", other.device);
    }
    parity_text_format(context->driver_version, sizeof context->driver_version, "%s", provenance.driver_version);
    parity_text_format(context->cuda_version, sizeof context->cuda_version, "%s", provenance.cuda_version);
    parity_text_format(context->libraries, sizeof context->libraries, "%s", provenance.libraries);
    parity_text_format(context->command, sizeof context->command, "%s", provenance.command);
    parity_text_format(context->started, sizeof context->started, "%s", provenance.created);
    parity_text_format(context->tolerance_rule, sizeof context->tolerance_rule, "%s",
                       parity_tolerance_rule_description(suite->tolerance));
    parity_timer timer;
    parity_error *timer_error =
        exec ? parity_timer_create(exec, &timer) : PARITY_ERROR(PARITY_ERROR_USAGE, "no device planned");
    if (timer_error) {
        parity_error_free(timer_error);
        timer = parity_timer_wall_clock(plan->devices[0]);
    }
    parity_text_format(context->timing_method, sizeof context->timing_method,
                       "%s; %d warm-up, median of %d; noise = median absolute deviation / median", timer.method,
                       suite->warmup, suite->repeats);
    parity_timer_release(&timer);
}

// Reads and checks the golden of every case that has a selected combo to run.
static parity_error *load_goldens(const parity_suite *suite, const parity_run_plan *plan, const parity_run_options *options,
                                  parity_golden *goldens, bool *loaded) {
    for (size_t k = 0; k < plan->case_count; k++) {
        bool needed = false;
        for (size_t i = 0; i < plan->combos.count && !needed; i++)
            needed = plan->case_index[i] == k && plan->selected[i] && plan->combos.items[i].status == PARITY_COMBO_PASS;
        if (!needed) continue;
        const parity_case *c = &plan->cases[k];
        char path[1400];
        parity_golden_path_of(options->golden_dir ? options->golden_dir : "golden", suite->name, c->model->name,
                              c->batch_spec->name, path, sizeof path);
        parity_error *error = parity_golden_read(path, &goldens[k]);
        if (error)
            return parity_error_wrap(error, __FILE__, __LINE__, "golden %s (make it with: parity golden generate --suite %s)",
                                     path, suite->name);
        loaded[k] = true;
        PARITY_TRY(parity_golden_check_case(path, &goldens[k], c));
    }
    return NULL;
}

// The run's execution context of each planned device (the run owns them; every combo's steps and
// timer on that device use it).
static parity_error *create_execs(const parity_run_plan *plan, parity_exec **execs) {
    for (size_t d = 0; d < plan->device_count; d++) PARITY_TRY(parity_exec_create(plan->devices[d], &execs[d]));
    return NULL;
}

static const parity_exec *exec_of(const parity_run_plan *plan, parity_exec *const *execs, parity_device device) {
    for (size_t d = 0; d < plan->device_count; d++)
        if (parity_device_equal(plan->devices[d], device)) return execs[d];
    return NULL; // not planned: parity_evaluate makes one
}

static void destroy_execs(const parity_run_plan *plan, parity_exec **execs) {
    for (size_t d = 0; d < plan->device_count; d++) parity_exec_destroy(execs[d]);
}

parity_error *parity_run_execute(const parity_suite *suite, const parity_run_plan *plan, const parity_run_options *options,
                                 parity_results *results) {
    parity_exec *execs[PARITY_SUITE_MAX_DEVICES] = {0};
    parity_error *exec_error = create_execs(plan, execs);
    if (exec_error) {
        destroy_execs(plan, execs);
        return exec_error;
    }
    fill_context(suite, plan, execs[0], options, results);
    parity_golden *goldens = calloc(plan->case_count ? plan->case_count : 1, sizeof *goldens);
    bool *loaded = calloc(plan->case_count ? plan->case_count : 1, sizeof *loaded);
    if (!goldens || !loaded) {
        free(goldens);
        free(loaded);
        destroy_execs(plan, execs);
        return PARITY_ERROR(PARITY_ERROR_MEMORY, "running the suite");
    }
    parity_error *error = load_goldens(suite, plan, options, goldens, loaded);

    // Work: selected runnable combos, plus the baseline of every group with one of them.
    bool *runs = calloc(plan->combos.count ? plan->combos.count : 1, sizeof *runs);
    if (!runs && !error) error = PARITY_ERROR(PARITY_ERROR_MEMORY, "running the suite");
    size_t work = 0;
    for (size_t i = 0, group_start = 0; runs && i < plan->combos.count; i++) {
        if (plan->combos.items[i].is_baseline) group_start = i;
        if (!plan->selected[i] || plan->combos.items[i].status != PARITY_COMBO_PASS) continue;
        runs[i] = true;
        if (plan->combos.items[group_start].is_baseline && plan->combos.items[group_start].status == PARITY_COMBO_PASS)
            runs[group_start] = true;
    }
    for (size_t i = 0; runs && i < plan->combos.count; i++) work += runs[i];
    parity_progress progress;
    parity_progress_start(&progress, options->progress, options->terminal, work);

    group_state group;
    memset(&group, 0, sizeof group);
    for (size_t i = 0; i < plan->combos.count && !error; i++) {
        const parity_combo_plan *combo = &plan->combos.items[i];
        if (combo->is_baseline) {
            step_values_release(&group.eager);
            step_values_release(&group.spread);
            memset(&group, 0, sizeof group);
        }
        bool runnable = combo->status == PARITY_COMBO_PASS;
        if (!plan->selected[i] && !runs[i]) continue;
        const parity_case *c = &plan->cases[plan->case_index[i]];
        parity_combo_result *record = NULL;
        if (plan->selected[i]) {
            record = parity_results_add_combo(results);
            if (!record) {
                error = PARITY_ERROR(PARITY_ERROR_MEMORY, "recording results");
                break;
            }
            fill_record(suite, combo, record);
        }
        if (!runnable) continue; // not_supported / excluded: recorded with their reason
        if (!combo->is_baseline && !group.baseline_ok) {
            parity_progress_begin(&progress, combo->model->name, combo->id);
            record->status = PARITY_COMBO_ERROR;
            parity_text_format(record->reason, sizeof record->reason, "no tolerance: the eager baseline %s %s: %s",
                               group.baseline_id[0] ? group.baseline_id : "(none)",
                               group.baseline_ran ? "failed" : "did not run", group.baseline_problem);
            parity_progress_end(&progress, combo->id, "error", record->reason);
            continue;
        }
        parity_progress_begin(&progress, combo->model->name, combo->id);
        error = run_combo(suite, combo, exec_of(plan, execs, combo->device), c, &goldens[plan->case_index[i]], &group,
                          record);
        if (error) break;
        char note[1100] = "";
        const char *status = record ? parity_combo_status_name(record->status) : "baseline";
        if (record && record->status == PARITY_COMBO_PASS) {
            double worst = 0;
            for (size_t m = 0; m < record->metric_count; m++)
                if (record->metrics[m].ratio > worst) worst = record->metrics[m].ratio;
            parity_text_format(note, sizeof note, "worst ratio %.3g, %.3g ms", worst, record->median_ms);
        } else if (record) {
            parity_text_format(note, sizeof note, "%s", record->reason);
        } else {
            parity_text_format(note, sizeof note, "(eager reference for the tolerances, not selected)");
        }
        parity_progress_end(&progress, combo->id, status, note);
    }
    parity_progress_finish(&progress);
    step_values_release(&group.eager);
    step_values_release(&group.spread);
    char finished[32];
    parity_text_format(results->context.finished, sizeof results->context.finished, "%s",
                       parity_utc_timestamp(finished, sizeof finished, 0));
    for (size_t k = 0; k < plan->case_count; k++)
        if (loaded[k]) parity_golden_release(&goldens[k]);
    free(goldens);
    free(loaded);
    free(runs);
    destroy_execs(plan, execs);
    return error;
}
