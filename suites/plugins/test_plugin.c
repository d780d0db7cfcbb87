// test_plugin.c: the backend plugins suites/tests/test_plugins.c loads, one shared library per
// variant (built by the Makefile with -DPLUGIN_<VARIANT>): a good one, registering "plugin_copy", a
// CPU rms_norm backend whose kernels are the built-in eager ones (so it is correct by construction
// and every combo with it must pass), one for each way a plugin can be refused, and three whose
// "plugin_copy" has a bug only `parity check op` sees (suites/tests/test_check_cli.c):
//   out_of_bounds    the forward also writes the byte just past the end of its output
//   nan              the backward writes NaN into dweight[min(3, H - 1)]
//   nondeterministic every second forward moves y[0] by one ulp, while claiming determinism
#include <math.h>

#include "ops/plugin_api.h"
#include "ops/rms_norm/rms_norm.h"

#if defined(PLUGIN_OUT_OF_BOUNDS) || defined(PLUGIN_NAN) || defined(PLUGIN_NONDETERMINISTIC)
#define PLUGIN_BUGGY_KERNELS 1
static const parity_rms_norm_kernels *eager_kernels; // the built-in CPU eager, wrapped below

static parity_error *buggy_forward(const parity_exec *exec, const parity_rms_norm_args *args, parity_saved *saved) {
    PARITY_TRY(eager_kernels->forward(exec, args, saved));
#if defined(PLUGIN_OUT_OF_BOUNDS)
    ((unsigned char *)args->output->data)[parity_tensor_nbytes(args->output)] = 0; // one byte past the end
#elif defined(PLUGIN_NONDETERMINISTIC)
    static int calls;
    if (calls++ % 2) {
        double y = parity_tensor_get(args->output, 0);
        parity_tensor_set(args->output, 0, nextafter(y, INFINITY));
        if (parity_tensor_get(args->output, 0) == y) parity_tensor_set(args->output, 0, -y - 1); // bf16: any change
    }
#endif
    return NULL;
}

static parity_error *buggy_backward(const parity_exec *exec, const parity_rms_norm_args *args, const parity_saved *saved,
                                    const parity_rms_norm_grads *grads) {
    PARITY_TRY(eager_kernels->backward(exec, args, saved, grads));
#if defined(PLUGIN_NAN)
    if (grads->dweight && grads->dweight->numel > 0)
        parity_tensor_set(grads->dweight, grads->dweight->numel > 3 ? 3 : grads->dweight->numel - 1, NAN);
#endif
    return NULL;
}

static const parity_rms_norm_kernels buggy_kernels = {buggy_forward, buggy_backward};
#endif

#if defined(PLUGIN_BAD_VERSION)
PARITY_PLUGIN_EXPORT int parity_plugin_api_version(void) { return PARITY_PLUGIN_API_VERSION + 1; }
#else
PARITY_PLUGIN_DEFINE_VERSION()
#endif

#if defined(PLUGIN_UNRESOLVED)
void parity_no_such_function(void); // defined nowhere: the library cannot be loaded
#endif

#if !defined(PLUGIN_NO_REGISTER)
PARITY_PLUGIN_EXPORT parity_error *parity_plugin_register(void) {
#if defined(PLUGIN_UNRESOLVED)
    parity_no_such_function();
#endif
    const parity_backend *eager = parity_registry_find(PARITY_OP_RMS_NORM, "eager", PARITY_DEVICE_CPU);
    if (!eager) return PARITY_ERROR(PARITY_ERROR_INTERNAL, "no CPU eager rms_norm to copy");
    parity_backend backend = *eager;
    backend.name = "plugin_copy";
    backend.description = "test plugin: the CPU eager rms_norm kernels under another name";
    backend.origin = NULL;
#if defined(PLUGIN_BUGGY_KERNELS)
    eager_kernels = eager->kernels;
    backend.kernels = &buggy_kernels;
    backend.description = "test plugin: the CPU eager rms_norm kernels with a bug only parity check op sees";
    backend.capabilities |= PARITY_CAP_DETERMINISTIC;
#endif
#if defined(PLUGIN_DUPLICATE)
    backend.name = "eager"; // already registered by parity
#elif defined(PLUGIN_UNKNOWN_OP)
    backend.op = "rms_normz";
#elif defined(PLUGIN_FAILS)
    PARITY_TRY(parity_registry_add(&backend)); // registered, then the plugin reports an error: rolled back
    return PARITY_ERROR(PARITY_ERROR_DATA, "the test plugin fails on purpose");
#endif
    return parity_registry_add(&backend);
}
#endif
