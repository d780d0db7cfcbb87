// command_check.c: `parity check op OP`: ggml's test-backend-ops for parity. Every row of the op's
// table (ops/testing/op_cases.c: the rows the tests use; on cuda also the GPU-only rows) plus the
// user's shapes (the op's bench format), each backend's forward and every gradient judged against
// eager in fp64 by ops/testing/op_verdict.h: per tensor the normalized mean squared error, the max
// error relative to the tensor's scale and its ratio to the allowance (at most 2x eager's error in
// the same dtype), NaN/Inf named first, sentinel bytes around every tensor the backend writes, a
// determinism column; "not supported" is a third outcome, never a pass. A line per verdict as it is
// reached; --json / --output for the whole report.
#include <cjson/cJSON.h>
#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/bench/bench_check.h"
#include "harness/cli/cli_support.h"
#include "harness/cli/commands.h"
#include "ops/core/file.h"
#include "ops/registry.h"
#include "ops/testing/op_cases.h"
#include "ops/testing/op_verdict.h"
#include "ops/testing/test_backends.h"

enum { MAX_BACKENDS = 32, MAX_SHAPES = 32, MAX_ROWS = 256 };

void parity_command_check_usage(FILE *stream) {
    fprintf(stream,
            "usage: parity check op OP|all [--backend B[,B...]]... [--device cpu|cuda[:N]] [--dtype T[,T...]]...\n"
            "                         [--shapes S[,S...]]... [--filter GLOB] [--reference-device D] [--repeats N]\n"
            "                         [--seed N] [--tensors] [--with-test-backends] [--json] [--output FILE]\n"
            "                         [--plugin LIB.so]...\n"
            "\n"
            "Checks backends of one op the way ggml's test-backend-ops does: every row of the op's table (the\n"
            "rows parity's own tests use; with --device cuda also the GPU-only rows) plus the shapes you give,\n"
            "forward and every gradient, against eager in fp64 on the same inputs (rounded to the dtype\n"
            "checked). Per output and input gradient: nmse = ||c - t||^2 / ||t||^2, max rel = max|c - t| /\n"
            "max|t|, and ratio = max|c - t| / (2 max|eager - t| + floor max|t|): at most 2x the error of eager\n"
            "in the same dtype (flash-attention's rule; the op tests' floors: bf16 1e-3, fp32 1e-6, fp64\n"
            "1e-12). A row fails on NaN/Inf (named first), on a write outside a tensor (%d sentinel bytes on\n"
            "each side of every tensor the backend writes, on its device), on a ratio above 1, or when a\n"
            "backend that claims determinism differs between runs. A backend that refuses a row or a dtype is\n"
            "\"not supported\", with its reason: a third outcome, never a pass.\n"
            "\n"
            "  OP                    an op with rows: rms_norm, attention, ... (parity list backends names them);\n"
            "                        all = every op, each with its own table (one that has nothing to check\n"
            "                        here, say only the reference's eager, is a \"skipped\" line)\n"
            "  --backend L           backends to check (repeatable, comma-separated; default: every backend of\n"
            "                        the op on --device, test-only ones left out, eager too unless --device is\n"
            "                        the reference device; one that cannot run on this device at all is a\n"
            "                        \"not supported\" line with the reason); a plugin's backends come with\n"
            "                        --plugin\n"
            "  --device D            where the backends run: cpu (default), cuda or cuda:N\n"
            "  --dtype L             bf16, fp32, fp64 (repeatable, comma-separated; default all three)\n"
            "  --shapes L            extra rows of the op's bench shape format, e.g. rms_norm 4096x4096\n"
            "                        (repeatable, comma-separated; `parity bench --help` lists the formats)\n"
            "  --filter GLOB         only rows whose name matches (fnmatch), e.g. 'offset*' or 'shape *'\n"
            "  --reference-device D  where eager computes the truth and its own error (default cpu; cuda is\n"
            "                        faster for large shapes: cuda eager is itself checked against cpu eager)\n"
            "  --repeats N           runs of each backend compared bitwise (default 2 for a backend that claims\n"
            "                        determinism, else 1: its column then says '-')\n"
            "  --seed N              the inputs' Philox seed (default 1234, what the tests use)\n"
            "  --tensors             a line per tensor under each verdict\n"
            "  --with-test-backends  also register the deliberately wrong backends of ops/testing/ (proof that\n"
            "                        the check sees their bugs; name them with --backend)\n"
            "  --json                print the report as JSON instead of the table\n"
            "  --output FILE         also write the JSON report to FILE (atomically)\n"
            "\n"
            "exit status: 0 nothing failed (and something was checked); 1 a row failed; 2 usage error, unknown\n"
            "             op or backend, a backend that cannot run here, no row left to check; 3 a device failure\n"
            "             or an unwritable --output\n",
            OP_CHECK_GUARD_BYTES);
}

