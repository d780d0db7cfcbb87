// test_registry.c: the registry is the one install point for backends, so its promises are checked
// here: a third-party backend joins with one call (and its strings are copied); duplicates and
// malformed registrations are refused with messages that name the backend; availability is decided
// in a fixed order (registered? device present? compute capability? the backend's own probe?) and
// every "no" carries a reason a person can act on; resolve turns a "no" into an UNAVAILABLE error
// naming op, backend and reason. Each test starts from an empty registry and puts the built-ins back
// at the end (Criterion runs each test in its own process, so this is tidiness, not isolation).
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "ops/core/device.h"
#include "ops/core/cuda_api.h"
#include "ops/op_descriptor.h"
#include "ops/registry.h"
#include "suites/tests/gpu_skip.h"
#include "suites/tests/assert_ok.h"

#define ROWS(table) (sizeof(table) / sizeof((table)[0]))
#define TEST_OP "frobnicate" // a made-up op: the registry must not care which ops exist

static void registry_setup(void) { parity_registry_clear(); }

static void registry_teardown(void) {
    parity_registry_clear();
    parity_error_free(parity_registry_register_builtins());
}

TestSuite(registry, .init = registry_setup, .fini = registry_teardown);

// Stand-in kernel tables: the registry stores the pointer and never looks inside.
static const int acme_kernels = 1, other_kernels = 2;

Test(registry, third_party_backend_registers_with_one_call) {
    char op[] = TEST_OP, name[] = "acme_fused", description[] = "ACME fused frobnicator", origin[] = "acme extra_backends";
    parity_backend backend = {
        .op = op,
        .name = name,
        .device = PARITY_DEVICE_CPU,
        .dtypes = PARITY_FLOAT_DTYPES,
        .capabilities = PARITY_CAP_DETERMINISTIC | PARITY_CAP_GQA,
        .kernels = &acme_kernels,
        .description = description,
        .origin = origin,
    };
    size_t before = parity_registry_count();
    assert_ok(parity_registry_add(&backend), "registering acme_fused");

    // The registry keeps copies: scribbling over the caller's strings changes nothing.
    memset(op, 'x', sizeof op - 1);
    memset(name, 'x', sizeof name - 1);
    memset(description, 'x', sizeof description - 1);
    memset(origin, 'x', sizeof origin - 1);

    const parity_backend *found = parity_registry_find(TEST_OP, "acme_fused", PARITY_DEVICE_CPU);
    cr_assert_not_null(found, "a registered backend is not found");
    cr_expect_str_eq(found->op, TEST_OP);
    cr_expect_str_eq(found->name, "acme_fused");
    cr_expect_str_eq(found->description, "ACME fused frobnicator");
    cr_expect_str_eq(found->origin, "acme extra_backends");
    cr_expect_eq(found->kernels, &acme_kernels);
    cr_expect_eq(found->dtypes, PARITY_FLOAT_DTYPES);
    cr_expect_eq(found->capabilities, PARITY_CAP_DETERMINISTIC | PARITY_CAP_GQA);
    cr_expect_eq(found->device, PARITY_DEVICE_CPU);
    cr_expect_eq(parity_registry_count(), before + 1);
    cr_expect_eq(parity_registry_at(before), found, "registration order");
    cr_expect_null(parity_registry_at(before + 1));
    cr_expect(parity_registry_has_name(TEST_OP, "acme_fused"));
    cr_expect_not(parity_registry_has_name(TEST_OP, "acme_other"));
    cr_expect_null(parity_registry_find(TEST_OP, "acme_fused", PARITY_DEVICE_CUDA), "found on the wrong device");

    // Description and origin are optional.
    parity_backend minimal = {.op = TEST_OP, .name = "minimal", .device = PARITY_DEVICE_CUDA, .kernels = &other_kernels};
    assert_ok(parity_registry_add(&minimal), "registering minimal");
    const parity_backend *minimal_found = parity_registry_find(TEST_OP, "minimal", PARITY_DEVICE_CUDA);
    cr_assert_not_null(minimal_found);
    cr_expect_str_eq(minimal_found->description, "");
    cr_expect_str_eq(minimal_found->origin, "builtin");
    cr_expect(parity_registry_has_name(TEST_OP, "minimal"), "has_name looks at every device");
}

