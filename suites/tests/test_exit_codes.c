// test_exit_codes.c: the exit codes of issue 12's reproducers, each a row with its code and message.
// An unknown --ops value is a config error (2) in `run` as in `config check`, with the same words; a
// --filter that selects nothing is 2 ("no combo matches"), as pytest's 5 is not a pass; `config check`
// reports the fields no model uses instead of failing on them, so it can pass; a malformed
// kernel-selection YAML is 2 in every command; --out is checked before the first combo runs (a file
// in the way or a folder that is not empty: 2; a folder that cannot be made: 3), and the default
// report folder is always a new one. "Used by no model" is pinned to the shipped models' requirements.
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli_runner.h"
#include "models/model.h"
#include "models/model_traits.h"
#include "scratch_suite.h"

#define ROWS(array) (sizeof(array) / sizeof((array)[0]))

static const char bogus_value_message[] =
    "--ops: rms_norm_implementation: 'bogus' is not a known value (allowed: eager, liger_kernel, npu, triton)";

static void write_text(const char *path, const char *text) {
    FILE *file = fopen(path, "w");
    cr_assert_not_null(file, "%s", path);
    fputs(text, file);
    fclose(file);
}

// Rows run against a scratch suite with goldens: {suite} is the suite, {golden} the golden folder,
// {dir} the scratch folder. Nothing may run before the error: no combo line in the output.
static void expand(const char *template, const scratch_suite *s, char *out, size_t size) {
    static const char *const names[] = {"{suite}", "{golden}", "{dir}"};
    const char *values[] = {s->suite, s->goldens, s->folder};
    size_t used = 0;
    out[0] = '\0';
    for (const char *c = template; *c && used + 1 < size;) {
        size_t i = 0;
        while (i < ROWS(names) && strncmp(c, names[i], strlen(names[i])) != 0) i++;
        if (i < ROWS(names)) {
            used += (size_t)snprintf(out + used, size - used, "%s", values[i]);
            if (used >= size) used = size - 1; // cut (the buffers are far larger than any row)
            c += strlen(names[i]);
        } else {
            out[used++] = *c++;
            out[used] = '\0';
        }
    }
}

typedef struct exit_row {
    const char *arguments;
    int exit_code;
    const char *expected;
} exit_row;

static const exit_row scratch_rows[] = {
    {"run --suite {suite} --golden-dir {golden} --out {dir}/o1 --ops rms_norm=bogus", 2, bogus_value_message},
    {"run --suite {suite} --golden-dir {golden} --list --ops rms_norm=bogus", 2, bogus_value_message},
    {"config check --device cpu --ops rms_norm=bogus", 2, bogus_value_message},
    {"run --suite {suite} --golden-dir {golden} --out {dir}/o2 --filter '*/attn=sdpa*'", 2, "--filter '*/attn=sdpa*': no combo matches"},
    {"run --suite {suite} --golden-dir {golden} --list --filter 'nothing'", 2, "no combo matches"},
    {"run --suite {suite} --golden-dir {golden} --out {dir}/a-file", 2, "--out {dir}/a-file: a file is in the way"},
    {"run --suite {suite} --golden-dir {golden} --out {dir}/not-empty", 2, "--out {dir}/not-empty: the folder is not empty"},
    {"run --suite {suite} --golden-dir {golden} --out /proc/parity-no-such/out", 3, "/proc/parity-no-such: cannot create directory"},
    {"config check {dir}/malformed.yaml --device cpu", 2, "{dir}/malformed.yaml"},
    {"eval --checkpoint golden/upstream/qwen3_tiny --batch golden/upstream/qwen3_tiny/batch.safetensors --ops-file "
     "{dir}/malformed.yaml", 2, "{dir}/malformed.yaml"},
    {"eval --checkpoint golden/upstream/qwen3_tiny --batch golden/upstream/qwen3_tiny/batch.safetensors --ops-file "
     "{dir}/no-such.yaml", 3, "{dir}/no-such.yaml"},
    {"config check --device cpu --ops dsa_indexer=bogus", 2, "dsa_indexer_implementation: 'bogus' is not a known value"},
};

