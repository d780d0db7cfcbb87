// test_reports.c: the report writers, from a results structure built in code (results_sample.h:
// combos of every status, a metric over tolerance, a NaN metric, timing samples): results.json
// round-trips every field (NaN kept), junit.xml is well-formed with counts that match its
// testcases and escapes < & > " ', summary.md carries the counts, the failure and the speed-up,
// report.html is self-contained and read at a glance (the verdict line before the model x field
// grid, not-supported folded per reason, failures grouped per combo, "same" timing within noise,
// both SVG charts, under 300 KB for 650 combos of 300 metrics), a malformed results.json fails naming the file and the field, temporary files are cleaned up, and
// `parity report DIR` re-renders the same reports from results.json alone.
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli_runner.h"
#include "ops/core/file.h"
#include "reports/html.h"
#include "reports/render.h"
#include "reports/report_analysis.h"
#include "reports/results.h"
#include "results_sample.h"

#define ROWS(array) (sizeof(array) / sizeof((array)[0]))

// ---- helpers ----

static void make_directory(char *directory, size_t size) {
    snprintf(directory, size, "/tmp/parity-reports-XXXXXX");
    cr_assert_not_null(mkdtemp(directory));
}

static void remove_directory(const char *directory) {
    char command[600];
    snprintf(command, sizeof command, "rm -rf '%s'", directory);
    cr_assert_eq(system(command), 0);
}

static char *read_text(const char *directory, const char *name) {
    char path[600], *text;
    size_t size;
    snprintf(path, sizeof path, "%s/%s", directory, name);
    parity_error *error = parity_read_file(path, &text, &size);
    cr_assert_null(error, "%s: %s", path, error ? parity_error_message(error) : "");
    return text;
}

static void write_text(const char *directory, const char *name, const char *text) {
    char path[600];
    snprintf(path, sizeof path, "%s/%s", directory, name);
    FILE *stream = fopen(path, "wb");
    cr_assert_not_null(stream, "%s", path);
    cr_assert_eq(fwrite(text, 1, strlen(text), stream), strlen(text));
    fclose(stream);
}

static size_t count_occurrences(const char *text, const char *needle) {
    size_t count = 0;
    for (const char *at = strstr(text, needle); at; at = strstr(at + 1, needle)) count++;
    return count;
}

static size_t directory_entries(const char *directory) {
    DIR *stream = opendir(directory);
    cr_assert_not_null(stream, "%s", directory);
    size_t count = 0;
    for (struct dirent *entry; (entry = readdir(stream));) count += strcmp(entry->d_name, ".") != 0 && strcmp(entry->d_name, "..") != 0;
    closedir(stream);
    return count;
}

static bool same_double(double a, double b) { return (isnan(a) && isnan(b)) || (a == b && signbit(a) == signbit(b)); }

static void render_sample(const char *directory, parity_results *results) {
    sample_results_build(results);
    parity_error *error = parity_reports_render_all(directory, results);
    char message[1024] = "";
    if (error) parity_error_format(error, message, sizeof message);
    cr_assert_null(error, "render: %s", message);
}

// ---- the results structure ----

Test(reports, status_names_round_trip_and_unknown_names_are_rejected) {
    const char *names[] = {"pass", "fail", "not_supported", "error", "excluded"};
    for (int status = 0; status < PARITY_COMBO_STATUS_COUNT; status++) {
        cr_expect_str_eq(parity_combo_status_name((parity_combo_status)status), names[status]);
        parity_combo_status parsed = PARITY_COMBO_PASS;
        cr_expect(parity_combo_status_parse(names[status], &parsed));
        cr_expect_eq((int)parsed, status);
    }
    parity_combo_status parsed;
    cr_expect_not(parity_combo_status_parse("passed", &parsed));
    cr_expect_not(parity_combo_status_parse("", &parsed));
}

Test(reports, builders_grow_copy_count_and_release) {
    parity_results results = {0};
    for (int i = 0; i < 40; i++) cr_assert_not_null(parity_results_add_combo(&results));
    parity_combo_result *combo = &results.combos[39];
    for (int i = 0; i < 1000; i++) {
        parity_metric metric = {.value = i, .pass = i % 2 == 0};
        snprintf(metric.name, sizeof metric.name, "m%d", i);
        cr_assert_null(parity_metric_add(combo, &metric));
    }
    cr_expect_eq(combo->metric_count, 1000);
    cr_expect_str_eq(combo->metrics[999].name, "m999");
    cr_expect_eq(combo->metrics[500].value, 500);
    double samples[3] = {1, 2, 3};
    cr_assert_null(parity_combo_set_samples(combo, samples, 3));
    samples[0] = 99; // the combo holds a copy
    cr_expect_eq(combo->samples_ms[0], 1);
    cr_assert_null(parity_combo_set_samples(combo, NULL, 0));
    cr_expect_eq(combo->sample_count, 0);
    results.combos[3].status = PARITY_COMBO_FAIL;
    results.combos[4].status = PARITY_COMBO_EXCLUDED;
    results.combos[5].status = PARITY_COMBO_EXCLUDED;
    size_t counts[PARITY_COMBO_STATUS_COUNT];
    parity_results_counts(&results, counts);
    cr_expect_eq(counts[PARITY_COMBO_PASS], 37);
    cr_expect_eq(counts[PARITY_COMBO_FAIL], 1);
    cr_expect_eq(counts[PARITY_COMBO_EXCLUDED], 2);
    cr_expect_eq(counts[PARITY_COMBO_ERROR], 0);
    parity_results_release(&results);
    cr_expect_null(results.combos);
    cr_expect_eq(results.combo_count, 0);
}

// ---- results.json ----