// A sequence of registrations; each row says whether it is accepted and, if not, what the message names.
Test(registry, duplicates_are_rejected_naming_op_name_and_device) {
    static const struct {
        const char *name;
        parity_device_type device;
        bool accepted;
        const char *device_word; // expected in the message when refused
    } rows[] = {
        {"acme_fused", PARITY_DEVICE_CPU, true, NULL},
        {"acme_fused", PARITY_DEVICE_CPU, false, "cpu"},
        {"acme_fused", PARITY_DEVICE_CUDA, true, NULL}, // same name on another device is another backend
        {"acme_fused", PARITY_DEVICE_CUDA, false, "cuda"},
        {"acme_fused", PARITY_DEVICE_NPU, true, NULL},
        {"acme_other", PARITY_DEVICE_CPU, true, NULL},
        {"acme_other", PARITY_DEVICE_CPU, false, "cpu"},
    };
    size_t accepted = 0;
    for (size_t row = 0; row < ROWS(rows); row++) {
        parity_backend backend = {.op = TEST_OP, .name = rows[row].name, .device = rows[row].device,
                                  .kernels = row % 2 ? &other_kernels : &acme_kernels};
        parity_error *error = parity_registry_add(&backend);
        if (rows[row].accepted) {
            assert_ok(error, rows[row].name);
            accepted++;
            continue;
        }
        cr_expect_not_null(error, "row %zu: duplicate %s/%s accepted", row, TEST_OP, rows[row].name);
        if (!error) continue;
        char expected[160];
        snprintf(expected, sizeof expected, "backend %s/%s on %s is already registered", TEST_OP, rows[row].name,
                 rows[row].device_word);
        cr_expect_eq(parity_error_kind_of(error), PARITY_ERROR_USAGE);
        cr_expect(strstr(parity_error_message(error), expected) != NULL, "row %zu: \"%s\" lacks \"%s\"", row,
                  parity_error_message(error), expected);
        parity_error_free(error);
    }
    cr_expect_eq(parity_registry_count(), accepted);
    // The first registration wins: a refused duplicate does not replace its kernels.
    cr_expect_eq(parity_registry_find(TEST_OP, "acme_fused", PARITY_DEVICE_CPU)->kernels, &acme_kernels);
}

Test(registry, malformed_registrations_are_rejected) {
    static const struct {
        const char *what;
        bool null_backend;
        const char *op, *name;
        int device;
        const char *needle;
    } rows[] = {
        {"no backend", true, NULL, NULL, 0, "needs an op and a name"},
        {"no op", false, NULL, "acme", PARITY_DEVICE_CPU, "needs an op and a name"},
        {"empty op", false, "", "acme", PARITY_DEVICE_CPU, "needs an op and a name"},
        {"no name", false, TEST_OP, NULL, PARITY_DEVICE_CPU, "needs an op and a name"},
        {"empty name", false, TEST_OP, "", PARITY_DEVICE_CPU, "needs an op and a name"},
        {"unknown device", false, TEST_OP, "acme", 7, "backend " TEST_OP "/acme: unknown device type 7"},
        {"negative device", false, TEST_OP, "acme", -1, "unknown device type -1"},
    };
    for (size_t row = 0; row < ROWS(rows); row++) {
        parity_backend backend = {.op = rows[row].op, .name = rows[row].name, .device = (parity_device_type)rows[row].device};
        parity_error *error = parity_registry_add(rows[row].null_backend ? NULL : &backend);
        cr_expect_not_null(error, "%s: accepted", rows[row].what);
        if (!error) continue;
        cr_expect_eq(parity_error_kind_of(error), PARITY_ERROR_USAGE, "%s", rows[row].what);
        cr_expect(strstr(parity_error_message(error), rows[row].needle) != NULL, "%s: \"%s\" lacks \"%s\"",
                  rows[row].what, parity_error_message(error), rows[row].needle);
        parity_error_free(error);
    }
    cr_expect_eq(parity_registry_count(), 0, "a refused registration was stored");
}

// ---- availability ------------------------------------------------------------------------------

static int probe_calls;
static parity_device_info last_probe_info;

static bool probe_refuses(const parity_backend *backend, const parity_device_info *info, char *reason, size_t size) {
    probe_calls++;
    last_probe_info = *info;
    snprintf(reason, size, "needs head_dim <= 256 on %s", info->name);
    return false;
}

