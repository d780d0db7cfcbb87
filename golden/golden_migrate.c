// golden_migrate.c: `parity golden migrate` (golden_migrate.h): a current golden is checked, an older
// one is recognized and refused with what to do.
#include "golden/golden_migrate.h"

#include <stdlib.h>
#include <string.h>

#include "golden/golden_seal.h"

// The schema of a file a current read refused: 1 (HDF5 without a seal), 2 (a seal of format 2), or 0.
static int older_schema(const uint8_t *data, size_t size) {
    static const uint8_t hdf5_signature[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
    static const char format2[] = "\x89parity golden\r\n\x1a\nformat 2\n";
    if (size >= sizeof hdf5_signature && memcmp(data, hdf5_signature, sizeof hdf5_signature) == 0) return 1;
    if (size > PARITY_GOLDEN_SEAL_BYTES && memcmp(data, format2, sizeof format2 - 1) == 0) return 2;
    return 0;
}

parity_error *parity_golden_migrate(const char *path, int *version) {
    *version = 0;
    uint8_t *data = NULL;
    size_t size = 0;
    PARITY_TRY(parity_golden_read_bytes(path, &data, &size));
    parity_golden golden;
    parity_error *error = parity_golden_decode(path, data, size, &golden);
    if (!error) {
        *version = PARITY_GOLDEN_SCHEMA_VERSION;
        parity_golden_release(&golden);
    } else if ((*version = older_schema(data, size)) != 0) {
        parity_error_free(error);
        error = PARITY_ERROR(PARITY_ERROR_DATA,
                             "%s: a schema_version %d golden cannot be migrated to schema_version %d: schema %d added "
                             "every parameter's gradient sketch (and the loss input's), which are computed from the "
                             "gradients and cannot be derived from the values an older golden stores. Regenerate it "
                             "with `parity golden generate --suite SUITE --force` on the kind of device it was made on "
                             "(the file is left as it is)",
                             path, *version, PARITY_GOLDEN_SCHEMA_VERSION, PARITY_GOLDEN_SCHEMA_VERSION);
    }
    free(data);
    return error;
}
