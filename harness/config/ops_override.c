// ops_override.c: parses --ops "field=value,field=value" (see ops_override.h). Two passes: first
// every piece is checked so all malformed pieces are reported together, then the pieces are added.
#include "harness/config/ops_override.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// Trims spaces at both ends of [*start, *end).
static void trim(const char **start, const char **end) {
    while (*start < *end && isspace((unsigned char)**start)) (*start)++;
    while (*end > *start && isspace((unsigned char)(*end)[-1])) (*end)--;
}

// Why the piece [start, end) is malformed, or NULL when it is "key=value".
static const char *piece_problem(const char *start, const char *end) {
    trim(&start, &end);
    if (start == end) return "empty piece";
    const char *equals = memchr(start, '=', (size_t)(end - start));
    if (!equals) return "expected field=value";
    if (memchr(equals + 1, '=', (size_t)(end - equals - 1))) return "more than one '='";
    const char *key_end = equals, *value_start = equals + 1;
    const char *key_start = start, *value_end = end;
    trim(&key_start, &key_end);
    trim(&value_start, &value_end);
    if (key_start == key_end) return "missing field name before '='";
    if (value_start == value_end) return "missing value after '='";
    return NULL;
}

static char *copy_range(const char *start, const char *end) {
    trim(&start, &end);
    size_t length = (size_t)(end - start);
    char *copy = malloc(length + 1);
    if (copy) {
        memcpy(copy, start, length);
        copy[length] = '\0';
    }
    return copy;
}

static parity_error *add_piece(const char *start, const char *end, parity_ops_settings *settings) {
    const char *equals = memchr(start, '=', (size_t)(end - start));
    char *key = copy_range(start, equals);
    char *value = copy_range(equals + 1, end);
    parity_error *error = NULL;
    if (!key || !value) error = PARITY_ERROR(PARITY_ERROR_MEMORY, "copying an --ops piece");
    else {
        parity_ops_source source = {.kind = PARITY_OPS_FROM_COMMAND_LINE};
        error = parity_ops_settings_add(settings, key, value, &source);
    }
    free(key);
    free(value);
    return error;
}

parity_error *parity_ops_override_parse(const char *text, parity_ops_settings *settings) {
    if (!text) return PARITY_ERROR(PARITY_ERROR_USAGE, "--ops needs a value: field=value[,field=value...]");
    char problems[900] = "";
    size_t used = 0, bad = 0;
    for (const char *start = text;;) {
        const char *end = strchr(start, ',');
        if (!end) end = start + strlen(start);
        const char *problem = piece_problem(start, end);
        if (problem) {
            bad++;
            if (used < sizeof problems) {
                int written = snprintf(problems + used, sizeof problems - used, "%s'%.*s' (%s)", used ? ", " : "",
                                       (int)(end - start), start, problem);
                if (written > 0) used += (size_t)written;
            }
        }
        if (!*end) break;
        start = end + 1;
    }
    if (bad)
        return PARITY_ERROR(PARITY_ERROR_USAGE, "--ops \"%s\": %zu malformed piece%s: %s; expected field=value[,field=value...]",
                            text, bad, bad == 1 ? "" : "s", problems);
    size_t count_before = settings->count;
    for (const char *start = text;;) {
        const char *end = strchr(start, ',');
        if (!end) end = start + strlen(start);
        parity_error *error = add_piece(start, end, settings);
        if (error) {
            while (settings->count > count_before) { // leave the list as it was
                settings->count--;
                free(settings->items[settings->count].key);
                free(settings->items[settings->count].value);
            }
            return error;
        }
        if (!*end) break;
        start = end + 1;
    }
    return NULL;
}
