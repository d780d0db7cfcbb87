// test_interrupt_cli.c: SIGINT and SIGTERM as a user sends them. `parity run` stopped after its first
// combo exits 130 (SIGINT) or 143 (SIGTERM) with results.json and the reports of the combos that were
// done, marked interrupted (and `parity report` re-renders them); `golden generate` stops between
// goldens with the same codes, every golden written whole; a second signal ends the process at once,
// unless it is the first delivered twice (the same signal from the same sender within
// PARITY_INTERRUPT_DUPLICATE_MS, as timeout(1) sends it: to the command, then to its process group),
// which still stops gracefully.
// In every case no temporary file is left: not beside the reports or goldens, not in $TMPDIR. And a
// kill at any instant of an atomic write (ops/core/file.h) leaves the old file or the new one, never
// its temporary.
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli_runner.h"
#include "golden/golden.h"
#include "harness/cli/interrupt.h"
#include "ops/core/file.h"
#include "ops/core/temporaries.h"
#include "reports/results.h"
#include "scratch_suite.h"

#define ROWS(array) (sizeof(array) / sizeof((array)[0]))

static void expect_no_temporaries(const scratch_suite *s, const char *what) {
    char first[2048] = "";
    size_t left = scratch_leftover_temporaries(s->folder, first, sizeof first);
    cr_expect_eq(left, 0, "%s: %zu temporary files left, e.g. %s", what, left, first);
    cr_expect_eq(scratch_entry_count(s->tmp), 0, "%s: $TMPDIR (%s) is empty again", what, s->tmp);
}

// Two batches x (fp32, bf16) x (ce eager, chunk_loss): 8 combos to run (+ 8 not supported), each
// slow enough (40 timed steps) that a signal sent after the first lands while others remain.
static scratch_suite slow_run_suite(void) { return scratch_suite_make((scratch_spec){.batches = 2, .length = 64, .repeats = 40, .goldens = true}); }

static void start_run(const scratch_suite *s, parity_child *child) {
    char arguments[700];
    snprintf(arguments, sizeof arguments, "run --suite %s --golden-dir %s --out %s/out", s->suite, s->goldens, s->folder);
    *child = start_parity(arguments, s->tmp);
}

Test(interrupt_cli, run_keeps_the_combos_that_were_done_and_exits_128_plus_the_signal, .timeout = 300) {
    static const struct {
        int signal_number;
        const char *name;
        int exit_code;
        bool twice; // delivered twice at once, as timeout(1) delivers it
    } rows[] = {{SIGINT, "SIGINT", 130, false}, {SIGTERM, "SIGTERM", 143, false}, {SIGTERM, "SIGTERM", 143, true}};
    for (size_t row = 0; row < ROWS(rows); row++) {
        scratch_suite s = slow_run_suite();
        parity_child child;
        start_run(&s, &child);
        cr_assert(wait_for_output(&child, "[1/8] pass", 120), "%s: the first combo finished: %s", rows[row].name, child.text);
        kill(child.pid, rows[row].signal_number);
        if (rows[row].twice) kill(child.pid, rows[row].signal_number);
        command_result result = finish_parity(&child);
        cr_expect_eq(result.exit_code, rows[row].exit_code, "%s: exit %d\n%s", rows[row].name, result.exit_code, result.output);
        char expected[128];
        snprintf(expected, sizeof expected, "interrupted by %s: ", rows[row].name);
        cr_expect(strstr(result.output, expected) != NULL, "%s: says so\n%s", rows[row].name, result.output);
        cr_expect(strstr(result.output, "[8/8]") == NULL, "%s: stopped before the end\n%s", rows[row].name, result.output);

        char path[256];
        snprintf(path, sizeof path, "%s/out/results.json", s.folder);
        parity_results results;
        parity_error *error = parity_results_read_json(path, &results);
        cr_assert_null(error, "%s: %s", rows[row].name, error ? parity_error_message(error) : "");
        cr_expect_str_eq(results.context.interrupted, rows[row].name);
        cr_expect_eq(results.context.combos_selected, 16, "8 to run, 8 not supported");
        size_t counts[PARITY_COMBO_STATUS_COUNT];
        parity_results_counts(&results, counts);
        cr_expect_geq(counts[PARITY_COMBO_PASS], 1, "%s: the finished combo is kept", rows[row].name);
        cr_expect_lt(results.combo_count, results.context.combos_selected, "%s: only the combos that were done", rows[row].name);
        cr_expect_eq(counts[PARITY_COMBO_FAIL] + counts[PARITY_COMBO_ERROR], 0, "%s: a stop is not a failure", rows[row].name);
        parity_results_release(&results);
        static const char *const files[] = {"junit.xml", "summary.md", "report.html"};
        for (size_t i = 0; i < ROWS(files); i++) {
            struct stat info;
            snprintf(path, sizeof path, "%s/out/%s", s.folder, files[i]);
            cr_expect(stat(path, &info) == 0 && info.st_size > 0, "%s: %s written", rows[row].name, path);
        }
        expect_no_temporaries(&s, rows[row].name);
        free(result.output);

        char arguments[256];
        snprintf(arguments, sizeof arguments, "report %s/out", s.folder);
        command_result rendered = run_parity(arguments);
        cr_expect_eq(rendered.exit_code, 0, "%s: parity report re-renders it\n%s", rows[row].name, rendered.output);
        free(rendered.output);
        snprintf(path, sizeof path, "%s/out/summary.md", s.folder);
        FILE *file = fopen(path, "r");
        cr_assert_not_null(file);
        char summary[1 << 16];
        summary[fread(summary, 1, sizeof summary - 1, file)] = '\0';
        fclose(file);
        snprintf(expected, sizeof expected, "Interrupted by %s: ", rows[row].name);
        cr_expect(strstr(summary, expected) != NULL, "%s: the re-rendered summary says so", rows[row].name);
        scratch_suite_remove(&s);
    }
}

