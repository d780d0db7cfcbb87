// fuzz_common.c: the scratch files and text copies of fuzz_common.h.
#include "suites/fuzz/fuzz_common.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char scratch[256];

static int remove_entry(const char *path, const struct stat *info, int flag, struct FTW *where) {
    if (remove(path) != 0) fprintf(stderr, "fuzz: could not remove %s: %s\n", path, strerror(errno));
    return 0;
}

static void remove_scratch(void) {
    if (scratch[0]) nftw(scratch, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static const char *scratch_directory(void) {
    if (scratch[0]) return scratch;
    struct stat info;
    const char *base = stat("/dev/shm", &info) == 0 && S_ISDIR(info.st_mode) && access("/dev/shm", W_OK) == 0 ? "/dev/shm"
                       : getenv("TMPDIR")                                                                 ? getenv("TMPDIR")
                                                                                                         : "/tmp";
    snprintf(scratch, sizeof scratch, "%s/parity-fuzz.XXXXXX", base);
    if (!mkdtemp(scratch)) {
        fprintf(stderr, "fuzz: cannot create a scratch directory %s: %s\n", scratch, strerror(errno));
        abort();
    }
    atexit(remove_scratch);
    return scratch;
}

char *parity_fuzz_text(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    if (!text) abort();
    if (size) memcpy(text, data, size);
    text[size] = '\0';
    return text;
}

const char *parity_fuzz_file(const char *name, const uint8_t *data, size_t size) {
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", scratch_directory(), name);
    int descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (descriptor < 0) {
        fprintf(stderr, "fuzz: cannot create %s: %s\n", path, strerror(errno));
        abort();
    }
    for (size_t done = 0; done < size;) {
        ssize_t wrote = write(descriptor, data + done, size - done);
        if (wrote <= 0) {
            fprintf(stderr, "fuzz: cannot write %s: %s\n", path, strerror(errno));
            abort();
        }
        done += (size_t)wrote;
    }
    close(descriptor);
    return path;
}

const char *parity_fuzz_directory(const char *name) {
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", scratch_directory(), name);
    if (mkdir(path, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "fuzz: cannot create %s: %s\n", path, strerror(errno));
        abort();
    }
    return path;
}

void parity_fuzz_drop(parity_error *error) { parity_error_free(error); }
