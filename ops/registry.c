// registry.c: backend storage, lookup and availability. Registration is rare (start-up, tests), so
// a mutex-guarded array is enough; lookups after start-up read a stable array.
#include "ops/registry.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/builtin_backends.h"
#include "ops/op_descriptor.h"

typedef struct registry_entry {
    parity_backend backend;
    char *owned_strings[4]; // copies of op, name, description, origin
} registry_entry;

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static registry_entry **entries; // each entry allocated once: pointers handed out stay valid until clear
static size_t entry_count, entry_capacity;
static bool builtins_registered;

static char *copy_string(const char *text) {
    if (!text) return NULL;
    size_t length = strlen(text) + 1;
    char *copy = malloc(length);
    if (copy) memcpy(copy, text, length);
    return copy;
}

static const registry_entry *find_locked(const char *op, const char *name, parity_device_type device) {
    for (size_t i = 0; i < entry_count; i++) {
        const parity_backend *backend = &entries[i]->backend;
        if (backend->device == device && strcmp(backend->op, op) == 0 && strcmp(backend->name, name) == 0)
            return entries[i];
    }
    return NULL;
}

static void free_entry(registry_entry *entry) {
    for (int s = 0; s < 4; s++) free(entry->owned_strings[s]);
    free(entry);
}

parity_error *parity_registry_add(const parity_backend *backend) {
    if (!backend || !backend->op || !backend->op[0] || !backend->name || !backend->name[0])
        return PARITY_ERROR(PARITY_ERROR_USAGE, "backend registration needs an op and a name");
    if ((unsigned)backend->device >= PARITY_DEVICE_TYPE_COUNT)
        return PARITY_ERROR(PARITY_ERROR_USAGE, "backend %s/%s: unknown device type %d", backend->op, backend->name,
                            (int)backend->device);
    pthread_mutex_lock(&registry_lock);
    parity_error *error = NULL;
    if (find_locked(backend->op, backend->name, backend->device)) {
        error = PARITY_ERROR(PARITY_ERROR_USAGE, "backend %s/%s on %s is already registered", backend->op, backend->name,
                             parity_device_type_name(backend->device));
    } else if (entry_count == entry_capacity) {
        size_t capacity = entry_capacity ? entry_capacity * 2 : 64;
        registry_entry **grown = realloc(entries, capacity * sizeof *grown);
        if (!grown) error = PARITY_ERROR(PARITY_ERROR_MEMORY, "growing the backend registry");
        else {
            entries = grown;
            entry_capacity = capacity;
        }
    }
    registry_entry *entry = error ? NULL : calloc(1, sizeof *entry);
    if (!error && !entry) error = PARITY_ERROR(PARITY_ERROR_MEMORY, "registering backend %s/%s", backend->op, backend->name);
    if (!error) {
        entry->backend = *backend;
        entry->owned_strings[0] = copy_string(backend->op);
        entry->owned_strings[1] = copy_string(backend->name);
        entry->owned_strings[2] = copy_string(backend->description ? backend->description : "");
        entry->owned_strings[3] = copy_string(backend->origin ? backend->origin : "builtin");
        if (!entry->owned_strings[0] || !entry->owned_strings[1] || !entry->owned_strings[2] || !entry->owned_strings[3]) {
            free_entry(entry);
            error = PARITY_ERROR(PARITY_ERROR_MEMORY, "registering backend %s/%s", backend->op, backend->name);
        } else {
            entry->backend.op = entry->owned_strings[0];
            entry->backend.name = entry->owned_strings[1];
            entry->backend.description = entry->owned_strings[2];
            entry->backend.origin = entry->owned_strings[3];
            entries[entry_count++] = entry;
        }
    }
    pthread_mutex_unlock(&registry_lock);
    return error;
}

void parity_registry_truncate(size_t count) {
    pthread_mutex_lock(&registry_lock);
    while (entry_count > count) free_entry(entries[--entry_count]);
    pthread_mutex_unlock(&registry_lock);
}

