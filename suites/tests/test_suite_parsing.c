// test_suite_parsing.c: suite files. The shipped suites load with the values they state; every kind
// of broken suite is rejected with a CONFIG error whose message names file:line and the problem.
// Suites are parsed from text with a path under suites/, so relative paths resolve as in a real file.
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness/suite.h"
#include "ops/core/clock.h"

#define ROWS(array) (sizeof(array) / sizeof((array)[0]))

// 70 nested flow lists, past the 64 levels a YAML file may nest (harness/yaml_limits.h).
#define OPEN10 "[[[[[[[[[["
#define CLOSE10 "]]]]]]]]]]"
#define NESTED_70 OPEN10 OPEN10 OPEN10 OPEN10 OPEN10 OPEN10 OPEN10 CLOSE10 CLOSE10 CLOSE10 CLOSE10 CLOSE10 CLOSE10 CLOSE10
#define ATTN_15 "attn, attn, attn, attn, attn, attn, attn, attn, attn, attn, attn, attn, attn, attn, attn"

// A valid model entry, reused by the bad cases so that each breaks one thing only.
#define MODEL "  - {name: qwen3_tiny, checkpoint: ../golden/upstream/qwen3_tiny,\n" \
              "     batches: [{name: plain, file: ../golden/upstream/qwen3_tiny/batch.safetensors}]}\n"

Test(suite_parsing, shipped_suites_load_with_what_they_say) {
    static const struct {
        const char *path, *name;
        size_t models, dtypes, modes;
        parity_tolerance_rule rule;
        const char *device;
    } rows[] = {
        {"suites/smoke.yaml", "smoke", 9, 2, 0, PARITY_RULE_PARITY, "cpu"},
        {"suites/gpu-nightly.yaml", "gpu-nightly", 7, 1, 0, PARITY_RULE_PARITY, "cuda"},
        {"suites/veomni-compat.yaml", "veomni-compat", 4, 1, 21, PARITY_RULE_VEOMNI, "best"},
        {"suites/tests-visibility.yaml", "tests-visibility", 2, 2, 0, PARITY_RULE_PARITY, "cpu"},
    };
    for (size_t row = 0; row < ROWS(rows); row++) {
        parity_suite *suite = NULL;
        parity_error *error = parity_suite_load(rows[row].path, &suite);
        char message[2048] = "";
        if (error) parity_error_format(error, message, sizeof message);
        cr_assert_null(error, "%s: %s", rows[row].path, message);
        cr_expect_str_eq(suite->name, rows[row].name);
        cr_expect_eq(suite->model_count, rows[row].models, "%s models", rows[row].path);
        cr_expect_eq(suite->dtype_count, rows[row].dtypes, "%s dtypes", rows[row].path);
        cr_expect_eq(suite->mode_count, rows[row].modes, "%s modes", rows[row].path);
        cr_expect_eq(suite->tolerance, rows[row].rule, "%s tolerance", rows[row].path);
        cr_expect_str_eq(suite->devices[0], rows[row].device, "%s device", rows[row].path);
        cr_expect_eq(suite->ranks, 1);
        parity_suite_free(suite);
    }
}

Test(suite_parsing, adaptive_repeats_read_a_percentage_and_default_their_caps) {
    static const struct {
        const char *yaml;
        double noise, seconds;
        int most;
    } rows[] = {
        {"adaptive_repeats: {noise: 3%, max: 9, seconds: 0.5}", 0.03, 0.5, 9},
        {"adaptive_repeats: {noise: 0.05}", 0.05, 2, 12}, // max 4 x repeats (3), 2 s
    };
    for (size_t i = 0; i < ROWS(rows); i++) {
        char text[1024];
        snprintf(text, sizeof text, "dtypes: bf16\ndevices: cpu\n%s\nmodels:\n" MODEL, rows[i].yaml);
        parity_suite *suite = NULL;
        parity_error *error = parity_suite_parse(text, strlen(text), "suites/x.yaml", &suite);
        cr_assert_null(error, "%s: %s", rows[i].yaml, error ? parity_error_message(error) : "");
        cr_expect_float_eq(suite->adaptive.noise_target, rows[i].noise, 1e-12, "%s", rows[i].yaml);
        cr_expect_float_eq(suite->adaptive.time_cap_ms, rows[i].seconds * 1e3, 1e-9, "%s", rows[i].yaml);
        cr_expect_eq(suite->adaptive.max_steps, rows[i].most, "%s", rows[i].yaml);
        parity_suite_free(suite);
    }
}

