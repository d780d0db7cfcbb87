// test_checkpoint.c: checkpoint I/O against the shipped upstream checkpoints and against corrupted
// copies: every corruption (a wrapping shape, a NaN weight, a missing tensor, a config field out of
// range ...) must fail with an error that names the file and the problem; 40k tensors open quickly.
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness/evaluate.h"
#include "models/batch.h"
#include "models/checkpoint/checkpoint.h"
#include "models/checkpoint/expert_converter.h"
#include "models/checkpoint/safetensors.h"
#include "ops/core/clock.h"

#define UPSTREAM "golden/upstream"

static char *error_text(parity_error *error) {
    static char buffer[2048];
    parity_error_format(error, buffer, sizeof buffer);
    parity_error_free(error);
    return buffer;
}

// A fresh temporary directory for one test.
static void temporary_directory(char *path, size_t size) {
    snprintf(path, size, "/tmp/parity-test-XXXXXX");
    cr_assert_not_null(mkdtemp(path));
}

static void write_bytes(const char *path, const void *bytes, size_t length) {
    FILE *stream = fopen(path, "wb");
    cr_assert_not_null(stream);
    cr_assert_eq(fwrite(bytes, 1, length, stream), length);
    fclose(stream);
}

static void *read_bytes(const char *path, size_t *length) {
    FILE *stream = fopen(path, "rb");
    cr_assert_not_null(stream, "%s", path);
    fseek(stream, 0, SEEK_END);
    *length = (size_t)ftell(stream);
    fseek(stream, 0, SEEK_SET);
    void *bytes = malloc(*length);
    cr_assert_eq(fread(bytes, 1, *length, stream), *length);
    fclose(stream);
    return bytes;
}

// Writes an 8-byte length + header + data.
static void write_safetensors_raw(const char *path, const char *header, const void *data, size_t data_length) {
    size_t header_length = strlen(header);
    size_t total = 8 + header_length + data_length;
    unsigned char *bytes = calloc(1, total);
    for (int i = 0; i < 8; i++) bytes[i] = (unsigned char)((uint64_t)header_length >> (8 * i));
    memcpy(bytes + 8, header, header_length);
    if (data_length) memcpy(bytes + 8 + header_length, data, data_length);
    write_bytes(path, bytes, total);
    free(bytes);
}

Test(checkpoint, every_upstream_checkpoint_loads) {
    const char *cases[] = {"llama3_tiny", "qwen2_tiny", "qwen3_tiny", "qwen3_moe_tiny", "deepseek_v3_tiny", "seed_oss_tiny",
                           "qwen3_5_tiny", "qwen3_5_moe_tiny", "qwen3_next_tiny"};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char directory[256];
        snprintf(directory, sizeof directory, UPSTREAM "/%s", cases[i]);
        parity_model_config config;
        parity_parameters parameters = {0};
        parity_error *error = parity_checkpoint_load(directory, PARITY_F64, &config, &parameters);
        cr_assert_null(error, "%s: %s", cases[i], error ? error_text(error) : "");
        cr_expect_gt(parameters.count, 5);
        if (config.num_experts > 0) { // every MoE layer fused, no per-expert key left
            for (size_t p = 0; p < parameters.count; p++)
                cr_expect(strstr(parameters.items[p].name, ".experts.0.") == NULL, "%s: %s not fused", cases[i],
                          parameters.items[p].name);
        }
        parity_parameters_release(&parameters);
    }
}

Test(checkpoint, moe_experts_are_fused_gate_first) {
    parity_model_config config;
    parity_parameters parameters = {0};
    parity_error *error = parity_checkpoint_load(UPSTREAM "/qwen3_moe_tiny", PARITY_F32, &config, &parameters);
    cr_assert_null(error, "%s", error ? error_text(error) : "");
    parity_parameter *gate_up = parity_parameters_find(&parameters, "model.layers.1.mlp.experts.gate_up_proj");
    parity_parameter *down = parity_parameters_find(&parameters, "model.layers.1.mlp.experts.down_proj");
    cr_assert_not_null(gate_up);
    cr_assert_not_null(down);
    cr_expect_eq(gate_up->value.shape[0], 4);
    cr_expect_eq(gate_up->value.shape[1], 64);
    cr_expect_eq(gate_up->value.shape[2], 64);
    cr_expect_eq(down->value.shape[1], 64);
    cr_expect_eq(down->value.shape[2], 32);
    // expert 2's up projection sits in rows [I, 2I) of its block: compare with the file
    parity_safetensors_file file;
    cr_assert_null(parity_safetensors_open(UPSTREAM "/qwen3_moe_tiny/model.safetensors", &file));
    parity_tensor up;
    cr_assert_null(parity_safetensors_load(&file, "model.layers.1.mlp.experts.2.up_proj.weight", PARITY_F32, &up));
    const float *fused = gate_up->value.data;
    cr_expect(memcmp(fused + (2 * 64 + 32) * 64, up.data, 32 * 64 * sizeof(float)) == 0);
    parity_tensor_release(&up);
    parity_safetensors_close(&file);
    parity_parameters_release(&parameters);
}

