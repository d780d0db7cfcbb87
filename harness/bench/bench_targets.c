// bench_targets.c: reading harness/bench/targets.tsv (bench_targets.h).
#include "harness/bench/bench_targets.h"

#include <errno.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/bench/bench_ops.h"
#include "ops/core/file.h"

enum { COLUMNS = 9 };
static const char *const header[COLUMNS] = {"op",           "pass",         "shape",         "backend", "peer",
                                            "min_speedup", "min_gb_per_s", "max_extra_gib", "what"};

// Splits `line` at tabs in place; the number of fields (at most COLUMNS + 1: one more means too many).
static int split_fields(char *line, char **fields) {
    int count = 0;
    for (char *cursor = line;;) {
        if (count == COLUMNS + 1) return count;
        fields[count++] = cursor;
        char *tab = strchr(cursor, '\t');
        if (!tab) return count;
        *tab = '\0';
        cursor = tab + 1;
    }
}

// "-" -> 0 (none); else a finite positive number.
static parity_error *parse_number(const char *text, const char *column, const char *path, int line, double *out) {
    *out = 0;
    if (strcmp(text, "-") == 0) return NULL;
    char *end = NULL;
    errno = 0;
    double value = strtod(text, &end);
    if (!text[0] || *end || errno || !isfinite(value) || value <= 0)
        return PARITY_ERROR(PARITY_ERROR_DATA, "%s:%d: %s '%s' is not a positive number or '-'", path, line, column, text);
    *out = value;
    return NULL;
}

static parity_error *copy_field(char *out, size_t size, const char *text, const char *column, const char *path, int line) {
    if (!text[0]) return PARITY_ERROR(PARITY_ERROR_DATA, "%s:%d: %s is empty", path, line, column);
    if (strlen(text) >= size) return PARITY_ERROR(PARITY_ERROR_DATA, "%s:%d: %s is longer than %zu characters", path, line, column, size - 1);
    memcpy(out, text, strlen(text) + 1);
    return NULL;
}

static parity_error *parse_target(char **fields, const char *path, int line, parity_bench_target *target) {
    memset(target, 0, sizeof *target);
    const parity_bench_op *op = parity_bench_find_op(fields[0]);
    if (!op) return PARITY_ERROR(PARITY_ERROR_DATA, "%s:%d: op '%s' is not an op parity bench knows", path, line, fields[0]);
    PARITY_TRY(copy_field(target->op, sizeof target->op, fields[0], "op", path, line));
    bool part = op->part && strcmp(fields[1], op->part->name) == 0; // a part's rows: its name is their pass
    if (strcmp(fields[1], "fwd") != 0 && strcmp(fields[1], "fwd+bwd") != 0 && !part)
        return PARITY_ERROR(PARITY_ERROR_DATA, "%s:%d: pass '%s' is neither fwd nor fwd+bwd%s%s%s", path, line, fields[1],
                            op->part ? " nor '" : "", op->part ? op->part->name : "", op->part ? "'" : "");
    PARITY_TRY(copy_field(target->pass, sizeof target->pass, fields[1], "pass", path, line));
    parity_bench_shape shape;
    parity_error *error = parity_bench_parse_shape(op, fields[2], &shape);
    if (error) {
        parity_error *data = PARITY_ERROR(PARITY_ERROR_DATA, "%s:%d: shape: %s", path, line, parity_error_message(error));
        parity_error_free(error);
        return data;
    }
    PARITY_TRY(copy_field(target->shape, sizeof target->shape, fields[2], "shape", path, line));
    PARITY_TRY(copy_field(target->backend, sizeof target->backend, fields[3], "backend", path, line));
    if (strcmp(target->backend, "best") == 0) target->backend[0] = '\0';
    bool peer_target = strcmp(fields[4], "-") != 0;
    if (peer_target) PARITY_TRY(copy_field(target->peer, sizeof target->peer, fields[4], "peer", path, line));
    PARITY_TRY(parse_number(fields[5], header[5], path, line, &target->minimum_speedup));
    PARITY_TRY(parse_number(fields[6], header[6], path, line, &target->minimum_gigabytes_per_second));
    PARITY_TRY(parse_number(fields[7], header[7], path, line, &target->maximum_extra_gib));
    if (peer_target == (target->minimum_gigabytes_per_second > 0))
        return PARITY_ERROR(PARITY_ERROR_DATA,
                            "%s:%d: a target sets either min_gb_per_s (a bandwidth target) or peer (a torch peer "
                            "target), '-' for the other",
                            path, line);
    if (!peer_target && (target->minimum_speedup > 0 || target->maximum_extra_gib > 0))
        return PARITY_ERROR(PARITY_ERROR_DATA, "%s:%d: min_speedup and max_extra_gib judge a torch peer: '-' without a peer",
                            path, line);
    if (peer_target && !(target->minimum_speedup > 0)) target->minimum_speedup = 1;
    return copy_field(target->what, sizeof target->what, fields[8], "what", path, line);
}

