// test_run_cli.c: `parity run` and `parity golden` from the command line. A missing, truncated,
// foreign, schema-mismatched or stale golden exits 3 naming the file; goldens are never overwritten
// without --force and `golden verify` sees changed inputs; usage and suite errors exit 2 (ranks > 1
// included); `--list` of veomni-compat shows VeOmni's modes; an end-to-end smoke run writes the four
// report files. Each test works in its own temporary folder (Criterion runs tests in parallel).
#include <criterion/criterion.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_runner.h"
#include "gpu_skip.h"
#include "golden/golden.h"
#include "golden/golden_seal.h"
#include "reports/results.h"

#define ROWS(array) (sizeof(array) / sizeof((array)[0]))

// A scratch folder holding suite.yaml (one tiny model, bf16, the cross-entropy field swept) and
// goldens generated for it under <folder>/golden.
typedef struct scratch {
    char folder[128], suite[192], goldens[192], golden_file[320];
} scratch;

static void write_text(const char *path, const char *text) {
    FILE *file = fopen(path, "w");
    cr_assert_not_null(file, "%s", path);
    fputs(text, file);
    fclose(file);
}

// The suite of a scratch folder; `batch_seed` picks its plain batch (changing it makes goldens stale).
static void write_suite(const scratch *s, int batch_seed) {
    char root[1024], text[4096];
    cr_assert_not_null(getcwd(root, sizeof root));
    snprintf(text, sizeof text,
             "suite: scratch\ndtypes: [bf16]\ndevices: [cpu]\nsweep: [ce]\nwarmup: 0\nrepeats: 1\n"
             "models:\n"
             "  - name: qwen3_tiny\n    checkpoint: %s/golden/upstream/qwen3_tiny\n"
             "    batches: [{name: drawn, plain: {rows: 2, length: 16, seed: %d}}]\n",
             root, batch_seed);
    write_text(s->suite, text);
}

static scratch make_scratch(bool with_goldens) {
    scratch s;
    snprintf(s.folder, sizeof s.folder, "/tmp/parity-run-XXXXXX");
    cr_assert_not_null(mkdtemp(s.folder));
    snprintf(s.suite, sizeof s.suite, "%s/suite.yaml", s.folder);
    snprintf(s.goldens, sizeof s.goldens, "%s/golden", s.folder);
    snprintf(s.golden_file, sizeof s.golden_file, "%s/scratch/qwen3_tiny/drawn.h5", s.goldens);
    write_suite(&s, 3);
    if (with_goldens) {
        char arguments[512];
        snprintf(arguments, sizeof arguments, "golden generate --suite %s --golden-dir %s", s.suite, s.goldens);
        command_result result = run_parity(arguments);
        cr_assert_eq(result.exit_code, 0, "%s", result.output);
        cr_assert(strstr(result.output, "1 written, 0 kept") != NULL, "%s", result.output);
        free(result.output);
    }
    return s;
}

static void remove_scratch(const scratch *s) {
    char command[256];
    snprintf(command, sizeof command, "rm -rf '%s'", s->folder);
    cr_assert_eq(system(command), 0);
}

static command_result run_scratch(const scratch *s, const char *extra) {
    char arguments[1024];
    snprintf(arguments, sizeof arguments, "run --suite %s --golden-dir %s --out %s/out %s", s->suite, s->goldens, s->folder,
             extra);
    return run_parity(arguments);
}

// ---- damaged goldens: exit 3, naming the file ----

static void truncate_to_half(const char *path) {
    struct stat info;
    cr_assert_eq(stat(path, &info), 0);
    cr_assert_eq(truncate(path, info.st_size / 2), 0);
}
static void delete_file(const char *path) { cr_assert_eq(unlink(path), 0); }
static void replace_with_text(const char *path) { write_text(path, "this is not an HDF5 file\n"); }
// A newer schema_version inside an intact seal (resealed after the edit, as a future parity's file).
static void set_schema_version_4(const char *path) {
    hid_t file = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    cr_assert_geq(file, 0);
    cr_assert_geq(H5Adelete(file, "schema_version"), 0);
    hid_t space = H5Screate(H5S_SCALAR);
    hid_t attribute = H5Acreate2(file, "schema_version", H5T_NATIVE_INT, space, H5P_DEFAULT, H5P_DEFAULT);
    _Static_assert(PARITY_GOLDEN_SCHEMA_VERSION + 1 == 4, "the row below names schema_version 4");
    int version = PARITY_GOLDEN_SCHEMA_VERSION + 1;
    cr_assert_geq(H5Awrite(attribute, H5T_NATIVE_INT, &version), 0);
    H5Aclose(attribute);
    H5Sclose(space);
    H5Fclose(file);
    uint8_t *data;
    size_t size;
    cr_assert_null(parity_golden_read_bytes(path, &data, &size));
    parity_golden_seal(data, size, PARITY_GOLDEN_SCHEMA_VERSION);
    FILE *stream = fopen(path, "wb");
    cr_assert_eq(fwrite(data, 1, size, stream), size);
    fclose(stream);
    free(data);
}