// The comma-separated items of repeated options (--backend, --shapes): copies of the values, which
// the items point into.
typedef struct option_list {
    char text[1024];
    size_t used; // bytes of text taken, each copy with its terminator
    const char *items[MAX_BACKENDS > MAX_SHAPES ? MAX_BACKENDS : MAX_SHAPES];
    size_t count, capacity;
} option_list;

typedef struct check_arguments {
    const char *op;
    option_list backends; // items: the backend names
    parity_device device, reference_device;
    parity_dtype dtypes[3];
    size_t dtype_count;
    option_list shapes;   // items: the shapes, in the op's bench format
    const char *filter;
    int repeats;
    uint64_t seed;
    bool tensors, json, with_test_backends;
    const char *output;
} check_arguments;

static bool split_list(const char *option, const char *value, option_list *list) {
    size_t length = strlen(value);
    if (list->used + length + 1 > sizeof list->text) {
        fprintf(stderr, "parity check: %s lists too much\n", option);
        return false;
    }
    char *copy = list->text + list->used;
    memcpy(copy, value, length + 1);
    list->used += length + 1;
    char *saveptr = NULL;
    size_t before = list->count;
    for (char *item = strtok_r(copy, ",", &saveptr); item; item = strtok_r(NULL, ",", &saveptr)) {
        if (list->count == list->capacity) {
            fprintf(stderr, "parity check: at most %zu entries in %s\n", list->capacity, option);
            return false;
        }
        list->items[list->count++] = item;
    }
    if (list->count == before) {
        fprintf(stderr, "parity check: %s '%s' names nothing\n", option, value);
        return false;
    }
    return true;
}

static bool add_dtypes(const char *value, check_arguments *arguments) {
    char text[64];
    if (strlen(value) >= sizeof text) {
        fprintf(stderr, "parity check: --dtype '%s' is not a list of bf16, fp32 and fp64\n", value);
        return false;
    }
    snprintf(text, sizeof text, "%s", value);
    char *saveptr = NULL;
    for (char *name = strtok_r(text, ",", &saveptr); name; name = strtok_r(NULL, ",", &saveptr)) {
        parity_dtype dtype;
        if (!parity_dtype_parse(name, &dtype) || !(dtype == PARITY_BF16 || dtype == PARITY_F32 || dtype == PARITY_F64)) {
            fprintf(stderr, "parity check: --dtype '%s' is not bf16, fp32 or fp64\n", name);
            return false;
        }
        bool known = false;
        for (size_t i = 0; i < arguments->dtype_count; i++) known |= arguments->dtypes[i] == dtype;
        if (!known) arguments->dtypes[arguments->dtype_count++] = dtype;
    }
    return true;
}

static bool parse_device(const char *option, const char *value, parity_device *out) {
    if (parity_device_parse(value, out) && (out->type == PARITY_DEVICE_CPU || out->type == PARITY_DEVICE_CUDA)) return true;
    fprintf(stderr, "parity check: %s '%s' is not a device (cpu, cuda, cuda:N)\n", option, value);
    return false;
}

static bool parse_integer(const char *option, const char *value, unsigned long long maximum, uint64_t *out) {
    char *end = NULL;
    errno = 0;
    unsigned long long parsed = *value && *value != '-' ? strtoull(value, &end, 10) : 0;
    if (!end || *end || errno || parsed < 1 || parsed > maximum) {
        fprintf(stderr, "parity check: %s '%s' is not an integer in [1, %llu]\n", option, value, maximum);
        return false;
    }
    *out = parsed;
    return true;
}

