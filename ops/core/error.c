// error.c: the error chain behind error.h. Each frame is one heap node; messages are bounded so
// that formatting an error can never itself fail in an interesting way.
#include "ops/core/error.h"

#include <stdlib.h>
#include <string.h>

enum { PARITY_ERROR_MESSAGE_MAX = 1024 };

struct parity_error {
    parity_error_kind kind;
    const char *file;
    int line;
    char message[PARITY_ERROR_MESSAGE_MAX];
    parity_error *inner; // the error this frame adds context to (NULL for the innermost)
};

// Returned when allocating an error fails; never freed.
static parity_error out_of_memory_error = {PARITY_ERROR_MEMORY, __FILE__, __LINE__,
                                           "out of host memory while reporting an error", NULL};

parity_error *parity_error_newv(parity_error_kind kind, const char *file, int line, const char *format,
                                va_list args) {
    parity_error *error = calloc(1, sizeof *error);
    if (!error) return &out_of_memory_error;
    error->kind = kind;
    error->file = file;
    error->line = line;
    if (format) vsnprintf(error->message, sizeof error->message, format, args);
    return error;
}

parity_error *parity_error_new(parity_error_kind kind, const char *file, int line, const char *format, ...) {
    va_list args;
    va_start(args, format);
    parity_error *error = parity_error_newv(kind, file, line, format, args);
    va_end(args);
    return error;
}

parity_error *parity_error_wrap(parity_error *inner, const char *file, int line, const char *format, ...) {
    if (!inner) return NULL;
    if (inner == &out_of_memory_error) return inner;
    va_list args;
    va_start(args, format);
    parity_error *outer = parity_error_newv(inner->kind, file, line, format, args);
    va_end(args);
    if (outer == &out_of_memory_error) return inner;
    outer->inner = inner;
    return outer;
}

static bool show_locations = true;

void parity_error_show_locations(bool show) { show_locations = show; }

static const parity_error *innermost(const parity_error *error) {
    while (error && error->inner) error = error->inner;
    return error;
}

parity_error_kind parity_error_kind_of(const parity_error *error) {
    return error ? innermost(error)->kind : 0;
}

const char *parity_error_kind_name(parity_error_kind kind) {
    switch (kind) {
    case PARITY_ERROR_USAGE: return "usage error";
    case PARITY_ERROR_CONFIG: return "config error";
    case PARITY_ERROR_UNSUPPORTED: return "not supported";
    case PARITY_ERROR_UNAVAILABLE: return "not available";
    case PARITY_ERROR_SHAPE: return "shape error";
    case PARITY_ERROR_DATA: return "data error";
    case PARITY_ERROR_IO: return "I/O error";
    case PARITY_ERROR_NUMERIC: return "numeric error";
    case PARITY_ERROR_MEMORY: return "out of memory";
    case PARITY_ERROR_DEVICE: return "device error";
    case PARITY_ERROR_INTERNAL: return "internal error";
    }
    return "error";
}

const char *parity_error_message(const parity_error *error) {
    return error ? innermost(error)->message : "";
}

const char *parity_error_format(const parity_error *error, char *buffer, size_t size) {
    if (!buffer || size == 0) return buffer;
    buffer[0] = '\0';
    size_t used = 0;
    for (const parity_error *frame = error; frame; frame = frame->inner) {
        if (!frame->message[0] && frame->inner) continue;
        int written = snprintf(buffer + used, size - used, "%s%s", frame->message, frame->inner ? ": " : "");
        if (written < 0 || (size_t)written >= size - used) return buffer;
        used += (size_t)written;
    }
    const parity_error *root = innermost(error);
    if (root && show_locations) snprintf(buffer + used, size - used, " (%s:%d)", root->file, root->line);
    return buffer;
}

void parity_error_print(const parity_error *error, FILE *stream) {
    if (!error) return;
    const parity_error *root = innermost(error);
    fprintf(stream, "error: %s: %s\n", parity_error_kind_name(root->kind), root->message);
    if (show_locations) fprintf(stream, "  at %s:%d\n", root->file, root->line);
    for (const parity_error *frame = error; frame && frame != root; frame = frame->inner) {
        if (!frame->message[0]) continue;
        if (show_locations) fprintf(stream, "  while %s (%s:%d)\n", frame->message, frame->file, frame->line);
        else fprintf(stream, "  while %s\n", frame->message);
    }
}

void parity_error_free(parity_error *error) {
    while (error && error != &out_of_memory_error) {
        parity_error *inner = error->inner;
        free(error);
        error = inner;
    }
}