parity_error *parity_bench_targets_parse(const char *text, const char *path, parity_bench_targets *out) {
    memset(out, 0, sizeof *out);
    snprintf(out->path, sizeof out->path, "%s", path);
    char *copy = strdup(text);
    if (!copy) return PARITY_ERROR(PARITY_ERROR_MEMORY, "%s: reading the targets", path);
    parity_error *error = NULL;
    bool seen_header = false;
    size_t capacity = 0;
    int line = 0;
    for (char *cursor = copy, *next; cursor && !error; cursor = next) {
        line++;
        char *newline = strchr(cursor, '\n');
        next = newline ? newline + 1 : NULL;
        if (newline) *newline = '\0';
        size_t length = strlen(cursor);
        if (length && cursor[length - 1] == '\r') cursor[--length] = '\0';
        if (!next && !length) break; // the end of the last line
        if (!length || cursor[0] == '#') continue;
        char *fields[COLUMNS + 1];
        int count = split_fields(cursor, fields);
        if (count != COLUMNS) {
            error = PARITY_ERROR(PARITY_ERROR_DATA, "%s:%d: %s%d tab-separated fields, expected %d", path, line,
                                 count > COLUMNS ? "more than " : "", count > COLUMNS ? COLUMNS : count, COLUMNS);
            break;
        }
        if (!seen_header) {
            for (int c = 0; c < COLUMNS && !error; c++)
                if (strcmp(fields[c], header[c]) != 0)
                    error = PARITY_ERROR(PARITY_ERROR_DATA, "%s:%d: header column %d is '%s', expected '%s' (the header is: "
                                                            "op pass shape backend peer min_speedup min_gb_per_s "
                                                            "max_extra_gib what)",
                                         path, line, c + 1, fields[c], header[c]);
            seen_header = true;
            continue;
        }
        if (out->count == capacity) {
            capacity = capacity ? 2 * capacity : 8;
            parity_bench_target *grown = realloc(out->items, capacity * sizeof *grown);
            if (!grown) {
                error = PARITY_ERROR(PARITY_ERROR_MEMORY, "%s: %zu targets", path, capacity);
                break;
            }
            out->items = grown;
        }
        error = parse_target(fields, path, line, &out->items[out->count]);
        if (!error) out->count++;
    }
    free(copy);
    if (!error && !out->count) error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: no targets (a header and one target a line)", path);
    if (error) parity_bench_targets_release(out);
    return error;
}

parity_error *parity_bench_targets_read(const char *path, parity_bench_targets *out) {
    memset(out, 0, sizeof *out);
    char *text;
    size_t size;
    PARITY_TRY(parity_read_file(path, &text, &size));
    parity_error *error = parity_bench_targets_parse(text, path, out);
    free(text);
    return error;
}

parity_error *parity_bench_targets_locate(char *path, size_t size) {
    snprintf(path, size, "%s", PARITY_BENCH_TARGETS_REPOSITORY_PATH);
    if (access(path, R_OK) == 0) return NULL;
    char self[4096] = "";
    ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
    if (length > 0) {
        self[length] = '\0';
        snprintf(path, size, "%s/%s", dirname(self), PARITY_BENCH_TARGETS_BUILD_NAME);
        if (access(path, R_OK) == 0) return NULL;
    }
    return PARITY_ERROR(PARITY_ERROR_IO,
                        "parity bench: no targets file: neither ./%s (run from the repository root) nor %s (beside the "
                        "parity executable; make copies it there) is readable",
                        PARITY_BENCH_TARGETS_REPOSITORY_PATH, length > 0 ? path : PARITY_BENCH_TARGETS_BUILD_NAME);
}

void parity_bench_targets_release(parity_bench_targets *targets) {
    free(targets->items);
    memset(targets, 0, sizeof *targets);
}
