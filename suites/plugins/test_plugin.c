// test_plugin.c: the backend plugins suites/tests/test_plugins.c loads, one shared library per
// variant (built by the Makefile with -DPLUGIN_<VARIANT>): a good one, registering "plugin_copy", a
// CPU rms_norm backend whose kernels are the built-in eager ones (so it is correct by construction
// and every combo with it must pass), and one for each way a plugin can be refused.
#include "ops/plugin_api.h"
#include "ops/rms_norm/rms_norm.h"

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
