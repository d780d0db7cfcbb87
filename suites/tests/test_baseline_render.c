// test_baseline_render.c: the H200 baseline's figures are rendered from its report, not typed, and a
// verdict against torch needs a torch peer measured in the same run.
//   - reports/baselines/h200/README.md is exactly what `parity bench render bench.json --readme` makes
//     of it from the committed bench.json (harness/bench/bench_readme.h: the part between its two
//     marker lines), and bench.md exactly what --markdown makes;
//   - outside the rendered part the README holds no measured figure (a number with GB/s, TB/s,
//     TFLOP/s, GiB, MiB or %, a decimal number of ms, a decimal speedup "1.13x");
//   - the command line rewrites a stale rendered part, and a README without its markers is a DATA
//     error naming the file;
//   - a peer target without its peer in the report gives "no verdict", never one against a typed-in
//     time (the targets file has no anchor column), and a peers file from another device is refused;
//   - a peer target is judged against the peer it names, not the row's first peer, by its speedup.
#include <criterion/criterion.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_runner.h"
#include "harness/bench/bench_readme.h"
#include "harness/bench/bench_report.h"
#include "harness/bench/bench_targets.h"
#include "ops/core/file.h"

#define ROWS(array) (sizeof(array) / sizeof((array)[0]))
#define BASELINE_DIR "reports/baselines/h200"

static char *read_text(const char *path) {
    char *text = NULL;
    size_t size;
    parity_error *error = parity_read_file(path, &text, &size);
    cr_assert_null(error, "%s", error ? parity_error_message(error) : "");
    return text;
}

static void read_baseline(parity_bench_report *report, parity_bench_targets *targets) {
    memset(report, 0, sizeof *report);
    parity_error *error = parity_bench_read_report(BASELINE_DIR "/bench.json", report);
    if (!error) error = parity_bench_targets_read(PARITY_BENCH_TARGETS_REPOSITORY_PATH, targets);
    cr_assert_null(error, "%s", error ? parity_error_message(error) : "");
}

// The first line where `a` and `b` differ (1-based), for messages.
static int first_different_line(const char *a, const char *b) {
    int line = 1;
    for (; *a && *a == *b; a++, b++) line += *a == '\n';
    return line;
}

Test(baseline_render, committed_readme_and_bench_md_are_what_the_tool_renders) {
    parity_bench_report report;
    parity_bench_targets targets;
    read_baseline(&report, &targets);
    char *readme = read_text(BASELINE_DIR "/README.md"), *markdown = read_text(BASELINE_DIR "/bench.md");
    char *rendered = NULL, *spliced = NULL, *whole = NULL;
    parity_error *error = parity_bench_render_markdown(&report, &targets, 2, &rendered);
    if (!error) error = parity_bench_readme_splice(readme, rendered, BASELINE_DIR "/README.md", &spliced);
    if (!error) error = parity_bench_render_markdown(&report, &targets, 1, &whole);
    cr_assert_null(error, "%s", error ? parity_error_message(error) : "");
    cr_expect_str_eq(spliced, readme,
                     "README.md is not what `parity bench render bench.json --readme README.md` renders (line %d differs)",
                     first_different_line(spliced, readme));
    cr_expect_str_eq(whole, markdown, "bench.md is not what `parity bench render bench.json --markdown` renders (line %d)",
                     first_different_line(whole, markdown));
    cr_expect(strstr(rendered, "### Targets") && strstr(rendered, "| RMSNorm fwd+bwd >= 3.4 TB/s | liger_kernel: 3524 GB/s"),
              "the rendered part has the targets, checked:\n%s", rendered);
    free(rendered);
    free(spliced);
    free(whole);
    free(readme);
    free(markdown);
    parity_bench_targets_release(&targets);
    parity_bench_report_release(&report);
}

