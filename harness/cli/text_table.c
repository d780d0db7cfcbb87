// text_table.c: the aligned text table behind text_table.h.
#include "harness/cli/text_table.h"

#include <stdlib.h>
#include <string.h>

#define COLOR_RESET "\033[0m"

struct parity_text_table {
    size_t column_count;
    char *headers[PARITY_TEXT_TABLE_MAX_COLUMNS];
    char **cells; // row-major, column_count per row
    size_t row_count, row_capacity;
    parity_text_table_color colors[PARITY_TEXT_TABLE_MAX_COLUMNS];
};

parity_text_table *parity_text_table_new(size_t column_count, const char *const *headers) {
    if (column_count == 0 || column_count > PARITY_TEXT_TABLE_MAX_COLUMNS) return NULL;
    parity_text_table *table = calloc(1, sizeof *table);
    if (!table) return NULL;
    table->column_count = column_count;
    for (size_t i = 0; i < column_count; i++) {
        table->headers[i] = strdup(headers[i] ? headers[i] : "");
        if (!table->headers[i]) {
            parity_text_table_free(table);
            return NULL;
        }
    }
    return table;
}

parity_error *parity_text_table_add_row(parity_text_table *table, const char *const *cells) {
    if (table->row_count == table->row_capacity) {
        size_t capacity = table->row_capacity ? table->row_capacity * 2 : 32;
        char **grown = realloc(table->cells, capacity * table->column_count * sizeof *grown);
        if (!grown) return PARITY_ERROR(PARITY_ERROR_MEMORY, "growing a text table to %zu rows", capacity);
        table->cells = grown;
        table->row_capacity = capacity;
    }
    char **row = table->cells + table->row_count * table->column_count;
    for (size_t i = 0; i < table->column_count; i++) {
        row[i] = strdup(cells[i] ? cells[i] : "-");
        if (!row[i]) {
            while (i > 0) free(row[--i]);
            return PARITY_ERROR(PARITY_ERROR_MEMORY, "copying a text table cell");
        }
    }
    table->row_count++;
    return NULL;
}

void parity_text_table_set_color(parity_text_table *table, size_t column, parity_text_table_color color) {
    if (column < table->column_count) table->colors[column] = color;
}

size_t parity_text_table_row_count(const parity_text_table *table) { return table->row_count; }

static void print_line(const parity_text_table *table, FILE *stream, char *const *cells, const size_t *widths,
                       bool use_color) {
    for (size_t i = 0; i < table->column_count; i++) {
        const char *color = use_color && table->colors[i] ? table->colors[i](cells[i]) : NULL;
        bool last = i + 1 == table->column_count;
        if (color && color[0]) fprintf(stream, "%s%s%s", color, cells[i], COLOR_RESET);
        else fputs(cells[i], stream);
        if (!last) fprintf(stream, "%*s", (int)(widths[i] - strlen(cells[i]) + 2), "");
    }
    fputc('\n', stream);
}

void parity_text_table_print(const parity_text_table *table, FILE *stream, bool use_color) {
    size_t widths[PARITY_TEXT_TABLE_MAX_COLUMNS];
    for (size_t i = 0; i < table->column_count; i++) {
        widths[i] = strlen(table->headers[i]);
        for (size_t row = 0; row < table->row_count; row++) {
            size_t length = strlen(table->cells[row * table->column_count + i]);
            if (length > widths[i]) widths[i] = length;
        }
    }
    print_line(table, stream, table->headers, widths, false);
    char *rules[PARITY_TEXT_TABLE_MAX_COLUMNS] = {0};
    for (size_t i = 0; i < table->column_count; i++) {
        rules[i] = malloc(widths[i] + 1);
        if (!rules[i]) break;
        memset(rules[i], '-', widths[i]);
        rules[i][widths[i]] = '\0';
    }
    bool have_rules = true;
    for (size_t i = 0; i < table->column_count; i++) have_rules = have_rules && rules[i];
    if (have_rules) print_line(table, stream, rules, widths, false);
    for (size_t i = 0; i < table->column_count; i++) free(rules[i]);
    for (size_t row = 0; row < table->row_count; row++)
        print_line(table, stream, table->cells + row * table->column_count, widths, use_color);
}

void parity_text_table_free(parity_text_table *table) {
    if (!table) return;
    for (size_t i = 0; i < table->row_count * table->column_count; i++) free(table->cells[i]);
    free(table->cells);
    for (size_t i = 0; i < table->column_count; i++) free(table->headers[i]);
    free(table);
}

const char *parity_text_table_status_color(const char *status) {
    if (strcmp(status, "available") == 0) return "\033[32m";
    if (strcmp(status, "rejected") == 0 || strncmp(status, "not supported", 13) == 0) return "\033[31m";
    return "\033[33m";
}
