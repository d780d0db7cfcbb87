// plugins.h: loading backend plugins (shared libraries, ops/plugin_api.h) into the registry, from
// `--plugin PATH` options and the PARITY_PLUGINS environment variable (paths separated by ':').
// Every refusal is a PARITY_ERROR_USAGE naming the file and what is wrong with it; a refused plugin
// registers nothing. The loaded plugins are listed (path, SHA-256 of the file) for a run's context.
#ifndef PARITY_HARNESS_PLUGINS_H
#define PARITY_HARNESS_PLUGINS_H

#include <stddef.h>

#include "ops/core/error.h"

#define PARITY_PLUGINS_VARIABLE "PARITY_PLUGINS"

// Loads one plugin: dlopen (every symbol resolved now), both entry points, the API version, then its
// registrations, checked (known op, new (op, name, device)) and labelled "plugin PATH". A path
// already loaded is not loaded twice.
parity_error *parity_plugin_load(const char *path);
// Loads every path of a ':'-separated list (NULL or "" loads nothing), stopping at the first refusal.
parity_error *parity_plugins_load_list(const char *list);

typedef struct parity_plugin_info {
    const char *path;   // as given
    char sha256[65];    // of the file's bytes, hex
    size_t backends;    // backends it registered
} parity_plugin_info;

// The plugins loaded so far, in load order (valid until the process ends).
size_t parity_plugin_count(void);
const parity_plugin_info *parity_plugin_at(size_t index);

#endif