Test(suite_parsing, gpu_nightly_is_packed_two_documents_of_1024_in_bf16_with_drawn_weights) {
    parity_suite *suite = NULL;
    cr_assert_null(parity_suite_load("suites/gpu-nightly.yaml", &suite));
    cr_assert_eq(suite->batch_count, 1);
    const parity_suite_batch *batch = &suite->batches[0];
    cr_expect_eq(batch->kind, PARITY_SUITE_BATCH_PACKED);
    cr_expect_eq(batch->rows, 1);
    cr_expect_eq(batch->length, 2048);
    cr_assert_eq(batch->document_count, 2);
    cr_expect_eq(batch->documents[0], 1024);
    cr_expect_eq(batch->documents[1], 1024);
    cr_expect_eq(suite->dtypes[0], PARITY_BF16);
    cr_expect_eq(suite->jitter_runs, 8, "docs/tolerance.md: 3 jittered runs fail honest routed combos on the H200");
    for (size_t m = 0; m < suite->model_count; m++) { // the hybrid toys time one step (their steps take ~1 s)
        bool hybrid = strncmp(suite->models[m].name, "qwen3_5", 7) == 0;
        cr_expect_eq(parity_suite_model_warmup(suite, &suite->models[m]), hybrid ? 0 : 2, "%s", suite->models[m].name);
        cr_expect_eq(parity_suite_model_repeats(suite, &suite->models[m]), hybrid ? 1 : 5, "%s", suite->models[m].name);
    }
    for (size_t m = 0; m < suite->model_count; m++) {
        cr_expect_str_eq(suite->models[m].checkpoint, "", "%s draws its weights", suite->models[m].name);
        cr_expect(strstr(suite->models[m].config, "suites/configs/") != NULL, "%s", suite->models[m].config);
    }
    parity_suite_free(suite);
}

Test(suite_parsing, relative_paths_resolve_from_the_suite_folder_and_defaults_apply) {
    static const char text[] =
        "dtypes: bf16\n"
        "devices: [cpu, best]\n"
        "models:\n" MODEL
        "  - {name: drawn, config: configs/qwen3_toy/config.json, seed: 7, initializer_range: 0.5,\n"
        "     batches: [{name: packed, packed: {documents: [3, 5], rows: 2, seed: 1}}]}\n";
    parity_suite *suite = NULL;
    parity_error *error = parity_suite_parse(text, strlen(text), "suites/inline.yaml", &suite);
    cr_assert_null(error, "%s", error ? parity_error_message(error) : "");
    cr_expect_str_eq(suite->name, "inline", "the name defaults to the file name");
    cr_expect_str_eq(suite->models[0].checkpoint, "golden/upstream/qwen3_tiny", "'suites/../' is folded");
    cr_expect_str_eq(suite->models[0].batches[0].file, "golden/upstream/qwen3_tiny/batch.safetensors");
    cr_expect_str_eq(suite->models[1].config, "suites/configs/qwen3_toy/config.json");
    cr_expect_eq(suite->models[1].seed, 7);
    cr_expect_eq(suite->models[1].initializer_range, 0.5);
    const parity_suite_batch *packed = &suite->models[1].batches[0];
    cr_expect_eq(packed->kind, PARITY_SUITE_BATCH_PACKED);
    cr_expect_eq(packed->rows, 2);
    cr_expect_eq(packed->length, 8, "a packed row is as long as its documents");
    cr_expect_eq(suite->warmup, 1);
    cr_expect_eq(suite->repeats, 3);
    cr_expect_eq(suite->jitter_runs, PARITY_JITTER_RUNS, "no jitter_runs: the default");
    cr_expect_eq(suite->adaptive.noise_target, 0, "no adaptive_repeats: off");
    cr_expect_eq(suite->tolerance, PARITY_RULE_PARITY);
    cr_expect_eq(suite->device_count, 2);
    cr_expect_not(suite->sweep_given, "no sweep: every field the model uses");
    parity_suite_free(suite);
}

