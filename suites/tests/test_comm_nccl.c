// test_comm_nccl.c: the NCCL transport (ops/core/comm_nccl.h) and `parity bench comm --device cuda`
// where they cannot run, on a machine without a CUDA device (or a build without CUDA): every call is
// an UNAVAILABLE error with its reason, nothing crashes and nothing falls back to the host path, and
// the command exits 2 (the documented code for a device that cannot run here) on every rank, with
// the reason and without a table. With a device present these skip visibly (gpu_skip.h); what the
// transport does on a GPU is test_comm_nccl_gpu.c's.
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_runner.h"
#include "gpu_skip.h"
#include "ops/core/comm.h"
#include "ops/core/comm_nccl.h"

#define ROWS(array) (sizeof(array) / sizeof((array)[0]))

// The reason a GPU-less machine gives: no device, or a build without CUDA.
static bool names_the_missing_device(const char *text) {
    return strstr(text, "no CUDA device") || strstr(text, "built without CUDA");
}

static void expect_unavailable(parity_error *error, const char *what) {
    cr_expect_not_null(error, "%s succeeded without a CUDA device", what);
    if (!error) return;
    cr_expect_eq(parity_error_kind_of(error), PARITY_ERROR_UNAVAILABLE, "%s: %s (%s)", what,
                 parity_error_kind_name(parity_error_kind_of(error)), parity_error_message(error));
    cr_expect(names_the_missing_device(parity_error_message(error)), "%s: '%s' names no reason", what,
              parity_error_message(error));
    parity_error_free(error);
}

Test(comm_nccl, calls_without_a_gpu_are_unavailable_with_the_reason) {
    parity_test_require_no_gpu();
    int device = 7;
    expect_unavailable(parity_nccl_local_device(&device), "parity_nccl_local_device");
    cr_expect_eq(device, -1);
    parity_comm *world;
    parity_error *error = parity_comm_world(&world);
    cr_assert_null(error, "world: %s", error ? parity_error_message(error) : "");
    parity_nccl_comm *nccl = (parity_nccl_comm *)&device; // must be reset
    expect_unavailable(parity_nccl_comm_create(world, 0, &nccl), "parity_nccl_comm_create");
    cr_expect_null(nccl);
    cr_expect_null(parity_comm_failure(), "an unavailable transport is not a failed collective");
    float blocks[4] = {1, 2, 3, 4}, out[2];
    expect_unavailable(parity_nccl_sum_in_rank_order(0, blocks, 2, 2, PARITY_F32, out, NULL), "parity_nccl_sum_in_rank_order");
    parity_nccl_comm_destroy(NULL); // a no-op
    // the library alone may load here (it needs no device); if not, the error names it
    int version = 0;
    error = parity_nccl_version(&version);
    if (error) {
        cr_expect_eq(parity_error_kind_of(error), PARITY_ERROR_UNAVAILABLE);
        cr_expect(strstr(parity_error_message(error), "libnccl.so.2") || strstr(parity_error_message(error), "built without"),
                  "%s", parity_error_message(error));
        parity_error_free(error);
    } else {
        cr_expect_geq(version, 21800, "NCCL version %d", version);
    }
    cr_expect_str_eq(parity_nccl_collective_name(PARITY_NCCL_ALL_REDUCE_NATIVE), "all_reduce_native");
}

Test(comm_nccl, bench_on_cuda_without_a_gpu_exits_2_with_the_reason, .timeout = 120) {
    parity_test_require_no_gpu();
    static const char *const commands[] = {
        "bench comm --device cuda --max-bytes 1K --iters 1 --warmup 0",
        "bench comm --device cuda:0 --max-bytes 1K --iters 1 --warmup 0 --json",
        "bench comm --device cuda --collectives all_reduce_native,reduce_scatter_native --max-bytes 1K --iters 1",
    };
    for (size_t i = 0; i < ROWS(commands); i++) {
        command_result result = run_parity(commands[i]);
        cr_expect_eq(result.exit_code, 2, "%s: exit %d\n%s", commands[i], result.exit_code, result.output);
        cr_expect(strstr(result.output, "parity bench comm (rank 0): ") && names_the_missing_device(result.output),
                  "%s: no reason\n%s", commands[i], result.output);
        cr_expect(strstr(result.output, "#wrong") == NULL && strstr(result.output, "\"rows\"") == NULL,
                  "%s: a table without a device\n%s", commands[i], result.output);
        free(result.output);
    }
}

Test(comm_nccl, bench_on_cuda_over_ranks_without_a_gpu_exits_2_on_every_rank, .timeout = 120) {
    parity_test_require_no_gpu();
    if (!have_mpirun()) cr_skip_test("mpirun is not on the PATH (openmpi-bin)");
    command_result result = run_parity_mpi("bench comm --device cuda --ranks 2 --max-bytes 1K --iters 1 --warmup 0");
    cr_expect_eq(result.exit_code, 2, "exit %d\n%s", result.exit_code, result.output);
    cr_expect(strstr(result.output, "(rank 0)") && strstr(result.output, "(rank 1)") && names_the_missing_device(result.output),
              "every rank names the reason\n%s", result.output);
    cr_expect(strstr(result.output, "#wrong") == NULL, "%s", result.output);
    free(result.output);
}

Test(comm_nccl, help_names_the_cuda_device) {
    command_result help = run_parity("bench comm --help");
    cr_expect_eq(help.exit_code, 0);
    cr_expect(strstr(help.output, "--device cpu|cuda") && strstr(help.output, "all_reduce_native") &&
                  strstr(help.output, "PARITY_COMM_TIMEOUT_S"),
              "%s", help.output);
    free(help.output);
}
