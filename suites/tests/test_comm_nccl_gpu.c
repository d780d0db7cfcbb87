// test_comm_nccl_gpu.c: the NCCL transport (ops/core/comm_nccl.h) on a GPU, over a one-rank world
// (this process; NCCL with one rank is valid) on the stream of an execution context:
//   exact        every collective (all_reduce and reduce_scatter in rank order and NCCL's native ones,
//                all_gather, all_to_all, all_to_all_v with uneven blocks, broadcast) in fp64, fp32,
//                bf16 and int64 gives the exact expected values;
//   bitwise      the rank-order all_reduce / reduce_scatter on device buffers equal the MPI host path's
//                (comm.h) bit for bit on random fp32, bf16 and fp64 data, and the ordered-sum kernel over
//                5 blocks equals the host's rank-order loop bit for bit (the sums a many-rank call makes);
//   the command  `parity bench comm --device cuda --ranks 1` in fp32, fp64 and bf16: every row's #wrong
//                0, exit 0, the native rows present; over 2 ranks where 2 GPUs and mpirun are present;
//                PARITY_NCCL_LIBRARY naming a missing file is exit 2 naming it.
// Without a GPU every test skips visibly (gpu_skip.h); test_comm_nccl.c covers that machine.
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "assert_ok.h"
#include "cli_runner.h"
#include "comm_table.h"
#include "gpu_skip.h"
#include "ops/core/comm.h"
#include "ops/core/comm_nccl.h"
#include "ops/core/cuda_api.h"
#include "ops/core/exec.h"

#define ROWS(array) (sizeof(array) / sizeof((array)[0]))

typedef struct nccl_fixture {
    parity_comm *world;
    parity_nccl_comm *nccl;
    parity_exec *exec;
    int device;
} nccl_fixture;

static nccl_fixture open_fixture(void) {
    nccl_fixture f = {0};
    assert_ok(parity_comm_world(&f.world), "world");
    cr_assert_eq(parity_comm_size(f.world), 1, "the test process is a world of one rank");
    assert_ok(parity_nccl_local_device(&f.device), "local device");
    assert_ok(parity_nccl_comm_create(f.world, f.device, &f.nccl), "NCCL communicator");
    cr_assert_eq(parity_nccl_size(f.nccl), 1);
    cr_assert_eq(parity_nccl_rank(f.nccl), 0);
    assert_ok(parity_exec_create(PARITY_CUDA(f.device), &f.exec), "exec");
    return f;
}

static void close_fixture(nccl_fixture *f) {
    parity_exec_destroy(f->exec);
    parity_nccl_comm_destroy(f->nccl);
}

static void *device_copy_of(int device, const void *host, size_t bytes) {
    void *pointer = NULL;
    assert_ok(parity_cuda_malloc(device, bytes, &pointer), "cuda malloc");
    if (host) assert_ok(parity_cuda_memcpy(device, pointer, host, bytes, PARITY_COPY_HOST_TO_DEVICE), "upload");
    return pointer;
}

static void download(int device, void *host, const void *pointer, size_t bytes) {
    assert_ok(parity_cuda_synchronize(device), "synchronize");
    assert_ok(parity_cuda_memcpy(device, host, pointer, bytes, PARITY_COPY_DEVICE_TO_HOST), "download");
}

// value j of the sent data: a small integer, exact in every dtype
static void fill(void *buffer, int64_t n, parity_dtype dtype, int salt) {
    for (int64_t j = 0; j < n; j++) {
        double v = (double)((j * 5 + salt) % 13 - 6);
        switch (dtype) {
        case PARITY_F64: ((double *)buffer)[j] = v; break;
        case PARITY_F32: ((float *)buffer)[j] = (float)v; break;
        case PARITY_BF16: ((uint16_t *)buffer)[j] = parity_f64_to_bf16(v); break;
        default: ((int64_t *)buffer)[j] = (int64_t)v; break;
        }
    }
}

typedef struct collective_case {
    parity_nccl_collective collective;
    int64_t count;   // the call's count
    int64_t in, out; // elements sent and received on one rank
} collective_case;

