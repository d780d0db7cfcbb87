// file.c: atomic writes, mkdir -p and whole-file reads (file.h).
#include "ops/core/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ops/core/temporaries.h"

// Writes every byte to `descriptor`, syncs and closes it; `temporary` names it in errors.
static parity_error *write_all(int descriptor, const char *temporary, const void *data, size_t size) {
    const char *bytes = data;
    while (size > 0) {
        ssize_t written = write(descriptor, bytes, size);
        if (written < 0 && errno == EINTR) continue;
        if (written <= 0) {
            int saved_errno = written < 0 ? errno : EIO;
            close(descriptor);
            return PARITY_ERROR(PARITY_ERROR_IO, "%s: write failed: %s", temporary, strerror(saved_errno));
        }
        bytes += written, size -= (size_t)written;
    }
    // mkstemp creates 0600; the files are for everyone who can read the directory.
    const char *step = fchmod(descriptor, 0644) != 0 ? "chmod" : fsync(descriptor) != 0 ? "fsync" : NULL;
    if (step) {
        int saved_errno = errno;
        close(descriptor);
        return PARITY_ERROR(PARITY_ERROR_IO, "%s: %s failed: %s", temporary, step, strerror(saved_errno));
    }
    if (close(descriptor) != 0) return PARITY_ERROR(PARITY_ERROR_IO, "%s: close failed: %s", temporary, strerror(errno));
    return NULL;
}

static parity_error *refuse_replace(const char *path) {
    return PARITY_ERROR(PARITY_ERROR_USAGE, "%s: already exists; refusing to overwrite it", path);
}

// Moves the finished temporary file onto `path`.
static parity_error *publish(const char *temporary, const char *path, bool replace) {
    if (!replace) {
        if (renameat2(AT_FDCWD, temporary, AT_FDCWD, path, RENAME_NOREPLACE) == 0) return NULL;
        if (errno == EEXIST) return refuse_replace(path);
        if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP)
            return PARITY_ERROR(PARITY_ERROR_IO, "%s: cannot rename %s into place: %s", path, temporary, strerror(errno));
        struct stat info;
        if (lstat(path, &info) == 0) return refuse_replace(path);
    }
    if (rename(temporary, path) != 0)
        return PARITY_ERROR(PARITY_ERROR_IO, "%s: cannot rename %s into place: %s", path, temporary, strerror(errno));
    return NULL;
}

parity_error *parity_write_file_atomic(const char *path, const void *data, size_t size, bool replace) {
    char temporary[4096];
    if (!path || !path[0]) return PARITY_ERROR(PARITY_ERROR_USAGE, "writing a file: empty path");
    if (snprintf(temporary, sizeof temporary, "%s.tmp.XXXXXX", path) >= (int)sizeof temporary)
        return PARITY_ERROR(PARITY_ERROR_USAGE, "%.200s...: path too long", path);
    // Created and tracked with SIGINT/SIGTERM held off: a signal's handler may remove it from then on
    // (ops/core/temporaries.h), so a kill between this write and its rename leaves no temporary file.
    sigset_t saved;
    parity_temporaries_block(&saved);
    int descriptor = mkostemp(temporary, O_CLOEXEC);
    int saved_errno = errno, handle = -1;
    parity_error *error = descriptor < 0 ? NULL : parity_temporary_track(temporary, false, &handle);
    if (error) {
        close(descriptor);
        unlink(temporary);
    }
    parity_temporaries_unblock(&saved);
    if (descriptor < 0) return PARITY_ERROR(PARITY_ERROR_IO, "%s: cannot create: %s", temporary, strerror(saved_errno));
    if (error) return error;
    error = write_all(descriptor, temporary, data, size);
    if (!error) error = publish(temporary, path, replace);
    if (error) unlink(temporary); // ours alone: mkostemp made the name unique
    parity_temporary_forget(handle);
    return error;
}

parity_error *parity_make_directories(const char *directory) {
    char path[4096];
    if (!directory[0]) return PARITY_ERROR(PARITY_ERROR_USAGE, "an empty directory name");
    if (snprintf(path, sizeof path, "%s", directory) >= (int)sizeof path)
        return PARITY_ERROR(PARITY_ERROR_USAGE, "%.200s...: path too long", directory);
    for (char *p = path + 1;; p++) {
        if (*p != '/' && *p != '\0') continue;
        char saved = *p;
        *p = '\0';
        if (mkdir(path, 0777) != 0 && errno != EEXIST)
            return PARITY_ERROR(PARITY_ERROR_IO, "%s: cannot create directory: %s", path, strerror(errno));
        struct stat info;
        if (stat(path, &info) != 0)
            return PARITY_ERROR(PARITY_ERROR_IO, "%s: cannot create directory: %s", path, strerror(errno));
        if (!S_ISDIR(info.st_mode))
            return PARITY_ERROR(PARITY_ERROR_IO, "%s: cannot create directory: a file is in the way", path);
        if (saved == '\0') break;
        *p = saved;
    }
    return NULL;
}

parity_error *parity_make_parent_directories(const char *path) {
    char directory[4096];
    if (snprintf(directory, sizeof directory, "%s", path) >= (int)sizeof directory)
        return PARITY_ERROR(PARITY_ERROR_USAGE, "%.200s...: path too long", path);
    char *slash = strrchr(directory, '/');
    if (!slash || slash == directory) return NULL;
    *slash = '\0';
    return parity_make_directories(directory);
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
        if (!grown) free(buffer);
        buffer = grown;
    }
    int failed = ferror(stream);
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
