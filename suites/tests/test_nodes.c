// test_nodes.c: the tape and its node functions. Small graphs built from several nodes run forward
// and backward in f64 on the CPU (eager backends from the registry); every parameter's gradient must
// match central finite differences of the whole forward (normwise relative error <= 1e-6). Then the
// tape-level glue (cast, stack_rows, weighted_sum) with exact dtype checks, gradient accumulation for
// a variable with two consumers, and errors in a node's forward naming the node.
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "assert_ok.h"
#include "models/autograd/nodes.h"
#include "ops/core/rng.h"
#include "suites/tests/exec_fixture.h"

static const parity_backend *eager(const char *op) {
    assert_ok(parity_registry_register_builtins(), "registering the built-in backends");
    const parity_backend *backend = NULL;
    assert_ok(parity_registry_resolve(op, "eager", PARITY_CPU, &backend), op);
    return backend;
}

static parity_tensor random_tensor(const char *name, parity_dtype dtype, double low, double high, int ndim,
                                   const int64_t *shape) {
    parity_tensor tensor;
    assert_ok(parity_tensor_alloc(&tensor, dtype, PARITY_CPU, ndim, shape), name);
    assert_ok(parity_rng_fill(NULL, &tensor, parity_rng_stream_named(2026, name), PARITY_RNG_UNIFORM, low, high), name);
    return tensor;
}

static parity_tensor int64_tensor(const int64_t *values, int64_t count) {
    parity_tensor tensor;
    assert_ok(parity_tensor_alloc(&tensor, PARITY_I64, PARITY_CPU, 1, (int64_t[]){count}), "int64 tensor");
    memcpy(tensor.data, values, (size_t)count * sizeof *values);
    return tensor;
}

// ---- a graph of parameters and a forward that turns them into a scalar loss ----
enum { MAX_PARAMS = 12, MAX_DATA = 4 };

typedef struct graph graph;
// Builds the forward on `tape` from the parameters' variables; returns the scalar loss.
typedef parity_error *(*graph_forward)(parity_tape *tape, const graph *g, parity_variable *const *params,
                                       parity_variable **loss);

struct graph {
    const char *names[MAX_PARAMS];
    parity_tensor params[MAX_PARAMS]; // f64, owned
    int count;
    parity_tensor data[MAX_DATA];     // ids, targets, cu_seqlens: owned
    int option;                       // a graph's own switch
    graph_forward forward;
};

static void add_param(graph *g, const char *name, double low, double high, int ndim, const int64_t *shape) {
    cr_assert(g->count < MAX_PARAMS);
    g->names[g->count] = name;
    g->params[g->count] = random_tensor(name, PARITY_F64, low, high, ndim, shape);
    g->count++;
}

static void graph_release(graph *g) {
    for (int i = 0; i < g->count; i++) parity_tensor_release(&g->params[i]);
    for (int i = 0; i < MAX_DATA; i++) parity_tensor_release(&g->data[i]);
}

// A fresh tape with every parameter borrowed (requiring gradients), the forward, and when recording
// the backward from the loss.
static parity_error *graph_run(const graph *g, parity_tape *tape, bool recording, parity_variable **params,
                               parity_variable **loss) {
    parity_tape_init(tape, parity_test_exec(PARITY_CPU), PARITY_F64, recording);
    for (int i = 0; i < g->count; i++) PARITY_TRY(parity_tape_borrow(tape, g->names[i], &g->params[i], true, &params[i]));
    PARITY_TRY(g->forward(tape, g, params, loss));
    if ((*loss)->value.numel != 1) return PARITY_ERROR(PARITY_ERROR_INTERNAL, "the graph's loss is not a scalar");
    if (recording) PARITY_TRY(parity_tape_backward(tape, *loss));
    return NULL;
}

static double graph_loss(const graph *g) {
    parity_tape tape;
    parity_variable *params[MAX_PARAMS], *loss = NULL;
    assert_ok(graph_run(g, &tape, false, params, &loss), "forward");
    double value = parity_tensor_get(&loss->value, 0);
    parity_tape_release(&tape);
    return value;
}