Test(interrupt_cli, a_second_signal_stops_at_once_leaving_nothing_temporary, .timeout = 300) {
    scratch_suite s = slow_run_suite();
    parity_child child;
    start_run(&s, &child);
    cr_assert(wait_for_output(&child, "[1/8] pass", 120), "%s", child.text);
    // The second once the first is acknowledged (two pending SIGINTs would merge into one), from
    // another process: a second request, not the first delivered twice (same sender within 0.2 s).
    kill(child.pid, SIGINT);
    cr_assert(wait_for_output(&child, "SIGINT received", 30), "the first signal is acknowledged: %s", child.text);
    pid_t sender = fork();
    cr_assert_geq(sender, 0);
    if (sender == 0) _exit(kill(child.pid, SIGINT) == 0 ? 0 : 1);
    int sender_status;
    cr_assert_eq(waitpid(sender, &sender_status, 0), sender);
    cr_assert(WIFEXITED(sender_status) && WEXITSTATUS(sender_status) == 0, "the second signal was sent");
    command_result result = finish_parity(&child);
    cr_expect_eq(result.exit_code, 130, "ended by SIGINT: exit %d\n%s", result.exit_code, result.output);
    cr_expect(strstr(result.output, "report:") == NULL, "at once: no reports\n%s", result.output);
    char out[256];
    snprintf(out, sizeof out, "%s/out", s.folder);
    // Gone when the second signal came before any report was in; when it came while the first's
    // reports were being written, what is there is whole (no temporary file: checked below), at most
    // the four reports.
    int left = scratch_entry_count(out);
    cr_expect(left == -1 || (left >= 1 && left <= 4), "the report folder is gone or holds whole reports only (%d entries)",
              left);
    expect_no_temporaries(&s, "two signals");
    free(result.output);
    scratch_suite_remove(&s);
}

Test(interrupt_cli, golden_generate_stops_between_goldens, .timeout = 300) {
    static const struct {
        int signal_number;
        const char *name;
        int exit_code;
    } rows[] = {{SIGINT, "SIGINT", 130}, {SIGTERM, "SIGTERM", 143}};
    for (size_t row = 0; row < ROWS(rows); row++) {
        scratch_suite s = scratch_suite_make((scratch_spec){.batches = 4, .length = 256});
        char arguments[600];
        snprintf(arguments, sizeof arguments, "golden generate --suite %s --golden-dir %s", s.suite, s.goldens);
        parity_child child = start_parity(arguments, s.tmp);
        cr_assert(wait_for_output(&child, "written ", 120), "%s: the first golden: %s", rows[row].name, child.text);
        kill(child.pid, rows[row].signal_number);
        command_result result = finish_parity(&child);
        cr_expect_eq(result.exit_code, rows[row].exit_code, "%s: exit %d\n%s", rows[row].name, result.exit_code, result.output);
        char expected[128];
        snprintf(expected, sizeof expected, "interrupted by %s", rows[row].name);
        cr_expect(strstr(result.output, expected) != NULL, "%s\n%s", rows[row].name, result.output);
        char folder[256];
        snprintf(folder, sizeof folder, "%s/scratch/qwen3_tiny", s.goldens);
        int made = scratch_entry_count(folder);
        cr_expect(made >= 1 && made < 4, "%s: %d of 4 goldens made", rows[row].name, made);
        for (char name = 'a'; name < 'a' + 4; name++) { // every golden there is whole
            char path[320];
            snprintf(path, sizeof path, "%s/%c.h5", folder, name);
            if (access(path, F_OK) != 0) continue;
            parity_golden golden;
            parity_error *error = parity_golden_read(path, &golden);
            cr_expect_null(error, "%s: %s: %s", rows[row].name, path, error ? parity_error_message(error) : "");
            if (!error) parity_golden_release(&golden);
            parity_error_free(error);
        }
        expect_no_temporaries(&s, rows[row].name);
        free(result.output);
        scratch_suite_remove(&s);
    }
}