static int parse_arguments(int argc, char **argv, check_arguments *arguments) {
    memset(arguments, 0, sizeof *arguments);
    arguments->device = PARITY_CPU;
    arguments->reference_device = PARITY_CPU;
    arguments->seed = 1234;
    arguments->backends.capacity = MAX_BACKENDS;
    arguments->shapes.capacity = MAX_SHAPES;
    if (argc < 3 || strcmp(argv[1], "op") != 0) {
        fprintf(stderr, "parity check: expected 'parity check op OP ...' (see parity check --help)\n");
        return PARITY_EXIT_CONFIG;
    }
    arguments->op = argv[2];
    for (int i = 3; i < argc; i++) {
        const char *value = NULL;
        parity_cli_option_match match = PARITY_CLI_OPTION_NO_MATCH;
#define OPTION(name) ((match = parity_cli_option_value(argc, argv, &i, (name), &value)) != PARITY_CLI_OPTION_NO_MATCH)
        if (OPTION("--backend") || OPTION("--backends")) {
            if (match == PARITY_CLI_OPTION_MATCHED && !split_list("--backend", value, &arguments->backends))
                return PARITY_EXIT_CONFIG;
        } else if (OPTION("--device")) {
            if (match == PARITY_CLI_OPTION_MATCHED && !parse_device("--device", value, &arguments->device))
                return PARITY_EXIT_CONFIG;
        } else if (OPTION("--reference-device")) {
            if (match == PARITY_CLI_OPTION_MATCHED && !parse_device("--reference-device", value, &arguments->reference_device))
                return PARITY_EXIT_CONFIG;
        } else if (OPTION("--dtype")) {
            if (match == PARITY_CLI_OPTION_MATCHED && !add_dtypes(value, arguments)) return PARITY_EXIT_CONFIG;
        } else if (OPTION("--shapes") || OPTION("--shape")) {
            if (match == PARITY_CLI_OPTION_MATCHED && !split_list("--shapes", value, &arguments->shapes))
                return PARITY_EXIT_CONFIG;
        } else if (OPTION("--filter")) {
            arguments->filter = value;
        } else if (OPTION("--repeats")) {
            uint64_t parsed = 0;
            if (match == PARITY_CLI_OPTION_MATCHED && !parse_integer("--repeats", value, 1000, &parsed))
                return PARITY_EXIT_CONFIG;
            arguments->repeats = (int)parsed;
        } else if (OPTION("--seed")) {
            if (match == PARITY_CLI_OPTION_MATCHED && !parse_integer("--seed", value, UINT64_MAX, &arguments->seed))
                return PARITY_EXIT_CONFIG;
        } else if (OPTION("--output")) {
            arguments->output = value;
        } else if (strcmp(argv[i], "--tensors") == 0) {
            arguments->tensors = true;
        } else if (strcmp(argv[i], "--with-test-backends") == 0) {
            arguments->with_test_backends = true;
        } else if (strcmp(argv[i], "--json") == 0) {
            arguments->json = true;
        } else {
            fprintf(stderr, "parity check: unknown argument '%s' (see parity check --help)\n", argv[i]);
            return PARITY_EXIT_CONFIG;
        }
        if (match == PARITY_CLI_OPTION_MISSING_VALUE) return PARITY_EXIT_CONFIG;
#undef OPTION
    }
    if (!arguments->dtype_count) {
        arguments->dtypes[0] = PARITY_BF16;
        arguments->dtypes[1] = PARITY_F32;
        arguments->dtypes[2] = PARITY_F64;
        arguments->dtype_count = 3;
    }
    return PARITY_EXIT_OK;
}

// ---- what to check ----

typedef struct check_row {
    const op_check_case *test_case;
    parity_bench_check_case shape_case; // a --shapes row (test_case points into it)
    bool is_shape;
} check_row;

typedef struct check_plan {
    const parity_op_descriptor *op;
    const char *backends[MAX_BACKENDS];
    size_t backend_count;
    // default backends that cannot run on this device at all (flash_attention_4 on an SM90): each is one
    // "not supported" line with the reason, not an error (a backend named with --backend is an error)
    const char *unavailable[MAX_BACKENDS];
    char unavailable_reason[MAX_BACKENDS][256];
    size_t unavailable_count;
    check_row *rows;
    size_t row_count;
} check_plan;

static void plan_release(check_plan *plan) {
    for (size_t r = 0; r < plan->row_count; r++)
        if (plan->rows[r].is_shape) parity_bench_check_case_release(&plan->rows[r].shape_case);
    free(plan->rows);
    memset(plan, 0, sizeof *plan);
}

static bool row_selected(const check_arguments *arguments, const char *name) {
    return !arguments->filter || fnmatch(arguments->filter, name, 0) == 0;
}

