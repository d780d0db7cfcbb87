// diagnose.c: reproduces the diagnosis of the A_log / dt_bias / in_proj_a gradients in
// suites/tests/test_upstream_hybrid.c's header (a cancellation in the dg graph: ~4e-3 relative in f32,
// ~1e-11 in f64; suites/smoke.yaml's fp32 fla exclusions cite it too). Not part of the build: run.sh applies
// emulate_transformers_f32.patch to a scratch copy of the repository, builds it and this program.
// For a golden/upstream case it prints, for the three gradients that reach the loss only through the
// GatedDeltaNet log decay g (and the worst of every other parameter), the relative L2 distance from our
// f64 eager gradient of:
//   HF fp64      transformers' fp64 gradients (grads.safetensors; float64 from end to end since the
//                reference script bypasses transformers' float32 casts, f32 gated delta rule before)
//   fla f64      our chunked algorithm in f64
//   emu-eager    the gated delta rule run in f32 inside the f64 model (DIAG_GDR_F32), recurrent
//   emu-fla      the same, chunked
//   f32 eager / f32 fla   the whole model in f32
// Run with DIAG_HF_DIAGONAL=1 to make the chunked backward take dG as transformers' autograd does
// (row sums minus column sums of the decay-matrix gradient, diagonal included).
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include "models/checkpoint/checkpoint.h"
#include "models/checkpoint/safetensors.h"
#include "models/model.h"
#include "models/batch.h"
static void die(parity_error *e, const char *what) { if (!e) return; char t[4096]; parity_error_format(e, t, sizeof t); fprintf(stderr, "%s: %s\n", what, t); exit(1); }
static parity_model *make(const char *dir, parity_dtype dt, const char *gdr, parity_batch *batch) {
    parity_model_config config; parity_parameters params = {0};
    die(parity_checkpoint_load(dir, PARITY_F64, &config, &params), "load");
    parity_op_names names = {.name = {[PARITY_OP_ID_GATED_DELTA_RULE] = gdr}};
    parity_model_requirements req; die(parity_model_requirements_of(&config, &req), "requirements");
    parity_bindings bindings; die(parity_model_bind(&req, &names, PARITY_CPU, dt, &bindings), "bind");
    parity_model *model; die(parity_model_create(&config, &params, PARITY_CPU, dt, &bindings, &model), "create");
    char path[512]; snprintf(path, sizeof path, "%s/batch.safetensors", dir);
    die(parity_batch_read(path, config.vocab_size, batch), "batch");
    parity_exec *exec; die(parity_exec_create(PARITY_CPU, &exec), "exec");
    parity_step_result r; die(parity_model_step(model, exec, batch, false, &r), "step");
    parity_exec_destroy(exec);
    return model;
}
static double rel(const parity_tensor *a, const parity_tensor *b) { double d=0,n=0; for (int64_t i=0;i<a->numel;i++){double x=parity_tensor_get(a,i),y=parity_tensor_get(b,i);d+=(x-y)*(x-y);n+=y*y;} return sqrt(d/n); }
int main(int argc, char **argv) {
    const char *dir = argv[1];
    die(parity_registry_register_builtins(), "reg");
    parity_batch b;
    parity_model *truth = make(dir, PARITY_F64, "eager", &b);
    parity_model *fla64 = make(dir, PARITY_F64, "fla", &b);
    setenv("DIAG_GDR_F32", "1", 1);
    parity_model *emu_eager = make(dir, PARITY_F64, "eager", &b);
    parity_model *emu_fla = make(dir, PARITY_F64, "fla", &b);
    unsetenv("DIAG_GDR_F32");
    parity_model *f32_fla = make(dir, PARITY_F32, "fla", &b);
    parity_model *f32_eager = make(dir, PARITY_F32, "eager", &b);
    char path[512]; snprintf(path, sizeof path, "%s/grads.safetensors", dir);
    parity_safetensors_file f; die(parity_safetensors_open(path, &f), "grads");
    printf("%-44s %9s %9s | %9s %9s %9s %9s\n", "parameter (rel L2 vs our f64 eager)", "HF fp64", "fla f64", "emu-eager", "emu-fla", "f32 eager", "f32 fla");
    double worst_other[7] = {0};
    for (size_t p = 0; p < truth->parameters.count; p++) {
        const parity_tensor *t = &truth->parameters.items[p].gradient;
        const char *name = truth->parameters.items[p].name;
        parity_tensor ref; die(parity_safetensors_load(&f, name, PARITY_F64, &ref), name);
        double v[6] = {rel(&ref, t), rel(&fla64->parameters.items[p].gradient, t), rel(&emu_eager->parameters.items[p].gradient, t),
                       rel(&emu_fla->parameters.items[p].gradient, t), rel(&f32_eager->parameters.items[p].gradient, t), rel(&f32_fla->parameters.items[p].gradient, t)};
        bool gate = strstr(name, "A_log") || strstr(name, "dt_bias") || strstr(name, "in_proj_a");
        if (gate) printf("%-44s %9.2e %9.2e | %9.2e %9.2e %9.2e %9.2e\n", name + 13, v[0], v[1], v[2], v[3], v[4], v[5]);
        else for (int k = 0; k < 6; k++) if (v[k] > worst_other[k]) worst_other[k] = v[k];
        parity_tensor_release(&ref);
    }
    printf("%-44s %9.2e %9.2e | %9.2e %9.2e %9.2e %9.2e\n", "worst of every other parameter", worst_other[0], worst_other[1], worst_other[2], worst_other[3], worst_other[4], worst_other[5]);
    return 0;
}
