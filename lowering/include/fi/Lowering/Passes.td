//===- Passes.td - fi lowering passes ----------------------*- tablegen -*-===//
#ifndef FI_LOWERING_PASSES_TD
#define FI_LOWERING_PASSES_TD

include "mlir/Pass/PassBase.td"

def FiDecomposeSharedPrefix : Pass<"fi-decompose-shared-prefix", "ModuleOp"> {
  let summary = "Run decodes whose requests share leading pages as the composable formats";
  let description = [{
    Rewrites every `fi.paged_decode` marked `shared_prefix` (tensor form, no plan yet) into
    the FlashInfer paper's composition of two formats: `fi.split_shared_prefix` finds, at
    run time, the leading pages every request lists (the shared prefix) and each
    request's own suffix; the prefix runs as ONE block row of all the batch's queries
    (`fi.paged_prefill` with `qo_indptr = {0, batch}`, no mask: each KV tile is read
    once for the rows of a 128-row chunk instead of once per request), the suffixes as a
    `fi.paged_decode`, and `fi.merge_state` combines the two states (exact; a prefix of
    0 pages is the identity). The result is the decode's (LSE too, if requested). (The
    prefix op's `merge` operands would fold the suffixes' state into its own split-KV
    merge instead; on an H100 that step measured 3-5 us slower than this one: see
    bench/NOTES.md, session 58.)

    Query positions differ between the two parts, so a decode with `pos_encoding`
    (RoPE, ALiBi) or `window_left` is refused with an error: apply RoPE before the op,
    or drop `shared_prefix`. First step of fi-to-llvm; ops without `shared_prefix` are
    left alone.

    With `lanes` (the default) the prefix's prefill is marked `fi.lane = "main"` and the
    suffix decode `fi.lane = "side"`: where the embedder installed lanes
    (`fi_rt_set_lanes`, `fi/lanes.h`), the compute-bound prefix and the memory-bound
    decode run at the same time on disjoint SMs (bench/NOTES.md, "lanes"); otherwise in
    order, as without the marks. The destinations of both parts are made before either.
  }];
  let options = [
    Option<"lanes", "lanes", "bool", /*default=*/"true",
           "Mark the prefix's prefill and the suffix decode for the main and side lanes">
  ];
  let dependentDialects = ["::mlir::fi::FiDialect", "::mlir::tensor::TensorDialect"];
}

