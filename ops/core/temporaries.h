// temporaries.h: the temporary files and folders parity has made and not yet renamed or removed
// (an atomic write's "<path>.tmp.XXXXXX", a chart's scratch folder), kept in a fixed table that a
// signal handler can walk. A command killed by SIGINT/SIGTERM between a write and its rename calls
// parity_temporaries_remove from its handler (harness/cli/interrupt.c) before it dies, so no
// temporary file is left behind. The table has no locks and allocates nothing: a slot is claimed
// with an atomic exchange, filled, then published; the handler reads only published slots.
//
// A path is tracked from the moment it exists: a name known in advance is tracked before it is
// created; a name the system picks (mkostemp, mkdtemp) is created and tracked with SIGINT and SIGTERM
// blocked on the calling thread (parity_temporaries_block), so a handler running on that thread never
// meets a created, untracked path. The `parity` command runs its handler on the thread that installed
// it, the one that writes (harness/cli/interrupt.c). A path is forgotten after its rename or removal:
// a handler in between finds nothing to remove.
#ifndef PARITY_TEMPORARIES_H
#define PARITY_TEMPORARIES_H

#include <signal.h>
#include <stdbool.h>

#include "ops/core/error.h"

enum { PARITY_TEMPORARY_SLOTS = 64, PARITY_TEMPORARY_PATH_MAX = 4096 };

// Records `path` (a file, or with `directory` an empty-when-done folder) as live; *handle is for
// parity_temporary_forget. An INTERNAL error when every slot is in use (a leak: nothing holds 64
// temporary paths at once), a USAGE error for a path of PARITY_TEMPORARY_PATH_MAX bytes or more.
parity_error *parity_temporary_track(const char *path, bool directory, int *handle);
// The path is gone (renamed into place or removed): the slot is free again. A negative handle is ignored.
void parity_temporary_forget(int handle);
// Async-signal-safe (unlink and rmdir only): removes every tracked file, then every tracked folder
// (files first, so a folder whose files were tracked is empty by then). The slots stay taken: the
// process is about to end.
void parity_temporaries_remove(void);

// Blocks SIGINT and SIGTERM on the calling thread, saving the old mask in *saved; restore it with
// parity_temporaries_unblock. For the few instructions between creating a temporary path whose name
// the system picks and tracking it.
void parity_temporaries_block(sigset_t *saved);
void parity_temporaries_unblock(const sigset_t *saved);

#endif
