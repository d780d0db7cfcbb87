// op_check.h: the table-driven engine behind every op test. A case is a row: the op's descriptor
// (ops/op_descriptor.h), how to build the op's tensors, named by the descriptor's slots, and its
// attributes (setup), and its parameters. The engine calls a backend's forward and backward through
// the descriptor, so it runs any row against any backend and dtype, and provides the checks:
//   - backward against central finite differences in f64 (normwise relative error per input,
//     denominator floored at 1e-4 per element so a gradient that is legitimately ~0 is judged by
//     its absolute error);
//   - one backend against another on identical inputs and cotangents (relative L2 error);
//   - bitwise determinism (two runs, same bytes);
//   - outputs and gradients poisoned with NaN before every call, so an unwritten element fails;
//   - batch invariance: a run on some of the rows (alone, reordered, repeated) gives bitwise the
//     rows of the whole batch (op_check_run_rows, op_check_rows_equal).
// A run on a GPU (options.device = cuda:N) builds the inputs on the CPU exactly as a CPU run does,
// then mirrors every tensor of the state (values, gradients, cotangents, indices) to the device:
// during forward/backward op_check_value and op_check_gradient return the device tensors, and the
// outputs and gradients are copied back to the host slots afterwards, so every row runs unchanged
// on the GPU and the checks below compare host tensors.
// A backend that needs data beyond the slots gets it from the descriptor's prepare, built once per run
// from the tensors it is handed (attention: the block mask of a PARITY_CAP_BLOCK_MASK backend, from
// the row's cu_seqlens, causal and window; a row batch of op_check_run_rows gets its own).
// Inputs are drawn from named Philox streams (case name + tensor name) in f64 and rounded once to
// the run's dtype, or to a coarser "input precision" so an f64 run can see exactly the bf16 inputs.
#ifndef PARITY_OP_CHECK_H
#define PARITY_OP_CHECK_H

#include <stdbool.h>
#include <stdint.h>

#include "ops/core/rng.h"
#include "ops/core/saved.h"
#include "ops/core/tensor.h"
#include "ops/op_descriptor.h"
#include "ops/registry.h"
#include "ops/testing/check_exec.h"

#define OP_CHECK_MAX_TENSORS 24
#define OP_CHECK_MAX_ATTRIBUTES 256 // bytes of an op's attributes (the largest, moe_router's args, is ~90)

typedef struct op_check_tensor {
    char name[40];
    parity_tensor value;     // inputs: the data; outputs: written by forward (host; copied back from the device)
    parity_tensor gradient;  // inputs: d(loss)/d(input) written by backward; outputs: the cotangent
    bool is_output;
    bool differentiable;     // inputs: checked by finite differences; outputs: carries a cotangent
    parity_tensor device_value, device_gradient; // the mirrors a GPU run hands to the backend
    // With sentinels (op_check_run_options.sentinels): the guarded buffers the tensors the backend
    // writes are views into (its output's value, its input's gradient), on the backend's device.
    parity_tensor guarded_value, guarded_gradient;
} op_check_tensor;

typedef struct op_check_state {
    const parity_op_descriptor *op;
    const char *case_name;
    parity_dtype dtype;          // the run's float dtype
    parity_dtype input_precision; // inputs are rounded to this before storing (== dtype normally)
    parity_device device;        // where the backend runs (cpu, or cuda:N with mirrored tensors)
    const parity_exec *exec;     // the context forward/backward pass to the backend (op_check_exec)
    bool mirrored;               // set after setup on a GPU run: accessors return the device tensors
    uint64_t seed;
    const parity_backend *backend;
    op_check_tensor tensors[OP_CHECK_MAX_TENSORS];
    int tensor_count;
    parity_saved saved;
    bool has_attributes;
    _Alignas(max_align_t) unsigned char attributes[OP_CHECK_MAX_ATTRIBUTES]; // op->attributes_size bytes
    void *prepared; // what the descriptor's prepare built for the backend (attention: a block mask)
    bool sentinels;          // the written tensors sit between OP_CHECK_GUARD_BYTES of sentinel bytes
    char guard_damage[128];  // the first sentinel a call overwrote ("y: 6 bytes after its end, by the
                             // forward"); "" while every guard is intact
} op_check_state;

typedef struct op_check_case {
    const parity_op_descriptor *op; // e.g. &parity_rms_norm_op; op->name is the registry op name
    const char *name;    // "standard rows=7 hidden=13": display and filter key
    // Makes one tensor per slot of the op (by the slot's name; optional slots may be left out) and
    // sets the op's attributes (op_check_set_attributes) when it has any.
    parity_error *(*setup)(op_check_state *state, const void *params);
    const void *params;
    double finite_difference_tolerance; // 0 = the default 1e-6
    int max_checked_elements;           // per input, 0 = default 48 (all when smaller)
} op_check_case;

