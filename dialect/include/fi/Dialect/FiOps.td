//===- FiOps.td - fi ops -----------------------------------*- tablegen -*-===//
#ifndef FI_OPS_TD
#define FI_OPS_TD

include "fi/Dialect/FiBase.td"
include "fi/Dialect/FiAttrs.td"
include "mlir/Interfaces/DestinationStyleOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/SymbolInterfaces.td"

//===----------------------------------------------------------------------===//
// Type constraints. Shapes and element types are checked by the C++ verifiers,
// whose messages name the operand and the fix.
//===----------------------------------------------------------------------===//

def Fi_Shaped : AnyTypeOf<[AnyRankedTensor, AnyMemRef], "ranked tensor or memref",
                          "::mlir::ShapedType">;
// A value captured by an attention variant (score_mod / mask_mod).
// (A scalar takes one 8-byte slot of the captures block: at most 64 bits.)
def Fi_VariantArg : AnyTypeOf<[I1, I8, I16, I32, I64, Index, F16, BF16, F32, F64,
                               AnyRankedTensor, AnyMemRef],
    "i1/i8/i16/i32/i64/index/f16/bf16/f32/f64 scalar, or a ranked tensor or memref">;

def Fi_AnyPlan : Type<CPred<"::llvm::isa<::mlir::fi::PlanType>($_self)">,
                      "!fi.plan of any op family">;
class Fi_PlanOf<string family>
    : Type<And<[CPred<"::llvm::isa<::mlir::fi::PlanType>($_self)">,
                CPred<"::llvm::cast<::mlir::fi::PlanType>($_self).getFamily() == "
                      "::mlir::fi::PlanFamily::" # family>]>,
           "!fi.plan<" # family # ">", "::mlir::fi::PlanType">,
      BuildableType<"::mlir::fi::PlanType::get($_builder.getContext(), "
                    "::mlir::fi::PlanFamily::" # family # ")">;

//===----------------------------------------------------------------------===//
// Base classes
//===----------------------------------------------------------------------===//

class Fi_Op<string mnemonic, list<Trait> traits = []>
    : Op<Fi_Dialect, mnemonic, traits> {
  let hasVerifier = 1;
}

// An op in destination-passing style: its trailing operands, starting at the
// operand whose accessor is `get<firstInit>`, are the destinations (`outs`).
// Tensor form: one result per destination. Memref form: no results.
class Fi_DpsOp<string mnemonic, string firstInit, list<Trait> traits = []>
    : Fi_Op<mnemonic, traits # [DestinationStyleOpInterface,
                                DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let results = (outs Variadic<AnyRankedTensor>:$results);
  string fiExtraClassDeclaration = "";
  let extraClassDeclaration = [{
    ::mlir::MutableOperandRange getDpsInitsMutable() {
      unsigned start = get}] # firstInit # [{Mutable().getOperandNumber();
      return ::mlir::MutableOperandRange(getOperation(), start,
                                         getOperation()->getNumOperands() - start);
    }
    /// True when the operands are tensors (destination-passing style).
    bool hasTensorForm() { return getNumResults() != 0; }
  }] # fiExtraClassDeclaration;
  let extraClassDefinition = [{
    void $cppClass::getEffects(
        ::llvm::SmallVectorImpl<::mlir::SideEffects::EffectInstance<
            ::mlir::MemoryEffects::Effect>> &effects) {
      ::mlir::fi::detail::getFiMemoryEffects(getOperation(), effects);
    }
  }];
}

// The result accessors of attention ops: `o` and, when requested, `lse`.
defvar Fi_AttentionResultAccessors = [{
    /// The output tensor (tensor form), or null (memref form).
    ::mlir::Value getOResult() { return getNumResults() ? getResult(0) : ::mlir::Value(); }
    /// The LSE tensor (tensor form with an `lse` destination), or null.
    ::mlir::Value getLseResult() {
      return getNumResults() > 1 ? getResult(1) : ::mlir::Value();
    }
    /// `sm_scale` if given, else 1/sqrt(head_dim).
    float getEffectiveSmScale() {
      return ::mlir::fi::detail::effectiveSmScale(getSmScale(), getQ().getType());
    }
}];

// Attributes shared by the attention ops.
defvar Fi_AttentionAttrs = (ins
    DefaultValuedAttr<Fi_PosEncodingAttr, "::mlir::fi::PosEncoding::none">:$pos_encoding,
    OptionalAttr<F32Attr>:$sm_scale,
    DefaultValuedAttr<F32Attr, "0.0f">:$logits_soft_cap,
    DefaultValuedAttr<I64Attr, "-1">:$window_left,
    DefaultValuedAttr<F32Attr, "1.0f">:$rope_scale,
    DefaultValuedAttr<F32Attr, "1.0e4f">:$rope_theta,
    DefaultValuedAttr<F32Attr, "1.0f">:$k_scale,
    DefaultValuedAttr<F32Attr, "1.0f">:$v_scale,
    DefaultValuedAttr<F32Attr, "1.0f">:$q_scale,
    OptionalAttr<Fi_TilesAttr>:$tiles,
    OptionalAttr<FlatSymbolRefAttr>:$score_mod,
    OptionalAttr<FlatSymbolRefAttr>:$mask_mod);

