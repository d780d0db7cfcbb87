// test_bad_inputs.c: the bad suites, batches, checkpoints and configs of issue 12 (items 2, 3 and
// 6), run from the command line. Each used to crash (SIGSEGV), name the wrong thing or run for
// minutes; each must now exit with its documented code (README "Exit codes": 2 usage/config, 3
// data) and a message naming the file and the field or tensor. Each row works in its own folder.
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli_runner.h"
#include "models/checkpoint/safetensors.h"

#define ROWS(array) (sizeof(array) / sizeof((array)[0]))
#define UPSTREAM "golden/upstream"
#define DOWN_PROJ "model.layers.1.mlp.down_proj.weight"

// The row's folder (the directory of every file it writes).
static char folder[64];

static void write_bytes(const char *name, const void *bytes, size_t length) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", folder, name);
    FILE *stream = fopen(path, "wb");
    cr_assert_not_null(stream, "%s", path);
    cr_assert_eq(fwrite(bytes, 1, length, stream), length);
    fclose(stream);
}

static void write_text(const char *name, const char *text) { write_bytes(name, text, strlen(text)); }

static void *read_bytes(const char *path, size_t *length) {
    FILE *stream = fopen(path, "rb");
    cr_assert_not_null(stream, "%s", path);
    fseek(stream, 0, SEEK_END);
    *length = (size_t)ftell(stream);
    fseek(stream, 0, SEEK_SET);
    void *bytes = malloc(*length + 1);
    cr_assert_eq(fread(bytes, 1, *length, stream), *length);
    fclose(stream);
    return bytes;
}

// A suite of one model (`weights`: a checkpoint: or config: + seed: line) and one batch.
static void write_suite(const char *weights, const char *batch, const char *extra) {
    char root[1024], text[4096];
    cr_assert_not_null(getcwd(root, sizeof root));
    snprintf(text, sizeof text,
             "suite: bad\ndtypes: [fp32]\ndevices: [cpu]\n%s"
             "models:\n  - name: m\n    %s\n    batches: [{name: b, %s}]\n",
             extra, weights, batch);
    char *at;
    while ((at = strstr(text, "ROOT"))) { // ROOT: the repository root (the checkpoints)
        memmove(at + strlen(root), at + 4, strlen(at + 4) + 1);
        memcpy(at, root, strlen(root));
    }
    write_text("suite.yaml", text);
}

// batch.safetensors: input_ids and labels [1, 8] of qwen3_tiny's vocabulary (400) except the last id.
static void write_batch(int64_t last_id) {
    int64_t ids[8] = {1, 2, 3, 4, 5, 6, 7, last_id};
    parity_tensor tensor = parity_tensor_wrap(ids, PARITY_I64, PARITY_CPU, PARITY_SHAPE(1, 8));
    parity_safetensors_item items[] = {{"input_ids", &tensor}, {"labels", &tensor}};
    char path[256];
    snprintf(path, sizeof path, "%s/batch.safetensors", folder);
    cr_assert_null(parity_safetensors_write(path, items, 2));
}

static void batch_id_at_vocab(void) {
    write_batch(400);
    write_suite("checkpoint: ROOT/" UPSTREAM "/qwen3_tiny", "file: batch.safetensors", "");
}
static void batch_id_negative(void) {
    write_batch(-1);
    write_suite("checkpoint: ROOT/" UPSTREAM "/qwen3_tiny", "file: batch.safetensors", "");
}
static void requires_15_fields(void) {
    write_suite("checkpoint: ROOT/" UPSTREAM "/qwen3_tiny", "file: ROOT/" UPSTREAM "/qwen3_tiny/batch.safetensors",
                "modes:\n  - {name: a, ops: {attn: eager}, requires: [attn, attn, attn, attn, attn, attn, attn, attn, attn, "
                "attn, attn, attn, attn, attn, attn]}\n");
}
// 100k nested flow lists (200 KB): libyaml took over 120 s before the depth bound.
static char *deeply_nested(const char *before) {
    enum { LEVELS = 100000 };
    size_t length = strlen(before);
    char *text = malloc(length + 2 * LEVELS + 2);
    memcpy(text, before, length);
    memset(text + length, '[', LEVELS);
    memset(text + length + LEVELS, ']', LEVELS);
    strcpy(text + length + 2 * LEVELS, "\n");
    return text;
}
static void suite_nested_100k(void) {
    char *text = deeply_nested("suite: deep\ndescription: ");
    write_text("suite.yaml", text);
    free(text);
}
static void ops_nested_100k(void) {
    char *text = deeply_nested("model:\n  ops_implementation:\n    attn_implementation: ");
    write_text("ops.yaml", text);
    free(text);
}
static void ops_malformed(void) { write_text("ops.yaml", "model:\n  ops_implementation:\n    attn_implementation: [eager\n"); }
static void hidden_size_1e12(void) {
    write_text("config.json", "{\"model_type\": \"qwen3\", \"vocab_size\": 64, \"hidden_size\": 1e12, \"num_hidden_layers\": 1,"
                              " \"num_attention_heads\": 2, \"intermediate_size\": 8}");
    write_suite("config: config.json\n    seed: 1", "plain: {rows: 1, length: 8, seed: 0}", "");
}