Test(comm_nccl_gpu, every_collective_on_one_rank_is_exact, .timeout = 120) {
    parity_test_require_gpu();
    nccl_fixture f = open_fixture();
    void *stream = parity_exec_stream(f.exec);
    static const parity_dtype dtypes[] = {PARITY_F64, PARITY_F32, PARITY_BF16, PARITY_I64};
    const int64_t n = 4099; // not a multiple of a block or a vector width
    static const collective_case cases[] = {
        {PARITY_NCCL_ALL_REDUCE, 4099, 4099, 4099},        {PARITY_NCCL_ALL_GATHER, 4099, 4099, 4099},
        {PARITY_NCCL_REDUCE_SCATTER, 4099, 4099, 4099},    {PARITY_NCCL_ALL_TO_ALL, 4099, 4099, 4099},
        {PARITY_NCCL_BROADCAST, 4099, 4099, 4099},         {PARITY_NCCL_ALL_REDUCE_NATIVE, 4099, 4099, 4099},
        {PARITY_NCCL_REDUCE_SCATTER_NATIVE, 4099, 4099, 4099}, {PARITY_NCCL_ALL_TO_ALL_V, 0, 4099, 4099},
    };
    for (size_t d = 0; d < ROWS(dtypes); d++) {
        const size_t bytes = (size_t)n * parity_dtype_size(dtypes[d]);
        char *host = malloc(bytes), *back = malloc(bytes), *poison = malloc(bytes);
        memset(poison, 0x7f, bytes);
        fill(host, n, dtypes[d], (int)d);
        for (size_t c = 0; c < ROWS(cases); c++) {
            const char *name = parity_nccl_collective_name(cases[c].collective);
            void *send = device_copy_of(f.device, host, bytes), *recv = device_copy_of(f.device, poison, bytes);
            if (cases[c].collective == PARITY_NCCL_BROADCAST)
                assert_ok(parity_cuda_memcpy(f.device, recv, host, bytes, PARITY_COPY_HOST_TO_DEVICE), "root's values");
            const int64_t counts[1] = {n};
            parity_nccl_call call = {cases[c].collective, send, recv, cases[c].count, dtypes[d], counts, counts, 0};
            assert_ok(parity_nccl_run(f.nccl, &call, stream), name);
            download(f.device, back, recv, bytes);
            cr_expect(memcmp(back, host, bytes) == 0, "%s in %s on one rank is not its input", name,
                      parity_dtype_name(dtypes[d]));
            parity_cuda_free(f.device, send);
            parity_cuda_free(f.device, recv);
        }
        // the blocking forms, the same calls
        void *send = device_copy_of(f.device, host, bytes), *recv = device_copy_of(f.device, poison, bytes);
        assert_ok(parity_nccl_all_reduce(f.nccl, send, recv, n, dtypes[d], stream), "parity_nccl_all_reduce");
        download(f.device, back, recv, bytes);
        cr_expect(memcmp(back, host, bytes) == 0, "parity_nccl_all_reduce in %s", parity_dtype_name(dtypes[d]));
        assert_ok(parity_nccl_broadcast(f.nccl, recv, n, dtypes[d], 0, stream), "parity_nccl_broadcast");
        assert_ok(parity_nccl_all_gather(f.nccl, send, recv, n, dtypes[d], stream), "parity_nccl_all_gather");
        assert_ok(parity_nccl_reduce_scatter(f.nccl, send, recv, n, dtypes[d], stream), "parity_nccl_reduce_scatter");
        assert_ok(parity_nccl_all_to_all(f.nccl, send, recv, n, dtypes[d], stream), "parity_nccl_all_to_all");
        const int64_t counts[1] = {n};
        assert_ok(parity_nccl_all_to_all_v(f.nccl, send, counts, recv, counts, dtypes[d], stream), "parity_nccl_all_to_all_v");
        download(f.device, back, recv, bytes);
        cr_expect(memcmp(back, host, bytes) == 0, "the blocking forms in %s", parity_dtype_name(dtypes[d]));
        parity_cuda_free(f.device, send);
        parity_cuda_free(f.device, recv);
        free(host);
        free(back);
        free(poison);
    }
    // argument errors are USAGE errors naming the call, and leave the communicator usable
    parity_error *error = parity_nccl_all_reduce(f.nccl, NULL, NULL, 4, PARITY_F16, stream);
    cr_expect(error && parity_error_kind_of(error) == PARITY_ERROR_USAGE && strstr(parity_error_message(error), "fp16"));
    parity_error_free(error);
    error = parity_nccl_broadcast(f.nccl, NULL, 4, PARITY_F32, 1, stream);
    cr_expect(error && strstr(parity_error_message(error), "root 1 of 1 ranks"));
    parity_error_free(error);
    cr_expect_null(parity_comm_failure());
    close_fixture(&f);
}

// uniform in [-1, 1), non-integer: sums round
static double random_value(uint64_t *state) {
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(*state >> 11) / 9007199254740992.0 * 2 - 1;
}