defvar Fi_AttentionAttrDoc = [{

    Attributes (all optional; defaults in parentheses):

    * `sm_scale` (1/sqrt(head_dim)): scale of `q.k`.
    * `logits_soft_cap` (0 = off): logits become `cap * tanh(s / cap)`; must be >= 0.
    * `window_left` (-1 = no window): a query at position p sees keys at positions
      >= p - window_left; must be >= -1.
    * `pos_encoding` (`#fi.pos_encoding<none>`): `rope_llama` applies LLaMA rotary
      embedding to q and k in the kernel (`rope_scale` (1), `rope_theta` (1e4));
      `alibi` adds ALiBi biases.
    * `k_scale`, `v_scale` (1): dequantisation scales of an fp8 KV cache.
    * `q_scale` (1): dequantisation scale of an fp8 q (fp8 attention: ragged and paged
      prefill with q, k and v in `f8E4M3FN` and o in f16 or bf16; logits are
      `sm_scale * q_scale * k_scale * q.k`, outputs `v_scale * P V`). Ignored for 16-bit q.
    * `tiles`: the microkernel variant (`#fi.tiles<...>`), set by tile selection.

    `lse`, when given, receives the natural-log (base e) log-sum-exp of the scaled
    logits of each row and head: `lse = log(sum_j exp(s_j))`, `f32`.

    Variants written in IR (FlexAttention's `score_mod` / `mask_mod`, FlashInfer's
    variant classes), compiled ahead of time with the program:

    * `score_mod = @f`: `func.func @f(%score: f32, %batch: i32, %qo_head: i32,
      %kv_head: i32, %q_pos: i32, %kv_pos: i32, <captures>) -> f32` returns the logit to
      use for one (query, key) pair; it receives the logit after the built-in transforms
      (`sm_scale * q.k`, ALiBi, soft cap); returning `-inf` drops the pair.
    * `mask_mod = @m`: `func.func @m(%batch: i32, %qo_head: i32, %q_pos: i32,
      %kv_pos: i32, <captures>) -> i1` keeps the pair when true; it is applied together
      with the built-in masks (causal, custom, window).
    * `variant_args(%a, %t : f32, tensor<?xf32>)`: the captured values, passed to both
      functions after their fixed arguments: scalars of at most 64 bits (i1 to i64, index, f16,
      bf16, f32, f64), and
      tensors (memrefs once bufferized) read with `tensor.extract` (`memref.load`).

    Positions are those of the built-in masks: query row `i` of a request with `qo_len`
    rows and `kv_len` keys is at `q_pos = kv_len - qo_len + i`, key `j` at `kv_pos = j`;
    `batch` is the request (0 in `fi.block_sparse_attention`). The functions may use
    `arith`, `math`, `scf`, `cf`, `index` ops and read captured tensors, nothing with a side
    effect and no calls. A read of a captured tensor clamps each index to the tensor's
    bounds (no read outside it). A `mask_mod` gives block sparsity: the compiler derives
    from its body, by interval arithmetic, a tile classifier that proves a rectangle of
    (heads, query positions, key positions) wholly dropped or wholly kept; kernels skip
    the dropped tiles (neither loaded nor computed) and call the mask per pair only on
    tiles proven neither. An integer read from a captured 1-D table is bounded by the
    entries its index range covers (up to 512, clamped as the reads are), so a mask over
    document ids skips the tiles across documents; float values and other reads prove
    nothing. On the GPU the kernels read captured tensors where they lie (the classifier
    scans a table's ranges for every chunk of query rows): hand them device memory, since a
    managed table can move between host and device on every run. The functions may also
    be called for pairs another mask drops (their result is then discarded). The host backend calls the functions; with `fi-to-llvm=backend=cuda`,
    paged and ragged prefill, paged decode and block-sparse attention (head_dim 64 / 128,
    f16 / bf16, KV of q's type; decode: tensor-core tiles, pages of a multiple of 4
    tokens) compile them into the warp-specialised Hopper prefill or decode kernel
    through LLVM's NVPTX backend (no built-in soft cap, window, ALiBi or custom mask beside
    a variant there; f32 denormals flush to zero as in the built-in kernels; `math.tanh`
    with `fastmath<afn>` is the GPU's tanh.approx, `arith.divf` with `fastmath<arcp>` may
    multiply by a reciprocal). There a `score_mod`'s factors that depend on the captures and
    constants alone -- the score's one use multiplied by (or divided by) one, a returned
    product with (or quotient by) one -- fold into the kernel's scale and the softmax's
    factor, so `cap * tanh(s / cap)` costs the built-in soft cap's work per pair (results
    within fp32 rounding of the host backend's).
}];

defvar Fi_PagedKvDoc = [{
    * `k`, `v`: the paged KV cache, `[pages, page_size, kv_heads, head_dim]` (NHD) or
      `[pages, kv_heads, page_size, head_dim]` (HND) as given by `bsr.layout`; or,
      without `v`, one combined tensor `[pages, 2, ...]` (K at index 0, V at 1 of the
      K/V dimension). Element type f16, bf16, f32, f8E4M3FN or f8E5M2.
    * `kv_indptr` (`[batch + 1]` i32), `kv_indices` (`[num_used_pages]` i32),
      `kv_last_page_len` (`[batch]` i32, values 1..page_size): the page table.
}];

defvar Fi_KvShardDoc = [{

    Context parallelism: `kv_shard = #fi.kv_shard<ranks = N>` (optional; also
    `split_size = S`, tokens per split-KV chunk) says the KV is sharded along the sequence
    over N ranks. The op's paged KV operands (`k`, `v` and the page table) are then this
    rank's contiguous segment of each request's keys (rank r holds segment r, in rank
    order; a segment may be empty), and the result is attention over all ranks' segments:
    every rank gets the full `o` and `lse` (local attention, an all-gather of the partial
    states over the communicator, a merge in rank order, all inside the runtime's run
    call). At run time the context needs a communicator of N ranks
    (`fi_context_set_comm`); compiled code uses the thread's or process's context
    (`fi_rt_set_thread_context` / `fi_rt_set_context`). Positions are per shard, so such an
    op takes no `pos_encoding` (`rope_llama`: apply RoPE to K before appending it;
    `alibi`), no `window_left`, no custom mask, no `score_mod` / `mask_mod` and no
    `shared_prefix`. Its plan operand, if any, must come from a plan op with the same
    `kv_shard` (fi-materialize-plans copies it), which is made on the host.
}];

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

def Fi_PagedDecodeOp : Fi_DpsOp<"paged_decode", "O", [AttrSizedOperandSegments,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "batch decode attention against a paged KV cache";
  let description = !strconcat([{
    One query row per request attends to that request's KV in the paged cache.
    `shared_prefix` (unit) says the requests share leading pages (a system prompt,
    parallel samples): fi-decompose-shared-prefix (first step of fi-to-llvm) then runs
    the op as the paper's composable formats -- `fi.split_shared_prefix`, the shared
    pages as one block row of every query (`fi.paged_prefill`), the rest as a decode,
    and `fi.merge_state`; without the pass it is a plain decode (the same result).

    Operands:

    * `q`: `[batch, qo_heads, head_dim]`, f16/bf16/f32; the query of each request.
  }], Fi_PagedKvDoc, [{
    * `plan` (optional): a `!fi.plan<decode>` from `fi.decode_plan`.
    * `o` (destination): `[batch, qo_heads, head_dim]`, the type of `q`.
    * `lse` (optional destination): `[batch, qo_heads]` f32.
    * `bsr`: `#fi.bsr<...>`; `block_cols` is the page size.
  }], Fi_AttentionAttrDoc, Fi_KvShardDoc, [{

    Example (LLaMA-style GQA: 32 query heads, 8 KV heads, head_dim 128, page 16):

    ```mlir
    %o, %lse = fi.paged_decode q(%q : tensor<?x32x128xf16>)
        kv(%k, %v : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>)
        pages(%indptr, %indices, %last : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
        outs(%o0, %lse0 : tensor<?x32x128xf16>, tensor<?x32xf32>)
        {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>}
        -> tensor<?x32x128xf16>, tensor<?x32xf32>
    ```
  }]);
  let arguments = !con((ins
      Fi_Shaped:$q, Fi_Shaped:$k, Optional<Fi_Shaped>:$v,
      Fi_Shaped:$kv_indptr, Fi_Shaped:$kv_indices, Fi_Shaped:$kv_last_page_len,
      Variadic<Fi_VariantArg>:$variant_args,
      Optional<Fi_AnyPlan>:$plan,
      Fi_Shaped:$o, Optional<Fi_Shaped>:$lse,
      Fi_BsrAttr:$bsr, UnitAttr:$shared_prefix,
      OptionalAttr<Fi_KvShardAttr>:$kv_shard), Fi_AttentionAttrs);
  let assemblyFormat = [{
    `q` `(` $q `:` type($q) `)`
    `kv` `(` $k (`,` $v^)? `:` type($k) (`,` type($v)^)? `)`
    `pages` `(` $kv_indptr `,` $kv_indices `,` $kv_last_page_len `:`
        type($kv_indptr) `,` type($kv_indices) `,` type($kv_last_page_len) `)`
    (`variant_args` `(` $variant_args^ `:` type($variant_args) `)`)?
    (`plan` `(` $plan^ `:` type($plan) `)`)?
    `outs` `(` $o (`,` $lse^)? `:` type($o) (`,` type($lse)^)? `)`
    attr-dict (`->` type($results)^)?
  }];
  let fiExtraClassDeclaration = Fi_AttentionResultAccessors;
}

