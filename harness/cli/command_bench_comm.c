// command_bench_comm.c: `parity bench comm`: the collectives of ops/core/comm.h over the ranks this
// process was launched with (mpirun / srun), or over N ranks it launches itself with --ranks N,
// timed and checked as nccl-tests does (harness/bench/bench_comm.h): on host buffers over MPI
// (--device cpu, the default) or on device buffers over NCCL (--device cuda: one GPU a rank, the
// local rank's; comm_nccl.h). Rank 0 prints the table; every rank prints its own errors, naming
// itself. --device cuda where it cannot run (no GPU, no NCCL, a build without CUDA) is exit 2 with
// the reason, never the cpu path instead.
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/bench/bench_comm.h"
#include "harness/cli/cli_support.h"
#include "harness/cli/commands.h"
#include "ops/core/comm.h"
#include "ops/core/comm_nccl.h"
#include "ops/core/device.h"

void parity_command_bench_comm_usage(FILE *stream) {
    fprintf(stream,
            "usage: parity bench comm [--device cpu|cuda] [--ranks N] [--collectives a,b,...] [--dtype fp32|fp64|bf16]\n"
            "                         [--min-bytes B] [--max-bytes B] [--factor F] [--iters N] [--warmup N] [--json]\n"
            "\n"
            "Times the collectives parity's multi-rank layouts use between the ranks of this run, the way\n"
            "nccl-tests reports them: per collective and message size the median time of a call (the\n"
            "slowest rank's, a barrier before each), the algorithm bandwidth (size / time), the bus bandwidth\n"
            "(algbw x 2(n-1)/n for all_reduce, (n-1)/n for all_gather, reduce_scatter and all_to_all, 1 for\n"
            "broadcast) and #wrong: the elements of every rank's result that differ from the exact expected\n"
            "values (each rank sends small integers, exact in every dtype and their sums). Sums are in rank\n"
            "order, the same on every rank and every run. Launch it with mpirun -np N (or srun), or let it\n"
            "launch itself with --ranks N.\n"
            "\n"
            "  --device D        cpu (default): host buffers over MPI, wall-clock time. cuda: device buffers over\n"
            "                    NCCL, one GPU a rank (the local rank's, modulo the devices; cuda:N: that one),\n"
            "                    CUDA events around each call; all_reduce and reduce_scatter keep the rank-order\n"
            "                    sums (NCCL gathers, a kernel adds), and the table adds NCCL's own reductions,\n"
            "                    all_reduce_native and reduce_scatter_native (no order promised). Exit 2 where\n"
            "                    it cannot run (no GPU, no libnccl.so.2, a build without CUDA)\n"
            "  --ranks N         when not started by a launcher: run under `mpirun -np N --oversubscribe`\n"
            "  --collectives L   comma-separated, default all_reduce,all_gather,reduce_scatter,all_to_all,broadcast\n"
            "                    (and on cuda all_reduce_native,reduce_scatter_native)\n"
            "  --with-test-collectives  add all_reduce_wrong_group, which reduces over the wrong group (all but\n"
            "                    the last rank) and must show #wrong > 0: a check of the checker\n"
            "  --dtype T         fp32 (default), fp64 or bf16 (bf16 up to 16 ranks)\n"
            "  --min-bytes B     smallest message, bytes, with an optional K, M or G suffix (default 1K)\n"
            "  --max-bytes B     largest message (default 16M on the cpu, 1G on cuda); sizes are min,\n"
            "                    min x factor, ... up to max\n"
            "  --factor F        size step (default 2)\n"
            "  --iters N         timed calls per row (default 20)\n"
            "  --warmup N        untimed calls first (default 5)\n"
            "  --json            print the rows as JSON instead of the table\n"
            "\n"
            "PARITY_COMM_TIMEOUT_S (default 40): how long a rank waits for the others in a collective before it\n"
            "stops with an error naming the collective and itself (on cuda the NCCL communicator is aborted).\n"
            "\n"
            "exit status: 0 every #wrong is 0; 1 some collective gave wrong values; 2 usage error, or --device\n"
            "             cuda where it cannot run; 3 an MPI, NCCL, CUDA or launch failure (the message names the\n"
            "             rank and the collective)\n");
}

typedef struct comm_arguments {
    const parity_bench_collective *collectives[16];
    int collective_count;
    bool test_collectives, json, max_given;
    bool local_device; // --device cuda: the local rank's GPU, chosen once the ranks are up
    int ranks;
    parity_bench_comm_options options;
} comm_arguments;

