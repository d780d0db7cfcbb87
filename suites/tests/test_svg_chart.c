// test_svg_chart.c: the SVG writer of reports/svg_chart.h: every text escaped, a legend entry per
// series, no font under 11 px, error bars drawn, long labels cut, nice ticks, a series index out of
// range an error (not a crash), and the line chart's points, gaps and error bars.
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "reports/svg_chart.h"

#define ROWS(array) (sizeof(array) / sizeof((array)[0]))

static size_t count_occurrences(const char *text, const char *needle) {
    size_t count = 0;
    for (const char *at = strstr(text, needle); at; at = strstr(at + 1, needle)) count++;
    return count;
}

static void expect_fonts_at_least_11_px(const char *svg) {
    size_t fonts = 0;
    for (const char *at = strstr(svg, "font-size=\""); at; at = strstr(at + 1, "font-size=\"")) {
        cr_expect_geq(atoi(at + 11), PARITY_SVG_MIN_FONT_PX, "%.30s", at);
        fonts++;
    }
    cr_expect_geq(fonts, 1, "the root sets a font size");
}

static const parity_svg_series series[] = {{"fast <&> \"quoted\" 'x'", "#1a7f37"}, {"slow", "#e16f24"}, {"third", "#0969da"}};

Test(svg_chart, bar_chart_escapes_text_has_a_legend_per_series_and_legible_fonts) {
    const parity_svg_bar bars[] = {
        {"model <a> & \"b\"", true, 0, 0.5, 0.05, 0.05, "0.50x \xc2\xb1" "5%"},
        {"second", false, 1, 1.4, 0.1, 0.2, "1.40x"},
        {"nan bar", true, 2, NAN, 0, 0, "NaN"},
        {"clipped", false, 0, 40, 0, 0, "40x"},
    };
    parity_svg_bar_chart chart = {.title = "Title <t>", .axis_label = "x & y", .series = series, .series_count = ROWS(series),
                                  .bars = bars, .bar_count = ROWS(bars), .axis_max = 2, .reference = 1};
    parity_text svg = {0};
    cr_assert_null(parity_svg_bar_chart_append(&svg, &chart));
    cr_assert_null(parity_text_check(&svg, "svg"));
    cr_expect(strncmp(svg.data, "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 ", 51) == 0, "%.80s", svg.data);
    cr_expect(strstr(svg.data, "</svg>") == svg.data + svg.length - 6);
    cr_expect(strstr(svg.data, "<title>Title &lt;t&gt;</title>"));
    cr_expect(strstr(svg.data, ">model &lt;a&gt; &amp; &quot;b&quot;</text>"), "labels escaped");
    cr_expect(strstr(svg.data, ">fast &lt;&amp;&gt; &quot;quoted&quot; &#39;x&#39;</text>"), "legend escaped: %s", svg.data);
    cr_expect(strstr(svg.data, ">x &amp; y</text>"), "axis label escaped");
    cr_expect_null(strstr(svg.data, "<a>"));
    cr_expect_null(strstr(svg.data, "& "));
    // a legend entry (a swatch and its name) for every series
    char *legend = strstr(svg.data, "<g class=\"legend\">");
    cr_assert_not_null(legend);
    char *legend_end = strstr(legend, "</g>");
    *legend_end = '\0';
    cr_expect_eq(count_occurrences(legend, "<rect"), ROWS(series));
    for (size_t i = 0; i < ROWS(series); i++) {
        char swatch[64];
        snprintf(swatch, sizeof swatch, "fill=\"%s\"", series[i].color);
        cr_expect(strstr(legend, swatch), "legend swatch of %s", series[i].name);
    }
    cr_expect(strstr(legend, ">slow</text>") && strstr(legend, ">third</text>"));
    *legend_end = '<';
    expect_fonts_at_least_11_px(svg.data);
    // bars: one rect each except the NaN one, clipped to the axis; error bars; the reference line
    cr_expect_eq(count_occurrences(svg.data, "height=\"13\""), 3, "three bars: %s", svg.data);
    cr_expect_eq(count_occurrences(svg.data, "<path d=\"M"), 2, "two error bars");
    cr_expect(strstr(svg.data, "width=\"520.0\" height=\"13\""), "the 40x bar is cut at the axis end (2)");
    cr_expect(strstr(svg.data, "stroke-dasharray=\"4 3\""), "the reference at 1");
    cr_expect(strstr(svg.data, ">NaN</text>"), "a NaN bar keeps its note");
    parity_text_free(&svg);
}

Test(svg_chart, long_labels_are_cut_at_a_character_boundary) {
    char label[200];
    memset(label, 'a', sizeof label - 1);
    label[sizeof label - 1] = '\0';
    memcpy(label + 67, "\xc3\xa9\xc3\xa9", 4); // two-byte characters where the cut falls
    const parity_svg_bar bars[] = {{label, true, 0, 1, 0, 0, NULL}};
    parity_svg_bar_chart chart = {.series = series, .series_count = 1, .bars = bars, .bar_count = 1, .reference = NAN};
    parity_text svg = {0};
    cr_assert_null(parity_svg_bar_chart_append(&svg, &chart));
    cr_expect_null(strstr(svg.data, label), "the label is cut");
    const char *cut = strstr(svg.data, "aaaa\xc3\xa9...</text>");
    cr_expect(cut, "cut after a whole character, ending in ...: %s", svg.data);
    cr_expect_null(strstr(svg.data, "\xc3..."), "never inside a character");
    parity_text_free(&svg);
}