// Tape gradients vs central differences of the whole forward, each parameter on its own.
static void check_gradients(graph *g, const char *what) {
    parity_tape tape;
    parity_variable *params[MAX_PARAMS], *loss = NULL;
    assert_ok(graph_run(g, &tape, true, params, &loss), what);
    cr_assert(isfinite(parity_tensor_get(&loss->value, 0)), "%s: loss is not finite", what);
    for (int i = 0; i < g->count; i++) {
        cr_assert(params[i]->has_gradient, "%s: %s received no gradient", what, g->names[i]);
        parity_tensor *value = &g->params[i];
        double difference_squared = 0, reference_squared = 0;
        for (int64_t j = 0; j < value->numel; j++) {
            double original = parity_tensor_get(value, j);
            double h = 1e-6 * fmax(1.0, fabs(original));
            parity_tensor_set(value, j, original + h);
            double plus = graph_loss(g);
            parity_tensor_set(value, j, original - h);
            double minus = graph_loss(g);
            parity_tensor_set(value, j, original);
            double numeric = (plus - minus) / (2 * h);
            double analytic = parity_tensor_get(&params[i]->gradient, j);
            difference_squared += (numeric - analytic) * (numeric - analytic);
            reference_squared += numeric * numeric;
            if (!isfinite(analytic)) difference_squared = INFINITY;
        }
        // Normwise, with a floor of 1e-4 per element (h = 1e-6 differences carry ~1e-10 round-off), as
        // the op tests do: a gradient that is legitimately ~0 must not fail.
        double floor = 1e-4 * sqrt((double)value->numel);
        double relative = sqrt(difference_squared) / fmax(sqrt(reference_squared), floor);
        cr_log_info("%s: %-10s |grad| %.3e, relative error vs finite differences %.2e", what, g->names[i],
                    sqrt(reference_squared), relative);
        cr_expect(relative <= 1e-6, "%s: gradient of %s differs from finite differences: relative error %.3e", what,
                  g->names[i], relative);
    }
    parity_tape_release(&tape);
}

// ---- (1) embedding -> linear -> split -> concat -> add (residual) -> rms_norm -> cross_entropy ----
enum { DENSE_TOKENS = 5, DENSE_VOCAB = 7, DENSE_HIDDEN = 4 };

static parity_error *dense_forward(parity_tape *tape, const graph *g, parity_variable *const *p, parity_variable **loss) {
    // p: embed (V, H), proj (6, H), proj_bias (6), norm (H), lm_head (V, H)
    parity_variable *h0, *projected, *parts[3], *joined, *residual, *normed;
    PARITY_TRY(parity_node_embedding(tape, eager(PARITY_OP_EMBEDDING), "embed", &g->data[0], p[0], -1, &h0)); // (N, H)
    PARITY_TRY(parity_node_linear(tape, eager(PARITY_OP_LINEAR), "proj", h0, p[1], p[2], &projected));  // (N, 6)
    PARITY_TRY(parity_node_split(tape, eager(PARITY_OP_SPLIT), "split", projected, (int64_t[]){2, 3, 1}, 3, parts));
    // parts[1] is never used (split's backward gets a NULL dpart); parts[2] is used twice.
    parity_variable *pieces[3] = {parts[2], parts[0], parts[2]};
    PARITY_TRY(parity_node_concat(tape, eager(PARITY_OP_CONCAT), "concat", pieces, 3, &joined)); // (N, H)
    // h0 feeds both the projection and the residual: its gradient accumulates
    PARITY_TRY(parity_node_add(tape, eager(PARITY_OP_ADD), "residual", h0, joined, &residual));
    PARITY_TRY(parity_node_rms_norm(tape, eager(PARITY_OP_RMS_NORM), "norm", residual, p[3], 1e-6,
                                    PARITY_RMS_NORM_STANDARD, &normed));
    return parity_node_cross_entropy(tape, eager(PARITY_OP_CROSS_ENTROPY), "loss", normed, p[4], &g->data[1], 0, loss,
                                     NULL);
}

Test(nodes, dense_graph_matches_finite_differences) {
    graph g = {.forward = dense_forward};
    add_param(&g, "embed", -1, 1, PARITY_SHAPE(DENSE_VOCAB, DENSE_HIDDEN));
    add_param(&g, "proj", -0.7, 0.7, PARITY_SHAPE(6, DENSE_HIDDEN));
    add_param(&g, "proj_bias", -0.3, 0.3, PARITY_SHAPE(6));
    add_param(&g, "norm", 0.5, 1.5, PARITY_SHAPE(DENSE_HIDDEN));
    add_param(&g, "lm_head", -1, 1, PARITY_SHAPE(DENSE_VOCAB, DENSE_HIDDEN));
    g.data[0] = int64_tensor((int64_t[]){3, 0, 6, 3, 2}, DENSE_TOKENS);
    g.data[1] = int64_tensor((int64_t[]){1, 4, PARITY_CROSS_ENTROPY_IGNORE_INDEX, 6, 0}, DENSE_TOKENS);
    check_gradients(&g, "dense");
    graph_release(&g);
}

