// test_golden_integrity.c: a damaged golden is never read silently (issue 12). A committed golden
// with single bits flipped across the whole file (the seal, the HDF5 superblock, object headers,
// B-tree, heaps, dataset data, checksums), truncated, extended, empty, not HDF5, of the old format
// or too large is always a DATA error naming the file, and never reaches libhdf5 unchecked; behind
// the seal, libhdf5 checks each dataset (fletcher32) and each object header itself. A golden of an
// older schema (the schema-1 and schema-2 copies under suites/tests/fixtures/) is refused with
// "regenerate", and `parity golden migrate` says why it cannot be converted (schema 3's gradient
// sketches cannot be derived from stored values) and leaves it untouched. From the command line, a
// damaged, older or foreign golden exits 3 naming the file (and both suites) in show, verify, run.
#include <criterion/criterion.h>
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_runner.h"
#include "golden/golden.h"
#include "golden/golden_migrate.h"
#include "golden/golden_seal.h"

#define ROWS(array) (sizeof(array) / sizeof((array)[0]))
#define COMMITTED "golden/smoke/qwen3_tiny/plain.h5"
#define FIXTURES "suites/tests/fixtures/"
#define SCHEMA1_SMOKE FIXTURES "golden-schema1-smoke-qwen3_tiny-plain.h5"
#define SCHEMA2_SMOKE FIXTURES "golden-schema2-smoke-qwen3_tiny-plain.h5"

static const char *error_text(parity_error *error) {
    static char buffer[4096];
    parity_error_format(error, buffer, sizeof buffer);
    return buffer;
}

static void temporary_directory(char *path, size_t size) {
    snprintf(path, size, "/tmp/parity-integrity-XXXXXX");
    cr_assert_not_null(mkdtemp(path));
}

static void remove_tree(const char *path) {
    char command[512];
    snprintf(command, sizeof command, "rm -rf '%s'", path);
    cr_expect_eq(system(command), 0);
}

static void load(const char *path, uint8_t **data, size_t *size) {
    parity_error *error = parity_golden_read_bytes(path, data, size);
    cr_assert_null(error, "%s", error ? error_text(error) : "");
}

static void store(const char *path, const void *data, size_t size) {
    FILE *stream = fopen(path, "wb");
    cr_assert_not_null(stream, "%s", path);
    cr_assert_eq(fwrite(data, 1, size, stream), size);
    cr_assert_eq(fclose(stream), 0);
}

static void copy_file(const char *from, const char *to) {
    uint8_t *data;
    size_t size;
    load(from, &data, &size);
    store(to, data, size);
    free(data);
}

// Reads `path` and tells whether it was rejected as it must be: a DATA error naming the file and
// containing `expected` (when given). Returns true when accepted (the failure this file hunts).
static bool read_is_accepted(const char *path, const char *expected, const char *what) {
    parity_golden golden;
    parity_error *error = parity_golden_read(path, &golden);
    if (!error) {
        parity_golden_release(&golden);
        return true;
    }
    const char *text = error_text(error);
    cr_expect_eq(parity_error_kind_of(error), PARITY_ERROR_DATA, "%s: kind %s: %s", what,
                 parity_error_kind_name(parity_error_kind_of(error)), text);
    cr_expect(strstr(text, path) != NULL, "%s: does not name the file: %s", what, text);
    if (expected) cr_expect(strstr(text, expected) != NULL, "%s: '%s' not in: %s", what, expected, text);
    cr_expect_null(golden.model_config_json, "%s: a failed read leaves the golden zeroed", what);
    parity_error_free(error);
    return false;
}

// ---- single-bit flips ----