Test(svg_chart, a_series_out_of_range_is_an_error_naming_the_bar) {
    const parity_svg_bar bars[] = {{"ok", true, 0, 1, 0, 0, NULL}, {"bad", false, 7, 1, 0, 0, NULL}};
    parity_svg_bar_chart chart = {.series = series, .series_count = ROWS(series), .bars = bars, .bar_count = 2, .reference = NAN};
    parity_text svg = {0};
    parity_error *error = parity_svg_bar_chart_append(&svg, &chart);
    cr_assert_not_null(error);
    cr_expect(strstr(parity_error_message(error), "bar 1 ('bad') has series 7 of 3"), "%s", parity_error_message(error));
    parity_error_free(error);
    parity_text_free(&svg);
}

typedef struct ticks_case {
    double min, max;
    size_t most;
    double first, step;
    size_t count;
} ticks_case;

static const ticks_case ticks_cases[] = {
    {0, 1, 8, 0, 0.2, 6},     {0, 1.08, 8, 0, 0.2, 6}, {0, 4.2, 8, 0, 1, 5},     {0, 35, 8, 0, 5, 8},
    {0.93, 1.27, 6, 1, 0.1, 3}, {-3, 7, 6, -2, 2, 5},  {0, 0.003, 8, 0, 0.0005, 7}, {5, 5, 8, 5, 1, 1},
};

Test(svg_chart, ticks_are_nice_steps) {
    for (size_t i = 0; i < ROWS(ticks_cases); i++) {
        const ticks_case *row = &ticks_cases[i];
        double first, step;
        size_t count = parity_svg_ticks(row->min, row->max, row->most, &first, &step);
        cr_expect_float_eq(step, row->step, 1e-12, "[%g, %g]: step %g", row->min, row->max, step);
        cr_expect_float_eq(first, row->first, 1e-12, "[%g, %g]: first %g", row->min, row->max, first);
        cr_expect_eq(count, row->count, "[%g, %g]: %zu ticks", row->min, row->max, count);
        cr_expect_leq(count, row->most);
    }
}

Test(svg_chart, line_chart_draws_trends_with_gaps_error_bars_and_a_legend) {
    const double x[] = {0, 1, 2, 3}, y_a[] = {1.0, 1.1, NAN, 0.9}, error_a[] = {0.05, 0.05, 0.05, 0.05}, y_b[] = {2, 2.2, 2.1, 2.4};
    const parity_svg_line lines[] = {{0, x, y_a, error_a, 4}, {1, x, y_b, NULL, 4}};
    const char *const ticks[] = {"12-01", "12-02", "12-03 <x>", "12-04"};
    parity_svg_line_chart chart = {.title = "tokens/s", .x_label = "run", .y_label = "ms", .series = series, .series_count = 2,
                                   .lines = lines, .line_count = 2, .x_tick_labels = ticks, .x_tick_count = 4, .reference = 1};
    parity_text svg = {0};
    cr_assert_null(parity_svg_line_chart_append(&svg, &chart));
    cr_assert_null(parity_text_check(&svg, "svg"));
    expect_fonts_at_least_11_px(svg.data);
    cr_expect_eq(count_occurrences(svg.data, "<circle"), 3 + 4, "a point per finite value");
    cr_expect_eq(count_occurrences(svg.data, "stroke-width=\"2\""), 2, "a line per series");
    cr_expect(strstr(svg.data, ">12-03 &lt;x&gt;</text>"), "tick labels escaped");
    cr_expect(strstr(svg.data, ">fast &lt;&amp;&gt; &quot;quoted&quot; &#39;x&#39;</text>") && strstr(svg.data, ">slow</text>"), "legend");
    // the NaN point breaks line a: its path has two M (move) commands
    static const char line_path[] = "<path fill=\"none\" stroke-width=\"2\" d=\"";
    const char *path_a = strstr(svg.data, line_path);
    cr_assert_not_null(path_a);
    const char *end = strchr(path_a + strlen(line_path), '"');
    size_t moves = 0;
    for (const char *c = path_a + strlen(line_path); c < end; c++) moves += *c == 'M';
    cr_expect_eq(moves, 2, "%.*s", (int)(end - path_a), path_a);
    cr_expect_eq(count_occurrences(svg.data, "V"), 3 + 1, "three error bars and the axis");
    parity_text_free(&svg);
    const parity_svg_line bad[] = {{5, x, y_a, NULL, 4}};
    chart.lines = bad;
    chart.line_count = 1;
    parity_error *error = parity_svg_line_chart_append(&svg, &chart);
    cr_expect_not_null(error, "series out of range");
    parity_error_free(error);
    parity_text_free(&svg);
}
