// test_golden.c: the HDF5 golden store. A golden must come back exactly as written (every field,
// norms and sketches bitwise, the optional migration note); writing must be atomic (no temp file, no partial
// file, an old file intact) and never overwrite without force; reading must reject truncated,
// foreign, schema-mismatched and incomplete files with an error naming the file and the item; bf16
// data must be stored as uint16 with dtype = "bf16"; and `parity golden show`
// (parity_golden_describe) must show the values.
// (Damage to a written file, bit by bit, is test_golden_integrity.c's.)
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "golden/golden.h"
#include "golden/golden_hdf5.h"
#include "golden/golden_seal.h"

#define NAME_WIDTH sizeof(((parity_step_result *)0)->parameter_names[0])

static char *error_text(parity_error *error) {
    static char buffer[4096];
    parity_error_format(error, buffer, sizeof buffer);
    return buffer;
}

static void temporary_directory(char *path, size_t size) {
    snprintf(path, size, "/tmp/parity-golden-XXXXXX");
    cr_assert_not_null(mkdtemp(path));
}

// Names in `directory` other than . and .., as "a,b," (for "nothing was left behind" checks).
static void directory_listing(const char *directory, char *out, size_t size) {
    out[0] = '\0';
    DIR *dir = opendir(directory);
    cr_assert_not_null(dir, "%s", directory);
    struct dirent *entry;
    while ((entry = readdir(dir)))
        if (strcmp(entry->d_name, ".") != 0 && strcmp(entry->d_name, "..") != 0) {
            strncat(out, entry->d_name, size - strlen(out) - 2);
            strcat(out, ",");
        }
    closedir(dir);
}

static void remove_tree(const char *path) {
    char command[512];
    snprintf(command, sizeof command, "chmod -R u+rwx '%s' 2>/dev/null; rm -rf '%s'", path, path);
    cr_expect_eq(system(command), 0);
}

// ---- a golden built in memory ----

typedef struct golden_shape {
    bool aux_loss;      // an MoE model's load-balancing loss
    bool position_ids;  // packed rows
    bool logits_sum;    // false: NaN (not computed)
    bool logits_sample; // fp64 / fp32 / bf16 samples in /expected and /eager/*
    bool loss_input;    // the loss input's gradient norm and sketch
    int64_t batch, tokens;
} golden_shape;

static const char *parameter_names[] = {"model.embed_tokens.weight", "model.layers.0.self_attn.q_proj.weight",
                                        "model.layers.0.mlp.experts.gate_up_proj", "lm_head.weight"};
#define PARAMETERS 4

// Values that are not short binary fractions, so "bitwise equal" means something.
static void fill_values(parity_step_result *values, const golden_shape *shape, double scale, parity_dtype sample_dtype) {
    values->loss = 4.8520302639196169 * scale;
    values->has_aux_loss = shape->aux_loss;
    values->aux_loss = shape->aux_loss ? 0.0123456789012345678 * scale : NAN;
    values->grad_norm = 1.2345678901234567 * scale;
    values->logits_sum = shape->logits_sum ? -3.1415926535897931e2 * scale : NAN;
    values->parameter_count = PARAMETERS;
    values->parameter_names = calloc(PARAMETERS, NAME_WIDTH);
    values->parameter_grad_norms = malloc(PARAMETERS * sizeof(double));
    values->parameter_grad_sketches = malloc(PARAMETERS * PARITY_SKETCH_K * sizeof(double));
    for (int i = 0; i < PARAMETERS; i++) {
        snprintf(values->parameter_names[i], NAME_WIDTH, "%s", parameter_names[i]);
        values->parameter_grad_norms[i] = (0.1 + i / 3.0) * scale;
        for (int j = 0; j < PARITY_SKETCH_K; j++) // signed, of the norm's size
            values->parameter_grad_sketches[i * PARITY_SKETCH_K + j] = (j % 2 ? -1 : 1) * (0.07 + i / 5.0 + j / 11.0) * scale;
    }
    values->has_loss_input = shape->loss_input;
    values->loss_input_grad_norm = shape->loss_input ? 0.0200360067767 * scale : NAN;
    for (int j = 0; j < PARITY_SKETCH_K; j++) values->loss_input_grad_sketch[j] = shape->loss_input ? (j - 1.5) / 97.0 * scale : NAN;
    if (shape->logits_sample) {
        cr_assert_null(parity_tensor_alloc(&values->logits, sample_dtype, PARITY_CPU, PARITY_SHAPE(2, 3)));
        for (int64_t i = 0; i < 6; i++) parity_tensor_set(&values->logits, i, (i - 2.5) / 7.0 * scale);
    }
}

