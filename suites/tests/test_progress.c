// test_progress.c: the progress line of `parity run` on a terminal fits its width. The formatter cuts
// the line to columns - 1 at a character boundary (ids ending "..."), for the widths where it used
// to wrap (80, 160) and narrow ones; and end to end, `parity run` on a pseudo-terminal of 80 and of
// 160 columns never writes a progress line wider than that, and erases each one before the next.
#include <criterion/criterion.h>
#include <pty.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "cli_runner.h"
#include "harness/progress.h"
#include "scratch_suite.h"

#define ROWS(array) (sizeof(array) / sizeof((array)[0]))

static size_t code_points(const char *text) {
    size_t count = 0;
    for (; *text; text++) count += ((unsigned char)*text & 0xC0) != 0x80;
    return count;
}

Test(progress, the_line_is_cut_to_the_terminal_width) {
    char long_id[400];
    snprintf(long_id, sizeof long_id, "qwen3_next_tiny/plain/attn=eager,ce=eager,rms_norm=eager,swiglu=eager,rope=eager,"
                                      "rms_norm_gated=eager,conv1d=eager,gdr=eager,lb_loss=eager,moe=fused_quack/bf16/cpu");
    static const struct {
        size_t columns;
        const char *id;
        bool cut;
    } rows[] = {
        {80, NULL, true}, {160, NULL, true}, {40, NULL, true}, {10, NULL, true}, {2, NULL, true}, {1, NULL, true},
        {400, NULL, false}, {80, "m/b/ce=eager/bf16/cpu", false},
    };
    parity_progress progress;
    parity_progress_start(&progress, NULL, true, 490);
    progress.done = 17;
    for (size_t row = 0; row < ROWS(rows); row++) {
        const char *id = rows[row].id ? rows[row].id : long_id;
        char line[1024];
        size_t width = parity_progress_format(&progress, "qwen3_next_tiny", id, 12.5, rows[row].columns, line, sizeof line);
        size_t limit = rows[row].columns > 1 ? rows[row].columns - 1 : 1;
        cr_expect_eq(width, code_points(line), "%zu columns: the width returned is the line's", rows[row].columns);
        cr_expect_leq(width, limit, "%zu columns: %zu wide: %s", rows[row].columns, width, line);
        if (rows[row].cut) {
            cr_expect_eq(width, limit, "%zu columns: the line uses the width: %s", rows[row].columns, line);
            if (limit > 3) cr_expect(strcmp(line + strlen(line) - 3, "...") == 0, "%zu columns: %s", rows[row].columns, line);
        } else {
            cr_expect(strstr(line, id) != NULL, "%zu columns: the whole id: %s", rows[row].columns, line);
        }
        if (rows[row].columns >= 80)
            cr_expect(strncmp(line, "combo 18/490  qwen3_next_tiny  elapsed 12.5s  ETA ", 50) == 0, "%s", line);
    }
    // An id of two-byte characters cut at every width across it: whole characters only.
    const char *accented = "m/b/ce=\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9/bf16";
    char line[1024];
    size_t whole = parity_progress_format(&progress, "m", accented, 1.0, 1000, line, sizeof line);
    for (size_t columns = whole - 12; columns <= whole + 1; columns++) {
        size_t width = parity_progress_format(&progress, "m", accented, 1.0, columns, line, sizeof line);
        cr_expect_leq(width, columns - 1, "%zu columns: %s", columns, line);
        cr_expect_eq(width, code_points(line));
        for (const char *c = line; *c; c++)
            if (((unsigned char)*c & 0xE0) == 0xC0)
                cr_expect(((unsigned char)c[1] & 0xC0) == 0x80, "%zu columns: whole UTF-8 characters: %s", columns, line);
    }
}

Test(progress, the_width_comes_from_the_terminal_or_COLUMNS) {
    setenv("COLUMNS", "123", 1);
    FILE *pipe_end = tmpfile(); // not a terminal
    cr_expect_eq(parity_progress_columns(pipe_end), 123);
    setenv("COLUMNS", "wide", 1);
    cr_expect_eq(parity_progress_columns(pipe_end), 80, "a bad COLUMNS: 80");
    unsetenv("COLUMNS");
    cr_expect_eq(parity_progress_columns(pipe_end), 80);
    fclose(pipe_end);
}

// Runs `parity ARGUMENTS` on a pseudo-terminal `columns` wide; returns everything it wrote.
static char *run_on_terminal(const char *arguments, unsigned short columns) {
    char parity[4200], command[8192];
    parity_binary_path(parity, sizeof parity);
    snprintf(command, sizeof command, "exec env -u MODELING_BACKEND -u COLUMNS NO_COLOR=1 TERM=xterm '%s' %s", parity, arguments);
    struct winsize size = {.ws_row = 24, .ws_col = columns};
    int terminal;
    pid_t child = forkpty(&terminal, NULL, NULL, &size);
    cr_assert_geq(child, 0);
    if (child == 0) {
        execl("/bin/sh", "sh", "-c", command, (char *)NULL);
        _exit(127);
    }
    size_t capacity = 1 << 16, used = 0;
    char *text = malloc(capacity);
    cr_assert_not_null(text);
    for (;;) {
        if (capacity - used < 4096) text = realloc(text, capacity *= 2);
        ssize_t got = read(terminal, text + used, capacity - used - 1);
        if (got <= 0) break; // EIO once the child is gone
        used += (size_t)got;
    }
    text[used] = '\0';
    close(terminal);
    int status;
    waitpid(child, &status, 0);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "exit status %d:\n%s", status, text);
    return text;
}

Test(progress, on_a_terminal_no_progress_line_is_wider_than_it, .timeout = 300) {
    // A 60-character model name: every progress line would be over 160 columns uncut.
    const char *name = "qwen3_tiny_under_a_name_long_enough_to_make_the_line_wrap_60";
    scratch_suite s = scratch_suite_make((scratch_spec){.model_name = name, .goldens = true});
    static const unsigned short widths[] = {80, 160};
    for (size_t w = 0; w < ROWS(widths); w++) {
        char arguments[700];
        snprintf(arguments, sizeof arguments, "run --suite %s --golden-dir %s --out %s/out-%u", s.suite, s.goldens, s.folder,
                 widths[w]);
        char *text = run_on_terminal(arguments, widths[w]);
        size_t progress_lines = 0;
        // Every piece between a '\r' and the next '\r' or newline that begins "combo " is one progress line.
        for (char *piece = strstr(text, "\rcombo "); piece; piece = strstr(piece + 1, "\rcombo ")) {
            progress_lines++;
            char line[1024];
            size_t length = strcspn(piece + 1, "\r\n");
            snprintf(line, sizeof line, "%.*s", (int)length, piece + 1);
            char *erase = strstr(line, "\033[K");
            cr_expect_not_null(erase, "%u columns: the rest of the old line is erased: %s", widths[w], line);
            if (erase) *erase = '\0';
            cr_expect_leq(code_points(line), (size_t)widths[w] - 1, "%u columns: a %zu-wide progress line: %s", widths[w],
                          code_points(line), line);
        }
        cr_expect_geq(progress_lines, 4, "%u columns: a progress line per combo:\n%s", widths[w], text);
        cr_expect(strstr(text, "4 pass, 0 fail") != NULL, "%s", text);
        free(text);
    }
    scratch_suite_remove(&s);
}
