// upstream_compare.c: the shared comparison helpers of upstream_compare.h.
#include "upstream_compare.h"

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "golden/upstream_reference.h"
#include "harness/tolerance.h"

double upstream_relative(double value, double reference) { return fabs(value - reference) / fmax(fabs(reference), 1e-300); }

double upstream_relative_l2(const parity_tensor *value, const parity_tensor *reference) {
    if (value->numel != reference->numel) return INFINITY;
    double difference = 0, norm = 0;
    for (int64_t i = 0; i < value->numel; i++) {
        double a = parity_tensor_get(value, i), b = parity_tensor_get(reference, i);
        difference += (a - b) * (a - b);
        norm += b * b;
    }
    return norm > 0 ? sqrt(difference / norm) : sqrt(difference);
}

bool upstream_take_worst(double *worst, double error) {
    if (isnan(*worst) || !(isnan(error) || error > *worst)) return false;
    *worst = error;
    return true;
}

void upstream_expect_float64_file(const char *label, const parity_safetensors_file *file) {
    for (size_t i = 0; i < file->entry_count; i++)
        cr_expect_eq(file->entries[i].dtype, PARITY_F64, "%s: %s: '%s' is stored as %s, not F64", label, file->path,
                     file->entries[i].name, parity_dtype_name(file->entries[i].dtype));
}

const char *upstream_error_text(parity_error *error) {
    static char buffer[4096];
    parity_error_format(error, buffer, sizeof buffer);
    parity_error_free(error);
    return buffer;
}

static int compare_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

char **upstream_case_names(size_t *count) {
    DIR *directory = opendir(UPSTREAM);
    cr_assert_not_null(directory, "cannot open %s", UPSTREAM);
    char **names = NULL;
    size_t size = 0;
    for (struct dirent *entry; (entry = readdir(directory));) {
        char path[512];
        struct stat status;
        snprintf(path, sizeof path, UPSTREAM "/%s", entry->d_name);
        if (entry->d_name[0] == '.' || stat(path, &status) != 0 || !S_ISDIR(status.st_mode)) continue;
        names = realloc(names, (size + 1) * sizeof *names);
        cr_assert_not_null(names);
        names[size] = strdup(entry->d_name);
        cr_assert_not_null(names[size++]);
    }
    closedir(directory);
    cr_assert_gt(size, 0, "%s has no case directory", UPSTREAM);
    qsort(names, size, sizeof *names, compare_names);
    *count = size;
    return names;
}

void upstream_case_names_free(char **names, size_t count) {
    for (size_t i = 0; i < count; i++) free(names[i]);
    free(names);
}

bool upstream_case_has(const char *name, const char *file) {
    char path[512];
    struct stat status;
    snprintf(path, sizeof path, UPSTREAM "/%s/%s", name, file);
    return stat(path, &status) == 0 && S_ISREG(status.st_mode);
}

void upstream_expect_table_covers(const char *const *table, size_t rows, bool (*mine)(const char *case_name),
                                  const char *what) {
    size_t count;
    char **names = upstream_case_names(&count);
    size_t found = 0;
    for (size_t i = 0; i < count; i++) {
        if (!mine(names[i])) continue;
        found++;
        bool listed = false;
        for (size_t r = 0; r < rows; r++) listed = listed || strcmp(table[r], names[i]) == 0;
        cr_expect(listed, "%s/%s has no test row (its files make it one of the %s cases)", UPSTREAM, names[i], what);
    }
    for (size_t r = 0; r < rows; r++) {
        bool shipped = false;
        for (size_t i = 0; i < count; i++) shipped = shipped || (strcmp(table[r], names[i]) == 0 && mine(names[i]));
        cr_expect(shipped, "test row %s: %s/%s is not among the %s case directories", table[r], UPSTREAM, table[r], what);
    }
    cr_log_info("%zu %s cases in %s (of %zu), %zu test rows", found, what, UPSTREAM, count, rows);
    upstream_case_names_free(names, count);
}

static void expect_metric(const char *label, const char *name, parity_metric_kind kind, parity_dtype dtype, double value,
                            double transformers, double truth, double *worst, char *worst_name, size_t worst_size) {
    parity_metric metric;
    parity_tolerance_check(name, kind, dtype, value, truth, transformers, 0.0, &metric);
    double ratio = isnan(value) ? NAN : metric.ratio; // ratio_of maps a NaN error to inf; keep it NaN here
    cr_expect(metric.pass, "%s: %s %.10g vs transformers' %.10g, fp64 %.10g: error %.2e > %.2e (%s)", label, name, value,
              transformers, truth, metric.error, metric.tolerance, metric.basis);
    if (upstream_take_worst(worst, ratio)) snprintf(worst_name, worst_size, "%s (%s)", name, metric.basis);
}

