// test_cli_messages.c: what the `parity` command says when something goes wrong. Errors name what
// went wrong, never where in parity's source, unless --verbose (before or after the command): a row
// per command's error path. --help documents --verbose and the interrupt exit codes. Without a CUDA
// driver the reason says "no CUDA driver", not the runtime's "driver version is insufficient".
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_runner.h"
#include "ops/core/cuda_api.h"
#include "ops/core/device.h"

#define ROWS(array) (sizeof(array) / sizeof((array)[0]))

// A source location: "golden/golden.c:446", "ops/core/cuda/cuda_runtime.cu:12".
static bool has_source_location(const char *text) {
    regex_t pattern;
    cr_assert_eq(regcomp(&pattern, "[A-Za-z0-9_/]+\\.(c|cu|h):[0-9]+", REG_EXTENDED | REG_NOSUB), 0);
    bool found = regexec(&pattern, text, 0, NULL, 0) == 0;
    regfree(&pattern);
    return found;
}

Test(cli_messages, errors_carry_no_source_location_unless_verbose, .timeout = 120) {
    static const struct {
        const char *arguments;
        int exit_code;
        const char *expected;
    } rows[] = {
        {"golden show /nonexistent/parity.h5", 3, "/nonexistent/parity.h5: cannot open"},
        {"golden verify --suite /nonexistent/suite.yaml", 2, "/nonexistent/suite.yaml"},
        {"run --suite /nonexistent/suite.yaml", 2, "/nonexistent/suite.yaml"},
        {"run --suite smoke --model qwen3_tiny --golden-dir /nonexistent/goldens --out /tmp/parity-never-made", 3,
         "/nonexistent/goldens/smoke/qwen3_tiny/"},
        {"report /nonexistent/run", 3, "/nonexistent/run/results.json: cannot open"},
        {"eval --checkpoint /nonexistent/model --batch /nonexistent/batch.safetensors", 3, "/nonexistent/model"},
        {"config check /nonexistent/ops.yaml", 3, "/nonexistent/ops.yaml"},
        {"bench render /nonexistent/bench.json", 3, "/nonexistent/bench.json"},
        {"run --suite smoke --list --ops attn=eager --ops attn=sdpa", 2, "attn_implementation is set twice"},
    };
    for (size_t row = 0; row < ROWS(rows); row++) {
        for (int verbose = 0; verbose < 3; verbose++) { // none, --verbose after the command, before it
            char arguments[600];
            if (verbose == 0) snprintf(arguments, sizeof arguments, "%s", rows[row].arguments);
            else if (verbose == 1) snprintf(arguments, sizeof arguments, "%s --verbose", rows[row].arguments);
            else snprintf(arguments, sizeof arguments, "--verbose %s", rows[row].arguments);
            command_result result = run_parity(arguments);
            cr_expect_eq(result.exit_code, rows[row].exit_code, "parity %s: exit %d\n%s", arguments, result.exit_code,
                         result.output);
            cr_expect(strstr(result.output, rows[row].expected) != NULL, "parity %s: \"%s\" in\n%s", arguments,
                      rows[row].expected, result.output);
            cr_expect_eq(has_source_location(result.output), verbose != 0, "parity %s: %s source locations:\n%s", arguments,
                         verbose ? "shows" : "shows no", result.output);
            free(result.output);
        }
    }
}

Test(cli_messages, help_documents_verbose_and_the_interrupt_codes) {
    command_result result = run_parity("--help");
    cr_expect_eq(result.exit_code, 0);
    cr_expect(strstr(result.output, "--verbose") != NULL, "%s", result.output);
    cr_expect(strstr(result.output, "130 / 143") != NULL, "%s", result.output);
    free(result.output);
    static const char *const commands[] = {"run --help", "golden --help"};
    for (size_t i = 0; i < ROWS(commands); i++) {
        result = run_parity(commands[i]);
        cr_expect(strstr(result.output, "130 / 143") != NULL, "%s:\n%s", commands[i], result.output);
        free(result.output);
    }
}

Test(cli_messages, no_cuda_driver_is_said_in_those_words) {
    void *driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (driver) {
        dlclose(driver);
        printf("[SKIP] cli_messages::no_cuda_driver_is_said_in_those_words: a CUDA driver is installed\n");
        return;
    }
    char reason[256] = "";
    cr_expect_eq(parity_cuda_device_count(reason, sizeof reason), 0);
    command_result result = run_parity("list backends --device cuda");
    cr_expect_eq(result.exit_code, 0, "%s", result.output);
    if (parity_cuda_built()) {
        cr_expect(strstr(reason, "no CUDA device present (no CUDA driver: libcuda.so.1") != NULL, "%s", reason);
        cr_expect(strstr(result.output, "no CUDA driver: libcuda.so.1") != NULL, "%s", result.output);
    } else {
        cr_expect(strstr(reason, "built without CUDA") != NULL, "%s", reason);
    }
    cr_expect(strstr(result.output, "driver version is insufficient") == NULL, "%s", result.output);
    free(result.output);
}
