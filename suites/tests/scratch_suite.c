// scratch_suite.c: temporary suites for command-line tests (scratch_suite.h).
#include "scratch_suite.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_runner.h"

scratch_suite scratch_suite_make(scratch_spec spec) {
    scratch_suite s;
    snprintf(s.folder, sizeof s.folder, "/tmp/parity-scratch-XXXXXX");
    cr_assert_not_null(mkdtemp(s.folder));
    snprintf(s.suite, sizeof s.suite, "%s/suite.yaml", s.folder);
    snprintf(s.goldens, sizeof s.goldens, "%s/golden", s.folder);
    snprintf(s.tmp, sizeof s.tmp, "%s/tmp", s.folder);
    cr_assert_eq(mkdir(s.tmp, 0700), 0);
    char root[1024], batches[1024] = "", text[4096];
    cr_assert_not_null(getcwd(root, sizeof root));
    int count = spec.batches > 0 ? spec.batches : 1;
    for (int b = 0; b < count; b++) {
        size_t used = strlen(batches);
        snprintf(batches + used, sizeof batches - used, "%s{name: %c, plain: {rows: 2, length: %d, seed: %d}}", b ? ", " : "",
                 'a' + b, spec.length > 0 ? spec.length : 16, b + 1);
    }
    snprintf(text, sizeof text,
             "suite: scratch\ndtypes: [fp32, bf16]\ndevices: [cpu]\nsweep: [ce]\nwarmup: 0\nrepeats: %d\n"
             "models:\n  - name: %s\n    checkpoint: %s/golden/upstream/qwen3_tiny\n    batches: [%s]\n",
             spec.repeats > 0 ? spec.repeats : 1, spec.model_name ? spec.model_name : "qwen3_tiny", root, batches);
    FILE *file = fopen(s.suite, "w");
    cr_assert_not_null(file, "%s", s.suite);
    fputs(text, file);
    fclose(file);
    if (spec.goldens) {
        char arguments[512];
        snprintf(arguments, sizeof arguments, "golden generate --suite %s --golden-dir %s", s.suite, s.goldens);
        command_result result = run_parity(arguments);
        cr_assert_eq(result.exit_code, 0, "%s", result.output);
        free(result.output);
    }
    return s;
}

void scratch_suite_remove(const scratch_suite *s) {
    char command[256];
    snprintf(command, sizeof command, "rm -rf '%s'", s->folder);
    cr_assert_eq(system(command), 0);
}

size_t scratch_leftover_temporaries(const char *folder, char *first, size_t size) {
    DIR *directory = opendir(folder);
    if (!directory) return 0;
    size_t count = 0;
    struct dirent *entry;
    while ((entry = readdir(directory))) {
        if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0) continue;
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", folder, entry->d_name);
        bool leftover = strstr(entry->d_name, ".tmp.") != NULL || strncmp(entry->d_name, "parity-chart-", 13) == 0;
        if (leftover && count++ == 0 && first) snprintf(first, size, "%s", path);
        struct stat info;
        if (!leftover && stat(path, &info) == 0 && S_ISDIR(info.st_mode))
            count += scratch_leftover_temporaries(path, count ? NULL : first, size);
    }
    closedir(directory);
    return count;
}

int scratch_entry_count(const char *folder) {
    DIR *directory = opendir(folder);
    if (!directory) return -1;
    int count = 0;
    struct dirent *entry;
    while ((entry = readdir(directory))) count += strcmp(entry->d_name, ".") != 0 && strcmp(entry->d_name, "..") != 0;
    closedir(directory);
    return count;
}