// The experiment (600 single-bit flips spread over a golden, each read from a file), then
// every byte of the file with one bit flipped (decoded from memory: the same reader without the disk).
Test(golden_integrity, every_single_bit_flip_is_rejected) {
    uint8_t *original;
    size_t size;
    load(COMMITTED, &original, &size);
    char directory[64], path[128];
    temporary_directory(directory, sizeof directory);
    snprintf(path, sizeof path, "%s/plain.h5", directory);
    uint8_t *copy = malloc(size);
    cr_assert_not_null(copy);
    size_t accepted = 0, flips = 600;
    for (size_t i = 0; i < flips; i++) {
        memcpy(copy, original, size);
        copy[i * size / flips] ^= (uint8_t)(1u << (i % 8));
        store(path, copy, size);
        char what[96];
        snprintf(what, sizeof what, "bit %zu of byte %zu", i % 8, i * size / flips);
        accepted += read_is_accepted(path, NULL, what);
    }
    cr_log_info("%zu single-bit flips across %s (%zu bytes, one every %zu bytes): %zu accepted, %zu rejected (DATA error naming the file)",
                flips, COMMITTED, size, size / flips, accepted, flips - accepted);
    cr_expect_eq(accepted, 0, "%zu of %zu flipped goldens were accepted", accepted, flips);

    size_t accepted_anywhere = 0;
    memcpy(copy, original, size);
    for (size_t offset = 0; offset < size; offset++) {
        copy[offset] ^= (uint8_t)(1u << (offset % 8));
        parity_golden golden;
        parity_error *error = parity_golden_decode(COMMITTED, copy, size, &golden);
        if (!error) {
            accepted_anywhere++;
            parity_golden_release(&golden);
        } else {
            if (parity_error_kind_of(error) != PARITY_ERROR_DATA) cr_expect_fail("byte %zu: %s", offset, error_text(error));
            parity_error_free(error);
        }
        copy[offset] ^= (uint8_t)(1u << (offset % 8));
    }
    cr_log_info("every byte of %s with one bit flipped: %zu flips, %zu accepted", COMMITTED, size, accepted_anywhere);
    cr_expect_eq(accepted_anywhere, 0);
    free(copy);
    free(original);
    remove_tree(directory);
}

// Where a region starts in the file: the first `pattern` at or after `from`, else -1.
static long find(const uint8_t *data, size_t size, const void *pattern, size_t length, size_t from) {
    for (size_t i = from; i + length <= size; i++)
        if (memcmp(data + i, pattern, length) == 0) return (long)i;
    return -1;
}

