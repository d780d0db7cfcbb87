// run_execute.c: running a planned suite (runner.h): the goldens read and checked first, then every
// selected combo and the eager baseline of its group, each compared (run_compare.c) and recorded,
// with the run's context (provenance, timing method) and the timing summary of every combo.
#include "harness/runner.h"

#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "harness/progress.h"
#include "harness/provenance.h"
#include "harness/run/run_internal.h"
#include "harness/text.h"
#include "ops/core/clock.h"
#include "ops/core/comm.h"
#include "reports/timing_stats.h"

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

// Where a combo's wall time went (seconds): the evaluation's phases (harness/evaluate.h) and the
// jittered eager runs a group's baseline makes.
typedef struct combo_phases {
    double setup, measured, timed, jitter;
} combo_phases;

// Runs one combo (plan->status PASS) and fills its record (when `record` is not NULL) and `phases`.
static parity_error *run_combo(const parity_suite *suite, const parity_combo_plan *plan, const parity_exec *exec,
                               const parity_case *c, const parity_golden *golden, parity_run_group *group,
                               parity_combo_result *record, combo_phases *phases) {
    parity_op_names names; // the plan's choices, checked when it was planned
    parity_combo_op_names(plan, &names);
    parity_timer timer;
    parity_error *error = parity_timer_create(exec, &timer);
    if (error) return error;
    parity_evaluation evaluation;
    const int warmup = parity_suite_model_warmup(suite, plan->model), repeats = parity_suite_model_repeats(suite, plan->model);
    parity_error *run_error =
        parity_case_evaluate(c, plan->dtype, plan->device, exec, &names, false, &timer, warmup, repeats, &suite->adaptive, 0,
                             &evaluation);
    parity_timer_release(&timer);
    *phases = (combo_phases){evaluation.setup_seconds, evaluation.measured_seconds, evaluation.timed_seconds, 0};

    const parity_step_result *value = &evaluation.step; // read only when the run succeeded
    if (plan->is_baseline) {
        group->baseline_ran = true;
        group->baseline_ok = !run_error && !value->first_non_finite[0];
        parity_text_format(group->baseline_id, sizeof group->baseline_id, "%s", plan->id);
        if (run_error) {
            parity_error_format(run_error, group->baseline_problem, sizeof group->baseline_problem);
            // under a layout a case may not allow (data parallel over a single packed row, an aux loss),
            // the baseline's refusal is the group's; on one rank a baseline that cannot run stays an error
            parity_error_kind kind = parity_error_kind_of(run_error);
            group->baseline_unsupported = parity_layout_is_parallel(&c->layout) && (kind == PARITY_ERROR_UNSUPPORTED || kind == PARITY_ERROR_UNAVAILABLE);
        }
        else if (value->first_non_finite[0])
            parity_text_format(group->baseline_problem, sizeof group->baseline_problem, "NaN/Inf first appeared in %s",
                               value->first_non_finite);
        if (group->baseline_ok) error = parity_step_result_copy(value, &group->eager);
        if (group->baseline_ok && !error && suite->tolerance == PARITY_RULE_PARITY && plan->dtype != PARITY_F64) {
            double jitter_started = parity_monotonic_seconds();
            error = parity_run_jitter_spread(plan, exec, c, &golden->expected, suite->jitter_runs, group);
            phases->jitter = parity_monotonic_seconds() - jitter_started;
        }
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
            record->warmup_count = (size_t)warmup;
            error = parity_combo_set_samples(record, evaluation.step_ms, evaluation.step_ms_count);
            parity_timing_summary(evaluation.step_ms, evaluation.step_ms_count, &record->median_ms, &record->noise);
            // The baseline is checked against the golden's own eager error when the golden was made
            // on this kind of device (a changed eager kernel or a stale golden shows); otherwise it is
            // the reference by definition.
            const parity_step_result *reference = &group->eager;
            const parity_step_result *stored = plan->dtype == PARITY_F64 ? &golden->expected
                                                                          : parity_golden_eager(golden, parity_dtype_name(plan->dtype));
            // Under a parallel layout every combo takes the golden's single-device eager as its reference: the
            // layout's own baseline shares any error of the layout (a wrong reduction group) and would widen
            // the tolerance by exactly that error.
            if ((plan->is_baseline || parity_layout_is_parallel(&c->layout)) && stored && golden_on_device_type(golden, plan->device))
                reference = stored;
            // VeOmni's parallel check: every combo of a layout against the single-device run of its dtype, at 0.1
            parity_tolerance_rule rule = suite->tolerance;
            if (rule == PARITY_RULE_VEOMNI && parity_layout_is_parallel(&c->layout)) {
                rule = PARITY_RULE_VEOMNI_PARALLEL;
                if (stored) reference = stored;
            }
            if (!error)
                error = parity_run_compare(rule, plan->dtype, &golden->expected, value, reference,
                                           group->has_spread ? &group->spread : NULL, record);
            if (!error) parity_run_judge(record, value);
        }
    }
    parity_error_free(run_error);
    parity_evaluation_release(&evaluation);
    return error;
}