// A measured figure starting at text[i] (a number not inside a word), or 0; its length otherwise.
static size_t figure_at(const char *text, size_t i) {
    if (!isdigit((unsigned char)text[i]) || (i > 0 && (isalnum((unsigned char)text[i - 1]) || text[i - 1] == '.'))) return 0;
    size_t j = i;
    bool decimal = false;
    while (isdigit((unsigned char)text[j]) || ((text[j] == '.' || text[j] == ',') && isdigit((unsigned char)text[j + 1])))
        decimal |= text[j++] == '.';
    size_t unit = text[j] == ' ' ? j + 1 : j;
    static const char *const units[] = {"GB/s", "TB/s", "TFLOP/s", "GiB", "MiB", "%"};
    for (size_t u = 0; u < ROWS(units); u++)
        if (strncmp(text + unit, units[u], strlen(units[u])) == 0) return unit + strlen(units[u]) - i;
    if (decimal && strncmp(text + unit, "ms", 2) == 0 && !isalpha((unsigned char)text[unit + 2])) return unit + 2 - i;
    if (decimal && text[j] == 'x' && !isalpha((unsigned char)text[j + 1])) return j + 1 - i;
    return 0;
}

Test(baseline_render, no_measured_figure_is_typed_outside_the_rendered_part) {
    char *readme = read_text(BASELINE_DIR "/README.md");
    char *begin = strstr(readme, PARITY_BENCH_README_BEGIN), *end = strstr(readme, PARITY_BENCH_README_END);
    cr_assert(begin && end && begin < end, "README.md lacks its rendered part");
    int typed = 0;
    for (size_t i = 0; readme[i]; i++) {
        if (readme + i == begin) i = (size_t)(end - readme); // skip the rendered part
        size_t length = figure_at(readme, i);
        if (!length) continue;
        typed++;
        cr_expect_fail("README.md: '%.*s' is a measured figure typed outside the rendered part", (int)length, readme + i);
        i += length;
    }
    cr_expect_eq(typed, 0);
    // the scanner sees figures: the rendered part has them in every unit
    const char *samples[] = {"4244 GB/s", "3.8 TB/s", "706 TFLOP/s", "1.49 GiB", "60 MiB", "89%", "50.24 ms", "1.13x"};
    for (size_t s = 0; s < ROWS(samples); s++)
        cr_expect_eq(figure_at(samples[s], 0), strlen(samples[s]), "'%s' is not seen as a figure", samples[s]);
    const char *not_figures[] = {"200 ms of warm-up", "D = 128", "16-byte", "x86", "SM90+", "4x the L2"};
    for (size_t s = 0; s < ROWS(not_figures); s++)
        for (size_t i = 0; not_figures[s][i]; i++)
            cr_expect_eq(figure_at(not_figures[s], i), 0, "'%s' is seen as a figure at %zu", not_figures[s], i);
    free(readme);
}

Test(baseline_render, the_command_rewrites_a_stale_part_and_names_a_readme_without_markers) {
    char *readme = read_text(BASELINE_DIR "/README.md");
    char folder[] = "/tmp/parity-baseline-XXXXXX", path[64], arguments[256];
    cr_assert_not_null(mkdtemp(folder));
    snprintf(path, sizeof path, "%s/README.md", folder);
    // the same prose with a stale rendered part
    char *begin = strstr(readme, PARITY_BENCH_README_BEGIN), *end = strstr(readme, PARITY_BENCH_README_END);
    cr_assert(begin && end);
    FILE *file = fopen(path, "w");
    cr_assert_not_null(file);
    fprintf(file, "%.*s%s\n| stale | 1 GB/s |\n%s", (int)(begin - readme), readme, PARITY_BENCH_README_BEGIN, end);
    fclose(file);
    snprintf(arguments, sizeof arguments, "bench render " BASELINE_DIR "/bench.json --readme %s", path);
    command_result result = run_parity(arguments);
    cr_expect_eq(result.exit_code, 0, "%s", result.output);
    free(result.output);
    char *rewritten = read_text(path);
    cr_expect_str_eq(rewritten, readme, "the rewritten README differs from the committed one at line %d",
                     first_different_line(rewritten, readme));
    free(rewritten);
    // without the end marker: a data error naming the file, and the file left as it was
    file = fopen(path, "w");
    cr_assert_not_null(file);
    fprintf(file, "# a README\n%s\nno end\n", PARITY_BENCH_README_BEGIN);
    fclose(file);
    result = run_parity(arguments);
    cr_expect_eq(result.exit_code, 3, "%s", result.output);
    cr_expect(strstr(result.output, path) && strstr(result.output, PARITY_BENCH_README_END), "%s", result.output);
    free(result.output);
    char *kept = read_text(path);
    cr_expect(strstr(kept, "no end") != NULL, "the README was changed: %s", kept);
    free(kept);
    // the library's other refusals
    static const struct {
        const char *text, *expected;
    } rows[] = {
        {"no markers\n", "found 0 and 0"},
        {PARITY_BENCH_README_BEGIN "\n" PARITY_BENCH_README_END "\n" PARITY_BENCH_README_BEGIN "\n", "found 2 and 1"},
        {PARITY_BENCH_README_END "\n" PARITY_BENCH_README_BEGIN "\n", "comes before"},
        {"text " PARITY_BENCH_README_BEGIN "\n" PARITY_BENCH_README_END "\n", "found 0 and 1"}, // not a line of its own
    };
    for (size_t r = 0; r < ROWS(rows); r++) {
        char *out = NULL;
        parity_error *error = parity_bench_readme_splice(rows[r].text, "x\n", "R.md", &out);
        cr_expect_not_null(error, "row %zu accepted", r);
        if (error) {
            cr_expect(strstr(parity_error_message(error), "R.md") && strstr(parity_error_message(error), rows[r].expected),
                      "row %zu: %s", r, parity_error_message(error));
            cr_expect_eq(parity_error_kind_of(error), PARITY_ERROR_DATA);
        }
        parity_error_free(error);
        free(out);
    }
    unlink(path);
    rmdir(folder);
    free(readme);
}

