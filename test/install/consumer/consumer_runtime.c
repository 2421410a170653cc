/* Plans and runs a small paged decode with the installed runtime (host backend). */
#include <math.h>
#include <stdio.h>

#include "fi/runtime.h"

int main(void) {
  fi_context *ctx = NULL;
  if (fi_context_create(FI_BACKEND_HOST, &ctx) != FI_SUCCESS) {
    printf("context: %s\n", fi_last_error(NULL));
    return 1;
  }
  fi_attention_params p = fi_attention_params_default(2, 1, 4);
  p.q_dtype = p.kv_dtype = FI_DTYPE_F32;
  p.page_size = 2;
  /* One request, 3 tokens on pages 1 and 0; keys all equal, so o = mean of the values. */
  int32_t indptr[2] = {0, 2}, indices[2] = {1, 0}, last[1] = {1};
  float q[8] = {1, 2, 3, 4, 5, 6, 7, 8}, o[8];
  float k[2 * 2 * 1 * 4], v[2 * 2 * 1 * 4];
  for (int i = 0; i < 16; ++i) k[i] = 0.5f, v[i] = (float)(i / 4); /* token value = slot */
  int64_t qs[3] = {1, 2, 4}, cs[4] = {2, 2, 1, 4};
  fi_tensor tq = fi_tensor_contiguous(q, FI_DTYPE_F32, 3, qs), to = fi_tensor_contiguous(o, FI_DTYPE_F32, 3, qs);
  fi_paged_kv_cache cache = {fi_tensor_contiguous(k, FI_DTYPE_F32, 4, cs),
                             fi_tensor_contiguous(v, FI_DTYPE_F32, 4, cs), FI_LAYOUT_NHD};
  fi_page_table pages = {indptr, indices, last};
  size_t bytes = 0;
  static char ws[1 << 20];
  fi_plan plan;
  if (fi_decode_workspace_size(ctx, &p, 1, &bytes) != FI_SUCCESS || bytes > sizeof(ws) ||
      fi_decode_plan(ctx, &p, 1, &pages, 2, NULL, ws, bytes, &plan) != FI_SUCCESS ||
      fi_decode_run(ctx, &plan, &tq, &cache, &pages, &to, NULL) != FI_SUCCESS) {
    printf("decode failed: %s\n", fi_last_error(ctx));
    return 1;
  }
  /* Tokens: page 1 slots 0,1 (values 2, 3), page 0 slot 0 (value 0): mean 5/3. */
  for (int i = 0; i < 8; ++i)
    if (fabsf(o[i] - 5.0f / 3.0f) > 1e-5f) {
      printf("o[%d] = %g, expected %g\n", i, o[i], 5.0 / 3.0);
      return 1;
    }
  printf("consumer_runtime: decode through the installed runtime OK (o = %g)\n", o[0]);
  fi_context_destroy(ctx);
  return 0;
}