static void make_golden(parity_golden *golden, const golden_shape *shape) {
    memset(golden, 0, sizeof *golden);
    golden->schema_version = PARITY_GOLDEN_SCHEMA_VERSION;
    snprintf(golden->git_sha, sizeof golden->git_sha, "0123456789abcdef0123456789abcdef01234567");
    snprintf(golden->created, sizeof golden->created, "2025-01-02T03:04:05Z");
    snprintf(golden->host, sizeof golden->host, "testhost");
    snprintf(golden->device, sizeof golden->device, "cpu (Test CPU @ 3.0GHz)");
    snprintf(golden->compiler, sizeof golden->compiler, "gcc 12.2.0");
    snprintf(golden->libraries, sizeof golden->libraries, "HDF5 1.10.8, OpenBLAS 0.3.21");
    snprintf(golden->command, sizeof golden->command, "parity golden generate --suite smoke --model qwen3_moe_tiny");
    snprintf(golden->suite, sizeof golden->suite, "smoke");
    snprintf(golden->model, sizeof golden->model, "qwen3_moe_tiny");
    snprintf(golden->case_name, sizeof golden->case_name, "%s", shape->position_ids ? "packed" : "plain");
    snprintf(golden->model_type, sizeof golden->model_type, "qwen3_moe");
    golden->model_config_json = strdup("{\"model_type\": \"qwen3_moe\", \"hidden_size\": 64, \"num_hidden_layers\": 2, \"vocab_size\": 128}");
    snprintf(golden->weight_source, sizeof golden->weight_source, "checkpoint golden/upstream/qwen3_moe_tiny");
    snprintf(golden->weight_sha256, sizeof golden->weight_sha256, "%s", "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08");
    golden->weight_seed = 18446744073709551557ull; // the largest 64-bit prime: no sign or width slips
    snprintf(golden->batch_source, sizeof golden->batch_source, "%s [%lld, %lld] seed 7", shape->position_ids ? "packed" : "plain",
             (long long)shape->batch, (long long)shape->tokens);
    snprintf(golden->batch_sha256, sizeof golden->batch_sha256, "%s", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    cr_assert_null(parity_tensor_alloc(&golden->input_ids, PARITY_I64, PARITY_CPU, PARITY_SHAPE(shape->batch, shape->tokens)));
    cr_assert_null(parity_tensor_alloc(&golden->labels, PARITY_I64, PARITY_CPU, PARITY_SHAPE(shape->batch, shape->tokens)));
    int64_t *ids = golden->input_ids.data, *labels = golden->labels.data;
    for (int64_t i = 0; i < golden->input_ids.numel; i++) {
        ids[i] = (i * 37 + 11) % 128;
        labels[i] = i % 5 == 4 ? -100 : (i * 53 + 3) % 128;
    }
    if (shape->position_ids) {
        cr_assert_null(parity_tensor_alloc(&golden->position_ids, PARITY_I64, PARITY_CPU, PARITY_SHAPE(shape->batch, shape->tokens)));
        int64_t *positions = golden->position_ids.data;
        for (int64_t i = 0; i < golden->position_ids.numel; i++) positions[i] = (i % shape->tokens) % (shape->tokens / 2);
    }
    fill_values(&golden->expected, shape, 1.0, PARITY_F64);
    // fp32 first, then bf16: the file must keep this order (not the alphabetical one)
    golden->precision_count = 2;
    snprintf(golden->precisions[0].dtype, sizeof golden->precisions[0].dtype, "fp32");
    fill_values(&golden->precisions[0].eager, shape, 1.0 + 3e-7, PARITY_F32);
    snprintf(golden->precisions[1].dtype, sizeof golden->precisions[1].dtype, "bf16");
    fill_values(&golden->precisions[1].eager, shape, 1.0 + 5e-3, PARITY_BF16);
}

static const golden_shape small_plain = {.aux_loss = false, .position_ids = false, .logits_sum = true, .logits_sample = false,
                                         .batch = 2, .tokens = 8};

// ---- comparisons ----

static void expect_tensor_equal(const parity_tensor *a, const parity_tensor *b, const char *what) {
    cr_expect_eq(a->ndim, b->ndim, "%s: rank %d vs %d", what, a->ndim, b->ndim);
    cr_expect(parity_tensor_same_shape(a, b), "%s: shape", what);
    cr_expect_eq(a->dtype, b->dtype, "%s: dtype %s vs %s", what, parity_dtype_name(a->dtype), parity_dtype_name(b->dtype));
    if (a->numel > 0 && parity_tensor_same_shape(a, b) && a->dtype == b->dtype)
        cr_expect(memcmp(a->data, b->data, parity_tensor_nbytes(a)) == 0, "%s: data differs", what);
}

static void expect_bitwise(double a, double b, const char *what) {
    cr_expect(memcmp(&a, &b, sizeof a) == 0, "%s: %.17g vs %.17g", what, a, b);
}

static void expect_values_equal(const parity_step_result *a, const parity_step_result *b, const char *where) {
    char what[128];
    snprintf(what, sizeof what, "%s loss", where);
    expect_bitwise(a->loss, b->loss, what);
    cr_expect_eq(a->has_aux_loss, b->has_aux_loss, "%s has_aux_loss", where);
    if (a->has_aux_loss) expect_bitwise(a->aux_loss, b->aux_loss, where);
    else cr_expect(isnan(b->aux_loss), "%s: absent aux_loss reads as NaN", where);
    expect_bitwise(a->grad_norm, b->grad_norm, where);
    expect_bitwise(a->logits_sum, b->logits_sum, where);
    cr_assert_eq(a->parameter_count, b->parameter_count, "%s parameter_count", where);
    for (size_t i = 0; i < a->parameter_count; i++) {
        cr_expect_str_eq(a->parameter_names[i], b->parameter_names[i], "%s name %zu", where, i);
        snprintf(what, sizeof what, "%s norm %zu", where, i);
        expect_bitwise(a->parameter_grad_norms[i], b->parameter_grad_norms[i], what);
        for (int j = 0; j < PARITY_SKETCH_K; j++) {
            snprintf(what, sizeof what, "%s sketch %zu[%d]", where, i, j);
            expect_bitwise(a->parameter_grad_sketches[i * PARITY_SKETCH_K + j], b->parameter_grad_sketches[i * PARITY_SKETCH_K + j], what);
        }
    }
    cr_expect_eq(a->has_loss_input, b->has_loss_input, "%s has_loss_input", where);
    if (a->has_loss_input) {
        expect_bitwise(a->loss_input_grad_norm, b->loss_input_grad_norm, where);
        for (int j = 0; j < PARITY_SKETCH_K; j++) expect_bitwise(a->loss_input_grad_sketch[j], b->loss_input_grad_sketch[j], where);
    } else
        cr_expect(isnan(b->loss_input_grad_norm) && isnan(b->loss_input_grad_sketch[0]), "%s: an absent loss input reads as NaN", where);
    snprintf(what, sizeof what, "%s logits_sample", where);
    expect_tensor_equal(&a->logits, &b->logits, what);
}

static void expect_goldens_equal(const parity_golden *a, const parity_golden *b) {
    cr_expect_eq(b->schema_version, PARITY_GOLDEN_SCHEMA_VERSION);
    const char *pairs[][2] = {
        {a->git_sha, b->git_sha},           {a->created, b->created},         {a->host, b->host},
        {a->device, b->device},             {a->compiler, b->compiler},       {a->libraries, b->libraries},
        {a->command, b->command},           {a->suite, b->suite},             {a->model, b->model},
        {a->case_name, b->case_name},       {a->model_type, b->model_type},   {a->model_config_json, b->model_config_json},
        {a->weight_source, b->weight_source}, {a->weight_sha256, b->weight_sha256}, {a->batch_source, b->batch_source},
        {a->batch_sha256, b->batch_sha256},
    };
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) cr_expect_str_eq(pairs[i][0], pairs[i][1], "string field %zu", i);
    cr_expect_eq(a->weight_seed, b->weight_seed, "weight_seed %llu vs %llu", (unsigned long long)a->weight_seed,
                 (unsigned long long)b->weight_seed);
    expect_tensor_equal(&a->input_ids, &b->input_ids, "input_ids");
    expect_tensor_equal(&a->labels, &b->labels, "labels");
    expect_tensor_equal(&a->position_ids, &b->position_ids, "position_ids");
    expect_values_equal(&a->expected, &b->expected, "/expected");
    cr_assert_eq(a->precision_count, b->precision_count);
    for (size_t i = 0; i < a->precision_count; i++) {
        cr_expect_str_eq(a->precisions[i].dtype, b->precisions[i].dtype, "precision %zu in write order", i);
        expect_values_equal(&a->precisions[i].eager, &b->precisions[i].eager, a->precisions[i].dtype);
    }
}

// ---- round trip ----

