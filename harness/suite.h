// suite.h: a suite, the YAML file that says what `parity run` and `parity golden` do (format in
// README "Suites"): models (a checkpoint directory, or a config.json with a seed for drawn weights),
// batches (a batch file, plain {rows, length, seed}, or packed {documents: [...], seed}), dtypes,
// devices, the kernel-selection fields to sweep (default: every field the model uses), explicit
// modes (VeOmni's attention x MoE combinations), exclusions with a reason, the tolerance rule,
// warm-up and repeats, and ranks. Relative paths are relative to the suite file's folder.
// Every problem is reported at once, each with file:line.
#ifndef PARITY_SUITE_H
#define PARITY_SUITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "harness/config/fields.h"
#include "harness/timer.h"
#include "harness/tolerance.h"
#include "models/parallel/layout.h"
#include "ops/core/dtype.h"
#include "ops/core/error.h"

enum {
    PARITY_SUITE_MAX_MODELS = 64,
    PARITY_SUITE_MAX_BATCHES = 16,     // per model, and suite-wide defaults
    PARITY_SUITE_MAX_EXCLUSIONS = 64,  // per model, and suite-wide
    PARITY_SUITE_MAX_MODES = 64,
    PARITY_SUITE_MAX_LAYOUTS = 16,     // parallel: entries
    PARITY_SUITE_MAX_DOCUMENTS = 256,  // per packed row
    PARITY_SUITE_MAX_CONDITIONS = 8,   // field=value terms of one exclusion
    PARITY_SUITE_MAX_DEVICES = 4,
    PARITY_SUITE_MAX_DTYPES = 4,
};

typedef enum parity_suite_batch_kind {
    PARITY_SUITE_BATCH_FILE = 0, // a safetensors batch file
    PARITY_SUITE_BATCH_PLAIN,    // rows x length random tokens, one document per row
    PARITY_SUITE_BATCH_PACKED,   // rows of packed documents (positions restart at 0)
} parity_suite_batch_kind;

typedef struct parity_suite_batch {
    char name[64];                 // the golden's case name: golden/<suite>/<model>/<name>.h5
    parity_suite_batch_kind kind;
    char file[1024];               // FILE: path (resolved)
    int64_t rows;                  // PLAIN, PACKED (default 1)
    int64_t length;                // PLAIN: tokens per row
    int64_t documents[PARITY_SUITE_MAX_DOCUMENTS]; // PACKED: document lengths of each row
    size_t document_count;
    uint64_t seed;                 // PLAIN, PACKED: token ids drawn from Philox (seed, "input_ids")
    int line;
} parity_suite_batch;

// One term of an exclusion: key = pattern. Keys: a kernel-selection field (name or alias), or
// "dtype", "device", "batch", "backend"; patterns are fnmatch globs ("flash_attention_*").
typedef struct parity_suite_condition {
    char key[64];
    char pattern[128];
} parity_suite_condition;

typedef struct parity_suite_exclusion {
    char match[256];               // as written: "attn=sdpa,dtype=bf16"
    parity_suite_condition conditions[PARITY_SUITE_MAX_CONDITIONS];
    size_t condition_count;
    char reason[512];
    int line;
} parity_suite_exclusion;

// An explicit combination (VeOmni's ModelMode): named choices, every other field eager. Choices
// for ops a model never calls are dropped for that model (as VeOmni's Liger switch does nothing for
// an op the model lacks); `requires` lists fields the model must call for the mode to apply at all
// (VeOmni adds its fused-MoE modes only for MoE models: requires: [moe]).
typedef struct parity_suite_mode {
    char name[128];
    char backend[16];              // VeOmni's modeling backend, "hf" or "veomni" ("" = not given)
    const parity_kernel_field *fields[PARITY_KERNEL_FIELD_COUNT];
    char values[PARITY_KERNEL_FIELD_COUNT][64];
    size_t choice_count;
    const parity_kernel_field *requires[PARITY_KERNEL_FIELD_COUNT];
    size_t require_count;
    int line;
} parity_suite_mode;