// A child that rewrites one file atomically (4 MiB each time) until a signal ends it, with the handler
// of the `parity` command installed; killed at 30 moments spread over its writes.
Test(interrupt_cli, a_kill_during_an_atomic_write_leaves_no_temporary_file, .timeout = 120) {
    char folder[] = "/tmp/parity-atomic-kill-XXXXXX";
    cr_assert_not_null(mkdtemp(folder));
    char target[128];
    snprintf(target, sizeof target, "%s/target.bin", folder);
    size_t size = (size_t)4 << 20;
    for (int attempt = 0; attempt < 30; attempt++) {
        pid_t child = fork();
        cr_assert_geq(child, 0);
        if (child == 0) {
            signal(SIGINT, SIG_DFL); // whatever the test runner set: the command starts from the defaults
            signal(SIGTERM, SIG_DFL);
            parity_cli_interrupts_install(NULL);
            char *data = calloc(size, 1);
            for (unsigned round = 0; data; round++) {
                memset(data, (int)(round & 0xff), size);
                parity_error *error = parity_write_file_atomic(target, data, size, true);
                if (error) _exit(3);
            }
            _exit(4);
        }
        struct timespec pause = {0, (long)(2 + attempt * 3) * 1000000L}; // 2 ms to 89 ms
        nanosleep(&pause, NULL);
        kill(child, attempt % 2 ? SIGINT : SIGTERM);
        int status;
        cr_assert_eq(waitpid(child, &status, 0), child);
        cr_expect(WIFSIGNALED(status), "attempt %d: ended by the signal (status %d)", attempt, status);
        int entries = scratch_entry_count(folder);
        cr_expect(entries <= 1, "attempt %d: %d files: a temporary file was left", attempt, entries);
    }
    char command[128];
    snprintf(command, sizeof command, "rm -rf '%s'", folder);
    cr_assert_eq(system(command), 0);
}

// The table behind the handler: tracked files are removed before tracked folders, forgotten paths
// are left alone, and a full table is an error, never a silently untracked path.
Test(interrupt_cli, the_temporaries_table_removes_what_is_tracked) {
    char folder[] = "/tmp/parity-temporaries-XXXXXX";
    cr_assert_not_null(mkdtemp(folder));
    char inner[128], file[160], kept[160];
    snprintf(inner, sizeof inner, "%s/inner", folder);
    snprintf(file, sizeof file, "%s/inner/data.tmp.1", folder);
    snprintf(kept, sizeof kept, "%s/kept.bin", folder);
    cr_assert_eq(mkdir(inner, 0700), 0);
    FILE *stream = fopen(file, "w");
    fclose(stream);
    stream = fopen(kept, "w");
    fclose(stream);
    int folder_handle, file_handle, kept_handle;
    cr_assert_null(parity_temporary_track(inner, true, &folder_handle)); // the folder first: files still go first
    cr_assert_null(parity_temporary_track(file, false, &file_handle));
    cr_assert_null(parity_temporary_track(kept, false, &kept_handle));
    parity_temporary_forget(kept_handle);
    parity_temporaries_remove();
    cr_expect_neq(access(file, F_OK), 0, "the tracked file is gone");
    cr_expect_neq(access(inner, F_OK), 0, "the tracked folder, emptied, is gone");
    cr_expect_eq(access(kept, F_OK), 0, "a forgotten path is not touched");
    parity_temporary_forget(folder_handle);
    parity_temporary_forget(file_handle);

    int handles[PARITY_TEMPORARY_SLOTS];
    for (int i = 0; i < PARITY_TEMPORARY_SLOTS; i++) cr_assert_null(parity_temporary_track(kept, false, &handles[i]));
    int extra;
    parity_error *error = parity_temporary_track(kept, false, &extra);
    cr_expect_not_null(error, "a full table is an error");
    cr_expect_eq(parity_error_kind_of(error), PARITY_ERROR_INTERNAL);
    cr_expect_eq(extra, -1);
    parity_error_free(error);
    for (int i = 0; i < PARITY_TEMPORARY_SLOTS; i++) parity_temporary_forget(handles[i]);
    char command[128];
    snprintf(command, sizeof command, "rm -rf '%s'", folder);
    cr_assert_eq(system(command), 0);
}