// ---- (1b) the other dense nodes: broadcast_heads, matmul (both transposes), sigmoid_gate, reshape ----
static parity_error *heads_forward(parity_tape *tape, const graph *g, parity_variable *const *p, parity_variable **loss) {
    // p: x (4, 6), wq (6, 6), wk (3, 6), wgate (1, 6), lm_head (5, 6)
    parity_variable *q, *k, *q3, *k3, *kb, *scores, *mixed, *flat, *gate, *gated, *gated_again;
    PARITY_TRY(parity_node_linear(tape, eager(PARITY_OP_LINEAR), "q_proj", p[0], p[1], NULL, &q)); // (4, 6)
    PARITY_TRY(parity_node_linear(tape, eager(PARITY_OP_LINEAR), "k_proj", p[0], p[2], NULL, &k)); // (4, 3)
    PARITY_TRY(parity_tape_reshape(tape, q, PARITY_SHAPE(4, 2, 3), &q3));
    PARITY_TRY(parity_tape_reshape(tape, k, PARITY_SHAPE(4, 1, 3), &k3));
    PARITY_TRY(parity_node_broadcast_heads(tape, eager(PARITY_OP_BROADCAST_HEADS), "k_heads", k3, 2, &kb)); // (4, 2, 3)
    PARITY_TRY(parity_node_matmul(tape, eager(PARITY_OP_MATMUL), "scores", q3, kb, false, true, &scores));  // (4, 2, 2)
    PARITY_TRY(parity_node_matmul(tape, eager(PARITY_OP_MATMUL), "mix", scores, q3, true, false, &mixed));  // (4, 2, 3)
    PARITY_TRY(parity_tape_reshape(tape, mixed, PARITY_SHAPE(4, 6), &flat));
    PARITY_TRY(parity_node_linear(tape, eager(PARITY_OP_LINEAR), "gate_proj", p[0], p[3], NULL, &gate)); // (4, 1)
    PARITY_TRY(parity_node_sigmoid_gate(tape, eager(PARITY_OP_SIGMOID_GATE), "row_gate", flat, gate, &gated));
    PARITY_TRY(parity_node_sigmoid_gate(tape, eager(PARITY_OP_SIGMOID_GATE), "full_gate", gated, p[0], &gated_again));
    return parity_node_cross_entropy(tape, eager(PARITY_OP_CROSS_ENTROPY), "loss", gated_again, p[4], &g->data[0], 0,
                                     loss, NULL);
}

Test(nodes, heads_graph_matches_finite_differences) {
    graph g = {.forward = heads_forward};
    add_param(&g, "x", -1, 1, PARITY_SHAPE(4, 6));
    add_param(&g, "wq", -0.6, 0.6, PARITY_SHAPE(6, 6));
    add_param(&g, "wk", -0.6, 0.6, PARITY_SHAPE(3, 6));
    add_param(&g, "wgate", -0.8, 0.8, PARITY_SHAPE(1, 6));
    add_param(&g, "lm_head", -1, 1, PARITY_SHAPE(5, 6));
    g.data[0] = int64_tensor((int64_t[]){4, 1, 0, 2}, 4);
    check_gradients(&g, "heads");
    graph_release(&g);
}

// ---- (2) GatedDeltaNet: linear -> causal_conv1d -> split -> l2_norm, gdn_gating -> gated_delta_rule ----
enum { GDN_TOKENS = 6, GDN_MODEL = 4, GDN_CHANNELS = 10 }; // q (1 x 3) + k (1 x 3) + v (2 x 2)

