// test_device_args.c: parity_cuda_check_tensor is the one check every CUDA backend and the device-side
// tensor helpers run on a call's tensors, so its contract is pinned here, where no GPU is needed (the
// tensors are host buffers labelled with a CUDA device; the check never reads their elements): one
// error kind for one mistake (the wrong device: USAGE; not contiguous, no data: SHAPE), a message
// naming the op, the tensor and both devices, and NULL (an optional tensor left out) passing.
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "ops/core/cuda/device_args.h"
#include "ops/core/device.h"
#include "ops/core/tensor.h"

#define ROWS(table) (sizeof(table) / sizeof((table)[0]))

typedef enum tensor_form { FORM_NONE, FORM_CONTIGUOUS, FORM_TRANSPOSED, FORM_NO_DATA } tensor_form;

typedef struct check_case {
    const char *what;
    tensor_form form;
    parity_device on;       // the tensor's device
    parity_device expected; // the call's device
    bool fails;
    parity_error_kind kind;
    const char *message; // substring of the error's text
} check_case;

static const check_case check_cases[] = {
    {"no tensor (optional, left out)", FORM_NONE, PARITY_CUDA(0), PARITY_CUDA(0), false, PARITY_ERROR_USAGE, NULL},
    {"contiguous on the call's device", FORM_CONTIGUOUS, PARITY_CUDA(0), PARITY_CUDA(0), false, PARITY_ERROR_USAGE, NULL},
    {"contiguous on cuda:1 for cuda:1", FORM_CONTIGUOUS, PARITY_CUDA(1), PARITY_CUDA(1), false, PARITY_ERROR_USAGE, NULL},
    {"on the cpu", FORM_CONTIGUOUS, PARITY_CPU, PARITY_CUDA(0), true, PARITY_ERROR_USAGE,
     "rms_norm: weight is on cpu, the CUDA backend needs it on cuda:0"},
    {"on another CUDA device", FORM_CONTIGUOUS, PARITY_CUDA(1), PARITY_CUDA(0), true, PARITY_ERROR_USAGE,
     "rms_norm: weight is on cuda:1, the CUDA backend needs it on cuda:0"},
    {"a transposed view on the cpu (the device is named first)", FORM_TRANSPOSED, PARITY_CPU, PARITY_CUDA(0), true,
     PARITY_ERROR_USAGE, "weight is on cpu"},
    {"a transposed view", FORM_TRANSPOSED, PARITY_CUDA(0), PARITY_CUDA(0), true, PARITY_ERROR_SHAPE,
     "rms_norm: weight is not contiguous"},
    {"elements but no data", FORM_NO_DATA, PARITY_CUDA(0), PARITY_CUDA(0), true, PARITY_ERROR_SHAPE,
     "rms_norm: weight has no data"},
};

Test(cuda_tensor_check, one_error_kind_for_one_mistake) {
    float values[6] = {0};
    for (size_t row = 0; row < ROWS(check_cases); row++) {
        const check_case *c = &check_cases[row];
        parity_tensor tensor = parity_tensor_wrap(c->form == FORM_NO_DATA ? NULL : values, PARITY_F32, c->on, PARITY_SHAPE(2, 3));
        parity_tensor transposed;
        cr_assert_null(parity_tensor_transpose(&transposed, &tensor, 0, 1), "%s: transpose", c->what);
        const parity_tensor *checked = c->form == FORM_NONE ? NULL : c->form == FORM_TRANSPOSED ? &transposed : &tensor;
        parity_error *error = parity_cuda_check_tensor("rms_norm", "weight", checked, c->expected);
        if (!c->fails) {
            char text[512] = "";
            if (error) parity_error_format(error, text, sizeof text);
            cr_expect_null(error, "%s: unexpected error: %s", c->what, text);
            parity_error_free(error);
            continue;
        }
        cr_assert_not_null(error, "%s: expected an error", c->what);
        char text[512];
        parity_error_format(error, text, sizeof text);
        cr_expect_eq(parity_error_kind_of(error), c->kind, "%s: kind %s, message: %s", c->what,
                     parity_error_kind_name(parity_error_kind_of(error)), text);
        cr_expect(strstr(text, c->message) != NULL, "%s: \"%s\" lacks \"%s\"", c->what, text, c->message);
        parity_error_free(error);
    }
}