parity_error *parity_registry_set_origin(size_t from, const char *origin) {
    parity_error *error = NULL;
    pthread_mutex_lock(&registry_lock);
    for (size_t i = from; i < entry_count; i++) {
        char *copy = copy_string(origin ? origin : "builtin");
        if (!copy) {
            error = PARITY_ERROR(PARITY_ERROR_MEMORY, "setting the origin of backend %s/%s", entries[i]->backend.op,
                                 entries[i]->backend.name);
            break;
        }
        free(entries[i]->owned_strings[3]);
        entries[i]->owned_strings[3] = copy;
        entries[i]->backend.origin = copy;
    }
    pthread_mutex_unlock(&registry_lock);
    return error;
}

void parity_registry_clear(void) {
    pthread_mutex_lock(&registry_lock);
    for (size_t i = 0; i < entry_count; i++) free_entry(entries[i]);
    free(entries);
    entries = NULL;
    entry_count = entry_capacity = 0;
    builtins_registered = false;
    pthread_mutex_unlock(&registry_lock);
}

// Calls one built-in registration and checks that it registered what its line names.
static parity_error *register_builtin(const parity_builtin_backend *builtin) {
    parity_error *error = builtin->register_backend();
    if (!error && !parity_registry_find(builtin->op, builtin->name, builtin->device))
        error = PARITY_ERROR(PARITY_ERROR_INTERNAL, "%s registered no %s backend \"%s\" on %s", builtin->source, builtin->op,
                             builtin->name, parity_device_type_name(builtin->device));
    if (error)
        return parity_error_wrap(error, __FILE__, __LINE__, "registering the built-in %s backend \"%s\" on %s (%s)",
                                 builtin->op, builtin->name, parity_device_type_name(builtin->device), builtin->source);
    return NULL;
}

// Family by family (ops/builtin_ops.c), device by device, "eager" first, then in the table's order.
static parity_error *register_family(const parity_op_descriptor *op) {
    for (int device = 0; device < PARITY_DEVICE_TYPE_COUNT; device++)
        for (int eager_pass = 1; eager_pass >= 0; eager_pass--)
            for (size_t i = 0; i < parity_builtin_backend_count; i++) {
                const parity_builtin_backend *builtin = &parity_builtin_backends[i];
                if ((int)builtin->device != device || strcmp(builtin->op, op->name) != 0 ||
                    (strcmp(builtin->name, "eager") == 0) != (eager_pass == 1))
                    continue;
                PARITY_TRY(register_builtin(builtin));
            }
    return NULL;
}

parity_error *parity_registry_register_builtins(void) {
    pthread_mutex_lock(&registry_lock);
    bool already = builtins_registered;
    pthread_mutex_unlock(&registry_lock);
    if (already) return NULL;
    for (size_t i = 0; i < parity_builtin_backend_count; i++)
        PARITY_CHECK(parity_builtin_op_find(parity_builtin_backends[i].op), PARITY_ERROR_INTERNAL,
                     "%s registers a backend of op %s, which ops/builtin_ops.c does not list", parity_builtin_backends[i].source,
                     parity_builtin_backends[i].op);
    for (size_t i = 0; i < parity_builtin_op_count(); i++) PARITY_TRY(register_family(parity_builtin_op_at(i)));
    pthread_mutex_lock(&registry_lock);
    builtins_registered = true;
    pthread_mutex_unlock(&registry_lock);
    return NULL;
}

const parity_backend *parity_registry_find(const char *op, const char *name, parity_device_type device) {
    pthread_mutex_lock(&registry_lock);
    const registry_entry *entry = find_locked(op, name, device);
    pthread_mutex_unlock(&registry_lock);
    return entry ? &entry->backend : NULL;
}

size_t parity_registry_count(void) {
    pthread_mutex_lock(&registry_lock);
    size_t count = entry_count;
    pthread_mutex_unlock(&registry_lock);
    return count;
}

const parity_backend *parity_registry_at(size_t index) {
    pthread_mutex_lock(&registry_lock);
    const parity_backend *backend = index < entry_count ? &entries[index]->backend : NULL;
    pthread_mutex_unlock(&registry_lock);
    return backend;
}

bool parity_registry_has_name(const char *op, const char *name) {
    for (int device = 0; device < PARITY_DEVICE_TYPE_COUNT; device++)
        if (parity_registry_find(op, name, (parity_device_type)device)) return true;
    return false;
}