static parity_error *gdn_forward(parity_tape *tape, const graph *g, parity_variable *const *p, parity_variable **loss) {
    // p: x (N, 4), in_proj_qkv (10, 4), conv (10, 3), in_proj_a (2, 4), in_proj_b (2, 4), A_log (2), dt_bias (2),
    //    lm_head (5, 4)
    bool kernel_l2norm = g->option != 0; // 0: l2_norm nodes in front; 1: the op's own use_qk_l2norm
    const parity_tensor *cu_seqlens = &g->data[1];
    parity_variable *qkv, *conv, *parts[3], *q, *k, *q3, *k3, *v3, *a, *b, *decay, *beta, *mixed, *flat;
    PARITY_TRY(parity_node_linear(tape, eager(PARITY_OP_LINEAR), "in_proj_qkv", p[0], p[1], NULL, &qkv));
    PARITY_TRY(parity_node_causal_conv1d(tape, eager(PARITY_OP_CAUSAL_CONV1D), "conv1d", qkv, p[2], cu_seqlens,
                                         PARITY_CAUSAL_CONV1D_SILU, &conv));
    PARITY_TRY(parity_node_split(tape, eager(PARITY_OP_SPLIT), "qkv_split", conv, (int64_t[]){3, 3, 4}, 3, parts));
    if (kernel_l2norm) {
        q = parts[0];
        k = parts[1];
    } else {
        PARITY_TRY(parity_node_l2_norm(tape, eager(PARITY_OP_L2_NORM), "q_norm", parts[0], 1e-6, &q));
        PARITY_TRY(parity_node_l2_norm(tape, eager(PARITY_OP_L2_NORM), "k_norm", parts[1], 1e-6, &k));
    }
    PARITY_TRY(parity_tape_reshape(tape, q, PARITY_SHAPE(GDN_TOKENS, 1, 3), &q3));
    PARITY_TRY(parity_tape_reshape(tape, k, PARITY_SHAPE(GDN_TOKENS, 1, 3), &k3));
    PARITY_TRY(parity_tape_reshape(tape, parts[2], PARITY_SHAPE(GDN_TOKENS, 2, 2), &v3));
    PARITY_TRY(parity_node_linear(tape, eager(PARITY_OP_LINEAR), "in_proj_a", p[0], p[3], NULL, &a));
    PARITY_TRY(parity_node_linear(tape, eager(PARITY_OP_LINEAR), "in_proj_b", p[0], p[4], NULL, &b));
    PARITY_TRY(parity_node_gdn_gating(tape, eager(PARITY_OP_GDN_GATING), "gating", a, b, p[5], p[6], &decay, &beta));
    PARITY_TRY(parity_node_gated_delta_rule(tape, eager(PARITY_OP_GATED_DELTA_RULE), "delta_rule", q3, k3, v3, decay, beta,
                                            cu_seqlens, 0, kernel_l2norm, &mixed)); // (N, 2, 2)
    PARITY_TRY(parity_tape_reshape(tape, mixed, PARITY_SHAPE(GDN_TOKENS, 4), &flat));
    return parity_node_cross_entropy(tape, eager(PARITY_OP_CROSS_ENTROPY), "loss", flat, p[7], &g->data[0], 0, loss, NULL);
}

static void gdn_graph(graph *g, int option) {
    *g = (graph){.forward = gdn_forward, .option = option};
    // sizes that keep every gradient well above the ~1e-10 round-off of the differences
    add_param(g, "x", -1.5, 1.5, PARITY_SHAPE(GDN_TOKENS, GDN_MODEL));
    add_param(g, "in_proj_qkv", -1.5, 1.5, PARITY_SHAPE(GDN_CHANNELS, GDN_MODEL));
    add_param(g, "conv", -1.5, 1.5, PARITY_SHAPE(GDN_CHANNELS, 3));
    add_param(g, "in_proj_a", -1.5, 1.5, PARITY_SHAPE(2, GDN_MODEL));
    add_param(g, "in_proj_b", -1.5, 1.5, PARITY_SHAPE(2, GDN_MODEL));
    add_param(g, "A_log", -1, 0.5, PARITY_SHAPE(2));
    add_param(g, "dt_bias", -0.5, 0.5, PARITY_SHAPE(2));
    add_param(g, "lm_head", -4, 4, PARITY_SHAPE(5, 4));
    g->data[0] = int64_tensor((int64_t[]){0, 3, 4, 1, 2, 4}, GDN_TOKENS);
    g->data[1] = int64_tensor((int64_t[]){0, 2, GDN_TOKENS}, 3); // two documents
}

Test(nodes, gated_delta_net_graph_matches_finite_differences) {
    for (int option = 0; option < 2; option++) {
        graph g;
        gdn_graph(&g, option);
        check_gradients(&g, option ? "gdn (use_qk_l2norm)" : "gdn (l2_norm nodes)");
        graph_release(&g);
    }
}

// gdn_gating with only beta used: g's missing incoming gradient must be read as zeros.
static parity_error *gating_beta_forward(parity_tape *tape, const graph *g, parity_variable *const *p,
                                         parity_variable **loss) {
    // p: a (3, 2), b (3, 2), A_log (2), dt_bias (2), lm_head (4, 2)
    parity_variable *decay, *beta;
    PARITY_TRY(parity_node_gdn_gating(tape, eager(PARITY_OP_GDN_GATING), "gating", p[0], p[1], p[2], p[3], &decay, &beta));
    return parity_node_cross_entropy(tape, eager(PARITY_OP_CROSS_ENTROPY), "loss", beta, p[4], &g->data[0], 0, loss, NULL);
}