static bool probe_refuses_silently(const parity_backend *backend, const parity_device_info *info, char *reason,
                                   size_t size) {
    probe_calls++;
    return false;
}

static bool probe_accepts(const parity_backend *backend, const parity_device_info *info, char *reason, size_t size) {
    probe_calls++;
    last_probe_info = *info;
    return true;
}

static void register_availability_fixtures(void) {
    static const parity_backend fixtures[] = {
        {.op = TEST_OP, .name = "acme_cpu", .device = PARITY_DEVICE_CPU},
        {.op = TEST_OP, .name = "acme_cpu_sm90", .device = PARITY_DEVICE_CPU, .min_compute_capability = 90},
        {.op = TEST_OP, .name = "acme_cuda", .device = PARITY_DEVICE_CUDA},
        {.op = TEST_OP, .name = "acme_sm90", .device = PARITY_DEVICE_CUDA, .min_compute_capability = 90},
        {.op = TEST_OP, .name = "acme_sm90_probe", .device = PARITY_DEVICE_CUDA, .min_compute_capability = 90,
         .probe = probe_refuses},
        {.op = TEST_OP, .name = "acme_refuses", .device = PARITY_DEVICE_CPU, .probe = probe_refuses},
        {.op = TEST_OP, .name = "acme_refuses_silently", .device = PARITY_DEVICE_CPU, .probe = probe_refuses_silently},
        {.op = TEST_OP, .name = "acme_accepts", .device = PARITY_DEVICE_CPU, .probe = probe_accepts},
        {.op = TEST_OP, .name = "acme_npu", .device = PARITY_DEVICE_NPU},
    };
    for (size_t i = 0; i < ROWS(fixtures); i++) assert_ok(parity_registry_add(&fixtures[i]), fixtures[i].name);
}

typedef enum { INFO_QUERY, INFO_SM80, INFO_SM90, INFO_SM100 } info_kind;

typedef struct availability_case {
    const char *name;
    parity_device device;
    info_kind info;
    parity_availability expected_without_gpu, expected_with_gpu;
    const char *reason_without_gpu, *reason_with_gpu; // substrings; "" = must be empty; NULL = the no-device reason
    int probe_calls;                                  // how often the probe must have run
} availability_case;

static const availability_case availability_cases[] = {
    {"missing", PARITY_CPU, INFO_QUERY, PARITY_NOT_REGISTERED, PARITY_NOT_REGISTERED,
     "no " TEST_OP " backend named 'missing' for cpu in this build", "no " TEST_OP " backend named 'missing' for cpu", 0},
    {"acme_cpu", PARITY_CUDA(0), INFO_QUERY, PARITY_NOT_REGISTERED, PARITY_NOT_REGISTERED,
     "named 'acme_cpu' for cuda", "named 'acme_cpu' for cuda", 0},
    {"acme_cpu", PARITY_CPU, INFO_QUERY, PARITY_AVAILABLE, PARITY_AVAILABLE, "", "", 0},
    {"acme_cpu_sm90", PARITY_CPU, INFO_QUERY, PARITY_AVAILABLE, PARITY_AVAILABLE, "", "", 0}, // SM applies to CUDA only
    {"acme_cuda", PARITY_CUDA(0), INFO_QUERY, PARITY_DEVICE_ABSENT, PARITY_AVAILABLE, NULL, "", 0},
    {"acme_cuda", PARITY_CUDA(15), INFO_QUERY, PARITY_DEVICE_ABSENT, PARITY_DEVICE_ABSENT, NULL,
     "cuda:15 requested but only", 0},
    {"acme_sm90", PARITY_CUDA(0), INFO_SM80, PARITY_DEVICE_TOO_OLD, PARITY_DEVICE_TOO_OLD,
     "needs SM90+, device is SM80", "needs SM90+, device is SM80", 0},
    {"acme_sm90", PARITY_CUDA(0), INFO_SM90, PARITY_AVAILABLE, PARITY_AVAILABLE, "", "", 0},
    {"acme_sm90", PARITY_CUDA(0), INFO_SM100, PARITY_AVAILABLE, PARITY_AVAILABLE, "", "", 0},
    {"acme_cuda", PARITY_CUDA(0), INFO_SM80, PARITY_AVAILABLE, PARITY_AVAILABLE, "", "", 0},
    // Capability is checked before the probe: an old device never reaches it.
    {"acme_sm90_probe", PARITY_CUDA(0), INFO_SM80, PARITY_DEVICE_TOO_OLD, PARITY_DEVICE_TOO_OLD,
     "needs SM90+, device is SM80", "needs SM90+, device is SM80", 0},
    {"acme_sm90_probe", PARITY_CUDA(0), INFO_SM90, PARITY_PROBE_REFUSED, PARITY_PROBE_REFUSED,
     "needs head_dim <= 256 on fake H100", "needs head_dim <= 256 on fake H100", 1},
    {"acme_refuses", PARITY_CPU, INFO_QUERY, PARITY_PROBE_REFUSED, PARITY_PROBE_REFUSED, "needs head_dim <= 256 on cpu",
     "needs head_dim <= 256 on cpu", 1},
    {"acme_refuses_silently", PARITY_CPU, INFO_QUERY, PARITY_PROBE_REFUSED, PARITY_PROBE_REFUSED,
     "the backend's probe refused this device", "the backend's probe refused this device", 1},
    {"acme_accepts", PARITY_CPU, INFO_QUERY, PARITY_AVAILABLE, PARITY_AVAILABLE, "", "", 1},
    {"acme_npu", (parity_device){PARITY_DEVICE_NPU, 0}, INFO_QUERY, PARITY_DEVICE_ABSENT, PARITY_DEVICE_ABSENT,
     "needs an Ascend NPU build", "needs an Ascend NPU build", 0},
};

