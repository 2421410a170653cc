/* The documented default context: FI_BACKEND selects the backend, a value that names no
 * backend is an error (never a silent fall back to the host), and the context is created
 * once. Run by ctest under several FI_BACKEND values; argv[1] says what to expect:
 *   host   -- a host context
 *   error  -- NULL, with a message naming FI_BACKEND and its value
 *   cuda   -- a CUDA context when a GPU is usable, else NULL with the backend's message */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fi/runtime.h"

static int fails;
#define CHECK(cond, ...)                       \
  do {                                         \
    if (!(cond)) {                             \
      fprintf(stderr, "FAIL: " __VA_ARGS__);   \
      fputc('\n', stderr);                     \
      ++fails;                                 \
    }                                          \
  } while (0)

int main(int argc, char **argv) {
  const char *expect = argc > 1 ? argv[1] : "host";
  const char *env = getenv("FI_BACKEND");
  fi_context *ctx = fi_default_context();
  const char *msg = fi_last_error(NULL);
  printf("FI_BACKEND=%s: default context %s%s%s\n", env ? env : "(unset)",
         ctx ? (fi_context_backend(ctx) == FI_BACKEND_CUDA ? "cuda" : "host") : "NULL",
         ctx ? "" : ": ", ctx ? "" : msg);
  CHECK(fi_default_context() == ctx, "a second call returned another context");
  if (strcmp(expect, "host") == 0) {
    CHECK(ctx && fi_context_backend(ctx) == FI_BACKEND_HOST, "expected a host context");
  } else if (strcmp(expect, "error") == 0) {
    CHECK(ctx == NULL, "FI_BACKEND=%s gave a context instead of an error", env ? env : "");
    CHECK(strstr(msg, "FI_BACKEND") && env && strstr(msg, env),
          "message does not name FI_BACKEND and its value: \"%s\"", msg);
  } else if (strcmp(expect, "cuda") == 0) {
    if (fi_cuda_available())
      CHECK(ctx && fi_context_backend(ctx) == FI_BACKEND_CUDA, "expected a CUDA context");
    else
      CHECK(ctx == NULL && strlen(msg) > 0,
            "no usable GPU: expected NULL with a message, got %s", ctx ? "a context" : "no message");
  } else {
    CHECK(0, "unknown expectation %s", expect);
  }
  if (ctx) {
    /* The context works: a host/CUDA merge of one row through it. */
    float va[4] = {1, 2, 3, 4}, vb[4] = {5, 6, 7, 8}, sa = 0.5f, sb = 1.5f;
    int64_t vs[3] = {1, 1, 4}, ss[2] = {1, 1};
    if (fi_context_backend(ctx) == FI_BACKEND_HOST) {
      fi_tensor ta = fi_tensor_contiguous(va, FI_DTYPE_F32, 3, vs);
      fi_tensor tb = fi_tensor_contiguous(vb, FI_DTYPE_F32, 3, vs);
      fi_tensor la = fi_tensor_contiguous(&sa, FI_DTYPE_F32, 2, ss);
      fi_tensor lb = fi_tensor_contiguous(&sb, FI_DTYPE_F32, 2, ss);
      CHECK(fi_merge_state(ctx, &ta, &la, &tb, &lb, &ta, &la) == FI_SUCCESS, "merge failed: %s",
            fi_last_error(ctx));
      /* weights e^0.5 : e^1.5 -> a = 1 / (1 + e) */
      double w = 1.0 / (1.0 + 2.718281828459045);
      CHECK(va[0] > (float)(w * 1 + (1 - w) * 5) - 1e-5f && va[0] < (float)(w * 1 + (1 - w) * 5) + 1e-5f,
            "merged value %f", va[0]);
    }
  }
  if (fails) return 1;
  printf("test_default_context (%s): passed\n", expect);
  return 0;
}
