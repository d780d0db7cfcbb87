// value_support.c: vocabulary + registry answers (see value_support.h). Nothing here falls back to
// another value: a value that cannot run says why.
#include "harness/config/value_support.h"

#include <stdio.h>
#include <string.h>

#include "ops/registry.h"

bool parity_kernel_value_known(const parity_kernel_field *field, const char *value) {
    if (!field || !value) return false;
    return parity_kernel_field_value(field, value) || parity_registry_has_name(field->op, value);
}

bool parity_kernel_value_supported_on(const parity_kernel_field *field, const char *value,
                                      parity_device_type device) {
    if (!field || !value) return false;
    if (parity_kernel_value_targets(parity_kernel_field_value(field, value), device)) return true;
    return parity_registry_find(field->op, value, device) != NULL;
}

bool parity_kernel_value_sequence_parallel(const parity_kernel_field *field, const char *value) {
    const parity_kernel_value *seed_value = parity_kernel_field_value(field, value);
    if (seed_value) return seed_value->sequence_parallel;
    for (int device = 0; device < PARITY_DEVICE_TYPE_COUNT; device++) {
        const parity_backend *backend = parity_registry_find(field->op, value, (parity_device_type)device);
        if (backend && (backend->capabilities & PARITY_CAP_SEQUENCE_PARALLEL)) return true;
    }
    return false;
}

size_t parity_kernel_field_extra_values(const parity_kernel_field *field, const char **names, size_t capacity) {
    size_t found = 0;
    size_t count = parity_registry_count();
    for (size_t i = 0; i < count; i++) {
        const parity_backend *backend = parity_registry_at(i);
        if (!backend || strcmp(backend->op, field->op) != 0) continue;
        if (parity_kernel_field_value(field, backend->name)) continue;
        bool seen = false; // the same name registered on an earlier device
        for (size_t j = 0; j < i && !seen; j++) {
            const parity_backend *earlier = parity_registry_at(j);
            seen = earlier && strcmp(earlier->op, field->op) == 0 && strcmp(earlier->name, backend->name) == 0;
        }
        if (seen) continue;
        if (found < capacity) names[found] = backend->name;
        found++;
    }
    return found;
}

// Appends ", name" (or "name" first) to buffer without overflowing it.
static void append_name(char *buffer, size_t size, size_t *used, const char *name) {
    if (*used >= size) return;
    int written = snprintf(buffer + *used, size - *used, "%s%s", *used ? ", " : "", name);
    if (written > 0) *used += (size_t)written;
    if (*used >= size) *used = size - 1;
}

// device < 0: every value; otherwise only values written for that device type.
static const char *list_values(const parity_kernel_field *field, int device, char *buffer, size_t size) {
    if (!buffer || size == 0) return buffer;
    buffer[0] = '\0';
    size_t used = 0;
    for (size_t i = 0; i < field->value_count; i++) {
        const parity_kernel_value *value = &field->values[i];
        if (device < 0 || parity_kernel_value_supported_on(field, value->name, (parity_device_type)device))
            append_name(buffer, size, &used, value->name);
    }
    enum { EXTRA_MAX = 64 };
    const char *extra[EXTRA_MAX];
    size_t extra_count = parity_kernel_field_extra_values(field, extra, EXTRA_MAX);
    for (size_t i = 0; i < extra_count && i < EXTRA_MAX; i++)
        if (device < 0 || parity_kernel_value_supported_on(field, extra[i], (parity_device_type)device))
            append_name(buffer, size, &used, extra[i]);
    if (used == 0) snprintf(buffer, size, "none");
    return buffer;
}

const char *parity_kernel_field_allowed_values(const parity_kernel_field *field, char *buffer, size_t size) {
    return list_values(field, -1, buffer, size);
}

const char *parity_kernel_field_allowed_values_on(const parity_kernel_field *field, parity_device_type device,
                                                  char *buffer, size_t size) {
    return list_values(field, (int)device, buffer, size);
}

parity_value_status parity_kernel_value_check(const parity_kernel_field *field, const char *value, parity_device device,
                                              const parity_backend_need *need, parity_backend_check *check) {
    memset(check, 0, sizeof *check);
    check->verdict = PARITY_NOT_REGISTERED;
    if (!parity_kernel_value_supported_on(field, value, device.type)) {
        snprintf(check->reason, sizeof check->reason, "not supported on %s", parity_device_type_name(device.type));
        return PARITY_VALUE_NOT_SUPPORTED;
    }
    if (!parity_registry_find(field->op, value, device.type)) {
        snprintf(check->reason, sizeof check->reason, "%s",
                 device.type == PARITY_DEVICE_NPU ? "needs an Ascend NPU build" : "not built yet");
        return PARITY_VALUE_NOT_BUILT;
    }
    if (parity_registry_check(field->op, value, device, NULL, need, check) != PARITY_AVAILABLE)
        return PARITY_VALUE_UNAVAILABLE;
    snprintf(check->reason, sizeof check->reason, "available");
    return PARITY_VALUE_AVAILABLE;
}

parity_value_status parity_kernel_value_status(const parity_kernel_field *field, const char *value,
                                               parity_device device, char *reason, size_t reason_size) {
    parity_backend_check check;
    parity_value_status status = parity_kernel_value_check(field, value, device, NULL, &check);
    if (reason && reason_size) snprintf(reason, reason_size, "%s", check.reason);
    return status;
}