Test(exit_codes, each_reproducer_exits_with_its_code_and_message, .timeout = 300) {
    scratch_suite s = scratch_suite_make((scratch_spec){.goldens = true});
    char path[256];
    snprintf(path, sizeof path, "%s/a-file", s.folder);
    write_text(path, "not a folder\n");
    snprintf(path, sizeof path, "%s/not-empty", s.folder);
    cr_assert_eq(mkdir(path, 0777), 0);
    snprintf(path, sizeof path, "%s/not-empty/results.json", s.folder);
    write_text(path, "{}\n");
    snprintf(path, sizeof path, "%s/malformed.yaml", s.folder);
    write_text(path, "model:\n  ops_implementation:\n    attn_implementation: [eager\n");
    for (size_t row = 0; row < ROWS(scratch_rows); row++) {
        char arguments[1024], expected[512];
        expand(scratch_rows[row].arguments, &s, arguments, sizeof arguments);
        expand(scratch_rows[row].expected, &s, expected, sizeof expected);
        command_result result = run_parity(arguments);
        cr_expect_eq(result.exit_code, scratch_rows[row].exit_code, "parity %s: exit %d, expected %d\n%s", arguments,
                     result.exit_code, scratch_rows[row].exit_code, result.output);
        cr_expect(strstr(result.output, expected) != NULL, "parity %s: output lacks \"%s\":\n%s", arguments, expected,
                  result.output);
        cr_expect(strstr(result.output, "[1/") == NULL, "parity %s: nothing ran before the error:\n%s", arguments,
                  result.output);
        free(result.output);
    }
    snprintf(path, sizeof path, "%s/not-empty", s.folder);
    cr_expect_eq(scratch_entry_count(path), 1, "the other run's folder is left as it was");
    snprintf(path, sizeof path, "%s/o1", s.folder);
    cr_expect_eq(scratch_entry_count(path), -1, "a run refused before it began leaves no report folder");
    scratch_suite_remove(&s);
}

// An empty --out folder is fine (nothing to mix with).
Test(exit_codes, an_empty_out_folder_is_used) {
    scratch_suite s = scratch_suite_make((scratch_spec){.goldens = true});
    char arguments[700];
    snprintf(arguments, sizeof arguments, "run --suite %s --golden-dir %s --out %s", s.suite, s.goldens, s.tmp);
    command_result result = run_parity(arguments);
    cr_expect_eq(result.exit_code, 0, "%s", result.output);
    cr_expect_eq(scratch_entry_count(s.tmp), 4, "the four reports");
    free(result.output);
    scratch_suite_remove(&s);
}

// The default reports/out/<UTC time>-scratch-cpu: every name the run could pick for the next seconds
// is taken by a folder of "another run"; the run makes a new one (<name>-2) and touches none of them.
Test(exit_codes, the_default_report_folder_is_always_new, .timeout = 120) {
    scratch_suite s = scratch_suite_make((scratch_spec){.goldens = true});
    char out_root[256];
    snprintf(out_root, sizeof out_root, "%s/reports/out", s.folder);
    char command[512];
    snprintf(command, sizeof command, "mkdir -p '%s'", out_root);
    cr_assert_eq(system(command), 0);
    time_t now = time(NULL);
    enum { TAKEN = 60 };
    char taken[TAKEN][64];
    for (int i = 0; i < TAKEN; i++) {
        time_t moment = now + i;
        struct tm utc;
        gmtime_r(&moment, &utc);
        char stamp[32], path[4400];
        strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &utc);
        snprintf(taken[i], sizeof taken[i], "%s-scratch-cpu", stamp);
        snprintf(path, sizeof path, "%s/%s", out_root, taken[i]);
        cr_assert_eq(mkdir(path, 0777), 0, "%s", path);
        snprintf(path, sizeof path, "%s/%s/results.json", out_root, taken[i]);
        write_text(path, "{\"another\": \"run\"}\n");
    }
    char arguments[700];
    snprintf(arguments, sizeof arguments, "run --suite %s --golden-dir %s", s.suite, s.goldens);
    command_result result = run_parity_from(s.folder, NULL, arguments);
    cr_expect_eq(result.exit_code, 0, "%s", result.output);
    const char *report = strstr(result.output, "report: reports/out/");
    cr_assert_not_null(report, "%s", result.output);
    char folder[256];
    cr_assert_eq(sscanf(report, "report: reports/out/%255[^/]/report.html", folder), 1, "%s", report);
    bool fresh = true;
    for (int i = 0; i < TAKEN; i++) fresh = fresh && strcmp(folder, taken[i]) != 0;
    cr_expect(fresh, "the run took a new folder, not %s", folder);
    cr_expect(strlen(folder) > 2 && strcmp(folder + strlen(folder) - 2, "-2") == 0, "%s: the taken name with -2", folder);
    for (int i = 0; i < TAKEN; i++) {
        char path[4400];
        snprintf(path, sizeof path, "%s/%s", out_root, taken[i]);
        cr_expect_eq(scratch_entry_count(path), 1, "%s is left as it was", taken[i]);
    }
    free(result.output);
    scratch_suite_remove(&s);
}

