/* test/runtime/test_lanes.c -- fi/lanes.h on the host backend: the argument and order rules
 * (each refusal names the problem), and that runs made in a lane compute what the same runs
 * compute outside one (on the host the lanes are the context itself). The lanes' overlap on
 * a GPU is checked by test/gpu/test_cascade_gpu.c. */
#include "fi/lanes.h"
#include "fi/mlir_adapters.h"
#include "test_util.h"

enum { ROWS = 37, HEADS = 4, HD = 64 };

static fi_tensor vt(float *p) {
  const int64_t shape[3] = {ROWS, HEADS, HD};
  return fi_tensor_contiguous(p, FI_DTYPE_F32, 3, shape);
}
static fi_tensor st(float *p) {
  const int64_t shape[2] = {ROWS, HEADS};
  return fi_tensor_contiguous(p, FI_DTYPE_F32, 2, shape);
}

static void test_rules(fi_context *ctx) {
  fi_lanes *lanes = NULL;
  EXPECT(fi_lanes_create(NULL, 0, &lanes) == FI_ERROR_INVALID_ARGUMENT, "NULL context accepted");
  EXPECT_ERR(fi_lanes_create(ctx, 0, NULL), FI_ERROR_INVALID_ARGUMENT, "out is NULL");
  EXPECT_ERR(fi_lanes_create(ctx, -3, &lanes), FI_ERROR_INVALID_ARGUMENT, "side_sms = -3",
             "negative");
  const int32_t sms = fi_context_target(ctx).sm_count;
  EXPECT_ERR(fi_lanes_create(ctx, sms, &lanes), FI_ERROR_INVALID_ARGUMENT, "leaves no SMs",
             "give fewer");
  EXPECT(lanes == NULL, "a refused fi_lanes_create left a handle");

  EXPECT_OK(fi_lanes_create(ctx, 0, &lanes), ctx);
  EXPECT(lanes != NULL, "no lanes");
  EXPECT(fi_lanes_sm_count(lanes, FI_LANE_MAIN) == sms &&
             fi_lanes_sm_count(lanes, FI_LANE_SIDE) == sms,
         "host lanes count %d / %d SMs, the context %d", fi_lanes_sm_count(lanes, FI_LANE_MAIN),
         fi_lanes_sm_count(lanes, FI_LANE_SIDE), sms);
  EXPECT(fi_lanes_sm_count(lanes, 3) == 0 && fi_lanes_sm_count(NULL, 1) == 0,
         "fi_lanes_sm_count of no lane is not 0");
  EXPECT(fi_lanes_stream(lanes, FI_LANE_MAIN) == NULL && fi_lanes_stream(NULL, 1) == NULL,
         "a host lane has a stream");
  EXPECT(fi_lanes_context(lanes) == ctx && fi_lanes_context(NULL) == NULL,
         "fi_lanes_context is not the context the lanes were made on");
  EXPECT_ERR(fi_lanes_enter(lanes, 0), FI_ERROR_INVALID_ARGUMENT, "lane 0", "FI_LANE_MAIN");
  EXPECT_ERR(fi_lanes_enter(lanes, 3), FI_ERROR_INVALID_ARGUMENT, "lane 3", "FI_LANE_SIDE");
  EXPECT_ERR(fi_lanes_leave(lanes), FI_ERROR_INVALID_ARGUMENT, "no lane is entered");
  EXPECT_OK(fi_lanes_enter(lanes, FI_LANE_MAIN), ctx);
  EXPECT_ERR(fi_lanes_enter(lanes, FI_LANE_SIDE), FI_ERROR_INVALID_ARGUMENT,
             "lane 1 is still entered", "fi_lanes_leave");
  EXPECT_OK(fi_lanes_join(lanes), ctx); /* (inside a lane: waits for the other one) */
  EXPECT_ERR(fi_lanes_fork(lanes), FI_ERROR_INVALID_ARGUMENT, "lane 1 is entered");
  EXPECT_OK(fi_lanes_leave(lanes), ctx);
  EXPECT_OK(fi_lanes_fork(lanes), ctx);
  EXPECT_OK(fi_lanes_join(lanes), ctx);
  EXPECT_OK(fi_lanes_join(lanes), ctx); /* nothing pending: a no-op */
  EXPECT_OK(fi_lanes_fork(lanes), ctx); /* before an enter: a no-op */
  EXPECT(fi_lanes_enter(NULL, 1) == FI_ERROR_INVALID_ARGUMENT &&
             fi_lanes_leave(NULL) == FI_ERROR_INVALID_ARGUMENT &&
             fi_lanes_join(NULL) == FI_ERROR_INVALID_ARGUMENT &&
             fi_lanes_fork(NULL) == FI_ERROR_INVALID_ARGUMENT,
         "NULL lanes accepted");
  /* destroying with a lane entered leaves it (the context's own state comes back) */
  EXPECT_OK(fi_lanes_enter(lanes, FI_LANE_SIDE), ctx);
  fi_lanes_destroy(lanes);
  EXPECT(fi_context_target(ctx).sm_count == sms, "the context's SM count changed: %d, was %d",
         fi_context_target(ctx).sm_count, sms);
  fi_lanes_destroy(NULL);
}