static void expect_same_results(const parity_results *a, const parity_results *b) {
    const parity_results_context *x = &a->context, *y = &b->context;
    cr_expect_eq(y->schema_version, PARITY_RESULTS_SCHEMA_VERSION);
    const char *context_pairs[][2] = {{x->suite, y->suite},       {x->git_sha, y->git_sha},
                                      {x->host, y->host},         {x->device, y->device},
                                      {x->driver_version, y->driver_version}, {x->cuda_version, y->cuda_version},
                                      {x->libraries, y->libraries}, {x->command, y->command},
                                      {x->started, y->started},   {x->finished, y->finished},
                                      {x->tolerance_rule, y->tolerance_rule}, {x->timing_method, y->timing_method}};
    for (size_t i = 0; i < ROWS(context_pairs); i++) cr_expect_str_eq(context_pairs[i][1], context_pairs[i][0], "context field %zu", i);
    cr_assert_eq(b->combo_count, a->combo_count);
    for (size_t c = 0; c < a->combo_count; c++) {
        const parity_combo_result *p = &a->combos[c], *q = &b->combos[c];
        cr_expect_str_eq(q->id, p->id);
        cr_expect_str_eq(q->suite, p->suite);
        cr_expect_str_eq(q->model, p->model);
        cr_expect_str_eq(q->batch, p->batch);
        cr_expect_str_eq(q->dtype, p->dtype);
        cr_expect_str_eq(q->device, p->device);
        cr_expect_str_eq(q->reason, p->reason);
        cr_expect_eq(q->is_eager_baseline, p->is_eager_baseline, "%s", p->id);
        cr_expect_eq(q->status, p->status, "%s", p->id);
        cr_assert_eq(q->field_count, p->field_count, "%s", p->id);
        for (size_t f = 0; f < p->field_count; f++) {
            cr_expect_str_eq(q->fields[f].field, p->fields[f].field);
            cr_expect_str_eq(q->fields[f].value, p->fields[f].value);
        }
        cr_assert_eq(q->metric_count, p->metric_count, "%s", p->id);
        for (size_t m = 0; m < p->metric_count; m++) {
            const parity_metric *r = &p->metrics[m], *s = &q->metrics[m];
            cr_expect_str_eq(s->name, r->name);
            cr_expect(same_double(s->value, r->value) && same_double(s->golden, r->golden) && same_double(s->error, r->error) &&
                          same_double(s->tolerance, r->tolerance) && same_double(s->ratio, r->ratio),
                      "%s %s: a number changed (value %.17g -> %.17g)", p->id, r->name, r->value, s->value);
            cr_expect_eq(s->pass, r->pass);
            cr_expect_str_eq(s->basis, r->basis, "%s %s: the tolerance's basis", p->id, r->name);
        }
        cr_assert_eq(q->sample_count, p->sample_count, "%s", p->id);
        for (size_t s = 0; s < p->sample_count; s++) cr_expect(same_double(q->samples_ms[s], p->samples_ms[s]), "%s sample %zu", p->id, s);
        cr_expect_eq(q->warmup_count, p->warmup_count);
        cr_expect(same_double(q->median_ms, p->median_ms) && same_double(q->noise, p->noise), "%s timing", p->id);
        cr_expect_eq(q->peak_memory_bytes, p->peak_memory_bytes);
        cr_expect_eq(q->tokens, p->tokens);
    }
}

Test(reports, results_json_round_trips_every_field_and_keeps_nan) {
    char directory[64], path[128];
    make_directory(directory, sizeof directory);
    parity_results written, read;
    sample_results_build(&written);
    // values that need all 17 digits, a negative zero and infinities must come back bit for bit
    written.combos[1].metrics[0].value = 0.1 + 0.2;
    written.combos[1].metrics[1].golden = -0.0;
    written.combos[1].metrics[1].error = 1e-310;
    written.combos[2].metrics[0].tolerance = INFINITY;
    written.combos[2].metrics[0].ratio = -INFINITY;
    snprintf(path, sizeof path, "%s/results.json", directory);
    cr_assert_null(parity_results_write_json(path, &written));
    parity_error *error = parity_results_read_json(path, &read);
    cr_assert_null(error, "%s", error ? parity_error_message(error) : "");
    expect_same_results(&written, &read);
    cr_expect(isnan(read.combos[8].metrics[0].value), "the NaN loss must stay NaN");
    char *text = read_text(directory, "results.json");
    cr_expect(strstr(text, "\"nan\"") && strstr(text, "\"inf\"") && strstr(text, "\"-inf\""), "NaN and Inf are written as strings");
    cr_expect(strstr(text, "\"context\"") && strstr(text, "\"combos\"") && strstr(text, "\"samples_ms\""));
    free(text);
    cr_expect_eq(directory_entries(directory), 1, "no temporary file left beside results.json");
    parity_results_release(&written);
    parity_results_release(&read);
    remove_directory(directory);
}

typedef struct malformed_case {
    const char *label;
    const char *find;       // first occurrence replaced by `replace`; NULL: keep the first half of the file
    const char *replace;
    const char *field;      // what the message must name
} malformed_case;

static const malformed_case malformed_cases[] = {
    {"truncated", NULL, NULL, "truncated"},
    {"wrong schema version", "\"schema_version\":\t1", "\"schema_version\":\t99", "context.schema_version"},
    {"metric value of the wrong type", "\"value\":", "\"value\": true, \"was\":", "combos[0].metrics[0].value"},
    {"metric value an unknown string", "\"value\":", "\"value\": \"NaNa\", \"was\":", "combos[0].metrics[0].value"},
    {"missing metric field", "\"golden\":", "\"golden_x\":", "combos[0].metrics[0].golden"},
    {"metric basis of the wrong type", "\"basis\":", "\"basis\": 3, \"was\":", "combos[0].metrics[0].basis"},
    {"unknown status", "\"status\":\t\"pass\"", "\"status\":\t\"passed\"", "combos[0].status"},
    {"sample of the wrong type", "\"samples_ms\":\t[", "\"samples_ms\":\t[null, ", "combos[0].timing.samples_ms[0]"},
    {"fields not an object", "\"fields\":\t{", "\"fields\":\t[], \"was\":\t{", "combos[0].fields"},
    {"negative warm-up count", "\"warmup\":\t2", "\"warmup\":\t-2", "combos[0].timing.warmup"},
    {"not an object at the top", "{", "[], \"x\": {", "results.json"},
};

static char *malformed_text(const char *text, const malformed_case *row) {
    size_t length = strlen(text);
    char *out = malloc(length + 256);
    cr_assert_not_null(out);
    if (!row->find) {
        memcpy(out, text, length / 2);
        out[length / 2] = '\0';
        return out;
    }
    const char *at = strstr(text, row->find);
    cr_assert_not_null(at, "%s: '%s' not in results.json", row->label, row->find);
    snprintf(out, length + 256, "%.*s%s%s", (int)(at - text), text, row->replace, at + strlen(row->find));
    return out;
}

