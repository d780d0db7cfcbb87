// plugin_api.h: what a backend plugin (a shared library that `parity --plugin PATH.so` or
// PARITY_PLUGINS=a.so:b.so loads) exports, in the spirit of ggml-backend's versioned entry points.
// A plugin includes this header and the op's header (ops/<op>/<op>.h: its kernel table and
// argument structs), defines the two entry points below with C linkage, and in
// parity_plugin_register calls parity_registry_add (ops/registry.h) once per backend. parity
// resolves the plugin's references to its own functions (parity_registry_add, PARITY_ERROR,
// parity_registry_find, ...) from the running `parity` executable, which exports them.
//
// At load parity checks, in this order, and refuses the plugin with a usage error (exit 2) naming it:
//   - the file opens as a shared library whose symbols all resolve;
//   - both entry points are there;
//   - parity_plugin_api_version() == PARITY_PLUGIN_API_VERSION of the parity that loads it;
//   - parity_plugin_register() returns NULL, and every backend it registered names an op of parity
//     (ops/op_id.h) and is new ((op, name, device) not registered before).
// A refused plugin leaves no backend behind. Every backend a plugin registers has the origin
// "plugin PATH" in `parity list backends` and in a run's context.
//
// Bump PARITY_PLUGIN_API_VERSION whenever parity_backend, an op's kernel table or argument structs,
// or the tensor / exec structs change layout: a plugin built against another version is refused.
#ifndef PARITY_PLUGIN_API_H
#define PARITY_PLUGIN_API_H

#include "ops/core/error.h"
#include "ops/registry.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PARITY_PLUGIN_API_VERSION 1

// The entry points' names (dlsym) and types.
#define PARITY_PLUGIN_VERSION_SYMBOL "parity_plugin_api_version"
#define PARITY_PLUGIN_REGISTER_SYMBOL "parity_plugin_register"
typedef int (*parity_plugin_version_fn)(void);
typedef parity_error *(*parity_plugin_register_fn)(void);

#define PARITY_PLUGIN_EXPORT __attribute__((visibility("default")))

// In a plugin: the version entry point, returning the version this header had when it was built.
#define PARITY_PLUGIN_DEFINE_VERSION()                                                                   \
    PARITY_PLUGIN_EXPORT int parity_plugin_api_version(void) { return PARITY_PLUGIN_API_VERSION; }

#ifdef __cplusplus
}
#endif

#endif
