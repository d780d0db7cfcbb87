// error.h: errors as values. Library code returns a parity_error* (NULL = success) that carries
// a category, the file:line where it arose, a message, and the context added by each caller on the
// way up ("loading layer 3: reading q_proj: ..."). Only the CLI turns an error into an exit code.
#ifndef PARITY_ERROR_H
#define PARITY_ERROR_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

// Categories map onto the CLI's documented exit codes (see README: exit codes).
typedef enum parity_error_kind {
    PARITY_ERROR_USAGE = 1,     // bad command line or API misuse          -> exit 2
    PARITY_ERROR_CONFIG,        // invalid kernel-selection config / suite  -> exit 2
    PARITY_ERROR_UNSUPPORTED,   // backend cannot do this case              -> "not supported"
    PARITY_ERROR_UNAVAILABLE,   // backend not usable here (no GPU, not built)
    PARITY_ERROR_SHAPE,         // tensor shapes / arguments do not match
    PARITY_ERROR_DATA,          // malformed input file (YAML, safetensors, HDF5, JSON) -> exit 3
    PARITY_ERROR_IO,            // file system failure                      -> exit 3
    PARITY_ERROR_NUMERIC,       // NaN / Inf where finite values are required
    PARITY_ERROR_MEMORY,        // allocation failure
    PARITY_ERROR_DEVICE,        // CUDA / cuBLAS / NCCL / MPI failure       -> exit 3
    PARITY_ERROR_INTERNAL,      // a bug in parity
} parity_error_kind;

typedef struct parity_error parity_error;

// Creates an error; prefer the PARITY_ERROR macro, which fills in file and line.
parity_error *parity_error_new(parity_error_kind kind, const char *file, int line, const char *format, ...)
    __attribute__((format(printf, 4, 5)));
parity_error *parity_error_newv(parity_error_kind kind, const char *file, int line, const char *format,
                                va_list args);
// Adds a line of context on top of `inner` (which it takes ownership of) and returns it.
parity_error *parity_error_wrap(parity_error *inner, const char *file, int line, const char *format, ...)
    __attribute__((format(printf, 4, 5)));

parity_error_kind parity_error_kind_of(const parity_error *error);
const char *parity_error_kind_name(parity_error_kind kind);
// The innermost message alone (without file:line or context).
const char *parity_error_message(const parity_error *error);
// Renders "context: context: message (file:line)" into `buffer`; returns buffer. Without source
// locations (parity_error_show_locations(false)): "context: context: message".
const char *parity_error_format(const parity_error *error, char *buffer, size_t size);
// Prints the full chain, one frame per line, each with its file:line (when locations are shown).
void parity_error_print(const parity_error *error, FILE *stream);
// Whether parity_error_format and parity_error_print add the file:line every error carries. On by
// default (tests and library users see where an error arose); the `parity` command turns it off
// unless --verbose, so a user reads what went wrong, not where in parity's source. A display
// setting of the process: set it once, before any thread formats an error.
void parity_error_show_locations(bool show);
void parity_error_free(parity_error *error);

#define PARITY_ERROR(kind, ...) parity_error_new((kind), __FILE__, __LINE__, __VA_ARGS__)

// Evaluates `expression` (a parity_error*); on failure returns it from the current function.
#define PARITY_TRY(expression)                                                                      \
    do {                                                                                            \
        parity_error *parity_try_error_ = (expression);                                             \
        if (parity_try_error_) return parity_try_error_;                                            \
    } while (0)

// Like PARITY_TRY, adding a line of context on the way out.
#define PARITY_TRY_CONTEXT(expression, ...)                                                         \
    do {                                                                                            \
        parity_error *parity_try_error_ = (expression);                                             \
        if (parity_try_error_) return parity_error_wrap(parity_try_error_, __FILE__, __LINE__, __VA_ARGS__); \
    } while (0)

// Returns a shape/argument error naming the op when `condition` is false.
#define PARITY_CHECK(condition, kind, ...)                                                          \
    do {                                                                                            \
        if (!(condition)) return PARITY_ERROR((kind), __VA_ARGS__);                                 \
    } while (0)

#ifdef __cplusplus
}
#endif
#endif