static bool parse_bytes(const char *text, int64_t *out) {
    char *end;
    errno = 0;
    long long value = strtoll(text, &end, 10);
    if (end == text || errno || value <= 0) return false;
    int64_t scale = 1;
    if (*end == 'K' || *end == 'k') scale = 1024, end++;
    else if (*end == 'M' || *end == 'm') scale = 1024 * 1024, end++;
    else if (*end == 'G' || *end == 'g') scale = 1024 * 1024 * 1024, end++;
    if (*end || value > INT64_MAX / scale / 4) return false;
    *out = value * scale;
    return true;
}

static bool parse_int(const char *text, int minimum, int *out) {
    char *end;
    errno = 0;
    long value = strtol(text, &end, 10);
    if (end == text || *end || errno || value < minimum || value > 1000000) return false;
    *out = (int)value;
    return true;
}

static int parse_arguments(int argc, char **argv, comm_arguments *arguments) {
    parity_bench_comm_options *options = &arguments->options;
    options->device = PARITY_CPU;
    options->dtype = PARITY_F32;
    options->min_bytes = 1024;
    options->max_bytes = 16 * 1024 * 1024;
    options->factor = 2;
    options->iterations = 20;
    options->warmup = 5;
    arguments->ranks = 1;
    char names[512];
    for (int i = 2; i < argc; i++) {
        const char *value = NULL;
        parity_cli_option_match match = PARITY_CLI_OPTION_NO_MATCH;
#define OPTION(name) ((match = parity_cli_option_value(argc, argv, &i, (name), &value)) != PARITY_CLI_OPTION_NO_MATCH)
#define BAD(...) (fprintf(stderr, "parity bench comm: " __VA_ARGS__), fputc('\n', stderr), PARITY_EXIT_CONFIG)
        if (strcmp(argv[i], "--json") == 0) {
            arguments->json = true;
            continue;
        }
        if (strcmp(argv[i], "--with-test-collectives") == 0) {
            arguments->test_collectives = true;
            continue;
        }
        if (OPTION("--device")) {
            if (match != PARITY_CLI_OPTION_MATCHED) return PARITY_EXIT_CONFIG;
            char *end = NULL;
            if (strcmp(value, "cpu") == 0) {
                options->device = PARITY_CPU;
                arguments->local_device = false;
            } else if (strcmp(value, "cuda") == 0) {
                options->device = PARITY_CUDA(0);
                arguments->local_device = true;
            } else if (strncmp(value, "cuda:", 5) == 0 && value[5] >= '0' && value[5] <= '9' &&
                       strtol(value + 5, &end, 10) < 1024 && !*end) {
                options->device = PARITY_CUDA((int)strtol(value + 5, NULL, 10));
                arguments->local_device = false;
            } else {
                return BAD("--device '%s' is not cpu or cuda (cuda:N for one device)", value);
            }
        } else if (OPTION("--ranks")) {
            if (match != PARITY_CLI_OPTION_MATCHED) return PARITY_EXIT_CONFIG;
            if (!parse_int(value, 1, &arguments->ranks) || arguments->ranks > 1024)
                return BAD("--ranks '%s' is not a rank count in [1, 1024]", value);
        } else if (OPTION("--collectives")) {
            if (match != PARITY_CLI_OPTION_MATCHED) return PARITY_EXIT_CONFIG;
            snprintf(names, sizeof names, "%s", value);
            char *saveptr = NULL;
            for (char *name = strtok_r(names, ",", &saveptr); name; name = strtok_r(NULL, ",", &saveptr)) {
                const parity_bench_collective *collective = parity_bench_collective_find(name);
                if (!collective || (collective->test_only && !arguments->test_collectives)) {
                    fprintf(stderr, "parity bench comm: --collectives: '%s' is not one of", name);
                    for (size_t c = 0; c < parity_bench_collective_count(); c++)
                        if (!parity_bench_collective_at(c)->test_only)
                            fprintf(stderr, " %s", parity_bench_collective_at(c)->name);
                    fprintf(stderr, "%s\n", collective ? " (test-only ones need --with-test-collectives first)" : "");
                    return PARITY_EXIT_CONFIG;
                }
                if (arguments->collective_count == 16) return BAD("at most 16 collectives");
                arguments->collectives[arguments->collective_count++] = collective;
            }
            if (!arguments->collective_count) return BAD("--collectives '%s' names none", value);
        } else if (OPTION("--dtype")) {
            if (match != PARITY_CLI_OPTION_MATCHED) return PARITY_EXIT_CONFIG;
            if (!parity_dtype_parse(value, &options->dtype) ||
                (options->dtype != PARITY_F32 && options->dtype != PARITY_F64 && options->dtype != PARITY_BF16))
                return BAD("--dtype '%s' is not fp32, fp64 or bf16", value);
        } else if (OPTION("--min-bytes")) {
            if (match != PARITY_CLI_OPTION_MATCHED) return PARITY_EXIT_CONFIG;
            if (!parse_bytes(value, &options->min_bytes)) return BAD("--min-bytes '%s' is not a size (e.g. 1K, 64M)", value);
        } else if (OPTION("--max-bytes")) {
            if (match != PARITY_CLI_OPTION_MATCHED) return PARITY_EXIT_CONFIG;
            if (!parse_bytes(value, &options->max_bytes)) return BAD("--max-bytes '%s' is not a size (e.g. 1K, 64M)", value);
            arguments->max_given = true;
        } else if (OPTION("--factor")) {
            if (match != PARITY_CLI_OPTION_MATCHED) return PARITY_EXIT_CONFIG;
            if (!parse_int(value, 2, &options->factor)) return BAD("--factor '%s' is not an integer >= 2", value);
        } else if (OPTION("--iters")) {
            if (match != PARITY_CLI_OPTION_MATCHED) return PARITY_EXIT_CONFIG;
            if (!parse_int(value, 1, &options->iterations)) return BAD("--iters '%s' is not a positive integer", value);
        } else if (OPTION("--warmup")) {
            if (match != PARITY_CLI_OPTION_MATCHED) return PARITY_EXIT_CONFIG;
            if (!parse_int(value, 0, &options->warmup)) return BAD("--warmup '%s' is not an integer >= 0", value);
        } else {
            return BAD("unknown argument '%s' (see parity bench comm --help)", argv[i]);
        }
#undef OPTION
#undef BAD
    }
    const bool on_cuda = options->device.type == PARITY_DEVICE_CUDA;
    if (on_cuda && !arguments->max_given) options->max_bytes = (int64_t)1 << 30; // 1 KiB .. 1 GiB, as nccl-tests' sweeps
    if (options->max_bytes < options->min_bytes) {
        fprintf(stderr, "parity bench comm: --max-bytes is below --min-bytes\n");
        return PARITY_EXIT_CONFIG;
    }
    for (int c = 0; c < arguments->collective_count; c++)
        if (arguments->collectives[c]->cuda_only && !on_cuda) {
            fprintf(stderr, "parity bench comm: --collectives: %s is NCCL's own reduction: it needs --device cuda\n",
                    arguments->collectives[c]->name);
            return PARITY_EXIT_CONFIG;
        }
    if (arguments->test_collectives && arguments->collective_count == 0) {
        for (size_t c = 0; c < parity_bench_collective_count(); c++)
            if (on_cuda || !parity_bench_collective_at(c)->cuda_only)
                arguments->collectives[arguments->collective_count++] = parity_bench_collective_at(c);
    }
    if (arguments->collective_count) {
        options->collectives = arguments->collectives;
        options->collective_count = arguments->collective_count;
    }
    return PARITY_EXIT_OK;
}

