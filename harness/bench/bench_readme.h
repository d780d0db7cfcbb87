// bench_readme.h: a baseline README whose figures are rendered from its report, not typed. Between
// the two marker lines below, the README holds what `parity bench render REPORT.json --readme FILE`
// writes there: the report's Markdown (bench_report.h), headings one level down; the rest of the file
// is prose, kept as it is. suites/tests/test_baseline_render.c checks that the committed
// reports/baselines/h200/README.md is exactly what the tool makes from the committed bench.json.
#ifndef PARITY_BENCH_README_H
#define PARITY_BENCH_README_H

#include "ops/core/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PARITY_BENCH_README_BEGIN "<!-- rendered from bench.json by `parity bench render bench.json --readme README.md`: do not edit -->"
#define PARITY_BENCH_README_END "<!-- end of the rendered part -->"

// `readme` with everything between its marker lines replaced by `rendered` (*out malloc'ed). A DATA
// error naming `path` when a marker is missing, appears twice, or the end comes before the begin.
parity_error *parity_bench_readme_splice(const char *readme, const char *rendered, const char *path, char **out);

#ifdef __cplusplus
}
#endif
#endif