Test(golden, round_trip_keeps_every_field) {
    static const struct {
        const char *name;
        golden_shape shape;
    } rows[] = {
        {"plain, no aux loss", {.aux_loss = false, .position_ids = false, .logits_sum = true, .batch = 2, .tokens = 8}},
        {"packed, aux loss, loss input", {.aux_loss = true, .position_ids = true, .logits_sum = true, .loss_input = true, .batch = 1, .tokens = 16}},
        {"packed, no aux loss, logits_sum NaN", {.aux_loss = false, .position_ids = true, .logits_sum = false, .batch = 2, .tokens = 6}},
        {"plain, aux loss, logits samples, loss input",
         {.aux_loss = true, .position_ids = false, .logits_sum = true, .logits_sample = true, .loss_input = true, .batch = 3, .tokens = 5}},
    };
    char directory[64];
    temporary_directory(directory, sizeof directory);
    for (size_t row = 0; row < sizeof rows / sizeof rows[0]; row++) {
        char path[256];
        snprintf(path, sizeof path, "%s/smoke/qwen3_moe_tiny/case%zu.h5", directory, row); // parents created on the way
        parity_golden written, read;
        make_golden(&written, &rows[row].shape);
        if (row == 1) snprintf(written.migrated, sizeof written.migrated, "schema_version 1 -> 2 on 2025-01-03T00:00:00Z by a test");
        parity_error *error = parity_golden_write(path, &written, false);
        cr_assert_null(error, "%s: %s", rows[row].name, error ? error_text(error) : "");
        error = parity_golden_read(path, &read);
        cr_assert_null(error, "%s: %s", rows[row].name, error ? error_text(error) : "");
        expect_goldens_equal(&written, &read);
        cr_expect_str_eq(read.migrated, written.migrated, "%s: the migration note (absent unless set)", rows[row].name);
        cr_expect_eq(read.position_ids.numel > 0, rows[row].shape.position_ids, "%s: position_ids presence", rows[row].name);
        cr_expect_not_null(parity_golden_eager(&read, "bf16"));
        cr_expect_eq(parity_golden_eager(&read, "bf16"), &read.precisions[1].eager);
        cr_expect_null(parity_golden_eager(&read, "fp16"));
        parity_golden_release(&written);
        parity_golden_release(&read);
        cr_expect_null(read.model_config_json, "release zeroes the golden");
        cr_expect_eq(read.precision_count, 0);
    }
    remove_tree(directory);
}

Test(golden, bf16_logits_sample_is_stored_as_uint16_with_dtype) {
    char directory[64], path[256];
    temporary_directory(directory, sizeof directory);
    snprintf(path, sizeof path, "%s/g.h5", directory);
    golden_shape shape = small_plain;
    shape.logits_sample = true;
    parity_golden golden;
    make_golden(&golden, &shape);
    cr_assert_null(parity_golden_write(path, &golden, false));
    hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    cr_assert_geq(file, 0);
    static const struct {
        const char *dataset, *dtype;
        H5T_class_t type_class;
        size_t size;
    } rows[] = {
        {"/eager/bf16/logits_sample", "bf16", H5T_INTEGER, 2},
        {"/eager/fp32/logits_sample", "fp32", H5T_FLOAT, 4},
        {"/expected/logits_sample", "fp64", H5T_FLOAT, 8},
        {"/batch/input_ids", "int64", H5T_INTEGER, 8},
    };
    for (size_t row = 0; row < sizeof rows / sizeof rows[0]; row++) {
        hid_t dataset = H5Dopen2(file, rows[row].dataset, H5P_DEFAULT);
        cr_assert_geq(dataset, 0, "%s", rows[row].dataset);
        hid_t type = H5Dget_type(dataset);
        cr_expect_eq(H5Tget_class(type), rows[row].type_class, "%s class", rows[row].dataset);
        cr_expect_eq(H5Tget_size(type), rows[row].size, "%s size", rows[row].dataset);
        char dtype[32] = "";
        cr_expect_null(parity_hdf5_read_string_attribute(dataset, path, "dtype", dtype, sizeof dtype));
        cr_expect_str_eq(dtype, rows[row].dtype, "%s dtype attribute", rows[row].dataset);
        H5Tclose(type);
        H5Dclose(dataset);
    }
    H5Fclose(file);
    parity_golden_release(&golden);
    remove_tree(directory);
}

// ---- the typed helpers: every dtype round-trips bitwise; bf16 and fp16 go through uint16 ----

Test(golden, hdf5_tensor_helpers_round_trip_bitwise) {
    static const uint16_t half_bits[] = {0x0000, 0x8000, 0x3f80, 0xbf80, 0x7f80, 0xff80, 0x7fc1, 0x0001, 0x7f7f, 0x4049, 0xc2f7, 0x3c00};
    static const struct {
        parity_dtype dtype;
        const char *stored_as; // HDF5 class and size we expect in the file
        H5T_class_t type_class;
        size_t size;
        bool is_signed;
    } rows[] = {
        {PARITY_BF16, "uint16", H5T_INTEGER, 2, false}, {PARITY_F16, "uint16", H5T_INTEGER, 2, false},
        {PARITY_F64, "float64", H5T_FLOAT, 8, true},    {PARITY_F32, "float32", H5T_FLOAT, 4, true},
        {PARITY_I64, "int64", H5T_INTEGER, 8, true},    {PARITY_I32, "int32", H5T_INTEGER, 4, true},
        {PARITY_U8, "uint8", H5T_INTEGER, 1, false},
    };
    char directory[64], path[256];
    temporary_directory(directory, sizeof directory);
    snprintf(path, sizeof path, "%s/tensors.h5", directory);
    hid_t file = H5Fcreate(path, H5F_ACC_EXCL, H5P_DEFAULT, H5P_DEFAULT);
    cr_assert_geq(file, 0);
    parity_tensor written[sizeof rows / sizeof rows[0]];
    for (size_t row = 0; row < sizeof rows / sizeof rows[0]; row++) {
        parity_tensor *tensor = &written[row];
        cr_assert_null(parity_tensor_alloc(tensor, rows[row].dtype, PARITY_CPU, PARITY_SHAPE(3, 4)));
        uint8_t *bytes = tensor->data;
        if (parity_dtype_size(rows[row].dtype) == 2) memcpy(bytes, half_bits, sizeof half_bits); // NaN payload, -0, inf, subnormal
        else
            for (size_t i = 0; i < parity_tensor_nbytes(tensor); i++) bytes[i] = (uint8_t)(i * 89 + 7 + row);
        char name[32];
        snprintf(name, sizeof name, "t_%s", parity_dtype_name(rows[row].dtype));
        parity_error *error = parity_hdf5_write_tensor(file, path, name, tensor);
        cr_assert_null(error, "%s", error ? error_text(error) : "");
    }
    H5Fclose(file);
    file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    cr_assert_geq(file, 0);
    for (size_t row = 0; row < sizeof rows / sizeof rows[0]; row++) {
        char name[32];
        snprintf(name, sizeof name, "t_%s", parity_dtype_name(rows[row].dtype));
        parity_tensor read;
        parity_error *error = parity_hdf5_read_tensor(file, path, name, 2, &read);
        cr_assert_null(error, "%s", error ? error_text(error) : "");
        expect_tensor_equal(&written[row], &read, name);
        hid_t dataset = H5Dopen2(file, name, H5P_DEFAULT);
        hid_t type = H5Dget_type(dataset);
        cr_expect_eq(H5Tget_class(type), rows[row].type_class, "%s stored as %s", name, rows[row].stored_as);
        cr_expect_eq(H5Tget_size(type), rows[row].size, "%s stored as %s", name, rows[row].stored_as);
        if (rows[row].type_class == H5T_INTEGER)
            cr_expect_eq(H5Tget_sign(type) == H5T_SGN_2, rows[row].is_signed, "%s stored as %s", name, rows[row].stored_as);
        char dtype[32] = "";
        cr_expect_null(parity_hdf5_read_string_attribute(dataset, path, "dtype", dtype, sizeof dtype));
        cr_expect_str_eq(dtype, parity_dtype_name(rows[row].dtype), "%s dtype attribute", name);
        H5Tclose(type);
        H5Dclose(dataset);
        parity_tensor_release(&read);
        parity_tensor_release(&written[row]);
    }
    // wrong rank asked for
    parity_tensor read;
    parity_error *error = parity_hdf5_read_tensor(file, path, "t_bf16", 1, &read);
    cr_assert_not_null(error);
    cr_expect(strstr(error_text(error), "/t_bf16 must have rank 1, it has rank 2"), "%s", error_text(error));
    parity_error_free(error);
    H5Fclose(file);
    remove_tree(directory);
}