static parity_error *add_row(check_plan *plan, const op_check_case *test_case) {
    PARITY_CHECK(plan->row_count < MAX_ROWS, PARITY_ERROR_USAGE, "check %s: more than %d rows", plan->op->name, MAX_ROWS);
    plan->rows[plan->row_count++] = (check_row){.test_case = test_case};
    return NULL;
}

static void add_list_rows(const check_arguments *arguments, check_plan *plan, const op_case_list *const *lists, size_t count,
                          parity_error **error) {
    for (size_t l = 0; l < count && !*error; l++)
        for (size_t r = 0; r < lists[l]->count && !*error; r++) {
            const op_check_case *test_case = &lists[l]->cases[r];
            if (test_case->op == plan->op && row_selected(arguments, test_case->name)) *error = add_row(plan, test_case);
        }
}

static parity_error *plan_rows(const check_arguments *arguments, check_plan *plan) {
    plan->rows = calloc(MAX_ROWS, sizeof *plan->rows);
    if (!plan->rows) return PARITY_ERROR(PARITY_ERROR_MEMORY, "check: rows");
    parity_error *error = NULL;
    add_list_rows(arguments, plan, all_op_cases, all_op_case_list_count, &error);
    if (arguments->device.type == PARITY_DEVICE_CUDA)
        add_list_rows(arguments, plan, all_gpu_op_cases, all_gpu_op_case_list_count, &error);
    if (error || !arguments->shapes.count) return error;
    const parity_bench_op *bench = parity_bench_find_op(plan->op->name);
    if (!bench) {
        char known[512] = "";
        for (size_t i = 0; i < parity_bench_op_count(); i++)
            snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "",
                     parity_bench_op_at(i)->descriptor->name);
        return PARITY_ERROR(PARITY_ERROR_USAGE, "check %s: the op has no shape format, so --shapes cannot be used (ops "
                            "that have one: %s)", plan->op->name, known);
    }
    for (size_t s = 0; s < arguments->shapes.count; s++) {
        parity_bench_shape shape;
        PARITY_TRY(parity_bench_parse_shape(bench, arguments->shapes.items[s], &shape));
        char text[64], name[96];
        snprintf(name, sizeof name, "shape %s", parity_bench_shape_string(&shape, text, sizeof text));
        if (!row_selected(arguments, name)) continue;
        PARITY_CHECK(plan->row_count < MAX_ROWS, PARITY_ERROR_USAGE, "check %s: more than %d rows", plan->op->name, MAX_ROWS);
        check_row *row = &plan->rows[plan->row_count];
        // the inputs are made once, in bf16 when bf16 is checked (their values then exact in every dtype)
        parity_dtype made_in = PARITY_F64;
        for (size_t d = 0; d < arguments->dtype_count; d++)
            if (arguments->dtypes[d] == PARITY_BF16) made_in = PARITY_BF16;
            else if (arguments->dtypes[d] == PARITY_F32 && made_in == PARITY_F64) made_in = PARITY_F32;
        PARITY_TRY(parity_bench_check_case_for_shape(&row->shape_case, bench, &shape, made_in));
        row->is_shape = true;
        row->test_case = &row->shape_case.test_case;
        plan->row_count++;
    }
    return NULL;
}

