// test_config_yaml.c: reading model.ops_implementation from VeOmni YAML files: the seed's Full
// Config Example, files without the block, and broken files, whose messages must point at the right
// file:line. Files are written with mkstemp because Criterion runs tests in parallel processes.
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness/config/ops_config.h"
#include "harness/config/ops_override.h"
#include "harness/config/yaml_ops.h"
#include "ops/core/clock.h"

#define ROWS(array) (sizeof(array) / sizeof((array)[0]))

// 70 nested flow lists, past the 64 levels a YAML file may nest (harness/yaml_limits.h).
#define OPEN10 "[[[[[[[[[["
#define CLOSE10 "]]]]]]]]]]"
#define NESTED_70 OPEN10 OPEN10 OPEN10 OPEN10 OPEN10 OPEN10 OPEN10 CLOSE10 CLOSE10 CLOSE10 CLOSE10 CLOSE10 CLOSE10 CLOSE10

// seeds/000, "Full Config Example", verbatim.
static const char full_config_example[] =
    "model:\n"
    "  ops_implementation:\n"
    "    attn_implementation: flash_attention_2\n"
    "    moe_implementation: fused_triton\n"
    "    cross_entropy_loss_implementation: liger_kernel\n"
    "    rms_norm_implementation: liger_kernel\n"
    "    swiglu_mlp_implementation: eager           # disable Liger for MLP only\n"
    "    rotary_pos_emb_implementation: liger_kernel\n"
    "    load_balancing_loss_implementation: triton\n";

// Writes `text` to a fresh temporary file; its path goes into `path` (at least 64 bytes).
static void write_temporary(const char *text, char *path) {
    strcpy(path, "/tmp/parity-test-config-XXXXXX");
    int descriptor = mkstemp(path);
    cr_assert(descriptor >= 0, "mkstemp failed");
    size_t length = strlen(text);
    cr_assert_eq(write(descriptor, text, length), (ssize_t)length, "writing %s", path);
    close(descriptor);
}

Test(config_yaml, reads_the_full_config_example) {
    static const struct {
        const char *key, *value;
        int line;
    } expected[] = {
        {"attn_implementation", "flash_attention_2", 3},
        {"moe_implementation", "fused_triton", 4},
        {"cross_entropy_loss_implementation", "liger_kernel", 5},
        {"rms_norm_implementation", "liger_kernel", 6},
        {"swiglu_mlp_implementation", "eager", 7},
        {"rotary_pos_emb_implementation", "liger_kernel", 8},
        {"load_balancing_loss_implementation", "triton", 9},
    };
    char path[64];
    write_temporary(full_config_example, path);
    parity_ops_settings settings = {0};
    parity_error *error = parity_yaml_ops_read_file(path, &settings);
    cr_assert_null(error, "%s", error ? parity_error_message(error) : "");
    cr_assert_eq(settings.count, ROWS(expected));
    for (size_t row = 0; row < ROWS(expected); row++) {
        cr_expect_str_eq(settings.items[row].key, expected[row].key);
        cr_expect_str_eq(settings.items[row].value, expected[row].value, "comments are not part of values");
        cr_expect_eq(settings.items[row].source.kind, PARITY_OPS_FROM_YAML);
        cr_expect_str_eq(settings.items[row].source.file, path);
        cr_expect_eq(settings.items[row].source.line, expected[row].line, "%s line", expected[row].key);
    }

    parity_ops_config_options options = parity_ops_config_options_default();
    options.modeling_backend = PARITY_MODELING_VEOMNI;
    options.skip_availability = true;
    parity_ops_config config;
    error = parity_ops_config_build(&settings, &options, &config);
    cr_expect_null(error, "the example is valid on cuda: %s", error ? parity_error_message(error) : "");
    const parity_ops_selection *swiglu = parity_ops_config_find(&config, "swiglu_mlp_implementation");
    cr_expect_str_eq(swiglu->backend, "eager");
    char source[600], expected_source[600];
    snprintf(expected_source, sizeof expected_source, "%s:7", path);
    cr_expect_str_eq(parity_ops_source_format(&swiglu->source, source, sizeof source), expected_source);
    cr_expect_str_eq(parity_ops_config_find(&config, "attn")->resolved, "veomni_flash_attention_2_with_sp");
    cr_expect_eq(parity_ops_config_find(&config, "gdr")->source.kind, PARITY_OPS_FROM_DEFAULT);
    parity_error_free(error);
    parity_ops_config_release(&config);

    // On npu the explicit GPU defaults of the example are normalized.
    options.device = (parity_device){PARITY_DEVICE_NPU, 0};
    error = parity_ops_config_build(&settings, &options, &config);
    cr_expect_str_eq(parity_ops_config_find(&config, "rms_norm")->backend, "npu");
    cr_expect_str_eq(parity_ops_config_find(&config, "moe")->backend, "fused_npu");
    cr_expect_str_eq(parity_ops_config_find(&config, "lb_loss")->backend, "eager");
    parity_error_free(error);
    parity_ops_config_release(&config);
    parity_ops_settings_free(&settings);
    unlink(path);
}