/* Two merges, one in each lane, then a third after the join: the same bits as in order
 * without lanes. */
static void test_runs(fi_context *ctx) {
  rng r = {5};
  const size_t nv = (size_t)ROWS * HEADS * HD, ns = (size_t)ROWS * HEADS;
  float *v[4], *s[4], *o[2][3], *l[2][3];
  for (int i = 0; i < 4; ++i) {
    v[i] = xmalloc(4 * nv), s[i] = xmalloc(4 * ns);
    fill_random(v[i], FI_DTYPE_F32, (int64_t)nv, &r, -1, 1);
    fill_random(s[i], FI_DTYPE_F32, (int64_t)ns, &r, -5, 8);
  }
  for (int k = 0; k < 2; ++k)
    for (int j = 0; j < 3; ++j) {
      o[k][j] = xmalloc(4 * nv), l[k][j] = xmalloc(4 * ns);
      poison(o[k][j], 4 * nv), poison(l[k][j], 4 * ns);
    }
  fi_tensor V[4], S[4];
  for (int i = 0; i < 4; ++i) V[i] = vt(v[i]), S[i] = st(s[i]);
  fi_lanes *lanes = NULL;
  EXPECT_OK(fi_lanes_create(ctx, 1, &lanes), ctx);
  for (int k = 0; k < 2; ++k) { /* k = 0: in lanes; 1: in order */
    fi_tensor O[3], L[3];
    for (int j = 0; j < 3; ++j) O[j] = vt(o[k][j]), L[j] = st(l[k][j]);
    if (k == 0) EXPECT_OK(fi_lanes_enter(lanes, FI_LANE_MAIN), ctx);
    EXPECT_OK(fi_merge_state(ctx, &V[0], &S[0], &V[1], &S[1], &O[0], &L[0]), ctx);
    if (k == 0) EXPECT_OK(fi_lanes_leave(lanes), ctx);
    if (k == 0) EXPECT_OK(fi_lanes_enter(lanes, FI_LANE_SIDE), ctx);
    EXPECT_OK(fi_merge_state(ctx, &V[2], &S[2], &V[3], &S[3], &O[1], &L[1]), ctx);
    if (k == 0) EXPECT_OK(fi_lanes_leave(lanes), ctx);
    if (k == 0) EXPECT_OK(fi_lanes_join(lanes), ctx);
    EXPECT_OK(fi_merge_state(ctx, &O[0], &L[0], &O[1], &L[1], &O[2], &L[2]), ctx);
  }
  for (int j = 0; j < 3; ++j)
    EXPECT(memcmp(o[0][j], o[1][j], 4 * nv) == 0 && memcmp(l[0][j], l[1][j], 4 * ns) == 0,
           "merge %d in lanes differs from the same merge in order", j);
  /* (the check can fail: a merge that did not run leaves the poison) */
  EXPECT(o[0][2][0] == o[0][2][0], "the merge after the join left its poison");
  fi_lanes_destroy(lanes);
  for (int i = 0; i < 4; ++i) free(v[i]), free(s[i]);
  for (int k = 0; k < 2; ++k)
    for (int j = 0; j < 3; ++j) free(o[k][j]), free(l[k][j]);
}

/* Compiled code's lanes (fi_rt_set_lanes): only lanes of the same context, and the adapters
 * that enter, leave and join them do nothing harmful without lanes. */
static void test_compiled(fi_context *ctx) {
  fi_context *other = NULL;
  EXPECT_OK(fi_context_create(FI_BACKEND_HOST, &other), ctx);
  fi_lanes *lanes = NULL, *foreign = NULL;
  EXPECT_OK(fi_lanes_create(ctx, 0, &lanes), ctx);
  EXPECT_OK(fi_lanes_create(other, 0, &foreign), other);
  EXPECT_ERR(fi_rt_set_lanes(ctx, foreign), FI_ERROR_INVALID_ARGUMENT,
             "made on another context");
  EXPECT_OK(fi_rt_set_lanes(ctx, lanes), ctx);
  EXPECT_OK(fi_rt_set_lanes(ctx, NULL), ctx);
  EXPECT(fi_rt_set_lanes(NULL, lanes) == FI_ERROR_INVALID_ARGUMENT, "NULL context accepted");
  fi_lanes_destroy(foreign);
  fi_lanes_destroy(lanes);
  fi_context_destroy(other);
}

int main(void) {
  fi_context *ctx = NULL;
  if (fi_context_create(FI_BACKEND_HOST, &ctx) != FI_SUCCESS) {
    fprintf(stderr, "test_lanes: no host context\n");
    return 1;
  }
  test_rules(ctx);
  test_runs(ctx);
  test_compiled(ctx);
  fi_context_destroy(ctx);
  return test_finish("test_lanes");
}
