// test_check_cli.c: `parity check op` (harness/cli/command_check.c) and the correctness column of
// `parity bench op` on the cpu, through the command. Tables: each row is a command line, the exit
// code it must give and pieces its output must hold (and must not). The rows prove the check can
// fail: every deliberately wrong backend of ops/testing/test_backends.h, and the test plugins whose
// bugs only the check sees (an out-of-bounds write, a NaN, broken claimed determinism), fail it;
// eager and the correct plugin pass; usage mistakes are exit 2 naming what is wrong.
#include <criterion/criterion.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_runner.h"

#define ROWS(array) (sizeof(array) / sizeof((array)[0]))

typedef struct check_row {
    const char *arguments; // after `parity`; "@" stands for the directory of the test plugins
    int exit_code;
    const char *expected[3]; // substrings the output holds
    const char *absent;      // a substring it must not hold (NULL: none)
} check_row;

// `arguments` with "@" replaced by build/plugins beside the parity binary.
static void expand(const char *arguments, char *out, size_t size) {
    char binary[4096];
    parity_binary_path(binary, sizeof binary);
    char plugins[4200];
    snprintf(plugins, sizeof plugins, "%s/plugins", dirname(binary));
    size_t used = 0;
    for (const char *c = arguments; *c && used + 1 < size; c++) {
        if (*c == '@') used += (size_t)snprintf(out + used, size - used, "%s", plugins);
        else out[used++] = *c;
        if (used >= size) used = size - 1;
    }
    out[used] = '\0';
}

static void run_rows(const check_row *rows, size_t count) {
    for (size_t r = 0; r < count; r++) {
        char arguments[8192];
        expand(rows[r].arguments, arguments, sizeof arguments);
        command_result result = run_parity(arguments);
        cr_expect_eq(result.exit_code, rows[r].exit_code, "parity %s: exit %d, expected %d\n%s", arguments, result.exit_code,
                     rows[r].exit_code, result.output);
        for (size_t e = 0; e < ROWS(rows[r].expected) && rows[r].expected[e]; e++)
            cr_expect(strstr(result.output, rows[r].expected[e]) != NULL, "parity %s: no '%s' in\n%s", arguments,
                      rows[r].expected[e], result.output);
        if (rows[r].absent)
            cr_expect(strstr(result.output, rows[r].absent) == NULL, "parity %s: '%s' in\n%s", arguments, rows[r].absent,
                      result.output);
        free(result.output);
    }
}

Test(check_cli, correct_backends_pass_and_every_planted_bug_fails, .timeout = 600) {
    static const check_row rows[] = {
        {"check op rms_norm --backend eager", 0, {"24 pass, 0 FAIL, 0 not supported", "standard rows=3 hidden=8191 (prime)"}, "FAIL  "},
        {"check op rms_norm --plugin @/test_good.so --backend plugin_copy --dtype bf16", 0, {"8 pass, 0 FAIL"}, NULL},
        {"check op attention --dtype fp64 --filter 'causal*'", 0, {"sdpa", "pass"}, "FAIL  "},
        // the test-only backends: each bug is seen
        {"check op rms_norm --with-test-backends --backend test_perturbed --dtype fp32", 1, {"FAIL", "y max error"}, NULL},
        {"check op rms_norm --with-test-backends --backend test_perturbed_bf16_unit --dtype bf16", 1, {"FAIL"}, NULL},
        {"check op rms_norm --with-test-backends --backend test_wrong_eps --dtype fp64", 1, {"FAIL"}, NULL},
        {"check op rms_norm --with-test-backends --backend test_flipped_dw --dtype fp64", 1, {"dweight max error"}, NULL},
        {"check op rms_norm --with-test-backends --backend test_flipped_dx --dtype fp64", 1, {"dx max error"}, NULL},
        {"check op rotary --with-test-backends --backend test_position_off_by_one --dtype fp32", 1, {"FAIL"}, NULL},
        {"check op attention --with-test-backends --backend test_scale_1pct --dtype fp64 --filter 'causal N=7*'", 1, {"FAIL"}, NULL},
        // bugs only the check's sentinels, NaN scan and repeat runs see
        {"check op rms_norm --plugin @/test_out_of_bounds.so --backend plugin_copy --dtype fp32", 1,
         {"out-of-bounds write: y: 0 of the 256 sentinel bytes before it and 1 of those after it overwritten by the forward"}, NULL},
        {"check op rms_norm --plugin @/test_nan.so --backend plugin_copy --dtype bf16", 1, {"dweight[3] is NaN/Inf"}, NULL},
        {"check op rms_norm --plugin @/test_nondeterministic.so --backend plugin_copy --dtype fp64", 1,
         {"claims determinism, but y differs between runs", " NO "}, NULL},
    };
    run_rows(rows, ROWS(rows));
}

