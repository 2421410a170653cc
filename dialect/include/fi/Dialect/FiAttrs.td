//===- FiAttrs.td - fi attributes and types ----------------*- tablegen -*-===//
#ifndef FI_ATTRS_TD
#define FI_ATTRS_TD

include "fi/Dialect/FiBase.td"

// A bool written `true` / `false` (the default integer field parser would want 0/1).
def Fi_BoolParameter : AttrParameter<"bool", "true or false"> {
  let parser = "::mlir::fi::parseBoolKeyword($_parser)";
  let printer = "$_printer << ($_self ? \"true\" : \"false\")";
}

class Fi_Attr<string name, string attrMnemonic> : AttrDef<Fi_Dialect, name> {
  let mnemonic = attrMnemonic;
}

def Fi_BsrAttr : Fi_Attr<"Bsr", "bsr"> {
  let summary = "block-sparse-row view of a paged KV cache";
  let description = [{
    The paged KV cache seen as a BSR matrix: rows are query rows, column blocks are KV
    pages.

    * `block_rows` (>= 1): query rows that share one block: 1 for plain decode, the GQA
      group for tensor-core decode, the number of requests sharing a prefix in cascade
      attention. It describes the sparsity for readers and later passes; today's tile
      choice (`fi-select-tiles`) derives the kernel's rows from the head counts and
      query lengths, so block_rows does not change the code that is generated.
    * `block_cols` (>= 1): the page size in tokens; it must equal the page dimension of
      the cache operand.
    * `layout`: `nhd` (`[pages, page_size, kv_heads, head_dim]`) or `hnd`
      (`[pages, kv_heads, page_size, head_dim]`).

    Example: `#fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>`
  }];
  let parameters = (ins "int64_t":$blockRows, "int64_t":$blockCols,
                        EnumParameter<Fi_KvLayout>:$layout);
  let assemblyFormat = [{
    `<` `block_rows` `=` $blockRows `,` `block_cols` `=` $blockCols `,`
        `layout` `=` $layout `>`
  }];
  let genVerifyDecl = 1;
}

