/* test_merge_gpu.c -- CUDA merge_state / merge_states against the host backend.
 *
 * FI_TEST_CONFIGS random configurations (default 80; seed FI_TEST_SEED): v dtype f16 /
 * bf16 / f32, rows 1..4096, heads 1..32, head_dim 8..256 (multiples of 8 use 16-byte
 * vectors, others and padded strides the scalar path), n = 1..16 states, lse values in
 * [-20, 20] with some -inf (empty states, also whole rows of them); merge_state out of
 * place and in place (v_out = v_a, s_out = s_a). Outputs poisoned (NaN) first; every
 * element compared:
 *   v:   |gpu - host| <= 1e-2 * max(max|host row|, 1e-3) (f32: 1e-5)
 *   lse: |gpu - host| <= 1e-3 * max(1, |host|), -inf exactly.
 * Exit 77 without a GPU. */
#include "gpu_common.h"

static const fi_dtype dtypes[] = {FI_DTYPE_F16, FI_DTYPE_BF16, FI_DTYPE_F32};

static void fill_lse(float *s, size_t n, int inf_rate) {
  for (size_t i = 0; i < n; ++i)
    s[i] = gpu_rand_int(0, inf_rate) == 0 ? -INFINITY : gpu_rand_uniform(-20.f, 20.f);
}

/* A [rows, mid..., D] tensor whose row stride may be padded by `pad` elements. */
static fi_tensor padded(void *data, fi_dtype dt, int rank, const int64_t *shape, int64_t pad) {
  fi_tensor t = fi_tensor_contiguous(data, dt, rank, shape);
  if (pad) {
    int64_t st = 1;
    for (int d = rank - 1; d >= 1; --d) {
      t.strides[d] = st;
      st *= shape[d];
    }
    t.strides[0] = st + pad;
  }
  return t;
}

static int merge_states_case(fi_context *h, fi_context *g, int idx, gpu_err *err) {
  fi_dtype dt = dtypes[gpu_rand_int(0, 2)];
  int64_t rows = gpu_rand_log(1, 4096);
  int n = gpu_rand_int(1, 16), heads = gpu_rand_int(1, 32);
  int D = gpu_rand_int(0, 3) == 0 ? gpu_rand_int(1, 32) * 8 + (gpu_rand_int(0, 1) ? 0 : gpu_rand_int(1, 7)) : 8 << gpu_rand_int(0, 5);
  while ((double)rows * n * heads * D > 4e7) rows = rows / 2 + 1;
  int64_t pad = gpu_rand_int(0, 3) == 0 ? gpu_rand_int(1, 9) : 0;
  size_t es = fi_dtype_size(dt);
  int64_t vshape[4] = {rows, n, heads, D}, sshape[3] = {rows, n, heads};
  int64_t oshape[3] = {rows, heads, D}, lshape[2] = {rows, heads};
  size_t v_elems = (size_t)rows * ((size_t)n * heads * D + pad);
  size_t s_elems = (size_t)rows * n * heads, o_elems = (size_t)rows * heads * D;
  void *v = malloc(v_elems * es);
  float *s = (float *)malloc(s_elems * 4);
  gpu_fill_random(v, dt, v_elems);
  fill_lse(s, s_elems, 8);
  if (rows > 1) for (int c = 0; c < n; ++c) for (int hh = 0; hh < heads; ++hh) s[(size_t)c * heads + hh] = -INFINITY; /* row 0: all empty */
  void *o_ref = malloc(o_elems * es), *o_gpu = malloc(o_elems * es);
  float *l_ref = (float *)malloc((size_t)rows * heads * 4), *l_gpu = (float *)malloc((size_t)rows * heads * 4);
  fi_tensor vt = padded(v, dt, 4, vshape, pad), st = fi_tensor_contiguous(s, FI_DTYPE_F32, 3, sshape);
  fi_tensor ot = fi_tensor_contiguous(o_ref, dt, 3, oshape), lt = fi_tensor_contiguous(l_ref, FI_DTYPE_F32, 2, lshape);
  FI_CK(h, fi_merge_states(h, &vt, &st, &ot, &lt));
  void *v_d = gpu_upload(v, v_elems * es), *s_d = gpu_upload(s, s_elems * 4);
  void *o_d = gpu_alloc_poisoned(o_elems * es), *l_d = gpu_alloc_poisoned((size_t)rows * heads * 4);
  fi_tensor vd = padded(v_d, dt, 4, vshape, pad), sd = fi_tensor_contiguous(s_d, FI_DTYPE_F32, 3, sshape);
  fi_tensor od = fi_tensor_contiguous(o_d, dt, 3, oshape), ld = fi_tensor_contiguous(l_d, FI_DTYPE_F32, 2, lshape);
  FI_CK(g, fi_merge_states(g, &vd, &sd, &od, &ld));
  GPU_CK(cudaDeviceSynchronize());
  gpu_download(o_gpu, o_d, o_elems * es);
  gpu_download(l_gpu, l_d, (size_t)rows * heads * 4);
  double tol = dt == FI_DTYPE_F32 ? 1e-5 : 1e-2;
  long long bad = gpu_compare_rows("merge_states v", o_gpu, o_ref, dt, rows * heads, D, D, tol, 1e-3, err);
  bad += gpu_compare_lse(l_gpu, l_ref, rows * heads, 1e-3, err);
  if (bad || getenv("FI_TEST_VERBOSE"))
    fprintf(stderr, "%s merge_states case %d: %s rows %lld n %d heads %d D %d pad %lld\n",
            bad ? "FAIL" : "ok", idx, fi_dtype_name(dt), (long long)rows, n, heads, D, (long long)pad);
  free(v); free(s); free(o_ref); free(o_gpu); free(l_ref); free(l_gpu);
  cudaFree(v_d); cudaFree(s_d); cudaFree(o_d); cudaFree(l_d);
  return bad > 0;
}

