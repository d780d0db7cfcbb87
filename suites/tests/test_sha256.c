// test_sha256.c: the checksums goldens record for their inputs. FIPS 180-4 known answers (one block,
// two blocks, the padding edge at 55/56/64 bytes, a million bytes fed in odd-sized pieces), and a
// file hashes to the same digest as its bytes.
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "golden/sha256.h"

typedef struct sha256_case {
    const char *name;
    const char *text;  // NULL: `repeat` copies of `fill`
    char fill;
    size_t repeat;
    const char *digest;
} sha256_case;

static const sha256_case cases[] = {
    {"empty", "", 0, 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
    {"abc", "abc", 0, 0, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
    {"two blocks", "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 0, 0,
     "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
    {"55 bytes (padding fits)", NULL, 'a', 55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"},
    {"56 bytes (padding spills)", NULL, 'a', 56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"},
    {"64 bytes (one full block)", NULL, 'a', 64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"},
    {"a million a", NULL, 'a', 1000000, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"},
};

static char *case_bytes(const sha256_case *c, size_t *length) {
    *length = c->text ? strlen(c->text) : c->repeat;
    char *bytes = malloc(*length + 1);
    if (c->text) memcpy(bytes, c->text, *length);
    else memset(bytes, c->fill, *length);
    return bytes;
}

Test(sha256, known_answers_in_one_call_and_in_pieces) {
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t length;
        char *bytes = case_bytes(&cases[i], &length), hex[65];
        parity_sha256_bytes(bytes, length, hex);
        cr_expect_str_eq(hex, cases[i].digest, "%s", cases[i].name);
        parity_sha256 hash;
        parity_sha256_begin(&hash);
        for (size_t offset = 0, piece = 1; offset < length; offset += piece, piece = piece * 3 % 97 + 1)
            parity_sha256_update(&hash, bytes + offset, offset + piece <= length ? piece : length - offset);
        parity_sha256_end(&hash, hex);
        cr_expect_str_eq(hex, cases[i].digest, "%s in pieces", cases[i].name);
        cr_expect(parity_sha256_is_hex(hex));
        free(bytes);
    }
}

Test(sha256, file_digest_equals_bytes_digest) {
    char path[] = "/tmp/parity-sha256-XXXXXX";
    int descriptor = mkstemp(path);
    cr_assert_geq(descriptor, 0);
    size_t length;
    char *bytes = case_bytes(&cases[6], &length), hex[65];
    cr_assert_eq(write(descriptor, bytes, length), (ssize_t)length);
    close(descriptor);
    cr_assert_null(parity_sha256_file(path, hex));
    cr_expect_str_eq(hex, cases[6].digest);
    unlink(path);
    parity_error *error = parity_sha256_file(path, hex);
    cr_assert_not_null(error);
    cr_expect(strstr(parity_error_message(error), path) && strstr(parity_error_message(error), "No such file"), "%s",
              parity_error_message(error));
    parity_error_free(error);
    free(bytes);
}

Test(sha256, hex_check) {
    static const struct {
        const char *text;
        bool valid;
    } rows[] = {
        {"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", true},
        {"E3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", false}, // uppercase
        {"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b85", false},  // 63 digits
        {"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b8550", false}, // 65 digits
        {"g3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", false},
        {"", false},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        cr_expect_eq(parity_sha256_is_hex(rows[i].text), rows[i].valid, "'%s'", rows[i].text);
}