Test(reports, malformed_results_json_is_a_data_error_naming_file_and_field) {
    char directory[64], path[128];
    make_directory(directory, sizeof directory);
    parity_results results;
    sample_results_build(&results);
    snprintf(path, sizeof path, "%s/results.json", directory);
    cr_assert_null(parity_results_write_json(path, &results));
    char *good = read_text(directory, "results.json");
    for (size_t i = 0; i < ROWS(malformed_cases); i++) {
        char *bad = malformed_text(good, &malformed_cases[i]);
        write_text(directory, "results.json", bad);
        free(bad);
        parity_results read;
        parity_error *error = parity_results_read_json(path, &read);
        cr_expect_not_null(error, "%s: accepted", malformed_cases[i].label);
        if (!error) {
            parity_results_release(&read);
            continue;
        }
        char message[1024];
        parity_error_format(error, message, sizeof message);
        cr_expect_eq(parity_error_kind_of(error), PARITY_ERROR_DATA, "%s: %s", malformed_cases[i].label, message);
        cr_expect(strstr(message, path), "%s: the message must name the file: %s", malformed_cases[i].label, message);
        cr_expect(strstr(message, malformed_cases[i].field), "%s: the message must name '%s': %s", malformed_cases[i].label,
                  malformed_cases[i].field, message);
        cr_expect_eq(read.combo_count, 0, "%s: nothing half-read is handed back", malformed_cases[i].label);
        parity_error_free(error);
    }
    free(good);
    parity_results_release(&results);
    remove_directory(directory);
}

Test(reports, results_json_from_before_the_basis_field_still_reads) {
    char directory[64], path[128];
    make_directory(directory, sizeof directory);
    parity_results results, read;
    sample_results_build(&results);
    snprintf(path, sizeof path, "%s/results.json", directory);
    cr_assert_null(parity_results_write_json(path, &results));
    char *text = read_text(directory, "results.json");
    cJSON *root = cJSON_Parse(text); // remove every metric's basis, as a writer from before the field left it out
    free(text);
    cr_assert_not_null(root);
    size_t removed = 0;
    const cJSON *combo;
    cJSON_ArrayForEach(combo, cJSON_GetObjectItemCaseSensitive(root, "combos")) {
        cJSON *metric;
        cJSON_ArrayForEach(metric, cJSON_GetObjectItemCaseSensitive(combo, "metrics")) {
            cJSON_DeleteItemFromObjectCaseSensitive(metric, "basis");
            removed++;
        }
    }
    cr_assert(removed > 0);
    text = cJSON_Print(root);
    cJSON_Delete(root);
    write_text(directory, "results.json", text);
    free(text);
    parity_error *error = parity_results_read_json(path, &read);
    cr_assert_null(error, "%s", error ? parity_error_message(error) : "");
    cr_expect_str_eq(read.combos[0].metrics[0].basis, "", "an absent basis reads as empty");
    parity_results_release(&read);
    parity_results_release(&results);
    remove_directory(directory);
}

// ---- junit.xml ----

// A tiny XML checker: balanced tags, quoted attributes, only known entities, and JUnit counts.
typedef struct xml_check {
    char problem[256];
    size_t testcases, failures, errors, skipped;
    long root[4];                  // tests, failures, errors, skipped attributes of <testsuites>
    size_t suite_counts[4], suites;
} xml_check;

static bool valid_entity(const char *at) {
    const char *entities[] = {"&lt;", "&gt;", "&amp;", "&quot;", "&#39;", "&#10;", "&#9;"};
    for (size_t i = 0; i < ROWS(entities); i++)
        if (strncmp(at, entities[i], strlen(entities[i])) == 0) return true;
    return false;
}

static long attribute_long(const char *attributes, const char *name) {
    char key[32];
    snprintf(key, sizeof key, " %s=\"", name);
    const char *at = strstr(attributes, key);
    return at ? strtol(at + strlen(key), NULL, 10) : -1;
}

static void check_xml(const char *text, xml_check *check) {
    memset(check, 0, sizeof *check);
    char stack[16][32];
    int depth = 0, roots = 0;
    const char *names[4] = {"tests", "failures", "errors", "skipped"};
    char suite_attributes[1024] = "";
    const char *c = text;
    if (strncmp(c, "<?xml ", 6) == 0) c = strstr(c, "?>") + 2;
    while (*c && !check->problem[0]) {
        if (*c == '&' && !valid_entity(c)) snprintf(check->problem, sizeof check->problem, "bad entity at '%.20s'", c);
        if (*c != '<') {
            c++;
            continue;
        }
        bool closing = c[1] == '/';
        const char *name_start = c + 1 + closing;
        size_t name_length = strcspn(name_start, " />\n");
        char name[32];
        snprintf(name, sizeof name, "%.*s", (int)name_length, name_start);
        const char *end = name_start + name_length;
        // attributes: name="value" with no raw < or " inside and only known entities
        const char *attributes_start = end;
        while (*end && *end != '>' && !(end[0] == '/' && end[1] == '>')) {
            if (*end == '"') {
                for (end++; *end && *end != '"'; end++) {
                    if (*end == '<') snprintf(check->problem, sizeof check->problem, "raw < in an attribute of <%s>", name);
                    if (*end == '&' && !valid_entity(end)) snprintf(check->problem, sizeof check->problem, "bad entity in <%s>", name);
                }
            }
            if (*end) end++;
        }
        if (!*end) {
            snprintf(check->problem, sizeof check->problem, "unterminated tag <%s", name);
            break;
        }
        bool self_closing = *end == '/';
        char attributes[1024];
        snprintf(attributes, sizeof attributes, "%.*s", (int)(end - attributes_start), attributes_start);
        c = end + (self_closing ? 2 : 1);
        if (closing) {
            if (depth == 0 || strcmp(stack[depth - 1], name) != 0) {
                snprintf(check->problem, sizeof check->problem, "</%s> closes <%s>", name, depth ? stack[depth - 1] : "nothing");
                break;
            }
            depth--;
            if (strcmp(name, "testsuite") == 0)
                for (int k = 0; k < 4; k++)
                    if (attribute_long(suite_attributes, names[k]) != (long)check->suite_counts[k])
                        snprintf(check->problem, sizeof check->problem, "a testsuite says %s=%ld but holds %zu", names[k],
                                 attribute_long(suite_attributes, names[k]), check->suite_counts[k]);
            continue;
        }
        if (depth == 0) roots++;
        if (strcmp(name, "testsuites") == 0)
            for (int k = 0; k < 4; k++) check->root[k] = attribute_long(attributes, names[k]);
        if (strcmp(name, "testsuite") == 0) {
            check->suites++;
            memset(check->suite_counts, 0, sizeof check->suite_counts);
            snprintf(suite_attributes, sizeof suite_attributes, "%s", attributes);
        }
        size_t *counters[4] = {&check->testcases, &check->failures, &check->errors, &check->skipped};
        const char *elements[4] = {"testcase", "failure", "error", "skipped"};
        for (int k = 0; k < 4; k++)
            if (strcmp(name, elements[k]) == 0) {
                (*counters[k])++;
                check->suite_counts[k]++;
            }
        if (!self_closing) {
            if (depth == 16) {
                snprintf(check->problem, sizeof check->problem, "too deep");
                break;
            }
            snprintf(stack[depth++], sizeof stack[0], "%s", name);
        }
    }
    if (!check->problem[0] && depth != 0) snprintf(check->problem, sizeof check->problem, "<%s> is never closed", stack[depth - 1]);
    if (!check->problem[0] && roots != 1) snprintf(check->problem, sizeof check->problem, "%d root elements", roots);
}

