// text_buffer.h: a growing text buffer the report writers build a whole file in before writing it
// atomically, with the escapes each format needs (XML/HTML, Markdown table cells). An allocation
// failure is remembered and reported once, by parity_text_check, so writers stay linear.
#ifndef PARITY_REPORTS_TEXT_BUFFER_H
#define PARITY_REPORTS_TEXT_BUFFER_H

#include <stdbool.h>
#include <stddef.h>

#include "ops/core/error.h"

typedef struct parity_text {
    char *data;     // NUL-terminated once anything was appended
    size_t length, capacity;
    bool out_of_memory;
} parity_text;

void parity_text_append(parity_text *text, const char *string);
void parity_text_append_bytes(parity_text *text, const char *bytes, size_t length);
void parity_text_appendf(parity_text *text, const char *format, ...) __attribute__((format(printf, 2, 3)));
// XML/HTML text and attribute values: & < > " ' escaped, control characters other than tab and
// newline (not allowed in XML 1.0) replaced by '?'; newlines kept (text) or escaped (attributes).
void parity_text_append_xml(parity_text *text, const char *string);
void parity_text_append_xml_attribute(parity_text *text, const char *string);
// A GitHub-flavored Markdown table cell: | escaped, newlines flattened, < and & as entities.
void parity_text_append_markdown_cell(parity_text *text, const char *string);
// A Markdown code span in a table cell (combo ids): backticks become ', | is escaped.
void parity_text_append_markdown_code(parity_text *text, const char *string);
// MEMORY error when an append failed (naming `what`), else NULL. Does not free.
parity_error *parity_text_check(const parity_text *text, const char *what);
void parity_text_free(parity_text *text);

#endif