Test(baseline_render, a_peer_target_needs_the_peer_measured_in_the_same_run) {
    parity_bench_report report;
    parity_bench_targets targets;
    read_baseline(&report, &targets);
    size_t kept = 0; // no peer in this run: only the parity rows
    for (size_t i = 0; i < report.count; i++)
        if (!report.results[i].is_peer) {
            report.results[kept] = report.results[i];
            report.results[kept++].peer_median_ms = 0;
        }
    report.count = kept;
    char *rendered = NULL;
    parity_error *error = parity_bench_render_markdown(&report, &targets, 1, &rendered);
    cr_assert_null(error, "%s", error ? parity_error_message(error) : "");
    cr_expect(strstr(rendered, "| fused linear+CE (liger_kernel) fwd+bwd no slower than PyTorch eager, <= 1.5 GiB extra peak | "
                               "liger_kernel: 50.24 ms, extra peak 1.49 GiB (+ 1.22 GiB gradients) | no verdict: torch eager linear + "
                               "F.cross_entropy not measured in this run |"),
              "%s", rendered);
    cr_expect(strstr(rendered, "| RMSNorm fwd+bwd >= 3.4 TB/s | liger_kernel: 3524 GB/s (83% of copy) | met |"),
              "bandwidth targets are judged without peers:\n%s", rendered);
    free(rendered);
    // no target carries a time of its own to judge against
    for (size_t t = 0; t < targets.count; t++)
        cr_expect((targets.items[t].minimum_gigabytes_per_second > 0) != (targets.items[t].peer[0] != '\0'),
                  "%s: neither or both kinds", targets.items[t].what);
    parity_bench_targets_release(&targets);

    // peers measured on another device are not this run's
    char folder[] = "/tmp/parity-peers-XXXXXX", path[64];
    cr_assert_not_null(mkdtemp(folder));
    snprintf(path, sizeof path, "%s/peers.json", folder);
    static const struct {
        const char *text, *expected; // NULL: read
    } rows[] = {
        {"{\"device\": \"NVIDIA H200\", \"torch\": \"2.11\", \"peers\": []}", NULL},
        {"{\"device\": \"NVIDIA A100-SXM4-80GB\", \"torch\": \"2.11\", \"peers\": []}",
         "peers measured on 'NVIDIA A100-SXM4-80GB', this bench ran on 'NVIDIA H200': a peer must be measured in the same run"},
        {"{\"torch\": \"2.11\", \"peers\": []}", "peers measured on '(no field 'device')'"},
    };
    for (size_t r = 0; r < ROWS(rows); r++) {
        FILE *file = fopen(path, "w");
        cr_assert_not_null(file);
        fputs(rows[r].text, file);
        fclose(file);
        error = parity_bench_read_peers(path, &report);
        if (!rows[r].expected) cr_expect_null(error, "row %zu: %s", r, error ? parity_error_message(error) : "");
        else {
            cr_expect_not_null(error, "row %zu accepted", r);
            if (error) cr_expect(strstr(parity_error_message(error), rows[r].expected), "row %zu: %s", r, parity_error_message(error));
        }
        parity_error_free(error);
    }
    unlink(path);
    rmdir(folder);
    parity_bench_report_release(&report);
}