// ---- used by cases in setup ----
typedef enum op_check_fill { OP_CHECK_UNIFORM, OP_CHECK_NORMAL } op_check_fill;
// A float input of the run's dtype, filled from the stream (case, name) with `fill(a, b)`.
parity_tensor *op_check_input(op_check_state *state, const char *name, bool differentiable, op_check_fill fill,
                              double a, double b, int ndim, const int64_t *shape);
// An input held in the compute precision of the run (f32 in f32/bf16 runs, f64 in f64 runs), e.g. the
// f32 g that Qwen3.5 feeds a bf16 gated delta rule. A reference run with a coarser input precision
// rounds it to that precision's compute dtype, so it sees exactly the candidate's numbers.
parity_tensor *op_check_input_compute(op_check_state *state, const char *name, bool differentiable, op_check_fill fill,
                                      double a, double b, int ndim, const int64_t *shape);
// A tensor of the run with `source`'s values (any device and dtype): a float input is stored in the
// run's dtype (`compute`: its compute dtype), each value rounded to the input precision (to its compute
// dtype); an integer input is copied as it is. For a reference run to see exactly the candidate's
// inputs the source must hold values of the candidate's precision (bench inputs do: drawn in their
// dtype). `parity bench op`'s correctness column checks its benched inputs through this.
parity_tensor *op_check_input_copy(op_check_state *state, const char *name, bool differentiable, bool compute,
                                   const parity_tensor *source);
// An integer input (int64) with the given values (copied).
parity_tensor *op_check_indices(op_check_state *state, const char *name, const int64_t *values, int ndim,
                                const int64_t *shape);
// An output of the run's dtype (or `dtype` for the _typed form). `differentiable` outputs get a
// random cotangent and enter the finite-difference loss sum(cotangent * output).
parity_tensor *op_check_output(op_check_state *state, const char *name, bool differentiable, int ndim,
                               const int64_t *shape);
parity_tensor *op_check_output_typed(op_check_state *state, const char *name, bool differentiable, parity_dtype dtype,
                                     int ndim, const int64_t *shape);
// An output held in the compute precision of the run (gdn_gating's f32 g in a bf16 run); its cotangent
// is rounded like op_check_input_compute's values, so a reference run sees the same cotangent.
parity_tensor *op_check_output_compute(op_check_state *state, const char *name, bool differentiable, int ndim,
                                       const int64_t *shape);
// Lookup by name (NULL when absent). The gradient accessor returns NULL for non-differentiable inputs.
// In setup they return the host tensors; in forward/backward of a GPU run, the device mirrors.
parity_tensor *op_check_value(op_check_state *state, const char *name);
parity_tensor *op_check_gradient(op_check_state *state, const char *name);
// The op's attributes for this row (op->attributes_size bytes, copied), e.g.
// op_check_set_attributes(state, &(parity_rms_norm_args){.eps = 1e-6}).
void op_check_set_attributes(op_check_state *state, const void *attributes);

// ---- used by tests ----
typedef struct op_check_run_options {
    const char *backend;          // default "eager"
    parity_dtype dtype;           // default f64 (0)
    parity_dtype input_precision; // default = dtype
    uint64_t seed;                // default 1234
    parity_device device;         // default cpu; cuda:N runs the backend registered on cuda on mirrored tensors
    // Every tensor the backend writes (outputs, input gradients) gets OP_CHECK_GUARD_BYTES of
    // OP_CHECK_GUARD_BYTE before and after it, on the device it runs on, checked after each call: a
    // write out of bounds is named in state->guard_damage (the run itself still succeeds).
    bool sentinels;
} op_check_run_options;

#define OP_CHECK_GUARD_BYTES 256
#define OP_CHECK_GUARD_BYTE 0xA5

// setup + forward + backward; the state owns everything until op_check_release.
parity_error *op_check_run(const op_check_case *test_case, op_check_run_options options, op_check_state *state);
// Forward + backward once more on a finished run's own inputs and cotangents (outputs and gradients
// poisoned again first), for repeat-run checks that need not rebuild the inputs: a run of `repeats`
// identical calls is op_check_run, then op_check_rerun repeats - 1 times.
parity_error *op_check_rerun(const op_check_case *test_case, op_check_state *state);
void op_check_release(op_check_state *state);
// Frees a finished GPU run's device mirrors (the host tensors, which every comparison reads, stay),
// for a run kept as a reference while others use the device; it cannot be rerun after this.
void op_check_drop_mirrors(op_check_state *state);