// The backends: the named ones, each registered for the op on the device and able to run here, or
// every such backend (test-only ones left out, eager when it would be checked against itself).
static parity_error *plan_backends(const check_arguments *arguments, check_plan *plan) {
    char where[32];
    parity_device_format(arguments->device, where, sizeof where);
    if (arguments->backends.count) {
        for (size_t b = 0; b < arguments->backends.count; b++) {
            const char *name = arguments->backends.items[b];
            if (!parity_registry_find(plan->op->name, name, arguments->device.type)) {
                char known[512] = "";
                for (size_t i = 0; i < parity_registry_count(); i++) {
                    const parity_backend *backend = parity_registry_at(i);
                    if (backend->device == arguments->device.type && strcmp(backend->op, plan->op->name) == 0)
                        snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", known[0] ? ", " : "",
                                 backend->name);
                }
                return PARITY_ERROR(PARITY_ERROR_USAGE, "check %s: no backend '%s' on %s (registered there: %s)",
                                    plan->op->name, name, where, known[0] ? known : "none");
            }
            plan->backends[plan->backend_count++] = name;
        }
    } else {
        bool eager_is_reference = parity_device_equal(arguments->device, arguments->reference_device);
        for (size_t i = 0; i < parity_registry_count() && plan->backend_count < MAX_BACKENDS; i++) {
            const parity_backend *backend = parity_registry_at(i);
            if (backend->device != arguments->device.type || strcmp(backend->op, plan->op->name) != 0) continue;
            if (backend->capabilities & PARITY_CAP_TEST_ONLY) continue;
            if (eager_is_reference && strcmp(backend->name, "eager") == 0) continue;
            plan->backends[plan->backend_count++] = backend->name;
        }
        PARITY_CHECK(plan->backend_count > 0, PARITY_ERROR_USAGE,
                     "check %s: no backend to check on %s (eager there is the reference; name it with --backend eager to "
                     "check it anyway)", plan->op->name, where);
    }
    size_t kept = 0;
    for (size_t b = 0; b < plan->backend_count; b++) {
        char reason[256];
        if (parity_registry_availability(plan->op->name, plan->backends[b], arguments->device, NULL, reason, sizeof reason) ==
            PARITY_AVAILABLE) {
            plan->backends[kept++] = plan->backends[b];
            continue;
        }
        if (arguments->backends.count)
            return PARITY_ERROR(PARITY_ERROR_UNAVAILABLE, "check %s: backend %s cannot run on %s: %s", plan->op->name,
                                plan->backends[b], where, reason);
        plan->unavailable[plan->unavailable_count] = plan->backends[b];
        snprintf(plan->unavailable_reason[plan->unavailable_count++], sizeof plan->unavailable_reason[0], "%s", reason);
    }
    plan->backend_count = kept;
    PARITY_CHECK(kept > 0, PARITY_ERROR_UNAVAILABLE, "check %s: no backend of the op can run on %s (%s: %s)", plan->op->name,
                 where, plan->unavailable[0], plan->unavailable_reason[0]);
    char reason[256];
    if (parity_registry_availability(plan->op->name, "eager", arguments->reference_device, NULL, reason, sizeof reason) !=
        PARITY_AVAILABLE) {
        parity_device_format(arguments->reference_device, where, sizeof where);
        return PARITY_ERROR(PARITY_ERROR_UNAVAILABLE, "check %s: the reference, eager on %s, cannot run: %s", plan->op->name,
                            where, reason);
    }
    return NULL;
}

// ---- reporting ----

typedef struct check_counts {
    int pass, fail, unsupported;
} check_counts;

static void print_header(void) {
    printf("%-20s %-5s %-13s %-10s %8s %10s %10s %-4s %s\n", "backend", "dtype", "outcome", "worst", "ratio", "nmse",
           "max rel", "det", "row");
}

static const char *determinism_text(const op_verdict *verdict, char *buffer, size_t size) {
    if (verdict->outcome == OP_VERDICT_UNSUPPORTED || verdict->repeats < 2) snprintf(buffer, size, "-");
    else if (verdict->deterministic) snprintf(buffer, size, "yes");
    else snprintf(buffer, size, verdict->claims_deterministic ? "NO" : "no");
    return buffer;
}

static void print_verdict(const check_arguments *arguments, const char *backend, parity_dtype dtype, const char *row,
                          const op_verdict *verdict) {
    char det[8];
    const op_verdict_tensor *worst = verdict->worst >= 0 ? &verdict->tensors[verdict->worst] : NULL;
    if (verdict->outcome == OP_VERDICT_UNSUPPORTED || !worst)
        printf("%-20s %-5s %-13s %-10s %8s %10s %10s %-4s %s\n", backend, parity_dtype_name(dtype),
               op_verdict_outcome_name(verdict->outcome), "-", "-", "-", "-", determinism_text(verdict, det, sizeof det), row);
    else
        printf("%-20s %-5s %-13s %-10s %8.3f %10.2e %10.2e %-4s %s\n", backend, parity_dtype_name(dtype),
               op_verdict_outcome_name(verdict->outcome), worst->tensor, worst->ratio, worst->nmse, worst->max_relative,
               determinism_text(verdict, det, sizeof det), row);
    if (verdict->outcome != OP_VERDICT_PASS) printf("    %s: %s\n", verdict->outcome == OP_VERDICT_FAIL ? "why" : "reason", verdict->reason);
    if (arguments->tensors && verdict->outcome != OP_VERDICT_UNSUPPORTED)
        for (int t = 0; t < verdict->tensor_count; t++) {
            const op_verdict_tensor *entry = &verdict->tensors[t];
            printf("    %-12s ratio %8.3f  nmse %10.3e  max rel %10.3e  eager max rel %10.3e\n", entry->tensor, entry->ratio,
                   entry->nmse, entry->max_relative, entry->eager_max_relative);
        }
    fflush(stdout);
}