static parity_device_info fake_info(info_kind kind) {
    parity_device_info info;
    memset(&info, 0, sizeof info);
    info.device = PARITY_CUDA(0);
    info.compute_capability = kind == INFO_SM80 ? 80 : kind == INFO_SM90 ? 90 : 100;
    snprintf(info.name, sizeof info.name, "%s", kind == INFO_SM80 ? "fake A100" : kind == INFO_SM90 ? "fake H100" : "fake B200");
    info.total_memory = (size_t)80 << 30;
    info.multiprocessors = 132;
    return info;
}

Test(registry, availability_table) {
    register_availability_fixtures();
    char no_device_reason[256] = "";
    bool gpu = parity_cuda_device_count(no_device_reason, sizeof no_device_reason) > 0;
    if (!gpu && parity_cuda_built())
        cr_expect(strstr(no_device_reason, "no CUDA device present") != NULL, "no-device reason: %s", no_device_reason);
    for (size_t row = 0; row < ROWS(availability_cases); row++) {
        const availability_case *c = &availability_cases[row];
        parity_device_info info = fake_info(c->info);
        char reason[256], device_name[32];
        memset(reason, '#', sizeof reason);
        probe_calls = 0;
        parity_availability got = parity_registry_availability(TEST_OP, c->name, c->device,
                                                               c->info == INFO_QUERY ? NULL : &info, reason, sizeof reason);
        parity_availability expected = gpu ? c->expected_with_gpu : c->expected_without_gpu;
        const char *needle = gpu ? c->reason_with_gpu : c->reason_without_gpu;
        if (!needle) needle = no_device_reason;
        parity_device_format(c->device, device_name, sizeof device_name);
        cr_expect_eq(got, expected, "%s on %s: availability %d, expected %d (reason \"%s\")", c->name, device_name,
                     (int)got, (int)expected, reason);
        if (needle[0]) cr_expect(strstr(reason, needle) != NULL, "%s on %s: reason \"%s\" lacks \"%s\"", c->name,
                                 device_name, reason, needle);
        else cr_expect_str_eq(reason, "", "%s on %s: an available backend has reason \"%s\"", c->name, device_name, reason);
        cr_expect_eq(probe_calls, c->probe_calls, "%s on %s: probe ran %d times", c->name, device_name, probe_calls);
    }
}