// A peer target names its peer: attention's rows have sdpa flash first, but flex_attention is judged
// against compiled flex and sdpa against memory-efficient; flash_attention_2 needs 1.1x sdpa flash.
Test(baseline_render, a_peer_target_is_judged_against_the_peer_it_names) {
    parity_bench_targets targets;
    parity_error *error = parity_bench_targets_read(PARITY_BENCH_TARGETS_REPOSITORY_PATH, &targets);
    cr_assert_null(error, "%s", error ? parity_error_message(error) : "");
    static const struct { const char *backend; bool peer; double fwd_ms; } rows[] = {
        {"torch:sdpa flash", true, 10.0},            // the rows' first peer
        {"torch:sdpa cudnn", true, 6.0},
        {"torch:sdpa memory-efficient", true, 20.0},
        {"torch:flex_attention (torch.compile)", true, 12.0},
        {"flash_attention_2", false, 9.5},           // 1.05x sdpa flash: short of 1.1x
        {"flex_attention", false, 11.0},             // slower than sdpa flash, faster than compiled flex
        {"sdpa", false, 19.0},
    };
    parity_bench_report report;
    memset(&report, 0, sizeof report);
    for (size_t r = 0; r < ROWS(rows) && !error; r++)
        for (int pass = 0; pass < 2 && !error; pass++) {
            parity_bench_result row;
            memset(&row, 0, sizeof row);
            snprintf(row.op, sizeof row.op, "attention");
            snprintf(row.pass, sizeof row.pass, "%s", pass ? "fwd+bwd" : "fwd");
            snprintf(row.shape, sizeof row.shape, "4x16x16x4096x128x1");
            snprintf(row.dtype, sizeof row.dtype, "bf16");
            snprintf(row.backend, sizeof row.backend, "%s", rows[r].backend);
            row.is_peer = rows[r].peer;
            row.ok = true;
            row.timing.median_ms = rows[r].fwd_ms * (pass ? 3.5 : 1);
            row.extra_peak_bytes = 1 << 30;
            if (!row.is_peer) row.peer_median_ms = rows[0].fwd_ms * (pass ? 3.5 : 1); // linked to the first peer
            error = parity_bench_report_add(&report, &row);
        }
    char *rendered = NULL;
    if (!error) error = parity_bench_render_markdown(&report, &targets, 1, &rendered);
    cr_assert_null(error, "%s", error ? parity_error_message(error) : "");
    static const char *const expected[] = {
        "| flash_attention_2 fwd >= 1.1x torch FA2 (sdpa flash), causal hd 128 | flash_attention_2: 9.50 ms vs torch sdpa "
        "flash 10.00 ms (1.05x), extra peak 1.00 GiB (+ 0.00 GiB gradients) | missed: 1.05x of torch, target 1.10x (4.3% short) |",
        "| flash_attention_2 fwd+bwd >= 1.1x torch FA2 (sdpa flash), causal hd 128 | flash_attention_2: 33.25 ms vs torch sdpa "
        "flash 35.00 ms (1.05x)",
        "| flex_attention fwd no slower than torch compiled flex_attention | flex_attention: 11.00 ms vs torch "
        "flex_attention (torch.compile) 12.00 ms (1.09x), extra peak 1.00 GiB (+ 0.00 GiB gradients) | met |",
        "| sdpa fwd no slower than torch sdpa memory-efficient | sdpa: 19.00 ms vs torch sdpa memory-efficient 20.00 ms "
        "(1.05x), extra peak 1.00 GiB (+ 0.00 GiB gradients) | met |",
        "| RMSNorm fwd >= 3.8 TB/s | not measured in this run | - |",
    };
    for (size_t i = 0; i < ROWS(expected); i++)
        cr_expect(strstr(rendered, expected[i]) != NULL, "the targets lack '%s':\n%s", expected[i], rendered);
    free(rendered);
    parity_bench_report_release(&report);
    parity_bench_targets_release(&targets);
}