// ---- overwriting ----

Test(golden, never_overwrites_without_force) {
    char directory[64], path[256];
    temporary_directory(directory, sizeof directory);
    snprintf(path, sizeof path, "%s/g.h5", directory);
    parity_golden first, second, read;
    make_golden(&first, &small_plain);
    make_golden(&second, &small_plain);
    second.expected.loss = 1.5; // tells the two files apart
    cr_assert_null(parity_golden_write(path, &first, false));

    parity_error *error = parity_golden_write(path, &second, false);
    cr_assert_not_null(error);
    cr_expect_eq(parity_error_kind_of(error), PARITY_ERROR_USAGE);
    cr_expect(strstr(error_text(error), path) && strstr(error_text(error), "use --force"), "%s", error_text(error));
    parity_error_free(error);
    cr_assert_null(parity_golden_read(path, &read));
    expect_bitwise(read.expected.loss, first.expected.loss, "the first golden is still there");
    parity_golden_release(&read);

    error = parity_golden_write(path, &second, true);
    cr_assert_null(error, "%s", error ? error_text(error) : "");
    cr_assert_null(parity_golden_read(path, &read));
    expect_bitwise(read.expected.loss, 1.5, "force replaced it");
    parity_golden_release(&read);
    char listing[512];
    directory_listing(directory, listing, sizeof listing);
    cr_expect_str_eq(listing, "g.h5,", "no temporary file left: %s", listing);
    parity_golden_release(&first);
    parity_golden_release(&second);
    remove_tree(directory);
}

// ---- atomic writes: a failed write leaves nothing behind (and an old file as it was) ----

typedef enum write_failure {
    FAIL_DIRECTORY_NOT_WRITABLE,
    FAIL_PARENT_IS_A_FILE,
    FAIL_DISK_FULL_MIDWAY,       // RLIMIT_FSIZE: writes past the limit fail with EFBIG
    FAIL_MIDWAY_OVER_OLD_FILE,   // the same, with --force over an existing golden
} write_failure;

// Drops to user `nobody` for the write when we are root (root ignores directory permissions).
static void become_nobody(bool on) {
    if (getuid() != 0) return;
    cr_assert_eq(on ? seteuid(65534) : seteuid(0), 0, "seteuid");
}

Test(golden, failed_writes_leave_nothing_behind) {
    static const struct {
        const char *name;
        write_failure failure;
        const char *relative_path; // under the test directory
        const char *expected_error;
        const char *listing_after; // of the test directory
    } rows[] = {
        {"directory not writable", FAIL_DIRECTORY_NOT_WRITABLE, "locked/g.h5", "cannot create: Permission denied", "locked,"},
        {"parent is a file", FAIL_PARENT_IS_A_FILE, "afile/sub/g.h5", "a file is in the way", "afile,"},
        {"disk full midway", FAIL_DISK_FULL_MIDWAY, "g.h5", "write failed: File too large", ""},
        {"disk full midway over an old golden", FAIL_MIDWAY_OVER_OLD_FILE, "g.h5", "write failed: File too large", "g.h5,"},
    };
    for (size_t row = 0; row < sizeof rows / sizeof rows[0]; row++) {
        char directory[64], path[256];
        temporary_directory(directory, sizeof directory);
        cr_assert_eq(chmod(directory, 0755), 0);
        snprintf(path, sizeof path, "%s/%s", directory, rows[row].relative_path);
        golden_shape shape = small_plain;
        parity_golden old, golden;
        make_golden(&old, &shape);
        shape.tokens = 40000; // a 640 kB batch: the write cannot finish under a 64 kB limit
        make_golden(&golden, &shape);
        char locked[256];
        snprintf(locked, sizeof locked, "%s/locked", directory);
        switch (rows[row].failure) {
        case FAIL_DIRECTORY_NOT_WRITABLE: cr_assert_eq(mkdir(locked, 0555), 0); break;
        case FAIL_PARENT_IS_A_FILE: {
            char file[256];
            snprintf(file, sizeof file, "%s/afile", directory);
            FILE *stream = fopen(file, "w");
            fputs("not a directory", stream);
            fclose(stream);
            break;
        }
        case FAIL_MIDWAY_OVER_OLD_FILE: cr_assert_null(parity_golden_write(path, &old, false)); break;
        default: break;
        }
        struct rlimit saved_limit, limit;
        cr_assert_eq(getrlimit(RLIMIT_FSIZE, &saved_limit), 0);
        bool midway = rows[row].failure == FAIL_DISK_FULL_MIDWAY || rows[row].failure == FAIL_MIDWAY_OVER_OLD_FILE;
        if (midway) {
            signal(SIGXFSZ, SIG_IGN);
            limit = saved_limit;
            limit.rlim_cur = 64 * 1024;
            cr_assert_eq(setrlimit(RLIMIT_FSIZE, &limit), 0);
        }
        become_nobody(rows[row].failure == FAIL_DIRECTORY_NOT_WRITABLE);
        parity_error *error = parity_golden_write(path, &golden, true);
        become_nobody(false);
        if (midway) cr_assert_eq(setrlimit(RLIMIT_FSIZE, &saved_limit), 0);

        cr_assert_not_null(error, "%s: the write should fail", rows[row].name);
        cr_log_info("%s: %s", rows[row].name, error_text(error));
        cr_expect(strstr(error_text(error), rows[row].expected_error), "%s: %s", rows[row].name, error_text(error));
        cr_expect(strstr(error_text(error), path) || strstr(error_text(error), directory), "%s: names the file: %s",
                  rows[row].name, error_text(error));
        parity_error_free(error);
        char listing[512];
        directory_listing(directory, listing, sizeof listing);
        cr_expect_str_eq(listing, rows[row].listing_after, "%s: left behind %s", rows[row].name, listing);
        if (rows[row].failure == FAIL_DIRECTORY_NOT_WRITABLE) {
            directory_listing(locked, listing, sizeof listing);
            cr_expect_str_eq(listing, "", "%s: left behind %s", rows[row].name, listing);
        }
        if (rows[row].failure == FAIL_MIDWAY_OVER_OLD_FILE) {
            parity_golden read;
            parity_error *read_error = parity_golden_read(path, &read);
            cr_expect_null(read_error, "the old golden is intact: %s", read_error ? error_text(read_error) : "");
            if (!read_error) expect_goldens_equal(&old, &read);
            parity_golden_release(&read);
        }
        parity_golden_release(&old);
        parity_golden_release(&golden);
        remove_tree(directory);
    }
}