double upstream_expect_within_transformers_error(const char *label, const char *directory, const char *tag,
                                                 parity_dtype dtype, const parity_step_result *step,
                                                 const parity_step_result *truth) {
    parity_step_result transformers;
    parity_error *error = parity_upstream_run_read(directory, tag, &transformers);
    cr_assert_null(error, "%s: %s", label, error ? upstream_error_text(error) : "");
    double worst = 0;
    char worst_name[224] = "";
    expect_metric(label, "loss", PARITY_METRIC_LOSS_LIKE, dtype, step->loss, transformers.loss, truth->loss, &worst,
                  worst_name, sizeof worst_name);
    cr_expect_eq(transformers.has_aux_loss, truth->has_aux_loss, "%s: %s and fp64 disagree on the aux loss", label, tag);
    if (truth->has_aux_loss)
        expect_metric(label, "aux_loss", PARITY_METRIC_LOSS_LIKE, dtype, step->aux_loss, transformers.aux_loss,
                      truth->aux_loss, &worst, worst_name, sizeof worst_name);
    expect_metric(label, "grad_norm", PARITY_METRIC_GRADIENT, dtype, step->grad_norm, transformers.grad_norm,
                  truth->grad_norm, &worst, worst_name, sizeof worst_name);
    cr_expect_eq(step->parameter_count, transformers.parameter_count, "%s: %zu parameters with gradients, %s has %zu", label,
                 step->parameter_count, tag, transformers.parameter_count);
    for (size_t i = 0; i < step->parameter_count; i++) {
        const char *parameter = step->parameter_names[i];
        double theirs = parity_step_result_norm(&transformers, parameter, i), exact = parity_step_result_norm(truth, parameter, i);
        cr_assert(!isnan(theirs) && !isnan(exact), "%s: %s or fp64 has no '%s'", label, tag, parameter);
        char name[224];
        snprintf(name, sizeof name, "grad_norm:%s", parameter);
        expect_metric(label, name, PARITY_METRIC_GRADIENT, dtype, step->parameter_grad_norms[i], theirs, exact, &worst,
                      worst_name, sizeof worst_name);
    }
    cr_log_info("%-52s vs transformers %s: worst ratio %.2f (%s)", label, tag, worst, worst_name);
    parity_step_result_release(&transformers);
    return worst;
}

static void load_logits(const char *label, const char *directory, const char *file_name, parity_tensor *out) {
    char path[320];
    snprintf(path, sizeof path, "%s/%s", directory, file_name);
    parity_safetensors_file file;
    parity_error *error = parity_safetensors_open(path, &file);
    cr_assert_null(error, "%s: %s", label, error ? upstream_error_text(error) : "");
    error = parity_safetensors_load(&file, "logits", PARITY_F64, out);
    parity_safetensors_close(&file);
    cr_assert_null(error, "%s: %s", label, error ? upstream_error_text(error) : "");
}

void upstream_expect_bf16_logits_follow_transformers(const char *label, const char *directory, const parity_tensor *logits) {
    parity_tensor theirs, truth;
    load_logits(label, directory, "logits_bf16.safetensors", &theirs);
    load_logits(label, directory, "logits.safetensors", &truth);
    cr_assert(logits->numel == theirs.numel && theirs.numel == truth.numel && theirs.numel > 0, "%s: %lld logits, %lld in %s",
              label, (long long)logits->numel, (long long)theirs.numel, directory);
    int64_t same = 0;
    double distance = 0, their_error = 0;
    for (int64_t i = 0; i < theirs.numel; i++) {
        double value = parity_tensor_get(logits, i), reference = parity_tensor_get(&theirs, i), exact = parity_tensor_get(&truth, i);
        same += value == reference;
        distance += (value - reference) * (value - reference);
        their_error += (reference - exact) * (reference - exact);
    }
    double fraction = (double)same / (double)theirs.numel;
    cr_log_info("%-52s bf16 logits: %.1f%% identical to transformers', distance %.2f x transformers' own error", label,
                100 * fraction, sqrt(distance / their_error));
    cr_expect(fraction >= UPSTREAM_BF16_SAME_LOGITS,
              "%s: only %.1f%% of the bf16 logits are transformers' bf16 logits (>= %.0f%% expected: a rounding point "
              "differs from transformers' bf16 recipe)",
              label, 100 * fraction, 100 * UPSTREAM_BF16_SAME_LOGITS);
    parity_tensor_release(&theirs);
    parity_tensor_release(&truth);
}
