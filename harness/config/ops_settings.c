// ops_settings.c: the growable list of raw kernel-selection settings (see ops_settings.h).
#include "harness/config/ops_settings.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *parity_ops_source_format(const parity_ops_source *source, char *buffer, size_t size) {
    if (!buffer || size == 0) return buffer;
    switch (source ? source->kind : PARITY_OPS_FROM_DEFAULT) {
    case PARITY_OPS_FROM_YAML: snprintf(buffer, size, "%s:%d", source->file, source->line); break;
    case PARITY_OPS_FROM_COMMAND_LINE: snprintf(buffer, size, "--ops"); break;
    default: snprintf(buffer, size, "default"); break;
    }
    return buffer;
}

parity_error *parity_ops_settings_add(parity_ops_settings *settings, const char *key, const char *value,
                                      const parity_ops_source *source) {
    if (!settings || !key || !value || !source)
        return PARITY_ERROR(PARITY_ERROR_USAGE, "parity_ops_settings_add needs settings, a key, a value and a source");
    if (settings->count == settings->capacity) {
        size_t capacity = settings->capacity ? settings->capacity * 2 : 16;
        parity_ops_setting *grown = realloc(settings->items, capacity * sizeof *grown);
        if (!grown) return PARITY_ERROR(PARITY_ERROR_MEMORY, "growing the kernel-selection settings list");
        settings->items = grown;
        settings->capacity = capacity;
    }
    parity_ops_setting *setting = &settings->items[settings->count];
    setting->key = strdup(key);
    setting->value = strdup(value);
    if (!setting->key || !setting->value) {
        free(setting->key);
        free(setting->value);
        return PARITY_ERROR(PARITY_ERROR_MEMORY, "storing kernel-selection setting %s", key);
    }
    setting->source = *source;
    settings->count++;
    return NULL;
}

void parity_ops_settings_free(parity_ops_settings *settings) {
    if (!settings) return;
    for (size_t i = 0; i < settings->count; i++) {
        free(settings->items[i].key);
        free(settings->items[i].value);
    }
    free(settings->items);
    settings->items = NULL;
    settings->count = settings->capacity = 0;
}