Test(reports, junit_xml_is_well_formed_counted_and_escaped) {
    char directory[64];
    make_directory(directory, sizeof directory);
    parity_results results;
    render_sample(directory, &results);
    char *xml = read_text(directory, "junit.xml");
    xml_check check;
    check_xml(xml, &check);
    cr_expect_str_empty(check.problem, "junit.xml: %s", check.problem);
    size_t counts[PARITY_COMBO_STATUS_COUNT];
    parity_results_counts(&results, counts);
    // the sample: 5 pass, 2 fail, 3 not supported, 1 error, 1 excluded
    cr_expect_eq(check.testcases, 12);
    cr_expect_eq(check.failures, 2);
    cr_expect_eq(check.errors, 1);
    cr_expect_eq(check.skipped, 4, "not supported and excluded combos are skipped");
    cr_expect_eq(check.root[0], 12);
    cr_expect_eq(check.root[1], 2);
    cr_expect_eq(check.root[2], 1);
    cr_expect_eq(check.root[3], 4);
    cr_expect_eq(check.suites, 2, "one testsuite per suite.model");
    cr_expect(strstr(xml, "<testsuite name=\"smoke.qwen3_moe_tiny\""));
    cr_expect(strstr(xml, "<testcase classname=\"smoke.qwen3_tiny\" name=\"" SAMPLE_FAILING_COMBO "\""));
    cr_expect(strstr(xml, "<testcase classname=\"smoke.qwen3_tiny\" name=\"qwen3_tiny/attn=eager,ce=eager/bf16/cpu\" time=\"0.012000\""),
              "time is the median in seconds");
    // the failure message names the failing metric, its error and its tolerance; the body lists every metric
    const char *failure = strstr(xml, "<failure type=\"tolerance\" message=\"" SAMPLE_FAILING_METRIC ": value ");
    cr_assert_not_null(failure, "%s", xml);
    cr_expect(strstr(failure, "error 9.300e-03 &gt; tolerance 3.000e-03 (ratio 3.1)"), "%.400s", failure);
    cr_expect(strstr(failure, "ok   loss: value") && strstr(failure, "FAIL " SAMPLE_FAILING_METRIC), "%.1400s", failure);
    cr_expect(strstr(xml, "<failure type=\"tolerance\" message=\"loss: value NaN, error NaN &gt; tolerance 2.500e-03 (ratio NaN)"),
              "a NaN metric is the worst failure");
    cr_expect(strstr(xml, "<error type=\"error\" message=\"golden/smoke/qwen3_moe_tiny/packed.h5: truncated\">"));
    cr_expect(strstr(xml, "<skipped message=\"not supported: needs head_dim &lt;= 256 &amp; &quot;causal&quot; masks: &#39;sliding&#39; given\"/>"));
    cr_expect(strstr(xml, "<skipped message=\"excluded: liger CE needs a CUDA device (suite exclusion)\"/>"));
    cr_expect_null(strstr(xml, SAMPLE_ESCAPE_REASON), "the raw reason must not appear unescaped");
    free(xml);
    parity_results_release(&results);
    remove_directory(directory);
}

// ---- summary.md ----

Test(reports, summary_md_has_counts_failures_tightest_ratios_and_speed) {
    char directory[64];
    make_directory(directory, sizeof directory);
    parity_results results;
    render_sample(directory, &results);
    char *md = read_text(directory, "summary.md");
    cr_expect(strstr(md, "# parity: suite `smoke` on cpu (16 cores)"), "%.300s", md);
    cr_expect(strstr(md, "| git sha | ed95add0123456789abcdef0123456789abcdef0 |"));
    cr_expect(strstr(md, "| tolerance rule | parity: \\|x - golden\\| &lt;= max(k * \\|eager_bf16 - golden\\|, floor)"), "pipes escaped in cells");
    cr_expect(strstr(md, "**12 combos: 5 pass, 2 fail, 3 not supported, 1 error, 1 excluded**"), "%s", md);
    const char *failures = strstr(md, "## Failures");
    cr_assert_not_null(failures);
    cr_expect(strstr(failures, "| `" SAMPLE_FAILING_COMBO "` | `" SAMPLE_FAILING_METRIC "` | 9.300e-03 | 3.000e-03 | eager error | 3.1 |"), "%s", failures);
    cr_expect(strstr(failures, "| `qwen3_moe_tiny/attn=sdpa,moe=wrong_eps,ce=eager/bf16/cpu` | `loss` | NaN | 2.500e-03 | eager error | NaN |"));
    cr_expect(strstr(failures, "| `" SAMPLE_FAILING_COMBO "` | `" SAMPLE_FAILING_SKETCH "` | 8.000e-03 | 4.000e-03 | eager error | 2 |"),
              "a failing sketch component is listed like the others: %s", failures);
    // the tightest passing ratio: sdpa + chunk_loss, loss at 0.93 * 1.02
    const char *tightest = strstr(md, "## Tightest tolerance ratios");
    cr_assert_not_null(tightest);
    cr_expect(strstr(tightest, "| 1 | `qwen3_tiny/attn=sdpa,ce=chunk_loss/bf16/cpu` | `loss` | 2.372e-03 | 2.500e-03 | eager error | 0.949 |"), "%s", tightest);
    char section[4096];
    snprintf(section, sizeof section, "%.*s", (int)(strstr(tightest, "\n## Speed") - tightest), tightest);
    cr_expect_eq(count_occurrences(section, "\n| "), 1 + 10, "the header and ten rows");
    cr_expect_null(strstr(section, "perturbed"), "only passing combos: %s", section);
    // fastest passing combo per model vs eager: 12 ms -> 6.1 ms
    const char *speed = strstr(md, "## Speed");
    cr_assert_not_null(speed);
    cr_expect(strstr(speed, "| qwen3_tiny | packed_2x128 | bf16 | cpu | 12.000 | `qwen3_tiny/attn=sdpa,ce=chunk_loss/bf16/cpu` | 6.100 | 2.4% | 1.97x \xc2\xb1" "3.4% | 41967 |"),
              "%s", speed);
    cr_expect(strstr(speed, "| `qwen3_moe_tiny/attn=sdpa,moe=fused_triton,ce=eager/bf16/cpu` | 18.000 |"), "%s", speed);
    const char *unsupported = strstr(md, "## Not supported");
    cr_assert_not_null(unsupported);
    cr_expect(strstr(unsupported, "| needs SM90+ (a CUDA device) | 2 | `qwen3_tiny/attn=flash_attention_3,ce=eager/bf16/cpu`<br>"), "%s", unsupported);
    cr_expect(strstr(unsupported, "needs head_dim &lt;= 256 &amp; \"causal\" masks"), "%s", unsupported);
    cr_expect(strstr(md, "## Errors") && strstr(md, "## Excluded by the suite"));
    free(md);
    parity_results_release(&results);
    remove_directory(directory);
}

