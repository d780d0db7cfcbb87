// test_comm.c: the collectives of ops/core/comm.h (issue 16, MPI on the CPU) and `parity bench comm`:
//   one rank     in this process (a singleton MPI world): each collective's result on one rank, the
//                rank-order sum in bf16 (rounded once), a split, and the argument errors named;
//   many ranks   `parity bench comm --ranks N` (it starts itself under mpirun --oversubscribe) over 2
//                and 4 ranks in fp32, fp64 and bf16: every row's #wrong is 0 and the exit status 0;
//   the checker  the test-only all_reduce_wrong_group (a reduction over the wrong group) shows
//                #wrong > 0 on every row and exits 1, so a correct-looking table is not a blind one;
//   agreement    ranks given different work (mpirun's MPMD form, two option sets) stop before any
//                collective with exit 2, naming the rank that differs;
//   usage        the documented exit 2 with a message naming the argument (NCCL's --device cuda:
//                test_comm_nccl.c and test_comm_nccl_gpu.c).
// Without mpirun on the PATH the many-rank rows skip visibly.
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_runner.h"
#include "comm_table.h"
#include "ops/core/comm.h"

#define ROWS(array) (sizeof(array) / sizeof((array)[0]))

static void assert_no_error(parity_error *error, const char *what) {
    if (error) {
        char message[512];
        snprintf(message, sizeof message, "%s", parity_error_message(error));
        parity_error_free(error);
        cr_assert_fail("%s: %s", what, message);
    }
}

Test(comm, one_rank_collectives_are_copies_and_sums_are_in_rank_order) {
    parity_comm *world;
    assert_no_error(parity_comm_world(&world), "world");
    cr_assert_eq(parity_comm_size(world), 1, "a process started without a launcher is one rank");
    cr_assert_eq(parity_comm_rank(world), 0);
    cr_expect_str_eq(parity_comm_name(world), "world");
    const float send[4] = {1.5f, -2.0f, 3.25f, 0.0f};
    float recv[4] = {9, 9, 9, 9};
    assert_no_error(parity_comm_all_reduce(world, send, recv, 4, PARITY_F32), "all_reduce");
    cr_expect_arr_eq(recv, send, sizeof send);
    memset(recv, 0, sizeof recv);
    assert_no_error(parity_comm_all_gather(world, send, recv, 4, PARITY_F32), "all_gather");
    cr_expect_arr_eq(recv, send, sizeof send);
    memset(recv, 0, sizeof recv);
    assert_no_error(parity_comm_reduce_scatter(world, send, recv, 4, PARITY_F32), "reduce_scatter");
    cr_expect_arr_eq(recv, send, sizeof send);
    memset(recv, 0, sizeof recv);
    assert_no_error(parity_comm_all_to_all(world, send, recv, 4, PARITY_F32), "all_to_all");
    cr_expect_arr_eq(recv, send, sizeof send);
    double values[3] = {1, 2, 3};
    assert_no_error(parity_comm_broadcast(world, values, 3, PARITY_F64, 0), "broadcast");
    cr_expect(values[0] == 1 && values[2] == 3);
    const uint16_t bf16[2] = {parity_f32_to_bf16(1.0f), parity_f32_to_bf16(-0.5f)};
    uint16_t bf16_out[2] = {0, 0};
    assert_no_error(parity_comm_all_reduce(world, bf16, bf16_out, 2, PARITY_BF16), "bf16 all_reduce");
    cr_expect_eq(bf16_out[0], bf16[0]);
    cr_expect_eq(bf16_out[1], bf16[1]);
    int64_t counts[2] = {7, -3}, summed[2] = {0, 0};
    assert_no_error(parity_comm_all_reduce(world, counts, summed, 2, PARITY_I64), "int64 all_reduce");
    cr_expect(summed[0] == 7 && summed[1] == -3);
    assert_no_error(parity_comm_all_reduce(world, send, recv, 0, PARITY_F32), "an empty all_reduce");
    parity_comm *group;
    assert_no_error(parity_comm_split(world, 0, 0, "dp", &group), "split");
    cr_expect_eq(parity_comm_size(group), 1);
    cr_expect_str_eq(parity_comm_name(group), "dp");
    assert_no_error(parity_comm_barrier(group), "barrier");
    parity_comm_free(group);
    parity_comm_free(world); // the world is the library's: a no-op
    assert_no_error(parity_comm_barrier(world), "the world after parity_comm_free");
}

