/* test/runtime/test_shared_prefix.c -- fi_split_shared_prefix on the host backend: random
 * page tables built with a known shared prefix (0-30 pages, then each request's own 1-4
 * pages), the outputs checked against the construction (one request: every page but its
 * last is its "prefix"); then batch 0, requests of one page (a last page is never shared)
 * and the bad input. */
#include "test_util.h"

static fi_context *ctx;

static void one_case(rng *r, int trial) {
  const int32_t batch = trial == 0 ? 1 : (int32_t)rng_int(r, 1, 8);
  const int32_t shared = trial == 1 ? 0 : (int32_t)rng_int(r, 0, 30);
  int32_t own[8], total = 0;
  for (int32_t i = 0; i < batch; ++i) total += own[i] = (int32_t)rng_int(r, 1, 4);
  int32_t num_pages = shared + total + 1;
  int32_t indptr[9], indices[8 * 34], last[8];
  int32_t n = 0, next = shared;
  indptr[0] = 0;
  for (int32_t i = 0; i < batch; ++i) {
    for (int32_t j = 0; j < shared; ++j) indices[n++] = j; /* the prefix: pages 0 .. P-1 */
    for (int32_t j = 0; j < own[i]; ++j) indices[n++] = next++;
    indptr[i + 1] = n;
    last[i] = (int32_t)rng_int(r, 1, 16);
  }
  /* Expected P: the construction's, except with one request, whose pages all are "shared"
   * with itself but its last; and in half the cases one request (any, request 0 too)
   * diverges inside the prefix, at a drawn page, which ends it there. */
  int32_t want = batch == 1 ? n - 1 : shared;
  if (batch > 1 && shared > 0 && rng_int(r, 0, 1)) {
    const int32_t d = (int32_t)rng_int(r, 0, batch - 1), at = (int32_t)rng_int(r, 0, shared - 1);
    indices[indptr[d] + at] = num_pages++;
    want = at;
  }
  const fi_page_table pages = {indptr, indices, last};
  int32_t qo[2], pi[2], px[8 * 34], pl[1], si[9], sx[8 * 34], sl[8];
  EXPECT_OK(fi_split_shared_prefix(ctx, batch, 16, &pages, num_pages, qo, pi, px, pl, si, sx,
                                   sl), ctx);
  EXPECT(qo[0] == 0 && qo[1] == batch, "trial %d: prefix_qo_indptr {%d, %d}", trial, qo[0],
         qo[1]);
  EXPECT(pi[0] == 0 && pi[1] == want, "trial %d: prefix_indptr {%d, %d}, want {0, %d}", trial,
         pi[0], pi[1], want);
  EXPECT(pl[0] == 16, "trial %d: prefix_last_page_len %d", trial, pl[0]);
  for (int32_t j = 0; j < pi[1] && j < want; ++j)
    EXPECT(px[j] == indices[j], "trial %d: prefix_indices[%d] = %d, want %d", trial, j, px[j],
           indices[j]);
  for (int32_t i = 0; i < batch; ++i) {
    EXPECT(si[i + 1] - si[i] == indptr[i + 1] - indptr[i] - want && sl[i] == last[i],
           "trial %d: request %d's suffix", trial, i);
    for (int32_t e = 0; e < indptr[i + 1] - indptr[i] - want; ++e)
      EXPECT(sx[si[i] + e] == indices[indptr[i] + want + e],
             "trial %d: request %d suffix page %d", trial, i, e);
  }
}

static void edges_and_bad_input(void) {
  int32_t qo[2] = {-1, -1}, pi[2] = {-1, -1}, px[4], pl[1], si[4] = {-1, -1, -1, -1}, sx[4];
  int32_t sl[3];
  /* batch 0: an empty prefix and an empty suffix table */
  const int32_t z[1] = {0};
  const fi_page_table none = {z, z, z};
  EXPECT_OK(fi_split_shared_prefix(ctx, 0, 16, &none, 4, qo, pi, px, pl, si, sx, sl), ctx);
  EXPECT(pi[1] == 0 && si[0] == 0 && qo[1] == 0, "batch 0: P %d", pi[1]);
  /* two requests of one page each, the same page: a last page is never shared */
  const int32_t ip[3] = {0, 1, 2}, ix[2] = {3, 3}, l[2] = {5, 7};
  const fi_page_table same = {ip, ix, l};
  EXPECT_OK(fi_split_shared_prefix(ctx, 2, 16, &same, 4, qo, pi, px, pl, si, sx, sl), ctx);
  EXPECT(pi[1] == 0 && si[2] == 2 && sx[1] == 3 && sl[1] == 7, "one page each: P %d", pi[1]);
  /* bad input, each named */
  EXPECT_ERR(fi_split_shared_prefix(ctx, -1, 16, &same, 4, qo, pi, px, pl, si, sx, sl),
             FI_ERROR_INVALID_ARGUMENT, "batch = -1");
  EXPECT_ERR(fi_split_shared_prefix(ctx, 2, 0, &same, 4, qo, pi, px, pl, si, sx, sl),
             FI_ERROR_INVALID_ARGUMENT, "page_size = 0");
  EXPECT_ERR(fi_split_shared_prefix(ctx, 2, 16, &same, 4, qo, pi, NULL, pl, si, sx, sl),
             FI_ERROR_INVALID_ARGUMENT, "prefix_indices");
  EXPECT_ERR(fi_split_shared_prefix(ctx, 2, 16, &same, 3, qo, pi, px, pl, si, sx, sl),
             FI_ERROR_INVALID_ARGUMENT, "kv_indices[0] = 3");
  const int32_t dec[3] = {0, 2, 1};
  const fi_page_table bad = {dec, ix, l};
  EXPECT_ERR(fi_split_shared_prefix(ctx, 2, 16, &bad, 4, qo, pi, px, pl, si, sx, sl),
             FI_ERROR_INVALID_ARGUMENT, "kv_indptr");
}

int main(void) {
  if (fi_context_create(FI_BACKEND_HOST, &ctx) != FI_SUCCESS) return 1;
  rng r = {77};
  for (int trial = 0; trial < 200; ++trial) one_case(&r, trial);
  edges_and_bad_input();
  fi_context_destroy(ctx);
  return test_finish("test_shared_prefix");
}
