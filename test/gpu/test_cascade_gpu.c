/* test/gpu/test_cascade_gpu.c -- the cascade form of prefill on the CUDA backend against the
 * host backend: fi_paged_prefill_run_unmerged, then fi_prefill_merge_run with another
 * state of the same rows.
 *
 * Two kinds of configuration (FI_TEST_CONFIGS, default 120; FI_TEST_SEED):
 *   - shared prefix: 1-64 requests over a prefix of whole pages they all list plus 1-300
 *     tokens of their own; the prefix as ONE request of all queries (unmerged), the
 *     suffixes as a decode, its state the other one (what fi_split_shared_prefix's cascade
 *     runs);
 *   - general: a paged prefill of 1-6 requests (1-40 queries, 1-2000 keys) with a fixed
 *     split of 64-512 tokens (so that some rows are split and some are not) or none, and a
 *     random other state (some rows' lse -inf, i.e. empty).
 * Heads (32/8, 8/8, 16/2, 12/4), head_dim 64 or 128, f16 or bf16, pages of 1, 5, 8, 16 or
 * 32 tokens; outputs poisoned (NaN) before each run. Checked per configuration:
 *   - every element of o and lse against the host backend (o: 1e-2 f16 / 2e-2 bf16 of the
 *     row's largest value; lse 1e-3);
 *   - the same against CUDA's two-merge form (fi_paged_prefill_run, then fi_merge_state);
 *   - fi_prefill_merge_run without another state gives fi_paged_prefill_run's bits;
 *   - a second cascade run gives the same bits;
 *   - the same cascade with a plan made on the device (the host plan's tiles) gives the
 *     host-planned cascade's bits (the device learns the unsplit rows from the workspace).
 * The shared-prefix kind also runs its step in lanes (fi/lanes.h; the side lane of the
 * default share or of 16, 24 or 40 SMs, by configuration): the prefix planned and run in
 * the main lane, the suffix decode in the side lane, joined, then fi_merge_state; o and lse
 * against the host backend, a second run bit for bit, and bit for bit against the same
 * lanes joined after each half (one after the other on the same SMs: a lane that raced the
 * other would differ; runs on the context's own stream may choose kernels for all SMs); the
 * same step captured in a CUDA graph (lanes run on the captured stream) and replayed, o and
 * lse against the host backend. */
#include "gpu_common.h"
#include "fi/lanes.h"

typedef struct cfg {
  int hq, hkv, hd, page;
  fi_dtype dt;
} cfg;

static int failed = 0;

static void *dev_copy_of(const void *h, size_t bytes) { return gpu_upload(h, bytes); }

/* One cascade check: `pre` is the prefill (plan made here on both backends), its other
 * state comes from `other_v/other_s` (host arrays; for the shared-prefix kind, the suffix
 * decode's state on each backend instead: `dec`). */
typedef struct run_in {
  cfg c;
  int batch;           /* prefill requests */
  int32_t *qo_indptr;  /* host [batch + 1] */
  gpu_pages pages;     /* prefill pages (host arrays) */
  int32_t fixed_split; /* 0: the planner's */
  int64_t rows;        /* query rows */
  /* the decode of the shared-prefix kind (dec_batch = rows), or 0 */
  int dec_batch;
  gpu_pages dec_pages;
  /* the general kind's other state (host), or NULL */
  void *other_v;
  float *other_s;
} run_in;

static int lanes_runs = 0, lanes_skipped = 0;

/* After the device's work: n states (o, lse) into new host buffers. */
static void download_states(int n, void *const *o, float *const *lse, void **o_host,
                            float **lse_host, size_t obytes, size_t lbytes) {
  GPU_CK(cudaDeviceSynchronize());
  for (int k = 0; k < n; ++k) {
    o_host[k] = malloc(obytes), lse_host[k] = malloc(lbytes);
    gpu_download(o_host[k], o[k], obytes);
    gpu_download(lse_host[k], lse[k], lbytes);
  }
}

/* The shared-prefix step in lanes against `oh` / `lh` (the host backend's), against a
 * second lanes run and the lanes joined after each half (bit for bit), and captured in a
 * graph (against the host); returns the elements that differ (and counts a failure for
 * differing bits). */
