// golden_seal.c: writing and checking the 512-byte seal of a golden file (golden_seal.h), and the
// bounded whole-file read it is checked on. Acceptance is one comparison: the seal in the file must
// equal, byte for byte, the seal written for the payload that follows it. The parsing below only
// finds the words for a rejection (truncated, appended, damaged, old format).
#include "golden/golden_seal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "golden/sha256.h"

static const char signature[] = "\x89parity golden\r\n\x1a\n";
#define SIGNATURE_BYTES (sizeof signature - 1)
static const uint8_t hdf5_signature[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};

static const char *repair = "restore it (e.g. git checkout) or regenerate it with `parity golden generate --force`";

// The seal text for a payload of `length` bytes with hash `hex`, NUL-padded to the block size.
static void seal_text(char block[PARITY_GOLDEN_SEAL_BYTES], size_t length, const char hex[65], int format) {
    memset(block, 0, PARITY_GOLDEN_SEAL_BYTES);
    snprintf(block, PARITY_GOLDEN_SEAL_BYTES, "%sformat %d\npayload_bytes %zu\npayload_sha256 %s\n", signature, format, length, hex);
}

void parity_golden_seal(uint8_t *image, size_t size, int format) {
    char hex[65], block[PARITY_GOLDEN_SEAL_BYTES];
    size_t length = size - PARITY_GOLDEN_SEAL_BYTES;
    parity_sha256_bytes(image + PARITY_GOLDEN_SEAL_BYTES, length, hex);
    seal_text(block, length, hex, format);
    memcpy(image, block, PARITY_GOLDEN_SEAL_BYTES);
}

// Reads "<key> <decimal>\n" at *cursor (at most 18 digits, no sign). Lenient (leading zeros pass):
// it only finds the words for a seal the byte comparison has already rejected.
static bool parse_number_line(const char **cursor, const char *key, long long *out) {
    size_t key_length = strlen(key);
    const char *p = *cursor;
    if (strncmp(p, key, key_length) != 0 || p[key_length] != ' ') return false;
    p += key_length + 1;
    long long value = 0;
    int digits = 0;
    while (*p >= '0' && *p <= '9' && digits < 18) value = value * 10 + (*p++ - '0'), digits++;
    if (digits == 0 || *p != '\n') return false;
    *out = value;
    *cursor = p + 1;
    return true;
}

// The words for a seal that does not match: which field says what is wrong.
static parity_error *diagnose(const char *name, const uint8_t *data, size_t size, int format, const char *actual_hex) {
    char text[PARITY_GOLDEN_SEAL_BYTES + 1];
    memcpy(text, data, PARITY_GOLDEN_SEAL_BYTES);
    text[PARITY_GOLDEN_SEAL_BYTES] = '\0';
    const char *cursor = text + SIGNATURE_BYTES;
    long long stored_format = 0, stored_length = 0;
    if (!parse_number_line(&cursor, "format", &stored_format))
        return PARITY_ERROR(PARITY_ERROR_DATA, "%s: damaged golden: its seal has no readable format line; %s", name, repair);
    if (stored_format < format)
        return PARITY_ERROR(PARITY_ERROR_DATA,
                            "%s: golden format %lld, older than the format %d this parity reads (format 3 added the "
                            "gradient sketches, which cannot be derived from an older golden's values): regenerate it "
                            "with `parity golden generate --force`",
                            name, stored_format, format);
    if (stored_format != format)
        return PARITY_ERROR(PARITY_ERROR_DATA,
                            "%s: golden format %lld, this parity reads format %d (use the parity that wrote it, or "
                            "regenerate it with `parity golden generate --force`)",
                            name, stored_format, format);
    if (!parse_number_line(&cursor, "payload_bytes", &stored_length))
        return PARITY_ERROR(PARITY_ERROR_DATA, "%s: damaged golden: its seal has no readable payload_bytes line; %s", name, repair);
    size_t length = size - PARITY_GOLDEN_SEAL_BYTES;
    if ((unsigned long long)stored_length > length)
        return PARITY_ERROR(PARITY_ERROR_DATA, "%s: truncated golden: its seal records %lld payload bytes, the file holds %zu; %s",
                            name, stored_length, length, repair);
    if ((unsigned long long)stored_length < length)
        return PARITY_ERROR(PARITY_ERROR_DATA,
                            "%s: damaged golden: %llu bytes appended after its end (the seal records %lld payload bytes, "
                            "the file holds %zu); %s",
                            name, (unsigned long long)(length - (size_t)stored_length), stored_length, length, repair);
    const char *key = "payload_sha256 ";
    if (strncmp(cursor, key, strlen(key)) == 0) {
        char stored_hex[65];
        memcpy(stored_hex, cursor + strlen(key), 64);
        stored_hex[64] = '\0';
        if (strcmp(stored_hex, actual_hex) != 0)
            return PARITY_ERROR(PARITY_ERROR_DATA,
                                "%s: damaged golden: the sha256 of its payload is %.16s..., its seal records %.16s... "
                                "(a changed byte); %s",
                                name, actual_hex, stored_hex, repair);
    }
    char expected[PARITY_GOLDEN_SEAL_BYTES];
    seal_text(expected, length, actual_hex, format);
    size_t at = 0;
    while (at < PARITY_GOLDEN_SEAL_BYTES && (uint8_t)expected[at] == data[at]) at++;
    return PARITY_ERROR(PARITY_ERROR_DATA, "%s: damaged golden: byte %zu of its seal differs from the seal of its payload; %s",
                        name, at, repair);
}

