// html_grid.c: the model x field/value grid of html_grid.h.
#include "reports/html_grid.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reports/html_style.h"
#include "reports/report_analysis.h"

typedef struct grid_row {
    const char *field, *value;
} grid_row;

static const char *pseudo_value(const parity_combo_result *combo, const char *field) {
    if (strcmp(field, "batch") == 0) return combo->batch;
    if (strcmp(field, "dtype") == 0) return combo->dtype;
    return combo->device;
}

static bool is_pseudo(const char *field) { return strcmp(field, "batch") == 0 || strcmp(field, "dtype") == 0 || strcmp(field, "device") == 0; }

// The combo's value of `field`, or NULL when it has no such field.
static const char *value_of(const parity_combo_result *combo, const char *field, bool pseudo) {
    if (pseudo) return pseudo_value(combo, field);
    for (size_t f = 0; f < combo->field_count && f < PARITY_COMBO_MAX_FIELDS; f++)
        if (strcmp(combo->fields[f].field, field) == 0) return combo->fields[f].value;
    return NULL;
}

static size_t find_row(const grid_row *rows, size_t count, const char *field, const char *value) {
    for (size_t r = 0; r < count; r++)
        if (strcmp(rows[r].field, field) == 0 && strcmp(rows[r].value, value) == 0) return r;
    return count;
}

static size_t find_name(const char *const *names, size_t count, const char *name) {
    for (size_t i = 0; i < count; i++)
        if (strcmp(names[i], name) == 0) return i;
    return count;
}

static void add_row(grid_row *rows, size_t *count, const char *field, const char *value) {
    if (find_row(rows, *count, field, value) == *count) rows[(*count)++] = (grid_row){field, value};
}

// A field's name without the "_implementation" every kernel-selection field ends with.
static void append_field_name(parity_text *html, const char *field) {
    static const char suffix[] = "_implementation";
    size_t length = strlen(field), cut = length > sizeof suffix - 1 && strcmp(field + length - (sizeof suffix - 1), suffix) == 0;
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)(cut ? length - (sizeof suffix - 1) : length), field);
    parity_text_append_xml(html, name);
}

static const char *const status_labels[PARITY_COMBO_STATUS_COUNT] = {"pass", "fail", "not supported", "error", "excluded"};

static void append_cell(parity_text *html, const size_t counts[PARITY_COMBO_STATUS_COUNT]) {
    size_t total = 0;
    for (int s = 0; s < PARITY_COMBO_STATUS_COUNT; s++) total += counts[s];
    if (!total) {
        parity_text_append(html, "<td class=\"cell\"></td>");
        return;
    }
    const char *tint = counts[PARITY_COMBO_FAIL] || counts[PARITY_COMBO_ERROR] ? "g-fail" : counts[PARITY_COMBO_PASS] ? "g-pass" : "g-none";
    parity_text_appendf(html, "<td class=\"cell %s\" title=\"", tint);
    bool first = true;
    for (int s = 0; s < PARITY_COMBO_STATUS_COUNT; s++) {
        if (!counts[s]) continue;
        parity_text_appendf(html, "%s%zu %s", first ? "" : ", ", counts[s], status_labels[s]);
        first = false;
    }
    parity_text_append(html, "\">");
    for (int s = 0; s < PARITY_COMBO_STATUS_COUNT; s++)
        if (counts[s]) parity_text_appendf(html, "<b class=\"c-%s\">%zu</b>", parity_html_status_class((parity_combo_status)s), counts[s]);
    parity_text_append(html, "</td>");
}