Test(check_cli, shapes_filters_json_and_repeats, .timeout = 300) {
    static const check_row rows[] = {
        {"check op rms_norm --backend eager --shapes 64x300,1x1 --filter 'shape*' --dtype bf16,fp32", 0,
         {"2 rows x 2 dtypes", "shape 64x300", "4 pass, 0 FAIL"}, "standard rows"},
        // repeated options add up (each one's items kept)
        {"check op rms_norm --backend eager --shapes 8x8,6x6 --shapes 4x4,2x2 --filter 'shape*' --dtype fp64", 0,
         {"shape 6x6", "shape 4x4", "4 rows"}, NULL},
        {"check op attention --backend sdpa --backend eager --dtype fp64 --filter 'causal N=7*'", 0,
         {"x 2 backends", "sdpa ", "eager "}, NULL},
        {"check op rms_norm --backend eager --filter 'offset*' --dtype fp64 --tensors", 0,
         {"dweight      ratio", "3 pass"}, NULL},
        {"check op rms_norm --backend eager --filter 'offset rows=2*' --dtype fp64 --repeats 5 --json", 0,
         {"\"repeats\":\t5", "\"deterministic\":\ttrue", "\"pass\":\t1"}, NULL},
        {"check op cross_entropy --backend chunk_loss --dtype fp64 --shapes 64x32x100", 0, {"shape 64x32x100", "pass"}, NULL},
        // every op: those with a backend besides the reference are checked, the others skipped with why
        {"check op all --dtype fp64", 0,
         {"cross_entropy: ", "skipped: check add: no backend to check on cpu", "ops checked: "}, "FAIL  "},
        {"check op all --dtype bf16 --plugin @/test_good.so --backend plugin_copy", 0, {"1 op checked: 8 pass"}, "attention"},
    };
    run_rows(rows, ROWS(rows));
}

Test(check_cli, usage_mistakes_are_exit_2_naming_what_is_wrong, .timeout = 120) {
    static const check_row rows[] = {
        {"check", 2, {"expected 'parity check op OP"}, NULL},
        {"check op", 2, {"expected 'parity check op OP"}, NULL},
        {"check op nope", 2, {"unknown op 'nope'", "rms_norm"}, NULL},
        {"check op all --backend eager --shapes 4x4", 2, {"--shapes needs a single op"}, NULL},
        {"check op rms_norm --backend nope", 2, {"no backend 'nope' on cpu (registered there: eager)"}, NULL},
        {"check op rms_norm", 2, {"no backend to check on cpu (eager there is the reference"}, NULL},
        {"check op rms_norm --backend eager --dtype fp16", 2, {"--dtype 'fp16' is not bf16, fp32 or fp64"}, NULL},
        {"check op rms_norm --backend eager --filter 'zz*'", 2, {"no row to check (--filter 'zz*' matches none)"}, NULL},
        {"check op add --backend eager --shapes 4x4", 2, {"the op has no shape format"}, NULL},
        {"check op rms_norm --backend eager --shapes 4x", 2, {"ends with 'x'"}, NULL},
        {"check op rms_norm --backend eager --device tpu", 2, {"--device 'tpu' is not a device"}, NULL},
        {"check op rms_norm --backend eager --repeats 0", 2, {"--repeats '0' is not an integer in [1, 1000]"}, NULL},
        {"check op rms_norm --backend eager --bogus", 2, {"unknown argument '--bogus'"}, NULL},
        {"check op rms_norm --backend eager --output /nonexistent/dir/x.json --filter 'offset rows=2*' --dtype fp64", 3,
         {"/nonexistent/dir/x.json"}, NULL},
    };
    run_rows(rows, ROWS(rows));
}

// `parity bench op` on the cpu: the eager and plugin backends timed, each with its check; the wrong
// plugin's row fails its check and the command exits 1.
Test(check_cli, bench_on_the_cpu_has_a_check_column, .timeout = 300) {
    static const check_row rows[] = {
        {"bench op rms_norm --device cpu --shape 512x256 --runs 3 --warmup 1", 0,
         {"OpenBLAS fp32 GEMM", "check", "eager    reference"}, "FAIL"},
        {"bench op rms_norm --device cpu --shape 512x256 --runs 3 --warmup 1 --plugin @/test_good.so", 0,
         {"plugin_copy  pass 0."}, "FAIL"},
        {"bench op rms_norm --device cpu --shape 512x256 --runs 3 --warmup 1 --plugin @/test_nan.so", 1,
         {"plugin_copy", "FAIL", "dweight[3] is NaN/Inf"}, NULL},
        {"bench op rms_norm --device cpu --shape 512x256 --runs 3 --warmup 1 --no-check", 0, {"fwd+bwd"}, "pass 0."},
        {"bench op rms_norm --device cpu --shape 512x256 --runs 3 --warmup 1 --check-max-elements 1000 --plugin "
         "@/test_good.so",
         0, {"not checked", "over --check-max-elements 1000"}, NULL},
    };
    run_rows(rows, ROWS(rows));
}