// ---- report.html ----

// Every http:// or https:// in the page must be an SVG namespace declaration; the one script is
// inline (column sorting).
static void expect_no_network_references(const char *html) {
    const char *schemes[] = {"http://", "https://"};
    for (size_t s = 0; s < ROWS(schemes); s++) {
        for (const char *at = strstr(html, schemes[s]); at; at = strstr(at + 1, schemes[s])) {
            bool svg_namespace = (at - html >= 7 && strncmp(at - 7, "xmlns=\"", 7) == 0) ||
                                 (at - html >= 13 && strncmp(at - 13, "xmlns:xlink=\"", 13) == 0);
            cr_expect(svg_namespace, "a network reference in report.html: '%.60s'", at - 20 > html ? at - 20 : html);
        }
    }
    cr_expect_eq(count_occurrences(html, "<script"), 1, "one inline script");
    cr_expect(strstr(html, "<script>\n"), "inline, no src");
    cr_expect_null(strstr(html, "<link"), "no external stylesheets");
    cr_expect_null(strstr(html, "src="), "nothing loaded from elsewhere");
}

// The text between `from` and the next "<h2" (or the end).
static char *section(const char *html, const char *from) {
    const char *start = strstr(html, from);
    cr_assert_not_null(start, "section '%s' missing", from);
    const char *end = strstr(start + 1, "<h2");
    size_t length = end ? (size_t)(end - start) : strlen(start);
    char *copy = malloc(length + 1);
    cr_assert_not_null(copy);
    memcpy(copy, start, length);
    copy[length] = '\0';
    return copy;
}

// The heatmap's per-gradient columns take the worst metric of each family; a sketch's components
// are one run of metrics.
Test(reports, heatmap_columns_and_sketch_runs) {
    parity_results results;
    sample_results_build(&results);
    const parity_combo_result *failing = NULL;
    for (size_t i = 0; i < results.combo_count; i++)
        if (strcmp(results.combos[i].id, SAMPLE_FAILING_COMBO) == 0) failing = &results.combos[i];
    cr_assert_not_null(failing);
    static const char *const expected[PARITY_REPORT_HEATMAP_COLUMNS] = {
        "loss", NULL, "grad_norm", SAMPLE_FAILING_METRIC, SAMPLE_FAILING_SKETCH, "grad_cosine:model.embed_tokens.weight" /* ties: the first */};
    static const char *const columns[PARITY_REPORT_HEATMAP_COLUMNS] = {"loss",           "aux_loss",     "grad_norm",
                                                                      "worst parameter", "worst sketch", "worst cosine"};
    for (int column = 0; column < PARITY_REPORT_HEATMAP_COLUMNS; column++) {
        cr_expect_str_eq(parity_report_heatmap_column(column), columns[column]);
        const parity_metric *metric = parity_report_heatmap_metric(failing, column);
        if (!expected[column]) cr_expect_null(metric, "a dense model has no aux_loss");
        else {
            cr_assert_not_null(metric, "column %d", column);
            cr_expect_str_eq(metric->name, expected[column], "column %s", columns[column]);
        }
    }
    cr_expect_null(parity_report_heatmap_metric(failing, PARITY_REPORT_HEATMAP_COLUMNS));
    size_t first_sketch = 0;
    while (strncmp(failing->metrics[first_sketch].name, "grad_sketch:", 12) != 0) first_sketch++;
    cr_expect_eq(parity_report_sketch_run(failing, first_sketch), 4, "the four components of %s", failing->metrics[first_sketch].name);
    cr_expect_eq(parity_report_sketch_run(failing, first_sketch + 1), 3, "a run from its second component");
    cr_expect_eq(parity_report_sketch_run(failing, 0), 1, "loss is a run of one");
    cr_expect_eq(parity_report_sketch_run(failing, failing->metric_count), 0);
    parity_results_release(&results);
}

