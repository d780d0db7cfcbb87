// bench_report.h: what `parity bench` does with a report: read the PyTorch peers measured by
// tools/bench_torch_peers.py in the same device call (rows of the same op/pass/shape/dtype get the
// first peer's time beside theirs), print a text table, write JSON (context + rows, Google
// Benchmark's shape) and a Markdown table with the targets checked (bench_targets.h: read from
// harness/bench/targets.tsv). Files are written atomically (ops/core/file.h).
#ifndef PARITY_BENCH_REPORT_H
#define PARITY_BENCH_REPORT_H

#include <stdio.h>

#include "harness/bench/bench_run.h"
#include "harness/bench/bench_targets.h"

#ifdef __cplusplus
extern "C" {
#endif

// Adds the peers of `path` as rows (backend "torch:<peer>") and links every parity row to its first
// peer. DATA error naming the file and the field for malformed JSON, or when the report ran on a
// device (context.device_name set) and the file's "device" is not that one; IO error when unreadable.
parity_error *parity_bench_read_peers(const char *path, parity_bench_report *report);

// Reads a report written by parity_bench_write_json (`parity bench ... --output FILE`) back, so a
// committed baseline can be re-rendered without a GPU. DATA error naming the file and the field.
parity_error *parity_bench_read_report(const char *path, parity_bench_report *report);

void parity_bench_print_table(const parity_bench_report *report, FILE *stream, bool use_color);
// JSON to `path`, or to stdout when path is NULL.
parity_error *parity_bench_write_json(const parity_bench_report *report, const char *path);
// Markdown to `path`, with a "Targets" section checking each of `targets`.
parity_error *parity_bench_write_markdown(const parity_bench_report *report, const parity_bench_targets *targets,
                                          const char *path);
// The same Markdown in memory (*out malloc'ed, NUL-terminated), its title at `heading_level` (1: "#",
// the sections "##"; 2: one level down, for a part of another document such as a baseline README).
parity_error *parity_bench_render_markdown(const parity_bench_report *report, const parity_bench_targets *targets,
                                           int heading_level, char **out);

#ifdef __cplusplus
}
#endif
#endif