static int merge_state_case(fi_context *h, fi_context *g, int idx, gpu_err *err) {
  fi_dtype dt = dtypes[gpu_rand_int(0, 2)];
  int64_t rows = gpu_rand_log(1, 8192);
  int heads = gpu_rand_int(1, 32);
  int D = gpu_rand_int(0, 3) == 0 ? gpu_rand_int(1, 300) : 8 << gpu_rand_int(0, 5);
  while ((double)rows * heads * D > 2e7) rows = rows / 2 + 1;
  int in_place = gpu_rand_int(0, 1);
  size_t es = fi_dtype_size(dt), n = (size_t)rows * heads * D, ns = (size_t)rows * heads;
  int64_t vshape[3] = {rows, heads, D}, sshape[2] = {rows, heads};
  void *va = malloc(n * es), *vb = malloc(n * es), *o_ref = malloc(n * es), *o_gpu = malloc(n * es);
  float *sa = (float *)malloc(ns * 4), *sb = (float *)malloc(ns * 4);
  float *l_ref = (float *)malloc(ns * 4), *l_gpu = (float *)malloc(ns * 4);
  gpu_fill_random(va, dt, n);
  gpu_fill_random(vb, dt, n);
  fill_lse(sa, ns, 6);
  fill_lse(sb, ns, 6);
  fi_tensor tva = fi_tensor_contiguous(va, dt, 3, vshape), tvb = fi_tensor_contiguous(vb, dt, 3, vshape);
  fi_tensor tsa = fi_tensor_contiguous(sa, FI_DTYPE_F32, 2, sshape), tsb = fi_tensor_contiguous(sb, FI_DTYPE_F32, 2, sshape);
  fi_tensor tor = fi_tensor_contiguous(o_ref, dt, 3, vshape), tlr = fi_tensor_contiguous(l_ref, FI_DTYPE_F32, 2, sshape);
  FI_CK(h, fi_merge_state(h, &tva, &tsa, &tvb, &tsb, &tor, &tlr));
  void *va_d = gpu_upload(va, n * es), *vb_d = gpu_upload(vb, n * es);
  void *sa_d = gpu_upload(sa, ns * 4), *sb_d = gpu_upload(sb, ns * 4);
  void *o_d = in_place ? va_d : gpu_alloc_poisoned(n * es);
  void *l_d = in_place ? sa_d : gpu_alloc_poisoned(ns * 4);
  fi_tensor dva = fi_tensor_contiguous(va_d, dt, 3, vshape), dvb = fi_tensor_contiguous(vb_d, dt, 3, vshape);
  fi_tensor dsa = fi_tensor_contiguous(sa_d, FI_DTYPE_F32, 2, sshape), dsb = fi_tensor_contiguous(sb_d, FI_DTYPE_F32, 2, sshape);
  fi_tensor dor = fi_tensor_contiguous(o_d, dt, 3, vshape), dlr = fi_tensor_contiguous(l_d, FI_DTYPE_F32, 2, sshape);
  FI_CK(g, fi_merge_state(g, &dva, &dsa, &dvb, &dsb, &dor, &dlr));
  GPU_CK(cudaDeviceSynchronize());
  gpu_download(o_gpu, o_d, n * es);
  gpu_download(l_gpu, l_d, ns * 4);
  double tol = dt == FI_DTYPE_F32 ? 1e-5 : 1e-2;
  long long bad = gpu_compare_rows("merge_state v", o_gpu, o_ref, dt, rows * heads, D, D, tol, 1e-3, err);
  bad += gpu_compare_lse(l_gpu, l_ref, (int64_t)ns, 1e-3, err);
  if (bad || getenv("FI_TEST_VERBOSE"))
    fprintf(stderr, "%s merge_state case %d: %s rows %lld heads %d D %d %s\n", bad ? "FAIL" : "ok",
            idx, fi_dtype_name(dt), (long long)rows, heads, D, in_place ? "in place" : "out of place");
  free(va); free(vb); free(o_ref); free(o_gpu); free(sa); free(sb); free(l_ref); free(l_gpu);
  cudaFree(va_d); cudaFree(vb_d); cudaFree(sa_d); cudaFree(sb_d);
  if (!in_place) { cudaFree(o_d); cudaFree(l_d); }
  return bad > 0;
}

