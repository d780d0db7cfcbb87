// test_examples.c: the page examples/README.md, "Validate your kernel", run as written on the CPU
// example: parity installed into a scratch prefix (`make install PREFIX=`), the example plugins built
// against that installed parity only (examples/Makefile, pkg-config), then check op, the smoke suite
// and bench with the right plugin (each must pass) and with its deliberately wrong variant (each
// must fail: the check and the smoke combos see its dweight bug). A table of command lines, run in
// order from the repository root.
#include <criterion/criterion.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_runner.h"

#define ROWS(array) (sizeof(array) / sizeof((array)[0]))

typedef struct example_step {
    const char *command; // /bin/sh; {P} the prefix, {B} the build directory of the parity under test
    int exit_code;
    const char *expected; // a substring of the output (NULL: none)
} example_step;

static void substitute(const char *command, const char *prefix, const char *build, char *out, size_t size) {
    size_t used = 0;
    for (const char *c = command; *c && used + 1 < size; c++) {
        if (c[0] == '{' && (c[1] == 'P' || c[1] == 'B') && c[2] == '}') {
            used += (size_t)snprintf(out + used, size - used, "%s", c[1] == 'P' ? prefix : build);
            c += 2;
        } else out[used++] = *c;
        if (used >= size) used = size - 1;
    }
    out[used] = '\0';
}

Test(examples, the_validate_your_kernel_page_works_for_the_cpu_example, .timeout = 900) {
    static const example_step steps[] = {
        // the make of the test run must not hand its jobserver to these
        {"env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s install PREFIX={P} BUILD={B}", 0, "installed under"},
        {"env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C examples PREFIX={P} BUILD={P}/examples cpu", 0, NULL},
        {"{P}/bin/parity check op rms_norm --backend example_cpu --plugin {P}/examples/example_cpu.so", 0,
         "24 pass, 0 FAIL, 0 not supported"},
        {"{P}/bin/parity check op rms_norm --backend example_cpu --plugin {P}/examples/example_cpu_wrong.so", 1,
         "dweight max error"},
        {"{P}/bin/parity run --suite smoke --filter '*rms_norm=example_cpu*' --plugin {P}/examples/example_cpu.so "
         "--out {P}/run-right",
         0, " 0 fail, 0 error"},
        {"{P}/bin/parity run --suite smoke --filter '*rms_norm=example_cpu*' --plugin {P}/examples/example_cpu_wrong.so "
         "--out {P}/run-wrong",
         1, "\n0 pass, "},
        {"{P}/bin/parity bench op rms_norm --device cpu --backends eager,example_cpu --shape 1024x1024 --runs 3 "
         "--plugin {P}/examples/example_cpu.so",
         0, "example_cpu  pass 0."},
        {"{P}/bin/parity bench op rms_norm --device cpu --backends example_cpu --shape 1024x1024 --runs 3 "
         "--plugin {P}/examples/example_cpu_wrong.so",
         1, "FAIL"},
    };
    char prefix[] = "/tmp/parity-examples-XXXXXX";
    cr_assert(mkdtemp(prefix) != NULL, "mkdtemp");
    char binary[4096];
    parity_binary_path(binary, sizeof binary);
    const char *build = dirname(binary);
    for (size_t s = 0; s < ROWS(steps); s++) {
        char command[8192];
        substitute(steps[s].command, prefix, build, command, sizeof command);
        command_result result = run_shell(command);
        cr_expect_eq(result.exit_code, steps[s].exit_code, "%s: exit %d, expected %d\n%s", command, result.exit_code,
                     steps[s].exit_code, result.output);
        if (steps[s].expected)
            cr_expect(strstr(result.output, steps[s].expected) != NULL, "%s: no '%s' in\n%s", command, steps[s].expected,
                      result.output);
        bool stop = result.exit_code != steps[s].exit_code && s < 2; // nothing to run without the install or the build
        free(result.output);
        if (stop) break;
    }
    char clean[4200];
    snprintf(clean, sizeof clean, "rm -rf '%s'", prefix);
    free(run_shell(clean).output);
}
