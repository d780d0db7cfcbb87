// test_plugins.c: backend plugins (ops/plugin_api.h, harness/plugins/plugins.h) through the `parity`
// command, with the shared libraries the Makefile builds from suites/plugins/test_plugin.c beside the
// binary (build/plugins/test_VARIANT.so). A table: each way a plugin is refused is exit 2 with its
// reason and leaves no backend behind; the good plugin's backend is listed with its origin, joins the
// smoke matrix (every combo passes: its kernels are eager's), and the run's context names the file
// with its SHA-256; --plugin and PARITY_PLUGINS load the same way.
#include <criterion/criterion.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "assert_ok.h"
#include "cli_runner.h"
#include "harness/plugins/plugins.h"
#include "ops/registry.h"

#define ROWS(array) (sizeof(array) / sizeof((array)[0]))

// build/plugins/test_VARIANT.so beside the parity binary.
static void plugin_path(const char *variant, char *path, size_t size) {
    char binary[4096];
    parity_binary_path(binary, sizeof binary);
    snprintf(path, size, "%s/plugins/test_%s.so", dirname(binary), variant);
}

Test(plugins, each_refusal_is_a_usage_error_with_its_reason, .timeout = 120) {
    static const struct {
        const char *variant; // NULL: a path that does not exist
        const char *expected;
    } rows[] = {
        {"bad_version", "built for plugin API version 2, this parity has version 1"},
        {"no_register", "missing entry point parity_plugin_register()"},
        {"duplicate", "backend rms_norm/eager on cpu is already registered"},
        {"unknown_op", "names an unknown op 'rms_normz'"},
        {"unresolved", "undefined symbol: parity_no_such_function"},
        {"fails", "registering its backends: the test plugin fails on purpose"},
        {NULL, "cannot read the file"},
    };
    for (size_t row = 0; row < ROWS(rows); row++) {
        char path[4200], arguments[4400];
        if (rows[row].variant) plugin_path(rows[row].variant, path, sizeof path);
        else snprintf(path, sizeof path, "/nonexistent/plugin.so");
        snprintf(arguments, sizeof arguments, "list backends --device cpu --plugin '%s'", path);
        command_result result = run_parity(arguments);
        cr_expect_eq(result.exit_code, 2, "%s: exit %d\n%s", path, result.exit_code, result.output);
        cr_expect(strstr(result.output, rows[row].expected) != NULL, "%s: expected '%s' in:\n%s", path, rows[row].expected,
                  result.output);
        cr_expect(strstr(result.output, path) != NULL, "%s: the error names the file:\n%s", path, result.output);
        free(result.output);
    }
    command_result missing = run_parity("list backends --plugin");
    cr_expect_eq(missing.exit_code, 2, "--plugin without a path: exit %d\n%s", missing.exit_code, missing.output);
    cr_expect(strstr(missing.output, "option --plugin needs a value") != NULL, "%s", missing.output);
    free(missing.output);
    command_result empty = run_parity("list backends --plugin=");
    cr_expect_eq(empty.exit_code, 2, "--plugin= : exit %d\n%s", empty.exit_code, empty.output);
    cr_expect(strstr(empty.output, "option --plugin needs a value") != NULL, "%s", empty.output);
    free(empty.output);
}

Test(plugins, the_good_plugin_is_listed_with_its_origin_both_ways, .timeout = 120) {
    char path[4200], arguments[4400], binary[4096], command[16384];
    plugin_path("good", path, sizeof path);
    snprintf(arguments, sizeof arguments, "list backends --device cpu --plugin '%s'", path);
    command_result listed = run_parity(arguments);
    cr_expect_eq(listed.exit_code, 0, "exit %d\n%s", listed.exit_code, listed.output);
    char origin[4300];
    snprintf(origin, sizeof origin, "third party: plugin %s", path);
    const char *line = strstr(listed.output, "plugin_copy");
    cr_expect(line && strstr(line, origin) != NULL, "expected plugin_copy with '%s' in:\n%s", origin, listed.output);
    free(listed.output);
    // the environment variable, and the same plugin named twice (loaded once)
    parity_binary_path(binary, sizeof binary);
    snprintf(command, sizeof command, "PARITY_PLUGINS='%s:%s' '%s' list backends --device cpu", path, path, binary);
    command_result from_environment = run_shell(command);
    cr_expect_eq(from_environment.exit_code, 0, "exit %d\n%s", from_environment.exit_code, from_environment.output);
    cr_expect(strstr(from_environment.output, origin) != NULL, "%s", from_environment.output);
    free(from_environment.output);
    // without it, the backend is not there
    command_result without = run_parity("list backends --device cpu");
    cr_expect(strstr(without.output, "plugin_copy") == NULL, "%s", without.output);
    free(without.output);
}

