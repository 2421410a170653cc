//===- FiBase.td - the fi dialect and its enums ------------*- tablegen -*-===//
#ifndef FI_BASE_TD
#define FI_BASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Fi_Dialect : Dialect {
  let name = "fi";
  let cppNamespace = "::mlir::fi";
  let summary = "Attention for LLM serving: paged-KV decode, prefill, state merging";
  let description = [{
    The `fi` dialect expresses the attention operators of LLM serving in the style of
    FlashInfer: batch decode against a paged KV cache, ragged and paged prefill (append
    attention), merging of attention states, and appending new keys/values to a paged
    cache. The ops are lowered to calls into a small C runtime with hand-written CUDA
    microkernels (and a host reference backend).

    Conventions used by every op:

    * **Ragged tensors** pack the rows of all requests without padding; an `indptr`
      array (`i32`, length `batch + 1`, `indptr[0] = 0`, non-decreasing) says where the
      rows of request `i` start and end.
    * **Paged KV cache** = a block-sparse-row (BSR) matrix whose column blocks are
      pages. `#fi.bsr<block_rows = R, block_cols = P, layout = nhd>` gives the page size
      `P` (tokens per page) and the layout; the page table is given by three `i32`
      arrays: `kv_indptr` (`[batch + 1]`, prefix sum of pages per request),
      `kv_indices` (`[kv_indptr[batch]]`, page ids) and `kv_last_page_len`
      (`[batch]`, tokens in the last page, 1..P). The KV length of request `i` is
      `P * (pages_i - 1) + last_page_len_i`.
    * **Layouts**: NHD `[pages, page_size, kv_heads, head_dim]`, HND
      `[pages, kv_heads, page_size, head_dim]`. K and V are either two such tensors, or
      one combined tensor with a K/V dimension of size 2 right after the page dimension
      (`[pages, 2, page_size, kv_heads, head_dim]` in NHD; K at index 0, V at 1).
    * **GQA/MQA**: `qo_heads` must be a multiple of `kv_heads`.
    * **Element types**: q and o are `f16`, `bf16` or `f32`; the KV cache may also be
      fp8 (`f8E4M3FN`, `f8E5M2`) with dequantisation scales `k_scale`/`v_scale`.
      fp8 attention (ragged and paged prefill): q, k and v all `f8E4M3FN` (scales
      `q_scale`, `k_scale`, `v_scale`), o `f16` or `bf16`, on fp8 tensor cores.
      Index arrays are `i32` (64-bit indptr silently breaks the kernels, so it is a
      verifier error here).
    * **LSE**: the optional `lse` output (`f32`, `[rows, qo_heads]`) is the natural-log
      (base e) log-sum-exp of the scaled logits of each query row and head:
      `lse = log(sum_j exp(s_j))` with `s_j = sm_scale * q.k_j` after soft cap, masks and
      position biases. An attention state is the pair `(o, lse)`; `fi.merge_state` and
      `fi.merge_states` combine states of disjoint KV sets exactly.
    * **Tensor and memref forms**, like linalg: with tensors the ops are in
      destination-passing style (the `outs` operands are the destinations and the ops
      return one tensor per destination) and bufferize with `one-shot-bufferize`; with
      memrefs they write into the `outs` buffers and return nothing.
    * **Plans**: the pure ops `fi.decode_plan`, `fi.paged_prefill_plan`,
      `fi.ragged_prefill_plan` and `fi.append_plan` compute the work partition of one
      step from the index arrays and the problem shape; their `!fi.plan<family>` result
      is an optional operand of the matching op. Identical plans of all layers of a step
      fold into one with plain `-cse` ("plan once, run per layer").
    * **Lanes**: the discardable attribute `fi.lane = "main"` or `"side"` on an attention
      op (`fi.paged_decode`, `fi.paged_prefill`, `fi.ragged_prefill`,
      `fi.block_sparse_attention`) or its plan op says that the op may run in that lane
      (`fi/lanes.h`: two disjoint partitions of the GPU's SMs, a stream each) at the
      same time as the other lane's ops. The lowered code enters the lane around the op's
      calls and joins the lanes before any other work; where the embedder installed no
      lanes (`fi_rt_set_lanes`) or on the host backend, the ops run in order as without
      the attribute. `fi-decompose-shared-prefix` puts a shared prefix's prefill in the
      main lane and its suffix decode in the side lane.
  }];
  let hasOperationAttrVerify = 1;
  let useDefaultAttributePrinterParser = 1;
  let useDefaultTypePrinterParser = 1;
  let extraClassDeclaration = [{
    void registerAttributes();
    void registerTypes();
  }];
}