static void fill_random(void *buffer, int64_t n, parity_dtype dtype, uint64_t seed) {
    uint64_t state = seed;
    for (int64_t j = 0; j < n; j++) {
        double v = random_value(&state) * (1 + (double)(j % 7) * 100); // magnitudes that differ
        switch (dtype) {
        case PARITY_F64: ((double *)buffer)[j] = v; break;
        case PARITY_F32: ((float *)buffer)[j] = (float)v; break;
        default: ((uint16_t *)buffer)[j] = parity_f64_to_bf16(v); break;
        }
    }
}

// comm.h's rank-order sum on the host: ((x_0 + x_1) + x_2) + ..., f64 / f32 accumulation, bf16 rounded once
static void host_sum(const void *blocks, int ranks, int64_t count, parity_dtype dtype, void *out) {
    for (int64_t i = 0; i < count; i++) {
        if (dtype == PARITY_F64) {
            double sum = ((const double *)blocks)[i];
            for (int r = 1; r < ranks; r++) sum += ((const double *)blocks)[(int64_t)r * count + i];
            ((double *)out)[i] = sum;
        } else if (dtype == PARITY_F32) {
            float sum = ((const float *)blocks)[i];
            for (int r = 1; r < ranks; r++) sum += ((const float *)blocks)[(int64_t)r * count + i];
            ((float *)out)[i] = sum;
        } else {
            float sum = parity_bf16_to_f32(((const uint16_t *)blocks)[i]);
            for (int r = 1; r < ranks; r++) sum += parity_bf16_to_f32(((const uint16_t *)blocks)[(int64_t)r * count + i]);
            ((uint16_t *)out)[i] = parity_f32_to_bf16(sum);
        }
    }
}

Test(comm_nccl_gpu, rank_order_sums_equal_the_mpi_host_path_bitwise, .timeout = 120) {
    parity_test_require_gpu();
    nccl_fixture f = open_fixture();
    void *stream = parity_exec_stream(f.exec);
    static const parity_dtype dtypes[] = {PARITY_F32, PARITY_BF16, PARITY_F64};
    const int64_t count = 100003;
    const int ranks = 5;
    for (size_t d = 0; d < ROWS(dtypes); d++) {
        const parity_dtype dtype = dtypes[d];
        const size_t element = parity_dtype_size(dtype), bytes = (size_t)count * element;
        char *x = malloc(bytes * ranks), *host = malloc(bytes), *device_result = malloc(bytes);
        fill_random(x, count * ranks, dtype, 17 + d);
        // one rank: the device's all_reduce / reduce_scatter and the MPI path's, on the same values
        assert_ok(parity_comm_all_reduce(f.world, x, host, count, dtype), "host all_reduce");
        void *send = device_copy_of(f.device, x, bytes), *recv = device_copy_of(f.device, NULL, bytes);
        assert_ok(parity_nccl_all_reduce(f.nccl, send, recv, count, dtype, stream), "device all_reduce");
        download(f.device, device_result, recv, bytes);
        cr_expect(memcmp(host, device_result, bytes) == 0, "all_reduce in %s: device and host differ", parity_dtype_name(dtype));
        assert_ok(parity_comm_reduce_scatter(f.world, x, host, count, dtype), "host reduce_scatter");
        assert_ok(parity_nccl_reduce_scatter(f.nccl, send, recv, count, dtype, stream), "device reduce_scatter");
        download(f.device, device_result, recv, bytes);
        cr_expect(memcmp(host, device_result, bytes) == 0, "reduce_scatter in %s: device and host differ",
                  parity_dtype_name(dtype));
        parity_cuda_free(f.device, send);
        parity_cuda_free(f.device, recv);
        // five ranks' blocks: the kernel a five-rank call runs after its gather, against the host's loop
        void *blocks = device_copy_of(f.device, x, bytes * ranks), *out = device_copy_of(f.device, NULL, bytes);
        assert_ok(parity_nccl_sum_in_rank_order(f.device, blocks, ranks, count, dtype, out, stream), "ordered sum");
        download(f.device, device_result, out, bytes);
        host_sum(x, ranks, count, dtype, host);
        int64_t differ = 0;
        for (int64_t i = 0; i < count; i++) differ += memcmp(host + i * element, device_result + i * element, element) != 0;
        cr_expect_eq(differ, 0, "%s: %lld of %lld sums over %d ranks differ from the host's rank-order loop",
                     parity_dtype_name(dtype), (long long)differ, (long long)count, ranks);
        // and the order matters: the reversed order differs somewhere (the test can see an order change;
        // in bf16 the f32 sums' last bits mostly vanish in the one rounding, so fp32 and fp64 only)
        if (dtype != PARITY_BF16) {
            char *reversed = malloc(bytes * ranks), *other = malloc(bytes);
            for (int r = 0; r < ranks; r++) memcpy(reversed + (size_t)r * bytes, x + (size_t)(ranks - 1 - r) * bytes, bytes);
            host_sum(reversed, ranks, count, dtype, other);
            cr_expect(memcmp(other, host, bytes) != 0, "%s: the data cannot tell one order from another", parity_dtype_name(dtype));
            free(reversed);
            free(other);
        }
        parity_cuda_free(f.device, blocks);
        parity_cuda_free(f.device, out);
        free(x);
        free(host);
        free(device_result);
    }
    close_fixture(&f);
}