typedef struct parity_suite_model {
    char name[64];
    char checkpoint[1024];         // checkpoint directory (resolved), or ""
    char config[1024];             // config.json for drawn weights (resolved), or ""
    uint64_t seed;
    double initializer_range;      // drawn weights; 0 = 0.02
    parity_suite_batch batches[PARITY_SUITE_MAX_BATCHES]; // own batches, else the suite's
    size_t batch_count;
    parity_suite_exclusion exclusions[PARITY_SUITE_MAX_EXCLUSIONS];
    size_t exclusion_count;
    int warmup, repeats;           // this model's own warm-up and timed steps; -1: the suite's
    int line;
} parity_suite_model;

typedef struct parity_suite {
    char path[1024];
    char name[64];                 // `suite:`, default the file name without .yaml
    char description[512];
    parity_suite_model models[PARITY_SUITE_MAX_MODELS];
    size_t model_count;
    parity_suite_batch batches[PARITY_SUITE_MAX_BATCHES]; // defaults for models without `batches`
    size_t batch_count;
    parity_dtype dtypes[PARITY_SUITE_MAX_DTYPES];
    size_t dtype_count;
    char devices[PARITY_SUITE_MAX_DEVICES][16]; // "cpu", "cuda", "best"
    size_t device_count;
    bool sweep_given;              // false: every field the model uses
    const parity_kernel_field *sweep[PARITY_KERNEL_FIELD_COUNT];
    size_t sweep_count;
    parity_suite_mode modes[PARITY_SUITE_MAX_MODES]; // non-empty: these instead of the product
    size_t mode_count;
    parity_suite_exclusion exclusions[PARITY_SUITE_MAX_EXCLUSIONS]; // apply to every model
    size_t exclusion_count;
    parity_tolerance_rule tolerance;
    int warmup, repeats;           // default 1 and 3
    int jitter_runs;               // jittered eager runs for the spread (harness/tolerance.h); default PARITY_JITTER_RUNS
    parity_adaptive_timing adaptive; // adaptive_repeats: {noise, max, seconds}; off by default (harness/evaluate.h)
    int ranks, ranks_line;         // default 1 (a number above 1 is a CONFIG error: the layouts say the ranks)
    // parallel: [layout, ...] (models/parallel/layout.h): every combo runs under each, against the
    // one-device golden; none given: one rank. A run needs the largest layout's ranks.
    parity_layout layouts[PARITY_SUITE_MAX_LAYOUTS];
    size_t layout_count;
} parity_suite;

// Reads and validates a suite file. CONFIG error listing every problem with file:line; IO error
// when the file cannot be read. Release with parity_suite_free.
parity_error *parity_suite_load(const char *path, parity_suite **out);
// The same for YAML text; `path` names the file in messages and anchors relative paths.
parity_error *parity_suite_parse(const char *text, size_t length, const char *path, parity_suite **out);
void parity_suite_free(parity_suite *suite);
// The warm-up and timed steps of `model`'s combos: its own where it sets them, else the suite's.
int parity_suite_model_warmup(const parity_suite *suite, const parity_suite_model *model);
int parity_suite_model_repeats(const parity_suite *suite, const parity_suite_model *model);

// `name_or_path`: a file path (contains '/' or ends in .yaml), or a name looked up as
// <suites_dir>/<name>.yaml. USAGE error when there is no such file.
parity_error *parity_suite_locate(const char *name_or_path, const char *suites_dir, char *path, size_t size);

// The batches of a model: its own, or the suite's defaults.
const parity_suite_batch *parity_suite_model_batches(const parity_suite *suite, const parity_suite_model *model,
                                                     size_t *count);
const parity_suite_model *parity_suite_find_model(const parity_suite *suite, const char *name);

// A CONFIG error naming file:line when ranks > 1 (the ranks come from the `parallel:` layouts); NULL otherwise.
parity_error *parity_suite_check_ranks(const parity_suite *suite);

#endif
