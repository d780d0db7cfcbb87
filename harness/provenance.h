// provenance.h: where a result came from, for goldens and run reports: git sha, UTC time, host,
// device, compiler, library versions and the command line.
#ifndef PARITY_PROVENANCE_H
#define PARITY_PROVENANCE_H

#include <stddef.h>

#include "ops/core/device.h"

typedef struct parity_provenance {
    char git_sha[64];        // `git rev-parse HEAD` (+ "-dirty" with uncommitted changes), "unknown" outside git
    char created[32];        // ISO 8601 UTC, "2025-01-31T12:00:00Z"
    char host[128];
    char device[160];        // "cpu (AMD EPYC ...)", "NVIDIA H200 (SM90, 139 GiB)"
    char compiler[128];      // "gcc 12.2.0"
    char libraries[512];     // "HDF5 1.10.8, OpenBLAS 0.3.21 ..., libyaml 0.2.5, cJSON 1.7.15, CUDA runtime 13.0"
    char driver_version[32], cuda_version[32];
    char command[1024];      // the command line, arguments separated by spaces
    char plugins[1024];      // the backend plugins loaded: "PATH (sha256 HEX, N backends); ..." or ""
} parity_provenance;

void parity_provenance_collect(parity_device device, int argc, char **argv, parity_provenance *out);
// "2025-01-31T12:00:00Z" for now (UTC); `compact` gives "20250131T120000Z" (folder names).
const char *parity_utc_timestamp(char *buffer, size_t size, int compact);

#endif