typedef struct corrupt_case {
    const char *name;
    const char *header;         // NULL: truncate the real file instead
    size_t data_length;
    const char *expected;       // substring of the error
} corrupt_case;

Test(checkpoint, corrupt_safetensors_are_rejected_with_a_reason) {
    static const corrupt_case cases[] = {
        {"bad json", "{\"a\": {\"dtype\": \"F32\", ", 0, "not valid JSON"},
        {"not an object", "[1, 2]", 0, "not a JSON object"},
        {"unknown dtype", "{\"a\":{\"dtype\":\"F8_E4M3\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1, "unsupported dtype 'F8_E4M3'"},
        {"negative shape", "{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4, "shape[0]"},
        {"shape beyond int64", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1e80],\"data_offsets\":[0,4]}}", 4, "shape[0]"},
        {"offsets beyond uint64", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,1e80]}}", 4,
         "are not ordered non-negative integers"},
        {"size mismatch", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4, "needs 8"},
        {"out of bounds", "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 8, "truncated"},
        {"hole", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, "hole"},
        {"overlap",
         "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
         8, "overlapping"},
        {"duplicate name",
         "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
         8, "appears twice"},
        {"trailing bytes", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 12, "trailing bytes"},
        {"bad metadata", "{\"__metadata__\":{\"format\":1}}", 0, "__metadata__ field 'format'"},
        // 2^61 elements of 8 bytes: the byte size wraps to 0 and used to match data_offsets [0, 0]
        {"byte size wraps", "{\"a\":{\"dtype\":\"F64\",\"shape\":[2147483648,1073741824],\"data_offsets\":[0,0]}}", 0,
         "tensor 'a': shape [2147483648, 1073741824] of F64 is more than 2^63 - 1 bytes"},
        {"element count wraps", "{\"a\":{\"dtype\":\"U8\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,0]}}", 0,
         "tensor 'a': shape [4294967296, 4294967296] of U8 is more than 2^63 - 1 bytes"},
    };
    char directory[64], path[128];
    temporary_directory(directory, sizeof directory);
    snprintf(path, sizeof path, "%s/bad.safetensors", directory);
    unsigned char data[64] = {0};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_safetensors_raw(path, cases[i].header, data, cases[i].data_length);
        parity_safetensors_file file;
        parity_error *error = parity_safetensors_open(path, &file);
        cr_expect_not_null(error, "%s: accepted", cases[i].name);
        if (!error) {
            parity_safetensors_close(&file);
            continue;
        }
        const char *text = error_text(error);
        cr_expect(strstr(text, cases[i].expected) != NULL, "%s: '%s' lacks '%s'", cases[i].name, text, cases[i].expected);
        cr_expect(strstr(text, path) != NULL, "%s: '%s' does not name the file", cases[i].name, text);
    }
    unlink(path);
    rmdir(directory);
}