// Enums: values equal those of the runtime's C enums (kernels/include/fi/runtime.h).

def Fi_MaskMode : I32EnumAttr<"MaskMode", "attention mask", [
    I32EnumAttrCase<"none", 0>, I32EnumAttrCase<"causal", 1>,
    I32EnumAttrCase<"custom", 2>]> {
  let cppNamespace = "::mlir::fi";
  let genSpecializedAttr = 0;
}
def Fi_MaskModeAttr : EnumAttr<Fi_Dialect, Fi_MaskMode, "mask_mode"> {
  let assemblyFormat = "`<` $value `>`";
  let summary = "attention mask: none, causal (aligned bottom-right) or custom (bit-packed)";
}

def Fi_PosEncoding : I32EnumAttr<"PosEncoding", "position encoding fused in the kernel", [
    I32EnumAttrCase<"none", 0>, I32EnumAttrCase<"rope_llama", 1>,
    I32EnumAttrCase<"alibi", 2>]> {
  let cppNamespace = "::mlir::fi";
  let genSpecializedAttr = 0;
}
def Fi_PosEncodingAttr : EnumAttr<Fi_Dialect, Fi_PosEncoding, "pos_encoding"> {
  let assemblyFormat = "`<` $value `>`";
  let summary = "position encoding: none, rope_llama (rotary, LLaMA style) or alibi";
}

def Fi_KvLayout : I32EnumAttr<"KvLayout", "layout of a paged KV cache", [
    I32EnumAttrCase<"nhd", 0>, I32EnumAttrCase<"hnd", 1>]> {
  let cppNamespace = "::mlir::fi";
  let genSpecializedAttr = 0;
}
def Fi_KvLayoutAttr : EnumAttr<Fi_Dialect, Fi_KvLayout, "kv_layout"> {
  let assemblyFormat = "`<` $value `>`";
  let summary = "KV page layout: nhd [pages, page_size, kv_heads, head_dim] or hnd [pages, kv_heads, page_size, head_dim]";
}

def Fi_Cores : I32EnumAttr<"Cores", "kind of GPU cores a microkernel uses", [
    I32EnumAttrCase<"cuda", 0>, I32EnumAttrCase<"tensor", 1>, I32EnumAttrCase<"wgmma", 2>]> {
  let cppNamespace = "::mlir::fi";
  let genSpecializedAttr = 0;
}
def Fi_CoresAttr : EnumAttr<Fi_Dialect, Fi_Cores, "cores"> {
  let assemblyFormat = "`<` $value `>`";
  let summary = "cuda (CUDA cores), tensor (tensor cores, mma.sync) or wgmma (Hopper warpgroup MMA)";
}

def Fi_PlanFamily : I32EnumAttr<"PlanFamily", "op family a plan is made for", [
    I32EnumAttrCase<"decode", 1>, I32EnumAttrCase<"paged_prefill", 2>,
    I32EnumAttrCase<"ragged_prefill", 3>, I32EnumAttrCase<"append", 4>,
    I32EnumAttrCase<"block_sparse", 5>]> {
  let cppNamespace = "::mlir::fi";
  let genSpecializedAttr = 0;
}
def Fi_PlanFamilyAttr : EnumAttr<Fi_Dialect, Fi_PlanFamily, "plan_family"> {
  let assemblyFormat = "`<` $value `>`";
  let summary = "op family of a plan: decode, paged_prefill, ragged_prefill, append or "
                "block_sparse";
}

def Fi_MemoryKind : I32EnumAttr<"MemoryKind", "where an array lives", [
    I32EnumAttrCase<"host", 0>, I32EnumAttrCase<"device", 1>]> {
  let cppNamespace = "::mlir::fi";
  let genSpecializedAttr = 0;
}
def Fi_MemoryKindAttr : EnumAttr<Fi_Dialect, Fi_MemoryKind, "memory"> {
  let assemblyFormat = "`<` $value `>`";
  let summary = "memory space of a memref: host (read by the CPU: plans made on the host) "
                "or device (read by the GPU: kernels, plans made `on_device`)";
  let description = [{
    Used as the memory space of a memref (`memref<?xi32, #fi.memory<device>>`) to state
    where an index array lives. The plan ops' verifiers check it against where the plan
    reads its arrays; fi-lower-to-runtime erases it (the runtime takes plain pointers).
  }];
}

#endif // FI_BASE_TD