Test(reports, report_html_is_self_contained_with_verdict_grid_and_both_charts) {
    char directory[64];
    make_directory(directory, sizeof directory);
    parity_results results;
    render_sample(directory, &results);
    char *html = read_text(directory, "report.html");
    cr_expect(strncmp(html, "<!DOCTYPE html>", 15) == 0);
    cr_expect(strstr(html, "</html>\n"));
    expect_no_network_references(html);
    for (size_t i = 0; i < results.combo_count; i++) cr_expect(strstr(html, results.combos[i].id), "combo %s missing", results.combos[i].id);
    cr_expect(strstr(html, "needs head_dim &lt;= 256 &amp; &quot;causal&quot; masks"));
    cr_expect_null(strstr(html, SAMPLE_ESCAPE_REASON));
    cr_expect(strstr(html, "ed95add0123456789abcdef0123456789abcdef0"), "the context block");
    // the verdict line first, then the grid, then the failures, the charts, the combos
    const char *verdict = strstr(html, "<p class=\"verdict bad\" id=\"verdict\">5 pass, 2 fail, 1 error &middot; 3 not supported &middot; "
                                       "1 excluded &middot; worst ratio NaN <small title=\"qwen3_moe_tiny/attn=sdpa,moe=wrong_eps,ce=eager/bf16/cpu\">"
                                       "(qwen3_moe_tiny: attn=sdpa,moe=wrong_eps)</small>");
    cr_expect(verdict, "%.600s", strstr(html, "<p class=\"verdict"));
    cr_expect(strstr(html, "&middot; fastest vs eager 1.97x &plusmn;3.4% <small title=\"qwen3_tiny/attn=sdpa,ce=chunk_loss/bf16/cpu\">"
                     "(qwen3_tiny: attn=sdpa,ce=chunk_loss)</small>"),
              "the fastest claim: 12 ms over 6.1 ms, outside the combined noise");
    const char *order[] = {"id=\"verdict\"", "<h2 id=\"grid\"", "<h2 id=\"failures\"", "<h2 id=\"time\"", "<h2 id=\"headroom\"",
                           "<h2 id=\"combos\"", "<h2 id=\"unsupported\"", "<h2 id=\"excluded\"", "<h2>Context"};
    for (size_t i = 0; i + 1 < ROWS(order); i++) {
        const char *a = strstr(html, order[i]), *b = strstr(html, order[i + 1]);
        cr_expect(a && b && a < b, "'%s' before '%s'", order[i], order[i + 1]);
    }
    // the grid: a row per field value, a column per model, counts coloured by status
    char *grid = section(html, "<h2 id=\"grid\"");
    cr_expect(strstr(grid, "<th>qwen3_tiny</th><th>qwen3_moe_tiny</th>"), "%s", grid);
    cr_expect(strstr(grid, "<th class=\"field\" rowspan=\"4\">attn</th><td><code>eager</code></td>"), "%s", grid);
    cr_expect(strstr(grid, "<td class=\"cell g-fail\" title=\"2 pass, 1 fail\"><b class=\"c-pass\">2</b><b class=\"c-fail\">1</b></td>"),
              "qwen3_tiny's attn=sdpa: %s", grid);
    cr_expect(strstr(grid, "<td class=\"cell g-none\" title=\"1 not supported\"><b class=\"c-unsupported\">1</b></td>"), "%s", grid);
    free(grid);
    // both charts, drawn by parity: legible, a legend entry per colour, no gnuplot
    cr_expect_eq(count_occurrences(html, "<svg"), 2, "the time chart and the headroom chart");
    cr_expect_eq(count_occurrences(html, "</svg>"), 2);
    cr_expect_null(strstr(html, "chart failed"));
    cr_expect(strstr(html, ">same within noise</text>") && strstr(html, ">faster beyond noise</text>") && strstr(html, ">eager baseline</text>"));
    cr_expect(strstr(html, ">0.51x \xc2\xb1" "3.4% \xc2\xb7 6.1 ms</text>"), "bars carry their relative time, noise and median");
    cr_expect(strstr(html, ">attn=sdpa,ce=chunk_loss</text>"), "bars are labeled with their non-eager choices");
    cr_expect(strstr(html, ">3.1 (fails)</text>") && strstr(html, ">NaN (fails)</text>"), "headroom: the worst ratios, a NaN one");
    for (const char *at = strstr(html, "font-size=\""); at; at = strstr(at + 1, "font-size=\""))
        cr_expect_geq(atoi(at + 11), 11, "labels of at least 11 px: %.40s", at);
    free(html);
    parity_results_release(&results);
    remove_directory(directory);
}

Test(reports, report_html_groups_failures_per_combo_with_their_worst_metrics) {
    char directory[64];
    make_directory(directory, sizeof directory);
    parity_results results;
    render_sample(directory, &results);
    char *html = read_text(directory, "report.html");
    char *failures = section(html, "<h2 id=\"failures\"");
    cr_expect(strstr(failures, "Failures <small>3 combos, worst 5 metrics each</small>"), "%.200s", failures);
    cr_expect_eq(count_occurrences(failures, SAMPLE_FAILING_COMBO), 1, "one row for the combo, not one per metric");
    const char *metric = strstr(failures, "<code>" SAMPLE_FAILING_METRIC "</code> <b class=\"r-over\">3.1</b>");
    const char *sketch = strstr(failures, "<code>" SAMPLE_FAILING_SKETCH "</code> <b class=\"r-over\">2</b>");
    cr_expect(metric && sketch && metric < sketch, "worst first: %s", failures);
    cr_expect(strstr(failures, "<td class=\"num\">2 of 26</td>"), "how many failed: %s", failures);
    cr_expect(strstr(failures, "<small>9.30e-03 / 3.00e-03, eager error</small>"), "error / tolerance and its basis");
    cr_expect(strstr(failures, "golden/smoke/qwen3_moe_tiny/packed.h5: truncated"), "the error combo with its reason");
    cr_expect(strstr(failures, "<table class=\"sortable\">"));
    free(failures);
    free(html);
    parity_results_release(&results);
    // more than five failing metrics: the worst five, the rest counted
    sample_results_build_large(&results, 130, 12);
    char path[128];
    snprintf(path, sizeof path, "%s/report.html", directory);
    cr_assert_null(parity_report_write_html(path, &results));
    html = read_text(directory, "report.html");
    failures = section(html, "<h2 id=\"failures\"");
    cr_expect(strstr(failures, "&hellip; 7 more failing (results.json has each)"), "%s", failures);
    cr_expect(strstr(failures, "<code>grad_sketch:model.layers.2.mlp.up_proj.weight[3]</code> <b class=\"r-over\">2.11</b>"), "the worst: %s",
              failures);
    cr_expect_null(strstr(failures, "<code>loss</code>"), "the least bad one is counted, not listed");
    free(failures);
    free(html);
    parity_results_release(&results);
    remove_directory(directory);
}

Test(reports, report_html_folds_not_supported_into_counts_per_reason) {
    char directory[64];
    make_directory(directory, sizeof directory);
    parity_results results;
    render_sample(directory, &results);
    char *html = read_text(directory, "report.html");
    char *unsupported = section(html, "<h2 id=\"unsupported\"");
    cr_expect(strstr(unsupported, "Not supported <small>3 combos, 2 reasons; expand a reason for its combos</small>"), "%s", unsupported);
    const char *first = strstr(unsupported, "<details><summary><b>2</b> needs SM90+ (a CUDA device)</summary>");
    const char *second = strstr(unsupported, "<details><summary><b>1</b> needs head_dim &lt;= 256");
    cr_expect(first && second && first < second, "one line per reason, the largest first: %s", unsupported);
    cr_expect_eq(count_occurrences(unsupported, "<details>"), 2);
    cr_expect(strstr(unsupported, "qwen3_tiny/attn=flash_attention_3,ce=eager/bf16/cpu<br>qwen3_moe_tiny/attn=flash_attention_3,moe=eager,ce=eager/bf16/cpu"),
              "its combos inside: %s", unsupported);
    free(unsupported);
    char *combos = section(html, "<h2 id=\"combos\"");
    cr_expect_null(strstr(combos, "flash_attention_3"), "not-supported combos are not rows of the combos table");
    free(combos);
    char *excluded = section(html, "<h2 id=\"excluded\"");
    cr_expect(strstr(excluded, "<details><summary><b>1</b> liger CE needs a CUDA device (suite exclusion)</summary>"), "%s", excluded);
    free(excluded);
    free(html);
    parity_results_release(&results);
    // a reason with more combos than are listed: the rest counted
    sample_results_build_large(&results, 650, 2);
    char path[128];
    snprintf(path, sizeof path, "%s/report.html", directory);
    cr_assert_null(parity_report_write_html(path, &results));
    html = read_text(directory, "report.html");
    cr_expect(strstr(html, "<details><summary><b>50</b> needs a CUDA device</summary>"), "5 models x 10");
    cr_expect(strstr(html, "<br><i>&hellip; and 38 more (results.json, or parity run --list, has each)</i>"), "12 listed");
    free(html);
    parity_results_release(&results);
    remove_directory(directory);
}

