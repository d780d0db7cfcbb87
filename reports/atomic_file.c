// atomic_file.c: temp-file + rename writes, mkdir -p, and whole-file reads for the reports.
#include "reports/atomic_file.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

parity_error *parity_write_file_atomic(const char *path, const void *data, size_t size) {
    char temporary[4096];
    if (snprintf(temporary, sizeof temporary, "%s.tmp.XXXXXX", path) >= (int)sizeof temporary)
        return PARITY_ERROR(PARITY_ERROR_USAGE, "%s: path too long", path);
    int descriptor = mkstemp(temporary);
    if (descriptor < 0) return PARITY_ERROR(PARITY_ERROR_IO, "%s: cannot create a temporary file: %s", path, strerror(errno));
    const char *bytes = data;
    size_t written = 0;
    int saved_errno = 0;
    while (written < size) {
        ssize_t got = write(descriptor, bytes + written, size - written);
        if (got < 0) {
            if (errno == EINTR) continue;
            saved_errno = errno;
            break;
        }
        written += (size_t)got;
    }
    // mkstemp creates 0600; reports are for everyone who can read the directory.
    if (!saved_errno && fchmod(descriptor, 0644) != 0) saved_errno = errno;
    if (close(descriptor) != 0 && !saved_errno) saved_errno = errno;
    if (!saved_errno && rename(temporary, path) != 0) saved_errno = errno;
    if (saved_errno) {
        unlink(temporary);
        return PARITY_ERROR(PARITY_ERROR_IO, "%s: writing failed: %s", path, strerror(saved_errno));
    }
    return NULL;
}

parity_error *parity_make_directories(const char *directory) {
    char path[4096];
    if (!directory[0]) return PARITY_ERROR(PARITY_ERROR_USAGE, "an empty directory name");
    if (snprintf(path, sizeof path, "%s", directory) >= (int)sizeof path)
        return PARITY_ERROR(PARITY_ERROR_USAGE, "%s: path too long", directory);
    for (char *slash = path + 1;; slash++) {
        bool end = *slash == '\0';
        if (*slash != '/' && !end) continue;
        *slash = '\0';
        if (mkdir(path, 0755) != 0 && errno != EEXIST)
            return PARITY_ERROR(PARITY_ERROR_IO, "%s: cannot create directory: %s", path, strerror(errno));
        if (end) break;
        *slash = '/';
    }
    struct stat info;
    if (stat(directory, &info) != 0 || !S_ISDIR(info.st_mode))
        return PARITY_ERROR(PARITY_ERROR_IO, "%s: exists and is not a directory", directory);
    return NULL;
}

parity_error *parity_read_file(const char *path, char **data, size_t *size) {
    *data = NULL;
    *size = 0;
    FILE *stream = fopen(path, "rb");
    if (!stream) return PARITY_ERROR(PARITY_ERROR_IO, "%s: cannot open: %s", path, strerror(errno));
    size_t capacity = 1 << 16, used = 0;
    char *buffer = malloc(capacity);
    while (buffer) {
        used += fread(buffer + used, 1, capacity - used - 1, stream);
        if (used < capacity - 1) break;
        capacity *= 2;
        char *grown = realloc(buffer, capacity);
        if (!grown) {
            free(buffer);
            buffer = NULL;
        } else {
            buffer = grown;
        }
    }
    bool failed = ferror(stream);
    fclose(stream);
    if (!buffer) return PARITY_ERROR(PARITY_ERROR_MEMORY, "%s: out of memory reading it", path);
    if (failed) {
        free(buffer);
        return PARITY_ERROR(PARITY_ERROR_IO, "%s: read error", path);
    }
    buffer[used] = '\0';
    *data = buffer;
    *size = used;
    return NULL;
}