typedef struct op_check_error_report {
    char worst_tensor[48];  // "y" (an output), "dx" (an input's gradient)
    double worst_error;     // the largest error over the tensors compared; NaN wins (worst_error.h)
    int tensors_compared;
    char non_finite[64];    // the first NaN/Inf of the checked run's outputs and gradients, "dweight[3]";
                            // "" when none (an element never written stays the NaN it was poisoned with)
} op_check_error_report;

// The verdict on a report: true when something was compared, nothing was NaN/Inf and the worst error
// is <= bound. Otherwise false, with why in `message`: "dweight[3] is NaN/Inf", "dx relative error
// 1.000e-03 > 1e-06", "no tensor compared" (a NaN bound fails too).
bool op_check_within(const op_check_error_report *report, double bound, char *message, size_t message_size);

// Finite differences in f64 with the eager backend or `backend` (NULL = eager); worst_tensor names
// the gradient ("dx").
parity_error *op_check_finite_differences(const op_check_case *test_case, const char *backend,
                                          op_check_error_report *report);
// Relative L2 error of every output and input gradient of run `candidate` against run `reference`.
parity_error *op_check_compare_states(const op_check_state *reference, const op_check_state *candidate,
                                      op_check_error_report *report);
// Max absolute error of every output and input gradient of run `candidate` against run `reference`,
// one entry per tensor in slot order ("output", "dquery", ...; at most `capacity`, *count set): the
// flash-attention style rule compares these maxima. An element that is NaN/Inf in the candidate makes
// that tensor's max_error NaN (worst_error.h), so no bound passes it.
typedef struct op_check_max_error {
    char tensor[48];
    double max_error;     // max |candidate - reference|
    double max_reference; // max |reference|
    double relative_rms;  // ||candidate - reference||_2 / ||reference||_2 (fla's measure; NaN when the
                          // candidate has NaN/Inf; the error's RMS when the reference is all zeros)
} op_check_max_error;
parity_error *op_check_max_errors(const op_check_state *reference, const op_check_state *candidate,
                                  op_check_max_error *errors, int capacity, int *count);
// True when both runs produced bit-identical outputs and gradients.
bool op_check_bitwise_equal(const op_check_state *a, const op_check_state *b, char *differing, size_t differing_size);

// ---- batch invariance: the same rows alone or inside other batches ----
// Which tensors of an op are per row: all but the `shared` slots (weights, copied whole), with their
// first `row_dims` dimensions flattened into the row index (1: shape[0] rows; 2: (batch, rows) pairs).
// Every per-row tensor of a run must have the same number of rows.
typedef struct op_check_row_layout {
    int row_dims;
    const char *const *shared;  // slot names, NULL-terminated (NULL: none)
} op_check_row_layout;

// The number of rows of a run under `layout`, or an error naming the tensor that does not fit.
parity_error *op_check_row_count(const op_check_state *state, const op_check_row_layout *layout, int64_t *rows);
// A run of `whole`'s backend, dtype and device on a batch of its rows: row r of every per-row tensor
// (inputs, and the cotangents of outputs) is row rows[r] of whole's (count rows, any order, repeats
// allowed; the leading dimensions become 1, ..., 1, count), shared tensors are copied whole, and the
// slot "cu_seqlens", when `cu_seqlens` is not NULL, gets those `documents + 1` offsets instead (a
// batch of whole documents). Then forward and backward, outputs and gradients poisoned first.
parity_error *op_check_run_rows(const op_check_case *test_case, const op_check_state *whole, const op_check_row_layout *layout,
                                const int64_t *rows, int64_t count, const int64_t *cu_seqlens, int64_t documents,
                                op_check_state *out);
// True when row r of every per-row output and of every per-row input gradient of `part` is, bit for
// bit, row rows[r] of whole's; otherwise names the first that is not ("dx row 3 (row 777 of the
// whole batch)"). Gradients of shared inputs (a weight's, a sum over the batch) are not compared.
bool op_check_rows_equal(const op_check_state *whole, const op_check_state *part, const op_check_row_layout *layout,
                         const int64_t *rows, int64_t count, char *differing, size_t differing_size);

// Relative L2 error ||a - b|| / max(||a||, tiny) of two same-shaped tensors (any float dtype, CPU).
double op_check_relative_error(const parity_tensor *reference, const parity_tensor *candidate);

#endif