// Timing within noise is "same"; outside it, the ratio; both with the noise visible. summary.md
// claims a speed-up only outside noise.
typedef struct timing_case {
    const char *label;
    double eager_ms, eager_noise, combo_ms, combo_noise;
    const char *cell;      // the combo's "vs eager" cell in report.html
    const char *speedup;   // summary.md's speed-up cell of the group
} timing_case;

static const timing_case timing_cases[] = {
    {"2% faster, 5% noise each", 10.0, 0.05, 9.8, 0.05, "<td data-v=\"0.9800\">same \xc2\xb1" "7.1%</td>", "| within noise |"},
    {"40% faster, 3% + 4% noise", 10.0, 0.03, 6.0, 0.04, "<td class=\"faster\" data-v=\"0.6000\">0.60x \xc2\xb1" "5.0%</td>", "| 1.67x \xc2\xb1" "5.0% |"},
    {"10% slower, 1% noise", 10.0, 0.01, 11.0, 0.01, "<td class=\"slower\" data-v=\"1.1000\">1.10x \xc2\xb1" "1.4%</td>", "| eager |"},
    {"2.27x faster against a 14.8%-noise eager, 30% noise", 22.7, 0.148, 10.0, 0.3, "<td class=\"faster\" data-v=\"0.4405\">0.44x \xc2\xb1" "33.5%</td>",
     "| 2.27x \xc2\xb1" "33.5% |"},
    {"unknown noise counts as none", 10.0, NAN, 9.9, NAN, "<td class=\"faster\" data-v=\"0.9900\">0.99x \xc2\xb1" "0.0%</td>", "| 1.01x \xc2\xb1" "0.0% |"},
};

static void add_timed_combo(parity_results *results, const char *fields, bool baseline, double ms, double noise) {
    parity_combo_result *combo = parity_results_add_combo(results);
    cr_assert_not_null(combo);
    snprintf(combo->id, sizeof combo->id, "m/%s/bf16/cpu", fields);
    snprintf(combo->model, sizeof combo->model, "m");
    snprintf(combo->batch, sizeof combo->batch, "b");
    snprintf(combo->dtype, sizeof combo->dtype, "bf16");
    snprintf(combo->device, sizeof combo->device, "cpu");
    combo->is_eager_baseline = baseline;
    combo->status = PARITY_COMBO_PASS;
    combo->median_ms = ms;
    combo->noise = noise;
}

Test(reports, timing_is_same_within_noise_and_claims_speed_only_outside_it) {
    for (size_t i = 0; i < ROWS(timing_cases); i++) {
        const timing_case *row = &timing_cases[i];
        char directory[64];
        make_directory(directory, sizeof directory);
        parity_results results = {0};
        add_timed_combo(&results, "attn=eager", true, row->eager_ms, row->eager_noise);
        add_timed_combo(&results, "attn=sdpa", false, row->combo_ms, row->combo_noise);
        cr_assert_null(parity_reports_render_derived(directory, &results));
        char *html = read_text(directory, "report.html"), *md = read_text(directory, "summary.md");
        cr_expect(strstr(html, row->cell), "%s: %s", row->label, strstr(html, "attn=sdpa") ? strstr(html, "attn=sdpa") : html);
        cr_expect(strstr(md, row->speedup), "%s: %s", row->label, strstr(md, "## Speed"));
        free(html);
        free(md);
        parity_results_release(&results);
        remove_directory(directory);
    }
}

Test(reports, fastest_combo_is_claimed_only_beyond_the_runner_up_noise) {
    parity_results results = {0};
    add_timed_combo(&results, "attn=eager", true, 20.0, 0.02);
    add_timed_combo(&results, "attn=sdpa", false, 10.0, 0.05);
    add_timed_combo(&results, "attn=flash", false, 10.3, 0.05); // 3% slower than sdpa: within 7.1%
    parity_report_fastest ranking = parity_report_fastest_in_group(&results, &results.combos[0]);
    cr_expect_eq(ranking.fastest, &results.combos[1]);
    cr_expect_eq(ranking.runner_up, &results.combos[2]);
    cr_expect_not(ranking.significant, "within the two's combined noise");
    cr_expect_eq(ranking.tied, 1);
    results.combos[2].median_ms = 12.0; // 20% slower: beyond noise
    ranking = parity_report_fastest_in_group(&results, &results.combos[0]);
    cr_expect(ranking.significant);
    cr_expect_eq(ranking.tied, 0);
    cr_expect_float_eq(parity_report_combined_noise(&results.combos[1], &results.combos[2]), sqrt(0.005), 1e-12);
    cr_expect(parity_report_within_noise(1.04, 0.05) && !parity_report_within_noise(1.06, 0.05) && !parity_report_within_noise(NAN, 1));
    // summary.md names the tie
    char directory[64];
    make_directory(directory, sizeof directory);
    results.combos[2].median_ms = 10.3;
    cr_assert_null(parity_reports_render_derived(directory, &results));
    char *md = read_text(directory, "summary.md"), *html = read_text(directory, "report.html");
    cr_expect(strstr(md, "`m/attn=sdpa/bf16/cpu` (not significant: 1 other within noise) |"), "%s", strstr(md, "## Speed"));
    cr_expect(strstr(html, "fastest vs eager") == NULL, "no fastest claim in the verdict: %.400s", strstr(html, "id=\"verdict\""));
    cr_expect(strstr(html, "a clear fastest in 0 of 1 group"));
    free(md);
    free(html);
    parity_results_release(&results);
    remove_directory(directory);
}

