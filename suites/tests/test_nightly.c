// test_nightly.c: tools/nightly (`make nightly`), the nightly CI job, end to end on the CPU with a
// scratch suite: the first night has no baseline (compare skipped, the run recorded), the second is
// compared with the history's baseline and recorded too; a usage error exits 2. The time threshold
// is set far above this machine's run-to-run noise (docs/compare.md: CPU timings of a shared machine
// move by more than their own noise), so the verdict under test is the flow, not a timing.
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli_runner.h"
#include "scratch_suite.h"

static bool exists(const char *path) {
    struct stat info;
    return stat(path, &info) == 0;
}

Test(nightly, two_nights_are_recorded_and_the_second_is_compared_with_the_first, .timeout = 240) {
    scratch_suite s = scratch_suite_make((scratch_spec){.goldens = true});
    char command[8192], path[512], parity[4200];
    parity_binary_path(parity, sizeof parity);
    for (int night = 1; night <= 2; night++) {
        snprintf(command, sizeof command,
                 "tools/nightly --parity '%s' --golden-dir %s --suite %s --device cpu --db %s/history.sqlite "
                 "--out %s/night%d --dashboard %s/dashboard -- --threshold 1000%%",
                 parity, s.goldens, s.suite, s.folder, s.folder, night, s.folder);
        command_result result = run_shell(command);
        cr_expect_eq(result.exit_code, 0, "night %d: %s", night, result.output);
        cr_expect(strstr(result.output, night == 1 ? "compare: skipped" : "compare against the history"), "night %d: %s",
                  night, result.output);
        cr_expect(strstr(result.output, "3/4 history add"), "night %d: %s", night, result.output);
        snprintf(path, sizeof path, "%s/night%d/compare.md", s.folder, night);
        cr_expect_eq(exists(path), night == 2, "night %d: compare.md %s", night, path);
        free(result.output);
    }
    snprintf(command, sizeof command, "history list --db %s/history.sqlite", s.folder);
    command_result listed = run_parity(command);
    cr_expect_eq(listed.exit_code, 0, "%s", listed.output);
    int runs = 0;
    for (const char *line = listed.output; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
        runs += *line >= '1' && *line <= '9';
    cr_expect_eq(runs, 2, "two nights, two runs in the history: %s", listed.output);
    free(listed.output);
    scratch_suite_remove(&s);
}

Test(nightly, a_bad_argument_exits_2_and_runs_nothing) {
    command_result result = run_shell("tools/nightly --frobnicate");
    cr_expect_eq(result.exit_code, 2, "%s", result.output);
    cr_expect(strstr(result.output, "unknown argument '--frobnicate'"), "%s", result.output);
    free(result.output);
    result = run_shell("tools/nightly --parity /nonexistent/parity");
    cr_expect_eq(result.exit_code, 2, "%s", result.output);
    cr_expect(strstr(result.output, "no parity binary"), "%s", result.output);
    free(result.output);
}