// The probe sees the device it is asked about: the caller's info, or the queried one.
Test(registry, probe_receives_the_device_info) {
    register_availability_fixtures();
    parity_device_info info = fake_info(INFO_SM90);
    probe_calls = 0;
    parity_registry_availability(TEST_OP, "acme_sm90_probe", PARITY_CUDA(0), &info, NULL, 0); // no reason buffer
    cr_expect_eq(probe_calls, 1);
    cr_expect_eq(last_probe_info.compute_capability, 90);
    cr_expect_str_eq(last_probe_info.name, "fake H100");
    parity_registry_availability(TEST_OP, "acme_accepts", PARITY_CPU, NULL, NULL, 0);
    cr_expect_eq(last_probe_info.device.type, PARITY_DEVICE_CPU);
    cr_expect_str_eq(last_probe_info.name, "cpu");

    // A short reason buffer is filled and terminated, never overrun.
    char small[12];
    memset(small, '#', sizeof small);
    parity_availability got = parity_registry_availability(TEST_OP, "acme_refuses", PARITY_CPU, NULL, small, 8);
    cr_expect_eq(got, PARITY_PROBE_REFUSED);
    cr_expect_eq(strlen(small), 7, "truncated reason \"%s\"", small);
    cr_expect_eq(small[8], '#', "wrote past the reason buffer");
}

// ---- resolve -----------------------------------------------------------------------------------

Test(registry, resolve_returns_the_backend_or_an_unavailable_error) {
    register_availability_fixtures();
    char no_device_reason[256] = "";
    bool gpu = parity_cuda_device_count(no_device_reason, sizeof no_device_reason) > 0;
    static const struct {
        const char *name;
        parity_device device;
        bool ok_without_gpu, ok_with_gpu;
        const char *reason; // substring of the error; NULL = the no-device reason
    } rows[] = {
        {"acme_cpu", PARITY_CPU, true, true, ""},
        {"acme_accepts", PARITY_CPU, true, true, ""},
        {"acme_refuses", PARITY_CPU, false, false, "needs head_dim <= 256 on cpu"},
        {"missing", PARITY_CPU, false, false, "no " TEST_OP " backend named 'missing' for cpu"},
        {"acme_cuda", PARITY_CUDA(0), false, true, NULL},
        {"acme_npu", {PARITY_DEVICE_NPU, 0}, false, false, "needs an Ascend NPU build"},
    };
    for (size_t row = 0; row < ROWS(rows); row++) {
        static const parity_backend sentinel = {.op = "sentinel"};
        const parity_backend *out = &sentinel; // resolve must overwrite it either way
        parity_error *error = parity_registry_resolve(TEST_OP, rows[row].name, rows[row].device, &out);
        bool ok = gpu ? rows[row].ok_with_gpu : rows[row].ok_without_gpu;
        if (ok) {
            assert_ok(error, rows[row].name);
            cr_expect_eq(out, parity_registry_find(TEST_OP, rows[row].name, rows[row].device.type), "%s", rows[row].name);
            continue;
        }
        cr_expect_null(out, "%s: a refused resolve leaves *out set", rows[row].name);
        cr_expect_not_null(error, "%s: resolved", rows[row].name);
        if (!error) continue;
        const char *message = parity_error_message(error);
        const char *reason = rows[row].reason ? rows[row].reason : no_device_reason;
        char head[128];
        snprintf(head, sizeof head, "%s backend '%s' is not available on %s: ", TEST_OP, rows[row].name,
                 parity_device_type_name(rows[row].device.type));
        cr_expect_eq(parity_error_kind_of(error), PARITY_ERROR_UNAVAILABLE, "%s", rows[row].name);
        cr_expect(strstr(message, head) != NULL, "%s: \"%s\" lacks \"%s\"", rows[row].name, message, head);
        cr_expect(strstr(message, reason) != NULL, "%s: \"%s\" lacks \"%s\"", rows[row].name, message, reason);
        parity_error_free(error);
    }
}

Test(registry, clear_and_builtins) {
    cr_expect_eq(parity_registry_count(), 0, "clear left backends");
    cr_expect_null(parity_registry_at(0));
    assert_ok(parity_registry_register_builtins(), "builtins");
    size_t builtins = parity_registry_count();
    assert_ok(parity_registry_register_builtins(), "builtins again");
    cr_expect_eq(parity_registry_count(), builtins, "register_builtins is not idempotent");
    for (size_t i = 0; i < builtins; i++) {
        const parity_backend *backend = parity_registry_at(i);
        cr_assert_not_null(backend);
        cr_expect(backend->op[0] && backend->name[0], "built-in %zu lacks op or name", i);
        cr_expect_not_null(backend->kernels, "built-in %s/%s has no kernels", backend->op, backend->name);
        cr_expect_eq(parity_registry_find(backend->op, backend->name, backend->device), backend);
    }
    parity_registry_clear();
    cr_expect_eq(parity_registry_count(), 0);
    assert_ok(parity_registry_register_builtins(), "builtins after clear");
    cr_expect_eq(parity_registry_count(), builtins, "clear + register_builtins does not restore the same set");
    // A third party can still join after the built-ins.
    parity_backend extra = {.op = TEST_OP, .name = "acme_late", .device = PARITY_DEVICE_CPU, .kernels = &acme_kernels};
    assert_ok(parity_registry_add(&extra), "late registration");
    cr_expect_eq(parity_registry_count(), builtins + 1);
}

