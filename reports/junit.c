// junit.c: the JUnit XML writer. Layout (what Jenkins, GitLab and GitHub test reporters read):
//   <testsuites name tests failures errors skipped time>
//     <testsuite name="suite.model" ... hostname timestamp> <properties/>
//       <testcase classname="suite.model" name="<combo id>" time="<median s>">
//         <failure message="metric: error E > tolerance T (ratio R)" type="tolerance">every metric</failure>
//         | <error message="reason" type="error">reason</error>
//         | <skipped message="not supported: reason"/>   (not_supported and excluded)
// A fail combo without a failing metric (NaN/Inf in a tensor) carries its reason as the message.
#include "reports/junit.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ops/core/file.h"
#include "reports/report_analysis.h"
#include "reports/text_buffer.h"

typedef struct junit_counts {
    size_t tests, failures, errors, skipped;
    double seconds;
} junit_counts;

static double combo_seconds(const parity_combo_result *combo) {
    return parity_report_is_timed(combo) ? combo->median_ms / 1000.0 : 0.0;
}

static void count_combo(junit_counts *counts, const parity_combo_result *combo) {
    counts->tests++;
    counts->failures += combo->status == PARITY_COMBO_FAIL;
    counts->errors += combo->status == PARITY_COMBO_ERROR;
    counts->skipped += combo->status == PARITY_COMBO_NOT_SUPPORTED || combo->status == PARITY_COMBO_EXCLUDED;
    counts->seconds += combo_seconds(combo);
}

static void append_counts(parity_text *xml, const junit_counts *counts) {
    parity_text_appendf(xml, " tests=\"%zu\" failures=\"%zu\" errors=\"%zu\" skipped=\"%zu\" time=\"%.6f\"", counts->tests,
                        counts->failures, counts->errors, counts->skipped, counts->seconds);
}

static void suite_name(const parity_combo_result *combo, char *name, size_t size) {
    snprintf(name, size, "%s.%s", combo->suite, combo->model);
}

// "grad_norm: error 1.2e-03 > tolerance 4e-04 (ratio 3.08); 2 of 40 metrics failed"
static void failure_message(const parity_combo_result *combo, char *message, size_t size) {
    const parity_metric *worst = NULL;
    size_t failed = 0;
    for (size_t i = 0; i < combo->metric_count; i++) {
        const parity_metric *metric = &combo->metrics[i];
        if (metric->pass) continue;
        failed++;
        if (!worst || parity_report_ratio_rank(metric->ratio) > parity_report_ratio_rank(worst->ratio)) worst = metric;
    }
    if (!worst) {
        snprintf(message, size, "%s", combo->reason[0] ? combo->reason : "failed (no reason recorded)");
        return;
    }
    char value[32], error[32], tolerance[32], ratio[32];
    snprintf(message, size, "%s: value %s, error %s > tolerance %s (ratio %s); %zu of %zu metrics failed", worst->name,
             parity_report_format(value, sizeof value, "%.9g", worst->value),
             parity_report_format(error, sizeof error, "%.3e", worst->error),
             parity_report_format(tolerance, sizeof tolerance, "%.3e", worst->tolerance),
             parity_report_format(ratio, sizeof ratio, "%.3g", worst->ratio), failed, combo->metric_count);
}

// One line per metric, failures marked: the body of a <failure>.
static void append_metric_lines(parity_text *xml, const parity_combo_result *combo) {
    if (combo->reason[0]) {
        parity_text_append_xml(xml, combo->reason);
        parity_text_append(xml, "\n");
    }
    for (size_t i = 0; i < combo->metric_count; i++) {
        const parity_metric *metric = &combo->metrics[i];
        char value[32], golden[32], error[32], tolerance[32], ratio[32], line[512];
        snprintf(line, sizeof line, "%-4s %s: value %s golden %s error %s tolerance %s ratio %s\n", metric->pass ? "ok" : "FAIL",
                 metric->name, parity_report_format(value, sizeof value, "%.9g", metric->value),
                 parity_report_format(golden, sizeof golden, "%.9g", metric->golden),
                 parity_report_format(error, sizeof error, "%.3e", metric->error),
                 parity_report_format(tolerance, sizeof tolerance, "%.3e", metric->tolerance),
                 parity_report_format(ratio, sizeof ratio, "%.3g", metric->ratio));
        parity_text_append_xml(xml, line);
    }
}