// A header of 40k tensors opens in n log n (it took 5 s when each name was compared with every
// earlier one), every name is found, and a duplicate among them is still named.
Test(checkpoint, a_header_of_40k_tensors_opens_quickly) {
    enum { TENSORS = 40000 };
    char directory[64], path[128];
    temporary_directory(directory, sizeof directory);
    snprintf(path, sizeof path, "%s/many.safetensors", directory);
    for (int duplicate = 0; duplicate < 2; duplicate++) {
        size_t capacity = 96 * (size_t)TENSORS, used = 0;
        char *header = malloc(capacity);
        cr_assert_not_null(header);
        used += (size_t)snprintf(header, capacity, "{");
        for (int i = 0; i < TENSORS; i++) {
            int name = duplicate && i == TENSORS - 1 ? 17 : i; // the last one reuses an early name
            used += (size_t)snprintf(header + used, capacity - used, "%s\"layer.%05d.weight\":{\"dtype\":\"U8\",\"shape\":[1],"
                                     "\"data_offsets\":[%d,%d]}", i ? "," : "", name, i, i + 1);
        }
        snprintf(header + used, capacity - used, "}");
        unsigned char *data = calloc(TENSORS, 1);
        write_safetensors_raw(path, header, data, TENSORS);
        free(data);
        free(header);
        double started = parity_monotonic_seconds();
        parity_safetensors_file file;
        parity_error *error = parity_safetensors_open(path, &file);
        double elapsed = parity_monotonic_seconds() - started;
        cr_expect(elapsed < 2.0, "opening %d tensors took %.2f s", TENSORS, elapsed);
        if (duplicate) {
            cr_assert_not_null(error, "a duplicate among %d names was accepted", TENSORS);
            const char *text = error_text(error);
            cr_expect(strstr(text, "tensor 'layer.00017.weight' appears twice") && strstr(text, path), "%s", text);
            continue;
        }
        cr_assert_null(error, "%s", error ? error_text(error) : "");
        cr_expect_eq(file.entry_count, TENSORS);
        for (int i = 0; i < TENSORS; i += 997) {
            char name[32];
            snprintf(name, sizeof name, "layer.%05d.weight", i);
            const parity_safetensors_entry *entry = parity_safetensors_find(&file, name);
            cr_assert_not_null(entry, "%s not found", name);
            cr_expect_eq(entry->begin, (size_t)i, "%s", name);
        }
        cr_expect_null(parity_safetensors_find(&file, "layer.40000.weight"));
        parity_safetensors_close(&file);
    }
    unlink(path);
    rmdir(directory);
}

// A checkpoint of 40k tensors (qwen3_tiny's and 40k small extras) is written and loaded in n log n:
// each name used to be compared with every earlier one when writing, opening and adding it to the
// parameters (10 s for `golden generate` of such a checkpoint).
Test(checkpoint, a_checkpoint_of_40k_tensors_writes_and_loads_quickly) {
    enum { EXTRA = 40000 };
    char directory[64], path[160];
    temporary_directory(directory, sizeof directory);
    parity_safetensors_file original;
    cr_assert_null(parity_safetensors_open(UPSTREAM "/qwen3_tiny/model.safetensors", &original));
    size_t count = original.entry_count + EXTRA;
    parity_tensor *tensors = calloc(count, sizeof *tensors);
    parity_safetensors_item *items = calloc(count, sizeof *items);
    char (*names)[32] = calloc(EXTRA, sizeof *names);
    float one = 1.0f;
    for (size_t i = 0; i < count; i++) {
        if (i < original.entry_count) {
            cr_assert_null(parity_safetensors_load(&original, original.entries[i].name, original.entries[i].dtype, &tensors[i]));
            items[i] = (parity_safetensors_item){original.entries[i].name, &tensors[i]};
        } else {
            snprintf(names[i - original.entry_count], sizeof names[0], "extra.%05zu.weight", i - original.entry_count);
            tensors[i] = parity_tensor_wrap(&one, PARITY_F32, PARITY_CPU, PARITY_SHAPE(1));
            items[i] = (parity_safetensors_item){names[i - original.entry_count], &tensors[i]};
        }
    }
    snprintf(path, sizeof path, "%s/model.safetensors", directory);
    double started = parity_monotonic_seconds();
    parity_error *error = parity_safetensors_write(path, items, count);
    double written = parity_monotonic_seconds();
    cr_assert_null(error, "%s", error ? error_text(error) : "");
    size_t length;
    void *config = read_bytes(UPSTREAM "/qwen3_tiny/config.json", &length);
    snprintf(path, sizeof path, "%s/config.json", directory);
    write_bytes(path, config, length);
    free(config);
    parity_model_config loaded_config;
    parity_parameters parameters = {0};
    double loading = parity_monotonic_seconds();
    error = parity_checkpoint_load(directory, PARITY_F32, &loaded_config, &parameters);
    double loaded = parity_monotonic_seconds();
    cr_assert_null(error, "%s", error ? error_text(error) : "");
    cr_expect_eq(parameters.count, count);
    cr_expect_not_null(parity_parameters_find(&parameters, "extra.39999.weight"));
    cr_expect_not_null(parity_parameters_find(&parameters, "model.norm.weight"));
    cr_expect_null(parity_parameters_find(&parameters, "extra.40000.weight"));
    cr_expect(written - started < 2.0, "writing %zu tensors took %.2f s", count, written - started);
    cr_expect(loaded - loading < 2.0, "loading %zu tensors took %.2f s", count, loaded - loading);
    parity_parameters_release(&parameters);
    for (size_t i = 0; i < original.entry_count; i++) parity_tensor_release(&tensors[i]);
    free(tensors);
    free(items);
    free(names);
    parity_safetensors_close(&original);
    char command[128];
    snprintf(command, sizeof command, "rm -rf %s", directory);
    cr_assert_eq(system(command), 0);
}