Test(suite_parsing, ranks_above_one_point_to_the_layouts_with_their_line) {
    static const char text[] = "dtypes: bf16\ndevices: cpu\nranks: 4\nmodels:\n" MODEL;
    parity_suite *suite = NULL;
    cr_assert_null(parity_suite_parse(text, strlen(text), "suites/ranks.yaml", &suite));
    parity_error *error = parity_suite_check_ranks(suite);
    cr_assert_not_null(error);
    cr_expect_eq(parity_error_kind_of(error), PARITY_ERROR_CONFIG);
    char message[512];
    parity_error_format(error, message, sizeof message);
    cr_expect(strstr(message, "suites/ranks.yaml:3: ranks: 4: the ranks come from the layouts: name them under parallel:"), "%s", message);
    parity_error_free(error);
    parity_suite_free(suite);
}

// Every bad file: its text and the fragments the error must contain (each with file:line).
Test(suite_parsing, bad_files_name_file_line_and_problem) {
    static const struct {
        const char *what, *text, *expected[3];
    } rows[] = {
        {"malformed YAML", "dtypes: [bf16\ndevices: cpu\n", {"bad.yaml:2:8: malformed YAML: did not find expected ',' or ']'"}},
        {"empty file", "", {"bad.yaml: the file is empty"}},
        {"not a mapping", "- a\n- b\n", {"bad.yaml:1: a suite must be a mapping, found a list"}},
        {"unknown key", "dtypes: bf16\ndevices: cpu\ndtype: fp32\nmodels:\n" MODEL, {"bad.yaml:3: unknown key 'dtype' in the suite"}},
        {"duplicate key", "dtypes: bf16\ndevices: cpu\ndtypes: fp32\nmodels:\n" MODEL,
         {"bad.yaml:3: duplicate key 'dtypes' in the suite (first at line 1)"}},
        {"bad dtype", "dtypes: [bf16, fp8]\ndevices: cpu\nmodels:\n" MODEL, {"bad.yaml:1: dtype 'fp8' is not one of fp64, fp32, bf16"}},
        {"bad device", "dtypes: bf16\ndevices:\n  - cpu\n  - tpu\nmodels:\n" MODEL, {"bad.yaml:4: device 'tpu' is not one of cpu, cuda, best"}},
        {"no dtypes", "devices: cpu\nmodels:\n" MODEL, {"bad.yaml:1: the suite needs dtypes"}},
        {"no models", "dtypes: bf16\ndevices: cpu\n", {"bad.yaml:1: the suite needs models"}},
        {"bad tolerance", "dtypes: bf16\ndevices: cpu\ntolerance: loose\nmodels:\n" MODEL, {"bad.yaml:3: tolerance must be parity or veomni"}},
        {"zero repeats", "dtypes: bf16\ndevices: cpu\nrepeats: 0\nmodels:\n" MODEL, {"bad.yaml:3: repeats 0 is outside 1..100000"}},
        {"zero jitter runs", "dtypes: bf16\ndevices: cpu\njitter_runs: 0\nmodels:\n" MODEL, {"bad.yaml:3: jitter_runs 0 is outside 1..64"}},
        {"too many jitter runs", "dtypes: bf16\ndevices: cpu\njitter_runs: 65\nmodels:\n" MODEL, {"bad.yaml:3: jitter_runs 65 is outside 1..64"}},
        {"model repeats 0", "dtypes: bf16\ndevices: cpu\nmodels:\n  - {name: qwen3_tiny, checkpoint: ../golden/upstream/qwen3_tiny, repeats: 0,\n"
                            "     batches: [{name: plain, file: ../golden/upstream/qwen3_tiny/batch.safetensors}]}\n",
         {"bad.yaml:4: repeats 0 is outside 1..100000"}},
        {"model warmup not a number", "dtypes: bf16\ndevices: cpu\nmodels:\n  - {name: qwen3_tiny, checkpoint: ../golden/upstream/qwen3_tiny, warmup: x,\n"
                            "     batches: [{name: plain, file: ../golden/upstream/qwen3_tiny/batch.safetensors}]}\n",
         {"bad.yaml:4: warmup 'x' is not an integer"}},
        {"adaptive without noise", "dtypes: bf16\ndevices: cpu\nadaptive_repeats: {max: 9}\nmodels:\n" MODEL,
         {"bad.yaml:3: adaptive_repeats needs noise"}},
        {"adaptive noise 2", "dtypes: bf16\ndevices: cpu\nadaptive_repeats: {noise: 2}\nmodels:\n" MODEL,
         {"bad.yaml:3: adaptive_repeats noise '2' is not a fraction in (0, 1)"}},
        {"adaptive unknown key", "dtypes: bf16\ndevices: cpu\nadaptive_repeats: {noise: 3%, tries: 4}\nmodels:\n" MODEL,
         {"bad.yaml:3:", "tries"}},
        {"ranks not a number", "dtypes: bf16\ndevices: cpu\nranks: two\nmodels:\n" MODEL, {"bad.yaml:3: ranks 'two' is not an integer"}},
        {"unknown sweep field", "dtypes: bf16\ndevices: cpu\nsweep: [attn, flash]\nmodels:\n" MODEL,
         {"bad.yaml:3: sweep: 'flash' is not a kernel-selection field"}},
        {"model without weights", "dtypes: bf16\ndevices: cpu\nmodels:\n  - name: m\n    batches: [{name: p, plain: {rows: 1, length: 8, seed: 0}}]\n",
         {"bad.yaml:4: model 'm' needs exactly one of checkpoint"}},
        {"missing checkpoint", "dtypes: bf16\ndevices: cpu\nmodels:\n  - name: m\n    checkpoint: nowhere\n"
                               "    batches: [{name: p, plain: {rows: 1, length: 8, seed: 0}}]\n",
         {"bad.yaml:5: checkpoint directory suites/nowhere does not exist"}},
        {"config without seed", "dtypes: bf16\ndevices: cpu\nmodels:\n  - name: m\n    config: configs/qwen3_toy/config.json\n"
                                "    batches: [{name: p, plain: {rows: 1, length: 8, seed: 0}}]\n",
         {"bad.yaml:5: model 'm' draws its weights from config: it needs a seed"}},
        {"slash in a model name", "dtypes: bf16\ndevices: cpu\nmodels:\n  - {name: a/b, config: configs/qwen3_toy/config.json, seed: 1,\n"
                                  "     batches: [{name: p, plain: {rows: 1, length: 8, seed: 0}}]}\n",
         {"bad.yaml:4: model name 'a/b' contains '/'"}},
        {"duplicate model", "dtypes: bf16\ndevices: cpu\nmodels:\n" MODEL MODEL,
         {"bad.yaml:6: model name 'qwen3_tiny' is used twice (first at line 4)"}},
        {"no batches anywhere", "dtypes: bf16\ndevices: cpu\nmodels:\n  - {name: m, config: configs/qwen3_toy/config.json, seed: 1}\n",
         {"bad.yaml:4: model 'm' has no batches"}},
        {"batch of two kinds", "dtypes: bf16\ndevices: cpu\nbatches:\n  - name: b\n    plain: {rows: 1, length: 8, seed: 0}\n"
                               "    packed: {documents: [4, 4], seed: 0}\nmodels:\n" MODEL,
         {"bad.yaml:4: batch 'b' needs exactly one of file, plain, packed (found 2)"}},
        {"packed without seed", "dtypes: bf16\ndevices: cpu\nbatches:\n  - name: b\n    packed: {documents: [4, 4]}\nmodels:\n" MODEL,
         {"bad.yaml:5: packed batch needs a seed"}},
        {"tiny packed document", "dtypes: bf16\ndevices: cpu\nbatches:\n  - {name: b, packed: {documents: [4, 1], seed: 0}}\nmodels:\n" MODEL,
         {"bad.yaml:4: a packed document length 1 is outside 2..16777216"}},
        {"plain without length", "dtypes: bf16\ndevices: cpu\nbatches:\n  - {name: b, plain: {rows: 2, seed: 0}}\nmodels:\n" MODEL,
         {"bad.yaml:4: plain batch needs length"}},
        {"missing batch file", "dtypes: bf16\ndevices: cpu\nbatches:\n  - {name: b, file: none.safetensors}\nmodels:\n" MODEL,
         {"bad.yaml:4: batch file suites/none.safetensors does not exist"}},
        {"exclusion without reason", "dtypes: bf16\ndevices: cpu\nexclude:\n  - match: attn=sdpa\nmodels:\n" MODEL,
         {"bad.yaml:4: exclusion 'attn=sdpa' needs a reason"}},
        {"exclusion on an unknown key", "dtypes: bf16\ndevices: cpu\nexclude:\n  - {match: 'attention=sdpa', reason: r}\nmodels:\n" MODEL,
         {"bad.yaml:4: exclusion key 'attention' is neither a kernel-selection field"}},
        {"exclusion term without =", "dtypes: bf16\ndevices: cpu\nexclude:\n  - {match: sdpa, reason: r}\nmodels:\n" MODEL,
         {"bad.yaml:4: exclusion term 'sdpa' is not key=value"}},
        {"modes and sweep", "dtypes: bf16\ndevices: cpu\nsweep: attn\nmodes:\n  - {name: a, ops: {attn: eager}}\nmodels:\n" MODEL,
         {"bad.yaml:5: give either modes or sweep, not both"}},
        {"mode with an unknown field", "dtypes: bf16\ndevices: cpu\nmodes:\n  - {name: a, ops: {attention: eager}}\nmodels:\n" MODEL,
         {"bad.yaml:4: mode 'a': 'attention' is not a kernel-selection field"}},
        {"mode with a bad backend", "dtypes: bf16\ndevices: cpu\nmodes:\n  - {name: a, backend: torch, ops: {attn: eager}}\nmodels:\n" MODEL,
         {"bad.yaml:4: mode backend 'torch' is not hf or veomni"}},
        {"a required field twice", "dtypes: bf16\ndevices: cpu\nmodes:\n  - {name: a, ops: {attn: eager}, requires: [attn, moe, attn]}\n"
                                   "models:\n" MODEL,
         {"bad.yaml:4: mode requires: field 'attn_implementation' is listed twice"}},
        {"15 required fields (past the 14 fields)", "dtypes: bf16\ndevices: cpu\nmodes:\n"
                                                    "  - {name: a, ops: {attn: eager}, requires: [" ATTN_15 "]}\nmodels:\n" MODEL,
         {"bad.yaml:4: mode requires: field 'attn_implementation' is listed twice"}},
        {"nested too deep", "dtypes: bf16\ndevices: cpu\ndescription: " NESTED_70 "\nmodels:\n" MODEL,
         {"bad.yaml:3:77: the YAML nests deeper than 64 levels"}},
        {"two problems at once", "dtypes: [fp8]\ndevices: [tpu]\nmodels:\n" MODEL,
         {"2 problems", "bad.yaml:1: dtype 'fp8'", "bad.yaml:2: device 'tpu'"}},
    };
    for (size_t row = 0; row < ROWS(rows); row++) {
        parity_suite *suite = NULL;
        parity_error *error = parity_suite_parse(rows[row].text, strlen(rows[row].text), "suites/bad.yaml", &suite);
        cr_assert_not_null(error, "%s: accepted", rows[row].what);
        cr_expect_null(suite, "%s: no suite on error", rows[row].what);
        cr_expect_eq(parity_error_kind_of(error), PARITY_ERROR_CONFIG, "%s: a config error (exit 2)", rows[row].what);
        char message[4096];
        parity_error_format(error, message, sizeof message);
        for (size_t i = 0; i < 3 && rows[row].expected[i]; i++)
            cr_expect(strstr(message, rows[row].expected[i]) != NULL, "%s: expected \"%s\" in: %s", rows[row].what,
                      rows[row].expected[i], message);
        parity_error_free(error);
    }
}