def FiSelectTiles : Pass<"fi-select-tiles", "ModuleOp"> {
  let summary = "Choose the microkernel variant (#fi.tiles) of every fi attention op";
  let description = [{
    Annotates every `fi.paged_decode`, `fi.paged_prefill`, `fi.ragged_prefill` (and the
    plan ops) that has no `tiles` yet with `#fi.tiles<...>`, computed by the runtime's own
    C heuristics (kernels/include/fi/heuristics.h, linked into this pass). Target facts
    come from `fi.target = #fi.target<...>` on the module (an H100 SXM when absent).

    Shapes: head counts, head_dim and element types are always static. Decode has one
    query row per request, so its choice is always made here. For prefill the average
    query length decides the query tile: it is taken from static shapes
    (nnz_qo / batch), else from the hint attribute `fi.avg_qo_len = N : i64` on the op.
    Without either, the choice is left to the plan step, visibly: the op gets the unit
    attribute `fi.tiles_at_plan_time` and keeps no `tiles`. `fi.avg_kv_len = N : i64`
    (optional), a static batch and, for decode, the page size (`#fi.bsr`'s block_cols)
    feed the split-KV decision (unknown -> split allowed, the planner decides with the
    real lengths).

    A plan made on the device never sees the lengths on the host, so a prefill op whose
    plan is `on_device` (or every prefill op, with `device-plans`, as fi-to-llvm's
    `plans-on-device` sets) gets its tiles here even without a length: the query length
    is taken as long (512 rows per request, the prefill of a prompt) unless
    `fi.avg_qo_len` says otherwise.
  }];
  let options = [
    Option<"devicePlans", "device-plans", "bool", /*default=*/"false",
           "Choose prefill tiles without a query length (plans made on the device)">,
  ];
  let dependentDialects = ["::mlir::fi::FiDialect"];
}

def FiMaterializePlans : Pass<"fi-materialize-plans", "ModuleOp"> {
  let summary = "Create the explicit plan op of every fi op that has none";
  let description = [{
    For every attention op and `fi.append_paged_kv` without a `plan` operand, inserts
    the matching plan op (`fi.decode_plan`, `fi.paged_prefill_plan`,
    `fi.ragged_prefill_plan`, `fi.append_plan`) built from the op's index arrays, shape,
    element types and tiles, and passes its result to the op. The plan op is placed
    right after the last definition of its operands, so that the plans of all layers of
    a step sit next to each other and `-cse` folds identical ones into one ("plan once,
    run per layer"), in the tensor and in the memref form.

    With `on-device`, the plans it creates carry `on_device` (planned by a kernel on the
    GPU from device arrays; see `fi.decode_plan`); prefill plans get the row bounds from
    dim 0 of the first layer's q (and ragged k), and a prefill with `mask_mode = custom`
    keeps a host plan (its mask is checked on the host).
  }];
  let options = [
    Option<"onDevice", "on-device", "bool", /*default=*/"false",
           "Create plans with `on_device` (prefill with a custom mask excepted)">,
  ];
  let dependentDialects = ["::mlir::fi::FiDialect", "::mlir::tensor::TensorDialect",
                           "::mlir::memref::MemRefDialect"];
}

def FiLowerToRuntime : Pass<"fi-lower-to-runtime", "ModuleOp"> {
  let summary = "Rewrite fi ops on memrefs into calls of the fi runtime's C adapters";
  let description = [{
    Every fi op in memref form becomes a `func.call` of an adapter in
    kernels/src/mlir_adapters.c (declared `llvm.emit_c_interface`, so the call goes to
    `_mlir_ciface_<name>` with memref descriptors):

    * plan ops -> `fi_rt_<family>_plan(slot, index arrays..., shape..., tiles...)`. Each
      plan op owns a module-level slot (`memref.global @__fi_plan_slot_N`) in which the
      adapter keeps the runtime plan and its workspace (allocated at the first call,
      grown only when a larger problem comes). The tiles are passed as i32 constants
      (q_tile, kv_tile, split_kv, cores; q_tile = 0 means "choose at plan time") and the
      call carries `fi.variant = "<name>"` (fi_tiles_name), so the chosen microkernel
      is visible in the IR.
    * attention ops -> `fi_rt_<family>_run_<q type>_<kv type>(slot, memrefs..., params)`;
      a combined K/V cache is split into two strided views with `memref.subview`; a
      `fi.paged_prefill` with `merge` operands calls the `..._merge` entry point, which
      takes them after `lse` (`fi_paged_prefill_run_unmerged`, then `fi_prefill_merge_run`).
    * `fi.merge_state(s)` -> `fi_rt_merge_state(s)_<type>`; `fi.append_paged_kv` ->
      `fi_rt_append_plan` + `fi_rt_append_run_<type>`.

    An op with a `score_mod` / `mask_mod` passes them as hooks with the runtime's C
    signatures, and a `mask_mod` its tile classifier (interval arithmetic over the mask's
    body: which tiles of pairs it provably drops or keeps); with `backend=cuda` they are
    also compiled into the program's own cubin (lowering/README.md).

    An op without a plan operand gets its own plan (as fi-materialize-plans would make).
    With `backend=cuda` the pass rejects what the CUDA backend has no kernel for (for
    example head_dim 96 or f32 queries), naming the op and what is supported.
  }];
  let options = [
    Option<"backend", "backend", "std::string", /*default=*/"\"any\"",
           "Backend the program will run on: any (no check), host or cuda (reject ops "
           "the CUDA kernels do not cover)">,
    Option<"variantBitcode", "variant-bitcode", "std::string",
           /*default=*/"FI_VARIANT_BITCODE_DEFAULT",
           "backend=cuda: the LLVM bitcode of the runtime's variant kernels "
           "(fi_variant_kernels_sm90a.bc, built with the runtime) that a score_mod / "
           "mask_mod is linked with">,
    Option<"variantChip", "variant-chip", "std::string", /*default=*/"\"sm_90a\"",
           "backend=cuda: the GPU the variant kernels are compiled for">,
  ];
  let dependentDialects = ["::mlir::func::FuncDialect", "::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect", "::mlir::scf::SCFDialect",
                           "::mlir::LLVM::LLVMDialect", "::mlir::gpu::GPUDialect",
                           "::mlir::NVVM::NVVMDialect"];
}

def FiEmitCInterface : Pass<"fi-emit-c-interface", "ModuleOp"> {
  let summary = "Give every public function with a body a C interface";
  let description = [{
    Sets `llvm.emit_c_interface` on every public `func.func` with a body, so that the
    LLVM lowering emits `_mlir_ciface_<name>` wrappers taking pointers to memref
    descriptors: the entry points a C program calls. Part of fi-to-llvm (option
    `c-interface`, on by default).
  }];
}

def FiEmbedVariantImages : Pass<"fi-embed-variant-images", "ModuleOp"> {
  let summary = "Put each variant's cubin (a gpu.binary) into its image global";
  let description = [{
    With `backend=cuda`, fi-lower-to-runtime puts the device code of every attention op
    with a score_mod / mask_mod into a `gpu.module @__fi_variant_device_N` (the variant's
    functions as `fi_variant_score_mod` / `fi_variant_mask_mod` / `fi_variant_mask_tile`,
    linked with the runtime's
    variant kernels' bitcode) and passes the address of `@__fi_variant_image_N` to the
    run. After `gpu-module-to-binary` has compiled each module to a cubin (NVPTX, then
    ptxas), this pass makes that global the image the runtime loads: a little-endian
    uint64 byte count, then the cubin; the `gpu.binary` goes.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect", "::mlir::gpu::GPUDialect"];
}

#endif // FI_LOWERING_PASSES_TD
