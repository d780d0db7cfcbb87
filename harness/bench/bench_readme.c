// bench_readme.c: the rendered part of a baseline README (bench_readme.h).
#include "harness/bench/bench_readme.h"

#include <stdlib.h>
#include <string.h>

// The one line holding exactly `marker` (its start), or NULL; *count says how many there are.
static const char *marker_line(const char *text, const char *marker, int *count) {
    const char *found = NULL;
    size_t length = strlen(marker);
    *count = 0;
    for (const char *at = strstr(text, marker); at; at = strstr(at + length, marker)) {
        bool line_start = at == text || at[-1] == '\n', line_end = at[length] == '\n' || at[length] == '\0';
        if (!line_start || !line_end) continue;
        if (!found) found = at;
        (*count)++;
    }
    return found;
}

parity_error *parity_bench_readme_splice(const char *readme, const char *rendered, const char *path, char **out) {
    *out = NULL;
    int begins, ends;
    const char *begin = marker_line(readme, PARITY_BENCH_README_BEGIN, &begins);
    const char *end = marker_line(readme, PARITY_BENCH_README_END, &ends);
    if (begins != 1 || ends != 1)
        return PARITY_ERROR(PARITY_ERROR_DATA, "%s: needs the line '%s' once and the line '%s' once after it (found %d and %d)",
                            path, PARITY_BENCH_README_BEGIN, PARITY_BENCH_README_END, begins, ends);
    if (end < begin)
        return PARITY_ERROR(PARITY_ERROR_DATA, "%s: the line '%s' comes before '%s'", path, PARITY_BENCH_README_END,
                            PARITY_BENCH_README_BEGIN);
    const char *body = begin + strlen(PARITY_BENCH_README_BEGIN) + 1; // past the begin line's newline
    size_t head = (size_t)(body - readme), middle = strlen(rendered), tail = strlen(end);
    bool newline = middle && rendered[middle - 1] != '\n';
    char *text = malloc(head + middle + newline + tail + 1);
    if (!text) return PARITY_ERROR(PARITY_ERROR_MEMORY, "%s: splicing the rendered part", path);
    memcpy(text, readme, head);
    memcpy(text + head, rendered, middle);
    if (newline) text[head + middle] = '\n';
    memcpy(text + head + middle + newline, end, tail + 1);
    *out = text;
    return NULL;
}