Test(comm, bad_arguments_are_named_usage_errors) {
    parity_comm *world;
    assert_no_error(parity_comm_world(&world), "world");
    float x[2] = {0, 0};
    static const struct {
        const char *what;
        int which;
        const char *expected;
    } rows[] = {
        {"negative count", 0, "all_reduce over the world group: count -1 is negative"},
        {"dtype fp16", 1, "all_gather: dtype fp16 is not one the collectives move"},
        {"broadcast root", 2, "broadcast over the world group: root 1 of 1 ranks"},
        {"negative color", 3, "split of the world group: color -2 is negative"},
    };
    for (size_t i = 0; i < ROWS(rows); i++) {
        parity_error *error = NULL;
        parity_comm *group = NULL;
        switch (rows[i].which) {
        case 0: error = parity_comm_all_reduce(world, x, x, -1, PARITY_F32); break;
        case 1: error = parity_comm_all_gather(world, x, x, 1, PARITY_F16); break;
        case 2: error = parity_comm_broadcast(world, x, 1, PARITY_F32, 1); break;
        default: error = parity_comm_split(world, -2, 0, "x", &group); break;
        }
        cr_expect_not_null(error, "%s accepted", rows[i].what);
        if (!error) continue;
        cr_expect_eq(parity_error_kind_of(error), PARITY_ERROR_USAGE, "%s", rows[i].what);
        cr_expect(strstr(parity_error_message(error), rows[i].expected) != NULL, "%s: '%s' lacks '%s'", rows[i].what,
                  parity_error_message(error), rows[i].expected);
        parity_error_free(error);
        cr_expect_null(group);
    }
}


Test(comm, bench_over_many_ranks_has_no_wrong_element, .timeout = 300) {
    if (!have_mpirun()) cr_skip_test("mpirun is not on the PATH (openmpi-bin)");
    static const struct {
        int ranks;
        const char *dtype;
        int rows; // 5 collectives x the sizes 1K..16K (bf16: 2 bytes an element)
    } cases[] = {{2, "fp32", 25}, {4, "fp32", 25}, {4, "fp64", 25}, {3, "bf16", 25}};
    for (size_t i = 0; i < ROWS(cases); i++) {
        char arguments[256];
        snprintf(arguments, sizeof arguments, "bench comm --ranks %d --dtype %s --max-bytes 16K --iters 3 --warmup 1",
                 cases[i].ranks, cases[i].dtype);
        command_result result = run_parity_mpi(arguments);
        int rows, wrong_rows;
        comm_table_count(result.output, NULL, &rows, &wrong_rows);
        cr_expect_eq(result.exit_code, 0, "%s: exit %d\n%s", arguments, result.exit_code, result.output);
        cr_expect_eq(rows, cases[i].rows, "%s: %d rows\n%s", arguments, rows, result.output);
        cr_expect_eq(wrong_rows, 0, "%s: %d rows with wrong elements\n%s", arguments, wrong_rows, result.output);
        char header[64];
        snprintf(header, sizeof header, "# parity bench comm: %d ranks, MPI on the cpu, %s", cases[i].ranks, cases[i].dtype);
        cr_expect(strstr(result.output, header) != NULL, "%s: no '%s'\n%s", arguments, header, result.output);
        free(result.output);
    }
}