// ---- what the writer refuses (before touching the file system) ----

typedef void (*golden_edit)(parity_golden *golden);
static void clear_git_sha(parity_golden *g) { g->git_sha[0] = '\0'; }
static void short_weight_sha(parity_golden *g) { snprintf(g->weight_sha256, sizeof g->weight_sha256, "abc123"); }
static void upper_batch_sha(parity_golden *g) { g->batch_sha256[0] = 'E'; }
static void bad_config(parity_golden *g) { free(g->model_config_json), g->model_config_json = strdup("{\"hidden_size\": "); }
static void labels_shape(parity_golden *g) { g->labels.shape[1] = 7; }
static void nan_loss(parity_golden *g) { g->expected.loss = NAN; }
static void negative_norm(parity_golden *g) { g->precisions[1].eager.parameter_grad_norms[2] = -1; }
static void precision_named_float32(parity_golden *g) { snprintf(g->precisions[0].dtype, sizeof g->precisions[0].dtype, "float32"); }
static void precision_twice(parity_golden *g) { snprintf(g->precisions[1].dtype, sizeof g->precisions[1].dtype, "fp32"); }
static void eager_name_differs(parity_golden *g) { snprintf(g->precisions[0].eager.parameter_names[1], NAME_WIDTH, "other.weight"); }
static void eager_aux_differs(parity_golden *g) { g->precisions[1].eager.has_aux_loss = true, g->precisions[1].eager.aux_loss = 0.5; }
static void old_schema(parity_golden *g) { g->schema_version = 7; }
static void nan_sketch(parity_golden *g) { g->precisions[0].eager.parameter_grad_sketches[1 * PARITY_SKETCH_K + 2] = NAN; }
static void no_sketches(parity_golden *g) { free(g->expected.parameter_grad_sketches), g->expected.parameter_grad_sketches = NULL; }
static void eager_loss_input_only(parity_golden *g) {
    parity_step_result *bf16 = &g->precisions[1].eager;
    bf16->has_loss_input = true, bf16->loss_input_grad_norm = 0.25;
    for (int j = 0; j < PARITY_SKETCH_K; j++) bf16->loss_input_grad_sketch[j] = 0.1;
}
static void inf_loss_input_sketch(parity_golden *g) {
    for (size_t p = 0; p < 2; p++) {
        parity_step_result *values = p ? &g->precisions[p - 1].eager : &g->expected;
        values->has_loss_input = true, values->loss_input_grad_norm = 0.25;
        for (int j = 0; j < PARITY_SKETCH_K; j++) values->loss_input_grad_sketch[j] = j == 3 ? INFINITY : 0.1;
    }
}

Test(golden, writer_rejects_an_invalid_golden) {
    static const struct {
        const char *name;
        golden_edit edit;
        const char *expected_error;
    } rows[] = {
        {"empty git sha", clear_git_sha, "git_sha is empty"},
        {"short sha256", short_weight_sha, "weight_sha256 'abc123' is not 64 lowercase hex digits"},
        {"uppercase sha256", upper_batch_sha, "batch_sha256"},
        {"config not JSON", bad_config, "/model/config_json is not a JSON object"},
        {"labels shape", labels_shape, "/batch/labels is (2, 7) int64"},
        {"NaN loss", nan_loss, "/expected: loss is nan"},
        {"negative norm", negative_norm, "/eager/bf16: parameter_grad_norms[2] (model.layers.0.mlp.experts.gate_up_proj) is -1"},
        {"precision name", precision_named_float32, "eager precision 0 is 'float32'"},
        {"precision twice", precision_twice, "eager precision 'fp32' given twice"},
        {"eager names differ", eager_name_differs, "/eager/fp32: parameter_names[1] is 'other.weight'"},
        {"eager aux differs", eager_aux_differs, "/eager/bf16: aux_loss is present but /expected has no one"},
        {"schema version", old_schema, "cannot write schema_version 7"},
        {"NaN sketch", nan_sketch, "/eager/fp32: parameter_grad_sketches[1][2] (model.layers.0.self_attn.q_proj.weight) is nan, must be finite"},
        {"no sketches", no_sketches, "/expected: no parameter gradient sketches"},
        {"a loss input in one precision only", eager_loss_input_only,
         "/eager/bf16: the loss input's gradient is present but /expected has no one"},
        {"infinite loss input sketch", inf_loss_input_sketch, "/expected: loss_input_grad_sketch[3] is inf, must be finite"},
    };
    char directory[64];
    temporary_directory(directory, sizeof directory);
    for (size_t row = 0; row < sizeof rows / sizeof rows[0]; row++) {
        char path[256];
        snprintf(path, sizeof path, "%s/sub/g.h5", directory);
        parity_golden golden;
        make_golden(&golden, &small_plain);
        rows[row].edit(&golden);
        parity_error *error = parity_golden_write(path, &golden, false);
        cr_assert_not_null(error, "%s: accepted", rows[row].name);
        cr_expect_eq(parity_error_kind_of(error), PARITY_ERROR_USAGE, "%s", rows[row].name);
        cr_expect(strstr(error_text(error), rows[row].expected_error), "%s: %s", rows[row].name, error_text(error));
        parity_error_free(error);
        char listing[512];
        directory_listing(directory, listing, sizeof listing);
        cr_expect_str_eq(listing, "", "%s: created %s", rows[row].name, listing);
        parity_golden_release(&golden);
    }
    remove_tree(directory);
}