parity_availability parity_registry_check(const char *op, const char *name, parity_device device,
                                          const parity_device_info *info, const parity_backend_need *need,
                                          parity_backend_check *out) {
    memset(out, 0, sizeof *out);
    const parity_backend *backend = parity_registry_find(op, name, device.type);
    out->backend = backend;
    if (!backend) {
        snprintf(out->reason, sizeof out->reason, "no %s backend named '%s' for %s in this build", op, name,
                 parity_device_type_name(device.type));
        return out->verdict = PARITY_NOT_REGISTERED;
    }
    parity_device_info queried;
    if (!info) {
        parity_error *error = parity_device_query(device, &queried);
        if (error) {
            snprintf(out->reason, sizeof out->reason, "%s", parity_error_message(error));
            parity_error_free(error);
            return out->verdict = PARITY_DEVICE_ABSENT;
        }
        info = &queried;
    }
    if (device.type == PARITY_DEVICE_CUDA && backend->min_compute_capability > info->compute_capability) {
        snprintf(out->reason, sizeof out->reason, "needs SM%d+, device is SM%d", backend->min_compute_capability,
                 info->compute_capability);
        return out->verdict = PARITY_DEVICE_TOO_OLD;
    }
    if (backend->probe && !backend->probe(backend, info, out->reason, sizeof out->reason)) {
        if (!out->reason[0]) snprintf(out->reason, sizeof out->reason, "the backend's probe refused this device");
        return out->verdict = PARITY_PROBE_REFUSED;
    }
    if (!need) return out->verdict = PARITY_AVAILABLE;
    if (!(backend->dtypes & PARITY_DTYPE_BIT(need->dtype))) {
        snprintf(out->reason, sizeof out->reason, "does not support %s", parity_dtype_name(need->dtype));
        return out->verdict = PARITY_DTYPE_UNSUPPORTED;
    }
    out->missing = need->capabilities & ~backend->capabilities;
    if (out->missing) {
        char names[200];
        snprintf(out->reason, sizeof out->reason, "does not support %s",
                 parity_capability_names(out->missing, names, sizeof names));
        return out->verdict = PARITY_CAPABILITY_MISSING;
    }
    return out->verdict = PARITY_AVAILABLE;
}

parity_availability parity_registry_availability(const char *op, const char *name, parity_device device,
                                                 const parity_device_info *info, char *reason, size_t reason_size) {
    parity_backend_check check;
    parity_availability verdict = parity_registry_check(op, name, device, info, NULL, &check);
    if (reason && reason_size) snprintf(reason, reason_size, "%s", check.reason);
    return verdict;
}

parity_error *parity_registry_resolve(const char *op, const char *name, parity_device device,
                                      const parity_backend **out) {
    parity_backend_check check;
    *out = NULL;
    if (parity_registry_check(op, name, device, NULL, NULL, &check) != PARITY_AVAILABLE)
        return PARITY_ERROR(PARITY_ERROR_UNAVAILABLE, "%s backend '%s' is not available on %s: %s", op, name,
                            parity_device_type_name(device.type), check.reason);
    *out = check.backend;
    return NULL;
}

const char *parity_capability_names(uint32_t capabilities, char *buffer, size_t size) {
    static const struct {
        uint32_t flag;
        const char *name;
    } names[] = {
        {PARITY_CAP_VARLEN, "varlen/cu_seqlens"}, {PARITY_CAP_GQA, "GQA"}, {PARITY_CAP_PARTIAL_ROTARY, "partial rotary"},
        {PARITY_CAP_SEQUENCE_PARALLEL, "sequence parallel"}, {PARITY_CAP_EXPERT_PARALLEL, "expert parallel"},
        {PARITY_CAP_SLIDING_WINDOW, "sliding window"}, {PARITY_CAP_OFFSET_WEIGHT, "(1 + w) offset weight"},
        {PARITY_CAP_BATCH_INVARIANT, "batch invariance"}, {PARITY_CAP_DETERMINISTIC, "determinism"},
        {PARITY_CAP_FUSED_LINEAR, "fused linear"}, {PARITY_CAP_BLOCK_MASK, "block mask"},
    };
    if (!buffer || size == 0) return buffer;
    size_t used = 0;
    buffer[0] = '\0';
    for (size_t i = 0; i < sizeof names / sizeof names[0] && used < size; i++)
        if (capabilities & names[i].flag)
            used += (size_t)snprintf(buffer + used, size - used, "%s%s", used ? ", " : "", names[i].name);
    return buffer;
}