// A copy of qwen3_tiny in a fresh directory whose model.safetensors the caller may damage in place
// (`bytes`, `header_length` and the open `file` describe the copy; write it with write_checkpoint).
typedef struct checkpoint_copy {
    char directory[64], weights[160];
    unsigned char *bytes;
    size_t length, header_length;
    parity_safetensors_file file;
} checkpoint_copy;

static void copy_checkpoint(checkpoint_copy *copy) {
    temporary_directory(copy->directory, sizeof copy->directory);
    char config_path[160];
    size_t length;
    void *config = read_bytes(UPSTREAM "/qwen3_tiny/config.json", &length);
    snprintf(config_path, sizeof config_path, "%s/config.json", copy->directory);
    write_bytes(config_path, config, length);
    free(config);
    snprintf(copy->weights, sizeof copy->weights, "%s/model.safetensors", copy->directory);
    copy->bytes = read_bytes(UPSTREAM "/qwen3_tiny/model.safetensors", &copy->length);
    copy->header_length = 0;
    for (int i = 7; i >= 0; i--) copy->header_length = copy->header_length << 8 | copy->bytes[i];
    cr_assert_null(parity_safetensors_open(UPSTREAM "/qwen3_tiny/model.safetensors", &copy->file));
}

static void write_checkpoint(const checkpoint_copy *copy) { write_bytes(copy->weights, copy->bytes, copy->length); }

static void remove_checkpoint(checkpoint_copy *copy) {
    parity_safetensors_close(&copy->file);
    free(copy->bytes);
    char command[128];
    snprintf(command, sizeof command, "rm -rf %s", copy->directory);
    cr_assert_eq(system(command), 0);
}

// A weight with NaN/Inf is refused at load naming the file and the tensor (it used to be blamed on
// the embedding's gradient, the first in parameter order); a tensor the config implies but the file
// lacks is named against the file, not config.json.
Test(checkpoint, a_damaged_weight_or_a_missing_tensor_names_the_file_and_tensor) {
    static const char down_proj[] = "model.layers.1.mlp.down_proj.weight";
    static const struct {
        const char *what;
        float value; // written over the tensor's element 3; 0: rename the tensor instead
        const char *expected;
    } rows[] = {
        {"NaN", NAN, "model.safetensors: tensor 'model.layers.1.mlp.down_proj.weight' (64, 128) has NaN at flat index 3"},
        {"-Inf", -INFINITY, "model.safetensors: tensor 'model.layers.1.mlp.down_proj.weight' (64, 128) has -Inf at flat index 3"},
        {"missing", 0, "model.safetensors: no tensor named 'model.layers.1.mlp.down_proj.weight', which the config implies"},
    };
    for (size_t row = 0; row < sizeof rows / sizeof rows[0]; row++) {
        checkpoint_copy copy;
        copy_checkpoint(&copy);
        if (rows[row].value != 0) {
            const parity_safetensors_entry *entry = parity_safetensors_find(&copy.file, down_proj);
            cr_assert_not_null(entry);
            cr_assert_eq(entry->dtype, PARITY_F32);
            memcpy(copy.bytes + 8 + copy.header_length + entry->begin + 3 * sizeof(float), &rows[row].value, sizeof(float));
        } else { // same length, so the offsets still tile the data
            char *name = memmem(copy.bytes + 8, copy.header_length, down_proj, strlen(down_proj));
            cr_assert_not_null(name);
            name[strlen(down_proj) - 1] = 'X';
        }
        write_checkpoint(&copy);
        parity_evaluation_options options = {
            .checkpoint = copy.directory, .batch_path = UPSTREAM "/qwen3_tiny/batch.safetensors", .dtype = PARITY_F32,
            .device = PARITY_CPU, .eager_baseline = true,
        };
        parity_evaluation evaluation;
        parity_error *error = parity_evaluate(&options, &evaluation);
        cr_expect_not_null(error, "%s: accepted", rows[row].what);
        if (error) {
            cr_expect_eq(parity_error_kind_of(error), PARITY_ERROR_DATA, "%s: a data error (exit 3)", rows[row].what);
            const char *text = error_text(error);
            cr_expect(strstr(text, rows[row].expected) && strstr(text, copy.directory), "%s: '%s' lacks '%s'", rows[row].what,
                      text, rows[row].expected);
        }
        parity_evaluation_release(&evaluation);
        remove_checkpoint(&copy);
    }
}