Test(run_cli, a_damaged_golden_exits_3_naming_the_file) {
    static const struct {
        const char *what;
        void (*damage)(const char *path);
        const char *problem;
    } rows[] = {
        {"missing", delete_file, "make it with: parity golden generate --suite scratch"},
        {"truncated", truncate_to_half, "truncated golden"},
        {"not HDF5", replace_with_text, "not a golden"},
        {"schema version 4", set_schema_version_4, "schema_version is 4"},
    };
    for (size_t row = 0; row < ROWS(rows); row++) {
        scratch s = make_scratch(true);
        rows[row].damage(s.golden_file);
        command_result result = run_scratch(&s, "");
        cr_expect_eq(result.exit_code, 3, "%s: exit %d\n%s", rows[row].what, result.exit_code, result.output);
        cr_expect(strstr(result.output, s.golden_file) != NULL, "%s: the file is named\n%s", rows[row].what, result.output);
        cr_expect(strstr(result.output, rows[row].problem) != NULL, "%s: \"%s\" in\n%s", rows[row].what, rows[row].problem,
                  result.output);
        struct stat info;
        char report[256];
        snprintf(report, sizeof report, "%s/out/results.json", s.folder);
        cr_expect_neq(stat(report, &info), 0, "%s: nothing runs, no report", rows[row].what);
        free(result.output);
        remove_scratch(&s);
    }
}

Test(run_cli, a_stale_golden_exits_3_and_verify_sees_the_change) {
    scratch s = make_scratch(true);
    char arguments[512];
    snprintf(arguments, sizeof arguments, "golden verify --suite %s --golden-dir %s", s.suite, s.goldens);
    command_result verified = run_parity(arguments);
    cr_expect_eq(verified.exit_code, 0, "%s", verified.output);
    cr_expect(strstr(verified.output, "fp64 drift 0 ") != NULL, "CPU eager is deterministic: %s", verified.output);
    cr_expect(strstr(verified.output, "1 goldens checked, 0 drifted") != NULL, "%s", verified.output);
    free(verified.output);

    write_suite(&s, 4); // another batch seed: the stored golden no longer belongs to the suite
    command_result stale = run_scratch(&s, "");
    cr_expect_eq(stale.exit_code, 3, "%s", stale.output);
    cr_expect(strstr(stale.output, s.golden_file) && strstr(stale.output, "golden batch sha256"), "%s", stale.output);
    free(stale.output);
    command_result drifted = run_parity(arguments);
    cr_expect_eq(drifted.exit_code, 1, "%s", drifted.output);
    cr_expect(strstr(drifted.output, "inputs changed") != NULL, "%s", drifted.output);
    free(drifted.output);
    remove_scratch(&s);
}

Test(run_cli, goldens_are_never_overwritten_without_force) {
    scratch s = make_scratch(true);
    struct stat before, after;
    cr_assert_eq(stat(s.golden_file, &before), 0);
    char arguments[512];
    snprintf(arguments, sizeof arguments, "golden generate --suite %s --golden-dir %s", s.suite, s.goldens);
    sleep(1); // a rewrite would change the modification time
    command_result kept = run_parity(arguments);
    cr_expect_eq(kept.exit_code, 0, "%s", kept.output);
    cr_expect(strstr(kept.output, "kept") && strstr(kept.output, "0 written, 1 kept"), "%s", kept.output);
    cr_assert_eq(stat(s.golden_file, &after), 0);
    cr_expect_eq(after.st_mtime, before.st_mtime, "the golden was not touched");
    free(kept.output);
    snprintf(arguments, sizeof arguments, "golden generate --suite %s --golden-dir %s --force", s.suite, s.goldens);
    command_result forced = run_parity(arguments);
    cr_expect_eq(forced.exit_code, 0, "%s", forced.output);
    cr_expect(strstr(forced.output, "1 written, 0 kept") != NULL, "%s", forced.output);
    free(forced.output);

    snprintf(arguments, sizeof arguments, "golden show %s", s.golden_file);
    command_result shown = run_parity(arguments);
    cr_expect_eq(shown.exit_code, 0, "%s", shown.output);
    cr_expect(strstr(shown.output, "plain [2, 16] seed 3") && strstr(shown.output, "qwen3_tiny"), "%s", shown.output);
    free(shown.output);
    remove_scratch(&s);
}