static long long check_lanes(fi_context *cuda, fi_lanes *lanes, const run_in *in,
                             const fi_attention_params *p, const fi_page_table *hp,
                             const fi_page_table *dp, const int32_t *d_qo,
                             const fi_page_table *hdp, const fi_page_table *ddp,
                             const fi_paged_kv_cache *kvd, const fi_tensor *Qd,
                             int32_t num_pages, const void *oh, const float *lh, int idx,
                             gpu_err *err) {
  const cfg c = in->c;
  const int64_t rows = in->rows, ls = rows * c.hq;
  const size_t obytes = (size_t)(rows * c.hq * c.hd) * 2, lbytes = (size_t)ls * 4;
  const int64_t qs[3] = {rows, c.hq, c.hd}, lsh[2] = {rows, c.hq};
  fi_attention_params pd = *p;
  pd.fixed_split_size = 0;
  size_t wpb = 0, wdb = 0;
  FI_CK(cuda, fi_prefill_workspace_size(cuda, p, in->batch, rows, &wpb));
  FI_CK(cuda, fi_decode_workspace_size(cuda, &pd, in->dec_batch, &wdb));
  void *wp = gpu_alloc_poisoned(wpb), *wd = gpu_alloc_poisoned(wdb);
  fi_plan pp, pdc;
  FI_CK(cuda, fi_lanes_enter(lanes, FI_LANE_MAIN));
  FI_CK(cuda, fi_paged_prefill_plan(cuda, p, in->batch, in->qo_indptr, hp, num_pages, NULL, NULL,
                                    wp, wpb, &pp));
  FI_CK(cuda, fi_lanes_leave(lanes));
  FI_CK(cuda, fi_lanes_enter(lanes, FI_LANE_SIDE));
  FI_CK(cuda, fi_decode_plan(cuda, &pd, in->dec_batch, hdp, num_pages, NULL, wd, wdb, &pdc));
  FI_CK(cuda, fi_lanes_leave(lanes));
  FI_CK(cuda, fi_lanes_join(lanes));
  /* [0], [1]: in lanes at once; [2]: one lane after the other; [3]: captured in a CUDA
   * graph (the lanes then run on the captured stream, in order), replayed (prefix state,
   * suffix state) */
  void *op[4], *os[4];
  float *lp[4], *lsf[4];
  fi_tensor Op[4], Lp[4], Os[4], Ls[4];
  for (int k = 0; k < 4; ++k) {
    op[k] = gpu_alloc_poisoned(obytes), os[k] = gpu_alloc_poisoned(obytes);
    lp[k] = gpu_alloc_poisoned(lbytes), lsf[k] = gpu_alloc_poisoned(lbytes);
    Op[k] = fi_tensor_contiguous(op[k], c.dt, 3, qs), Os[k] = fi_tensor_contiguous(os[k], c.dt, 3, qs);
    Lp[k] = fi_tensor_contiguous(lp[k], FI_DTYPE_F32, 2, lsh);
    Ls[k] = fi_tensor_contiguous(lsf[k], FI_DTYPE_F32, 2, lsh);
  }
  for (int k = 0; k < 4; ++k) {
    cudaStream_t cs = NULL;
    if (k == 3) {
      GPU_CK(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking));
      FI_CK(cuda, fi_context_set_stream(cuda, cs));
      GPU_CK(cudaStreamBeginCapture(cs, cudaStreamCaptureModeThreadLocal));
    }
    FI_CK(cuda, fi_lanes_enter(lanes, FI_LANE_MAIN));
    FI_CK(cuda, fi_paged_prefill_run(cuda, &pp, Qd, d_qo, kvd, dp, NULL, &Op[k], &Lp[k]));
    FI_CK(cuda, fi_lanes_leave(lanes));
    if (k == 2) FI_CK(cuda, fi_lanes_join(lanes));
    FI_CK(cuda, fi_lanes_enter(lanes, FI_LANE_SIDE));
    FI_CK(cuda, fi_decode_run(cuda, &pdc, Qd, kvd, ddp, &Os[k], &Ls[k]));
    FI_CK(cuda, fi_lanes_leave(lanes));
    FI_CK(cuda, fi_lanes_join(lanes));
    FI_CK(cuda, fi_merge_state(cuda, &Op[k], &Lp[k], &Os[k], &Ls[k], &Op[k], &Lp[k]));
    if (k == 3) {
      cudaGraph_t graph;
      cudaGraphExec_t exec;
      GPU_CK(cudaStreamEndCapture(cs, &graph));
      GPU_CK(cudaGraphInstantiate(&exec, graph, 0));
      GPU_CK(cudaGraphLaunch(exec, cs));
      GPU_CK(cudaStreamSynchronize(cs));
      FI_CK(cuda, fi_context_set_stream(cuda, NULL));
      cudaGraphExecDestroy(exec), cudaGraphDestroy(graph), cudaStreamDestroy(cs);
    }
  }
  void *og[4];
  float *lg[4];
  download_states(4, op, lp, og, lg, obytes, lbytes);
  const double tol = c.dt == FI_DTYPE_BF16 ? 2e-2 : 1e-2;
  long long bad = gpu_compare_rows("o in lanes vs host", og[0], oh, c.dt, rows * c.hq, c.hd,
                                   c.hd, tol, 1e-3, err);
  bad += gpu_compare_lse(lg[0], lh, ls, 1e-3, err);
  bad += gpu_compare_rows("o of the captured lanes vs host", og[3], oh, c.dt, rows * c.hq,
                          c.hd, c.hd, tol, 1e-3, err);
  bad += gpu_compare_lse(lg[3], lh, ls, 1e-3, err);
  int same[3] = {1, 1, 1};
  for (int k = 1; k < 3; ++k)
    same[k] = memcmp(og[0], og[k], obytes) == 0 && memcmp(lg[0], lg[k], lbytes) == 0;
  if (bad || !same[1] || !same[2]) {
    fprintf(stderr, "FAIL config %d in lanes (%d + %d SMs; batch %d, rows %lld, heads %d/%d, "
            "hd %d, pages of %d, %d prefix work units): %lld elements differ from the "
            "host%s%s\n", idx, fi_lanes_sm_count(lanes, FI_LANE_MAIN),
            fi_lanes_sm_count(lanes, FI_LANE_SIDE), in->batch, (long long)rows, c.hq, c.hkv,
            c.hd, c.page, pp.num_work_units, bad,
            same[1] ? "" : "; a second lanes run differs",
            same[2] ? "" : "; the lanes one after the other differ");
    ++failed;
  }
  ++lanes_runs;
  for (int k = 0; k < 4; ++k) {
    free(og[k]), free(lg[k]);
    cudaFree(op[k]), cudaFree(os[k]), cudaFree(lp[k]), cudaFree(lsf[k]);
  }
  cudaFree(wp), cudaFree(wd);
  return bad;
}