Test(checkpoint, truncated_checkpoint_fails_naming_the_file) {
    char directory[64], path[160];
    temporary_directory(directory, sizeof directory);
    size_t length;
    void *bytes = read_bytes(UPSTREAM "/qwen3_tiny/model.safetensors", &length);
    snprintf(path, sizeof path, "%s/model.safetensors", directory);
    write_bytes(path, bytes, length - 1000);
    free(bytes);
    bytes = read_bytes(UPSTREAM "/qwen3_tiny/config.json", &length);
    char config_path[160];
    snprintf(config_path, sizeof config_path, "%s/config.json", directory);
    write_bytes(config_path, bytes, length);
    free(bytes);
    parity_model_config config;
    parity_parameters parameters = {0};
    parity_error *error = parity_checkpoint_load(directory, PARITY_F64, &config, &parameters);
    cr_assert_not_null(error);
    const char *text = error_text(error);
    cr_expect(strstr(text, "model.safetensors") && strstr(text, "truncated"), "%s", text);
    parity_parameters_release(&parameters);
    unlink(path);
    unlink(config_path);
    rmdir(directory);
}

Test(checkpoint, integer_weights_are_rejected_naming_the_tensor) {
    char directory[64], path[160], config_path[160];
    temporary_directory(directory, sizeof directory);
    snprintf(path, sizeof path, "%s/model.safetensors", directory);
    write_safetensors_raw(path, "{\"model.norm.weight\":{\"dtype\":\"I32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
                          (unsigned char[8]){0}, 8);
    size_t length;
    void *bytes = read_bytes(UPSTREAM "/qwen3_tiny/config.json", &length);
    snprintf(config_path, sizeof config_path, "%s/config.json", directory);
    write_bytes(config_path, bytes, length);
    free(bytes);
    parity_model_config config;
    parity_parameters parameters = {0};
    parity_error *error = parity_checkpoint_load(directory, PARITY_F64, &config, &parameters);
    cr_assert_not_null(error);
    const char *text = error_text(error);
    cr_expect(strstr(text, "model.norm.weight") && strstr(text, "I32"), "%s", text);
    parity_parameters_release(&parameters);
    unlink(path);
    unlink(config_path);
    rmdir(directory);
}

static parity_tensor filled(int64_t rows, int64_t columns, double value) {
    parity_tensor tensor;
    cr_assert_null(parity_tensor_alloc(&tensor, PARITY_F32, PARITY_CPU, PARITY_SHAPE(rows, columns)));
    for (int64_t i = 0; i < tensor.numel; i++) parity_tensor_set(&tensor, i, value);
    return tensor;
}

Test(checkpoint, missing_expert_and_unpaired_gate_are_named) {
    // E = 2, H = 4, I = 3: feed expert 0 completely and only expert 1's gate.
    parity_expert_converter *converter;
    cr_assert_null(parity_expert_converter_new(2, 4, 3, &converter));
    parity_parameters parameters = {0};
    const struct { const char *name; int64_t rows, columns; } pieces[] = {
        {"model.layers.0.mlp.experts.0.gate_proj.weight", 3, 4},
        {"model.layers.0.mlp.experts.0.up_proj.weight", 3, 4},
        {"model.layers.0.mlp.experts.0.down_proj.weight", 4, 3},
        {"model.layers.0.mlp.experts.1.gate_proj.weight", 3, 4},
        {"model.layers.0.mlp.experts.1.down_proj.weight", 4, 3},
    };
    for (size_t i = 0; i < sizeof pieces / sizeof pieces[0]; i++) {
        parity_tensor piece = filled(pieces[i].rows, pieces[i].columns, (double)i);
        cr_assert_null(parity_expert_converter_feed(converter, pieces[i].name, &piece, &parameters));
        parity_tensor_release(&piece);
    }
    parity_error *error = parity_expert_converter_finish(converter);
    cr_assert_not_null(error);
    const char *text = error_text(error);
    cr_expect(strstr(text, "model.layers.0.mlp.experts") && strstr(text, "expert 1 has gate_proj without its up_proj"), "%s", text);
    parity_expert_converter_free(converter);

    cr_assert_null(parity_expert_converter_new(3, 4, 3, &converter));
    parity_tensor piece = filled(3, 4, 1.0);
    cr_assert_null(parity_expert_converter_feed(converter, "model.layers.5.mlp.experts.0.gate_proj.weight", &piece, &parameters));
    error = parity_expert_converter_finish(converter);
    text = error_text(error);
    cr_expect(strstr(text, "model.layers.5.mlp") && strstr(text, "expert 1 is missing") && strstr(text, "expert 2 is missing"), "%s", text);
    parity_expert_converter_free(converter);
    parity_parameters_release(&parameters);
}

