// gpu_backend.h: what the GPU test files of the CUDA backends (test_attention_gpu.c,
// test_moe_experts_gpu.c, test_gated_delta_rule_gpu.c) share: finding a backend that must be
// registered and available on cuda:0, and proving a backend's determinism by repeated runs.
#ifndef PARITY_TESTS_GPU_BACKEND_H
#define PARITY_TESTS_GPU_BACKEND_H

#include "ops/testing/op_check.h"
#include "ops/registry.h"

// The backend `name` of `op` registered on cuda and available on cuda:0; NULL otherwise, with the
// test failed (cr_expect_fail) naming the backend and why. `registered_by` completes the message
// "... is not registered on cuda (<registered_by>)", e.g. "issue 15 registers it there".
const parity_backend *gpu_test_available_backend(const char *op, const char *name, const char *registered_by);

// Runs `row` with `options` `runs` times (the first run and one reused state rerun runs - 1 times) and
// expects every run bitwise equal to the first (cr_expect naming `what`, the run and the tensor);
// stops at the first difference. Returns the number of runs equal to the first (including it).
int gpu_test_bitwise_equal_runs(const op_check_case *row, op_check_run_options options, int runs, const char *what);

#endif