Test(plugins, the_good_plugin_joins_the_matrix_and_the_report_names_it, .timeout = 300) {
    char path[4200], arguments[4800], out[] = "/tmp/parity-plugins-XXXXXX";
    plugin_path("good", path, sizeof path);
    cr_assert_not_null(mkdtemp(out));
    snprintf(arguments, sizeof arguments,
             "run --suite smoke --device cpu --model qwen3_tiny --filter '*rms_norm=plugin_copy*' --plugin '%s' --out '%s/run'",
             path, out);
    command_result result = run_parity(arguments);
    cr_expect_eq(result.exit_code, 0, "exit %d\n%s", result.exit_code, result.output);
    cr_expect(strstr(result.output, "rms_norm=plugin_copy") != NULL, "%s", result.output);
    cr_expect(strstr(result.output, " 0 fail") != NULL, "%s", result.output);
    free(result.output);
    char file[4400], *text = NULL;
    snprintf(file, sizeof file, "%s/run/results.json", out);
    FILE *stream = fopen(file, "rb");
    cr_assert_not_null(stream, "%s", file);
    size_t capacity = 0;
    cr_assert_gt(getdelim(&text, &capacity, '\0', stream), 0);
    fclose(stream);
    char expected[4300];
    snprintf(expected, sizeof expected, "%s (sha256 ", path);
    const char *field = strstr(text, "\"plugins\"");
    cr_expect(field && strstr(field, expected) != NULL, "results.json context lacks plugins: %s", expected);
    free(text);
    char clean[4400];
    snprintf(clean, sizeof clean, "rm -rf '%s'", out);
    command_result removed = run_shell(clean);
    free(removed.output);
}

// In the library (this test binary exports its symbols as parity does): a refused plugin leaves the
// registry as it was, even one that registered a backend before it failed; the good one adds one
// backend, recorded with the file's SHA-256, and loading it again is a no-op.
Test(plugins, a_refused_plugin_leaves_no_backend_behind, .timeout = 60) {
    assert_ok(parity_registry_register_builtins(), "built-ins");
    const size_t before = parity_registry_count(), loaded_before = parity_plugin_count();
    static const char *const refused[] = {"fails", "duplicate", "unknown_op", "bad_version"};
    for (size_t row = 0; row < ROWS(refused); row++) {
        char path[4200];
        plugin_path(refused[row], path, sizeof path);
        parity_error *error = parity_plugin_load(path);
        cr_expect_not_null(error, "%s was accepted", path);
        cr_expect_eq(parity_error_kind_of(error), PARITY_ERROR_USAGE, "%s", path);
        parity_error_free(error);
        cr_expect_eq(parity_registry_count(), before, "%s left %zu backends behind", path, parity_registry_count() - before);
        cr_expect_null(parity_registry_find(PARITY_OP_RMS_NORM, "plugin_copy", PARITY_DEVICE_CPU), "%s", path);
    }
    cr_expect_eq(parity_plugin_count(), loaded_before);
    char good[4200];
    plugin_path("good", good, sizeof good);
    assert_ok(parity_plugin_load(good), "the good plugin");
    assert_ok(parity_plugin_load(good), "the good plugin again");
    cr_expect_eq(parity_registry_count(), before + 1);
    cr_expect_eq(parity_plugin_count(), loaded_before + 1);
    const parity_plugin_info *info = parity_plugin_at(loaded_before);
    cr_assert_not_null(info);
    cr_expect_str_eq(info->path, good);
    cr_expect_eq(info->backends, 1);
    cr_expect_eq(strlen(info->sha256), 64);
    const parity_backend *backend = parity_registry_find(PARITY_OP_RMS_NORM, "plugin_copy", PARITY_DEVICE_CPU);
    cr_assert_not_null(backend);
    char origin[4300];
    snprintf(origin, sizeof origin, "plugin %s", good);
    cr_expect_str_eq(backend->origin, origin);
}