Test(checkpoint, fused_layouts_pass_through_or_transpose_and_ambiguity_is_refused) {
    parity_expert_converter *converter;
    cr_assert_null(parity_expert_converter_new(2, 4, 3, &converter)); // H = 4, I = 3, 2I = 6
    parity_parameters parameters = {0};
    parity_tensor v5, transposed;
    cr_assert_null(parity_tensor_alloc(&v5, PARITY_F32, PARITY_CPU, PARITY_SHAPE(2, 6, 4)));
    for (int64_t i = 0; i < v5.numel; i++) parity_tensor_set(&v5, i, (double)i);
    float first_row[4];
    memcpy(first_row, v5.data, sizeof first_row);
    cr_assert_null(parity_expert_converter_feed(converter, "a.mlp.experts.gate_up_proj", &v5, &parameters));
    parity_parameter *kept = parity_parameters_find(&parameters, "a.mlp.experts.gate_up_proj");
    cr_assert(kept && memcmp(kept->value.data, first_row, sizeof first_row) == 0, "v5 layout must pass through untouched");
    cr_assert_null(parity_tensor_alloc(&transposed, PARITY_F32, PARITY_CPU, PARITY_SHAPE(2, 4, 6))); // HF (E, H, 2I)
    for (int64_t i = 0; i < transposed.numel; i++) parity_tensor_set(&transposed, i, (double)i);
    cr_assert_null(parity_expert_converter_feed(converter, "b.mlp.experts.gate_up_proj", &transposed, &parameters));
    parity_parameter *converted = parity_parameters_find(&parameters, "b.mlp.experts.gate_up_proj");
    cr_assert_eq(converted->value.shape[1], 6);
    cr_expect_eq(parity_tensor_get(&converted->value, 1 * 4 + 0), 1.0); // [0, 1, 0] <- HF [0, 0, 1]
    parity_expert_converter_free(converter);

    cr_assert_null(parity_expert_converter_new(2, 4, 2, &converter)); // H = 2I = 4: square blocks
    parity_tensor square;
    cr_assert_null(parity_tensor_zeros(&square, PARITY_F32, PARITY_CPU, PARITY_SHAPE(2, 4, 4)));
    parity_error *error = parity_expert_converter_feed(converter, "c.mlp.experts.gate_up_proj", &square, &parameters);
    cr_assert_not_null(error);
    cr_expect(strstr(error_text(error), "ambiguous"));
    parity_tensor_release(&square);
    parity_expert_converter_free(converter);
    parity_parameters_release(&parameters);
}

typedef struct config_case {
    const char *name;
    const char *json;
    const char *expected;
} config_case;

