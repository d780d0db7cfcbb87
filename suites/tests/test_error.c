// test_error.c: errors are values that travel up through every layer collecting context, and the
// CLI prints them for people reading CI logs. These tests pin down what those people see: the
// innermost message and kind, the file:line where the error arose, and each context frame, in
// order, with its own file:line; and that PARITY_TRY / PARITY_TRY_CONTEXT / PARITY_CHECK pass errors
// and successes through as documented.
#include <criterion/criterion.h>
#include <stdio.h> // open_memstream (POSIX 2008; the build defines _GNU_SOURCE)
#include <stdlib.h>
#include <string.h>

#include "ops/core/error.h"

// Reads what parity_error_print writes.
static char *print_to_string(const parity_error *error) {
    char *text = NULL;
    size_t size = 0;
    FILE *stream = open_memstream(&text, &size);
    cr_assert_not_null(stream, "open_memstream failed");
    parity_error_print(error, stream);
    fclose(stream);
    return text;
}

Test(error, kind_names) {
    static const struct {
        parity_error_kind kind;
        const char *name;
    } rows[] = {
        {PARITY_ERROR_USAGE, "usage error"},       {PARITY_ERROR_CONFIG, "config error"},
        {PARITY_ERROR_UNSUPPORTED, "not supported"}, {PARITY_ERROR_UNAVAILABLE, "not available"},
        {PARITY_ERROR_SHAPE, "shape error"},       {PARITY_ERROR_DATA, "data error"},
        {PARITY_ERROR_IO, "I/O error"},            {PARITY_ERROR_NUMERIC, "numeric error"},
        {PARITY_ERROR_MEMORY, "out of memory"},    {PARITY_ERROR_DEVICE, "device error"},
        {PARITY_ERROR_INTERNAL, "internal error"}, {(parity_error_kind)0, "error"},
        {(parity_error_kind)999, "error"},
    };
    for (size_t row = 0; row < sizeof rows / sizeof rows[0]; row++)
        cr_expect_str_eq(parity_error_kind_name(rows[row].kind), rows[row].name, "kind %d", (int)rows[row].kind);
}

Test(error, new_error_carries_kind_message_and_location) {
    static const struct {
        parity_error_kind kind;
        const char *format_arg; // formatted through "%s in %d", value 42
    } rows[] = {
        {PARITY_ERROR_SHAPE, "mismatch"},
        {PARITY_ERROR_DATA, "bad header"},
        {PARITY_ERROR_DEVICE, "cudaMalloc failed"},
    };
    for (size_t row = 0; row < sizeof rows / sizeof rows[0]; row++) {
        int line = __LINE__ + 1;
        parity_error *error = PARITY_ERROR(rows[row].kind, "%s in %d", rows[row].format_arg, 42);
        cr_assert_not_null(error);
        char expected_message[128], expected_format[256], buffer[512];
        snprintf(expected_message, sizeof expected_message, "%s in 42", rows[row].format_arg);
        snprintf(expected_format, sizeof expected_format, "%s (%s:%d)", expected_message, __FILE__, line);
        cr_expect_eq(parity_error_kind_of(error), rows[row].kind);
        cr_expect_str_eq(parity_error_message(error), expected_message);
        cr_expect_str_eq(parity_error_format(error, buffer, sizeof buffer), expected_format);
        char *printed = print_to_string(error);
        char expected_print[512];
        snprintf(expected_print, sizeof expected_print, "error: %s: %s\n  at %s:%d\n",
                 parity_error_kind_name(rows[row].kind), expected_message, __FILE__, line);
        cr_expect_str_eq(printed, expected_print);
        free(printed);
        parity_error_free(error);
    }
}

// ---- chains built through the macros, as library code builds them ------------------------------

static int root_line, middle_line, outer_line; // where each frame was created
static int after_middle_try;                    // counts passes past a PARITY_TRY_CONTEXT that succeeded

static parity_error *read_tensor(bool fail) {
    root_line = __LINE__ + 1;
    if (fail) return PARITY_ERROR(PARITY_ERROR_DATA, "tensor %s missing", "q_proj.weight");
    return NULL;
}

static parity_error *load_layer(int layer, bool fail) {
    middle_line = __LINE__ + 1;
    PARITY_TRY_CONTEXT(read_tensor(fail), "loading layer %d", layer);
    after_middle_try++;
    return NULL;
}

static parity_error *build_model(const char *name, bool fail) {
    outer_line = __LINE__ + 1;
    PARITY_TRY_CONTEXT(load_layer(3, fail), "building model %s", name);
    return NULL;
}

Test(error, context_chain_formats_outermost_first_with_root_location) {
    after_middle_try = 0;
    parity_error *error = build_model("qwen3", true);
    cr_assert_not_null(error);
    cr_expect_eq(after_middle_try, 0, "PARITY_TRY_CONTEXT did not return on failure");
    cr_expect_eq(parity_error_kind_of(error), PARITY_ERROR_DATA, "the chain keeps the root's kind");
    cr_expect_str_eq(parity_error_message(error), "tensor q_proj.weight missing");

    char buffer[512], expected[512];
    snprintf(expected, sizeof expected, "building model qwen3: loading layer 3: tensor q_proj.weight missing (%s:%d)",
             __FILE__, root_line);
    cr_expect_str_eq(parity_error_format(error, buffer, sizeof buffer), expected);

    // print: kind and root message, the root's file:line, then every context frame with its own
    // file:line, in the same order as format() (outermost first).
    char *printed = print_to_string(error);
    snprintf(expected, sizeof expected,
             "error: data error: tensor q_proj.weight missing\n"
             "  at %s:%d\n"
             "  while building model qwen3 (%s:%d)\n"
             "  while loading layer 3 (%s:%d)\n",
             __FILE__, root_line, __FILE__, outer_line, __FILE__, middle_line);
    cr_expect_str_eq(printed, expected);
    free(printed);
    parity_error_free(error);
}

