// dashboard_write.c: parity_dashboard_write (dashboard.h): renders the page, writes it into a new
// temporary directory beside --out and swaps that directory into place in one step
// (renameat2 RENAME_EXCHANGE; plain renames where the file system lacks it), then removes the old
// one. A reader sees the old dashboard or the new one, never a mix, and any failure leaves the old
// one as it was. Only a missing directory, an empty one or an earlier dashboard (holding the
// marker file) is replaced: a mistyped --out never deletes anyone's files.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ops/core/file.h"
#include "reports/dashboard/dashboard.h"

// What is at `path`: nothing, an empty directory, a dashboard, or something else (an error).
static parity_error *check_out(const char *path, bool *exists) {
    struct stat status;
    *exists = false;
    if (lstat(path, &status) != 0) {
        if (errno == ENOENT) return NULL;
        return PARITY_ERROR(PARITY_ERROR_IO, "%s: cannot use as the dashboard directory: %s", path, strerror(errno));
    }
    if (!S_ISDIR(status.st_mode)) return PARITY_ERROR(PARITY_ERROR_IO, "%s: is not a directory; refusing to replace it with a dashboard", path);
    *exists = true;
    DIR *directory = opendir(path);
    if (!directory) return PARITY_ERROR(PARITY_ERROR_IO, "%s: cannot read the directory: %s", path, strerror(errno));
    bool empty = true, marked = false;
    for (struct dirent *entry; (entry = readdir(directory));) {
        if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0) continue;
        empty = false;
        if (strcmp(entry->d_name, PARITY_DASHBOARD_MARKER) == 0) marked = true;
    }
    closedir(directory);
    if (!empty && !marked)
        return PARITY_ERROR(PARITY_ERROR_IO,
                            "%s: a directory that is not a parity dashboard (no %s file in it); refusing to replace it: name a new or "
                            "empty directory, or an earlier dashboard",
                            path, PARITY_DASHBOARD_MARKER);
    return NULL;
}

static int remove_entry(const char *path, const struct stat *status, int type, struct FTW *walk) {
    (void)status, (void)type, (void)walk;
    return remove(path) == 0 ? 0 : -1;
}

static void remove_tree(const char *path) { nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS); }

static parity_error *write_into(const char *directory, const parity_text *html) {
    char path[4400];
    snprintf(path, sizeof path, "%s/index.html", directory);
    PARITY_TRY(parity_write_file_atomic(path, html->data, html->length, true));
    snprintf(path, sizeof path, "%s/%s", directory, PARITY_DASHBOARD_MARKER);
    static const char marker[] = "written by parity dashboard: this directory is replaced whole by the next one\n";
    PARITY_TRY(parity_write_file_atomic(path, marker, sizeof marker - 1, true));
    if (chmod(directory, 0755) != 0) return PARITY_ERROR(PARITY_ERROR_IO, "%s: cannot set its mode: %s", directory, strerror(errno));
    return NULL;
}

// Puts the finished `temporary` in the place of `out` (which exists when `exists`).
static parity_error *swap_in(const char *temporary, const char *out, bool exists) {
    if (!exists) {
        if (rename(temporary, out) == 0) return NULL;
        return PARITY_ERROR(PARITY_ERROR_IO, "%s: cannot move the new dashboard into place: %s", out, strerror(errno));
    }
    if (renameat2(AT_FDCWD, temporary, AT_FDCWD, out, RENAME_EXCHANGE) == 0) {
        remove_tree(temporary); // now the old dashboard
        return NULL;
    }
    if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP)
        return PARITY_ERROR(PARITY_ERROR_IO, "%s: cannot swap the new dashboard into place: %s", out, strerror(errno));
    // no RENAME_EXCHANGE here: move the old one aside, the new one in, then drop the old one
    char old[4200];
    snprintf(old, sizeof old, "%s.old.%ld", out, (long)getpid());
    if (rename(out, old) != 0) return PARITY_ERROR(PARITY_ERROR_IO, "%s: cannot move the old dashboard aside: %s", out, strerror(errno));
    if (rename(temporary, out) != 0) {
        int saved = errno;
        rename(old, out);
        return PARITY_ERROR(PARITY_ERROR_IO, "%s: cannot move the new dashboard into place: %s", out, strerror(saved));
    }
    remove_tree(old);
    return NULL;
}

parity_error *parity_dashboard_write(const char *db_path, const char *out_dir, const parity_dashboard_options *options,
                                     parity_dashboard_summary *summary) {
    memset(summary, 0, sizeof *summary);
    char out[4096];
    size_t length = strlen(out_dir);
    while (length > 1 && out_dir[length - 1] == '/') length--;
    if (!length || length >= sizeof out - 32) return PARITY_ERROR(PARITY_ERROR_USAGE, "--out needs a directory name (of at most 4000 bytes)");
    snprintf(out, sizeof out, "%.*s", (int)length, out_dir);
    if (strcmp(out, "/") == 0 || strcmp(out, ".") == 0 || strcmp(out, "..") == 0)
        return PARITY_ERROR(PARITY_ERROR_USAGE, "--out %s: name a directory of its own for the dashboard", out);
    bool exists;
    PARITY_TRY(check_out(out, &exists));

    parity_history *history;
    PARITY_TRY(parity_history_open(db_path, false, &history));
    parity_text html = {0};
    parity_error *error = parity_dashboard_render(history, db_path, options, &html, summary);
    parity_history_close(history);
    if (error) {
        parity_text_free(&html);
        return error;
    }
    error = parity_make_parent_directories(out);
    char temporary[4200];
    snprintf(temporary, sizeof temporary, "%s.tmp.XXXXXX", out);
    if (!error && !mkdtemp(temporary))
        error = PARITY_ERROR(PARITY_ERROR_IO, "%s: cannot create a directory beside it for the new dashboard: %s", out, strerror(errno));
    else if (!error) {
        error = write_into(temporary, &html);
        if (!error) error = swap_in(temporary, out, exists);
        if (error) remove_tree(temporary);
    }
    parity_text_free(&html);
    if (error) error = parity_error_wrap(error, __FILE__, __LINE__, "writing the dashboard to %s", out);
    return error;
}