Test(comm, a_reduction_over_the_wrong_group_is_caught, .timeout = 120) {
    if (!have_mpirun()) cr_skip_test("mpirun is not on the PATH (openmpi-bin)");
    command_result result = run_parity_mpi("bench comm --ranks 3 --with-test-collectives --collectives "
                                       "all_reduce,all_reduce_wrong_group --max-bytes 4K --iters 2 --warmup 0");
    int rows, wrong_rows, good_rows, good_wrong;
    comm_table_count(result.output, "all_reduce_wrong_group", &rows, &wrong_rows);
    comm_table_count(result.output, "all_reduce", &good_rows, &good_wrong);
    cr_expect_eq(result.exit_code, 1, "exit %d\n%s", result.exit_code, result.output);
    cr_expect_eq(rows, 3, "%d rows of the wrong collective\n%s", rows, result.output);
    cr_expect_eq(wrong_rows, rows, "every size of the wrong group has wrong elements\n%s", result.output);
    cr_expect_eq(good_rows, 3);
    cr_expect_eq(good_wrong, 0, "the right all_reduce beside it is right\n%s", result.output);
    cr_expect(strstr(result.output, "wrong elements: a collective gave values other than the exact expected ones"),
              "%s", result.output);
    free(result.output);
}

Test(comm, bench_usage_errors_exit_2_naming_the_argument) {
    static const struct {
        const char *arguments, *expected;
    } rows[] = {
        {"bench comm --device tpu", "--device 'tpu' is not cpu or cuda"},
        {"bench comm --device cuda:x", "--device 'cuda:x' is not cpu or cuda"},
        {"bench comm --collectives all_reduce_native", "all_reduce_native is NCCL's own reduction: it needs --device cuda"},
        {"bench comm --collectives all_reduce,allreduce", "'allreduce' is not one of all_reduce all_gather reduce_scatter"},
        {"bench comm --collectives all_reduce_wrong_group", "test-only ones need --with-test-collectives first"},
        {"bench comm --dtype int64", "--dtype 'int64' is not fp32, fp64 or bf16"},
        {"bench comm --min-bytes 1X", "--min-bytes '1X' is not a size"},
        {"bench comm --min-bytes 64K --max-bytes 1K", "--max-bytes is below --min-bytes"},
        {"bench comm --factor 1", "--factor '1' is not an integer >= 2"},
        {"bench comm --ranks 0", "--ranks '0' is not a rank count"},
        {"bench comm --iters", "--iters"},
        {"bench comm --bogus", "unknown argument '--bogus'"},
    };
    for (size_t i = 0; i < ROWS(rows); i++) {
        command_result result = run_parity(rows[i].arguments);
        cr_expect_eq(result.exit_code, 2, "%s: exit %d\n%s", rows[i].arguments, result.exit_code, result.output);
        cr_expect(strstr(result.output, rows[i].expected) != NULL, "%s: '%s' lacks '%s'", rows[i].arguments, result.output,
                  rows[i].expected);
        free(result.output);
    }
    command_result help = run_parity("bench comm --help");
    cr_expect_eq(help.exit_code, 0);
    cr_expect(strstr(help.output, "usage: parity bench comm") && strstr(help.output, "#wrong"), "%s", help.output);
    free(help.output);
}

Test(comm, ranks_given_different_work_stop_before_any_collective, .timeout = 120) {
    if (!have_mpirun()) cr_skip_test("mpirun is not on the PATH (openmpi-bin)");
    char parity[4096], command[16384];
    parity_binary_path(parity, sizeof parity);
    const char *root = geteuid() == 0 ? " --allow-run-as-root" : "";
    snprintf(command, sizeof command,
             "ASAN_OPTIONS=\"${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0\" mpirun --oversubscribe%s "
             "-np 1 '%s' bench comm --max-bytes 1K --iters 1 : -np 1 '%s' bench comm --max-bytes 2K --iters 1",
             root, parity, parity);
    command_result result = run_shell(command);
    cr_expect_eq(result.exit_code, 2, "exit %d\n%s", result.exit_code, result.output);
    cr_expect(strstr(result.output, "rank 1 was given other bench comm options than rank 0 (over the world group of 2 ranks)"),
              "%s", result.output);
    cr_expect(strstr(result.output, "#wrong") == NULL, "no table after a mismatch\n%s", result.output);
    free(result.output);
}