Test(error, try_context_passes_success_through) {
    after_middle_try = 0;
    parity_error *error = build_model("qwen3", false);
    cr_expect_null(error);
    cr_expect_eq(after_middle_try, 1, "code after a successful PARITY_TRY_CONTEXT did not run");
}

// PARITY_TRY returns the very same error object (no wrapping); PARITY_CHECK creates one of its kind.
static parity_error *plain_try(parity_error *inner, int *reached) {
    PARITY_TRY(inner);
    (*reached)++;
    return NULL;
}

static parity_error *checked(int value) {
    PARITY_CHECK(value >= 0, PARITY_ERROR_SHAPE, "value %d is negative", value);
    return NULL;
}

Test(error, try_and_check_macros) {
    int reached = 0;
    parity_error *inner = PARITY_ERROR(PARITY_ERROR_IO, "disk gone");
    cr_expect_eq(plain_try(inner, &reached), inner, "PARITY_TRY must return the inner error unchanged");
    cr_expect_eq(reached, 0);
    cr_expect_null(plain_try(NULL, &reached));
    cr_expect_eq(reached, 1);
    parity_error_free(inner);

    static const struct {
        int value;
        bool fails;
        const char *message;
    } rows[] = {{1, false, NULL}, {0, false, NULL}, {-5, true, "value -5 is negative"}};
    for (size_t row = 0; row < sizeof rows / sizeof rows[0]; row++) {
        parity_error *error = checked(rows[row].value);
        cr_expect_eq(error != NULL, rows[row].fails, "PARITY_CHECK with %d", rows[row].value);
        if (error) {
            cr_expect_eq(parity_error_kind_of(error), PARITY_ERROR_SHAPE);
            cr_expect_str_eq(parity_error_message(error), rows[row].message);
        }
        parity_error_free(error);
    }
}

// Chains of any depth: format lists contexts outermost first, then the root message and location.
Test(error, chains_of_every_depth) {
    static const struct {
        int depth;
        const char *contexts[4]; // innermost first, as they are added
        const char *expected_prefix;
    } rows[] = {
        {0, {NULL}, "root"},
        {1, {"a"}, "a: root"},
        {2, {"a", "b"}, "b: a: root"},
        {4, {"a", "b", "c", "d"}, "d: c: b: a: root"},
        {2, {"", "b"}, "b: root"}, // an empty context frame is skipped
    };
    for (size_t row = 0; row < sizeof rows / sizeof rows[0]; row++) {
        int line = __LINE__ + 1;
        parity_error *error = PARITY_ERROR(PARITY_ERROR_CONFIG, "root");
        for (int level = 0; level < rows[row].depth; level++)
            error = parity_error_wrap(error, "outer.c", 100 + level, "%s", rows[row].contexts[level]);
        char buffer[256], expected[256];
        snprintf(expected, sizeof expected, "%s (%s:%d)", rows[row].expected_prefix, __FILE__, line);
        cr_expect_str_eq(parity_error_format(error, buffer, sizeof buffer), expected, "depth %d", rows[row].depth);
        cr_expect_eq(parity_error_kind_of(error), PARITY_ERROR_CONFIG);
        cr_expect_str_eq(parity_error_message(error), "root");
        parity_error_free(error);
    }
}

Test(error, null_and_bounds) {
    cr_expect_null(parity_error_wrap(NULL, __FILE__, __LINE__, "context"), "wrapping success is success");
    cr_expect_eq(parity_error_kind_of(NULL), 0);
    cr_expect_str_eq(parity_error_message(NULL), "");
    parity_error_free(NULL);
    parity_error_print(NULL, stderr); // prints nothing, must not crash

    // A message longer than the bound is truncated, still NUL-terminated.
    char long_text[4000];
    memset(long_text, 'x', sizeof long_text - 1);
    long_text[sizeof long_text - 1] = '\0';
    parity_error *error = parity_error_wrap(PARITY_ERROR(PARITY_ERROR_INTERNAL, "%s", long_text), "f.c", 1, "ctx");
    size_t length = strlen(parity_error_message(error));
    cr_expect(length > 100 && length < sizeof long_text - 1, "message length %zu", length);

    // Formatting into buffers of every small size never writes past them and always terminates.
    static const size_t sizes[] = {1, 2, 3, 5, 8, 16, 64};
    for (size_t row = 0; row < sizeof sizes / sizeof sizes[0]; row++) {
        char buffer[80];
        memset(buffer, '#', sizeof buffer);
        parity_error_format(error, buffer, sizes[row]);
        cr_expect_lt(strlen(buffer), sizes[row], "size %zu: unterminated", sizes[row]);
        cr_expect_eq(buffer[sizes[row]], '#', "size %zu: wrote past the buffer", sizes[row]);
    }
    char untouched[4] = "abc";
    cr_expect_eq(parity_error_format(error, untouched, 0), untouched);
    cr_expect_str_eq(untouched, "abc", "size 0 must not write");
    parity_error_free(error);
}
