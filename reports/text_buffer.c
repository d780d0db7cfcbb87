// text_buffer.c: the growing buffer and format escapes behind text_buffer.h.
#include "reports/text_buffer.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool reserve(parity_text *text, size_t extra) {
    if (text->out_of_memory) return false;
    size_t needed = text->length + extra + 1;
    if (needed <= text->capacity) return true;
    size_t capacity = text->capacity ? text->capacity : 4096;
    while (capacity < needed) capacity *= 2;
    char *data = realloc(text->data, capacity);
    if (!data) {
        text->out_of_memory = true;
        return false;
    }
    text->data = data;
    text->capacity = capacity;
    return true;
}

void parity_text_append_bytes(parity_text *text, const char *bytes, size_t length) {
    if (!reserve(text, length)) return;
    memcpy(text->data + text->length, bytes, length);
    text->length += length;
    text->data[text->length] = '\0';
}

void parity_text_append(parity_text *text, const char *string) { parity_text_append_bytes(text, string, strlen(string)); }

void parity_text_appendf(parity_text *text, const char *format, ...) {
    va_list args;
    va_start(args, format);
    int needed = vsnprintf(NULL, 0, format, args);
    va_end(args);
    if (needed < 0 || !reserve(text, (size_t)needed)) {
        text->out_of_memory = true;
        return;
    }
    va_start(args, format);
    vsnprintf(text->data + text->length, (size_t)needed + 1, format, args);
    va_end(args);
    text->length += (size_t)needed;
}

static void append_xml(parity_text *text, const char *string, bool attribute) {
    for (const char *c = string; *c; c++) {
        switch (*c) {
        case '&': parity_text_append(text, "&amp;"); break;
        case '<': parity_text_append(text, "&lt;"); break;
        case '>': parity_text_append(text, "&gt;"); break;
        case '"': parity_text_append(text, "&quot;"); break;
        case '\'': parity_text_append(text, "&#39;"); break;
        case '\n': parity_text_append(text, attribute ? "&#10;" : "\n"); break;
        case '\t': parity_text_append(text, attribute ? "&#9;" : "\t"); break;
        default:
            if ((unsigned char)*c < 0x20) parity_text_append(text, "?");
            else parity_text_append_bytes(text, c, 1);
        }
    }
}

void parity_text_append_xml(parity_text *text, const char *string) { append_xml(text, string, false); }
void parity_text_append_xml_attribute(parity_text *text, const char *string) { append_xml(text, string, true); }

static void append_markdown(parity_text *text, const char *string, bool code) {
    for (const char *c = string; *c; c++) {
        switch (*c) {
        case '|': parity_text_append(text, "\\|"); break;
        case '\n':
        case '\r':
        case '\t': parity_text_append(text, " "); break;
        case '`': parity_text_append(text, code ? "'" : "\\`"); break;
        case '<': parity_text_append(text, code ? "<" : "&lt;"); break;
        case '&': parity_text_append(text, code ? "&" : "&amp;"); break;
        default: parity_text_append_bytes(text, c, 1);
        }
    }
}

void parity_text_append_markdown_cell(parity_text *text, const char *string) { append_markdown(text, string, false); }

void parity_text_append_markdown_code(parity_text *text, const char *string) {
    parity_text_append(text, "`");
    append_markdown(text, string, true);
    parity_text_append(text, "`");
}

parity_error *parity_text_check(const parity_text *text, const char *what) {
    if (text->out_of_memory) return PARITY_ERROR(PARITY_ERROR_MEMORY, "out of memory building %s", what);
    return NULL;
}

void parity_text_free(parity_text *text) {
    free(text->data);
    *text = (parity_text){0};
}