def Fi_TilesAttr : Fi_Attr<"Tiles", "tiles"> {
  let summary = "the microkernel variant chosen for one op";
  let description = [{
    Set by tile selection (`fi-select-tiles`) or by hand; forces the variant the
    runtime launches.

    * `q`: query rows per CTA: 1 (decode) or 16/32/64/128.
    * `kv`: KV tokens per pipeline stage (16..128).
    * `split_kv`: whether the KV of one request may be split over CTAs and merged.
    * `cores`: `cuda` (CUDA cores), `tensor` (tensor cores through `mma.sync`, sm_80 and
      newer) or `wgmma` (the Hopper tier of prefill: warpgroup MMA, sm_90a only; chosen
      for `#fi.target<sm = 90, ...>` when the packed query rows fill a 64-row tile and
      head_dim is 64 or 128; at head_dim 256 only the warp-specialised kernel's `q = 128,
      kv = 64`, for ops it can run: 16-bit q, KV of its type or fp8, a GQA group up to
      128).

    Example: `#fi.tiles<q = 16, kv = 64, split_kv = true, cores = tensor>`
  }];
  let parameters = (ins "int64_t":$qTile, "int64_t":$kvTile, Fi_BoolParameter:$splitKv,
                        EnumParameter<Fi_Cores>:$cores);
  let assemblyFormat = [{
    `<` `q` `=` $qTile `,` `kv` `=` $kvTile `,` `split_kv` `=` $splitKv `,`
        `cores` `=` $cores `>`
  }];
  let genVerifyDecl = 1;
}

def Fi_TargetAttr : Fi_Attr<"Target", "target"> {
  let summary = "facts about the target GPU used by tile selection";
  let description = [{
    Placed on the module (`fi.target = #fi.target<...>`); tile selection defaults to an
    H100 SXM when it is absent.

    * `sm`: SM version (90 for Hopper, 80 for Ampere).
    * `sm_count`: number of SMs (132 on an H100 SXM).
    * `smem`: shared memory in bytes one block may opt in to (232448 on an H100).
    * `dram_gbps_per_sm` (optional): peak device-memory bandwidth per SM in GB/s, rounded
      (25 on an H100 SXM, 36 on an H200; omitted or 0: unknown, taken as at most 30 like
      an H100's). Decode tiles of some shapes depend on it (head_dim 256 over CUDA cores:
      KV tiles of 32 from more than 8 CTAs per SM only up to 30 GB/s per SM).

    Example: `#fi.target<sm = 90, sm_count = 132, smem = 232448, dram_gbps_per_sm = 36>`
  }];
  let parameters = (ins "int64_t":$smVersion, "int64_t":$smCount,
                        "int64_t":$smemPerBlock,
                        DefaultValuedParameter<"int64_t", "0">:$dramGbpsPerSm);
  let assemblyFormat = [{
    `<` `sm` `=` $smVersion `,` `sm_count` `=` $smCount `,` `smem` `=` $smemPerBlock
    (`,` `dram_gbps_per_sm` `=` $dramGbpsPerSm^)? `>`
  }];
  let genVerifyDecl = 1;
}

def Fi_KvShardAttr : Fi_Attr<"KvShard", "kv_shard"> {
  let summary = "context parallelism: the paged KV is this rank's shard of a sequence "
                "split over N ranks";
  let description = [{
    On `fi.paged_decode`, `fi.paged_prefill` and their plan ops (`fi.decode_plan`,
    `fi.paged_prefill_plan`), as the optional attribute `kv_shard`: the KV of every
    request is cut along the sequence into `ranks` contiguous segments in rank order, and
    the op's paged KV operands (cache and page table) are this rank's segment (which may
    be empty). The result is attention over all ranks' segments: each rank runs the local
    attention, the ranks all-gather their partial states (o, lse) and merge them in rank
    order, and every rank gets the full `o` and `lse`. The runtime does it inside the
    plan and run calls (`fi_attention_params.kv_shards`, runtime.h "Context
    parallelism").

    * `ranks` (1..1024): the number of ranks of the communicator.
    * `split_size` (optional, >= 0; 0 or absent = automatic): tokens per split-KV chunk.
      A fixed split that divides every rank's segment but the last makes the result
      bit-identical to the single-GPU run of the whole cache with the same split (and the
      same tiles); automatic splits are identical between runs, not to one GPU.

    At run time the context needs a communicator of `ranks` ranks
    (`fi_context_set_comm`); compiled code runs on the thread's or the process's context
    (`fi_rt_set_thread_context` / `fi_rt_set_context`), so each rank's thread or process
    sets its own context with its communicator. Positions are per shard, so ops with
    `kv_shard` take no RoPE or ALiBi (`pos_encoding`; apply RoPE to K before appending
    it), no sliding window, no custom mask, no `score_mod` / `mask_mod` and no
    `shared_prefix`; a causal prefill must have each request's new tokens on the last
    rank. The plan exchanges a signature between the ranks, so it is made on the host
    (not `on_device`). An op and its plan have the same `kv_shard`.

    Example: `#fi.kv_shard<ranks = 4>`, `#fi.kv_shard<ranks = 8, split_size = 256>`
  }];
  let parameters = (ins "int64_t":$ranks,
                        DefaultValuedParameter<"int64_t", "0">:$splitSize);
  let assemblyFormat = [{
    `<` `ranks` `=` $ranks (`,` `split_size` `=` $splitSize^)? `>`
  }];
  let genVerifyDecl = 1;
}

def Fi_PlanType : TypeDef<Fi_Dialect, "Plan"> {
  let mnemonic = "plan";
  let summary = "the work partition of one step for one op family";
  let description = [{
    The result of a plan op (`fi.decode_plan`, `fi.paged_prefill_plan`,
    `fi.ragged_prefill_plan`, `fi.append_plan`): the load-balanced split-KV work
    partition and the chosen tiles. The family says which ops may use it; using a plan
    with another op family is a verifier error.

    Example: `!fi.plan<decode>`
  }];
  let parameters = (ins EnumParameter<Fi_PlanFamily>:$family);
  let assemblyFormat = "`<` $family `>`";
}

#endif // FI_ATTRS_TD