Test(nodes, gdn_gating_with_one_output_unused) {
    graph g = {.forward = gating_beta_forward};
    add_param(&g, "a", -1, 1, PARITY_SHAPE(3, 2));
    add_param(&g, "b", -1, 1, PARITY_SHAPE(3, 2));
    add_param(&g, "A_log", -1, 0.5, PARITY_SHAPE(2));
    add_param(&g, "dt_bias", -0.5, 0.5, PARITY_SHAPE(2));
    add_param(&g, "lm_head", -1, 1, PARITY_SHAPE(4, 2));
    g.data[0] = int64_tensor((int64_t[]){3, 0, 2}, 3);
    check_gradients(&g, "gdn_gating (beta only)");
    // a, A_log and dt_bias reach the loss only through g: their gradients are exactly zero
    parity_tape tape;
    parity_variable *params[MAX_PARAMS], *loss;
    assert_ok(graph_run(&g, &tape, true, params, &loss), "gating");
    for (int i = 0; i < 4; i++) {
        if (i == 1) continue;
        for (int64_t j = 0; j < params[i]->gradient.numel; j++)
            cr_expect_eq(parity_tensor_get(&params[i]->gradient, j), 0.0, "%s[%lld] has gradient %g", g.names[i],
                         (long long)j, parity_tensor_get(&params[i]->gradient, j));
    }
    parity_tape_release(&tape);
    graph_release(&g);
}

// ---- (3) the glue: stack_rows and weighted_sum by finite differences, cast and dtypes exactly ----
static parity_error *glue_forward(parity_tape *tape, const graph *g, parity_variable *const *p, parity_variable **loss) {
    // p: first (3, 4), second (2, 4), lm_head (5, 4), aux_head (3, 4)
    parity_variable *stacked, *same, *main_loss, *aux_loss;
    parity_variable *parts[3] = {p[0], p[1], p[0]}; // `first` twice: both slices of the gradient accumulate
    PARITY_TRY(parity_node_stack_rows(tape, "stacked", parts, 3, &stacked)); // (8, 4)
    PARITY_TRY(parity_node_cast(tape, "same_dtype", stacked, PARITY_F64, &same));
    PARITY_TRY(parity_node_cross_entropy(tape, eager(PARITY_OP_CROSS_ENTROPY), "main_loss", same, p[2], &g->data[0], 0,
                                         &main_loss, NULL));
    PARITY_TRY(parity_node_cross_entropy(tape, eager(PARITY_OP_CROSS_ENTROPY), "aux_loss", p[1], p[3], &g->data[1], 0,
                                         &aux_loss, NULL));
    return parity_node_weighted_sum(tape, "total", main_loss, 1.0, aux_loss, 0.37, loss);
}

Test(nodes, glue_graph_matches_finite_differences) {
    graph g = {.forward = glue_forward};
    add_param(&g, "first", -1, 1, PARITY_SHAPE(3, 4));
    add_param(&g, "second", -1, 1, PARITY_SHAPE(2, 4));
    add_param(&g, "lm_head", -1, 1, PARITY_SHAPE(5, 4));
    add_param(&g, "aux_head", -1, 1, PARITY_SHAPE(3, 4));
    g.data[0] = int64_tensor((int64_t[]){0, 4, 2, 1, 3, 3, 0, 1}, 8);
    g.data[1] = int64_tensor((int64_t[]){2, 0}, 2);
    check_gradients(&g, "glue");
    graph_release(&g);
}

// Runs the last node's backward with `gradient` as its output's incoming gradient.
static void backward_last_node(parity_tape *tape, parity_variable *output, const parity_tensor *gradient) {
    assert_ok(parity_variable_accumulate(output, gradient), "seeding the output gradient");
    parity_node *node = &tape->nodes[tape->node_count - 1];
    assert_ok(node->backward(tape, node), node->op);
}

