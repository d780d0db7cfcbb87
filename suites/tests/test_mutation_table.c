// test_mutation_table.c: tools/mutations.json, the table of deliberate bugs tools/mutation_check
// proves the tests catch, still applies to the tree: every row's text occurs exactly once in its
// file (`mutation_check --check`, no build), so editing the code a row mutates fails here instead of
// leaving a row that silently tests nothing. And the check itself can fail: a table with a stale
// row, an unknown detector or a broken file is refused with exit 2 naming the row.
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct tool_result {
    int exit_code;
    char output[8192];
} tool_result;

static tool_result run_tool(const char *arguments) {
    tool_result result = {0};
    char command[1024];
    snprintf(command, sizeof command, "python3 tools/mutation_check %s 2>&1", arguments);
    FILE *pipe = popen(command, "r");
    cr_assert_not_null(pipe, "popen %s", command);
    size_t length = fread(result.output, 1, sizeof result.output - 1, pipe);
    result.output[length] = '\0';
    int status = pclose(pipe);
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return result;
}

Test(mutation_table, every_row_still_applies_to_the_tree) {
    tool_result result = run_tool("--check");
    cr_expect_eq(result.exit_code, 0, "mutation_check --check: exit %d:\n%s", result.exit_code, result.output);
    cr_expect(strstr(result.output, "every row applies"), "%s", result.output);
}

typedef struct bad_table {
    const char *what;
    const char *json;
    const char *message; // part of the refusal
} bad_table;

static const bad_table bad_tables[] = {
    {"a row whose text is not in its file",
     "{\"detectors\": {\"d\": {\"command\": \"true\"}}, \"mutations\": [{\"name\": \"gone\", \"why\": \"w\", "
     "\"file\": \"ops/rms_norm/eager.c\", \"find\": \"this text is not in the file\", \"replace\": \"\", "
     "\"run\": [\"d\"], \"required\": [\"d\"]}]}",
     "stale row gone: its text occurs 0 times in ops/rms_norm/eager.c"},
    {"a row naming a detector the table lacks",
     "{\"detectors\": {\"d\": {\"command\": \"true\"}}, \"mutations\": [{\"name\": \"m\", \"why\": \"w\", "
     "\"file\": \"Makefile\", \"find\": \"x\", \"replace\": \"\", \"run\": [\"d\"], \"required\": [\"nope\"]}]}",
     "unknown detector 'nope' in 'required'"},
    {"a file that is not JSON", "{\"detectors\": ", "Expecting value"},
    {"a file without mutations", "{\"detectors\": {\"d\": {\"command\": \"true\"}}, \"mutations\": []}",
     "'mutations' must be a non-empty list"},
};

Test(mutation_table, a_stale_or_broken_table_is_refused_naming_the_row) {
    char directory[] = "/tmp/parity-mutation-table-XXXXXX";
    cr_assert_not_null(mkdtemp(directory));
    for (size_t i = 0; i < sizeof bad_tables / sizeof bad_tables[0]; i++) {
        char path[600], arguments[700];
        snprintf(path, sizeof path, "%s/table-%zu.json", directory, i);
        FILE *file = fopen(path, "w");
        cr_assert_not_null(file, "%s", path);
        fputs(bad_tables[i].json, file);
        fclose(file);
        snprintf(arguments, sizeof arguments, "--check --table '%s'", path);
        tool_result result = run_tool(arguments);
        cr_expect_eq(result.exit_code, 2, "%s: exit %d:\n%s", bad_tables[i].what, result.exit_code, result.output);
        cr_expect(strstr(result.output, bad_tables[i].message), "%s: expected '%s' in:\n%s", bad_tables[i].what,
                  bad_tables[i].message, result.output);
        unlink(path);
    }
    rmdir(directory);
}
