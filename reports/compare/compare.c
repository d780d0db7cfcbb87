// compare.c: matching two runs' combos by id and the per-combo verdicts of compare.h (the time
// rule itself is compare_time.c).
#include "reports/compare/compare.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reports/report_analysis.h"

parity_compare_options parity_compare_default_options(void) {
    return (parity_compare_options){PARITY_COMPARE_DEFAULT_THRESHOLD, PARITY_COMPARE_DEFAULT_NOISE_FACTOR,
                                    PARITY_COMPARE_DEFAULT_RATIO_DRIFT};
}

const char *parity_status_change_name(parity_status_change change) {
    switch (change) {
    case PARITY_STATUS_NEW_FAILURE: return "new_failure";
    case PARITY_STATUS_FIXED: return "fixed";
    case PARITY_STATUS_SUPPORT_CHANGED: return "support_changed";
    case PARITY_STATUS_FAILURE_CHANGED: return "failure_changed";
    case PARITY_STATUS_ONLY_BASE: return "only_base";
    case PARITY_STATUS_ONLY_NEW: return "only_new";
    case PARITY_STATUS_SAME: break;
    }
    return "same";
}

// ---- matching by id ----

typedef struct id_index {
    const parity_results *results;
    size_t *order; // combo indices sorted by id
} id_index;

static const parity_results *sorting_results; // qsort has no context argument; single-threaded use only

static int compare_by_id(const void *a, const void *b) {
    return strcmp(sorting_results->combos[*(const size_t *)a].id, sorting_results->combos[*(const size_t *)b].id);
}

static parity_error *index_build(const parity_results *results, const char *which, id_index *index) {
    index->results = results;
    index->order = malloc((results->combo_count ? results->combo_count : 1) * sizeof *index->order);
    if (!index->order) return PARITY_ERROR(PARITY_ERROR_MEMORY, "comparing runs: out of memory indexing %s", which);
    for (size_t i = 0; i < results->combo_count; i++) index->order[i] = i;
    sorting_results = results;
    qsort(index->order, results->combo_count, sizeof *index->order, compare_by_id);
    sorting_results = NULL;
    for (size_t i = 1; i < results->combo_count; i++)
        if (strcmp(results->combos[index->order[i - 1]].id, results->combos[index->order[i]].id) == 0) {
            parity_error *error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: combo id '%s' appears twice", which,
                                               results->combos[index->order[i]].id);
            free(index->order);
            index->order = NULL;
            return error;
        }
    return NULL;
}

static const parity_combo_result *index_find(const id_index *index, const char *id) {
    size_t low = 0, high = index->results->combo_count;
    while (low < high) {
        size_t middle = low + (high - low) / 2;
        const parity_combo_result *combo = &index->results->combos[index->order[middle]];
        int order = strcmp(combo->id, id);
        if (order == 0) return combo;
        if (order < 0) low = middle + 1;
        else high = middle;
    }
    return NULL;
}

// ---- per combo ----

static bool is_failing(parity_combo_status status) { return status == PARITY_COMBO_FAIL || status == PARITY_COMBO_ERROR; }
static bool is_unsupported(parity_combo_status status) {
    return status == PARITY_COMBO_NOT_SUPPORTED || status == PARITY_COMBO_EXCLUDED;
}

static parity_status_change status_change(const parity_combo_result *base, const parity_combo_result *new_combo) {
    if (!base) return is_failing(new_combo->status) ? PARITY_STATUS_NEW_FAILURE : PARITY_STATUS_ONLY_NEW;
    if (!new_combo) return PARITY_STATUS_ONLY_BASE;
    if (base->status == new_combo->status) return PARITY_STATUS_SAME;
    if (is_failing(new_combo->status))
        return is_failing(base->status) ? PARITY_STATUS_FAILURE_CHANGED : PARITY_STATUS_NEW_FAILURE;
    if (is_failing(base->status) && new_combo->status == PARITY_COMBO_PASS) return PARITY_STATUS_FIXED;
    if (is_unsupported(base->status) || is_unsupported(new_combo->status)) return PARITY_STATUS_SUPPORT_CHANGED;
    return PARITY_STATUS_SAME; // not reached: every other pair involves a failing or unsupported side
}

static void worst_ratio(const parity_combo_result *combo, double *ratio, bool *has_metrics, const char **metric) {
    const parity_metric *worst = combo ? parity_report_worst_metric(combo, NULL) : NULL;
    *ratio = worst ? worst->ratio : NAN;
    *has_metrics = worst != NULL;
    if (worst && !*metric) *metric = worst->name;
}