void parity_html_append_grid(parity_text *html, const parity_results *results) {
    size_t n = results->combo_count;
    if (!n) return;
    size_t row_capacity = n * (PARITY_COMBO_MAX_FIELDS + 3);
    grid_row *rows = malloc(row_capacity * sizeof *rows);
    const char **models = malloc(n * sizeof *models);
    size_t *model_of = malloc(n * sizeof *model_of);
    if (!rows || !models || !model_of) {
        free(rows), free(models), free(model_of);
        parity_text_append(html, "<p class=\"note problem\">out of memory drawing the grid</p>\n");
        return;
    }
    size_t row_count = 0, model_count = 0;
    for (size_t i = 0; i < n; i++) {
        const parity_combo_result *combo = &results->combos[i];
        size_t m = find_name(models, model_count, combo->model);
        if (m == model_count) models[model_count++] = combo->model;
        model_of[i] = m;
        for (size_t f = 0; f < combo->field_count && f < PARITY_COMBO_MAX_FIELDS; f++)
            if (!is_pseudo(combo->fields[f].field)) add_row(rows, &row_count, combo->fields[f].field, combo->fields[f].value);
    }
    // batch, dtype and device rows when the run has more than one value of them
    static const char *const pseudo[] = {"batch", "dtype", "device"};
    for (size_t p = 0; p < 3; p++) {
        size_t before = row_count;
        for (size_t i = 0; i < n; i++) add_row(rows, &row_count, pseudo[p], pseudo_value(&results->combos[i], pseudo[p]));
        if (row_count - before < 2) row_count = before;
    }
    // rows of one field together, in order of the field's first appearance
    grid_row *ordered = malloc((row_count + 1) * sizeof *ordered);
    size_t (*cells)[PARITY_COMBO_STATUS_COUNT] = calloc(row_count * model_count + 1, sizeof *cells);
    if (!ordered || !cells) {
        free(rows), free(models), free(model_of), free(ordered), free(cells);
        parity_text_append(html, "<p class=\"note problem\">out of memory drawing the grid</p>\n");
        return;
    }
    size_t placed = 0;
    for (size_t r = 0; r < row_count; r++) {
        bool seen = false;
        for (size_t q = 0; q < r && !seen; q++) seen = strcmp(rows[q].field, rows[r].field) == 0;
        if (seen) continue;
        for (size_t q = r; q < row_count; q++)
            if (strcmp(rows[q].field, rows[r].field) == 0) ordered[placed++] = rows[q];
    }
    for (size_t r = 0; r < row_count; r++) {
        bool pseudo_row = is_pseudo(ordered[r].field);
        for (size_t i = 0; i < n; i++) {
            const char *value = value_of(&results->combos[i], ordered[r].field, pseudo_row);
            if (value && strcmp(value, ordered[r].value) == 0) cells[r * model_count + model_of[i]][results->combos[i].status]++;
        }
    }
    parity_text_append(html, "<h2 id=\"grid\">Grid <small>combos per model and field value</small></h2>\n<p class=\"legend\">");
    for (int s = 0; s < PARITY_COMBO_STATUS_COUNT; s++)
        parity_text_appendf(html, "<b class=\"c-%s\">%s</b>", parity_html_status_class((parity_combo_status)s),
                            status_labels[s]);
    parity_text_append(html, " <small>each cell counts the model's combos with that value, by status</small></p>\n"
                             "<div class=\"panel\"><table class=\"grid\">\n<thead><tr><th>field</th><th>value</th>");
    for (size_t m = 0; m < model_count; m++) {
        parity_text_append(html, "<th>");
        parity_text_append_xml(html, models[m]);
        parity_text_append(html, "</th>");
    }
    parity_text_append(html, "</tr></thead>\n<tbody>\n");
    for (size_t r = 0; r < row_count; r++) {
        parity_text_append(html, "<tr>");
        if (r == 0 || strcmp(ordered[r - 1].field, ordered[r].field) != 0) {
            size_t span = 1;
            while (r + span < row_count && strcmp(ordered[r + span].field, ordered[r].field) == 0) span++;
            parity_text_appendf(html, "<th class=\"field\" rowspan=\"%zu\">", span);
            append_field_name(html, ordered[r].field);
            parity_text_append(html, "</th>");
        }
        parity_text_append(html, "<td><code>");
        parity_text_append_xml(html, ordered[r].value);
        parity_text_append(html, "</code></td>");
        for (size_t m = 0; m < model_count; m++) append_cell(html, cells[r * model_count + m]);
        parity_text_append(html, "</tr>\n");
    }
    if (!row_count) {
        parity_text_appendf(html, "<tr><th class=\"field\">(no fields)</th><td></td>");
        for (size_t m = 0; m < model_count; m++) {
            size_t counts[PARITY_COMBO_STATUS_COUNT] = {0};
            for (size_t i = 0; i < n; i++)
                if (model_of[i] == m) counts[results->combos[i].status]++;
            append_cell(html, counts);
        }
        parity_text_append(html, "</tr>\n");
    }
    parity_text_append(html, "</tbody></table></div>\n");
    free(rows), free(models), free(model_of), free(ordered), free(cells);
}