Test(config_yaml, files_without_the_block_mean_all_defaults) {
    static const char *const texts[] = {
        "",
        "# only a comment\n",
        "train:\n  lr: 1.0e-5\ndata:\n  train_path: /data\n",
        "model:\n  model_path: /models/qwen3\n",
        "model:\n  ops_implementation:\n",
        "model:\n  ops_implementation: {}\n",
        "model:\n  ops_implementation: ~\n",
    };
    for (size_t row = 0; row < ROWS(texts); row++) {
        char path[64];
        write_temporary(texts[row], path);
        parity_ops_settings settings = {0};
        parity_error *error = parity_yaml_ops_read_file(path, &settings);
        cr_expect_null(error, "row %zu: %s", row, error ? parity_error_message(error) : "");
        cr_expect_eq(settings.count, 0, "row %zu", row);
        parity_error_free(error);
        parity_ops_settings_free(&settings);
        unlink(path);
    }
}

Test(config_yaml, other_keys_are_ignored_and_quoted_values_read) {
    char path[64];
    write_temporary("train:\n  ops_implementation:\n    foo: bar\n"
                    "model:\n  model_path: x\n  ops_implementation:\n    attn_implementation: \"sdpa\"\n"
                    "    moe_implementation: 'eager'\n",
                    path);
    parity_ops_settings settings = {0};
    parity_error *error = parity_yaml_ops_read_file(path, &settings);
    cr_assert_null(error, "%s", error ? parity_error_message(error) : "");
    cr_assert_eq(settings.count, 2);
    cr_expect_str_eq(settings.items[0].value, "sdpa");
    cr_expect_eq(settings.items[0].source.line, 7);
    cr_expect_str_eq(settings.items[1].value, "eager");
    parity_ops_settings_free(&settings);
    unlink(path);
}