// ckpt/: qwen3_tiny's config.json and model.safetensors, the latter changed by `damage` in place
// (`bytes` is the file, its data after 8 + header_length bytes; `file` the original, open).
static void damaged_checkpoint(void (*damage)(unsigned char *bytes, size_t header_length, const parity_safetensors_file *file)) {
    char path[256];
    snprintf(path, sizeof path, "%s/ckpt", folder);
    cr_assert_eq(mkdir(path, 0755), 0);
    size_t length;
    void *config = read_bytes(UPSTREAM "/qwen3_tiny/config.json", &length);
    write_bytes("ckpt/config.json", config, length);
    free(config);
    unsigned char *bytes = read_bytes(UPSTREAM "/qwen3_tiny/model.safetensors", &length);
    size_t header_length = 0;
    for (int i = 7; i >= 0; i--) header_length = header_length << 8 | bytes[i];
    parity_safetensors_file file;
    cr_assert_null(parity_safetensors_open(UPSTREAM "/qwen3_tiny/model.safetensors", &file));
    damage(bytes, header_length, &file);
    parity_safetensors_close(&file);
    write_bytes("ckpt/model.safetensors", bytes, length);
    free(bytes);
    write_suite("checkpoint: ckpt", "file: ROOT/" UPSTREAM "/qwen3_tiny/batch.safetensors", "");
}
static void nan_in(unsigned char *bytes, size_t header_length, const parity_safetensors_file *file) {
    const parity_safetensors_entry *entry = parity_safetensors_find(file, DOWN_PROJ);
    cr_assert(entry && entry->dtype == PARITY_F32);
    float nan = NAN;
    memcpy(bytes + 8 + header_length + entry->begin, &nan, sizeof nan);
}
static void renamed(unsigned char *bytes, size_t header_length, const parity_safetensors_file *file) {
    char *name = memmem(bytes + 8, header_length, DOWN_PROJ, strlen(DOWN_PROJ));
    cr_assert_not_null(name);
    name[strlen(DOWN_PROJ) - 1] = 'X'; // same length: the offsets still tile the data
}
static void nan_weight(void) { damaged_checkpoint(nan_in); }
static void missing_tensor(void) { damaged_checkpoint(renamed); }
// 2^61 elements of 8 bytes: the byte size wraps to 0 and matched data_offsets [0, 0].
static void wrapping_shape(void) {
    char path[256];
    snprintf(path, sizeof path, "%s/ckpt", folder);
    cr_assert_eq(mkdir(path, 0755), 0);
    size_t length;
    void *config = read_bytes(UPSTREAM "/qwen3_tiny/config.json", &length);
    write_bytes("ckpt/config.json", config, length);
    free(config);
    static const char header[] = "{\"zz\":{\"dtype\":\"F64\",\"shape\":[2147483648,1073741824],\"data_offsets\":[0,0]}}";
    unsigned char bytes[8 + sizeof header - 1];
    for (int i = 0; i < 8; i++) bytes[i] = (unsigned char)((sizeof header - 1) >> (8 * i));
    memcpy(bytes + 8, header, sizeof header - 1);
    write_bytes("ckpt/model.safetensors", bytes, sizeof bytes);
    write_suite("checkpoint: ckpt", "file: ROOT/" UPSTREAM "/qwen3_tiny/batch.safetensors", "");
}

enum { LIKE_MALFORMED_YAML = -1 }; // exit code: whatever `config check` gives a malformed YAML file