// All eight bits of the first bytes of every kind of region a golden has, each rejected with the
// words that say what is wrong.
Test(golden_integrity, flips_in_every_region_are_rejected) {
    uint8_t *original;
    size_t size;
    load(COMMITTED, &original, &size);
    parity_golden golden;
    parity_error *error = parity_golden_decode(COMMITTED, original, size, &golden);
    cr_assert_null(error, "%s", error ? error_text(error) : "");
    size_t norms_bytes = golden.expected.parameter_count * sizeof(double);
    long norms = find(original, size, golden.expected.parameter_grad_norms, norms_bytes, PARITY_GOLDEN_SEAL_BYTES);
    long ids = find(original, size, golden.input_ids.data, 4 * sizeof(int64_t), PARITY_GOLDEN_SEAL_BYTES);
    long loss = find(original, size, &golden.expected.loss, sizeof(double), PARITY_GOLDEN_SEAL_BYTES);
    long config = find(original, size, "\"hidden_size\"", 13, PARITY_GOLDEN_SEAL_BYTES);
    long name = find(original, size, "model.layers.0.mlp.down_proj.weight", 35, PARITY_GOLDEN_SEAL_BYTES);
    long sha_line = find(original, PARITY_GOLDEN_SEAL_BYTES, "payload_sha256 ", 15, 0);
    long length_line = find(original, PARITY_GOLDEN_SEAL_BYTES, "payload_bytes ", 14, 0);
    const char *payload = "the sha256 of its payload is";
    const struct {
        const char *region;
        long offset;
        const char *expected; // in every rejection of the row (NULL: the words depend on the bit)
    } rows[] = {
        {"seal: signature", 0, "not a golden: it does not start with the golden signature"},
        {"seal: format number", find(original, 64, "format ", 7, 0) + 7, NULL},
        {"seal: payload_bytes digits", length_line + 14, NULL},
        {"seal: payload_sha256 digits", sha_line + 15, "its seal records"},
        {"seal: NUL padding", PARITY_GOLDEN_SEAL_BYTES - 4, "of its seal differs from the seal of its payload"},
        {"HDF5 superblock", PARITY_GOLDEN_SEAL_BYTES, payload},
        {"HDF5 superblock: base and end-of-file addresses", PARITY_GOLDEN_SEAL_BYTES + 28, payload},
        {"HDF5 superblock: root group symbol table entry", PARITY_GOLDEN_SEAL_BYTES + 60, payload},
        {"object header (OHDR)", find(original, size, "OHDR", 4, 0), payload},
        {"attribute value: /expected loss", loss, payload},
        {"B-tree node (TREE)", find(original, size, "TREE", 4, 0), payload},
        {"local heap (HEAP)", find(original, size, "HEAP", 4, 0), payload},
        {"symbol table node (SNOD)", find(original, size, "SNOD", 4, 0), payload},
        {"global heap (GCOL)", find(original, size, "GCOL", 4, 0), payload},
        {"global heap object: config_json text", config, payload},
        {"global heap object: a parameter name", name, payload},
        {"dataset data: /expected/parameter_grad_norms", norms, payload},
        {"fletcher32 checksum of parameter_grad_norms", norms + (long)norms_bytes, payload},
        {"dataset data: /batch/input_ids", ids, payload},
        {"the last bytes of the file", (long)size - 4, payload},
    };
    char directory[64], path[128];
    temporary_directory(directory, sizeof directory);
    snprintf(path, sizeof path, "%s/plain.h5", directory);
    uint8_t *copy = malloc(size);
    cr_assert_not_null(copy);
    size_t flips = 0, accepted = 0;
    for (size_t row = 0; row < ROWS(rows); row++) {
        cr_assert_geq(rows[row].offset, 0, "%s: not found in %s", rows[row].region, COMMITTED);
        for (size_t byte = 0; byte < 4; byte++)
            for (int bit = 0; bit < 8; bit++) {
                memcpy(copy, original, size);
                copy[(size_t)rows[row].offset + byte] ^= (uint8_t)(1u << bit);
                store(path, copy, size);
                char what[160];
                snprintf(what, sizeof what, "%s, byte %zu bit %d", rows[row].region, (size_t)rows[row].offset + byte, bit);
                flips++;
                accepted += read_is_accepted(path, rows[row].expected, what);
            }
        cr_log_info("%-46s at byte %6ld: 32 flips rejected", rows[row].region, rows[row].offset);
    }
    cr_log_info("%zu flips in %zu regions: %zu accepted", flips, ROWS(rows), accepted);
    cr_expect_eq(accepted, 0);
    free(copy);
    parity_golden_release(&golden);
    free(original);
    remove_tree(directory);
}

// ---- truncated, extended, empty, foreign, old, too large ----

typedef void (*damage)(const char *path, const uint8_t *original, size_t size);
static size_t cut;
static void truncated(const char *path, const uint8_t *original, size_t size) { store(path, original, cut < size ? cut : size / 2); }
static void truncated_by_one(const char *path, const uint8_t *original, size_t size) { store(path, original, size - 1); }
static void appended(const char *path, const uint8_t *original, size_t size) {
    uint8_t *longer = calloc(size + cut, 1);
    memcpy(longer, original, size);
    store(path, longer, size + cut);
    free(longer);
}
static void text_file(const char *path, const uint8_t *original, size_t size) {
    store(path, "this is not an HDF5 file\n", 25);
}
static void plain_hdf5(const char *path, const uint8_t *original, size_t size) {
    hid_t file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    cr_assert_geq(file, 0);
    H5Fclose(file);
}
static void old_format(const char *path, const uint8_t *original, size_t size) { copy_file(SCHEMA1_SMOKE, path); }
static void schema2_format(const char *path, const uint8_t *original, size_t size) { copy_file(SCHEMA2_SMOKE, path); }
static void other_format(const char *path, const uint8_t *original, size_t size) {
    uint8_t *copy = malloc(size);
    memcpy(copy, original, size);
    parity_golden_seal(copy, size, PARITY_GOLDEN_SCHEMA_VERSION + 1);
    store(path, copy, size);
    free(copy);
}
static void too_large(const char *path, const uint8_t *original, size_t size) {
    store(path, original, size);
    cr_assert_eq(truncate(path, (off_t)PARITY_GOLDEN_MAX_BYTES + 1), 0); // sparse: nothing is written
}