Test(comm_nccl_gpu, bench_on_one_gpu_has_no_wrong_element, .timeout = 300) {
    parity_test_require_gpu();
    static const char *const dtypes[] = {"fp32", "fp64", "bf16"};
    for (size_t i = 0; i < ROWS(dtypes); i++) {
        char arguments[256];
        snprintf(arguments, sizeof arguments,
                 "bench comm --device cuda --ranks 1 --dtype %s --max-bytes 64K --iters 3 --warmup 1", dtypes[i]);
        command_result result = run_parity(arguments);
        int rows, wrong_rows, native;
        comm_table_count(result.output, NULL, &rows, &wrong_rows);
        int native_wrong;
        comm_table_count(result.output, "all_reduce_native", &native, &native_wrong);
        cr_expect_eq(result.exit_code, 0, "%s: exit %d\n%s", arguments, result.exit_code, result.output);
        cr_expect_eq(rows, 7 * 7, "%s: %d rows (7 collectives x 1K..64K)\n%s", arguments, rows, result.output);
        cr_expect_eq(native, 7, "%s: %d all_reduce_native rows\n%s", arguments, native, result.output);
        cr_expect_eq(wrong_rows, 0, "%s: %d rows with wrong elements\n%s", arguments, wrong_rows, result.output);
        cr_expect(strstr(result.output, "# parity bench comm: 1 ranks, NCCL "), "%s: no header\n%s", arguments, result.output);
        free(result.output);
    }
    command_result json = run_parity("bench comm --device cuda --max-bytes 2K --iters 2 --warmup 0 --json --with-test-collectives");
    cr_expect_eq(json.exit_code, 0, "exit %d\n%s", json.exit_code, json.output);
    cr_expect(strstr(json.output, "\"transport\": \"nccl ") && strstr(json.output, "\"all_reduce_wrong_group\""), "%s", json.output);
    free(json.output);
}

Test(comm_nccl_gpu, bench_over_two_gpus_has_no_wrong_element, .timeout = 300) {
    parity_test_require_gpu();
    if (parity_cuda_device_count(NULL, 0) < 2) {
        fprintf(stderr, "[SKIP] comm_nccl_gpu::bench_over_two_gpus_has_no_wrong_element: fewer than 2 CUDA devices\n");
        cr_skip_test("fewer than 2 CUDA devices");
    }
    if (!have_mpirun()) cr_skip_test("mpirun is not on the PATH (openmpi-bin)");
    command_result result =
        run_parity_mpi("bench comm --device cuda --ranks 2 --max-bytes 1M --iters 3 --warmup 1 --with-test-collectives");
    int rows, wrong_rows, wrong_group;
    comm_table_count(result.output, NULL, &rows, &wrong_rows);
    int wrong_group_wrong;
    comm_table_count(result.output, "all_reduce_wrong_group", &wrong_group, &wrong_group_wrong);
    cr_expect_eq(result.exit_code, 1, "the wrong group's rows make it exit 1: exit %d\n%s", result.exit_code, result.output);
    cr_expect_eq(rows, 8 * 11, "%d rows\n%s", rows, result.output);
    cr_expect_eq(wrong_rows, wrong_group, "only the wrong group's rows are wrong\n%s", result.output);
    cr_expect_eq(wrong_group, 11, "%s", result.output);
    free(result.output);
}

Test(comm_nccl_gpu, a_missing_nccl_library_is_exit_2_naming_it, .timeout = 60) {
    parity_test_require_gpu();
    char parity[4096], command[8192];
    parity_binary_path(parity, sizeof parity);
    snprintf(command, sizeof command,
             "PARITY_NCCL_LIBRARY=/nonexistent/libnccl.so.2 '%s' bench comm --device cuda --max-bytes 1K --iters 1", parity);
    command_result result = run_shell(command);
    cr_expect_eq(result.exit_code, 2, "exit %d\n%s", result.exit_code, result.output);
    cr_expect(strstr(result.output, "cannot load NCCL (/nonexistent/libnccl.so.2)"), "%s", result.output);
    free(result.output);
}