Test(run_cli, a_scratch_run_passes_and_writes_the_four_reports) {
    scratch s = make_scratch(true);
    command_result result = run_scratch(&s, "");
    cr_expect_eq(result.exit_code, 0, "%s", result.output);
    cr_expect(strstr(result.output, "2 pass, 0 fail, 0 error, 2 not supported, 0 excluded") != NULL, "%s", result.output);
    static const char *const files[] = {"results.json", "junit.xml", "summary.md", "report.html"};
    for (size_t i = 0; i < ROWS(files); i++) {
        char path[256];
        struct stat info;
        snprintf(path, sizeof path, "%s/out/%s", s.folder, files[i]);
        cr_expect(stat(path, &info) == 0 && info.st_size > 0, "%s written", path);
    }
    char report[256];
    snprintf(report, sizeof report, "%s/out/report.html", s.folder);
    cr_expect(strstr(result.output, report) != NULL, "prints where the report is: %s", result.output);
    free(result.output);
    remove_scratch(&s);
}

Test(run_cli, usage_and_suite_errors_exit_2) {
    scratch s = make_scratch(false);
    char ranks_suite[256], arguments[600];
    snprintf(ranks_suite, sizeof ranks_suite, "%s/ranks.yaml", s.folder);
    char root[1024], text[2048];
    cr_assert_not_null(getcwd(root, sizeof root));
    snprintf(text, sizeof text,
             "dtypes: bf16\ndevices: cpu\nranks: 2\nmodels:\n  - {name: q, checkpoint: %s/golden/upstream/qwen3_tiny,\n"
             "     batches: [{name: p, plain: {rows: 1, length: 8, seed: 0}}]}\n", root);
    write_text(ranks_suite, text);
    static const struct {
        const char *arguments, *expected;
    } rows[] = {
        {"run", "--suite S is required"},
        {"run --suite no-such-suite", "suites/no-such-suite.yaml does not exist"},
        {"run --suite smoke --dtype fp8 --list", "--dtype 'fp8' is not one of fp64, fp32, bf16"},
        {"run --suite smoke --device tpu --list", "--device 'tpu'"},
        {"run --suite smoke --model gpt2 --list", "suite smoke has no model 'gpt2'"},
        {"run --suite smoke --ops attention=sdpa --list", "--ops: 'attention' is not a kernel-selection field"},
        {"run --suite smoke --frobnicate", "unknown argument '--frobnicate'"},
        {"golden frobnicate --suite smoke", "unknown action 'frobnicate'"},
        {"golden generate", "--suite S is required"},
    };
    for (size_t row = 0; row < ROWS(rows); row++) {
        command_result result = run_parity(rows[row].arguments);
        cr_expect_eq(result.exit_code, 2, "%s: exit %d\n%s", rows[row].arguments, result.exit_code, result.output);
        cr_expect(strstr(result.output, rows[row].expected) != NULL, "%s: \"%s\" in\n%s", rows[row].arguments,
                  rows[row].expected, result.output);
        free(result.output);
    }
    snprintf(arguments, sizeof arguments, "run --suite %s --list", ranks_suite);
    command_result ranks = run_parity(arguments);
    cr_expect_eq(ranks.exit_code, 2, "%s", ranks.output);
    cr_expect(strstr(ranks.output, "ranks.yaml:3: ranks: 2: the ranks come from the layouts: name them under parallel:") != NULL, "%s",
              ranks.output);
    free(ranks.output);
    remove_scratch(&s);
}