parity_error *parity_golden_seal_check(const char *name, const uint8_t *data, size_t size, int format) {
    if (size == 0) return PARITY_ERROR(PARITY_ERROR_DATA, "%s: not a golden: the file is empty", name);
    if (size >= sizeof hdf5_signature && memcmp(data, hdf5_signature, sizeof hdf5_signature) == 0)
        return PARITY_ERROR(PARITY_ERROR_DATA,
                            "%s: an old-format golden (schema_version 1: HDF5 without the golden seal, so damage cannot "
                            "be detected, and without the gradient sketches of format 3); regenerate it with "
                            "`parity golden generate --force`",
                            name);
    if (size < SIGNATURE_BYTES || memcmp(data, signature, SIGNATURE_BYTES) != 0)
        return PARITY_ERROR(PARITY_ERROR_DATA, "%s: not a golden: it does not start with the golden signature (%zu bytes)", name, size);
    if (size <= PARITY_GOLDEN_SEAL_BYTES)
        return PARITY_ERROR(PARITY_ERROR_DATA, "%s: truncated golden: %zu bytes, less than its %d-byte seal and an HDF5 image; %s",
                            name, size, PARITY_GOLDEN_SEAL_BYTES, repair);
    char hex[65], expected[PARITY_GOLDEN_SEAL_BYTES];
    parity_sha256_bytes(data + PARITY_GOLDEN_SEAL_BYTES, size - PARITY_GOLDEN_SEAL_BYTES, hex);
    seal_text(expected, size - PARITY_GOLDEN_SEAL_BYTES, hex, format);
    if (memcmp(expected, data, PARITY_GOLDEN_SEAL_BYTES) == 0) return NULL;
    return diagnose(name, data, size, format, hex);
}

parity_error *parity_golden_read_bytes(const char *path, uint8_t **data, size_t *size) {
    *data = NULL;
    *size = 0;
    int descriptor = open(path, O_RDONLY | O_CLOEXEC);
    if (descriptor < 0) return PARITY_ERROR(PARITY_ERROR_IO, "%s: cannot open the golden: %s", path, strerror(errno));
    struct stat info;
    parity_error *error = NULL;
    if (fstat(descriptor, &info) != 0) error = PARITY_ERROR(PARITY_ERROR_IO, "%s: cannot stat the golden: %s", path, strerror(errno));
    else if (!S_ISREG(info.st_mode)) error = PARITY_ERROR(PARITY_ERROR_IO, "%s: the golden is not a regular file", path);
    else if ((uint64_t)info.st_size > PARITY_GOLDEN_MAX_BYTES)
        error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: %lld bytes, larger than any golden (at most %zu MiB): not a golden", path,
                             (long long)info.st_size, PARITY_GOLDEN_MAX_BYTES >> 20);
    size_t expected = error ? 0 : (size_t)info.st_size, used = 0;
    uint8_t *buffer = error ? NULL : malloc(expected + 1); // + 1: a byte past the size shows a file that grew
    if (!error && !buffer) error = PARITY_ERROR(PARITY_ERROR_MEMORY, "%s: %zu bytes to read the golden", path, expected + 1);
    while (!error) {
        ssize_t got = read(descriptor, buffer + used, expected + 1 - used);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) error = PARITY_ERROR(PARITY_ERROR_IO, "%s: read failed: %s", path, strerror(errno));
        else if (got == 0) break;
        else if ((used += (size_t)got) > expected) break;
    }
    close(descriptor);
    if (!error && used != expected)
        error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: the golden changed size while being read (%zu bytes, then %s%zu)", path, expected,
                             used > expected ? "more than " : "", used > expected ? expected : used);
    if (error) {
        free(buffer);
        return error;
    }
    *data = buffer;
    *size = used;
    return NULL;
}
