// test_eval_cli.c: `parity eval` from the command line: it runs on every shipped checkpoint and on
// drawn weights, prints the documented JSON, and fails clearly on bad input: a truncated
// safetensors, a tensor of the wrong dtype, a missing expert and a bad config.json each exit with
// the data-error code and a message naming the file and the problem; an unavailable backend is a
// config error, never a silent fallback.
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_runner.h"

#define UPSTREAM "golden/upstream"

static void copy_file(const char *from, const char *to, long truncate_by) {
    FILE *in = fopen(from, "rb");
    cr_assert_not_null(in, "%s", from);
    fseek(in, 0, SEEK_END);
    long size = ftell(in);
    fseek(in, 0, SEEK_SET);
    char *bytes = malloc((size_t)size);
    cr_assert_eq(fread(bytes, 1, (size_t)size, in), (size_t)size);
    fclose(in);
    FILE *out = fopen(to, "wb");
    cr_assert_not_null(out, "%s", to);
    cr_assert_eq(fwrite(bytes, 1, (size_t)(size - truncate_by), out), (size_t)(size - truncate_by));
    fclose(out);
    free(bytes);
}

// A copy of an upstream checkpoint directory in a fresh temporary folder.
static void copy_checkpoint(const char *model, char *directory, size_t size) {
    snprintf(directory, size, "/tmp/parity-eval-XXXXXX");
    cr_assert_not_null(mkdtemp(directory));
    const char *files[] = {"config.json", "model.safetensors", "batch.safetensors"};
    for (size_t i = 0; i < 3; i++) {
        char from[256], to[512];
        snprintf(from, sizeof from, UPSTREAM "/%s/%s", model, files[i]);
        snprintf(to, sizeof to, "%s/%s", directory, files[i]);
        copy_file(from, to, 0);
    }
}

static void remove_checkpoint(const char *directory) {
    char command[600];
    snprintf(command, sizeof command, "rm -rf '%s'", directory);
    cr_assert_eq(system(command), 0);
}

Test(eval_cli, runs_every_shipped_checkpoint_and_prints_json) {
    const char *models[] = {"llama3_tiny", "qwen2_tiny", "qwen3_tiny", "qwen3_moe_tiny", "deepseek_v3_tiny", "seed_oss_tiny",
                            "qwen3_5_tiny", "qwen3_5_moe_tiny", "qwen3_next_tiny"};
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
        char arguments[512];
        snprintf(arguments, sizeof arguments, "eval --checkpoint " UPSTREAM "/%s --batch " UPSTREAM "/%s/batch.safetensors --json",
                 models[i], models[i]);
        command_result result = run_parity(arguments);
        cr_expect_eq(result.exit_code, 0, "%s: exit %d: %s", models[i], result.exit_code, result.output);
        cr_expect(strstr(result.output, "\"loss\":") && strstr(result.output, "\"grad_norm\":") &&
                      strstr(result.output, "\"param_grad_norms\":{\"model.embed_tokens.weight\":") &&
                      strstr(result.output, "\"aux_loss\":"),
                  "%s: %s", models[i], result.output);
        bool moe = strstr(models[i], "moe") != NULL || strstr(models[i], "next") != NULL;
        cr_expect(moe == (strstr(result.output, "\"aux_loss\":null") == NULL), "%s: aux_loss must be null exactly without MoE",
                  models[i]);
        free(result.output);
    }
}

Test(eval_cli, draws_weights_from_a_config_and_seed) {
    command_result first = run_parity("eval --config " UPSTREAM "/qwen3_moe_tiny/config.json --seed 5 --batch " UPSTREAM
                                      "/qwen3_moe_tiny/batch.safetensors --json");
    command_result again = run_parity("eval --config " UPSTREAM "/qwen3_moe_tiny/config.json --seed 5 --batch " UPSTREAM
                                      "/qwen3_moe_tiny/batch.safetensors --json");
    command_result other = run_parity("eval --config " UPSTREAM "/qwen3_moe_tiny/config.json --seed 6 --batch " UPSTREAM
                                      "/qwen3_moe_tiny/batch.safetensors --json");
    cr_expect_eq(first.exit_code, 0, "%s", first.output);
    cr_expect_str_eq(first.output, again.output, "the same seed must give the same numbers");
    cr_expect_str_neq(first.output, other.output, "another seed must give other weights");
    free(first.output);
    free(again.output);
    free(other.output);
}

Test(eval_cli, profile_ops_prints_a_per_op_table) {
    command_result result = run_parity("eval --checkpoint " UPSTREAM "/qwen3_moe_tiny --batch " UPSTREAM
                                       "/qwen3_moe_tiny/batch.safetensors --dtype fp32 --profile-ops");
    cr_expect_eq(result.exit_code, 0, "%s", result.output);
    cr_expect(strstr(result.output, "per-op times of one more step:") && strstr(result.output, "backward ms") &&
                  strstr(result.output, "moe_experts") && strstr(result.output, "with the device synchronized at every node"),
              "%s", result.output);
    free(result.output);
}

typedef struct bad_input_case {
    const char *name;
    const char *model;
    void (*corrupt)(const char *directory);
    const char *expected[3]; // every piece must appear in the output
} bad_input_case;

static void truncate_weights(const char *directory) {
    char path[512];
    snprintf(path, sizeof path, "%s/model.safetensors", directory);
    copy_file(UPSTREAM "/qwen3_tiny/model.safetensors", path, 4096);
}