Test(bad_inputs, each_exits_with_its_code_naming_the_file) {
    static const struct {
        const char *what;
        void (*setup)(void);
        const char *arguments; // %1$s = the row's folder
        int exit_code;
        const char *expected;  // %1$s = the row's folder
        double seconds;
    } rows[] = {
        {"batch id = vocab", batch_id_at_vocab, "golden generate --suite %1$s/suite.yaml --golden-dir %1$s/golden", 3,
         "%1$s/batch.safetensors: input_ids[0, 7] = 400 is outside the vocabulary 0..399", 60},
        {"batch id = vocab in run", batch_id_at_vocab, "run --suite %1$s/suite.yaml --golden-dir %1$s/golden --out %1$s/out", 3,
         "%1$s/batch.safetensors: input_ids[0, 7] = 400 is outside the vocabulary 0..399", 60},
        {"batch id < 0", batch_id_negative, "golden generate --suite %1$s/suite.yaml --golden-dir %1$s/golden", 3,
         "%1$s/batch.safetensors: input_ids[0, 7] = -1 is outside the vocabulary 0..399", 60},
        {"batch id < 0 in eval", batch_id_negative, "eval --checkpoint " UPSTREAM "/qwen3_tiny --batch %1$s/batch.safetensors", 3,
         "%1$s/batch.safetensors: input_ids[0, 7] = -1 is outside the vocabulary 0..399", 60},
        {"mode requires 15 fields", requires_15_fields, "run --suite %1$s/suite.yaml --list", 2,
         "%1$s/suite.yaml:5: mode requires: field 'attn_implementation' is listed twice", 60},
        {"suite nested 100k levels", suite_nested_100k, "run --suite %1$s/suite.yaml --list", 2,
         "%1$s/suite.yaml:2:77: the YAML nests deeper than 64 levels", 10},
        {"kernel selection nested 100k levels", ops_nested_100k, "config check %1$s/ops.yaml", LIKE_MALFORMED_YAML,
         "%1$s/ops.yaml:3:87: the YAML nests deeper than 64 levels", 10},
        {"NaN in a weight", nan_weight, "golden generate --suite %1$s/suite.yaml --golden-dir %1$s/golden", 3,
         "%1$s/ckpt/model.safetensors: tensor '" DOWN_PROJ "' (64, 128) has NaN at flat index 0", 60},
        {"missing tensor", missing_tensor, "golden generate --suite %1$s/suite.yaml --golden-dir %1$s/golden", 3,
         "%1$s/ckpt/model.safetensors: no tensor named '" DOWN_PROJ "', which the config implies (%1$s/ckpt/config.json", 60},
        {"byte size wraps int64", wrapping_shape, "golden generate --suite %1$s/suite.yaml --golden-dir %1$s/golden", 3,
         "%1$s/ckpt/model.safetensors: tensor 'zz': shape [2147483648, 1073741824] of F64 is more than 2^63 - 1 bytes", 60},
        {"hidden_size 1e12", hidden_size_1e12, "golden generate --suite %1$s/suite.yaml --golden-dir %1$s/golden", 3,
         "%1$s/config.json: field 'hidden_size' is 1000000000000, outside 1..131072", 60},
    };
    int malformed_exit = -1;
    for (size_t row = 0; row < ROWS(rows); row++) {
        snprintf(folder, sizeof folder, "/tmp/parity-bad-XXXXXX");
        cr_assert_not_null(mkdtemp(folder));
        char arguments[1024], expected[1024];
        if (rows[row].exit_code == LIKE_MALFORMED_YAML && malformed_exit < 0) {
            ops_malformed();
            snprintf(arguments, sizeof arguments, rows[row].arguments, folder);
            command_result malformed = run_parity(arguments);
            malformed_exit = malformed.exit_code;
            cr_expect(malformed_exit == 2 || malformed_exit == 3, "malformed YAML: exit %d\n%s", malformed_exit, malformed.output);
            free(malformed.output);
        }
        rows[row].setup();
        snprintf(arguments, sizeof arguments, rows[row].arguments, folder);
        snprintf(expected, sizeof expected, rows[row].expected, folder);
        struct timespec started, finished;
        clock_gettime(CLOCK_MONOTONIC, &started);
        command_result result = run_parity(arguments);
        clock_gettime(CLOCK_MONOTONIC, &finished);
        double seconds = (double)(finished.tv_sec - started.tv_sec) + (finished.tv_nsec - started.tv_nsec) * 1e-9;
        int exit_code = rows[row].exit_code == LIKE_MALFORMED_YAML ? malformed_exit : rows[row].exit_code;
        cr_expect_eq(result.exit_code, exit_code, "%s: exit %d, expected %d\n%s", rows[row].what, result.exit_code, exit_code,
                     result.output);
        cr_expect(strstr(result.output, expected) != NULL, "%s: \"%s\" not in\n%s", rows[row].what, expected, result.output);
        cr_expect(seconds < rows[row].seconds, "%s: %.1f s (at most %.0f s)", rows[row].what, seconds, rows[row].seconds);
        free(result.output);
        char command[128];
        snprintf(command, sizeof command, "rm -rf '%s'", folder);
        cr_assert_eq(system(command), 0);
    }
}