static void compare_combo(const parity_combo_result *base, const parity_combo_result *new_combo,
                          const parity_compare_options *options, double run_shift, double run_spread,
                          parity_combo_comparison *out) {
    memset(out, 0, sizeof *out);
    const parity_combo_result *either = new_combo ? new_combo : base;
    snprintf(out->id, sizeof out->id, "%s", either->id);
    snprintf(out->reason, sizeof out->reason, "%s", either->reason);
    out->in_base = base != NULL;
    out->in_new = new_combo != NULL;
    if (base) out->base_status = base->status;
    if (new_combo) out->new_status = new_combo->status;
    out->status_change = status_change(base, new_combo);
    const char *metric = NULL;
    worst_ratio(new_combo, &out->new_ratio, &out->new_has_metrics, &metric);
    worst_ratio(base, &out->base_ratio, &out->base_has_metrics, &metric);
    if (metric) snprintf(out->metric, sizeof out->metric, "%s", metric);
    if (out->base_has_metrics && out->new_has_metrics) {
        double before = parity_report_ratio_rank(out->base_ratio), after = parity_report_ratio_rank(out->new_ratio);
        out->ratio_drift = after - before > options->ratio_drift || (before <= 1 && after > 1);
    }
    parity_compare_time(base, new_combo, options->threshold, options->noise_factor, run_shift, run_spread, &out->time);
}

static void count(parity_comparison *comparison, const parity_combo_comparison *combo) {
    parity_comparison_counts *counts = &comparison->counts;
    counts->combos++;
    switch (combo->status_change) {
    case PARITY_STATUS_NEW_FAILURE: counts->new_failures++; break;
    case PARITY_STATUS_FIXED: counts->fixed++; break;
    case PARITY_STATUS_SUPPORT_CHANGED: counts->support_changed++; break;
    case PARITY_STATUS_FAILURE_CHANGED: counts->failure_changed++; break;
    case PARITY_STATUS_ONLY_BASE: counts->only_base++; break;
    case PARITY_STATUS_ONLY_NEW: counts->only_new++; break;
    case PARITY_STATUS_SAME: break;
    }
    if (combo->time.verdict != PARITY_TIME_UNTIMED) counts->timed++;
    if (combo->time.verdict == PARITY_TIME_REGRESSION) counts->regressions++;
    if (combo->time.verdict == PARITY_TIME_SPEEDUP) counts->speedups++;
    if (combo->ratio_drift) counts->ratio_drifts++;
    if (!parity_combo_comparison_notable(combo)) counts->unchanged++;
}

static bool valid_option(double value) { return isfinite(value) && value >= 0; }

parity_error *parity_compare_results(const parity_results *base, const parity_results *new_results,
                                     const parity_compare_options *options, parity_comparison *out) {
    memset(out, 0, sizeof *out);
    if (!valid_option(options->threshold) || !valid_option(options->noise_factor) || !valid_option(options->ratio_drift))
        return PARITY_ERROR(PARITY_ERROR_USAGE, "comparing runs: threshold %g, noise factor %g and ratio drift %g must be finite and >= 0",
                            options->threshold, options->noise_factor, options->ratio_drift);
    id_index base_index = {0}, new_index = {0};
    PARITY_TRY(index_build(base, "BASE", &base_index));
    parity_error *error = index_build(new_results, "NEW", &new_index);
    size_t capacity = base->combo_count + new_results->combo_count;
    parity_combo_comparison *combos = error ? NULL : calloc(capacity ? capacity : 1, sizeof *combos);
    if (!error && !combos) error = PARITY_ERROR(PARITY_ERROR_MEMORY, "comparing runs: out of memory for %zu combos", capacity);
    if (error) {
        free(base_index.order);
        free(new_index.order);
        return error;
    }
    out->options = *options;
    out->base_context = base->context;
    out->new_context = new_results->context;
    out->combos = combos;
    // The run's movement first (compare_time.h): the log ratios of the combos timed in both runs.
    double *logs = malloc((base->combo_count ? base->combo_count : 1) * sizeof *logs);
    if (!logs) {
        free(base_index.order);
        free(new_index.order);
        parity_comparison_release(out);
        return PARITY_ERROR(PARITY_ERROR_MEMORY, "comparing runs: out of memory for %zu combos", base->combo_count);
    }
    size_t timed = 0;
    for (size_t i = 0; i < base->combo_count; i++) {
        const parity_combo_result *combo = &base->combos[i], *other = index_find(&new_index, combo->id);
        if (other && parity_report_is_timed(combo) && parity_report_is_timed(other))
            logs[timed++] = log(other->median_ms / combo->median_ms);
    }
    double shift, spread;
    parity_compare_run_movement(logs, timed, &shift, &spread);
    free(logs);
    out->run.timed = timed;
    out->run.shift = shift;
    out->run.spread = spread;
    out->run.change = exp(shift) - 1;
    out->run.verdict = PARITY_TIME_UNTIMED;
    if (timed >= PARITY_COMPARE_MIN_RUN_COMBOS) {
        double change = exp(shift);
        out->run.verdict = change - 1 > options->threshold   ? PARITY_TIME_REGRESSION
                           : 1 / change - 1 > options->threshold ? PARITY_TIME_SPEEDUP
                                                                 : PARITY_TIME_SAME;
    }
    for (size_t i = 0; i < base->combo_count; i++) {
        const parity_combo_result *combo = &base->combos[i];
        compare_combo(combo, index_find(&new_index, combo->id), options, shift, spread, &combos[out->combo_count]);
        count(out, &combos[out->combo_count++]);
    }
    for (size_t i = 0; i < new_results->combo_count; i++) {
        const parity_combo_result *combo = &new_results->combos[i];
        if (index_find(&base_index, combo->id)) continue;
        compare_combo(NULL, combo, options, shift, spread, &combos[out->combo_count]);
        count(out, &combos[out->combo_count++]);
    }
    free(base_index.order);
    free(new_index.order);
    return NULL;
}