Test(golden_integrity, damaged_and_foreign_files_are_rejected) {
    static const struct {
        const char *what;
        damage apply;
        size_t cut;
        const char *expected;
    } rows[] = {
        {"zero-length file", truncated, 0, "not a golden: the file is empty"},
        {"truncated inside the signature", truncated, 10, "not a golden: it does not start with the golden signature"},
        {"truncated inside the seal", truncated, 300, "truncated golden"},
        {"truncated to the seal", truncated, PARITY_GOLDEN_SEAL_BYTES, "truncated golden"},
        {"truncated one byte after the seal", truncated, PARITY_GOLDEN_SEAL_BYTES + 1, "truncated golden: its seal records"},
        {"truncated to half", truncated, (size_t)-1, "truncated golden: its seal records"},
        {"truncated by one byte", truncated_by_one, 0, "truncated golden: its seal records"},
        {"one byte appended", appended, 1, "damaged golden: 1 bytes appended after its end"},
        {"4 kB appended", appended, 4096, "damaged golden: 4096 bytes appended after its end"},
        {"not HDF5 (text)", text_file, 0, "not a golden: it does not start with the golden signature"},
        {"an HDF5 file that is no golden", plain_hdf5, 0, "an old-format golden"},
        {"an old-format golden (schema_version 1)", old_format, 0, "regenerate it with `parity golden generate --force`"},
        {"a schema_version 2 golden (no sketches)", schema2_format, 0,
         "golden format 2, older than the format 3 this parity reads (format 3 added the gradient sketches"},
        {"a seal of a newer format", other_format, 0, "golden format 4, this parity reads format 3"},
        {"larger than any golden", too_large, 0, "larger than any golden (at most 64 MiB)"},
    };
    uint8_t *original;
    size_t size;
    load(COMMITTED, &original, &size);
    char directory[64];
    temporary_directory(directory, sizeof directory);
    for (size_t row = 0; row < ROWS(rows); row++) {
        char path[128];
        snprintf(path, sizeof path, "%s/case%zu.h5", directory, row);
        cut = rows[row].cut;
        rows[row].apply(path, original, size);
        cr_expect(!read_is_accepted(path, rows[row].expected, rows[row].what), "%s: accepted", rows[row].what);
        parity_golden golden;
        parity_error *error = parity_golden_read(path, &golden);
        if (error) cr_log_info("%s: %s", rows[row].what, error_text(error));
        parity_error_free(error);
    }
    // a directory where the golden should be: an IO error naming it
    char path[128];
    snprintf(path, sizeof path, "%s/a_directory.h5", directory);
    cr_assert_eq(mkdir(path, 0755), 0);
    parity_golden golden;
    parity_error *error = parity_golden_read(path, &golden);
    cr_assert_not_null(error);
    cr_expect_eq(parity_error_kind_of(error), PARITY_ERROR_IO);
    cr_expect(strstr(error_text(error), path) && strstr(error_text(error), "not a regular file"), "%s", error_text(error));
    parity_error_free(error);
    free(original);
    remove_tree(directory);
}

// ---- behind the seal: libhdf5's own checks, for any HDF5 reader ----