static cJSON *number_or_null(double value) { return isfinite(value) ? cJSON_CreateNumber(value) : cJSON_CreateNull(); }

static void add_json_verdict(cJSON *results, const char *backend, parity_dtype dtype, const char *row,
                             const op_verdict *verdict) {
    cJSON *entry = cJSON_CreateObject();
    cJSON_AddStringToObject(entry, "backend", backend);
    cJSON_AddStringToObject(entry, "dtype", parity_dtype_name(dtype));
    cJSON_AddStringToObject(entry, "row", row);
    cJSON_AddStringToObject(entry, "outcome", verdict->outcome == OP_VERDICT_PASS ? "pass"
                                              : verdict->outcome == OP_VERDICT_FAIL ? "fail"
                                                                                    : "not_supported");
    cJSON_AddStringToObject(entry, "reason", verdict->reason);
    cJSON_AddStringToObject(entry, "non_finite", verdict->non_finite);
    cJSON_AddStringToObject(entry, "out_of_bounds", verdict->guard_damage);
    cJSON_AddNumberToObject(entry, "repeats", verdict->repeats);
    cJSON_AddBoolToObject(entry, "claims_deterministic", verdict->claims_deterministic);
    if (verdict->repeats >= 2) cJSON_AddBoolToObject(entry, "deterministic", verdict->deterministic);
    else cJSON_AddNullToObject(entry, "deterministic");
    cJSON_AddStringToObject(entry, "differing", verdict->differing);
    cJSON *tensors = cJSON_AddArrayToObject(entry, "tensors");
    for (int t = 0; t < verdict->tensor_count; t++) {
        const op_verdict_tensor *item = &verdict->tensors[t];
        cJSON *tensor = cJSON_CreateObject();
        cJSON_AddStringToObject(tensor, "tensor", item->tensor);
        cJSON_AddItemToObject(tensor, "nmse", number_or_null(item->nmse));
        cJSON_AddItemToObject(tensor, "max_relative", number_or_null(item->max_relative));
        cJSON_AddItemToObject(tensor, "eager_max_relative", number_or_null(item->eager_max_relative));
        cJSON_AddItemToObject(tensor, "ratio", number_or_null(item->ratio));
        cJSON_AddItemToArray(tensors, tensor);
    }
    cJSON_AddItemToArray(results, entry);
}

static void count(check_counts *counts, const op_verdict *verdict) {
    if (verdict->outcome == OP_VERDICT_PASS) counts->pass++;
    else if (verdict->outcome == OP_VERDICT_FAIL) counts->fail++;
    else counts->unsupported++;
}

