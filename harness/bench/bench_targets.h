// bench_targets.h: the performance targets the bench's Markdown report checks, read at run time
// from a data file (harness/bench/targets.tsv) instead of a table in C, so a new target or a
// changed bound is one line of data.
//
// Format: tab-separated lines; '#' starts a comment line; blank lines are skipped. The first other
// line is the header, exactly
//   op  pass  shape  backend  peer  min_speedup  min_gb_per_s  max_extra_gib  what
// then one target a line: an op parity bench knows, fwd or fwd+bwd, a shape in the op's format, a
// backend name or "best" (the fastest non-eager parity backend), and then either
//   a bandwidth target: min_gb_per_s, with peer, min_speedup and max_extra_gib "-"; or
//   a peer target: peer, the name of the torch peer (tools/bench_torch_peers.py's "peer" field, e.g.
//     "sdpa flash") measured in the same run for the same op, pass, shape and bf16; min_speedup, the
//     least peer time / parity time ("-": 1, no slower); max_extra_gib, the most extra peak memory
//     ("-": not judged); min_gb_per_s "-". A report without that peer gives no verdict, never one
//     against a typed-in time;
// `what` is the target as the report words it. Anything else is a DATA error "FILE:LINE: what is
// wrong".
//
// Where `parity bench` finds the file (parity_bench_targets_locate): harness/bench/targets.tsv under
// the working directory (the repository root, where make, the tests and the GPU runs start), else
// bench_targets.tsv beside the parity executable (make copies it into build/, so a copied or
// installed build directory carries its targets).
#ifndef PARITY_BENCH_TARGETS_H
#define PARITY_BENCH_TARGETS_H

#include <stdbool.h>
#include <stddef.h>

#include "ops/core/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PARITY_BENCH_TARGETS_REPOSITORY_PATH "harness/bench/targets.tsv"
#define PARITY_BENCH_TARGETS_BUILD_NAME "bench_targets.tsv"

typedef struct parity_bench_target {
    char op[32], pass[16], shape[64];
    char backend[64];                    // "" = the best non-eager parity backend ("best" in the file)
    char peer[64];                       // the torch peer a peer target is judged against ("": a bandwidth target)
    double minimum_speedup;              // peer targets: the least peer time / parity time (1 = no slower)
    double minimum_gigabytes_per_second; // 0: not a bandwidth target
    double maximum_extra_gib;            // peer targets: the extra peak memory allowed (0: not judged)
    char what[256];
} parity_bench_target;

typedef struct parity_bench_targets {
    parity_bench_target *items;
    size_t count;
    char path[1024];                     // the file they were read from
} parity_bench_targets;

// Parses the text of a targets file; `path` names it in errors.
parity_error *parity_bench_targets_parse(const char *text, const char *path, parity_bench_targets *out);
// Reads and parses `path`.
parity_error *parity_bench_targets_read(const char *path, parity_bench_targets *out);
// The targets file `parity bench` uses (see above); an IO error naming every place looked.
parity_error *parity_bench_targets_locate(char *path, size_t size);
void parity_bench_targets_release(parity_bench_targets *targets);

#ifdef __cplusplus
}
#endif
#endif
