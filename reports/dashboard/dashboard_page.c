// dashboard_page.c: the dashboard's one page (dashboard.h): the history's runs grouped into
// sections (per suite and device; bench reports per device), each section written by its writer
// (dashboard_runs.c, dashboard_bench.c), an overview table of every section's latest run on top.
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reports/dashboard/dashboard.h"
#include "reports/dashboard/dashboard_internal.h"
#include "reports/html_style.h"

parity_dashboard_options parity_dashboard_default_options(void) {
    return (parity_dashboard_options){.last = PARITY_DASHBOARD_DEFAULT_LAST, .compare = parity_compare_default_options()};
}

const char *dashboard_color(size_t index) {
    static const char *const colors[DASHBOARD_COLORS] = {"#0969da", "#1a7f37", "#e16f24", "#8250df", "#bf3989", "#1b7c83",
                                                         "#9a6700", "#cf222e", "#4d2d00", "#0550ae", "#116329", "#6639ba"};
    return colors[index % DASHBOARD_COLORS];
}

const char *dashboard_peer_color(size_t index) {
    static const char *const colors[DASHBOARD_COLORS] = {"#6e7781", "#a0a7b0", "#57606a", "#8c959f", "#424a53", "#afb8c1",
                                                         "#32383f", "#d0d7de", "#6e7781", "#a0a7b0", "#57606a", "#8c959f"};
    return colors[index % DASHBOARD_COLORS];
}

static bool is_date(const char *started) { return strlen(started) >= 16 && started[4] == '-' && started[10] == 'T'; }

void dashboard_date_label(const dashboard_section *section, size_t index, char *out, size_t size) {
    const char *started = section->runs[index].started;
    if (!is_date(started)) {
        snprintf(out, size, "%s", started);
        return;
    }
    bool distinct_days = true;
    for (size_t r = 1; r < section->run_count && distinct_days; r++)
        distinct_days = strncmp(section->runs[r - 1].started, section->runs[r].started, 10) != 0;
    if (distinct_days) snprintf(out, size, "%.5s", started + 5);
    else snprintf(out, size, "%.5s %.5s", started + 5, started + 11); // "12-02 05:10"
}

const char *dashboard_format_change(char *buffer, size_t size, double change) {
    if (!isfinite(change)) snprintf(buffer, size, "-");
    else snprintf(buffer, size, "%+.1f%%", 100 * change);
    return buffer;
}

static const char dashboard_style[] =
    "<style>\n"
    "table.overview td.verdict-cell{font-weight:600}table.overview td.bad{color:var(--fail)}table.overview td.good{color:var(--pass)}\n"
    ".regressions{border-color:var(--fail);margin:8px 0}.regressions h3{margin:0 0 6px;color:var(--fail);font-size:15px}\n"
    "h3{font-size:15px;margin:16px 0 6px}section{margin-top:24px}\n"
    ".charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(560px,1fr));gap:12px}\n"
    "table.bench code{overflow-wrap:normal;white-space:nowrap}table.bench td{white-space:nowrap}\n"
    "tr.regressed td{background:#ffebe9}td.mark{color:var(--fail);font-weight:700;white-space:nowrap}\n"
    "</style>\n";

// Groups the history's runs (oldest first) into sections, keeping each section's last `last` runs.
static parity_error *gather_sections(parity_history *history, int last, dashboard_section **sections, size_t *section_count,
                                     size_t *run_count) {
    parity_history_run *runs;
    size_t count;
    PARITY_TRY(parity_history_list(history, NULL, &runs, &count));
    *run_count = count;
    *sections = NULL;
    *section_count = 0;
    dashboard_section *list = calloc(count + 1, sizeof *list);
    if (!list) {
        free(runs);
        return PARITY_ERROR(PARITY_ERROR_MEMORY, "out of memory grouping %zu runs", count);
    }
    size_t used = 0;
    for (size_t i = 0; i < count; i++) {
        const parity_history_run *run = &runs[i];
        const char *suite = run->kind == PARITY_HISTORY_BENCH ? "bench" : run->suite;
        size_t s = 0;
        while (s < used && !(list[s].kind == run->kind && strcmp(list[s].suite, suite) == 0 && strcmp(list[s].device, run->device) == 0)) s++;
        dashboard_section *section = &list[s];
        if (s == used) {
            used++;
            section->kind = run->kind;
            snprintf(section->suite, sizeof section->suite, "%s", suite);
            snprintf(section->device, sizeof section->device, "%s", run->device);
        }
        if (section->run_count == (size_t)last) {
            memmove(&section->runs[0], &section->runs[1], (size_t)(last - 1) * sizeof section->runs[0]);
            section->run_count--;
        }
        section->runs[section->run_count++] = *run;
        section->total_runs++;
    }
    free(runs);
    // runs before bench reports, then by suite and device, so the page reads the same every night
    for (size_t a = 1; a < used; a++)
        for (size_t b = a; b > 0; b--) {
            dashboard_section *x = &list[b - 1], *y = &list[b];
            int order = (int)x->kind - (int)y->kind;
            if (!order) order = strcmp(x->suite, y->suite);
            if (!order) order = strcmp(x->device, y->device);
            if (order <= 0) break;
            dashboard_section swap = *x;
            *x = *y;
            *y = swap;
        }
    for (size_t s = 0; s < used; s++) snprintf(list[s].anchor, sizeof list[s].anchor, "s%zu", s + 1);
    *sections = list;
    *section_count = used;
    return NULL;
}