Test(run_cli, an_absent_device_exits_3) {
    parity_test_require_no_gpu();
    scratch s = make_scratch(false);
    command_result result = run_scratch(&s, "--device cuda");
    cr_expect_eq(result.exit_code, 3, "%s", result.output);
    cr_expect(strstr(result.output, "device cuda is absent") != NULL, "%s", result.output);
    free(result.output);
    remove_scratch(&s);
}

Test(run_cli, veomni_compat_list_shows_veomni_modes) {
    command_result result = run_parity("run --suite veomni-compat --list");
    cr_expect_eq(result.exit_code, 0, "%s", result.output);
    static const char *const expected[] = {
        "llama3.1/plain/backend=hf,attn=eager,ce=eager,rms_norm=eager,swiglu=eager,rope=eager/bf16/",
        "mode hf_[attn-eager]  (eager baseline)",
        "mode hf_[attn-flash_attention_3]",
        "mode veomni_[attn-flash_attention_2]_[liger-True]",
        "backend=veomni,attn=flash_attention_2,ce=liger_kernel,rms_norm=liger_kernel,swiglu=liger_kernel,rope=liger_kernel",
        "qwen3_moe/plain/backend=veomni,attn=eager,ce=eager,rms_norm=eager,rope=eager,moe=fused_quack/bf16/",
        "mode veomni_[attn-flash_attention_3]_[moe-fused_triton]_[liger-False]",
    };
    for (size_t i = 0; i < ROWS(expected); i++)
        cr_expect(strstr(result.output, expected[i]) != NULL, "\"%s\" in the list", expected[i]);
    cr_expect(strstr(result.output, "llama3.1/plain/backend=veomni,attn=eager,ce=eager,rms_norm=eager,swiglu=eager,rope=eager,moe") ==
                  NULL,
              "no MoE mode for a dense model");
    cr_expect(strstr(result.output, "60 combos") != NULL, "9 + 9 dense, 21 + 21 MoE:\n%s",
              result.output + (strlen(result.output) > 300 ? strlen(result.output) - 300 : 0));
    free(result.output);
}

// The committed smoke goldens: one model of the smoke suite end to end, into a temporary folder.
Test(run_cli, smoke_end_to_end_into_a_temporary_folder) {
    char folder[] = "/tmp/parity-smoke-XXXXXX";
    cr_assert_not_null(mkdtemp(folder));
    char arguments[256];
    snprintf(arguments, sizeof arguments, "run --suite smoke --device cpu --model qwen3_tiny --out %s/report", folder);
    command_result result = run_parity(arguments);
    cr_expect_eq(result.exit_code, 0, "%s", result.output);
    cr_expect(strstr(result.output, "16 pass, 0 fail, 0 error") != NULL, "%s", result.output);
    char path[256];
    snprintf(path, sizeof path, "%s/report/results.json", folder);
    parity_results results;
    parity_error *error = parity_results_read_json(path, &results);
    cr_assert_null(error, "%s", error ? parity_error_message(error) : "");
    size_t counts[5];
    parity_results_counts(&results, counts);
    cr_expect_eq(counts[PARITY_COMBO_PASS], 16);
    cr_expect_str_eq(results.context.suite, "smoke");
    for (size_t i = 0; i < results.combo_count; i++)
        if (results.combos[i].status == PARITY_COMBO_PASS) {
            cr_expect_gt(results.combos[i].metric_count, 3, "%s has per-parameter metrics", results.combos[i].id);
            cr_expect(results.combos[i].sample_count >= 3 && results.combos[i].sample_count <= 12,
                      "%s: %zu samples: 3 timed repeats, up to 12 while noisy (smoke's adaptive_repeats)",
                      results.combos[i].id, results.combos[i].sample_count);
            cr_expect_gt(results.combos[i].median_ms, 0.0);
            cr_expect_gt(results.combos[i].peak_memory_bytes, 0);
        }
    parity_results_release(&results);
    static const char *const files[] = {"junit.xml", "summary.md", "report.html"};
    for (size_t i = 0; i < ROWS(files); i++) {
        struct stat info;
        snprintf(path, sizeof path, "%s/report/%s", folder, files[i]);
        cr_expect(stat(path, &info) == 0 && info.st_size > 0, "%s written", path);
    }
    free(result.output);
    snprintf(arguments, sizeof arguments, "rm -rf '%s'", folder);
    cr_assert_eq(system(arguments), 0);
}