// ---- what the reader refuses: damaged files, other schemas, missing or mistyped items ----

typedef void (*file_edit)(const char *path);

static void truncate_to_half(const char *path) {
    struct stat info;
    cr_assert_eq(stat(path, &info), 0);
    cr_assert_eq(truncate(path, info.st_size / 2), 0);
}
static void replace_with_garbage(const char *path) {
    FILE *stream = fopen(path, "wb");
    for (int i = 0; i < 4096; i++) fputc((i * 131 + 17) & 0xff, stream);
    fclose(stream);
}
static void make_empty(const char *path) { cr_assert_eq(truncate(path, 0), 0); }
static void remove_file(const char *path) { cr_assert_eq(unlink(path), 0); }

// Rewrites the seal of a golden file edited through HDF5 (which keeps the user block but changes
// the bytes after it), so that what the edit tests is the reader's own checks, not the seal's.
static void reseal(const char *path) {
    uint8_t *data = NULL;
    size_t size = 0;
    cr_assert_null(parity_golden_read_bytes(path, &data, &size));
    parity_golden_seal(data, size, PARITY_GOLDEN_SCHEMA_VERSION);
    FILE *stream = fopen(path, "wb");
    cr_assert_not_null(stream);
    cr_assert_eq(fwrite(data, 1, size, stream), size);
    fclose(stream);
    free(data);
}

// Opens the file read-write, runs `edit` on its root, closes it and reseals it.
#define HDF5_EDIT(function_name, ...)                                                                                  \
    static void function_name(const char *path) {                                                                      \
        hid_t file = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);                                                         \
        cr_assert_geq(file, 0, "%s", path);                                                                            \
        __VA_ARGS__;                                                                                                   \
        cr_assert_geq(H5Fclose(file), 0);                                                                              \
        reseal(path);                                                                                                  \
    }

static void set_int_attribute(hid_t location, const char *name, int value) {
    if (H5Aexists(location, name) > 0) cr_assert_geq(H5Adelete(location, name), 0);
    cr_assert_null(parity_hdf5_write_int_attribute(location, "test", name, value));
}

HDF5_EDIT(schema_version_4, set_int_attribute(file, "schema_version", 4))
HDF5_EDIT(schema_version_2, set_int_attribute(file, "schema_version", 2))
HDF5_EDIT(schema_version_missing, cr_assert_geq(H5Adelete(file, "schema_version"), 0))
HDF5_EDIT(labels_missing, cr_assert_geq(H5Ldelete(file, "/batch/labels", H5P_DEFAULT), 0))
HDF5_EDIT(eager_missing, cr_assert_geq(H5Ldelete(file, "/eager", H5P_DEFAULT), 0))
HDF5_EDIT(grad_norm_missing, cr_assert_geq(H5Adelete_by_name(file, "/expected", "grad_norm", H5P_DEFAULT), 0))
HDF5_EDIT(host_missing, cr_assert_geq(H5Adelete(file, "host"), 0))
HDF5_EDIT(loss_is_a_string, {
    hid_t group = H5Gopen2(file, "/expected", H5P_DEFAULT);
    cr_assert_geq(H5Adelete(group, "loss"), 0);
    cr_assert_null(parity_hdf5_write_string_attribute(group, "test", "loss", "2.0"));
    H5Gclose(group);
})
HDF5_EDIT(input_ids_1d, {
    hid_t group = H5Gopen2(file, "/batch", H5P_DEFAULT);
    cr_assert_geq(H5Ldelete(group, "input_ids", H5P_DEFAULT), 0);
    int64_t ids[16] = {0};
    parity_tensor tensor = parity_tensor_wrap(ids, PARITY_I64, PARITY_CPU, PARITY_SHAPE(16));
    cr_assert_null(parity_hdf5_write_tensor(group, "test", "input_ids", &tensor));
    H5Gclose(group);
})
HDF5_EDIT(norms_shorter, {
    hid_t group = H5Gopen2(file, "/eager/fp32", H5P_DEFAULT);
    cr_assert_geq(H5Ldelete(group, "parameter_grad_norms", H5P_DEFAULT), 0);
    double norms[PARAMETERS - 1] = {1, 2, 3};
    parity_tensor tensor = parity_tensor_wrap(norms, PARITY_F64, PARITY_CPU, PARITY_SHAPE(PARAMETERS - 1));
    cr_assert_null(parity_hdf5_write_tensor(group, "test", "parameter_grad_norms", &tensor));
    H5Gclose(group);
})
HDF5_EDIT(sketches_missing, cr_assert_geq(H5Ldelete(file, "/eager/bf16/parameter_grad_sketches", H5P_DEFAULT), 0))
// a (P, K) array with one row short, and one written as a flat vector
static void replace_sketches(hid_t file, const char *group_name, int ndim, const int64_t *shape) {
    hid_t group = H5Gopen2(file, group_name, H5P_DEFAULT);
    cr_assert_geq(H5Ldelete(group, "parameter_grad_sketches", H5P_DEFAULT), 0);
    double values[PARAMETERS * PARITY_SKETCH_K] = {0};
    parity_tensor tensor = parity_tensor_wrap(values, PARITY_F64, PARITY_CPU, ndim, shape);
    cr_assert_null(parity_hdf5_write_tensor(group, "test", "parameter_grad_sketches", &tensor));
    H5Gclose(group);
}
HDF5_EDIT(sketches_short, replace_sketches(file, "/eager/fp32", PARITY_SHAPE(PARAMETERS - 1, PARITY_SKETCH_K)))
HDF5_EDIT(sketches_flat, replace_sketches(file, "/expected", PARITY_SHAPE(PARAMETERS * PARITY_SKETCH_K)))
HDF5_EDIT(sketch_nan, {
    hid_t group = H5Gopen2(file, "/eager/bf16", H5P_DEFAULT);
    cr_assert_geq(H5Ldelete(group, "parameter_grad_sketches", H5P_DEFAULT), 0);
    double values[PARAMETERS * PARITY_SKETCH_K] = {0};
    values[2 * PARITY_SKETCH_K + 1] = NAN;
    parity_tensor tensor = parity_tensor_wrap(values, PARITY_F64, PARITY_CPU, PARITY_SHAPE(PARAMETERS, PARITY_SKETCH_K));
    cr_assert_null(parity_hdf5_write_tensor(group, "test", "parameter_grad_sketches", &tensor));
    H5Gclose(group);
})
HDF5_EDIT(loss_input_sketch_missing, cr_assert_geq(H5Ldelete(file, "/expected/loss_input_grad_sketch", H5P_DEFAULT), 0))
HDF5_EDIT(bf16_dtype_missing, cr_assert_geq(H5Adelete_by_name(file, "/eager/bf16/logits_sample", "dtype", H5P_DEFAULT), 0))
HDF5_EDIT(config_missing, cr_assert_geq(H5Ldelete(file, "/model/config_json", H5P_DEFAULT), 0))