Test(nodes, cast_rounds_exactly_both_ways) {
    parity_tape tape;
    parity_tape_init(&tape, parity_test_exec(PARITY_CPU), PARITY_F64, true);
    parity_tensor wide = random_tensor("cast input", PARITY_F64, -3, 3, PARITY_SHAPE(4, 5));
    parity_variable *input, *narrow, *back;
    assert_ok(parity_tape_borrow(&tape, "input", &wide, true, &input), "borrow");
    // f64 -> bf16: each element rounded once to nearest even
    assert_ok(parity_node_cast(&tape, "to_bf16", input, PARITY_BF16, &narrow), "cast");
    cr_assert_eq(narrow->value.dtype, PARITY_BF16);
    cr_assert(narrow->requires_gradient);
    for (int64_t i = 0; i < wide.numel; i++)
        cr_assert_eq(parity_tensor_get(&narrow->value, i), parity_round_to_dtype(parity_tensor_get(&wide, i), PARITY_BF16));
    // its backward hands the bf16 gradient to the f64 input unchanged (bf16 -> f64 is exact)
    parity_tensor dnarrow = random_tensor("cast dnarrow", PARITY_BF16, -2, 2, PARITY_SHAPE(4, 5));
    backward_last_node(&tape, narrow, &dnarrow);
    cr_assert(input->has_gradient);
    for (int64_t i = 0; i < wide.numel; i++)
        cr_assert_eq(parity_tensor_get(&input->gradient, i), parity_tensor_get(&dnarrow, i));
    // bf16 -> f32 forward is exact; an f32 gradient comes back rounded to bf16 and accumulates
    assert_ok(parity_node_cast(&tape, "to_f32", narrow, PARITY_F32, &back), "cast back");
    for (int64_t i = 0; i < wide.numel; i++)
        cr_assert_eq(parity_tensor_get(&back->value, i), parity_tensor_get(&narrow->value, i));
    parity_tensor dback = random_tensor("cast dback", PARITY_F32, -2, 2, PARITY_SHAPE(4, 5));
    parity_tensor before;
    assert_ok(parity_tensor_to(&before, &narrow->gradient, PARITY_CPU, PARITY_BF16), "copy");
    backward_last_node(&tape, back, &dback);
    for (int64_t i = 0; i < wide.numel; i++) {
        double expected = parity_round_to_dtype(
            parity_tensor_get(&before, i) + parity_round_to_dtype(parity_tensor_get(&dback, i), PARITY_BF16), PARITY_BF16);
        cr_assert_eq(parity_tensor_get(&narrow->gradient, i), expected, "element %lld: %g, expected %g", (long long)i,
                     parity_tensor_get(&narrow->gradient, i), expected);
    }
    parity_tensor_release(&before);
    parity_tensor_release(&dback);
    parity_tensor_release(&dnarrow);
    parity_tape_release(&tape);
    parity_tensor_release(&wide);
}

Test(nodes, weighted_sum_mixes_dtypes) {
    parity_tape tape;
    parity_tape_init(&tape, parity_test_exec(PARITY_CPU), PARITY_BF16, true);
    parity_tensor a_value, b_value;
    assert_ok(parity_tensor_alloc(&a_value, PARITY_F32, PARITY_CPU, 0, NULL), "a");
    assert_ok(parity_tensor_alloc(&b_value, PARITY_BF16, PARITY_CPU, 0, NULL), "b");
    parity_tensor_set(&a_value, 0, 2.3125);
    parity_tensor_set(&b_value, 0, 0.8515625);
    parity_variable *a, *b, *out;
    assert_ok(parity_tape_borrow(&tape, "a", &a_value, true, &a), "borrow a");
    assert_ok(parity_tape_borrow(&tape, "b", &b_value, true, &b), "borrow b");
    double weight_a = 1.0, weight_b = 0.001;
    assert_ok(parity_node_weighted_sum(&tape, "total", a, weight_a, b, weight_b, &out), "weighted_sum");
    // computed in f64, stored once in a's dtype
    cr_assert_eq(out->value.dtype, PARITY_F32);
    double expected = parity_round_to_dtype(weight_a * 2.3125 + weight_b * 0.8515625, PARITY_F32);
    cr_assert_eq(parity_tensor_get(&out->value, 0), expected);
    assert_ok(parity_tape_backward(&tape, out), "backward");
    cr_assert_eq(parity_tensor_get(&a->gradient, 0), weight_a);
    cr_assert_eq(b->gradient.dtype, PARITY_BF16);
    cr_assert_eq(parity_tensor_get(&b->gradient, 0), parity_round_to_dtype(weight_b, PARITY_BF16));
    parity_tape_release(&tape);
    parity_tensor_release(&a_value);
    parity_tensor_release(&b_value);
}