// Every dataset with fixed-size data has fletcher32; every object header is a checksummed version 2.
static herr_t check_object(hid_t root, const char *name, const H5O_info_t *info, void *data) {
    int *checked = data;
    H5O_info_t header;
    cr_expect_geq(H5Oget_info_by_name2(root, name, &header, H5O_INFO_HDR, H5P_DEFAULT), 0);
    cr_expect_eq(header.hdr.version, 2, "%s: object header version %u (1 has no checksum)", name, header.hdr.version);
    if (info->type != H5O_TYPE_DATASET) return 0;
    hid_t dataset = H5Dopen2(root, name, H5P_DEFAULT);
    hid_t type = H5Dget_type(dataset), space = H5Dget_space(dataset), properties = H5Dget_create_plist(dataset);
    bool filterable = H5Tis_variable_str(type) == 0 && H5Sget_simple_extent_ndims(space) > 0;
    if (filterable) {
        unsigned flags = 0, values[4];
        size_t value_count = 4;
        bool fletcher = H5Pget_filter_by_id2(properties, H5Z_FILTER_FLETCHER32, &flags, &value_count, values, 0, NULL, NULL) >= 0;
        cr_expect(fletcher, "%s: no fletcher32", name);
        *checked += fletcher;
    }
    H5Pclose(properties), H5Sclose(space), H5Tclose(type), H5Dclose(dataset);
    return 0;
}

// A flip behind a matching seal (resealed by hand, as a deliberate forgery would be) is still caught
// by libhdf5 where the data is checksummed: every numeric dataset (fletcher32).
Test(golden_integrity, libhdf5_checks_datasets_and_object_headers_too) {
    // any HDF5 reader opens a golden (the seal is the user block) and finds the checks in place
    hid_t file = H5Fopen(COMMITTED, H5F_ACC_RDONLY, H5P_DEFAULT);
    cr_assert_geq(file, 0, "%s opens as a plain HDF5 file", COMMITTED);
    hid_t creation = H5Fget_create_plist(file);
    hsize_t user_block = 0;
    H5Pget_userblock(creation, &user_block);
    H5Pclose(creation);
    cr_expect_eq(user_block, PARITY_GOLDEN_SEAL_BYTES);
    int checked = 0;
    cr_expect_geq(H5Ovisit2(file, H5_INDEX_NAME, H5_ITER_INC, check_object, &checked, H5O_INFO_BASIC), 0);
    H5Fclose(file);
    cr_log_info("%s: %d datasets with fletcher32, every object header version 2", COMMITTED, checked);
    cr_expect_eq(checked, 11,
                 "input_ids, labels and 3 x (parameter_grad_norms, parameter_grad_sketches, loss_input_grad_sketch) (the strings "
                 "are variable-length), found %d",
                 checked);

    uint8_t *original;
    size_t size;
    load(COMMITTED, &original, &size);
    parity_golden golden;
    cr_assert_null(parity_golden_decode(COMMITTED, original, size, &golden));
    const struct {
        const char *what;
        long offset;
        const char *expected;
    } rows[] = {
        {"/expected/parameter_grad_norms data",
         find(original, size, golden.expected.parameter_grad_norms, golden.expected.parameter_count * sizeof(double), 0),
         "failed: data error detected by Fletcher32 checksum"},
        {"/batch/input_ids data", find(original, size, golden.input_ids.data, 4 * sizeof(int64_t), 0),
         "H5Dread(/batch/input_ids) failed: data error detected by Fletcher32 checksum"},
        // (an object header flipped behind a forged seal fails too, "incorrect metadata checksum", but
        // leaves HDF5 1.10.8 looping at library shutdown, so it is not a row here: the headers are
        // shown to be checksummed version-2 ones above)
    };
    char directory[64], path[128];
    temporary_directory(directory, sizeof directory);
    snprintf(path, sizeof path, "%s/resealed.h5", directory);
    uint8_t *copy = malloc(size);
    for (size_t row = 0; row < ROWS(rows); row++) {
        cr_assert_geq(rows[row].offset, 0, "%s not found", rows[row].what);
        memcpy(copy, original, size);
        copy[rows[row].offset + 1] ^= 0x10;
        parity_golden_seal(copy, size, PARITY_GOLDEN_SCHEMA_VERSION);
        store(path, copy, size);
        cr_expect(!read_is_accepted(path, rows[row].expected, rows[row].what), "%s: accepted behind a forged seal", rows[row].what);
        parity_golden read;
        parity_error *error = parity_golden_read(path, &read);
        if (error) cr_log_info("resealed flip in %s: %s", rows[row].what, error_text(error));
        parity_error_free(error);
    }
    free(copy);
    parity_golden_release(&golden);
    free(original);
    remove_tree(directory);
}