Test(config_yaml, broken_files_name_file_line_and_key) {
    static const struct {
        const char *name;
        const char *text;
        parity_error_kind kind;
        const char *expected[2]; // printf patterns, %s = the file's path
    } rows[] = {
        {"unclosed bracket",
         "model:\n  ops_implementation:\n    attn_implementation: [eager\n    moe_implementation: eager\n",
         PARITY_ERROR_DATA, {"did not find expected ',' or ']'", "started at %s:3:"}},
        {"tab indentation", "model:\n  ops_implementation:\n\tattn_implementation: eager\n", PARITY_ERROR_DATA,
         {"%s:3:1: found character that cannot start any token", NULL}},
        {"duplicate key",
         "model:\n  ops_implementation:\n    attn_implementation: eager\n    moe_implementation: eager\n"
         "    attn_implementation: sdpa\n",
         PARITY_ERROR_CONFIG, {"%s:5: duplicate key 'attn_implementation'", "(first at line 3)"}},
        {"sequence value", "model:\n  ops_implementation:\n    attn_implementation:\n      - eager\n      - sdpa\n",
         PARITY_ERROR_CONFIG, {"%s:4: model.ops_implementation.attn_implementation is a sequence", "expected a scalar"}},
        {"mapping value", "model:\n  ops_implementation:\n    moe_implementation: {kind: fused_triton}\n",
         PARITY_ERROR_CONFIG, {"%s:3: model.ops_implementation.moe_implementation is a mapping", NULL}},
        {"empty value", "model:\n  ops_implementation:\n    ce: x\n    rms_norm_implementation:\n",
         PARITY_ERROR_CONFIG, {"%s:4: model.ops_implementation.rms_norm_implementation has no value", NULL}},
        {"non-mapping block", "model:\n  ops_implementation: flash_attention_2\n", PARITY_ERROR_CONFIG,
         {"%s:2: model.ops_implementation is a scalar, expected a mapping", NULL}},
        {"list block", "model:\n  ops_implementation:\n    - attn_implementation: eager\n", PARITY_ERROR_CONFIG,
         {"%s:3: model.ops_implementation is a sequence", NULL}},
        {"scalar model", "model: qwen3\n", PARITY_ERROR_CONFIG, {"%s:1: 'model' is a scalar, expected a mapping", NULL}},
        {"top-level list", "- model\n- data\n", PARITY_ERROR_CONFIG, {"%s:1: the top level is a sequence", NULL}},
        {"duplicate model", "model:\n  ops_implementation:\n    attn_implementation: eager\nmodel:\n  x: 1\n",
         PARITY_ERROR_CONFIG, {"%s:4: duplicate key 'model'", "(first at line 1)"}},
        {"nested too deep", "model:\n  ops_implementation:\n    attn_implementation: " NESTED_70 "\n", PARITY_ERROR_DATA,
         {"%s:3:87: the YAML nests deeper than 64 levels", NULL}},
        {"two problems at once",
         "model:\n  ops_implementation:\n    attn_implementation: [a, b]\n    moe_implementation:\n",
         PARITY_ERROR_CONFIG, {"%s:3: model.ops_implementation.attn_implementation is a sequence",
                               "%s:4: model.ops_implementation.moe_implementation has no value"}},
    };
    for (size_t row = 0; row < ROWS(rows); row++) {
        char path[64];
        write_temporary(rows[row].text, path);
        parity_ops_settings settings = {0};
        parity_error *error = parity_yaml_ops_read_file(path, &settings);
        cr_expect_not_null(error, "%s: must fail", rows[row].name);
        if (error) {
            cr_expect_eq(parity_error_kind_of(error), rows[row].kind, "%s: kind %s", rows[row].name,
                         parity_error_kind_name(parity_error_kind_of(error)));
            for (int i = 0; i < 2; i++) {
                if (!rows[row].expected[i]) continue;
                char expected[256];
                snprintf(expected, sizeof expected, rows[row].expected[i], path);
                cr_expect(strstr(parity_error_message(error), expected) != NULL, "%s: \"%s\" lacks \"%s\"",
                          rows[row].name, parity_error_message(error), expected);
            }
        }
        cr_expect_eq(settings.count, 0, "%s: nothing read from a broken file", rows[row].name);
        parity_error_free(error);
        parity_ops_settings_free(&settings);
        unlink(path);
    }
}

// Hostile sizes are refused or read in time linear in the file: 100k nested lists (200 KB) took
// minutes in libyaml before the depth bound; an ops block of 60k keys took seconds while each key
// was compared with every earlier one for duplicates.
Test(config_yaml, very_deep_or_very_wide_files_are_answered_quickly) {
    enum { LEVELS = 100000, KEYS = 60000 };
    static const struct {
        const char *what;
        bool deep;
        const char *expected; // %s = the file's path; NULL: read
        double seconds;
    } rows[] = {
        {"100k nested lists", true, "%s:3:87: the YAML nests deeper than 64 levels", 2.0},
        {"60k keys", false, NULL, 8.0},
    };
    for (size_t row = 0; row < ROWS(rows); row++) {
        size_t capacity = 64 + (rows[row].deep ? 2 * (size_t)LEVELS : 32 * (size_t)KEYS), used = 0;
        char *text = malloc(capacity);
        cr_assert_not_null(text);
        used += (size_t)snprintf(text + used, capacity - used, "model:\n  ops_implementation:\n");
        if (rows[row].deep) {
            used += (size_t)snprintf(text + used, capacity - used, "    attn_implementation: ");
            memset(text + used, '[', LEVELS);
            memset(text + used + LEVELS, ']', LEVELS);
            used += 2 * (size_t)LEVELS;
            text[used] = '\0';
        } else {
            for (int key = 0; key < KEYS; key++) used += (size_t)snprintf(text + used, capacity - used, "    key%d: eager\n", key);
        }
        char path[64];
        write_temporary(text, path);
        free(text);
        double started = parity_monotonic_seconds();
        parity_ops_settings settings = {0};
        parity_error *error = parity_yaml_ops_read_file(path, &settings);
        double elapsed = parity_monotonic_seconds() - started;
        if (rows[row].expected) {
            char expected[256];
            snprintf(expected, sizeof expected, rows[row].expected, path);
            cr_expect_not_null(error, "%s: accepted", rows[row].what);
            if (error)
                cr_expect(strstr(parity_error_message(error), expected) != NULL, "%s: \"%s\" lacks \"%s\"", rows[row].what,
                          parity_error_message(error), expected);
        } else {
            cr_expect_null(error, "%s: %s", rows[row].what, error ? parity_error_message(error) : "");
            cr_expect_eq(settings.count, (size_t)KEYS, "%s", rows[row].what);
        }
        cr_expect(elapsed < rows[row].seconds, "%s: %.2f s (at most %.0f s)", rows[row].what, elapsed, rows[row].seconds);
        parity_error_free(error);
        parity_ops_settings_free(&settings);
        unlink(path);
    }
}