def Fi_PagedPrefillOp : Fi_DpsOp<"paged_prefill", "O", [AttrSizedOperandSegments,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "batch prefill (append) attention: ragged queries against a paged KV cache";
  let description = !strconcat([{
    The query rows of each request (packed without padding) attend to that request's KV
    in the paged cache. With `causal` masking, query row i of a request with qo_len rows
    and kv_len keys sees key j iff `j <= kv_len - qo_len + i` (aligned bottom-right).

    Operands:

    * `q`: `[nnz_qo, qo_heads, head_dim]`, f16/bf16/f32; the ragged queries.
    * `qo_indptr`: `[batch + 1]` i32; rows of request i are `qo_indptr[i]..qo_indptr[i+1]`.
  }], Fi_PagedKvDoc, [{
    * `mask`, `mask_indptr` (only with `mask_mode = #fi.mask_mode<custom>`): the custom
      mask, bit-packed (little bit order, 1 = attend) in a rank-1 i8/ui8 array, and its
      `[batch + 1]` i32 offsets in bits (`mask_indptr[i+1] - mask_indptr[i] =
      qo_len_i * kv_len_i`).
    * `q_scale_heads`, `k_scale_heads`, `v_scale_heads` (optional, together; fp8 attention
      only): f32 per-head scales, `[qo_heads]`, `[kv_heads]`, `[kv_heads]`, multiplying
      `q_scale`, `k_scale` and `v_scale`.
    * `merge_v`, `merge_s` (optional, together; `merge(...)` in the assembly): another
      attention state of the same rows, `o`'s type and `lse`'s type (natural-log lse).
      The op's results are then the attention merged with it (as `fi.merge_state`), in
      one merge: the runtime folds the state into the split-KV merge of the rows it
      splits (`fi_paged_prefill_run_unmerged` and `fi_prefill_merge_run`). Needs `lse`;
      not with `kv_shard`.
    * `plan` (optional): a `!fi.plan<paged_prefill>` from `fi.paged_prefill_plan`.
    * `o` (destination): `[nnz_qo, qo_heads, head_dim]`, the type of `q`.
    * `lse` (optional destination): `[nnz_qo, qo_heads]` f32.
    * `bsr`: `#fi.bsr<...>`; `block_cols` is the page size.
    * `mask_mode` (`#fi.mask_mode<none>`): `none`, `causal` or `custom`.
  }], Fi_AttentionAttrDoc, Fi_KvShardDoc, [{

    With `kv_shard` and `causal`, each request's new tokens (its `qo_len` newest keys)
    must lie on the last rank: the other ranks hold only older keys, which every query
    sees (the runtime's plan checks it).

    Example:

    ```mlir
    %o = fi.paged_prefill q(%q : tensor<?x32x128xf16>) qo_indptr(%qo : tensor<?xi32>)
        kv(%kv : tensor<?x2x16x8x128xf16>)
        pages(%indptr, %indices, %last : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
        outs(%o0 : tensor<?x32x128xf16>)
        {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>,
         mask_mode = #fi.mask_mode<causal>} -> tensor<?x32x128xf16>
    ```
  }]);
  let arguments = !con((ins
      Fi_Shaped:$q, Fi_Shaped:$qo_indptr,
      Fi_Shaped:$k, Optional<Fi_Shaped>:$v,
      Fi_Shaped:$kv_indptr, Fi_Shaped:$kv_indices, Fi_Shaped:$kv_last_page_len,
      Optional<Fi_Shaped>:$mask, Optional<Fi_Shaped>:$mask_indptr,
      Optional<Fi_Shaped>:$q_scale_heads, Optional<Fi_Shaped>:$k_scale_heads,
      Optional<Fi_Shaped>:$v_scale_heads,
      Variadic<Fi_VariantArg>:$variant_args,
      Optional<Fi_Shaped>:$merge_v, Optional<Fi_Shaped>:$merge_s,
      Optional<Fi_AnyPlan>:$plan,
      Fi_Shaped:$o, Optional<Fi_Shaped>:$lse,
      Fi_BsrAttr:$bsr,
      DefaultValuedAttr<Fi_MaskModeAttr, "::mlir::fi::MaskMode::none">:$mask_mode,
      OptionalAttr<Fi_KvShardAttr>:$kv_shard),
      Fi_AttentionAttrs);
  let assemblyFormat = [{
    `q` `(` $q `:` type($q) `)`
    `qo_indptr` `(` $qo_indptr `:` type($qo_indptr) `)`
    `kv` `(` $k (`,` $v^)? `:` type($k) (`,` type($v)^)? `)`
    `pages` `(` $kv_indptr `,` $kv_indices `,` $kv_last_page_len `:`
        type($kv_indptr) `,` type($kv_indices) `,` type($kv_last_page_len) `)`
    (`mask` `(` $mask^ `,` $mask_indptr `:` type($mask) `,` type($mask_indptr) `)`)?
    (`head_scales` `(` $q_scale_heads^ `,` $k_scale_heads `,` $v_scale_heads `:`
        type($q_scale_heads) `,` type($k_scale_heads) `,` type($v_scale_heads) `)`)?
    (`variant_args` `(` $variant_args^ `:` type($variant_args) `)`)?
    (`merge` `(` $merge_v^ `,` $merge_s `:` type($merge_v) `,` type($merge_s) `)`)?
    (`plan` `(` $plan^ `:` type($plan) `)`)?
    `outs` `(` $o (`,` $lse^)? `:` type($o) (`,` type($lse)^)? `)`
    attr-dict (`->` type($results)^)?
  }];
  let fiExtraClassDeclaration = Fi_AttentionResultAccessors;
}

def Fi_RaggedPrefillOp : Fi_DpsOp<"ragged_prefill", "O", [AttrSizedOperandSegments,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "batch prefill attention with ragged queries, keys and values";
  let description = !strconcat([{
    The query rows of each request attend to that request's keys/values; all three are
    ragged (packed without padding). Causal masking is aligned bottom-right as in
    `fi.paged_prefill`.

    Operands:

    * `q`: `[nnz_qo, qo_heads, head_dim]`, f16/bf16/f32.
    * `k`, `v`: `[nnz_kv, kv_heads, head_dim]` each; or, without `v`, one combined
      tensor `[nnz_kv, 2, kv_heads, head_dim]` (K at index 0, V at 1). Element type
      f16, bf16, f32, f8E4M3FN or f8E5M2.
    * `qo_indptr`, `kv_indptr`: `[batch + 1]` i32 each: rows/keys of request i.
    * `mask`, `mask_indptr` (only with `mask_mode = #fi.mask_mode<custom>`): the
      bit-packed custom mask, as in `fi.paged_prefill`.
    * `q_scale_heads`, `k_scale_heads`, `v_scale_heads` (optional, together; fp8 attention
      only): per-head scales, as in `fi.paged_prefill`.
    * `plan` (optional): a `!fi.plan<ragged_prefill>` from `fi.ragged_prefill_plan`.
    * `o` (destination): `[nnz_qo, qo_heads, head_dim]`, the type of `q`.
    * `lse` (optional destination): `[nnz_qo, qo_heads]` f32.
    * `mask_mode` (`#fi.mask_mode<none>`): `none`, `causal` or `custom`.
  }], Fi_AttentionAttrDoc, [{

    Example:

    ```mlir
    %o = fi.ragged_prefill q(%q : tensor<?x32x128xbf16>)
        kv(%k, %v : tensor<?x8x128xbf16>, tensor<?x8x128xbf16>)
        indptr(%qo, %kvp : tensor<?xi32>, tensor<?xi32>)
        outs(%o0 : tensor<?x32x128xbf16>)
        {mask_mode = #fi.mask_mode<causal>} -> tensor<?x32x128xbf16>
    ```
  }]);
  let arguments = !con((ins
      Fi_Shaped:$q, Fi_Shaped:$k, Optional<Fi_Shaped>:$v,
      Fi_Shaped:$qo_indptr, Fi_Shaped:$kv_indptr,
      Optional<Fi_Shaped>:$mask, Optional<Fi_Shaped>:$mask_indptr,
      Optional<Fi_Shaped>:$q_scale_heads, Optional<Fi_Shaped>:$k_scale_heads,
      Optional<Fi_Shaped>:$v_scale_heads,
      Variadic<Fi_VariantArg>:$variant_args,
      Optional<Fi_AnyPlan>:$plan,
      Fi_Shaped:$o, Optional<Fi_Shaped>:$lse,
      DefaultValuedAttr<Fi_MaskModeAttr, "::mlir::fi::MaskMode::none">:$mask_mode),
      Fi_AttentionAttrs);
  let assemblyFormat = [{
    `q` `(` $q `:` type($q) `)`
    `kv` `(` $k (`,` $v^)? `:` type($k) (`,` type($v)^)? `)`
    `indptr` `(` $qo_indptr `,` $kv_indptr `:` type($qo_indptr) `,` type($kv_indptr) `)`
    (`mask` `(` $mask^ `,` $mask_indptr `:` type($mask) `,` type($mask_indptr) `)`)?
    (`head_scales` `(` $q_scale_heads^ `,` $k_scale_heads `,` $v_scale_heads `:`
        type($q_scale_heads) `,` type($k_scale_heads) `,` type($v_scale_heads) `)`)?
    (`variant_args` `(` $variant_args^ `:` type($variant_args) `)`)?
    (`plan` `(` $plan^ `:` type($plan) `)`)?
    `outs` `(` $o (`,` $lse^)? `:` type($o) (`,` type($lse)^)? `)`
    attr-dict (`->` type($results)^)?
  }];
  let fiExtraClassDeclaration = Fi_AttentionResultAccessors;
}

def Fi_BlockSparseAttentionOp : Fi_DpsOp<"block_sparse_attention", "O",
    [AttrSizedOperandSegments, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "block-sparse attention of one sequence through a BSR matrix";
  let description = !strconcat([{
    The FlashInfer paper's block-sparse attention (FlashInfer's
    BlockSparseAttentionWrapper): the `M` query rows of `q` attend to the `N` keys of `k`
    and `v` through a block-sparse-row (BSR) matrix of `block_rows x block_cols` (R x C)
    blocks over the `M x N` score matrix: block row `i` (query rows `i R ..
    min((i + 1) R, M) - 1`) attends to the key blocks `bsr_indices[bsr_indptr[i] ..
    bsr_indptr[i + 1] - 1]` (keys `j C .. min((j + 1) C, N) - 1`); within a block row the
    column blocks strictly increase. `causal` also drops, inside the listed blocks, keys
    past `r + N - M` for query row `r` (bottom-right aligned).

    Operands:

    * `q`: `[M, qo_heads, head_dim]`, f16/bf16/f32.
    * `k`, `v`: `[N, kv_heads, head_dim]` each, f16, bf16, f32, f8E4M3FN or f8E5M2.
    * `bsr_indptr`: `[ceil(M / R) + 1]` i32; `bsr_indices`: `[nnz blocks]` i32.
    * `block_offsets` (optional; FlashInfer's variable block-sparse form): `row_offsets`
      `[block rows + 1]` and `col_offsets` `[column blocks + 1]` i32, each from 0, strictly
      increasing, ending at M / N: block row `i` is query rows `row_offsets[i] ..
      row_offsets[i + 1] - 1`, column block `j` keys `col_offsets[j] .. col_offsets[j + 1] -
      1`; `bsr_indptr` then has one element per block row plus one. `block_rows` and
      `block_cols` of `bsr` name the smallest block (every one must be at least that big;
      the plan's workspace is sized for it).
    * `pages` (optional; the paper's view, column blocks of a paged cache): `kv_indptr`
      (`[2]` i32, one sequence), `kv_indices`, `kv_last_page_len` (`[1]`): the page
      table of the sequence whose N keys (in page order) the BSR matrix covers; `k`, `v`
      are then the cache, `[pages, page_size, kv_heads, head_dim]` (NHD) or `[pages,
      kv_heads, page_size, head_dim]` (HND) as `bsr.layout` says, and `block_cols` is the
      page size. On CUDA's warp-specialised kernel every column block starts on a
      multiple of min(64, the largest power of two dividing the page size) (the plan
      checks; without `tiles` a plan whose blocks do not takes the mma.sync kernel, which
      reads any key).
    * `plan` (optional): a `!fi.plan<block_sparse>` from `fi.block_sparse_plan`.
    * `o` (destination): `[M, qo_heads, head_dim]`, the type of `q`.
    * `lse` (optional destination): `[M, qo_heads]` f32.
    * `bsr`: the block shape (`block_rows`, `block_cols`) and, with `pages`, the cache's
      `layout`.
    * `mask_mode` (`#fi.mask_mode<none>`): `none` or `causal`.
  }], Fi_AttentionAttrDoc, [{

    Runs on the host backend (the runtime's fi_block_sparse_run, exactly the listed pairs)
    and on the CUDA backend: the plan lists each unit's KV tiles from the BSR matrix (host
    arrays) and a prefill kernel loads and computes only those -- the warp-specialised one
    on Hopper (head_dim 64 or 128, `tiles` absent or wgmma 128 x 128), else the mma.sync
    one (any device, head_dim 64, 128 or 256, `tiles` with `cores = tensor`); the run's
    BSR arrays may then be device memory (they are not read).

    Example:

    ```mlir
    %o = fi.block_sparse_attention q(%q : tensor<?x32x128xf16>)
        kv(%k, %v : tensor<?x8x128xf16>, tensor<?x8x128xf16>)
        blocks(%indptr, %indices : tensor<?xi32>, tensor<?xi32>)
        outs(%o0 : tensor<?x32x128xf16>)
        {bsr = #fi.bsr<block_rows = 64, block_cols = 64, layout = nhd>,
         mask_mode = #fi.mask_mode<causal>} -> tensor<?x32x128xf16>
    ```
  }]);
  let arguments = !con((ins
      Fi_Shaped:$q, Fi_Shaped:$k, Fi_Shaped:$v,
      Fi_Shaped:$bsr_indptr, Fi_Shaped:$bsr_indices,
      Optional<Fi_Shaped>:$row_offsets, Optional<Fi_Shaped>:$col_offsets,
      Optional<Fi_Shaped>:$kv_indptr, Optional<Fi_Shaped>:$kv_indices,
      Optional<Fi_Shaped>:$kv_last_page_len,
      Variadic<Fi_VariantArg>:$variant_args,
      Optional<Fi_AnyPlan>:$plan,
      Fi_Shaped:$o, Optional<Fi_Shaped>:$lse,
      Fi_BsrAttr:$bsr,
      DefaultValuedAttr<Fi_MaskModeAttr, "::mlir::fi::MaskMode::none">:$mask_mode),
      Fi_AttentionAttrs);
  let assemblyFormat = [{
    `q` `(` $q `:` type($q) `)`
    `kv` `(` $k `,` $v `:` type($k) `,` type($v) `)`
    `blocks` `(` $bsr_indptr `,` $bsr_indices `:` type($bsr_indptr) `,` type($bsr_indices) `)`
    (`block_offsets` `(` $row_offsets^ `,` $col_offsets `:` type($row_offsets) `,`
        type($col_offsets) `)`)?
    (`pages` `(` $kv_indptr^ `,` $kv_indices `,` $kv_last_page_len `:`
        type($kv_indptr) `,` type($kv_indices) `,` type($kv_last_page_len) `)`)?
    (`variant_args` `(` $variant_args^ `:` type($variant_args) `)`)?
    (`plan` `(` $plan^ `:` type($plan) `)`)?
    `outs` `(` $o (`,` $lse^)? `:` type($o) (`,` type($lse)^)? `)`
    attr-dict (`->` type($results)^)?
  }];
  let fiExtraClassDeclaration = Fi_AttentionResultAccessors;
}

//===----------------------------------------------------------------------===//
// Merging attention states
//===----------------------------------------------------------------------===//

def Fi_MergeStateOp : Fi_DpsOp<"merge_state", "VOut"> {
  let summary = "merge two attention states of the same rows";
  let description = [{
    Combines the states `(v_a, s_a)` and `(v_b, s_b)` of the same query rows computed
    over disjoint KV sets into the state over their union:
    `s = log(exp(s_a) + exp(s_b))`, `v = v_a * exp(s_a - s) + v_b * exp(s_b - s)`.
    Commutative and associative; a state with `s = -inf` is the identity. This is how
    split-KV partial results and cascade attention (shared prefix + unique suffix) are
    combined.

    Operands:

    * `v_a`, `v_b`: `[rows, heads, head_dim]`, f16/bf16/f32, the same type.
    * `s_a`, `s_b`: `[rows, heads]` f32, natural-log LSE of each state.
    * `v_out` (destination): the type of `v_a`.
    * `s_out` (optional destination): `[rows, heads]` f32.

    Example:

    ```mlir
    %v, %s = fi.merge_state a(%va, %sa : tensor<?x32x128xf16>, tensor<?x32xf32>)
        b(%vb, %sb : tensor<?x32x128xf16>, tensor<?x32xf32>)
        outs(%v0, %s0 : tensor<?x32x128xf16>, tensor<?x32xf32>)
        -> tensor<?x32x128xf16>, tensor<?x32xf32>
    ```
  }];
  let arguments = (ins Fi_Shaped:$v_a, Fi_Shaped:$s_a, Fi_Shaped:$v_b, Fi_Shaped:$s_b,
                       Fi_Shaped:$v_out, Optional<Fi_Shaped>:$s_out);
  let assemblyFormat = [{
    `a` `(` $v_a `,` $s_a `:` type($v_a) `,` type($s_a) `)`
    `b` `(` $v_b `,` $s_b `:` type($v_b) `,` type($s_b) `)`
    `outs` `(` $v_out (`,` $s_out^)? `:` type($v_out) (`,` type($s_out)^)? `)`
    attr-dict (`->` type($results)^)?
  }];
}

def Fi_MergeStatesOp : Fi_DpsOp<"merge_states", "VOut"> {
  let summary = "merge n attention states per row";
  let description = [{
    Merges the `n` states of each row in index order (deterministic):
    `s = log(sum_i exp(s_i))`, `v = sum_i v_i * exp(s_i - s)`.

    Operands:

    * `v`: `[rows, n, heads, head_dim]`, f16/bf16/f32: the partial outputs.
    * `s`: `[rows, n, heads]` f32: their natural-log LSE.
    * `v_out` (destination): `[rows, heads, head_dim]`, element type of `v`.
    * `s_out` (optional destination): `[rows, heads]` f32.

    Example:

    ```mlir
    %v = fi.merge_states %vs, %ss : tensor<?x4x32x128xf16>, tensor<?x4x32xf32>
        outs(%v0 : tensor<?x32x128xf16>) -> tensor<?x32x128xf16>
    ```
  }];
  let arguments = (ins Fi_Shaped:$v, Fi_Shaped:$s,
                       Fi_Shaped:$v_out, Optional<Fi_Shaped>:$s_out);
  let assemblyFormat = [{
    $v `,` $s `:` type($v) `,` type($s)
    `outs` `(` $v_out (`,` $s_out^)? `:` type($v_out) (`,` type($s_out)^)? `)`
    attr-dict (`->` type($results)^)?
  }];
}

//===----------------------------------------------------------------------===//
// Appending to a paged KV cache
//===----------------------------------------------------------------------===//

def Fi_SplitSharedPrefixOp : Fi_DpsOp<"split_shared_prefix", "PrefixQoIndptr"> {
  let summary = "split a page table into its shared prefix and the requests' own suffixes";
  let description = [{
    The page table `(kv_indptr, kv_indices, kv_last_page_len)` of `batch` requests as the
    shared prefix -- P pages, P the longest run of leading page ids that every request
    lists, never a request's last page -- and each request's suffix (the runtime's
    fi_split_shared_prefix; on CUDA two kernels, no synchronisation).

    Operands (all rank-1 i32):

    * `kv_indptr` `[batch + 1]`, `kv_indices`, `kv_last_page_len` `[batch]`; `num_pages`
      (index): pages in the cache (the host backend checks every id against it).
    * `prefix_qo_indptr` `[2]` = `{0, batch}`: the batch's queries as one request.
    * `prefix_indptr` `[2]` = `{0, P}`, `prefix_indices` (at least P: the length of
      `kv_indices` always suffices), `prefix_last_page_len` `[1]` = `{page_size}`.
    * `suffix_indptr` `[batch + 1]`, `suffix_indices` (the length of `kv_indices`
      suffices), `suffix_last_page_len` `[batch]`.
    * `page_size`: the cache's page size.

    Example:

    ```mlir
    %qo, %pi, %px, %pl, %si, %sx, %sl = fi.split_shared_prefix
        pages(%indptr, %indices, %last : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
        num_pages(%np)
        outs(%qo0, %pi0, %px0, %pl0, %si0, %sx0, %sl0 : tensor<2xi32>, tensor<2xi32>,
             tensor<?xi32>, tensor<1xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
        {page_size = 16} -> tensor<2xi32>, tensor<2xi32>, tensor<?xi32>, tensor<1xi32>,
                            tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
    ```
  }];
  let arguments = (ins Fi_Shaped:$kv_indptr, Fi_Shaped:$kv_indices, Fi_Shaped:$kv_last_page_len,
                       Index:$num_pages, Fi_Shaped:$prefix_qo_indptr,
                       Fi_Shaped:$prefix_indptr, Fi_Shaped:$prefix_indices,
                       Fi_Shaped:$prefix_last_page_len, Fi_Shaped:$suffix_indptr,
                       Fi_Shaped:$suffix_indices, Fi_Shaped:$suffix_last_page_len,
                       I64Attr:$page_size);
  let assemblyFormat = [{
    `pages` `(` $kv_indptr `,` $kv_indices `,` $kv_last_page_len `:`
        type($kv_indptr) `,` type($kv_indices) `,` type($kv_last_page_len) `)`
    `num_pages` `(` $num_pages `)`
    `outs` `(` $prefix_qo_indptr `,` $prefix_indptr `,` $prefix_indices `,`
        $prefix_last_page_len `,` $suffix_indptr `,` $suffix_indices `,`
        $suffix_last_page_len `:` type($prefix_qo_indptr) `,`
        type($prefix_indptr) `,` type($prefix_indices) `,` type($prefix_last_page_len) `,`
        type($suffix_indptr) `,` type($suffix_indices) `,` type($suffix_last_page_len) `)`
    attr-dict (`->` type($results)^)?
  }];
}

def Fi_AppendPagedKvOp : Fi_DpsOp<"append_paged_kv", "KCache", [AttrSizedOperandSegments]> {
  let summary = "write ragged new keys/values into a paged KV cache";
  let description = [{
    Writes the new tokens of each request into its pages. The page table already
    includes the new tokens, which occupy the last `append_len_i` positions of request
    i's KV. The cache is updated in place: in the tensor form the results are the
    updated caches.

    Operands:

    * `k_new`, `v_new`: `[nnz_append, kv_heads, head_dim]`, the cache's element type.
    * `append_indptr`: `[batch + 1]` i32: new tokens of request i.
    * `kv_indptr`, `kv_indices`, `kv_last_page_len`: the page table (i32), as in
      `fi.paged_decode`.
    * `plan` (optional): a `!fi.plan<append>` from `fi.append_plan`.
    * `k_cache`, `v_cache` (destinations, read and written): the paged cache in
      `bsr.layout`; or, without `v_cache`, one combined tensor with a K/V dimension of 2
      after the page dimension.
    * `bsr`: `#fi.bsr<...>`; `block_cols` is the page size.

    Example:

    ```mlir
    %kv1 = fi.append_paged_kv kv_new(%k, %v : tensor<?x8x128xf16>, tensor<?x8x128xf16>)
        append_indptr(%ap : tensor<?xi32>)
        pages(%indptr, %indices, %last : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
        outs(%kv : tensor<?x2x16x8x128xf16>)
        {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>}
        -> tensor<?x2x16x8x128xf16>
    ```
  }];
  let arguments = (ins
      Fi_Shaped:$k_new, Fi_Shaped:$v_new, Fi_Shaped:$append_indptr,
      Fi_Shaped:$kv_indptr, Fi_Shaped:$kv_indices, Fi_Shaped:$kv_last_page_len,
      Optional<Fi_AnyPlan>:$plan,
      Fi_Shaped:$k_cache, Optional<Fi_Shaped>:$v_cache,
      Fi_BsrAttr:$bsr);
  let assemblyFormat = [{
    `kv_new` `(` $k_new `,` $v_new `:` type($k_new) `,` type($v_new) `)`
    `append_indptr` `(` $append_indptr `:` type($append_indptr) `)`
    `pages` `(` $kv_indptr `,` $kv_indices `,` $kv_last_page_len `:`
        type($kv_indptr) `,` type($kv_indices) `,` type($kv_last_page_len) `)`
    (`plan` `(` $plan^ `:` type($plan) `)`)?
    `outs` `(` $k_cache (`,` $v_cache^)? `:` type($k_cache) (`,` type($v_cache)^)? `)`
    attr-dict (`->` type($results)^)?
  }];
}

//===----------------------------------------------------------------------===//
// Plans
//===----------------------------------------------------------------------===//

// Plan ops are pure functions of their operands and attributes (tensor form) or read
// their memref operands; either way CSE folds identical plans.
class Fi_PlanOp<string mnemonic, string family, list<Trait> traits = []>
    : Fi_Op<mnemonic, !listconcat([DeclareOpInterfaceMethods<MemoryEffectsOpInterface>],
                                  traits)> {
  let results = (outs Fi_PlanOf<family>:$plan);
  let extraClassDefinition = [{
    void $cppClass::getEffects(
        ::llvm::SmallVectorImpl<::mlir::SideEffects::EffectInstance<
            ::mlir::MemoryEffects::Effect>> &effects) {
      ::mlir::fi::detail::getFiMemoryEffects(getOperation(), effects);
    }
  }];
}

defvar Fi_PlanShapeAttrs = (ins
    I64Attr:$num_qo_heads, I64Attr:$num_kv_heads, I64Attr:$head_dim,
    TypeAttr:$q_type, TypeAttr:$kv_type, OptionalAttr<Fi_TilesAttr>:$tiles);

defvar Fi_PlanShapeDoc = [{
    * `num_qo_heads`, `num_kv_heads`, `head_dim`, `q_type`, `kv_type`: the problem
      shape and element types of the ops that use the plan (they must agree; the
      verifier of each op checks it).
    * `tiles` (optional): forces the microkernel variant.
    * `o_type` (prefill plans, fp8 attention only): with `q_type = f8E4M3FN` the output's
      element type, f16 or bf16 (required then, absent otherwise).
}];

defvar Fi_PlanKvShardDoc = [{
    * `kv_shard` (optional, `#fi.kv_shard<ranks = N[, split_size = S]>`): the plan of ops
      whose paged KV is this rank's shard of a sequence split over N ranks (context
      parallelism; see the attention op). The ops using the plan must have the same
      `kv_shard`. The plan is made on the host on every rank and exchanges a signature
      between the ranks (a blocking exchange over the context's communicator), so it
      cannot be `on_device` (fi-lower-to-runtime refuses it); it sizes the workspace for
      the gathered partial states of all ranks. Lowers to
      `fi_rt_decode_plan_sharded` / `fi_rt_paged_prefill_plan_sharded` (the unsharded
      call's arguments, then `ranks` and `split_size`).
}];

def Fi_DecodePlanOp : Fi_PlanOp<"decode_plan", "decode"> {
  let summary = "plan a batch paged decode step";
  let description = !strconcat([{
    Computes the split-KV work partition of one decode step from the page table; all
    layers of the step share it.

    * `kv_indptr`, `kv_indices`, `kv_last_page_len`: the page table (i32).
    * `num_pages`: pages in the cache (page ids must be below it).
    * `bsr`: page size and layout.
    * `on_device` (unit): plan on the GPU. Without it the plan reads the page table on
      the host (host memory; the step cannot be captured in a CUDA graph). With it a
      planning kernel reads the page table from device memory and writes the same
      partition into the workspace, so nothing waits for the device and a step whose
      lengths change is captured once and replayed. Needs the tiles at compile time
      (fi-select-tiles). A memref operand in `#fi.memory<device>` needs `on_device`; one
      in `#fi.memory<host>` forbids it.
  }], Fi_PlanShapeDoc, Fi_PlanKvShardDoc, [{

    Example:

    ```mlir
    %plan = fi.decode_plan pages(%indptr, %indices, %last
        : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) num_pages(%np)
        {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>,
         num_qo_heads = 32, num_kv_heads = 8, head_dim = 128, q_type = f16, kv_type = f16}
    ```
  }]);
  let arguments = !con((ins Fi_Shaped:$kv_indptr, Fi_Shaped:$kv_indices,
                            Fi_Shaped:$kv_last_page_len, Index:$num_pages,
                            Fi_BsrAttr:$bsr, UnitAttr:$on_device), Fi_PlanShapeAttrs,
                       (ins OptionalAttr<Fi_KvShardAttr>:$kv_shard));
  let assemblyFormat = [{
    `pages` `(` $kv_indptr `,` $kv_indices `,` $kv_last_page_len `:`
        type($kv_indptr) `,` type($kv_indices) `,` type($kv_last_page_len) `)`
    `num_pages` `(` $num_pages `)` attr-dict
  }];
}

def Fi_PagedPrefillPlanOp : Fi_PlanOp<"paged_prefill_plan", "paged_prefill",
                                      [AttrSizedOperandSegments]> {
  let summary = "plan a batch paged prefill step";
  let description = !strconcat([{
    Computes the work partition (query tiles x KV chunks) of one paged prefill step.

    * `qo_indptr`: `[batch + 1]` i32.
    * `kv_indptr`, `kv_indices`, `kv_last_page_len`: the page table (i32).
    * `mask_indptr` (with `mask_mode = custom` only): `[batch + 1]` i32.
    * `num_pages`: pages in the cache.
    * `bsr`: page size and layout; `mask_mode`: the mask of the ops using the plan.
    * `on_device` (unit): plan on the GPU, as `fi.decode_plan` does: a planning kernel
      reads the index arrays from device memory and writes the same partition into the
      workspace, so a step whose lengths change is captured once in a CUDA graph and
      replayed. Needs the tiles at compile time (fi-select-tiles) and `max_qo_rows`, the
      rows of the query tensors the plan's ops run on (the bound the device checks
      `qo_indptr[batch]` against). Not with `mask_mode = custom` (the mask is checked
      against the lengths on the host). Memory spaces as for `fi.decode_plan`.
  }], Fi_PlanShapeDoc, Fi_PlanKvShardDoc, [{

    Example:

    ```mlir
    %plan = fi.paged_prefill_plan qo_indptr(%qo : tensor<?xi32>)
        pages(%indptr, %indices, %last : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
        num_pages(%np)
        {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>,
         mask_mode = #fi.mask_mode<causal>, num_qo_heads = 32, num_kv_heads = 8,
         head_dim = 128, q_type = f16, kv_type = f16}
    ```
  }]);
  let arguments = !con((ins Fi_Shaped:$qo_indptr, Fi_Shaped:$kv_indptr,
                            Fi_Shaped:$kv_indices, Fi_Shaped:$kv_last_page_len,
                            Optional<Fi_Shaped>:$mask_indptr, Index:$num_pages,
                            Optional<Index>:$max_qo_rows, Fi_BsrAttr:$bsr,
                            DefaultValuedAttr<Fi_MaskModeAttr,
                                              "::mlir::fi::MaskMode::none">:$mask_mode,
                            UnitAttr:$on_device),
                       Fi_PlanShapeAttrs, (ins OptionalAttr<Fi_KvShardAttr>:$kv_shard,
                                               OptionalAttr<TypeAttr>:$o_type));
  let assemblyFormat = [{
    `qo_indptr` `(` $qo_indptr `:` type($qo_indptr) `)`
    `pages` `(` $kv_indptr `,` $kv_indices `,` $kv_last_page_len `:`
        type($kv_indptr) `,` type($kv_indices) `,` type($kv_last_page_len) `)`
    (`mask_indptr` `(` $mask_indptr^ `:` type($mask_indptr) `)`)?
    `num_pages` `(` $num_pages `)`
    (`max_qo_rows` `(` $max_qo_rows^ `)`)? attr-dict
  }];
}

def Fi_RaggedPrefillPlanOp : Fi_PlanOp<"ragged_prefill_plan", "ragged_prefill",
                                       [AttrSizedOperandSegments]> {
  let summary = "plan a batch ragged prefill step";
  let description = !strconcat([{
    Computes the work partition of one ragged prefill step.

    * `qo_indptr`, `kv_indptr`: `[batch + 1]` i32.
    * `mask_indptr` (with `mask_mode = custom` only): `[batch + 1]` i32.
    * `mask_mode`: the mask of the ops using the plan.
    * `on_device` (unit): plan on the GPU, as `fi.decode_plan` does: a planning kernel
      reads the index arrays from device memory and writes the same partition into the
      workspace, so a step whose lengths change is captured once in a CUDA graph and
      replayed. Needs the tiles at compile time (fi-select-tiles) and `max_qo_rows`, the
      rows of the query tensors the plan's ops run on (the bound the device checks
      `qo_indptr[batch]` against), and `max_kv_rows`, the rows of their k and v (the bound of `kv_indptr[batch]`). Not with `mask_mode = custom` (the mask is checked
      against the lengths on the host). Memory spaces as for `fi.decode_plan`.
  }], Fi_PlanShapeDoc, [{

    Example:

    ```mlir
    %plan = fi.ragged_prefill_plan indptr(%qo, %kv : tensor<?xi32>, tensor<?xi32>)
        {num_qo_heads = 32, num_kv_heads = 8, head_dim = 128, q_type = bf16,
         kv_type = bf16}
    ```
  }]);
  let arguments = !con((ins Fi_Shaped:$qo_indptr, Fi_Shaped:$kv_indptr,
                            Optional<Fi_Shaped>:$mask_indptr,
                            Optional<Index>:$max_qo_rows, Optional<Index>:$max_kv_rows,
                            DefaultValuedAttr<Fi_MaskModeAttr,
                                              "::mlir::fi::MaskMode::none">:$mask_mode,
                            UnitAttr:$on_device),
                       Fi_PlanShapeAttrs, (ins OptionalAttr<TypeAttr>:$o_type));
  let assemblyFormat = [{
    `indptr` `(` $qo_indptr `,` $kv_indptr `:` type($qo_indptr) `,` type($kv_indptr) `)`
    (`mask_indptr` `(` $mask_indptr^ `:` type($mask_indptr) `)`)?
    (`max_rows` `(` $max_qo_rows^ `,` $max_kv_rows `)`)? attr-dict
  }];
}

def Fi_BlockSparsePlanOp : Fi_PlanOp<"block_sparse_plan", "block_sparse",
                                      [AttrSizedOperandSegments]> {
  let summary = "plan a block-sparse attention";
  let description = !strconcat([{
    Checks the BSR matrix of one `fi.block_sparse_attention` against its lengths and makes
    its plan (host memory arrays).

    * `bsr_indptr`, `bsr_indices`: the BSR matrix (see `fi.block_sparse_attention`), and
      with variable blocks its `block_offsets` (the op's).
    * `pages`, `num_pages` (paged K/V): the op's page table (host memory) and the pages in
      the cache; `N` is then the page table's.
    * `num_qo_rows`, `num_kv_rows`: `M` and `N` (`N` without `pages` only).
    * `bsr`: the block shape; `mask_mode`: `none` or `causal`, the op's.
  }], Fi_PlanShapeDoc, [{

    Example:

    ```mlir
    %plan = fi.block_sparse_plan blocks(%indptr, %indices : tensor<?xi32>, tensor<?xi32>)
        rows(%m, %n) {bsr = #fi.bsr<block_rows = 64, block_cols = 64, layout = nhd>,
        num_qo_heads = 32, num_kv_heads = 8, head_dim = 128, q_type = f16, kv_type = f16}
    ```
  }]);
  let arguments = !con((ins Fi_Shaped:$bsr_indptr, Fi_Shaped:$bsr_indices,
                            Optional<Fi_Shaped>:$row_offsets,
                            Optional<Fi_Shaped>:$col_offsets,
                            Optional<Fi_Shaped>:$kv_indptr, Optional<Fi_Shaped>:$kv_indices,
                            Optional<Fi_Shaped>:$kv_last_page_len,
                            Optional<Index>:$num_pages,
                            Index:$num_qo_rows, Optional<Index>:$num_kv_rows,
                            Fi_BsrAttr:$bsr,
                            DefaultValuedAttr<Fi_MaskModeAttr,
                                              "::mlir::fi::MaskMode::none">:$mask_mode),
                       Fi_PlanShapeAttrs);
  let assemblyFormat = [{
    `blocks` `(` $bsr_indptr `,` $bsr_indices `:` type($bsr_indptr) `,` type($bsr_indices) `)`
    (`block_offsets` `(` $row_offsets^ `,` $col_offsets `:` type($row_offsets) `,`
        type($col_offsets) `)`)?
    (`pages` `(` $kv_indptr^ `,` $kv_indices `,` $kv_last_page_len `:`
        type($kv_indptr) `,` type($kv_indices) `,` type($kv_last_page_len) `)`
        `num_pages` `(` $num_pages `)`)?
    `rows` `(` $num_qo_rows (`,` $num_kv_rows^)? `)` attr-dict
  }];
}

def Fi_AppendPlanOp : Fi_PlanOp<"append_plan", "append"> {
  let summary = "plan appending new keys/values to a paged KV cache";
  let description = [{
    Computes, for every new token, the page and slot it goes to.

    * `append_indptr`: `[batch + 1]` i32: new tokens per request.
    * `kv_indptr`, `kv_indices`, `kv_last_page_len`: the page table (i32), already
      including the new tokens.
    * `num_pages`: pages in the cache.
    * `bsr`: page size and layout.
    * `on_device` (unit): no host planning; the append kernel bounds-checks every token's
      slot on the device instead (the arrays are device memory; a bad one is reported at
      the next synchronisation). The same memory-space rule as `fi.decode_plan`.

    Example:

    ```mlir
    %plan = fi.append_plan append_indptr(%ap : tensor<?xi32>)
        pages(%indptr, %indices, %last : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
        num_pages(%np) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>}
    ```
  }];
  let arguments = (ins Fi_Shaped:$append_indptr, Fi_Shaped:$kv_indptr,
                       Fi_Shaped:$kv_indices, Fi_Shaped:$kv_last_page_len,
                       Index:$num_pages, Fi_BsrAttr:$bsr, UnitAttr:$on_device);
  let assemblyFormat = [{
    `append_indptr` `(` $append_indptr `:` type($append_indptr) `)`
    `pages` `(` $kv_indptr `,` $kv_indices `,` $kv_last_page_len `:`
        type($kv_indptr) `,` type($kv_indices) `,` type($kv_last_page_len) `)`
    `num_pages` `(` $num_pages `)` attr-dict
  }];
}

#endif // FI_OPS_TD