Test(nodes, stack_rows_slices_and_checks_shapes) {
    parity_tape tape;
    parity_tape_init(&tape, parity_test_exec(PARITY_CPU), PARITY_F32, true);
    parity_tensor first = random_tensor("rows first", PARITY_F32, -1, 1, PARITY_SHAPE(2, 3));
    parity_tensor second = random_tensor("rows second", PARITY_F32, -1, 1, PARITY_SHAPE(1, 3));
    parity_tensor wrong = random_tensor("rows wrong", PARITY_F32, -1, 1, PARITY_SHAPE(1, 4));
    parity_variable *v[3], *out, *bad = NULL;
    assert_ok(parity_tape_borrow(&tape, "first", &first, true, &v[0]), "borrow");
    assert_ok(parity_tape_borrow(&tape, "second", &second, false, &v[1]), "borrow");
    assert_ok(parity_tape_borrow(&tape, "wrong", &wrong, true, &v[2]), "borrow");
    assert_ok(parity_node_stack_rows(&tape, "stacked", (parity_variable *[]){v[1], v[0]}, 2, &out), "stack_rows");
    cr_assert_eq(out->value.shape[0], 3);
    cr_assert_eq(out->value.shape[1], 3);
    for (int64_t i = 0; i < 9; i++) {
        double expected = i < 3 ? parity_tensor_get(&second, i) : parity_tensor_get(&first, i - 3);
        cr_assert_eq(parity_tensor_get(&out->value, i), expected);
    }
    parity_tensor dout = random_tensor("rows dout", PARITY_F32, -1, 1, PARITY_SHAPE(3, 3));
    backward_last_node(&tape, out, &dout);
    cr_assert(!v[1]->has_gradient, "a part without requires_gradient got a gradient");
    for (int64_t i = 0; i < 6; i++) cr_assert_eq(parity_tensor_get(&v[0]->gradient, i), parity_tensor_get(&dout, i + 3));
    size_t nodes = tape.node_count;
    parity_error *error = parity_node_stack_rows(&tape, "mismatched", (parity_variable *[]){v[0], v[2]}, 2, &bad);
    cr_assert(error, "stacking (2, 3) and (1, 4) must fail");
    char message[1024];
    parity_error_format(error, message, sizeof message);
    cr_log_info("stack_rows error: %s", message);
    cr_expect_eq(parity_error_kind_of(error), PARITY_ERROR_SHAPE);
    cr_expect(strstr(message, "mismatched") && strstr(message, "part 1"), "message: %s", message);
    cr_expect_eq(tape.node_count, nodes);
    parity_error_free(error);
    parity_tensor_release(&dout);
    parity_tape_release(&tape);
    parity_tensor_release(&first);
    parity_tensor_release(&second);
    parity_tensor_release(&wrong);
}

// ---- (4) a variable with two consumers: tied embedding / lm_head and add(x, x) ----
static parity_error *tied_forward(parity_tape *tape, const graph *g, parity_variable *const *p, parity_variable **loss) {
    // p: table (V, H) used as both the embedding and the lm_head; or (untied) embed, lm_head borrowed from it
    parity_variable *embedded, *doubled;
    parity_variable *head = g->option ? p[1] : p[0];
    PARITY_TRY(parity_node_embedding(tape, eager(PARITY_OP_EMBEDDING), "embed", &g->data[0], p[0], -1, &embedded));
    PARITY_TRY(parity_node_add(tape, eager(PARITY_OP_ADD), "doubled", embedded, embedded, &doubled)); // 2 * x
    return parity_node_cross_entropy(tape, eager(PARITY_OP_CROSS_ENTROPY), "loss", doubled, head, &g->data[1], 0, loss,
                                     NULL);
}

Test(nodes, two_consumers_accumulate) {
    graph tied = {.forward = tied_forward, .option = 0};
    add_param(&tied, "table", -1, 1, PARITY_SHAPE(6, 3));
    tied.data[0] = int64_tensor((int64_t[]){1, 5, 1, 0}, 4);
    tied.data[1] = int64_tensor((int64_t[]){5, 1, 2, 1}, 4);
    check_gradients(&tied, "tied");

    // The same graph with the two uses as two variables over the same storage: the tied gradient is
    // their sum (cross_entropy's written first, the embedding's added: the same f64 sum, bit for bit).
    parity_tape tape_tied, tape_untied;
    parity_variable *p_tied[MAX_PARAMS], *p_untied[MAX_PARAMS], *loss;
    assert_ok(graph_run(&tied, &tape_tied, true, p_tied, &loss), "tied");
    graph untied = {.forward = tied_forward, .option = 1, .count = 2};
    untied.names[0] = "embed";
    untied.names[1] = "lm_head";
    untied.params[0] = tied.params[0];
    untied.params[1] = tied.params[0];
    untied.params[0].owns_data = untied.params[1].owns_data = false;
    untied.data[0] = tied.data[0];
    untied.data[1] = tied.data[1];
    assert_ok(graph_run(&untied, &tape_untied, true, p_untied, &loss), "untied");
    double embed_norm = 0, head_norm = 0;
    for (int64_t i = 0; i < tied.params[0].numel; i++) {
        double from_embedding = parity_tensor_get(&p_untied[0]->gradient, i);
        double from_head = parity_tensor_get(&p_untied[1]->gradient, i);
        embed_norm += fabs(from_embedding);
        head_norm += fabs(from_head);
        cr_assert_eq(parity_tensor_get(&p_tied[0]->gradient, i), from_head + from_embedding, "element %lld", (long long)i);
    }
    cr_assert(embed_norm > 0 && head_norm > 0, "both consumers must contribute");
    parity_tape_release(&tape_tied);
    parity_tape_release(&tape_untied);
    graph_release(&tied);
}