// The checker goes on past availability when asked: dtype, then capabilities, each "no" with its
// reason and, for capabilities, exactly the flags that are missing.
Test(registry, check_adds_dtype_and_capabilities_to_availability) {
    parity_backend backend = {
        .op = TEST_OP,
        .name = "f64_varlen_only",
        .device = PARITY_DEVICE_CPU,
        .dtypes = PARITY_DTYPE_BIT(PARITY_F64),
        .capabilities = PARITY_CAP_VARLEN,
        .kernels = &acme_kernels,
    };
    assert_ok(parity_registry_add(&backend), "registering f64_varlen_only");
    static const struct {
        parity_dtype dtype;
        uint32_t capabilities;
        parity_availability verdict;
        uint32_t missing;
        const char *reason;
    } rows[] = {
        {PARITY_F64, PARITY_CAP_VARLEN, PARITY_AVAILABLE, 0, ""},
        {PARITY_BF16, PARITY_CAP_VARLEN, PARITY_DTYPE_UNSUPPORTED, 0, "does not support bf16"},
        {PARITY_F64, PARITY_CAP_VARLEN | PARITY_CAP_GQA | PARITY_CAP_PARTIAL_ROTARY, PARITY_CAPABILITY_MISSING,
         PARITY_CAP_GQA | PARITY_CAP_PARTIAL_ROTARY, "does not support GQA, partial rotary"},
    };
    for (size_t row = 0; row < ROWS(rows); row++) {
        parity_backend_need need = {rows[row].dtype, rows[row].capabilities};
        parity_backend_check check;
        cr_expect_eq(parity_registry_check(TEST_OP, "f64_varlen_only", PARITY_CPU, NULL, &need, &check), rows[row].verdict,
                     "row %zu", row);
        cr_expect_eq(check.verdict, rows[row].verdict, "row %zu", row);
        cr_expect_eq(check.missing, rows[row].missing, "row %zu", row);
        cr_expect_str_eq(check.reason, rows[row].reason, "row %zu", row);
        cr_expect_not_null(check.backend, "row %zu: the entry is named", row);
    }
    parity_backend_check check;
    cr_expect_eq(parity_registry_check(TEST_OP, "missing", PARITY_CPU, NULL, NULL, &check), PARITY_NOT_REGISTERED);
    cr_expect_null(check.backend);
}

// Every op id has one name, and the name leads back to the id; every built-in backend's op has an
// id, so a model can bind it; so does every op descriptor.
Test(registry, every_op_id_has_one_name) {
    for (int op = 0; op < PARITY_OP_ID_COUNT; op++) {
        const char *name = parity_op_id_name((parity_op_id)op);
        cr_expect_str_neq(name, "unknown op", "op id %d has no name", op);
        parity_op_id found;
        cr_expect(parity_op_id_find(name, &found) && found == (parity_op_id)op, "%s does not map back to its id", name);
    }
    parity_op_id found;
    cr_expect(!parity_op_id_find(TEST_OP, &found), "a made-up op has no id");
    assert_ok(parity_registry_register_builtins(), "registering the built-ins");
    for (size_t i = 0; i < parity_registry_count(); i++)
        cr_expect(parity_op_id_find(parity_registry_at(i)->op, &found), "built-in op %s has no id", parity_registry_at(i)->op);
    for (size_t i = 0; i < parity_builtin_op_count(); i++) // the descriptor list (ops/builtin_ops.c) names ids only
        cr_expect(parity_op_id_find(parity_builtin_op_at(i)->name, &found), "op descriptor %s has no id",
                  parity_builtin_op_at(i)->name);
}
