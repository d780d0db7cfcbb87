// test_upstream_gpu.c: the reference models on the GPU. Each shipped tiny checkpoint of golden/upstream
// with attention layers (the six attention models and the hybrid qwen3_5_tiny) runs one forward +
// backward on cuda:0 with every op eager, and is compared with what transformers computed, with the
// tolerances of test_upstream.c:
//   fp64: loss, aux_loss, grad_norm <= 1e-10 relative; every parameter's gradient <= 1e-10 relative L2
//         against grads.safetensors (plain batch) or its norm against reference.json (packed batch);
//         logits <= 1e-10 relative L2 (plain batch). transformers' fp64 run is float64 from end to end
//         and the CPU reaches <= 2e-14 (1.1e-11 on qwen3_5's g-only gradients, test_upstream_hybrid.c
//         says why); the GPU sums in another order, which moves fp64 results by ~1e-15 per sum.
//   fp32: loss <= 1e-5, aux_loss <= 1e-5, grad_norm <= 1e-4 relative to the fp64 truth
// and, in fp64, the GPU against the CPU eager on the same checkpoint and batch: loss, aux_loss,
// grad_norm and every parameter's gradient norm <= 1e-10 relative (the two run the same math; only
// the order of GEMM sums differs). Packed batches run where the case ships one. Without a GPU every
// test skips visibly (gpu_skip.h). Every maximum keeps NaN (upstream_take_worst).
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "golden/upstream_reference.h"
#include "gpu_skip.h"
#include "harness/evaluate.h"
#include "models/checkpoint/safetensors.h"
#include "upstream_compare.h"

typedef struct upstream_gpu_case {
    const char *model;
    bool has_packed_batch; // batch_packed.safetensors and the packed_* runs of reference.json
} upstream_gpu_case;

static const upstream_gpu_case cases[] = {
    {"llama3_tiny", true},   {"qwen2_tiny", true},       {"qwen3_tiny", true},    {"qwen3_moe_tiny", true},
    {"deepseek_v3_tiny", true}, {"seed_oss_tiny", true}, {"qwen3_5_tiny", false},
};

static const double gpu_vs_cpu_bound = 1e-10;

// One all-eager evaluation of `model` (plain or packed batch) on `device` in `dtype`.
static void evaluate(const char *model, bool packed, parity_dtype dtype, parity_device device, bool details,
                     parity_evaluation *out, char *label, size_t label_size) {
    char directory[256], batch[320], where[32];
    snprintf(directory, sizeof directory, UPSTREAM "/%s", model);
    snprintf(batch, sizeof batch, "%s/%s.safetensors", directory, packed ? "batch_packed" : "batch");
    snprintf(label, label_size, "%s %s %s on %s", model, packed ? "packed" : "plain", parity_dtype_name(dtype),
             parity_device_format(device, where, sizeof where));
    parity_evaluation_options options = {.checkpoint = directory, .batch_path = batch, .dtype = dtype, .device = device,
                                         .eager_baseline = true, .want_logits = details, .keep_gradients = details};
    parity_error *error = parity_evaluate(&options, out);
    cr_assert_null(error, "%s: %s", label, error ? upstream_error_text(error) : "");
}