Test(checkpoint, bad_config_json_is_rejected_naming_the_field) {
    static const config_case cases[] = {
        {"not json", "{\"model_type\": ", "not valid JSON"},
        {"unknown model", "{\"model_type\":\"gpt2\",\"vocab_size\":3}", "model_type 'gpt2' is not supported"},
        {"missing hidden", "{\"model_type\":\"llama\",\"vocab_size\":3}", "required field 'hidden_size'"},
        {"string where int", "{\"model_type\":\"llama\",\"vocab_size\":\"big\",\"hidden_size\":8}", "field 'vocab_size' must be an integer"},
        {"heads mismatch",
         "{\"model_type\":\"llama\",\"vocab_size\":3,\"hidden_size\":8,\"num_hidden_layers\":1,\"num_attention_heads\":3,"
         "\"num_key_value_heads\":2,\"intermediate_size\":4}", "not a multiple of num_key_value_heads"},
        {"bad rope type",
         "{\"model_type\":\"llama\",\"vocab_size\":3,\"hidden_size\":8,\"num_hidden_layers\":1,\"num_attention_heads\":2,"
         "\"intermediate_size\":4,\"rope_parameters\":{\"rope_type\":\"ntk\",\"rope_theta\":10000}}", "rope_type' is 'ntk'"},
        {"llama3 without original length",
         "{\"model_type\":\"llama\",\"vocab_size\":3,\"hidden_size\":8,\"num_hidden_layers\":1,\"num_attention_heads\":2,"
         "\"intermediate_size\":4,\"rope_theta\":500000,\"rope_scaling\":{\"type\":\"llama3\",\"factor\":8}}", "original_max_position_embeddings"},
        {"hidden_size 1e12", "{\"model_type\":\"llama\",\"vocab_size\":3,\"hidden_size\":1e12,\"num_hidden_layers\":1}",
         "field 'hidden_size' is 1000000000000, outside 1..131072"},
        {"vocab_size 1e9", "{\"model_type\":\"llama\",\"vocab_size\":1000000000,\"hidden_size\":8}",
         "field 'vocab_size' is 1000000000, outside 1..16777216"},
        {"a million experts",
         "{\"model_type\":\"qwen3_moe\",\"vocab_size\":3,\"hidden_size\":8,\"num_hidden_layers\":1,\"num_attention_heads\":2,"
         "\"num_experts\":1000000,\"num_experts_per_tok\":3,\"moe_intermediate_size\":4}", "field 'num_experts' is 1000000, outside 0..16384"},
        {"too many layers", "{\"model_type\":\"llama\",\"vocab_size\":3,\"hidden_size\":8,\"num_hidden_layers\":1000}",
         "field 'num_hidden_layers' is 1000, outside 1..256"},
        {"too many experts per token",
         "{\"model_type\":\"qwen3_moe\",\"vocab_size\":3,\"hidden_size\":8,\"num_hidden_layers\":1,\"num_attention_heads\":2,"
         "\"num_experts\":2,\"num_experts_per_tok\":3,\"moe_intermediate_size\":4}", "num_experts_per_tok 3 exceeds"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        parity_model_config config;
        parity_error *error = parity_model_config_parse(cases[i].json, "dir/config.json", &config);
        cr_expect_not_null(error, "%s: accepted", cases[i].name);
        if (!error) continue;
        const char *text = error_text(error);
        cr_expect(strstr(text, cases[i].expected) && strstr(text, "dir/config.json"), "%s: '%s' lacks '%s'", cases[i].name, text,
                  cases[i].expected);
    }
}

Test(checkpoint, config_reads_both_rope_spellings_and_defaults) {
    parity_model_config config;
    cr_assert_null(parity_model_config_parse(
        "{\"model_type\":\"llama\",\"vocab_size\":3,\"hidden_size\":8,\"num_hidden_layers\":1,\"num_attention_heads\":2,"
        "\"intermediate_size\":4,\"rope_theta\":500000,\"rope_scaling\":{\"rope_type\":\"llama3\",\"factor\":8,"
        "\"original_max_position_embeddings\":32}}", "a", &config));
    cr_expect_eq(config.rope.type, PARITY_ROPE_LLAMA3);
    cr_expect_eq(config.rope.theta, 500000);
    cr_expect_eq(config.head_dim, 4);
    cr_expect_eq(config.num_key_value_heads, 2);
    cr_expect_not(config.tie_word_embeddings);
    cr_assert_null(parity_model_config_read(UPSTREAM "/qwen3_5_tiny/config.json", &config));
    cr_expect_eq(config.rope.partial_rotary_factor, 0.25);
    cr_expect_eq(config.layer_kinds[0], PARITY_LAYER_LINEAR_ATTENTION);
    cr_expect_eq(config.layer_kinds[1], PARITY_LAYER_FULL_ATTENTION);
    cr_assert_null(parity_model_config_read(UPSTREAM "/qwen3_moe_tiny/config.json", &config));
    cr_expect_eq(config.num_experts, 4);
    cr_expect_not(parity_model_config_is_moe_layer(&config, 0));
    cr_expect(parity_model_config_is_moe_layer(&config, 1));
    cr_assert_null(parity_model_config_read(UPSTREAM "/deepseek_v3_tiny/config.json", &config));
    cr_expect_eq(config.rope.layout, PARITY_ROTARY_INTERLEAVED);
    cr_expect_not(parity_model_config_is_moe_layer(&config, 0));
}

Test(checkpoint, packed_batch_gives_documents_and_shifted_targets) {
    parity_batch batch;
    parity_error *error = parity_batch_read(UPSTREAM "/qwen3_tiny/batch_packed.safetensors", 400, &batch);
    cr_assert_null(error, "%s", error ? error_text(error) : "");
    cr_expect_eq(batch.token_count, 80);
    cr_expect_eq(batch.document_count, 2);
    const int64_t *bounds = batch.cu_seqlens.data;
    cr_expect(bounds[0] == 0 && bounds[1] == 33 && bounds[2] == 80);
    const int64_t *positions = batch.positions.data, *targets = batch.targets.data;
    cr_expect_eq(positions[33], 0);
    cr_expect_eq(targets[79], PARITY_IGNORE_INDEX);
    cr_expect_eq(targets[32], PARITY_IGNORE_INDEX); // label at document 2's start is -100
    parity_batch_release(&batch);

    cr_assert_null(parity_batch_read(UPSTREAM "/qwen3_tiny/batch.safetensors", 400, &batch));
    cr_expect_eq(batch.document_count, 2);
    cr_expect_eq(((const int64_t *)batch.cu_seqlens.data)[1], 40);
    parity_batch_release(&batch);

    error = parity_batch_read(UPSTREAM "/qwen3_tiny/batch.safetensors", 10, &batch); // ids beyond a tiny vocabulary
    cr_assert_not_null(error);
    cr_expect(strstr(error_text(error), "outside the vocabulary"));
}

// A checkpoint split into two shards listed by model.safetensors.index.json loads to the same
// parameters as the single file; an index naming a missing shard fails naming it.
Test(checkpoint, sharded_checkpoints_load_through_the_index) {
    char directory[64];
    temporary_directory(directory, sizeof directory);
    parity_safetensors_file single;
    cr_assert_null(parity_safetensors_open(UPSTREAM "/qwen3_moe_tiny/model.safetensors", &single));
    parity_tensor *tensors = calloc(single.entry_count, sizeof *tensors);
    parity_safetensors_item *items = calloc(single.entry_count, sizeof *items);
    for (size_t i = 0; i < single.entry_count; i++) {
        cr_assert_null(parity_safetensors_load(&single, single.entries[i].name, single.entries[i].dtype, &tensors[i]));
        items[i] = (parity_safetensors_item){single.entries[i].name, &tensors[i]};
    }
    size_t half = single.entry_count / 2;
    char path[256];
    snprintf(path, sizeof path, "%s/model-00001-of-00002.safetensors", directory);
    cr_assert_null(parity_safetensors_write(path, items, half));
    snprintf(path, sizeof path, "%s/model-00002-of-00002.safetensors", directory);
    cr_assert_null(parity_safetensors_write(path, items + half, single.entry_count - half));
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", directory);
    FILE *index = fopen(path, "w");
    fprintf(index, "{\"metadata\": {}, \"weight_map\": {");
    for (size_t i = 0; i < single.entry_count; i++)
        fprintf(index, "%s\"%s\": \"model-0000%d-of-00002.safetensors\"", i ? ", " : "", single.entries[i].name, i < half ? 1 : 2);
    fprintf(index, "}}");
    fclose(index);
    size_t length;
    void *config = read_bytes(UPSTREAM "/qwen3_moe_tiny/config.json", &length);
    snprintf(path, sizeof path, "%s/config.json", directory);
    write_bytes(path, config, length);
    free(config);

    parity_model_config sharded_config, single_config;
    parity_parameters sharded = {0}, reference = {0};
    parity_error *error = parity_checkpoint_load(directory, PARITY_F32, &sharded_config, &sharded);
    cr_assert_null(error, "%s", error ? error_text(error) : "");
    cr_assert_null(parity_checkpoint_load(UPSTREAM "/qwen3_moe_tiny", PARITY_F32, &single_config, &reference));
    cr_assert_eq(sharded.count, reference.count);
    for (size_t i = 0; i < reference.count; i++) {
        parity_parameter *match = parity_parameters_find(&sharded, reference.items[i].name);
        cr_assert_not_null(match, "%s missing from the sharded load", reference.items[i].name);
        cr_expect(memcmp(match->value.data, reference.items[i].value.data, parity_tensor_nbytes(&match->value)) == 0, "%s differs",
                  reference.items[i].name);
    }
    parity_parameters_release(&sharded);
    parity_parameters_release(&reference);

    snprintf(path, sizeof path, "%s/model-00002-of-00002.safetensors", directory);
    unlink(path);
    error = parity_checkpoint_load(directory, PARITY_F32, &sharded_config, &sharded);
    cr_assert_not_null(error);
    cr_expect(strstr(error_text(error), "model-00002-of-00002.safetensors"));
    parity_parameters_release(&sharded);
    for (size_t i = 0; i < single.entry_count; i++) parity_tensor_release(&tensors[i]);
    free(tensors);
    free(items);
    parity_safetensors_close(&single);
    char command[128];
    snprintf(command, sizeof command, "rm -rf %s", directory);
    cr_assert_eq(system(command), 0);
}