Test(config_yaml, unknown_fields_in_yaml_are_named_with_their_line) {
    char path[64];
    write_temporary("model:\n  ops_implementation:\n    attn_implementation: eager\n    attn: sdpa\n"
                    "    use_liger_kernel: true\n",
                    path);
    parity_ops_settings settings = {0};
    cr_assert_null(parity_yaml_ops_read_file(path, &settings));
    parity_ops_config_options options = parity_ops_config_options_default();
    options.skip_availability = true;
    parity_ops_config config;
    parity_error *error = parity_ops_config_build(&settings, &options, &config);
    cr_assert_not_null(error);
    char expected[2][256];
    snprintf(expected[0], sizeof expected[0], "%s:4: 'attn' is not a kernel selection knob", path);
    snprintf(expected[1], sizeof expected[1], "%s:5: 'use_liger_kernel' is not a kernel selection knob", path);
    for (int i = 0; i < 2; i++) {
        bool found = false;
        for (size_t p = 0; p < config.problem_count; p++) found = found || strstr(config.problems[p].message, expected[i]);
        cr_expect(found, "no problem \"%s\"", expected[i]);
    }
    cr_expect(strstr(config.problems[0].message, "in YAML write the full name attn_implementation") != NULL,
              "aliases are for --ops only: %s", config.problems[0].message);
    parity_error_free(error);
    parity_ops_config_release(&config);
    parity_ops_settings_free(&settings);
    unlink(path);
}

Test(config_yaml, command_line_overrides_yaml) {
    char path[64];
    write_temporary(full_config_example, path);
    parity_ops_settings settings = {0};
    cr_assert_null(parity_yaml_ops_read_file(path, &settings));
    cr_assert_null(parity_ops_override_parse("moe=eager", &settings));
    parity_ops_config_options options = parity_ops_config_options_default();
    options.skip_availability = true;
    parity_ops_config config;
    parity_error *error = parity_ops_config_build(&settings, &options, &config);
    cr_expect_null(error);
    const parity_ops_selection *moe = parity_ops_config_find(&config, "moe");
    cr_expect_str_eq(moe->requested, "eager");
    cr_expect_eq(moe->source.kind, PARITY_OPS_FROM_COMMAND_LINE);
    char expected_note[256];
    snprintf(expected_note, sizeof expected_note, "--ops overrides 'fused_triton' from %s:4", path);
    cr_expect(strstr(moe->notes, expected_note) != NULL, "notes: %s", moe->notes);
    parity_error_free(error);
    parity_ops_config_release(&config);
    parity_ops_settings_free(&settings);
    unlink(path);
}

Test(config_yaml, unreadable_files_are_io_errors) {
    parity_ops_settings settings = {0};
    parity_error *error = parity_yaml_ops_read_file("/nonexistent/parity/run.yaml", &settings);
    cr_assert_not_null(error);
    cr_expect_eq(parity_error_kind_of(error), PARITY_ERROR_IO);
    cr_expect(strstr(parity_error_message(error), "/nonexistent/parity/run.yaml") != NULL);
    parity_error_free(error);
    error = parity_yaml_ops_read_file("/tmp", &settings);
    cr_expect_eq(parity_error_kind_of(error), PARITY_ERROR_IO, "a directory");
    parity_error_free(error);
}

Test(config_yaml, text_in_memory_reads_like_a_file) {
    parity_ops_settings settings = {0};
    parity_error *error =
        parity_yaml_ops_read_text(full_config_example, strlen(full_config_example), "example.yaml", &settings);
    cr_assert_null(error);
    cr_expect_eq(settings.count, 7);
    cr_expect_str_eq(settings.items[0].source.file, "example.yaml");
    parity_ops_settings_free(&settings);
}