// Where the rows ran, for the header and the JSON: "MPI on the cpu", or NCCL's version and rank 0's GPU.
typedef struct comm_place {
    char transport[32], device[32], gpu[256];
} comm_place;

static void describe_place(const parity_bench_comm_options *options, comm_place *place) {
    memset(place, 0, sizeof *place);
    if (options->device.type != PARITY_DEVICE_CUDA) {
        snprintf(place->transport, sizeof place->transport, "mpi");
        snprintf(place->device, sizeof place->device, "cpu");
        return;
    }
    int version = 0;
    parity_error_free(parity_nccl_version(&version));
    snprintf(place->transport, sizeof place->transport, "nccl %d.%d.%d", version / 10000, version / 100 % 100, version % 100);
    parity_device_format(options->device, place->device, sizeof place->device);
    parity_device_info info;
    parity_error *error = parity_device_query(options->device, &info);
    snprintf(place->gpu, sizeof place->gpu, "%s", error ? "" : info.name);
    parity_error_free(error);
}

static void print_rows(const parity_bench_comm_row *rows, int count, int ranks, const parity_bench_comm_options *options,
                       bool json) {
    const char *dtype = parity_dtype_name(options->dtype);
    comm_place place;
    describe_place(options, &place);
    if (json) {
        printf("{\"ranks\": %d, \"transport\": \"%s\", \"device\": \"%s\", ", ranks, place.transport, place.device);
        if (place.gpu[0]) printf("\"gpu\": \"%s\", ", place.gpu);
        printf("\"dtype\": \"%s\", \"iterations\": %d, \"warmup\": %d, \"rows\": [", dtype, options->iterations,
               options->warmup);
        for (int i = 0; i < count; i++)
            printf("%s\n  {\"collective\": \"%s\", \"bytes\": %" PRId64 ", \"count\": %" PRId64 ", \"median_us\": %.3f, "
                   "\"algbw_gbps\": %.4f, \"busbw_gbps\": %.4f, \"wrong\": %" PRId64 "}",
                   i ? "," : "", rows[i].collective, rows[i].bytes, rows[i].count, rows[i].median_us, rows[i].algorithm_gbps,
                   rows[i].bus_gbps, rows[i].wrong);
        printf("\n]}\n");
        return;
    }
    if (options->device.type == PARITY_DEVICE_CUDA)
        printf("# parity bench comm: %d ranks, NCCL %s on %s (rank 0: %s), device buffers, %s, median of %d calls after %d "
               "warm-up (CUDA events, the slowest rank's time); *_native: NCCL's own reduction, no order promised\n",
               ranks, place.transport + 5, place.device, place.gpu[0] ? place.gpu : "?", dtype, options->iterations,
               options->warmup);
    else
        printf("# parity bench comm: %d ranks, MPI on the cpu, %s, median of %d calls after %d warm-up (the slowest rank's "
               "time)\n",
               ranks, dtype, options->iterations, options->warmup);
    printf("#%13s %12s %6s  %-22s %12s %12s %12s %8s\n", "size (B)", "count", "type", "collective", "time (us)",
           "algbw (GB/s)", "busbw (GB/s)", "#wrong");
    for (int i = 0; i < count; i++)
        printf(" %13" PRId64 " %12" PRId64 " %6s  %-22s %12.2f %12.3f %12.3f %8" PRId64 "\n", rows[i].bytes, rows[i].count,
               dtype, rows[i].collective, rows[i].median_us, rows[i].algorithm_gbps, rows[i].bus_gbps, rows[i].wrong);
}

