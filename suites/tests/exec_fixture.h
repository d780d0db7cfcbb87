// exec_fixture.h: the execution context a test hands to kernels and tensor helpers, one per device
// for the test process (created on first use, kept until the process ends), so a test that calls a
// backend directly passes the same kind of context a model step does.
#ifndef PARITY_TESTS_EXEC_FIXTURE_H
#define PARITY_TESTS_EXEC_FIXTURE_H

#include "ops/core/exec.h"

// The context of `device` (cpu or cuda:N). A device that cannot have one (absent GPU, CPU-only build)
// fails the test with the reason; GPU tests call parity_test_require_gpu() first.
const parity_exec *parity_test_exec(parity_device device);

#endif