static void integer_weight(const char *directory) {
    // A one-tensor checkpoint whose only weight is stored as I64.
    char path[512];
    snprintf(path, sizeof path, "%s/model.safetensors", directory);
    const char header[] = "{\"model.norm.weight\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[0,8]}}";
    unsigned char bytes[8 + sizeof header - 1 + 8] = {0};
    bytes[0] = (unsigned char)(sizeof header - 1);
    memcpy(bytes + 8, header, sizeof header - 1);
    FILE *out = fopen(path, "wb");
    cr_assert_eq(fwrite(bytes, 1, sizeof bytes, out), sizeof bytes);
    fclose(out);
}

static void drop_expert(const char *directory) {
    // Rewrite model.safetensors without expert 3 of layer 1 (python-free: rename the tensor so the key no
    // longer names an expert of this checkpoint: "experts.3." -> "expertz.3.").
    char path[512];
    snprintf(path, sizeof path, "%s/model.safetensors", directory);
    FILE *file = fopen(path, "r+b");
    cr_assert_not_null(file);
    unsigned char length_bytes[8];
    cr_assert_eq(fread(length_bytes, 1, 8, file), 8);
    size_t length = 0;
    for (int i = 7; i >= 0; i--) length = length << 8 | length_bytes[i];
    char *header = malloc(length + 1);
    cr_assert_eq(fread(header, 1, length, file), length);
    header[length] = '\0';
    int renamed = 0;
    for (char *at = header; (at = strstr(at, "layers.1.mlp.experts.3.")) != NULL; at++) {
        at[18] = 'z'; // "experts" -> "expertz"
        renamed++;
    }
    cr_assert_eq(renamed, 3);
    fseek(file, 8, SEEK_SET);
    cr_assert_eq(fwrite(header, 1, length, file), length);
    fclose(file);
    free(header);
}

static void break_config(const char *directory) {
    char path[512];
    snprintf(path, sizeof path, "%s/config.json", directory);
    FILE *out = fopen(path, "wb");
    fputs("{\"model_type\": \"qwen3\", \"vocab_size\": 400, \"hidden_size\": \"sixty-four\"}", out);
    fclose(out);
}

static void inconsistent_config(const char *directory) {
    char path[512];
    snprintf(path, sizeof path, "%s/config.json", directory);
    FILE *file = fopen(path, "rb");
    char text[8192];
    size_t length = fread(text, 1, sizeof text - 1, file);
    fclose(file);
    text[length] = '\0';
    char *field = strstr(text, "\"intermediate_size\": 128");
    cr_assert_not_null(field);
    memcpy(field, "\"intermediate_size\": 100", 24); // same length: the weights no longer fit the config
    file = fopen(path, "wb");
    fputs(text, file);
    fclose(file);
}

Test(eval_cli, bad_inputs_fail_naming_the_problem) {
    static const bad_input_case cases[] = {
        {"truncated safetensors", "qwen3_tiny", truncate_weights, {"model.safetensors", "truncated", NULL}},
        {"integer weight", "qwen3_tiny", integer_weight, {"model.norm.weight", "I64", "floating point"}},
        {"missing expert", "qwen3_moe_tiny", drop_expert, {"model.layers.1.mlp.experts", "expert 3 is missing", NULL}},
        {"bad config.json", "qwen3_tiny", break_config, {"config.json", "hidden_size", "must be an integer"}},
        {"config inconsistent with weights", "qwen3_tiny", inconsistent_config,
         {"model.layers.0.mlp.gate_proj.weight", "has shape (128, 64)", "the config implies (100, 64)"}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char directory[64], arguments[512];
        copy_checkpoint(cases[i].model, directory, sizeof directory);
        cases[i].corrupt(directory);
        snprintf(arguments, sizeof arguments, "eval --checkpoint %s --batch %s/batch.safetensors", directory, directory);
        command_result result = run_parity(arguments);
        cr_expect_eq(result.exit_code, 3, "%s: exit %d (expected 3, data error): %s", cases[i].name, result.exit_code, result.output);
        for (int piece = 0; piece < 3 && cases[i].expected[piece]; piece++)
            cr_expect(strstr(result.output, cases[i].expected[piece]) != NULL, "%s: output lacks '%s': %s", cases[i].name,
                      cases[i].expected[piece], result.output);
        free(result.output);
        remove_checkpoint(directory);
    }
}

Test(eval_cli, unavailable_backend_is_a_config_error_not_a_fallback) {
    command_result result = run_parity("eval --checkpoint " UPSTREAM "/qwen3_tiny --batch " UPSTREAM
                                       "/qwen3_tiny/batch.safetensors --ops attn=flash_attention_2");
    cr_expect_eq(result.exit_code, 2, "%s", result.output);
    cr_expect(strstr(result.output, "attn_implementation") && strstr(result.output, "flash_attention_2"), "%s", result.output);
    cr_expect(strstr(result.output, "\"loss\"") == NULL && strstr(result.output, "loss ") == NULL, "no numbers may be printed");
    free(result.output);
    result = run_parity("eval --checkpoint " UPSTREAM "/qwen3_tiny");
    cr_expect_eq(result.exit_code, 2, "missing --batch: %s", result.output);
    free(result.output);
}