// `config check` can pass: the fields no model calls (their ops are in no model family's list) are
// reported as a note, their backends are not asked for.
Test(exit_codes, config_check_passes_and_notes_the_fields_no_model_uses) {
    command_result result = run_parity("config check --device cpu --ops attn=eager,ce=eager,rms_norm=eager,swiglu=eager,"
                                       "rope=eager,rms_norm_gated=eager,conv1d=eager,gdr=eager,lb_loss=eager,moe=eager");
    cr_expect_eq(result.exit_code, 0, "%s", result.output);
    static const char *const expected[] = {
        "note: not used by any model of parity (4)",
        "  dsa_indexer_implementation: 'eager' (op dsa_indexer)",
        "  dsa_attention_implementation: 'eager' (op dsa_attention)",
        "  mhc_implementation: 'eager' (op mhc)",
        "  rotary_pos_emb_vision_implementation: 'eager' (op rotary_vision)",
        "ok: every selected backend that a model uses is available on cpu",
    };
    for (size_t i = 0; i < ROWS(expected); i++)
        cr_expect(strstr(result.output, expected[i]) != NULL, "\"%s\" in:\n%s", expected[i], result.output);
    cr_expect(strstr(result.output, "unavailable on this machine") == NULL, "%s", result.output);
    free(result.output);
}

// What "no model uses" means: the ops of the model families' lists (models/model.h). Each list is
// exactly what the shipped models require (a declared op no model of the tree calls would hide a
// field from `config check`; one missing would fail parity_model_requirements_of), and the fields
// config check notes are those whose ops are outside it.
Test(exit_codes, the_ops_models_use_are_those_the_shipped_models_require) {
    static const char *const configs[] = {
        "golden/upstream/deepseek_v3_tiny/config.json", "golden/upstream/llama3_tiny/config.json",
        "golden/upstream/qwen2_tiny/config.json",       "golden/upstream/qwen3_5_moe_tiny/config.json",
        "golden/upstream/qwen3_5_tiny/config.json",     "golden/upstream/qwen3_moe_tiny/config.json",
        "golden/upstream/qwen3_next_tiny/config.json",  "golden/upstream/qwen3_tiny/config.json",
        "golden/upstream/seed_oss_tiny/config.json",    "suites/configs/deepseek_v3_toy/config.json",
        "suites/configs/llama31_toy/config.json",       "suites/configs/qwen3_5_moe_toy/config.json",
        "suites/configs/qwen3_5_toy/config.json",       "suites/configs/qwen3_moe_toy/config.json",
        "suites/configs/qwen3_toy/config.json",         "suites/configs/seed_oss_toy/config.json",
    };
    parity_op_set required = {{false}};
    for (size_t i = 0; i < ROWS(configs); i++) {
        parity_model_config config;
        parity_error *error = parity_model_config_read(configs[i], &config);
        cr_assert_null(error, "%s: %s", configs[i], error ? parity_error_message(error) : "");
        parity_model_requirements requirements;
        error = parity_model_requirements_of(&config, &requirements);
        cr_assert_null(error, "%s: %s", configs[i], error ? parity_error_message(error) : "");
        for (int op = 0; op < PARITY_OP_ID_COUNT; op++) required.contains[op] |= requirements.needed.contains[op];
    }
    parity_op_set used;
    parity_model_traits_all_ops(&used);
    for (int op = 0; op < PARITY_OP_ID_COUNT; op++)
        cr_expect_eq(used.contains[op], required.contains[op], "op %s: in the families' lists %d, required by a shipped model %d",
                     parity_op_id_name((parity_op_id)op), used.contains[op], required.contains[op]);
    static const parity_op_id unused[] = {PARITY_OP_ID_DSA_INDEXER, PARITY_OP_ID_DSA_ATTENTION, PARITY_OP_ID_MHC,
                                          PARITY_OP_ID_ROTARY_VISION};
    for (size_t i = 0; i < ROWS(unused); i++)
        cr_expect(!used.contains[unused[i]], "%s is used by no model", parity_op_id_name(unused[i]));
}
