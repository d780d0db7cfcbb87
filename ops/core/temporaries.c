// temporaries.c: the table of live temporary paths behind temporaries.h. Each slot is FREE, being
// filled (CLAIMED) or LIVE; only LIVE slots are read by parity_temporaries_remove, and a slot's path
// is written before it is published with a release store.
#include "ops/core/temporaries.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

enum { SLOT_FREE = 0, SLOT_CLAIMED, SLOT_LIVE };

typedef struct temporary_slot {
    atomic_int state;
    bool directory;
    char path[PARITY_TEMPORARY_PATH_MAX];
} temporary_slot;

static temporary_slot slots[PARITY_TEMPORARY_SLOTS];

parity_error *parity_temporary_track(const char *path, bool directory, int *handle) {
    *handle = -1;
    size_t length = strlen(path);
    if (length >= PARITY_TEMPORARY_PATH_MAX)
        return PARITY_ERROR(PARITY_ERROR_USAGE, "%.200s...: temporary path too long", path);
    for (int i = 0; i < PARITY_TEMPORARY_SLOTS; i++) {
        int expected = SLOT_FREE;
        if (!atomic_compare_exchange_strong(&slots[i].state, &expected, SLOT_CLAIMED)) continue;
        memcpy(slots[i].path, path, length + 1);
        slots[i].directory = directory;
        atomic_store_explicit(&slots[i].state, SLOT_LIVE, memory_order_release);
        *handle = i;
        return NULL;
    }
    return PARITY_ERROR(PARITY_ERROR_INTERNAL, "%s: more than %d temporary paths at once", path, PARITY_TEMPORARY_SLOTS);
}

void parity_temporary_forget(int handle) {
    if (handle < 0 || handle >= PARITY_TEMPORARY_SLOTS) return;
    atomic_store_explicit(&slots[handle].state, SLOT_FREE, memory_order_release);
}

void parity_temporaries_remove(void) {
    for (int pass = 0; pass < 2; pass++) // files, then the folders they were in
        for (int i = 0; i < PARITY_TEMPORARY_SLOTS; i++) {
            if (atomic_load_explicit(&slots[i].state, memory_order_acquire) != SLOT_LIVE) continue;
            if (slots[i].directory != (pass == 1)) continue;
            if (slots[i].directory) rmdir(slots[i].path);
            else unlink(slots[i].path);
        }
}

void parity_temporaries_block(sigset_t *saved) {
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals, saved);
}

void parity_temporaries_unblock(const sigset_t *saved) { pthread_sigmask(SIG_SETMASK, saved, NULL); }