static void append_overview(parity_text *html, const dashboard_section *sections, const dashboard_overview *overviews, size_t count) {
    parity_text_append(html, "<h2 id=\"overview\">Latest runs <small>per suite and device, against the run before</small></h2>\n"
                             "<div class=\"panel\"><table class=\"overview sortable\">\n<thead><tr><th>suite</th><th>device</th>"
                             "<th>latest run</th><th>git sha</th><th class=\"num\">pass</th><th class=\"num\">fail</th>"
                             "<th class=\"num\">not supported</th><th>against the previous run</th></tr></thead>\n<tbody>\n");
    for (size_t s = 0; s < count; s++) {
        const dashboard_section *section = &sections[s];
        const parity_history_run *latest = &section->runs[section->run_count - 1];
        const dashboard_overview *overview = &overviews[s];
        parity_text_appendf(html, "<tr class=\"s-%s\"><td><a href=\"#%s\">", overview->bad ? "fail" : "pass", section->anchor);
        parity_text_append_xml(html, section->suite);
        parity_text_append(html, "</a></td><td>");
        parity_text_append_xml(html, section->device);
        parity_text_append(html, "</td><td>");
        parity_text_append_xml(html, latest->started);
        parity_text_appendf(html, " <small>(run %" PRId64 ")</small></td><td><code>%.12s</code></td>", latest->id,
                            latest->git_sha[0] ? latest->git_sha : "-");
        if (section->kind == PARITY_HISTORY_BENCH) {
            parity_text_appendf(html, "<td class=\"num\">-</td><td class=\"num\">-</td><td class=\"num\">%zu rows</td>", latest->bench_rows);
        } else {
            parity_text_appendf(html, "<td class=\"num\">%zu</td><td class=\"num\">%zu</td><td class=\"num\">%zu</td>",
                                latest->counts[PARITY_COMBO_PASS], latest->counts[PARITY_COMBO_FAIL] + latest->counts[PARITY_COMBO_ERROR],
                                latest->counts[PARITY_COMBO_NOT_SUPPORTED]);
        }
        parity_text_appendf(html, "<td class=\"verdict-cell %s\">", overview->bad ? "bad" : "good");
        parity_text_append_xml(html, overview->verdict);
        parity_text_append(html, "</td></tr>\n");
    }
    parity_text_append(html, "</tbody></table></div>\n");
}

parity_error *parity_dashboard_render(parity_history *history, const char *db_label, const parity_dashboard_options *options,
                                      parity_text *html, parity_dashboard_summary *summary) {
    memset(summary, 0, sizeof *summary);
    if (options->last < 1 || options->last > PARITY_DASHBOARD_MAX_LAST)
        return PARITY_ERROR(PARITY_ERROR_USAGE, "--last %d: draw 1 to %d runs", options->last, PARITY_DASHBOARD_MAX_LAST);
    dashboard_section *sections;
    size_t section_count;
    PARITY_TRY(gather_sections(history, options->last, &sections, &section_count, &summary->runs));
    dashboard_overview *overviews = calloc(section_count + 1, sizeof *overviews);
    if (!overviews) {
        free(sections);
        return PARITY_ERROR(PARITY_ERROR_MEMORY, "out of memory");
    }
    parity_text body = {0};
    parity_error *error = NULL;
    for (size_t s = 0; !error && s < section_count; s++) {
        error = sections[s].kind == PARITY_HISTORY_BENCH
                    ? dashboard_append_bench_section(&body, history, &sections[s], options, &overviews[s])
                    : dashboard_append_run_section(&body, history, &sections[s], options, &overviews[s]);
        if (error) error = parity_error_wrap(error, __FILE__, __LINE__, "suite %s on %s", sections[s].suite, sections[s].device);
        summary->regressions += overviews[s].regressions;
        summary->new_failures += overviews[s].new_failures;
    }
    if (!error) {
        summary->sections = section_count;
        parity_text_append(html, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                                 "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                                 "<title>parity dashboard</title>\n");
        parity_text_append(html, parity_html_style);
        parity_text_append(html, dashboard_style);
        parity_text_append(html, "</head>\n<body>\n<main>\n<h1>parity dashboard</h1>\n<p class=\"sub\">from <code>");
        parity_text_append_xml(html, db_label);
        parity_text_appendf(html, "</code> &middot; %zu entr%s (runs and bench reports) &middot; trends over the last %d of each &middot; "
                                  "a regression is slower by more than %.0f%% and %.0fx the runs' combined noise</p>\n",
                            summary->runs, summary->runs == 1 ? "y" : "ies", options->last, 100 * options->compare.threshold,
                            options->compare.noise_factor);
        if (!section_count) {
            parity_text_append(html, "<p class=\"note\" id=\"empty\">The history has no runs yet: add some with "
                                     "<code>parity history add RUN_DIR</code>, then write the dashboard again.</p>\n");
        } else {
            append_overview(html, sections, overviews, section_count);
            parity_text_append_bytes(html, body.data, body.length);
        }
        parity_text_append(html, "<footer>written by <code>parity dashboard</code>; every number is in the history database and "
                                 "the runs' results.json</footer>\n</main>\n");
        parity_text_append(html, parity_html_sort_script);
        parity_text_append(html, "</body>\n</html>\n");
        error = parity_text_check(html, "the dashboard page");
        if (!error) error = parity_text_check(&body, "the dashboard page");
        summary->bytes = html->length;
    }
    parity_text_free(&body);
    free(overviews);
    free(sections);
    return error;
}