// ---- older schemas: refused, never converted ----

// A schema-1 and a schema-2 golden (copies of the smoke qwen3_tiny plain golden as it was committed
// before each schema change) are refused by the reader with "regenerate", and by migrate with why
// (schema 3's sketches cannot be derived from stored values); migrate never touches them. A current
// golden is checked and left byte for byte; a damaged one is refused naming the damage.
Test(golden_integrity, older_goldens_are_refused_with_regenerate_and_left_untouched) {
    static const struct {
        const char *source;
        int version;
        const char *read_says;
    } rows[] = {
        {SCHEMA1_SMOKE, 1, "an old-format golden (schema_version 1"},
        {SCHEMA2_SMOKE, 2, "golden format 2, older than the format 3 this parity reads"},
    };
    char directory[64];
    temporary_directory(directory, sizeof directory);
    for (size_t row = 0; row < ROWS(rows); row++) {
        char path[128];
        snprintf(path, sizeof path, "%s/golden%zu.h5", directory, row);
        copy_file(rows[row].source, path);
        cr_expect(!read_is_accepted(path, rows[row].read_says, rows[row].source), "%s: read", rows[row].source);
        cr_expect(!read_is_accepted(path, "regenerate it with `parity golden generate --force`", rows[row].source));
        uint8_t *before, *after;
        size_t before_size, after_size;
        load(path, &before, &before_size);
        int version = -1;
        parity_error *error = parity_golden_migrate(path, &version);
        cr_assert_not_null(error, "%s: migrated", rows[row].source);
        const char *text = error_text(error);
        cr_expect_eq(parity_error_kind_of(error), PARITY_ERROR_DATA, "%s", text);
        cr_expect_eq(version, rows[row].version, "%s: recognized as schema %d", rows[row].source, version);
        char says[96];
        snprintf(says, sizeof says, "a schema_version %d golden cannot be migrated to schema_version 3", rows[row].version);
        const char *needles[] = {path, says, "gradient sketch", "cannot be derived", "Regenerate it with `parity golden generate",
                                 "left as it is"};
        for (size_t i = 0; i < ROWS(needles); i++) cr_expect(strstr(text, needles[i]), "'%s' not in: %s", needles[i], text);
        cr_log_info("%s: %s", rows[row].source, text);
        parity_error_free(error);
        load(path, &after, &after_size);
        cr_expect(before_size == after_size && memcmp(before, after, before_size) == 0, "a refused file is not touched");
        free(before);
        free(after);
    }
    // a current golden: checked, left byte for byte as it was
    char path[128];
    snprintf(path, sizeof path, "%s/current.h5", directory);
    copy_file(COMMITTED, path);
    uint8_t *data, *after;
    size_t size, after_size;
    load(path, &data, &size);
    int version = -1;
    parity_error *error = parity_golden_migrate(path, &version);
    cr_expect_null(error, "%s", error ? error_text(error) : "");
    parity_error_free(error);
    cr_expect_eq(version, PARITY_GOLDEN_SCHEMA_VERSION);
    load(path, &after, &after_size);
    cr_expect(after_size == size && memcmp(after, data, size) == 0, "unchanged");
    free(after);
    // a damaged one: refused, naming the damage, untouched
    data[size / 2] ^= 4;
    store(path, data, size);
    error = parity_golden_migrate(path, &version);
    cr_assert_not_null(error);
    cr_expect(strstr(error_text(error), path) && strstr(error_text(error), "damaged golden"), "%s", error_text(error));
    cr_expect_eq(version, 0);
    parity_error_free(error);
    load(path, &after, &after_size);
    cr_expect(after_size == size && memcmp(after, data, size) == 0, "a refused file is not touched");
    free(after);
    free(data);
    remove_tree(directory);
}

