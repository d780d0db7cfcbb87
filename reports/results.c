// results.c: building and releasing the results records of results.h (combos, metrics, timing
// samples), status names, and counts by status. The JSON form is in results_json.c.
#include "reports/results.h"

#include <stdlib.h>
#include <string.h>

static const char *const status_names[PARITY_COMBO_STATUS_COUNT] = {"pass", "fail", "not_supported", "error", "excluded"};

const char *parity_combo_status_name(parity_combo_status status) {
    if ((int)status < 0 || (int)status >= PARITY_COMBO_STATUS_COUNT) return "unknown";
    return status_names[status];
}

bool parity_combo_status_parse(const char *name, parity_combo_status *out) {
    for (int i = 0; i < PARITY_COMBO_STATUS_COUNT; i++) {
        if (strcmp(name, status_names[i]) == 0) {
            *out = (parity_combo_status)i;
            return true;
        }
    }
    return false;
}

parity_combo_result *parity_results_add_combo(parity_results *results) {
    if (results->combo_count == results->combo_capacity) {
        size_t capacity = results->combo_capacity ? 2 * results->combo_capacity : 16;
        parity_combo_result *combos = realloc(results->combos, capacity * sizeof *combos);
        if (!combos) return NULL;
        results->combos = combos;
        results->combo_capacity = capacity;
    }
    parity_combo_result *combo = &results->combos[results->combo_count++];
    memset(combo, 0, sizeof *combo);
    return combo;
}

parity_error *parity_metric_add(parity_combo_result *combo, const parity_metric *metric) {
    if (combo->metric_count >= combo->metric_capacity) {
        size_t capacity = combo->metric_count < 4 ? 8 : 2 * combo->metric_count;
        parity_metric *metrics = realloc(combo->metrics, capacity * sizeof *metrics);
        if (!metrics) return PARITY_ERROR(PARITY_ERROR_MEMORY, "%s: out of memory adding metric '%s'", combo->id, metric->name);
        combo->metrics = metrics;
        combo->metric_capacity = capacity;
    }
    combo->metrics[combo->metric_count++] = *metric;
    return NULL;
}

parity_error *parity_combo_set_samples(parity_combo_result *combo, const double *samples_ms, size_t count) {
    double *copy = NULL;
    if (count > 0) {
        copy = malloc(count * sizeof *copy);
        if (!copy) return PARITY_ERROR(PARITY_ERROR_MEMORY, "%s: out of memory storing %zu timing samples", combo->id, count);
        memcpy(copy, samples_ms, count * sizeof *copy);
    }
    free(combo->samples_ms);
    combo->samples_ms = copy;
    combo->sample_count = count;
    return NULL;
}

void parity_results_release(parity_results *results) {
    for (size_t i = 0; i < results->combo_count; i++) {
        free(results->combos[i].metrics);
        free(results->combos[i].samples_ms);
    }
    free(results->combos);
    memset(results, 0, sizeof *results);
}

void parity_results_counts(const parity_results *results, size_t counts[PARITY_COMBO_STATUS_COUNT]) {
    for (int i = 0; i < PARITY_COMBO_STATUS_COUNT; i++) counts[i] = 0;
    for (size_t i = 0; i < results->combo_count; i++) {
        parity_combo_status status = results->combos[i].status;
        if ((int)status >= 0 && (int)status < PARITY_COMBO_STATUS_COUNT) counts[status]++;
    }
}