Test(golden, reader_rejects_damaged_and_incomplete_files) {
    static const struct {
        const char *name;
        file_edit edit;
        parity_error_kind kind;
        const char *expected[2]; // substrings of the error, besides the file name
    } rows[] = {
        {"truncated to half", truncate_to_half, PARITY_ERROR_DATA, {"truncated golden: its seal records", "payload bytes, the file holds"}},
        {"garbage", replace_with_garbage, PARITY_ERROR_DATA, {"not a golden: it does not start with the golden signature", NULL}},
        {"empty file", make_empty, PARITY_ERROR_DATA, {"not a golden: the file is empty", NULL}},
        {"no such file", remove_file, PARITY_ERROR_IO, {"cannot open the golden: No such file or directory", NULL}},
        {"schema version 4", schema_version_4, PARITY_ERROR_DATA, {"schema_version is 4", "reads schema_version 3"}},
        {"schema version 2", schema_version_2, PARITY_ERROR_DATA,
         {"schema_version is 2, this parity reads schema_version 3", "regenerate it with `parity golden generate --force`"}},
        {"no schema version", schema_version_missing, PARITY_ERROR_DATA, {"no schema_version attribute", NULL}},
        {"labels missing", labels_missing, PARITY_ERROR_DATA, {"dataset /batch/labels is missing", NULL}},
        {"config missing", config_missing, PARITY_ERROR_DATA, {"dataset /model/config_json is missing", NULL}},
        {"eager missing", eager_missing, PARITY_ERROR_DATA, {"group /eager is missing", NULL}},
        {"grad_norm missing", grad_norm_missing, PARITY_ERROR_DATA, {"attribute 'grad_norm' of /expected is missing", NULL}},
        {"host missing", host_missing, PARITY_ERROR_DATA, {"attribute 'host' of / is missing", NULL}},
        {"loss is a string", loss_is_a_string, PARITY_ERROR_DATA, {"attribute 'loss' of /expected must be a float", NULL}},
        {"input_ids 1-D", input_ids_1d, PARITY_ERROR_DATA, {"/batch/input_ids must have rank 2, it has rank 1", NULL}},
        {"norms shorter than names", norms_shorter, PARITY_ERROR_DATA,
         {"/eager/fp32: parameter_names has 4 entries but parameter_grad_norms has 3", NULL}},
        {"bf16 without dtype", bf16_dtype_missing, PARITY_ERROR_DATA,
         {"/eager/bf16/logits_sample holds uint16 data but its dtype attribute is missing", NULL}},
        {"sketches missing", sketches_missing, PARITY_ERROR_DATA, {"dataset /eager/bf16/parameter_grad_sketches is missing", NULL}},
        {"sketches one row short", sketches_short, PARITY_ERROR_DATA,
         {"/eager/fp32/parameter_grad_sketches has shape (3, 4), must be (4, 4)", NULL}},
        {"sketches flat", sketches_flat, PARITY_ERROR_DATA, {"/expected/parameter_grad_sketches must have rank 2, it has rank 1", NULL}},
        {"a NaN sketch", sketch_nan, PARITY_ERROR_DATA,
         {"/eager/bf16: parameter_grad_sketches[2][1] (model.layers.0.mlp.experts.gate_up_proj) is nan, must be finite", NULL}},
        {"loss input norm without its sketch", loss_input_sketch_missing, PARITY_ERROR_DATA,
         {"/expected: loss_input_grad_norm without loss_input_grad_sketch", NULL}},
    };
    char directory[64];
    temporary_directory(directory, sizeof directory);
    golden_shape shape = small_plain;
    shape.logits_sample = true;
    shape.loss_input = true;
    for (size_t row = 0; row < sizeof rows / sizeof rows[0]; row++) {
        char path[256];
        snprintf(path, sizeof path, "%s/case%zu.h5", directory, row);
        parity_golden golden, read;
        make_golden(&golden, &shape);
        cr_assert_null(parity_golden_write(path, &golden, false));
        parity_golden_release(&golden);
        rows[row].edit(path);
        memset(&read, 0xab, sizeof read); // the reader must leave a failed golden zeroed, not half-filled
        parity_error *error = parity_golden_read(path, &read);
        cr_assert_not_null(error, "%s: accepted", rows[row].name);
        const char *text = error_text(error);
        cr_log_info("%s: %s", rows[row].name, text);
        cr_expect_eq(parity_error_kind_of(error), rows[row].kind, "%s: kind %s", rows[row].name,
                     parity_error_kind_name(parity_error_kind_of(error)));
        cr_expect(strstr(text, path), "%s: does not name the file: %s", rows[row].name, text);
        for (int i = 0; i < 2; i++)
            if (rows[row].expected[i]) cr_expect(strstr(text, rows[row].expected[i]), "%s: %s", rows[row].name, text);
        cr_expect_null(read.model_config_json, "%s", rows[row].name);
        cr_expect_null(read.expected.parameter_names, "%s", rows[row].name);
        parity_error_free(error);
    }
    remove_tree(directory);
}

// A resealed golden whose HDF5 superblock signature is broken: the seal matches, so the bytes reach
// libhdf5, which fails to open them.
static void break_hdf5_signature_and_reseal(const char *path) {
    FILE *stream = fopen(path, "r+b");
    cr_assert_not_null(stream);
    cr_assert_eq(fseek(stream, PARITY_GOLDEN_SEAL_BYTES + 1, SEEK_SET), 0);
    cr_assert_eq(fputc('X', stream), 'X'); // "\x89HDF" -> "\x89XDF"
    fclose(stream);
    reseal(path);
}