// ---- the command line: exit 3 naming the file in show, verify, run; foreign goldens ----

// A golden of another suite: the committed golden recorded as gpu-nightly's (written to `path`).
static void foreign_golden(const char *path) {
    parity_golden golden;
    cr_assert_null(parity_golden_read(COMMITTED, &golden));
    snprintf(golden.suite, sizeof golden.suite, "gpu-nightly");
    parity_error *error = parity_golden_write(path, &golden, true);
    cr_assert_null(error, "%s", error ? error_text(error) : "");
    parity_golden_release(&golden);
}

// A golden folder for the smoke suite's qwen3_tiny holding `plain` (damaged, older or foreign) and
// the committed `packed`.
static void golden_folder(const char *directory, const char *plain_source, bool flip) {
    char command[512], path[256];
    snprintf(command, sizeof command, "mkdir -p '%s/smoke/qwen3_tiny' && cp golden/smoke/qwen3_tiny/packed.h5 '%s/smoke/qwen3_tiny/'",
             directory, directory);
    cr_assert_eq(system(command), 0);
    snprintf(path, sizeof path, "%s/smoke/qwen3_tiny/plain.h5", directory);
    uint8_t *data;
    size_t size;
    load(plain_source, &data, &size);
    if (flip) data[size - 100] ^= 1;
    store(path, data, size);
    free(data);
}

Test(golden_integrity, commands_exit_3_naming_a_damaged_or_foreign_golden) {
    static const struct {
        const char *what, *source;
        bool flip;
        const char *expected[2];
    } rows[] = {
        {"a flipped bit", COMMITTED, true, {"damaged golden", NULL}},
        {"an old-format golden", SCHEMA1_SMOKE, false, {"an old-format golden", "regenerate it with `parity golden generate --force`"}},
        {"a schema-2 golden", SCHEMA2_SMOKE, false, {"golden format 2, older", "regenerate it with `parity golden generate --force`"}},
        {"a golden of another suite", NULL, false, {"golden of suite 'gpu-nightly'", "not of suite 'smoke'"}},
    };
    static const char *commands[] = {"golden show %s/smoke/qwen3_tiny/plain.h5",
                                     "golden verify --suite smoke --model qwen3_tiny --golden-dir %s",
                                     "run --suite smoke --device cpu --model qwen3_tiny --golden-dir %s --out %s/out"};
    for (size_t row = 0; row < ROWS(rows); row++) {
        char directory[64], foreign[128];
        temporary_directory(directory, sizeof directory);
        snprintf(foreign, sizeof foreign, "%s/foreign.h5", directory);
        if (!rows[row].source) foreign_golden(foreign);
        golden_folder(directory, rows[row].source ? rows[row].source : foreign, rows[row].flip);
        for (size_t c = 0; c < ROWS(commands); c++) {
            if (c == 0 && !rows[row].source) continue; // show prints any intact golden: it has no suite to belong to
            char arguments[512], file[160];
            snprintf(arguments, sizeof arguments, commands[c], directory, directory);
            snprintf(file, sizeof file, "%s/smoke/qwen3_tiny/plain.h5", directory);
            command_result result = run_parity(arguments);
            cr_expect_eq(result.exit_code, 3, "%s, parity %s: exit %d\n%s", rows[row].what, arguments, result.exit_code, result.output);
            cr_expect(strstr(result.output, file) != NULL, "%s, parity %s: names the file\n%s", rows[row].what, arguments, result.output);
            for (int i = 0; i < 2; i++)
                if (rows[row].expected[i])
                    cr_expect(strstr(result.output, rows[row].expected[i]) != NULL, "%s, parity %s: '%s' in\n%s", rows[row].what,
                              arguments, rows[row].expected[i], result.output);
            free(result.output);
        }
        remove_tree(directory);
    }
}

