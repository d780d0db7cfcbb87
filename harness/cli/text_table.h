// text_table.h: plain aligned text tables for terminal output. Cells are copied; widths are
// computed from the plain text, so coloring (only on terminals) never breaks alignment. The last
// column is not padded, so lines carry no trailing spaces.
#ifndef PARITY_CLI_TEXT_TABLE_H
#define PARITY_CLI_TEXT_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "ops/core/error.h"

enum { PARITY_TEXT_TABLE_MAX_COLUMNS = 12 };

typedef struct parity_text_table parity_text_table;

// An ANSI color escape for a cell ("" or NULL for none).
typedef const char *(*parity_text_table_color)(const char *cell);

// A table with `column_count` columns named by `headers`; NULL when out of memory.
parity_text_table *parity_text_table_new(size_t column_count, const char *const *headers);
// Adds a row of column_count cells (NULL cells print as "-").
parity_error *parity_text_table_add_row(parity_text_table *table, const char *const *cells);
// Colors one column's cells through `color` when printing with color on.
void parity_text_table_set_color(parity_text_table *table, size_t column, parity_text_table_color color);
size_t parity_text_table_row_count(const parity_text_table *table);
// Header, a rule of dashes, then the rows.
void parity_text_table_print(const parity_text_table *table, FILE *stream, bool use_color);
void parity_text_table_free(parity_text_table *table);

// Color for status words: green "available", red "rejected"/"not supported ...", yellow otherwise.
const char *parity_text_table_status_color(const char *status);

#endif