int parity_command_bench_comm(int argc, char **argv) {
    comm_arguments arguments;
    memset(&arguments, 0, sizeof arguments);
    int status = parse_arguments(argc, argv, &arguments);
    if (status != PARITY_EXIT_OK) return status;
    if (arguments.ranks > 1 && parity_comm_launched_size() == 1)
        return parity_cli_relaunch_ranks("bench comm", arguments.ranks, argc, argv, "--ranks");
    parity_comm *world = NULL;
    parity_error *error = parity_comm_world(&world);
    if (!error && arguments.ranks > 1 && parity_comm_size(world) != arguments.ranks)
        error = PARITY_ERROR(PARITY_ERROR_USAGE, "--ranks %d, but the launcher started %d ranks", arguments.ranks,
                             parity_comm_size(world));
    if (!error && arguments.options.device.type == PARITY_DEVICE_CUDA && !arguments.local_device && parity_comm_size(world) > 1)
        error = PARITY_ERROR(PARITY_ERROR_USAGE,
                             "--device cuda:%d would put all %d ranks on one GPU (NCCL needs one a rank): --device cuda "
                             "gives each rank its own",
                             arguments.options.device.index, parity_comm_size(world));
    // --device cuda: this rank's GPU, one a rank (UNAVAILABLE without one, or without CUDA: exit 2)
    if (!error && arguments.local_device) {
        int index = 0;
        error = parity_nccl_local_device(&index);
        if (!error) arguments.options.device.index = index;
    }
    // every rank must run the same sweep: its options (and the collectives' names) agreed first
    char work[1024];
    int used = snprintf(work, sizeof work, "%s %s %lld %lld %d %d %d",
                        parity_device_type_name(arguments.options.device.type), parity_dtype_name(arguments.options.dtype),
                        (long long)arguments.options.min_bytes, (long long)arguments.options.max_bytes,
                        arguments.options.factor, arguments.options.iterations, arguments.options.warmup);
    for (int c = 0; c < arguments.collective_count && used > 0 && (size_t)used < sizeof work; c++)
        used += snprintf(work + used, sizeof work - (size_t)used, " %s", arguments.collectives[c]->name);
    if (!error) error = parity_comm_check_agreement(world, "bench comm options", work, strlen(work));
    parity_bench_comm_row *rows = NULL;
    int count = 0;
    if (!error) error = parity_bench_comm_run(world, &arguments.options, &rows, &count);
    if (error) {
        char prefix[64];
        snprintf(prefix, sizeof prefix, "bench comm (rank %d)", world ? parity_comm_rank(world) : 0);
        return parity_cli_end_ranks(parity_cli_report_error(prefix, error));
    }
    int64_t wrong = 0;
    for (int i = 0; i < count; i++) wrong += rows[i].wrong;
    if (parity_comm_rank(world) == 0) {
        print_rows(rows, count, parity_comm_size(world), &arguments.options, arguments.json);
        if (wrong)
            fprintf(stderr, "parity bench comm: %" PRId64 " wrong elements: a collective gave values other than the exact "
                            "expected ones\n",
                    wrong);
        fflush(stdout);
    }
    free(rows);
    return parity_cli_end_ranks(wrong ? PARITY_EXIT_FAILURES : PARITY_EXIT_OK);
}