Test(golden_integrity, migrate_from_the_command_line) {
    char directory[64], path[128], current[128], arguments[512];
    temporary_directory(directory, sizeof directory);
    snprintf(current, sizeof current, "%s/current.h5", directory);
    copy_file(COMMITTED, current);
    snprintf(arguments, sizeof arguments, "golden migrate %s", current);
    command_result result = run_parity(arguments);
    cr_expect_eq(result.exit_code, 0, "%s", result.output);
    cr_expect(strstr(result.output, "current") && strstr(result.output, "schema_version 3 already, checked, unchanged"), "%s",
              result.output);
    free(result.output);
    static const char *const older[] = {SCHEMA1_SMOKE, SCHEMA2_SMOKE};
    for (size_t row = 0; row < ROWS(older); row++) {
        snprintf(path, sizeof path, "%s/older%zu.h5", directory, row);
        copy_file(older[row], path);
        snprintf(arguments, sizeof arguments, "golden migrate %s %s", current, path); // the worst exit code wins
        result = run_parity(arguments);
        cr_expect_eq(result.exit_code, 3, "%s: %s", older[row], result.output);
        cr_expect(strstr(result.output, path) && strstr(result.output, "cannot be migrated") &&
                      strstr(result.output, "Regenerate it with `parity golden generate"),
                  "%s", result.output);
        cr_expect(strstr(result.output, "already, checked, unchanged") != NULL, "the current one is still reported: %s", result.output);
        free(result.output);
    }
    snprintf(arguments, sizeof arguments, "golden migrate %s %s/missing.h5", current, directory);
    result = run_parity(arguments);
    cr_expect_eq(result.exit_code, 3, "a missing file: %s", result.output);
    cr_expect(strstr(result.output, "missing.h5") != NULL, "%s", result.output);
    free(result.output);
    result = run_parity("golden migrate");
    cr_expect_eq(result.exit_code, 2, "no file: %s", result.output);
    free(result.output);
    remove_tree(directory);
}

// `golden verify` recomputes the sketches too: a stored sketch component moved by 1e-9 of its
// gradient's norm (everything else as stored) is drift, named (exit 1).
Test(golden_integrity, verify_sees_a_sketch_that_drifted) {
    char directory[64], path[256];
    temporary_directory(directory, sizeof directory);
    golden_folder(directory, COMMITTED, false);
    snprintf(path, sizeof path, "%s/smoke/qwen3_tiny/plain.h5", directory);
    parity_golden golden;
    cr_assert_null(parity_golden_read(path, &golden));
    const size_t parameter = 5;
    const int component = 2;
    cr_assert_gt(golden.expected.parameter_count, parameter);
    golden.expected.parameter_grad_sketches[parameter * PARITY_SKETCH_K + component] +=
        1e-9 * golden.expected.parameter_grad_norms[parameter];
    parity_error *error = parity_golden_write(path, &golden, true);
    cr_assert_null(error, "%s", error ? error_text(error) : "");
    char expected[256], arguments[512];
    snprintf(expected, sizeof expected, "largest at grad_sketch:%s[%d]", golden.expected.parameter_names[parameter], component);
    parity_golden_release(&golden);
    snprintf(arguments, sizeof arguments, "golden verify --suite smoke --model qwen3_tiny --golden-dir %s", directory);
    command_result result = run_parity(arguments);
    cr_expect_eq(result.exit_code, 1, "%s", result.output);
    cr_expect(strstr(result.output, "DRIFT") && strstr(result.output, expected) && strstr(result.output, "fp64 drift 1e-09"),
              "'%s' in\n%s", expected, result.output);
    cr_expect(strstr(result.output, "1 drifted") || strstr(result.output, ", 1 drifted"), "%s", result.output);
    free(result.output);
    remove_tree(directory);
}