static void check_one(fi_context *host, fi_context *cuda, fi_lanes *lanes, const run_in *in,
                      void *kv_h, void *kv_d, int32_t num_pages, void *q_h, void *q_d, int idx,
                      gpu_err *err) {
  const cfg c = in->c;
  const int esz = 2;
  const int64_t rows = in->rows, ov = rows * c.hq * c.hd, ls = rows * c.hq;
  const size_t obytes = (size_t)ov * esz, lbytes = (size_t)ls * 4;
  fi_attention_params p = fi_attention_params_default(c.hq, c.hkv, c.hd);
  p.q_dtype = p.kv_dtype = c.dt;
  p.page_size = c.page;
  p.fixed_split_size = in->fixed_split;
  const int64_t kvshape[5] = {num_pages, 2, c.page, c.hkv, c.hd};
  const int64_t qs[3] = {rows, c.hq, c.hd}, lsh[2] = {rows, c.hq};
  fi_paged_kv_cache kvh, kvd;
  fi_tensor kth = fi_tensor_contiguous(kv_h, c.dt, 5, kvshape);
  fi_tensor ktd = fi_tensor_contiguous(kv_d, c.dt, 5, kvshape);
  FI_CK(NULL, fi_paged_kv_cache_from_combined(&kth, FI_LAYOUT_NHD, &kvh));
  FI_CK(NULL, fi_paged_kv_cache_from_combined(&ktd, FI_LAYOUT_NHD, &kvd));
  fi_tensor Qh = fi_tensor_contiguous(q_h, c.dt, 3, qs);
  fi_tensor Qd = fi_tensor_contiguous(q_d, c.dt, 3, qs);

  /* the other state on each backend */
  void *ov_h = malloc(obytes), *ov_d = NULL;
  float *os_h = malloc(lbytes), *os_d = NULL;
  const fi_page_table hp = {in->pages.indptr, in->pages.indices, in->pages.last_page_len};
  int32_t *d_qo = dev_copy_of(in->qo_indptr, sizeof(int32_t) * (in->batch + 1));
  int32_t *d_pi = dev_copy_of(in->pages.indptr, sizeof(int32_t) * (in->batch + 1));
  int32_t *d_px = dev_copy_of(in->pages.indices, sizeof(int32_t) * (in->pages.total_pages + 1));
  int32_t *d_pl = dev_copy_of(in->pages.last_page_len, sizeof(int32_t) * in->batch);
  const fi_page_table dp = {d_pi, d_px, d_pl};
  fi_page_table hdp = {NULL, NULL, NULL}, ddp = {NULL, NULL, NULL};
  int32_t *e_pi = NULL, *e_px = NULL, *e_pl = NULL;
  if (in->dec_batch) {
    fi_attention_params pd = p;
    pd.fixed_split_size = 0;
    const gpu_pages *g = &in->dec_pages;
    hdp = (fi_page_table){g->indptr, g->indices, g->last_page_len};
    e_pi = dev_copy_of(g->indptr, sizeof(int32_t) * (in->dec_batch + 1));
    e_px = dev_copy_of(g->indices, sizeof(int32_t) * (g->total_pages + 1));
    e_pl = dev_copy_of(g->last_page_len, sizeof(int32_t) * in->dec_batch);
    ddp = (fi_page_table){e_pi, e_px, e_pl};
    size_t wb = 0;
    FI_CK(host, fi_decode_workspace_size(host, &pd, in->dec_batch, &wb));
    void *wh = malloc(wb);
    fi_plan ph;
    FI_CK(host, fi_decode_plan(host, &pd, in->dec_batch, &hdp, num_pages, NULL, wh, wb, &ph));
    fi_tensor Oh = fi_tensor_contiguous(ov_h, c.dt, 3, qs), Lh = fi_tensor_contiguous(os_h, FI_DTYPE_F32, 2, lsh);
    FI_CK(host, fi_decode_run(host, &ph, &Qh, &kvh, &hdp, &Oh, &Lh));
    FI_CK(cuda, fi_decode_workspace_size(cuda, &pd, in->dec_batch, &wb));
    void *wd = gpu_alloc_poisoned(wb);
    fi_plan pdv;
    FI_CK(cuda, fi_decode_plan(cuda, &pd, in->dec_batch, &hdp, num_pages, NULL, wd, wb, &pdv));
    ov_d = gpu_alloc_poisoned(obytes);
    os_d = gpu_alloc_poisoned(lbytes);
    fi_tensor Od = fi_tensor_contiguous(ov_d, c.dt, 3, qs), Ld = fi_tensor_contiguous(os_d, FI_DTYPE_F32, 2, lsh);
    FI_CK(cuda, fi_decode_run(cuda, &pdv, &Qd, &kvd, &ddp, &Od, &Ld));
    GPU_CK(cudaDeviceSynchronize());
    free(wh);
    cudaFree(wd);
  } else {
    memcpy(ov_h, in->other_v, obytes);
    memcpy(os_h, in->other_s, lbytes);
    ov_d = gpu_upload(ov_h, obytes);
    os_d = gpu_upload(os_h, lbytes);
  }
  fi_tensor OVh = fi_tensor_contiguous(ov_h, c.dt, 3, qs), OSh = fi_tensor_contiguous(os_h, FI_DTYPE_F32, 2, lsh);
  fi_tensor OVd = fi_tensor_contiguous(ov_d, c.dt, 3, qs), OSd = fi_tensor_contiguous(os_d, FI_DTYPE_F32, 2, lsh);

  /* host: the reference (its unmerged run is complete; the merge is merge_state) */
  size_t wb = 0;
  FI_CK(host, fi_prefill_workspace_size(host, &p, in->batch, rows, &wb));
  void *wh = malloc(wb);
  fi_plan ph;
  /* (a fixed split of 64 keys over 2000-key requests can ask for more partial rows than a
   * workspace holds -- refused, naming the split: the split doubles until it fits) */
  fi_status planned;
  while ((planned = fi_paged_prefill_plan(host, &p, in->batch, in->qo_indptr, &hp, num_pages,
                                          NULL, NULL, wh, wb, &ph)) ==
             FI_ERROR_WORKSPACE_TOO_SMALL &&
         p.fixed_split_size > 0)
    p.fixed_split_size *= 2;
  FI_CK(host, planned);
  void *oh = malloc(obytes);
  float *lh = malloc(lbytes);
  fi_tensor Oh = fi_tensor_contiguous(oh, c.dt, 3, qs), Lh = fi_tensor_contiguous(lh, FI_DTYPE_F32, 2, lsh);
  FI_CK(host, fi_paged_prefill_run_unmerged(host, &ph, &Qh, in->qo_indptr, &kvh, &hp, NULL, &Oh, &Lh));
  FI_CK(host, fi_prefill_merge_run(host, &ph, &OVh, &OSh, &Oh, &Lh));

  /* CUDA: the cascade twice, the two-merge form, the merge without another state */
  FI_CK(cuda, fi_prefill_workspace_size(cuda, &p, in->batch, rows, &wb));
  void *wd = gpu_alloc_poisoned(wb);
  fi_plan pc;
  FI_CK(cuda, fi_paged_prefill_plan(cuda, &p, in->batch, in->qo_indptr, &hp, num_pages, NULL,
                                    NULL, wd, wb, &pc));
  void *od[5];
  float *ld[5];
  fi_tensor Od[5], Ld[5];
  for (int k = 0; k < 5; ++k) {
    od[k] = gpu_alloc_poisoned(obytes);
    ld[k] = gpu_alloc_poisoned(lbytes);
    Od[k] = fi_tensor_contiguous(od[k], c.dt, 3, qs);
    Ld[k] = fi_tensor_contiguous(ld[k], FI_DTYPE_F32, 2, lsh);
  }
  for (int k = 0; k < 2; ++k) {
    FI_CK(cuda, fi_paged_prefill_run_unmerged(cuda, &pc, &Qd, d_qo, &kvd, &dp, NULL, &Od[k], &Ld[k]));
    FI_CK(cuda, fi_prefill_merge_run(cuda, &pc, &OVd, &OSd, &Od[k], &Ld[k]));
  }
  FI_CK(cuda, fi_paged_prefill_run(cuda, &pc, &Qd, d_qo, &kvd, &dp, NULL, &Od[2], &Ld[2]));
  FI_CK(cuda, fi_paged_prefill_run_unmerged(cuda, &pc, &Qd, d_qo, &kvd, &dp, NULL, &Od[3], &Ld[3]));
  FI_CK(cuda, fi_prefill_merge_run(cuda, &pc, NULL, NULL, &Od[3], &Ld[3]));
  /* a device plan (its own workspace) of the same tiles */
  void *wdev = gpu_alloc_poisoned(wb);
  fi_plan pdev;
  FI_CK(cuda, fi_paged_prefill_plan_device(cuda, &p, in->batch, d_qo, rows, &dp,
                                           in->pages.total_pages, num_pages, &pc.tiles, wdev,
                                           wb, &pdev));
  FI_CK(cuda, fi_paged_prefill_run_unmerged(cuda, &pdev, &Qd, d_qo, &kvd, &dp, NULL, &Od[4], &Ld[4]));
  FI_CK(cuda, fi_prefill_merge_run(cuda, &pdev, &OVd, &OSd, &Od[4], &Ld[4]));
  void *og[5];
  float *lg[5];
  download_states(5, od, ld, og, lg, obytes, lbytes);
  /* (the merge without another state against the merged run, before the two-merge form's
   * merge_state rewrites Od[2]) */
  const int plain_bits = memcmp(og[2], og[3], obytes) == 0 && memcmp(lg[2], lg[3], lbytes) == 0;
  FI_CK(cuda, fi_merge_state(cuda, &Od[2], &Ld[2], &OVd, &OSd, &Od[2], &Ld[2]));
  GPU_CK(cudaDeviceSynchronize());
  gpu_download(og[2], od[2], obytes);
  gpu_download(lg[2], ld[2], lbytes);
  const double tol = c.dt == FI_DTYPE_BF16 ? 2e-2 : 1e-2;
  long long bad = gpu_compare_rows("o vs host", og[0], oh, c.dt, rows * c.hq, c.hd, c.hd, tol, 1e-3, err);
  bad += gpu_compare_lse(lg[0], lh, ls, 1e-3, err);
  bad += gpu_compare_rows("o vs two merges", og[0], og[2], c.dt, rows * c.hq, c.hd, c.hd, tol, 1e-3, err);
  bad += gpu_compare_lse(lg[0], lg[2], ls, 1e-3, err);
  const int rerun_bits = memcmp(og[0], og[1], obytes) == 0 && memcmp(lg[0], lg[1], lbytes) == 0;
  const int device_bits = memcmp(og[0], og[4], obytes) == 0 && memcmp(lg[0], lg[4], lbytes) == 0;
  if (bad || !rerun_bits || !plain_bits || !device_bits) {
    fprintf(stderr, "FAIL config %d (%s, batch %d, rows %lld, heads %d/%d, hd %d, %s, pages of "
            "%d, split %d, %d work units, %d partial rows): %lld elements "
            "differ%s%s%s\n", idx, in->dec_batch ? "shared prefix" : "general", in->batch,
            (long long)rows, c.hq, c.hkv, c.hd, c.dt == FI_DTYPE_BF16 ? "bf16" : "f16", c.page,
            p.fixed_split_size, pc.num_work_units, pc.num_partial_rows, bad,
            rerun_bits ? "" : "; a second run differs", plain_bits ? "" :
            "; the merge without another state differs from fi_paged_prefill_run",
            device_bits ? "" : "; the device plan's cascade differs from the host plan's");
    ++failed;
  }
  if (in->dec_batch && lanes)
    check_lanes(cuda, lanes, in, &p, &hp, &dp, d_qo, &hdp, &ddp, &kvd, &Qd, num_pages, oh, lh,
                idx, err);
  cudaFree(e_pi), cudaFree(e_px), cudaFree(e_pl);
  for (int k = 0; k < 5; ++k) free(og[k]), free(lg[k]), cudaFree(od[k]), cudaFree(ld[k]);
  cudaFree(wdev);
  free(oh), free(lh), free(wh), free(ov_h), free(os_h);
  cudaFree(wd), cudaFree(ov_d), cudaFree(os_d);
  cudaFree(d_qo), cudaFree(d_pi), cudaFree(d_px), cudaFree(d_pl);
}