int main(void) {
  gpu_require_device("test_merge_gpu");
  uint64_t seed = gpu_env_u64("FI_TEST_SEED", 777);
  int n = (int)gpu_env_u64("FI_TEST_CONFIGS", 80);
  gpu_seed(seed);
  fi_context *h = NULL, *g = NULL;
  FI_CK(NULL, fi_context_create(FI_BACKEND_HOST, &h));
  FI_CK(NULL, fi_context_create(FI_BACKEND_CUDA, &g));
  gpu_err e1, e2;
  memset(&e1, 0, sizeof(e1));
  memset(&e2, 0, sizeof(e2));
  int f1 = 0, f2 = 0;
  for (int i = 0; i < n; ++i) {
    f1 += merge_states_case(h, g, i, &e1);
    f2 += merge_state_case(h, g, i, &e2);
  }
  printf("merge_states: %d configs, %d failed, %lld values, max v err %.3g, max lse err %.3g\n",
         n, f1, e1.elements, e1.max_rel, e1.max_lse);
  printf("merge_state:  %d configs, %d failed, %lld values, max v err %.3g, max lse err %.3g\n",
         n, f2, e2.elements, e2.max_rel, e2.max_lse);
  fi_context_destroy(g);
  fi_context_destroy(h);
  printf("test_merge_gpu: %s\n", f1 + f2 ? "FAILED" : "passed");
  return f1 + f2 ? 1 : 0;
}