static void append_testcase(parity_text *xml, const parity_combo_result *combo) {
    char classname[160];
    suite_name(combo, classname, sizeof classname);
    parity_text_append(xml, "    <testcase classname=\"");
    parity_text_append_xml_attribute(xml, classname);
    parity_text_append(xml, "\" name=\"");
    parity_text_append_xml_attribute(xml, combo->id);
    parity_text_appendf(xml, "\" time=\"%.6f\"", combo_seconds(combo));
    char message[1400];
    switch (combo->status) {
    case PARITY_COMBO_PASS: parity_text_append(xml, "/>\n"); return;
    case PARITY_COMBO_FAIL:
        failure_message(combo, message, sizeof message);
        parity_text_append(xml, ">\n      <failure type=\"tolerance\" message=\"");
        parity_text_append_xml_attribute(xml, message);
        parity_text_append(xml, "\">");
        append_metric_lines(xml, combo);
        parity_text_append(xml, "</failure>\n");
        break;
    case PARITY_COMBO_ERROR:
        parity_text_append(xml, ">\n      <error type=\"error\" message=\"");
        parity_text_append_xml_attribute(xml, combo->reason);
        parity_text_append(xml, "\">");
        parity_text_append_xml(xml, combo->reason);
        parity_text_append(xml, "</error>\n");
        break;
    case PARITY_COMBO_NOT_SUPPORTED:
    case PARITY_COMBO_EXCLUDED:
        snprintf(message, sizeof message, "%s: %s", parity_report_status_label(combo->status), combo->reason);
        parity_text_append(xml, ">\n      <skipped message=\"");
        parity_text_append_xml_attribute(xml, message);
        parity_text_append(xml, "\"/>\n");
        break;
    }
    parity_text_append(xml, "    </testcase>\n");
}

static void append_property(parity_text *xml, const char *name, const char *value) {
    if (!value[0]) return;
    parity_text_appendf(xml, "      <property name=\"%s\" value=\"", name);
    parity_text_append_xml_attribute(xml, value);
    parity_text_append(xml, "\"/>\n");
}

// The testsuite of combos[first]'s suite.model: every combo of it, wherever it sits in the run.
static void append_testsuite(parity_text *xml, const parity_results *results, size_t first) {
    const parity_combo_result *head = &results->combos[first];
    junit_counts counts = {0};
    for (size_t i = first; i < results->combo_count; i++)
        if (strcmp(results->combos[i].suite, head->suite) == 0 && strcmp(results->combos[i].model, head->model) == 0)
            count_combo(&counts, &results->combos[i]);
    char name[160];
    suite_name(head, name, sizeof name);
    const parity_results_context *context = &results->context;
    parity_text_append(xml, "  <testsuite name=\"");
    parity_text_append_xml_attribute(xml, name);
    parity_text_append(xml, "\"");
    append_counts(xml, &counts);
    parity_text_append(xml, " hostname=\"");
    parity_text_append_xml_attribute(xml, context->host);
    parity_text_append(xml, "\" timestamp=\"");
    parity_text_append_xml_attribute(xml, context->started);
    parity_text_append(xml, "\">\n    <properties>\n");
    append_property(xml, "git_sha", context->git_sha);
    append_property(xml, "device", context->device);
    append_property(xml, "tolerance_rule", context->tolerance_rule);
    append_property(xml, "timing_method", context->timing_method);
    if (context->interrupted[0]) append_property(xml, "interrupted", context->interrupted);
    if (context->stopped[0]) append_property(xml, "stopped", context->stopped);
    parity_text_append(xml, "    </properties>\n");
    for (size_t i = first; i < results->combo_count; i++)
        if (strcmp(results->combos[i].suite, head->suite) == 0 && strcmp(results->combos[i].model, head->model) == 0)
            append_testcase(xml, &results->combos[i]);
    parity_text_append(xml, "  </testsuite>\n");
}

static bool seen_before(const parity_results *results, size_t index) {
    const parity_combo_result *combo = &results->combos[index];
    for (size_t i = 0; i < index; i++)
        if (strcmp(results->combos[i].suite, combo->suite) == 0 && strcmp(results->combos[i].model, combo->model) == 0) return true;
    return false;
}

parity_error *parity_report_write_junit(const char *path, const parity_results *results) {
    parity_text xml = {0};
    junit_counts counts = {0};
    for (size_t i = 0; i < results->combo_count; i++) count_combo(&counts, &results->combos[i]);
    parity_text_append(&xml, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"parity ");
    parity_text_append_xml_attribute(&xml, results->context.suite);
    parity_text_append(&xml, "\"");
    append_counts(&xml, &counts);
    parity_text_append(&xml, ">\n");
    for (size_t i = 0; i < results->combo_count; i++)
        if (!seen_before(results, i)) append_testsuite(&xml, results, i);
    parity_text_append(&xml, "</testsuites>\n");
    parity_error *error = parity_text_check(&xml, path);
    if (!error) error = parity_write_file_atomic(path, xml.data, xml.length, true);
    parity_text_free(&xml);
    return error;
}