int main(void) {
  gpu_require_device("test_cascade_gpu");
  fi_context *host, *cuda;
  FI_CK(NULL, fi_context_create(FI_BACKEND_HOST, &host));
  FI_CK(NULL, fi_context_create(FI_BACKEND_CUDA, &cuda));
  gpu_seed(gpu_env_u64("FI_TEST_SEED", 20261206));
  const int configs = (int)gpu_env_u64("FI_TEST_CONFIGS", 120);
  static const int heads[4][2] = {{32, 8}, {8, 8}, {16, 2}, {12, 4}};
  static const int page_sizes[5] = {1, 5, 8, 16, 32};
  gpu_err err = {0, 0, 0, 0};
  int kinds[2] = {0, 0};
  /* lanes of the default share and of 16, 24 and 40 SMs (a driver without green contexts:
   * the lanes' checks are skipped, said below) */
  static const int side_sms[4] = {0, 16, 24, 40};
  fi_lanes *lanes[4] = {NULL, NULL, NULL, NULL};
  const char *no_lanes = NULL;
  for (int i = 0; i < 4; ++i) {
    const fi_status s = fi_lanes_create(cuda, side_sms[i], &lanes[i]);
    if (s == FI_ERROR_UNSUPPORTED) {
      no_lanes = fi_last_error(cuda);
      break;
    }
    FI_CK(cuda, s);
  }
  for (int idx = 0; idx < configs; ++idx) {
    cfg c;
    const int hi = gpu_rand_int(0, 3);
    c.hq = heads[hi][0], c.hkv = heads[hi][1];
    c.hd = gpu_rand_int(0, 1) ? 128 : 64;
    c.page = page_sizes[gpu_rand_int(0, 4)];
    c.dt = gpu_rand_int(0, 1) ? FI_DTYPE_BF16 : FI_DTYPE_F16;
    run_in in;
    memset(&in, 0, sizeof in);
    in.c = c;
    const int shared = idx % 2 == 0;
    ++kinds[!shared];
    int32_t *kv_len = NULL;
    int32_t num_pages = 0;
    if (shared) {
      /* the prefix: whole pages; each request's suffix after it, on pages of its own */
      const int nreq = gpu_rand_int(1, 64);
      const int prefix_pages = gpu_rand_int(1, (c.page >= 8 ? 4096 : 1024) / c.page);
      in.batch = 1;
      in.rows = nreq;
      in.qo_indptr = malloc(sizeof(int32_t) * 2);
      in.qo_indptr[0] = 0, in.qo_indptr[1] = nreq;
      kv_len = malloc(sizeof(int32_t) * (size_t)nreq);
      int32_t pre_len = prefix_pages * c.page;
      in.pages = gpu_make_pages(1, &pre_len, c.page, 0);
      for (int i = 0; i < nreq; ++i) kv_len[i] = gpu_rand_int(1, 300);
      in.dec_batch = nreq;
      in.dec_pages = gpu_make_pages(nreq, kv_len, c.page, 0);
      /* the suffix pages after the prefix's */
      for (int j = 0; j < in.dec_pages.total_pages; ++j) in.dec_pages.indices[j] += prefix_pages;
      num_pages = prefix_pages + in.dec_pages.total_pages;
      in.fixed_split = gpu_rand_int(0, 2) == 0 ? gpu_rand_int(1, 8) * 64 : 0;
    } else {
      in.batch = gpu_rand_int(1, 6);
      in.qo_indptr = malloc(sizeof(int32_t) * (size_t)(in.batch + 1));
      kv_len = malloc(sizeof(int32_t) * (size_t)in.batch);
      in.qo_indptr[0] = 0;
      for (int i = 0; i < in.batch; ++i) {
        in.qo_indptr[i + 1] = in.qo_indptr[i] + gpu_rand_int(1, 40);
        kv_len[i] = gpu_rand_log(1, 2000);
      }
      in.rows = in.qo_indptr[in.batch];
      in.pages = gpu_make_pages(in.batch, kv_len, c.page, gpu_rand_int(0, 3));
      num_pages = in.pages.num_pages;
      in.fixed_split = gpu_rand_int(0, 3) == 0 ? 0 : gpu_rand_int(1, 8) * 64;
      const int64_t n = in.rows * c.hq;
      in.other_v = malloc((size_t)(n * c.hd) * 2);
      in.other_s = malloc((size_t)n * 4);
      gpu_fill_random(in.other_v, c.dt, (size_t)(n * c.hd));
      for (int64_t i = 0; i < n; ++i)
        in.other_s[i] = gpu_rand_int(0, 9) == 0 ? -INFINITY : gpu_rand_uniform(-4.f, 9.f);
    }
    const size_t kv_elems = (size_t)num_pages * 2 * c.page * c.hkv * c.hd;
    void *kv_h = malloc(kv_elems * 2);
    gpu_fill_random(kv_h, c.dt, kv_elems);
    void *kv_d = gpu_upload(kv_h, kv_elems * 2);
    const size_t q_elems = (size_t)in.rows * c.hq * c.hd;
    void *q_h = malloc(q_elems * 2);
    gpu_fill_random(q_h, c.dt, q_elems);
    void *q_d = gpu_upload(q_h, q_elems * 2);
    check_one(host, cuda, lanes[(idx / 2) % 4], &in, kv_h, kv_d, num_pages, q_h, q_d, idx,
              &err);
    lanes_skipped += shared && !lanes[(idx / 2) % 4];
    free(kv_h), free(q_h), cudaFree(kv_d), cudaFree(q_d);
    free(kv_len), free(in.qo_indptr), free(in.other_v), free(in.other_s);
    gpu_free_pages(&in.pages);
    if (in.dec_batch) gpu_free_pages(&in.dec_pages);
  }
  printf("cascade: %d configurations (%d shared prefix, %d general), %d failed; largest error "
         "/ bound: o %.3g, lse %.3g\n", configs, kinds[0], kinds[1], failed, err.max_rel,
         err.max_lse);
  printf("lanes: %d shared-prefix steps in lanes", lanes_runs);
  for (int i = 0; i < 4; ++i)
    if (lanes[i])
      printf("%s%d + %d SMs", i ? ", " : " (", fi_lanes_sm_count(lanes[i], FI_LANE_MAIN),
             fi_lanes_sm_count(lanes[i], FI_LANE_SIDE));
  printf("%s", lanes[0] ? ")" : "");
  if (no_lanes) printf("; %d skipped: %s", lanes_skipped, no_lanes);
  printf("\n");
  for (int i = 0; i < 4; ++i) fi_lanes_destroy(lanes[i]);
  fi_context_destroy(cuda);
  fi_context_destroy(host);
  printf("test_cascade_gpu: %s\n", failed ? "FAILED" : "passed");
  return failed ? 1 : 0;
}
