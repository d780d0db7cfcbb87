// plugins.c: the plugin loader behind plugins.h (dlopen / dlsym; the `parity` executable exports
// its symbols, so a plugin's calls into parity resolve against the running binary).
#include "harness/plugins/plugins.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "golden/sha256.h"
#include "ops/op_id.h"
#include "ops/plugin_api.h"
#include "ops/registry.h"

enum { PLUGIN_MAX = 32 };

static parity_plugin_info loaded[PLUGIN_MAX];
static char *loaded_paths[PLUGIN_MAX];
static size_t loaded_count;

size_t parity_plugin_count(void) { return loaded_count; }

const parity_plugin_info *parity_plugin_at(size_t index) { return index < loaded_count ? &loaded[index] : NULL; }

static bool already_loaded(const char *path) {
    for (size_t i = 0; i < loaded_count; i++)
        if (strcmp(loaded_paths[i], path) == 0) return true;
    return false;
}

// The registrations after `before` must each name an op of parity; `path` names the plugin.
static parity_error *check_registrations(const char *path, size_t before) {
    for (size_t i = before; i < parity_registry_count(); i++) {
        const parity_backend *backend = parity_registry_at(i);
        parity_op_id id;
        if (!parity_op_id_find(backend->op, &id))
            return PARITY_ERROR(PARITY_ERROR_USAGE,
                                "plugin %s: backend '%s' names an unknown op '%s' (see parity list ops; an op's "
                                "registry name is its PARITY_OP_* string)",
                                path, backend->name, backend->op);
    }
    return NULL;
}

parity_error *parity_plugin_load(const char *path) {
    if (!path || !path[0]) return PARITY_ERROR(PARITY_ERROR_USAGE, "--plugin needs the path of a shared library");
    if (already_loaded(path)) return NULL;
    if (loaded_count == PLUGIN_MAX)
        return PARITY_ERROR(PARITY_ERROR_USAGE, "plugin %s: at most %d plugins can be loaded", path, PLUGIN_MAX);
    parity_plugin_info info = {.path = NULL};
    parity_error *error = parity_sha256_file(path, info.sha256);
    if (error) {
        parity_error_free(error);
        return PARITY_ERROR(PARITY_ERROR_USAGE, "plugin %s: cannot read the file", path);
    }
    // dlopen of a name without '/' searches the library path; a plugin is a file the user names
    char opened[4096];
    snprintf(opened, sizeof opened, "%s%s", strchr(path, '/') ? "" : "./", path);
    void *library = dlopen(opened, RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        const char *why = dlerror();
        return PARITY_ERROR(PARITY_ERROR_USAGE, "plugin %s: not a loadable shared library: %s", path,
                            why ? why : "dlopen failed");
    }
    parity_plugin_version_fn version = (parity_plugin_version_fn)dlsym(library, PARITY_PLUGIN_VERSION_SYMBOL);
    parity_plugin_register_fn register_backends = (parity_plugin_register_fn)dlsym(library, PARITY_PLUGIN_REGISTER_SYMBOL);
    if (!version || !register_backends) {
        dlclose(library);
        return PARITY_ERROR(PARITY_ERROR_USAGE,
                            "plugin %s: missing entry point %s (a plugin defines " PARITY_PLUGIN_VERSION_SYMBOL
                            " and " PARITY_PLUGIN_REGISTER_SYMBOL ", ops/plugin_api.h)",
                            path, !version ? PARITY_PLUGIN_VERSION_SYMBOL "()" : PARITY_PLUGIN_REGISTER_SYMBOL "()");
    }
    const int found = version();
    if (found != PARITY_PLUGIN_API_VERSION) {
        dlclose(library);
        return PARITY_ERROR(PARITY_ERROR_USAGE,
                            "plugin %s: built for plugin API version %d, this parity has version %d (rebuild it "
                            "against this parity's ops/plugin_api.h)",
                            path, found, PARITY_PLUGIN_API_VERSION);
    }
    const size_t before = parity_registry_count();
    error = register_backends();
    if (error) { // whatever its kind, a plugin that cannot register is a usage error of this run
        parity_registry_truncate(before);
        char text[1024];
        parity_error_format(error, text, sizeof text);
        parity_error_free(error);
        return PARITY_ERROR(PARITY_ERROR_USAGE, "plugin %s: registering its backends: %s", path, text);
    }
    error = check_registrations(path, before);
    char origin[4200];
    snprintf(origin, sizeof origin, "plugin %s", path);
    if (!error) error = parity_registry_set_origin(before, origin);
    if (error) {
        parity_registry_truncate(before);
        return error;
    }
    loaded_paths[loaded_count] = strdup(path);
    if (!loaded_paths[loaded_count]) {
        parity_registry_truncate(before);
        return PARITY_ERROR(PARITY_ERROR_MEMORY, "plugin %s: recording it", path);
    }
    info.path = loaded_paths[loaded_count];
    info.backends = parity_registry_count() - before;
    loaded[loaded_count++] = info;
    return NULL; // the library stays loaded for the life of the process
}

parity_error *parity_plugins_load_list(const char *list) {
    if (!list) return NULL;
    const char *cursor = list;
    while (*cursor) {
        const char *end = strchr(cursor, ':');
        size_t length = end ? (size_t)(end - cursor) : strlen(cursor);
        if (length > 0) {
            char *path = strndup(cursor, length);
            if (!path) return PARITY_ERROR(PARITY_ERROR_MEMORY, "reading " PARITY_PLUGINS_VARIABLE);
            parity_error *error = parity_plugin_load(path);
            free(path);
            if (error) return error;
        }
        if (!end) break;
        cursor = end + 1;
    }
    return NULL;
}