void parity_comparison_release(parity_comparison *comparison) {
    free(comparison->combos);
    memset(comparison, 0, sizeof *comparison);
}

bool parity_combo_comparison_notable(const parity_combo_comparison *combo) {
    return combo->status_change != PARITY_STATUS_SAME || combo->ratio_drift || combo->time.verdict == PARITY_TIME_REGRESSION ||
           combo->time.verdict == PARITY_TIME_SPEEDUP;
}

int parity_combo_comparison_rank(const parity_combo_comparison *combo) {
    if (combo->status_change == PARITY_STATUS_NEW_FAILURE) return 0;
    if (combo->time.verdict == PARITY_TIME_REGRESSION) return 1;
    switch (combo->status_change) {
    case PARITY_STATUS_FIXED: return 2;
    case PARITY_STATUS_SUPPORT_CHANGED: return 3;
    case PARITY_STATUS_FAILURE_CHANGED: return 4;
    case PARITY_STATUS_ONLY_BASE: return 5;
    case PARITY_STATUS_ONLY_NEW: return 6;
    default: break;
    }
    if (combo->time.verdict == PARITY_TIME_SPEEDUP) return 7;
    if (combo->ratio_drift) return 8;
    return 9;
}

bool parity_comparison_failed(const parity_comparison *comparison) {
    return comparison->counts.new_failures > 0 || comparison->counts.regressions > 0 ||
           comparison->run.verdict == PARITY_TIME_REGRESSION;
}

static void append_count(char *buffer, size_t size, size_t *used, size_t value, const char *singular, const char *plural) {
    if (!value || *used >= size) return;
    int written = snprintf(buffer + *used, size - *used, "%s%zu %s", *used && buffer[*used - 1] != ' ' ? ", " : "", value,
                           value == 1 ? singular : plural);
    if (written > 0) *used += (size_t)written;
    if (*used > size) *used = size;
}

const char *parity_comparison_verdict(const parity_comparison *comparison, char *buffer, size_t size) {
    const parity_comparison_counts *c = &comparison->counts;
    if (size == 0) return buffer;
    buffer[0] = '\0';
    bool run_moved = comparison->run.verdict == PARITY_TIME_REGRESSION || comparison->run.verdict == PARITY_TIME_SPEEDUP;
    if (c->unchanged == c->combos && !run_moved) {
        snprintf(buffer, size, "no change (%zu combo%s)", c->combos, c->combos == 1 ? "" : "s");
        return buffer;
    }
    int written = snprintf(buffer, size, "%s: ", parity_comparison_failed(comparison) ? "REGRESSION" : "OK");
    size_t used = written > 0 ? (size_t)written : 0;
    if (used > size) used = size;
    if (run_moved && used < size) {
        written = snprintf(buffer + used, size - used, "the whole run %.1f%% %s (median of %zu combos)",
                           100 * fabs(comparison->run.change), comparison->run.change > 0 ? "slower" : "faster",
                           comparison->run.timed);
        if (written > 0) used += (size_t)written;
        if (used > size) used = size;
    }
    append_count(buffer, size, &used, c->new_failures, "new failure", "new failures");
    append_count(buffer, size, &used, c->regressions, "slower", "slower");
    append_count(buffer, size, &used, c->fixed, "fixed", "fixed");
    append_count(buffer, size, &used, c->speedups, "faster", "faster");
    append_count(buffer, size, &used, c->support_changed, "support change", "support changes");
    append_count(buffer, size, &used, c->failure_changed, "failure change", "failure changes");
    append_count(buffer, size, &used, c->only_base, "missing from NEW", "missing from NEW");
    append_count(buffer, size, &used, c->only_new, "only in NEW", "only in NEW");
    append_count(buffer, size, &used, c->ratio_drifts, "tolerance ratio drift", "tolerance ratio drifts");
    if (used < size) snprintf(buffer + used, size - used, " (of %zu combos)", c->combos);
    return buffer;
}