Test(reports, report_html_of_650_combos_with_300_metrics_each_is_under_300_kb) {
    char directory[64], path[128];
    make_directory(directory, sizeof directory);
    parity_results results;
    sample_results_build_large(&results, 650, 300);
    snprintf(path, sizeof path, "%s/report.html", directory);
    cr_assert_null(parity_report_write_html(path, &results));
    struct stat info;
    cr_assert_eq(stat(path, &info), 0);
    cr_expect_lt(info.st_size, 300 * 1024, "report.html is %lld bytes", (long long)info.st_size);
    char *html = read_text(directory, "report.html");
    const char *verdict = strstr(html, "id=\"verdict\">"), *grid = strstr(html, "<h2 id=\"grid\"");
    cr_expect(verdict && grid && verdict < grid && verdict - html < 8000, "the verdict comes first");
    cr_expect(strstr(verdict, ">590 pass, 10 fail &middot; 50 not supported &middot; worst ratio 4.99"), "%.200s", verdict);
    char *grid_text = section(html, "<h2 id=\"grid\"");
    cr_expect_eq(count_occurrences(grid_text, "<tr>"), 1 + 10 + 13, "a header and one row per field value");
    free(grid_text);
    expect_no_network_references(html);
    free(html);
    parity_results_release(&results);
    remove_directory(directory);
}

Test(reports, empty_results_render_without_charts_or_errors) {
    char directory[64], nested[128];
    make_directory(directory, sizeof directory);
    snprintf(nested, sizeof nested, "%s/a/b", directory);
    parity_results results = {0};
    snprintf(results.context.suite, sizeof results.context.suite, "empty");
    cr_assert_null(parity_reports_render_all(nested, &results), "the directory and its parents are created");
    cr_expect_eq(directory_entries(nested), 4);
    char *md = read_text(nested, "summary.md");
    cr_expect(strstr(md, "**0 combos: 0 pass, 0 fail, 0 not supported, 0 error, 0 excluded**"));
    free(md);
    char *html = read_text(nested, "report.html");
    cr_expect(strstr(html, "No combo ran"));
    cr_expect_null(strstr(html, "<svg"));
    free(html);
    remove_directory(directory);
}

Test(reports, rendering_leaves_only_the_four_reports_and_no_temporary_files) {
    char directory[64], temporary[64];
    make_directory(directory, sizeof directory);
    make_directory(temporary, sizeof temporary);
    cr_assert_eq(setenv("TMPDIR", temporary, 1), 0); // no temporary file may be left here
    parity_results results;
    render_sample(directory, &results);
    const char *expected[] = {"results.json", "junit.xml", "summary.md", "report.html"};
    cr_expect_eq(directory_entries(directory), 4);
    for (size_t i = 0; i < ROWS(expected); i++) {
        char path[128];
        snprintf(path, sizeof path, "%s/%s", directory, expected[i]);
        cr_expect_eq(access(path, R_OK), 0, "%s", path);
    }
    cr_expect_eq(directory_entries(temporary), 0, "nothing left in TMPDIR");
    parity_results_release(&results);
    remove_directory(directory);
    remove_directory(temporary);
}

// ---- parity report DIR ----

Test(reports, parity_report_rerenders_the_same_reports_from_results_json) {
    char directory[64], arguments[128];
    make_directory(directory, sizeof directory);
    parity_results results;
    render_sample(directory, &results);
    const char *derived[] = {"junit.xml", "summary.md", "report.html"};
    char *before[3], *json_before = read_text(directory, "results.json");
    for (size_t i = 0; i < 3; i++) {
        before[i] = read_text(directory, derived[i]);
        char path[128];
        snprintf(path, sizeof path, "%s/%s", directory, derived[i]);
        cr_assert_eq(unlink(path), 0);
    }
    snprintf(arguments, sizeof arguments, "report %s", directory);
    command_result result = run_parity(arguments);
    cr_expect_eq(result.exit_code, 0, "%s", result.output);
    cr_expect(strstr(result.output, "12 combos: 5 pass, 2 fail, 3 not supported, 1 error, 1 excluded"), "%s", result.output);
    free(result.output);
    for (size_t i = 0; i < 3; i++) {
        char *after = read_text(directory, derived[i]);
        cr_expect_str_eq(after, before[i], "%s rendered from results.json differs from the run's", derived[i]);
        free(after);
        free(before[i]);
    }
    char *json_after = read_text(directory, "results.json");
    cr_expect_str_eq(json_after, json_before, "results.json is not rewritten");
    free(json_after);
    free(json_before);
    cr_expect_eq(directory_entries(directory), 4);
    parity_results_release(&results);
    remove_directory(directory);
}

typedef struct report_cli_case {
    const char *label;
    const char *arguments;   // %s: the directory
    const char *results;     // written to DIR/results.json first; NULL: none
    int exit_code;
    const char *output;      // %s: the directory
} report_cli_case;

static const report_cli_case report_cli_cases[] = {
    {"missing results.json", "report %s", NULL, 3, "%s/results.json: cannot open"},
    {"truncated results.json", "report %s", "{\"context\": {\"schema_version\": 1, \"suite\": \"smo", 3, "%s/results.json: not valid JSON"},
    {"schema mismatch", "report %s", "{\"context\": {\"schema_version\": 2}, \"combos\": []}", 3, "%s/results.json: field 'context.schema_version' is 2"},
    {"no directory", "report", NULL, 2, "usage: parity report DIR"},
    {"two directories", "report %s %s", NULL, 2, "one directory"},
    {"unknown option", "report --force %s", NULL, 2, "unknown option '--force'"},
    {"help", "report --help", NULL, 0, "re-renders the reports of a run"},
};

Test(reports, parity_report_exit_codes) {
    for (size_t i = 0; i < ROWS(report_cli_cases); i++) {
        const report_cli_case *row = &report_cli_cases[i];
        char directory[64], arguments[256], expected[256];
        make_directory(directory, sizeof directory);
        if (row->results) write_text(directory, "results.json", row->results);
        snprintf(arguments, sizeof arguments, row->arguments, directory, directory);
        snprintf(expected, sizeof expected, row->output, directory);
        command_result result = run_parity(arguments);
        cr_expect_eq(result.exit_code, row->exit_code, "%s: exit %d: %s", row->label, result.exit_code, result.output);
        cr_expect(strcasestr(result.output, expected), "%s: expected '%s' in: %s", row->label, expected, result.output);
        cr_expect_eq(directory_entries(directory), row->results ? 1 : 0, "%s: nothing written on failure", row->label);
        free(result.output);
        remove_directory(directory);
    }
}