// HDF5 prints its own error stack on stderr unless told not to; a golden libhdf5 fails to open must
// give one parity error and nothing else.
Test(golden, hdf5_error_stack_is_not_printed) {
    char directory[64], path[256], capture[256];
    temporary_directory(directory, sizeof directory);
    snprintf(path, sizeof path, "%s/g.h5", directory);
    snprintf(capture, sizeof capture, "%s/stderr.txt", directory);
    parity_golden golden, read;
    make_golden(&golden, &small_plain);
    cr_assert_null(parity_golden_write(path, &golden, false));
    parity_golden_release(&golden);
    break_hdf5_signature_and_reseal(path);
    fflush(stderr);
    int saved = dup(2);
    int sink = open(capture, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    cr_assert_geq(sink, 0);
    dup2(sink, 2);
    parity_error *error = parity_golden_read(path, &read);
    fflush(stderr);
    dup2(saved, 2);
    close(sink);
    close(saved);
    cr_assert_not_null(error);
    cr_expect(strstr(error_text(error), "H5Fopen(/) failed"), "libhdf5 saw the file: %s", error_text(error));
    parity_error_free(error);
    struct stat info;
    cr_assert_eq(stat(capture, &info), 0);
    cr_expect_eq(info.st_size, 0, "HDF5 printed %lld bytes on stderr", (long long)info.st_size);
    // and the caller's own HDF5 error printing is restored afterwards
    H5E_auto2_t function = NULL;
    void *data = NULL;
    H5Eget_auto2(H5E_DEFAULT, &function, &data);
    cr_expect_not_null(function, "the default HDF5 error printer was not restored");
    remove_tree(directory);
}

// Files written by other tools (h5py with numpy 'S' arrays, fixed-length strings) read the same.
HDF5_EDIT(fixed_length_strings, {
    hid_t group = H5Gopen2(file, "/expected", H5P_DEFAULT);
    cr_assert_geq(H5Ldelete(group, "parameter_names", H5P_DEFAULT), 0);
    hid_t type = H5Tcopy(H5T_C_S1);
    H5Tset_size(type, 48);
    H5Tset_strpad(type, H5T_STR_NULLPAD);
    hsize_t dims[1] = {PARAMETERS};
    hid_t space = H5Screate_simple(1, dims, NULL);
    char names[PARAMETERS][48] = {{0}};
    for (int i = 0; i < PARAMETERS; i++) strncpy(names[i], parameter_names[i], 48);
    hid_t dataset = H5Dcreate2(group, "parameter_names", type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    cr_assert_geq(H5Dwrite(dataset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, names), 0);
    H5Dclose(dataset);
    H5Sclose(space);
    H5Gclose(group);
    // and one root attribute as a fixed-length string
    cr_assert_geq(H5Adelete(file, "host"), 0);
    hid_t scalar = H5Screate(H5S_SCALAR);
    H5Tset_size(type, 8);
    hid_t attribute = H5Acreate2(file, "host", type, scalar, H5P_DEFAULT, H5P_DEFAULT);
    cr_assert_geq(H5Awrite(attribute, type, "testhost"), 0);
    H5Aclose(attribute);
    H5Sclose(scalar);
    H5Tclose(type);
})

Test(golden, reads_fixed_length_strings) {
    char directory[64], path[256];
    temporary_directory(directory, sizeof directory);
    snprintf(path, sizeof path, "%s/g.h5", directory);
    parity_golden golden, read;
    make_golden(&golden, &small_plain);
    cr_assert_null(parity_golden_write(path, &golden, false));
    fixed_length_strings(path);
    parity_error *error = parity_golden_read(path, &read);
    cr_assert_null(error, "%s", error ? error_text(error) : "");
    expect_goldens_equal(&golden, &read);
    parity_golden_release(&golden);
    parity_golden_release(&read);
    remove_tree(directory);
}

// ---- parity golden show ----

static char *describe_to_string(const parity_golden *golden) {
    char *text = NULL;
    size_t size = 0;
    FILE *stream = open_memstream(&text, &size);
    cr_assert_not_null(stream);
    parity_golden_describe(golden, stream);
    fclose(stream);
    return text;
}

Test(golden, describe_shows_the_values) {
    static const struct {
        const char *name;
        golden_shape shape;
        const char *aux_line; // what the aux_loss row says
        const char *positions_line;
    } rows[] = {
        {"plain", {.aux_loss = false, .position_ids = false, .logits_sum = true, .batch = 2, .tokens = 8},
         "none (the model has no auxiliary loss)", "none (each row is one sequence"},
        {"packed with aux", {.aux_loss = true, .position_ids = true, .logits_sum = false, .batch = 1, .tokens = 16},
         "0.012345678901234568", "(1, 16) int64, 2 documents"},
        {"plain with a loss input", {.position_ids = false, .logits_sum = true, .loss_input = true, .batch = 2, .tokens = 8},
         "none (the model has no auxiliary loss)", "none (each row is one sequence"},
    };
    for (size_t row = 0; row < sizeof rows / sizeof rows[0]; row++) {
        parity_golden golden;
        make_golden(&golden, &rows[row].shape);
        char *text = describe_to_string(&golden);
        char logits_sum[64], loss[64], fp32_error[64], bf16_relative[64], norm_relative[64], seed[64];
        snprintf(loss, sizeof loss, "%.17g", golden.expected.loss);
        snprintf(logits_sum, sizeof logits_sum, "%.17g", golden.expected.logits_sum);
        snprintf(fp32_error, sizeof fp32_error, "%.3e", fabs(golden.precisions[0].eager.loss - golden.expected.loss));
        snprintf(bf16_relative, sizeof bf16_relative, "%.3e",
                 fabs(golden.precisions[1].eager.grad_norm - golden.expected.grad_norm) / golden.expected.grad_norm);
        snprintf(norm_relative, sizeof norm_relative, "%.3e",
                 fabs(golden.precisions[1].eager.parameter_grad_norms[3] - golden.expected.parameter_grad_norms[3]) /
                     golden.expected.parameter_grad_norms[3]);
        snprintf(seed, sizeof seed, "%llu", (unsigned long long)golden.weight_seed);
        char loss_input[96];
        if (rows[row].shape.loss_input) snprintf(loss_input, sizeof loss_input, "loss_input norm  %.17g", golden.expected.loss_input_grad_norm);
        else snprintf(loss_input, sizeof loss_input, "none (the model exposes no loss input)");
        const char *needles[] = {golden.git_sha, golden.command, golden.libraries, golden.weight_source, golden.weight_sha256,
                                 golden.batch_source, "qwen3_moe_tiny (model_type qwen3_moe)", "hidden_size 64",
                                 loss, rows[row].aux_line, rows[row].positions_line, fp32_error, bf16_relative,
                                 norm_relative, seed, "model.layers.0.mlp.experts.gate_up_proj", "eager fp32", "eager bf16",
                                 "bf16 rel. error", rows[row].shape.logits_sum ? logits_sum : "not computed", loss_input,
                                 "lowest cosine  1 (1 - cosine 0.000e+00)"};
        for (size_t i = 0; i < sizeof needles / sizeof needles[0]; i++)
            cr_expect(strstr(text, needles[i]), "%s: '%s' missing from:\n%s", rows[row].name, needles[i], text);
        free(text);
        parity_golden_release(&golden);
    }
}