// Every row x dtype x backend. A backend that does not take a dtype at all is one "not supported"
// line for that dtype, not one per row.
static parity_error *check_all(const check_arguments *arguments, const check_plan *plan, cJSON *results, check_counts *counts) {
    for (size_t u = 0; u < plan->unavailable_count; u++) {
        op_verdict verdict = {.outcome = OP_VERDICT_UNSUPPORTED, .worst = -1, .repeats = 1};
        snprintf(verdict.reason, sizeof verdict.reason, "cannot run here: %s", plan->unavailable_reason[u]);
        for (size_t d = 0; d < arguments->dtype_count; d++) {
            if (!arguments->json) print_verdict(arguments, plan->unavailable[u], arguments->dtypes[d], "(every row)", &verdict);
            add_json_verdict(results, plan->unavailable[u], arguments->dtypes[d], "(every row)", &verdict);
            count(counts, &verdict);
        }
    }
    for (size_t d = 0; d < arguments->dtype_count; d++) {
        parity_dtype dtype = arguments->dtypes[d];
        bool takes[MAX_BACKENDS];
        size_t taking = 0;
        for (size_t b = 0; b < plan->backend_count; b++) {
            parity_backend_check check;
            parity_backend_need need = {.dtype = dtype};
            takes[b] = parity_registry_check(plan->op->name, plan->backends[b], arguments->device, NULL, &need, &check) ==
                       PARITY_AVAILABLE;
            if (takes[b]) {
                taking++;
                continue;
            }
            op_verdict verdict = {.outcome = OP_VERDICT_UNSUPPORTED, .worst = -1, .repeats = 1};
            snprintf(verdict.reason, sizeof verdict.reason, "%s", check.reason);
            if (!arguments->json) print_verdict(arguments, plan->backends[b], dtype, "(every row)", &verdict);
            add_json_verdict(results, plan->backends[b], dtype, "(every row)", &verdict);
            count(counts, &verdict);
        }
        for (size_t r = 0; r < plan->row_count && taking; r++) {
            const op_check_case *test_case = plan->rows[r].test_case;
            op_verdict_reference reference;
            PARITY_TRY_CONTEXT(op_verdict_reference_run(test_case, dtype, arguments->reference_device, arguments->seed, &reference),
                               "check %s [%s] %s", plan->op->name, test_case->name, parity_dtype_name(dtype));
            parity_error *error = NULL;
            for (size_t b = 0; b < plan->backend_count && !error; b++) {
                if (!takes[b]) continue;
                op_verdict verdict;
                op_verdict_options options = {.backend = plan->backends[b], .device = arguments->device, .dtype = dtype,
                                              .reference_device = arguments->reference_device,
                                              .repeats = arguments->repeats, .seed = arguments->seed};
                error = op_verdict_judge(test_case, options, &reference, &verdict);
                if (error) {
                    error = parity_error_wrap(error, __FILE__, __LINE__, "check %s [%s] %s with %s", plan->op->name,
                                              test_case->name, parity_dtype_name(dtype), plan->backends[b]);
                    break;
                }
                if (!arguments->json) print_verdict(arguments, plan->backends[b], dtype, test_case->name, &verdict);
                add_json_verdict(results, plan->backends[b], dtype, test_case->name, &verdict);
                count(counts, &verdict);
            }
            op_verdict_reference_release(&reference);
            if (error) return error;
        }
    }
    return NULL;
}

// Plans and checks one op into `results` (its verdicts) and `counts`. In a run over every op
// (`all`), an op with nothing to check here (only the reference's eager, none of the named
// backends, no row the filter keeps) is skipped with a line, not an error.
static parity_error *check_op(const check_arguments *arguments, const parity_op_descriptor *op, bool all, cJSON *results,
                              check_counts *counts, bool *checked) {
    *checked = false;
    check_plan plan = {.op = op};
    if (all && arguments->backends.count) {
        bool has_one = false;
        for (size_t b = 0; b < arguments->backends.count && !has_one; b++)
            has_one = parity_registry_find(op->name, arguments->backends.items[b], arguments->device.type) != NULL;
        if (!has_one) return NULL;
    }
    parity_error *error = plan_backends(arguments, &plan);
    if (!error) error = plan_rows(arguments, &plan);
    if (!error && plan.row_count == 0)
        error = PARITY_ERROR(PARITY_ERROR_USAGE, "check %s: no row to check%s%s%s", op->name,
                             arguments->filter ? " (--filter '" : "", arguments->filter ? arguments->filter : "",
                             arguments->filter ? "' matches none)" : "");
    if (error && all && parity_error_kind_of(error) != PARITY_ERROR_DEVICE && parity_error_kind_of(error) != PARITY_ERROR_MEMORY) {
        if (!arguments->json) printf("skipped: %s\n\n", parity_error_message(error));
        parity_error_free(error);
        plan_release(&plan);
        return NULL;
    }
    if (error) {
        plan_release(&plan);
        return error;
    }
    char device_text[32], reference_text[32];
    parity_device_format(arguments->device, device_text, sizeof device_text);
    parity_device_format(arguments->reference_device, reference_text, sizeof reference_text);
    if (!arguments->json) {
        printf("parity check op %s: %zu row%s x %zu dtype%s x %zu backend%s on %s, against eager fp64 on %s\n", op->name,
               plan.row_count, plan.row_count == 1 ? "" : "s", arguments->dtype_count, arguments->dtype_count == 1 ? "" : "s",
               plan.backend_count, plan.backend_count == 1 ? "" : "s", device_text, reference_text);
        print_header();
    }
    error = check_all(arguments, &plan, results, counts);
    plan_release(&plan);
    *checked = true;
    return error;
}

static void add_summary(cJSON *object, const check_counts *counts) {
    cJSON *summary = cJSON_AddObjectToObject(object, "summary");
    cJSON_AddNumberToObject(summary, "pass", counts->pass);
    cJSON_AddNumberToObject(summary, "fail", counts->fail);
    cJSON_AddNumberToObject(summary, "not_supported", counts->unsupported);
}