// Hostile sizes are refused or read in time linear in the file: 100k nested lists (200 KB) took
// over 120 s in libyaml before the depth bound; a mapping of 60k keys took about 17 s while every
// key was compared with every earlier one for duplicates.
Test(suite_parsing, very_deep_or_very_wide_files_are_answered_quickly) {
    enum { LEVELS = 100000, KEYS = 60000 };
    static const struct {
        const char *what;
        bool deep;
        const char *expected;
        double seconds;
    } rows[] = {
        {"100k nested lists", true, "big.yaml:2:77: the YAML nests deeper than 64 levels", 2.0},
        {"60k keys", false, "big.yaml has 60003 problems:\n  suites/big.yaml:2: unknown key 'key0' in the suite", 8.0},
    };
    for (size_t row = 0; row < ROWS(rows); row++) {
        size_t capacity = 64 + (rows[row].deep ? 2 * (size_t)LEVELS : 16 * (size_t)KEYS), used = 0;
        char *text = malloc(capacity);
        cr_assert_not_null(text);
        used += (size_t)snprintf(text + used, capacity - used, "suite: big\n");
        if (rows[row].deep) {
            used += (size_t)snprintf(text + used, capacity - used, "description: ");
            memset(text + used, '[', LEVELS);
            memset(text + used + LEVELS, ']', LEVELS);
            used += 2 * (size_t)LEVELS;
        } else {
            for (int key = 0; key < KEYS; key++) used += (size_t)snprintf(text + used, capacity - used, "key%d: 1\n", key);
        }
        double started = parity_monotonic_seconds();
        parity_suite *suite = NULL;
        parity_error *error = parity_suite_parse(text, used, "suites/big.yaml", &suite);
        double elapsed = parity_monotonic_seconds() - started;
        free(text);
        cr_assert_not_null(error, "%s: accepted", rows[row].what);
        cr_expect_eq(parity_error_kind_of(error), PARITY_ERROR_CONFIG, "%s: a config error (exit 2)", rows[row].what);
        cr_expect(strstr(parity_error_message(error), rows[row].expected) != NULL, "%s: expected \"%s\" in: %.300s",
                  rows[row].what, rows[row].expected, parity_error_message(error));
        cr_expect(elapsed < rows[row].seconds, "%s: %.2f s (at most %.0f s)", rows[row].what, elapsed, rows[row].seconds);
        parity_error_free(error);
    }
}

Test(suite_parsing, locating_a_suite_by_name_or_path) {
    char path[256];
    cr_expect_null(parity_suite_locate("smoke", "suites", path, sizeof path));
    cr_expect_str_eq(path, "suites/smoke.yaml");
    cr_expect_null(parity_suite_locate("suites/veomni-compat.yaml", "suites", path, sizeof path));
    parity_error *error = parity_suite_locate("nightly-typo", "suites", path, sizeof path);
    cr_assert_not_null(error);
    cr_expect_eq(parity_error_kind_of(error), PARITY_ERROR_USAGE);
    cr_expect(strstr(parity_error_message(error), "suites/nightly-typo.yaml does not exist") != NULL, "%s",
              parity_error_message(error));
    parity_error_free(error);
}