static void fill_context(const parity_suite *suite, const parity_run_plan *plan, const parity_exec *exec,
                         const parity_run_options *options,
                         parity_results *results) {
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
    parity_text_format(context->plugins, sizeof context->plugins, "%s", provenance.plugins);
    parity_text_format(context->started, sizeof context->started, "%s", provenance.created);
    if (suite->tolerance == PARITY_RULE_PARITY)
        parity_text_format(context->tolerance_rule, sizeof context->tolerance_rule, "%s (jitter_runs %d: over %d run%s)",
                           parity_tolerance_rule_description(suite->tolerance), suite->jitter_runs, suite->jitter_runs,
                           suite->jitter_runs == 1 ? "" : "s");
    else
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
                       "%s; %d warm-up, median of %d; noise = median absolute deviation / median; a timed step "
                       "is the forward + backward (gradient norms and sketches are taken on the measured step only)",
                       timer.method,
                       suite->warmup, suite->repeats);
    if (suite->adaptive.noise_target > 0) {
        size_t used = strlen(context->timing_method);
        parity_text_format(context->timing_method + used, sizeof context->timing_method - used,
                           "; adaptive: more timed steps while noise > %g%%, up to %d samples or %g s a combo",
                           suite->adaptive.noise_target * 100, suite->adaptive.max_steps, suite->adaptive.time_cap_ms / 1e3);
    }
    for (size_t m = 0; m < suite->model_count; m++) { // the models with their own steps
        const parity_suite_model *model = &suite->models[m];
        if (model->warmup < 0 && model->repeats < 1) continue;
        size_t used = strlen(context->timing_method);
        parity_text_format(context->timing_method + used, sizeof context->timing_method - used, "; %s: %d warm-up, median of %d",
                           model->name, parity_suite_model_warmup(suite, model), parity_suite_model_repeats(suite, model));
    }
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

    parity_run_group group;
    memset(&group, 0, sizeof group);
    int stopped_by = 0;
    parity_comm *ranks = NULL; // several ranks: they agree before each combo whether to stop
    int my_rank = 0;
    if (!error && parity_comm_launched_size() > 1) error = parity_comm_world(&ranks);
    if (!error && ranks) my_rank = parity_comm_rank(ranks);
    // every layout's group of ranks, made up front by every rank in the same order (a rank outside a
    // layout's group then skips its combos without the others waiting for it)
    for (size_t k = 0; !error && ranks && k < plan->case_count; k++) {
        const int needed = parity_layout_ranks(&plan->cases[k].layout);
        parity_comm *prefix;
        if (needed > parity_comm_size(ranks))
            error = PARITY_ERROR(PARITY_ERROR_USAGE, "layout of %d ranks in a run of %d (launch it with mpirun -np %d)",
                                 needed, parity_comm_size(ranks), needed);
        else
            error = parity_comm_world_prefix(needed, &prefix);
    }
    for (size_t i = 0; i < plan->combos.count && !error; i++) {
        if (ranks) {
            int64_t asked = options->stop ? *options->stop : 0, any = 0;
            error = parity_comm_all_reduce(ranks, &asked, &any, 1, PARITY_I64); // a sum of signal numbers: > 0 stops
            if (error && parity_comm_failure()) { // a rank died or hangs: the run ends here, its reports kept
                parity_error_free(error);
                error = NULL;
                parity_text_format(results->context.stopped, sizeof results->context.stopped, "%s", parity_comm_failure());
                break;
            }
            if (error) break;
            if (any) {
                stopped_by = asked ? (int)asked : SIGTERM;
                break;
            }
        } else if (options->stop && (stopped_by = *options->stop) != 0) {
            break;
        }
        const parity_combo_plan *combo = &plan->combos.items[i];
        if (combo->is_baseline) {
            parity_step_result_release(&group.eager);
            parity_run_spread_release(&group.spread);
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
        if (my_rank >= parity_layout_ranks(&c->layout)) { // outside this layout's ranks: rank 0 reports it
            if (record) {
                record->status = PARITY_COMBO_NOT_SUPPORTED;
                parity_text_format(record->reason, sizeof record->reason, "rank %d is outside the layout's ranks", my_rank);
            }
            continue;
        }
        if (!combo->is_baseline && !group.baseline_ok) {
            parity_progress_begin(&progress, combo->model->name, combo->id);
            // a baseline that cannot run here (a layout the case does not allow) takes its group along as
            // "not supported" with the same reason; one that failed leaves the group without a tolerance
            record->status = group.baseline_unsupported ? PARITY_COMBO_NOT_SUPPORTED : PARITY_COMBO_ERROR;
            if (group.baseline_unsupported)
                parity_text_format(record->reason, sizeof record->reason, "the eager baseline %s is not supported: %s",
                                   group.baseline_id, group.baseline_problem);
            else
                parity_text_format(record->reason, sizeof record->reason, "no tolerance: the eager baseline %s %s: %s",
                                   group.baseline_id[0] ? group.baseline_id : "(none)",
                                   group.baseline_ran ? "failed" : "did not run", group.baseline_problem);
            parity_progress_end(&progress, combo->id, parity_combo_status_name(record->status), record->reason);
            continue;
        }
        parity_progress_begin(&progress, combo->model->name, combo->id);
        double combo_started = parity_monotonic_seconds();
        combo_phases phases = {0};
        error = run_combo(suite, combo, exec_of(plan, execs, combo->device), c, &goldens[plan->case_index[i]], &group,
                          record, &phases);
        if (error) break;
        if (ranks && parity_comm_failure()) { // the combo is an error naming the collective; no collective follows
            parity_text_format(results->context.stopped, sizeof results->context.stopped, "%s", parity_comm_failure());
            if (record) parity_progress_end(&progress, combo->id, parity_combo_status_name(record->status), record->reason);
            break;
        }
        // The combo's wall time beside its step's, and where it went: weights and model build, the
        // measured step with its gradient norms and sketches, warm-up and timed steps, and on a
        // group's baseline its jittered eager runs.
        double combo_seconds = parity_monotonic_seconds() - combo_started;
        char where[160];
        parity_text_format(where, sizeof where, "setup %.2g, measured %.2g, timed %.2g", phases.setup, phases.measured,
                           phases.timed);
        if (phases.jitter > 0) parity_text_extend(where, sizeof where, ", jitter runs %.2g", phases.jitter);
        char note[1100] = "";
        const char *status = record ? parity_combo_status_name(record->status) : "baseline";
        if (record && record->status == PARITY_COMBO_PASS) {
            double worst = 0;
            for (size_t m = 0; m < record->metric_count; m++)
                if (record->metrics[m].ratio > worst) worst = record->metrics[m].ratio;
            parity_text_format(note, sizeof note, "worst ratio %.3g, %.3g ms (combo %.3g s: %s)", worst,
                               record->median_ms, combo_seconds, where);
        } else if (record) {
            parity_text_format(note, sizeof note, "%s", record->reason);
        } else {
            parity_text_format(note, sizeof note, "(eager reference for the tolerances, not selected)");
        }
        parity_progress_end(&progress, combo->id, status, note);
    }
    parity_progress_finish(&progress);
    parity_step_result_release(&group.eager);
    parity_run_spread_release(&group.spread);
    char finished[32];
    parity_text_format(results->context.finished, sizeof results->context.finished, "%s",
                       parity_utc_timestamp(finished, sizeof finished, 0));
    results->context.combos_selected = plan->selected_count;
    if (stopped_by) {
        const char *name = sigabbrev_np(stopped_by);
        if (name) parity_text_format(results->context.interrupted, sizeof results->context.interrupted, "SIG%s", name);
        else parity_text_format(results->context.interrupted, sizeof results->context.interrupted, "signal %d", stopped_by);
    }
    for (size_t k = 0; k < plan->case_count; k++)
        if (loaded[k]) parity_golden_release(&goldens[k]);
    free(goldens);
    free(loaded);
    free(runs);
    destroy_execs(plan, execs);
    return error;
}