int parity_command_check(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            parity_command_check_usage(stdout);
            return PARITY_EXIT_OK;
        }
    check_arguments arguments;
    int status = parse_arguments(argc, argv, &arguments);
    if (status != PARITY_EXIT_OK) return status;

    if (arguments.with_test_backends) {
        parity_error *error = parity_test_backends_register();
        if (error) return parity_cli_report_error("check", error);
    }
    bool all = strcmp(arguments.op, "all") == 0;
    const parity_op_descriptor *single = all ? NULL : parity_builtin_op_find(arguments.op);
    if (!all && !single) {
        char known[1024] = "";
        for (size_t i = 0; i < parity_builtin_op_count(); i++)
            snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "", parity_builtin_op_at(i)->name);
        fprintf(stderr, "parity check: unknown op '%s' (ops: %s; all = every one)\n", arguments.op, known);
        return PARITY_EXIT_CONFIG;
    }
    if (all && arguments.shapes.count) {
        fprintf(stderr, "parity check: --shapes needs a single op (shape formats differ from op to op)\n");
        return PARITY_EXIT_CONFIG;
    }

    char device_text[32], reference_text[32];
    parity_device_format(arguments.device, device_text, sizeof device_text);
    parity_device_format(arguments.reference_device, reference_text, sizeof reference_text);
    cJSON *report = cJSON_CreateObject();
    cJSON_AddStringToObject(report, "op", arguments.op);
    cJSON_AddStringToObject(report, "device", device_text);
    cJSON_AddStringToObject(report, "reference_device", reference_text);
    cJSON_AddNumberToObject(report, "seed", (double)arguments.seed);
    cJSON *results = all ? NULL : cJSON_AddArrayToObject(report, "results");
    cJSON *ops = all ? cJSON_AddArrayToObject(report, "ops") : NULL;
    check_counts counts = {0};
    parity_error *error = NULL;
    size_t checked_ops = 0;
    for (size_t i = 0; !error && i < (all ? parity_builtin_op_count() : 1); i++) {
        const parity_op_descriptor *op = all ? parity_builtin_op_at(i) : single;
        check_counts op_counts = {0};
        cJSON *op_report = NULL, *op_results = results;
        if (all) {
            op_report = cJSON_CreateObject();
            cJSON_AddStringToObject(op_report, "op", op->name);
            op_results = cJSON_AddArrayToObject(op_report, "results");
        }
        bool checked;
        error = check_op(&arguments, op, all, op_results, &op_counts, &checked);
        if (all && checked) {
            add_summary(op_report, &op_counts);
            cJSON_AddItemToArray(ops, op_report);
            if (!arguments.json)
                printf("%s: %d pass, %d FAIL, %d not supported\n\n", op->name, op_counts.pass, op_counts.fail,
                       op_counts.unsupported);
        } else if (all) cJSON_Delete(op_report);
        checked_ops += checked;
        counts.pass += op_counts.pass;
        counts.fail += op_counts.fail;
        counts.unsupported += op_counts.unsupported;
    }
    if (!error && all && !checked_ops)
        error = PARITY_ERROR(PARITY_ERROR_USAGE, "check all: no op has a backend and a row to check on %s", device_text);
    add_summary(report, &counts);
    if (error) {
        cJSON_Delete(report);
        return parity_cli_report_error("check", error);
    }
    char *text = cJSON_Print(report);
    cJSON_Delete(report);
    if (!text) return parity_cli_report_error("check", PARITY_ERROR(PARITY_ERROR_MEMORY, "the JSON report"));
    if (arguments.json) printf("%s\n", text);
    else if (all)
        printf("%zu op%s checked: %d pass, %d FAIL, %d not supported\n", checked_ops, checked_ops == 1 ? "" : "s", counts.pass,
               counts.fail, counts.unsupported);
    else printf("%d pass, %d FAIL, %d not supported\n", counts.pass, counts.fail, counts.unsupported);
    if (arguments.output) {
        error = parity_write_file_atomic(arguments.output, text, strlen(text), true);
        if (error) {
            free(text);
            return parity_cli_report_error("check", error);
        }
    }
    free(text);
    if (counts.fail) return PARITY_EXIT_FAILURES;
    if (!counts.pass) {
        fprintf(stderr, "parity check: nothing was checked: every verdict is \"not supported\"\n");
        return PARITY_EXIT_CONFIG;
    }
    return PARITY_EXIT_OK;
}