// ---- (5) errors in a node's forward name the node (and record nothing) ----
static void expect_error(parity_error *error, parity_error_kind kind, const char *node_name, const char *also) {
    cr_assert(error, "%s: expected an error", node_name);
    char message[2048];
    parity_error_format(error, message, sizeof message);
    cr_log_info("%s", message);
    cr_expect_eq(parity_error_kind_of(error), kind, "%s: kind %s, expected %s", message,
                 parity_error_kind_name(parity_error_kind_of(error)), parity_error_kind_name(kind));
    cr_expect(strstr(message, node_name), "the message does not name the node %s: %s", node_name, message);
    cr_expect(strstr(message, also), "the message does not say '%s': %s", also, message);
    parity_error_free(error);
}

Test(nodes, forward_errors_name_the_node) {
    parity_tape tape;
    parity_tape_init(&tape, parity_test_exec(PARITY_CPU), PARITY_F64, true);
    parity_tensor x = random_tensor("error x", PARITY_F64, -1, 1, PARITY_SHAPE(3, 4));
    parity_tensor w = random_tensor("error w", PARITY_F64, -1, 1, PARITY_SHAPE(5, 6)); // in = 6, x has 4
    parity_variable *input, *weight, *out = NULL, *parts[2];
    assert_ok(parity_tape_borrow(&tape, "x", &x, true, &input), "borrow");
    assert_ok(parity_tape_borrow(&tape, "w", &w, true, &weight), "borrow");
    expect_error(parity_node_linear(&tape, eager(PARITY_OP_LINEAR), "model.layers.3.mlp.up_proj", input, weight, NULL, &out),
                 PARITY_ERROR_SHAPE, "model.layers.3.mlp.up_proj", "linear (eager)");
    expect_error(parity_node_add(&tape, eager(PARITY_OP_ADD), "model.layers.3.residual", input, weight, &out),
                 PARITY_ERROR_SHAPE, "model.layers.3.residual", "add (eager)");
    expect_error(parity_node_split(&tape, eager(PARITY_OP_SPLIT), "model.layers.3.split", input, (int64_t[]){1, 2}, 2, parts),
                 PARITY_ERROR_SHAPE, "model.layers.3.split", "split (eager)");
    expect_error(parity_node_weighted_sum(&tape, "model.loss", input, 1.0, weight, 1.0, &out), PARITY_ERROR_SHAPE,
                 "model.loss", "weighted_sum");
    cr_expect_eq(tape.node_count, 0, "a failed forward recorded %zu nodes", tape.node_count);
    parity_tape_release(&tape);

    // the glue runs on any device but refuses a variable that is not on the tape's device (before any
    // device work, so a context that only names cuda:0 will do, GPU or not)
    parity_tape gpu_tape;
    const parity_exec named_cuda = {.device = PARITY_CUDA(0)};
    parity_tape_init(&gpu_tape, &named_cuda, PARITY_F32, true);
    parity_variable *borrowed;
    assert_ok(parity_tape_borrow(&gpu_tape, "x", &x, true, &borrowed), "borrow");
    expect_error(parity_node_cast(&gpu_tape, "model.cast", borrowed, PARITY_F32, &out), PARITY_ERROR_USAGE, "model.cast",
                 "the input is on cpu, the tape on cuda:0");
    expect_error(parity_node_stack_rows(&gpu_tape, "model.router_logits", &borrowed, 1, &out), PARITY_ERROR_USAGE,
                 "model.router_logits", "on cpu, expected a contiguous tensor on the tape's device cuda:0");
    expect_error(parity_node_weighted_sum(&gpu_tape, "model.loss", borrowed, 1.0, borrowed, 1.0, &out), PARITY_ERROR_USAGE,
                 "model.loss", "expected both on the tape's device cuda:0");
    parity_tape_release(&gpu_tape);
    parity_tensor_release(&x);
    parity_tensor_release(&w);
}
