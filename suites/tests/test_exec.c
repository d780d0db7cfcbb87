// test_exec.c: the execution context's lifecycle on the CPU (ops/core/exec.h): what a context holds,
// scratch that grows and is reused, the communication context made once on demand, and the refusals
// (a cuBLAS handle off CUDA, devices that cannot have a context here). Its GPU side (a stream, a kernel
// on the communication stream ordered by events) is test_ops_gpu.c's exec_streams_order_work_on_the_device.
#include <criterion/criterion.h>
#include <string.h>

#include "ops/core/exec.h"
#include "suites/tests/gpu_skip.h"
#include "suites/tests/assert_ok.h"

static void expect_error(parity_error *error, parity_error_kind kind, const char *what, const char *needle) {
    cr_assert_not_null(error, "%s: expected an error", what);
    char buffer[1024];
    parity_error_format(error, buffer, sizeof buffer);
    cr_expect_eq(parity_error_kind_of(error), kind, "%s: kind %s, message: %s", what,
                 parity_error_kind_name(parity_error_kind_of(error)), buffer);
    cr_expect(strstr(buffer, needle) != NULL, "%s: \"%s\" lacks \"%s\"", what, buffer, needle);
    parity_error_free(error);
}

Test(exec, cpu_context_lifecycle) {
    parity_exec *exec = NULL;
    assert_ok(parity_exec_create(PARITY_CPU, &exec), "create");
    cr_assert_not_null(exec);
    cr_expect(parity_device_equal(exec->device, PARITY_CPU));
    cr_expect_null(exec->stream, "a cpu context has no stream");
    cr_expect_null(parity_exec_stream(exec));
    assert_ok(parity_exec_synchronize(exec), "synchronize");

    void *first = NULL, *again = NULL, *grown = NULL;
    assert_ok(parity_exec_device_scratch(exec, 1000, &first), "scratch 1000");
    cr_assert_not_null(first);
    memset(first, 0x5a, 1000); // the whole size is usable
    assert_ok(parity_exec_device_scratch(exec, 10, &again), "scratch 10");
    cr_expect_eq(again, first, "a smaller request reuses the buffer");
    assert_ok(parity_exec_device_scratch(exec, 1 << 20, &grown), "scratch 1 MiB");
    cr_assert_not_null(grown);
    memset(grown, 0, 1 << 20);
    void *host = NULL;
    assert_ok(parity_exec_host_scratch(exec, 64, &host), "host scratch");
    cr_assert_not_null(host);
    cr_expect_neq(host, grown, "host and device scratch are separate buffers");

    void *handle = NULL;
    expect_error(parity_exec_blas_handle(exec, &handle), PARITY_ERROR_USAGE, "cuBLAS handle on the cpu", "CUDA only");
    cr_expect_null(handle);

    const parity_exec *comm = NULL, *comm_again = NULL;
    assert_ok(parity_exec_comm(exec, &comm), "communication context");
    cr_assert_not_null(comm);
    cr_expect_neq(comm, exec);
    cr_expect(parity_device_equal(comm->device, PARITY_CPU));
    assert_ok(parity_exec_comm(exec, &comm_again), "communication context again");
    cr_expect_eq(comm_again, comm, "made once, on demand");
    void *comm_stream = (void *)1;
    assert_ok(parity_exec_comm_stream(exec, &comm_stream), "communication stream");
    cr_expect_null(comm_stream, "no stream on the cpu");
    assert_ok(parity_exec_wait(comm, exec), "comm waits for the step");
    assert_ok(parity_exec_wait(exec, comm), "the step waits for comm");
    parity_exec_destroy(exec); // frees the communication context and the scratch too
    parity_exec_destroy(NULL);
}

Test(exec, a_null_context_is_the_legacy_default_stream) { cr_expect_null(parity_exec_stream(NULL)); }

Test(exec, devices_without_a_context_here_say_why) {
    parity_exec *exec = (parity_exec *)1;
    expect_error(parity_exec_create((parity_device){PARITY_DEVICE_NPU, 0}, &exec), PARITY_ERROR_UNAVAILABLE, "npu",
                 "Ascend NPU");
    cr_expect_null(exec);
    if (parity_test_have_gpu()) {
        expect_error(parity_exec_create(PARITY_CUDA(4096), &exec), PARITY_ERROR_UNAVAILABLE, "cuda:4096", "no such device");
    } else {
        expect_error(parity_exec_create(PARITY_CUDA(0), &exec), PARITY_ERROR_UNAVAILABLE, "cuda:0 without a GPU", "cuda:0");
    }
    cr_expect_null(exec);
}

Test(exec, contexts_on_two_devices_cannot_wait_for_each_other) {
    parity_exec *cpu = NULL, *other = NULL;
    assert_ok(parity_exec_create(PARITY_CPU, &cpu), "create");
    assert_ok(parity_exec_create(PARITY_CPU, &other), "create another");
    assert_ok(parity_exec_wait(cpu, other), "two cpu contexts");
    parity_exec fake_cuda = {PARITY_CUDA(0), NULL, NULL};
    expect_error(parity_exec_wait(cpu, &fake_cuda), PARITY_ERROR_USAGE, "cpu waits for cuda:0", "cannot wait");
    parity_exec_destroy(cpu);
    parity_exec_destroy(other);
}