// The GPU run of one (case, batch, dtype) against transformers.
static void check_against_transformers(const upstream_gpu_case *test_case, bool packed, parity_dtype dtype) {
    char label[256], directory[256];
    snprintf(directory, sizeof directory, UPSTREAM "/%s", test_case->model);
    bool details = !packed && dtype == PARITY_F64; // logits and every gradient tensor
    parity_evaluation evaluation;
    evaluate(test_case->model, packed, dtype, PARITY_CUDA(0), details, &evaluation, label, sizeof label);
    parity_step_result truth;
    parity_error *error = parity_upstream_run_read(directory, packed ? "packed_fp64_eager" : "fp64_eager", &truth);
    cr_assert_null(error, "%s: %s", label, error ? upstream_error_text(error) : "");
    const parity_step_result *step = &evaluation.step;
    double loss = upstream_relative(step->loss, truth.loss), grad_norm = upstream_relative(step->grad_norm, truth.grad_norm), aux = 0;
    cr_expect_eq(step->has_aux_loss, truth.has_aux_loss, "%s: aux loss presence differs from transformers", label);
    if (truth.has_aux_loss) aux = upstream_relative(step->aux_loss, truth.aux_loss);
    cr_expect_eq(step->parameter_count, truth.parameter_count, "%s: %zu parameters with gradients, transformers has %zu", label,
                 step->parameter_count, truth.parameter_count);
    if (dtype != PARITY_F64) {
        cr_log_info("%-40s loss %.1e aux %.1e grad_norm %.1e", label, loss, aux, grad_norm);
        cr_expect(loss <= 1e-5, "%s: loss relative error %.2e > 1e-5", label, loss);
        cr_expect(aux <= 1e-5, "%s: aux_loss relative error %.2e > 1e-5", label, aux);
        cr_expect(grad_norm <= 1e-4, "%s: grad_norm relative error %.2e > 1e-4", label, grad_norm);
        parity_step_result_release(&truth);
        parity_evaluation_release(&evaluation);
        return;
    }
    double worst = 0, logits = 0; // the worst gradient
    char worst_name[160] = "";
    if (details) { // every gradient tensor against grads.safetensors, the logits against logits.safetensors
        parity_safetensors_file file;
        char path[320];
        snprintf(path, sizeof path, "%s/grads.safetensors", directory);
        cr_assert_null(parity_safetensors_open(path, &file), "%s: %s", label, path);
        upstream_expect_float64_file(label, &file);
        for (size_t i = 0; i < evaluation.gradients.count; i++) {
            parity_tensor reference;
            error = parity_safetensors_load(&file, evaluation.gradients.items[i].name, PARITY_F64, &reference);
            cr_assert_null(error, "%s: %s", label, error ? upstream_error_text(error) : "");
            if (upstream_take_worst(&worst, upstream_relative_l2(&evaluation.gradients.items[i].value, &reference)))
                snprintf(worst_name, sizeof worst_name, "%s", evaluation.gradients.items[i].name);
            parity_tensor_release(&reference);
        }
        cr_expect_eq(evaluation.gradients.count, file.entry_count, "%s: %zu gradients, grads.safetensors has %zu", label,
                     evaluation.gradients.count, file.entry_count);
        parity_safetensors_close(&file);
        snprintf(path, sizeof path, "%s/logits.safetensors", directory);
        cr_assert_null(parity_safetensors_open(path, &file), "%s: %s", label, path);
        upstream_expect_float64_file(label, &file);
        parity_tensor reference;
        cr_assert_null(parity_safetensors_load(&file, "logits", PARITY_F64, &reference), "%s: logits", label);
        logits = upstream_relative_l2(&step->logits, &reference);
        parity_tensor_release(&reference);
        parity_safetensors_close(&file);
    } else { // packed: the per-parameter norms transformers recorded
        for (size_t i = 0; i < step->parameter_count; i++) {
            double norm = parity_step_result_norm(&truth, step->parameter_names[i], i);
            cr_assert(!isnan(norm), "%s: transformers has no '%s'", label, step->parameter_names[i]);
            if (upstream_take_worst(&worst, upstream_relative(step->parameter_grad_norms[i], norm)))
                snprintf(worst_name, sizeof worst_name, "%s", step->parameter_names[i]);
        }
    }
    const double bound = UPSTREAM_FP64_BOUND;
    cr_log_info("%-40s loss %.1e aux %.1e grad_norm %.1e worst gradient %.1e (%s) logits %.1e", label, loss, aux, grad_norm,
                worst, worst_name, logits);
    cr_expect(loss <= bound, "%s: loss relative error %.2e > %.0e", label, loss, bound);
    cr_expect(aux <= bound, "%s: aux_loss relative error %.2e > %.0e", label, aux, bound);
    cr_expect(grad_norm <= bound, "%s: grad_norm relative error %.2e > %.0e", label, grad_norm, bound);
    cr_expect(worst <= bound, "%s: gradient of %s relative error %.2e > %.0e", label, worst_name, worst, bound);
    cr_expect(logits <= bound, "%s: logits relative error %.2e > %.0e", label, logits, bound);
    parity_step_result_release(&truth);
    parity_evaluation_release(&evaluation);
}

