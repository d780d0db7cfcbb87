// provenance.c: collecting provenance (provenance.h). Nothing here fails: what cannot be found is
// recorded as "unknown".
#include "harness/provenance.h"

#include <cjson/cJSON.h>
#include <hdf5.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <yaml.h>

#include "harness/plugins/plugins.h"
#include "harness/text.h"
#include "ops/core/cuda_api.h"

char *openblas_get_config(void); // OpenBLAS: "OpenBLAS 0.3.21 NO_AFFINITY ..." (not in cblas.h everywhere)

const char *parity_utc_timestamp(char *buffer, size_t size, int compact) {
    time_t now = time(NULL);
    struct tm utc;
    gmtime_r(&now, &utc);
    strftime(buffer, size, compact ? "%Y%m%dT%H%M%SZ" : "%Y-%m-%dT%H:%M:%SZ", &utc);
    return buffer;
}

// First line of a shell command's output, or "" (stderr discarded).
static void command_output(const char *command, char *out, size_t size) {
    out[0] = '\0';
    FILE *pipe = popen(command, "r");
    if (!pipe) return;
    if (!fgets(out, (int)size, pipe)) out[0] = '\0';
    pclose(pipe);
    out[strcspn(out, "\r\n")] = '\0';
}

static void cpu_model(char *out, size_t size) {
    out[0] = '\0';
    FILE *file = fopen("/proc/cpuinfo", "r");
    if (!file) return;
    char line[512];
    while (fgets(line, sizeof line, file)) {
        if (strncmp(line, "model name", 10) != 0) continue;
        const char *colon = strchr(line, ':');
        if (colon) {
            parity_text_format(out, size, "%s", colon + 2);
            out[strcspn(out, "\r\n")] = '\0';
        }
        break;
    }
    fclose(file);
}

void parity_provenance_collect(parity_device device, int argc, char **argv, parity_provenance *out) {
    memset(out, 0, sizeof *out);
    char sha[64], dirty[64];
    command_output("git rev-parse HEAD 2>/dev/null", sha, sizeof sha);
    command_output("git status --porcelain --untracked-files=no 2>/dev/null | head -1", dirty, sizeof dirty);
    parity_text_format(out->git_sha, sizeof out->git_sha, "%s%s", sha[0] ? sha : "unknown", sha[0] && dirty[0] ? "-dirty" : "");
    parity_utc_timestamp(out->created, sizeof out->created, 0);
    if (gethostname(out->host, sizeof out->host) != 0) parity_text_format(out->host, sizeof out->host, "unknown");
    out->host[sizeof out->host - 1] = '\0';

    parity_device_info info;
    parity_error *error = parity_device_query(device, &info);
    if (device.type == PARITY_DEVICE_CPU) {
        char model[256];
        cpu_model(model, sizeof model);
        parity_text_format(out->device, sizeof out->device, "cpu%s%s%s", model[0] ? " (" : "", model, model[0] ? ")" : "");
    } else if (!error) {
        parity_text_format(out->device, sizeof out->device, "%s (SM%d, %.0f GiB)", info.name, info.compute_capability,
                           (double)info.total_memory / (1024.0 * 1024.0 * 1024.0));
    } else {
        parity_text_format(out->device, sizeof out->device, "%s (unavailable: %s)", parity_device_type_name(device.type),
                           parity_error_message(error));
    }
    parity_error_free(error);

    parity_text_format(out->compiler, sizeof out->compiler, "gcc %s", __VERSION__);
    unsigned major = 0, minor = 0, release = 0;
    H5get_libversion(&major, &minor, &release);
    char blas[128];
    parity_text_format(blas, sizeof blas, "%s", openblas_get_config());
    char *space = strchr(blas, ' ');
    if (space && (space = strchr(space + 1, ' '))) *space = '\0'; // "OpenBLAS 0.3.21"
    parity_text_format(out->libraries, sizeof out->libraries, "HDF5 %u.%u.%u, %s, libyaml %s, cJSON %s", major, minor, release,
                       blas, yaml_get_version_string(), cJSON_Version());
    if (parity_cuda_built()) {
        parity_cuda_versions(out->cuda_version, sizeof out->cuda_version, out->driver_version, sizeof out->driver_version);
        parity_text_extend(out->libraries, sizeof out->libraries, ", CUDA runtime %s", out->cuda_version);
        if (out->driver_version[0]) parity_text_extend(out->libraries, sizeof out->libraries, ", driver %s", out->driver_version);
    }
    for (int i = 0; i < argc; i++) parity_text_extend(out->command, sizeof out->command, "%s%s", i ? " " : "", argv[i]);
    for (size_t i = 0; i < parity_plugin_count(); i++) {
        const parity_plugin_info *plugin = parity_plugin_at(i);
        parity_text_extend(out->plugins, sizeof out->plugins, "%s%s (sha256 %s, %zu backend%s)", i ? "; " : "", plugin->path,
                           plugin->sha256, plugin->backends, plugin->backends == 1 ? "" : "s");
    }
}