// fp64 GPU eager against fp64 CPU eager on the same checkpoint and batch.
static void check_against_cpu(const upstream_gpu_case *test_case, bool packed) {
    char gpu_label[256], cpu_label[256];
    parity_evaluation gpu, cpu;
    evaluate(test_case->model, packed, PARITY_F64, PARITY_CUDA(0), false, &gpu, gpu_label, sizeof gpu_label);
    evaluate(test_case->model, packed, PARITY_F64, PARITY_CPU, false, &cpu, cpu_label, sizeof cpu_label);
    double loss = upstream_relative(gpu.step.loss, cpu.step.loss), grad_norm = upstream_relative(gpu.step.grad_norm, cpu.step.grad_norm);
    double aux = gpu.step.has_aux_loss ? upstream_relative(gpu.step.aux_loss, cpu.step.aux_loss) : 0, worst = 0;
    const char *worst_name = "";
    cr_assert_eq(gpu.step.parameter_count, cpu.step.parameter_count, "%s: %zu parameters with gradients, the cpu has %zu",
                 gpu_label, gpu.step.parameter_count, cpu.step.parameter_count);
    for (size_t i = 0; i < gpu.step.parameter_count; i++) {
        cr_expect_str_eq(gpu.step.parameter_names[i], cpu.step.parameter_names[i], "%s: parameter %zu", gpu_label, i);
        if (upstream_take_worst(&worst, upstream_relative(gpu.step.parameter_grad_norms[i], cpu.step.parameter_grad_norms[i])))
            worst_name = gpu.step.parameter_names[i];
    }
    cr_log_info("%-40s vs cpu: loss %.1e aux %.1e grad_norm %.1e worst parameter norm %.1e (%s)", gpu_label, loss, aux,
                grad_norm, worst, worst_name);
    cr_expect(loss <= gpu_vs_cpu_bound, "%s: loss differs from the cpu by %.2e relative", gpu_label, loss);
    cr_expect(aux <= gpu_vs_cpu_bound, "%s: aux_loss differs from the cpu by %.2e relative", gpu_label, aux);
    cr_expect(grad_norm <= gpu_vs_cpu_bound, "%s: grad_norm differs from the cpu by %.2e relative", gpu_label, grad_norm);
    cr_expect(worst <= gpu_vs_cpu_bound, "%s: the gradient norm of %s differs from the cpu by %.2e relative", gpu_label,
              worst_name, worst);
    parity_evaluation_release(&gpu);
    parity_evaluation_release(&cpu);
}

static void check_case(const char *model) {
    parity_test_require_gpu();
    const upstream_gpu_case *test_case = NULL;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (strcmp(cases[i].model, model) == 0) test_case = &cases[i];
    cr_assert_not_null(test_case, "%s is not in the case table", model);
    for (int packed = 0; packed <= (int)test_case->has_packed_batch; packed++) {
        check_against_transformers(test_case, packed, PARITY_F64);
        check_against_transformers(test_case, packed, PARITY_F32);
        check_against_cpu(test_case, packed);
    }
}

Test(upstream_gpu, llama3_tiny) { check_case("llama3_tiny"); }
Test(upstream_gpu, qwen2_tiny) { check_case("qwen2_tiny"); }
Test(upstream_gpu, qwen3_tiny) { check_case("qwen3_tiny"); }
Test(upstream_gpu, qwen3_moe_tiny) { check_case("qwen3_moe_tiny"); }
Test(upstream_gpu, deepseek_v3_tiny) { check_case("deepseek_v3_tiny"); }
Test(upstream_gpu, seed_oss_tiny) { check_case("seed_oss_tiny"); }
Test(upstream_gpu, qwen3_5_tiny) { check_case("qwen3_5_tiny"); }

// Every case of the table has a test above, and the table matches what golden/upstream ships.
Test(upstream_gpu, the_case_table_matches_the_shipped_files) {
    cr_expect_eq(sizeof cases / sizeof cases[0], 7);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[320];
        snprintf(path, sizeof path, UPSTREAM "/%s/batch_packed.safetensors", cases[i].model);
        FILE *file = fopen(path, "rb");
        cr_expect_eq(file != NULL, cases[i].has_packed_batch, "%s: has_packed_batch is %d but %s %s", cases[i].model,
                     cases[i].has_packed_batch, path, file ? "exists" : "does not exist");
        if (file) fclose(file);
    }
}
