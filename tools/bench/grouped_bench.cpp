// anvil-bench --grouped SUITE: times anvil's grouped GEMM (anvil/grouped.h) on MoE layers
// against the ways cuBLAS can run the same experts, on the same buffers and by anvil-bench's
// method (timing.h): random inputs in rotating sets larger than 3x L2, launches captured
// back to back in one CUDA graph, kernels interleaved within each repeat behind a GPU spin,
// the median of the repeats; every kernel checked against the expert-by-expert reference
// (verify/grouped_reference.h) after a direct launch and after its graph's warm-up replay.
//
// Kernels (--kernels, comma-separated; default all):
//   anvil          grouped_gemm, contiguous layout (offsets in device memory);
//   anvil-masked   grouped_gemm, masked layout (A and D [E, max_rows, .], max_rows the
//                  largest count rounded up to 64; shapes of at most 512 tokens, the decode
//                  layout's range);
//   cublas-loop    one cuBLASLt matmul per non-empty expert (the host knows the routing);
//   cublas-grouped cublasGemmGroupedBatchedEx, one group per non-empty expert.
// The suite (suites/moe.json) gives each shape E, N, K and a routing: rows per expert.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "anvil/grouped.h"
#include "check.h"
#include "cublaslt_gemm.h"
#include "json.h"
#include "spin.h"
#include "system_info.h"
#include "timing.h"
#include "verify/grouped_reference.h"
#include "verify/verify.h"

namespace bench {
namespace {

namespace verify = anvil::verify;

constexpr size_t kAlign = 256;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kSpinUs = 1000.0;
constexpr int64_t kMaskedMaxTokens = 512;

const char* kGroupedMethod =
    "Per (shape, kernel): random inputs in R rotating input sets (A, W, D; the masked row its "
    "own [E, max_rows, .] A and D), R x set bytes > 3x L2 (2 <= R <= max-input-sets, memory "
    "permitting). Warm-up batches estimate the per-call time, then iters calls (a multiple of "
    "R, one replay >= min-replay-ms, at most max-iters) cycling through the sets are captured "
    "in one CUDA graph, replayed once as warm-up (and verified), then `repeats` times; the "
    "kernels of a shape are interleaved in each repeat behind a 1 ms GPU spin, the first "
    "rotating; per-call time = replay / iters, median reported. A call is the whole MoE GEMM: "
    "one grouped launch (anvil, cublas-grouped) or one cuBLASLt matmul per non-empty expert "
    "(cublas-loop, heuristic's first algorithm per row count, fp32 compute). Outputs are "
    "poisoned and checked expert by expert against verify::reference_gemm. FLOPs: 2 x rows x "
    "N x K; GB/s: A and the non-empty experts' W read once, D written once. e4m3: A and W e4m3, "
    "D bf16, row-wise scales (one per row of A, [E, N] for W: torch._scaled_grouped_mm's "
    "recipe) or with --scales block DeepSeek-V3 block scales (1 x 128 per row of A, 128 x 128 "
    "per block of W), random in [0.5, 1.5]; cublas-loop runs cuBLASLt's FP8 matmul with "
    "outer-vector or block scales per expert (block: each expert's A scales gathered once, "
    "outside the timing, into the dense layout cuBLASLt reads, and its rows rounded up to 16, "
    "where cuBLASLt's block-scaled matmul runs every count; "
    "cublasGemmGroupedBatchedEx takes no FP8).";

size_t align_up(size_t x) { return (x + kAlign - 1) / kAlign * kAlign; }

struct GroupedOptions {
  std::string suite_path;
  std::vector<std::string> only;
  std::vector<std::string> kernels = {"anvil", "anvil-masked", "cublas-loop", "cublas-grouped"};
  anvil::DataType dtype = anvil::DataType::kBF16;
  anvil::ScaleMode fp8_scales = anvil::ScaleMode::kRowColumn;  // e4m3: kRowColumn or kBlock128
  int repeats = 7;
  double min_replay_ms = 20.0;
  int max_iters = 2000;
  int max_input_sets = 64;
  double mem_cap_gb = 40.0;
  bool verify = true;
  std::string json_path;
  int device = 0;
  uint64_t seed = 20261129;
};

[[noreturn]] void usage_error(const char* fmt, const char* arg) {
  std::fprintf(stderr, "anvil-bench --grouped: ");
  std::fprintf(stderr, fmt, arg);
  std::fprintf(stderr, "\n");
  std::exit(1);
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t comma = s.find(',', start);
    const std::string item = s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!item.empty()) out.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

// D's dtype: the input's for 16-bit inputs, bf16 for e4m3 (torch._scaled_grouped_mm's).
anvil::DataType output_dtype(const GroupedOptions& o) {
  return o.dtype == anvil::DataType::kE4M3 ? anvil::DataType::kBF16 : o.dtype;
}

GroupedOptions parse_grouped_options(int argc, char** argv) {
  GroupedOptions o;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "-h") == 0 || std::strcmp(argv[i], "--help") == 0) {
      std::printf(
          "anvil-bench --grouped SUITE [--only WORD,...] [--kernels anvil,anvil-masked,cublas-loop,cublas-grouped]\n"
          "            [--dtype bf16|fp16|e4m3] [--scales rowcol|block] [--repeats 7] [--min-replay-ms 20]\n"
          "            [--max-iters 2000]\n"
          "            [--max-input-sets 64] [--mem-cap-gb 40] [--no-verify] [--json OUT] [--device 0]\n"
          "Times anvil's grouped GEMM on a MoE suite (suites/moe.json) against a loop of cuBLASLt\n"
          "matmuls and cublasGemmGroupedBatchedEx on the same buffers. --only keeps the shapes whose\n"
          "name contains one of the words (a model, \"-t16-\", a whole name).\n");
      std::exit(0);
    }
  }
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) usage_error("%s needs a value", a.c_str());
      return argv[++i];
    };
    if (a == "--grouped") o.suite_path = next();
    else if (a == "--only") o.only = split_commas(next());
    else if (a == "--kernels") o.kernels = split_commas(next());
    else if (a == "--dtype") {
      const std::string d = next();
      if (d == "bf16") o.dtype = anvil::DataType::kBF16;
      else if (d == "fp16") o.dtype = anvil::DataType::kF16;
      else if (d == "e4m3") o.dtype = anvil::DataType::kE4M3;
      else usage_error("--dtype %s: bf16, fp16 or e4m3", d.c_str());
    } else if (a == "--scales") {
      const std::string v = next();
      if (v == "rowcol") o.fp8_scales = anvil::ScaleMode::kRowColumn;
      else if (v == "block") o.fp8_scales = anvil::ScaleMode::kBlock128;
      else usage_error("--scales %s: rowcol or block (e4m3)", v.c_str());
    } else if (a == "--repeats") o.repeats = std::max(1, std::atoi(next().c_str()));
    else if (a == "--min-replay-ms") o.min_replay_ms = std::atof(next().c_str());
    else if (a == "--max-iters") o.max_iters = std::max(1, std::atoi(next().c_str()));
    else if (a == "--max-input-sets") o.max_input_sets = std::max(2, std::atoi(next().c_str()));
    else if (a == "--mem-cap-gb") o.mem_cap_gb = std::atof(next().c_str());
    else if (a == "--no-verify") o.verify = false;
    else if (a == "--json") o.json_path = next();
    else if (a == "--device") o.device = std::atoi(next().c_str());
    else if (a == "--seed") o.seed = std::strtoull(next().c_str(), nullptr, 10);
    else {
      usage_error("unknown option %s (see --grouped --help)", a.c_str());
    }
  }
  for (const std::string& k : o.kernels) {
    if (k != "anvil" && k != "anvil-masked" && k != "cublas-loop" && k != "cublas-grouped") {
      usage_error("unknown grouped kernel %s", k.c_str());
    }
  }
  return o;
}

struct MoeShape {
  std::string name, model, gemm, skew, routing;
  int64_t experts = 0, n = 0, k = 0, tokens = 0, top_k = 0;
  std::vector<int64_t> counts;
};

std::vector<MoeShape> load_moe_suite(const GroupedOptions& o) {
  json::Value doc;
  std::string error;
  if (!json::parse_file(o.suite_path, doc, error)) fatal("%s: %s", o.suite_path.c_str(), error.c_str());
  const json::Value* routings = doc.find("routings");
  const json::Value* shapes = doc.find("shapes");
  if (routings == nullptr || !routings->is_object() || shapes == nullptr || !shapes->is_array()) {
    fatal("%s: a MoE suite has a \"routings\" object and a \"shapes\" array", o.suite_path.c_str());
  }
  auto text = [](const json::Value& v, const char* key) {
    const json::Value* f = v.find(key);
    return f != nullptr && f->is_string() ? f->as_string() : std::string();
  };
  auto number = [&](const json::Value& v, const char* key) -> int64_t {
    const json::Value* f = v.find(key);
    if (f == nullptr || !f->is_number() || f->as_number() < 0) {
      fatal("%s: shape %s: \"%s\" must be a non-negative number", o.suite_path.c_str(), text(v, "name").c_str(), key);
    }
    return static_cast<int64_t>(f->as_number());
  };
  std::vector<MoeShape> out;
  for (const json::Value& s : shapes->items()) {
    MoeShape m;
    m.name = text(s, "name");
    // --only keeps shapes whose name contains one of its words ("deepseek-v3", "t16-", a full name).
    if (!o.only.empty() && std::none_of(o.only.begin(), o.only.end(), [&](const std::string& w) {
          return m.name.find(w) != std::string::npos;
        })) {
      continue;
    }
    m.model = text(s, "model");
    m.gemm = text(s, "gemm");
    m.skew = text(s, "skew");
    m.routing = text(s, "routing");
    m.experts = number(s, "experts");
    m.n = number(s, "N");
    m.k = number(s, "K");
    m.tokens = number(s, "tokens");
    m.top_k = number(s, "top_k");
    const json::Value* r = routings->find(m.routing);
    if (r == nullptr || !r->is_array() || int64_t(r->items().size()) != m.experts) {
      fatal("%s: shape %s: routing \"%s\" must list %lld row counts", o.suite_path.c_str(), m.name.c_str(),
            m.routing.c_str(), static_cast<long long>(m.experts));
    }
    for (const json::Value& c : r->items()) m.counts.push_back(static_cast<int64_t>(c.as_number()));
    out.push_back(std::move(m));
  }
  if (out.empty()) fatal("%s: no shapes selected", o.suite_path.c_str());
  return out;
}

struct GroupedRow {
  std::string kernel, status = "ok", message, method, dispatched;
  std::vector<double> samples_us;
  double us_median = NAN, us_min = NAN, us_max = NAN, tflops = NAN, gbps = NAN, speedup_vs_cublas_loop = NAN;
  double speedup_vs_cublas_grouped = NAN;
  std::optional<bool> verified;
  double rel_error = NAN;
  int iters = 0, input_sets = 0;
};

class DeviceMemory {
 public:
  ~DeviceMemory() {
    if (ptr_ != nullptr) (void)cudaFree(ptr_);
  }
  bool allocate(size_t bytes) {
    if (cudaMalloc(&ptr_, std::max<size_t>(bytes, 256)) != cudaSuccess) {
      (void)cudaGetLastError();
      ptr_ = nullptr;
      return false;
    }
    return true;
  }
  char* get() const { return static_cast<char*>(ptr_); }

 private:
  void* ptr_ = nullptr;
};

// One shape's buffers: per input set A, W, D (contiguous) and A, D (masked), and the
// device-side routing.
struct Buffers {
  int sets = 0;
  size_t a_bytes = 0, w_bytes = 0, d_bytes = 0, am_bytes = 0, dm_bytes = 0, set_bytes = 0;
  char* base = nullptr;
  char* a(int s) const { return base + size_t(s) * set_bytes; }
  char* w(int s) const { return a(s) + align_up(a_bytes); }
  char* d(int s) const { return w(s) + align_up(w_bytes); }
  char* am(int s) const { return d(s) + align_up(d_bytes); }
  char* dm(int s) const { return am(s) + align_up(am_bytes); }
};

struct Kernel {
  std::string label;
  bool masked = false;
  size_t row = 0;
  bool active = true;
  cudaGraphExec_t graph = nullptr;
  int iters = 0;
};

struct ShapeContext {
  const MoeShape* shape = nullptr;
  const GroupedOptions* opt = nullptr;
  cudaStream_t stream = nullptr;
  Buffers buf;
  anvil::GroupedGemmDesc contiguous, masked;
  int* offsets = nullptr;  // E + 1, device
  int* counts = nullptr;   // E, device
  int* error_flags = nullptr;
  // e4m3: row-wise scales, one per storage row of A (the larger of the two layouts'), and
  // [E, N] for W; or block scales, A's [ceil(K/128), storage rows] per layout (its stride is
  // the layout's rows) and W's [E, ceil(N/128), ceil(K/128)]. Shared by the input sets.
  const float* scale_a = nullptr;
  const float* scale_a_masked = nullptr;
  const float* scale_b = nullptr;
  // cublas-loop with block scales: the rows cuBLASLt runs for each expert, rounded up to 16
  // (its block-scaled heuristic offers nothing for some row counts, and gave wrong sums for
  // others): the extra rows read the next expert's rows of A and write its rows of D before
  // that expert runs, or the buffers' slack rows after the last. Expert e's A scales as a
  // dense [ceil(K/128), loop_rows[e]] array at loop_scale_first[e].
  std::vector<int64_t> loop_rows, loop_scale_first;
  const float* loop_scale_a = nullptr;
  std::vector<int64_t> offsets_host;
  // cuBLAS
  std::map<int64_t, std::unique_ptr<CublasLtGemm>>* lt = nullptr;
  cublasHandle_t blas = nullptr;
  std::vector<int> g_m, g_n, g_k, g_lda, g_ldb, g_ldc, g_size;
  std::vector<cublasOperation_t> g_ta, g_tb;
  std::vector<float> g_alpha, g_beta;
  std::vector<const void**> g_a, g_b;  // per set, device arrays
  std::vector<void**> g_c;
  DeviceMemory g_pointers;
};

anvil::GroupedGemmArgs grouped_args(const ShapeContext& ctx, bool masked, int s) {
  anvil::GroupedGemmArgs a;
  a.a = masked ? ctx.buf.am(s) : ctx.buf.a(s);
  a.w = ctx.buf.w(s);
  a.d = masked ? ctx.buf.dm(s) : ctx.buf.d(s);
  a.bounds = masked ? static_cast<const void*>(ctx.counts) : static_cast<const void*>(ctx.offsets);
  a.error_flags = ctx.error_flags;
  a.stream = ctx.stream;
  a.scale_a = masked && ctx.scale_a_masked != nullptr ? ctx.scale_a_masked : ctx.scale_a;
  a.scale_b = ctx.scale_b;
  return a;
}

bool launch(const Kernel& k, const ShapeContext& ctx, int s, std::string& err) {
  const MoeShape& m = *ctx.shape;
  const size_t es = verify::dtype_bytes(ctx.opt->dtype);
  const size_t out_es = verify::dtype_bytes(output_dtype(*ctx.opt));
  const bool fp8 = ctx.opt->dtype == anvil::DataType::kE4M3;
  if (k.label == "anvil" || k.label == "anvil-masked") {
    anvil::Diagnostic diag;
    const anvil::Status st =
        anvil::grouped_gemm(k.masked ? ctx.masked : ctx.contiguous, grouped_args(ctx, k.masked, s), &diag);
    if (st != anvil::Status::kSuccess) {
      err = std::string("anvil::grouped_gemm: ") + anvil::to_string(st) + ": " + diag.message;
      return false;
    }
    return true;
  }
  if (k.label == "cublas-loop") {
    for (int64_t e = 0; e < m.experts; ++e) {
      const int64_t rows = m.counts[size_t(e)];
      if (rows == 0) continue;
      const int64_t first = ctx.offsets_host[size_t(e)];
      const bool block = ctx.contiguous.scales == anvil::ScaleMode::kBlock128;
      const int64_t k_blocks = (m.k + 127) / 128;
      const float* sa = !fp8 ? nullptr : block ? ctx.loop_scale_a + ctx.loop_scale_first[size_t(e)] : ctx.scale_a + first;
      const float* sb = !fp8 ? nullptr : ctx.scale_b + e * (block ? (m.n + 127) / 128 * k_blocks : m.n);
      const cublasStatus_t st = ctx.lt->at(block ? ctx.loop_rows[size_t(e)] : rows)->run(
          ctx.buf.a(s) + size_t(first * m.k) * es, ctx.buf.w(s) + size_t(e * m.n * m.k) * es,
          ctx.buf.d(s) + size_t(first * m.n) * out_es, ctx.stream, sa, sb);
      if (st != CUBLAS_STATUS_SUCCESS) {
        err = std::string("cublasLtMatmul: ") + cublas_status_text(st);
        return false;
      }
    }
    return true;
  }
  const cudaDataType_t t = ctx.opt->dtype == anvil::DataType::kBF16 ? CUDA_R_16BF : CUDA_R_16F;
  const int groups = static_cast<int>(ctx.g_m.size());
  const cublasStatus_t st = cublasGemmGroupedBatchedEx(
      ctx.blas, ctx.g_ta.data(), ctx.g_tb.data(), ctx.g_m.data(), ctx.g_n.data(), ctx.g_k.data(), ctx.g_alpha.data(),
      ctx.g_a[size_t(s)], t, ctx.g_lda.data(), ctx.g_b[size_t(s)], t, ctx.g_ldb.data(), ctx.g_beta.data(),
      ctx.g_c[size_t(s)], t, ctx.g_ldc.data(), groups, ctx.g_size.data(), CUBLAS_COMPUTE_32F);
  if (st != CUBLAS_STATUS_SUCCESS) {
    err = std::string("cublasGemmGroupedBatchedEx: ") + cublas_status_text(st);
    return false;
  }
  return true;
}

void sync_or_die(const ShapeContext& ctx, const std::string& who) {
  const cudaError_t e = cudaStreamSynchronize(ctx.stream);
  if (e != cudaSuccess) {
    fatal("%s on %s failed while running: %s (%s)", who.c_str(), ctx.shape->name.c_str(), cudaGetErrorName(e),
          cudaGetErrorString(e));
  }
}

// Poisons set 0's D, runs `run`, checks every expert's rows; keeps the worse result.
template <class Run>
bool check(GroupedRow& row, const Kernel& k, const ShapeContext& ctx, const float* ref, Run&& run) {
  const anvil::GroupedGemmDesc& desc = k.masked ? ctx.masked : ctx.contiguous;
  void* d = k.masked ? ctx.buf.dm(0) : ctx.buf.d(0);
  const size_t d_bytes = k.masked ? ctx.buf.dm_bytes : ctx.buf.d_bytes;
  BENCH_CUDA(verify::poison(d, desc.output, int64_t(d_bytes / verify::dtype_bytes(desc.output)), ctx.stream));
  if (!run()) return false;
  sync_or_die(ctx, k.label);
  const std::vector<int64_t> bounds = k.masked ? ctx.shape->counts : ctx.offsets_host;
  const verify::GroupedComparison c = verify::compare_grouped(desc, d, ref, bounds, ctx.stream);
  sync_or_die(ctx, "verify::compare_grouped after " + k.label);
  const bool first = !row.verified.has_value();
  if (first || !c.passed || !(c.worst.rel_frobenius <= row.rel_error)) row.rel_error = c.worst.rel_frobenius;
  row.verified = c.passed && (first || *row.verified);
  if (!c.passed) std::fprintf(stderr, "    %-16s WRONG RESULT: %s\n", k.label.c_str(), verify::describe(c).c_str());
  return true;
}

void write_json(const GroupedOptions& o, const std::vector<MoeShape>& shapes,
                const std::vector<std::vector<GroupedRow>>& rows, const cudaDeviceProp& prop,
                const std::string& aborted) {
  if (o.json_path.empty()) return;
  json::Writer w;
  w.begin_object();
  w.key("info");
  w.begin_object();
  w.key("gpu"), w.value(prop.name);
  w.key("sm_count"), w.value(prop.multiProcessorCount);
  w.key("commit"), w.value(commit_id());
  w.key("date"), w.value(utc_now_iso8601());
  w.key("mode"), w.value("grouped");
  w.key("suite"), w.value(o.suite_path);
  w.key("dtype"), w.value(o.dtype == anvil::DataType::kBF16 ? "bf16" : o.dtype == anvil::DataType::kF16 ? "fp16" : "e4m3");
  w.key("out_dtype"), w.value(output_dtype(o) == anvil::DataType::kF16 ? "fp16" : "bf16");
  w.key("scales"), w.value(anvil::to_string(o.dtype == anvil::DataType::kE4M3 ? o.fp8_scales : anvil::ScaleMode::kNone));
  w.key("method"), w.value(kGroupedMethod);
  w.key("repeats"), w.value(o.repeats);
  w.key("min_replay_ms"), w.value(o.min_replay_ms);
  w.key("verify"), w.value(o.verify);
  if (!aborted.empty()) w.key("aborted"), w.value(aborted);
  w.end_object();
  w.key("rows");
  w.begin_array();
  for (size_t i = 0; i < rows.size(); ++i) {
    const MoeShape& m = shapes[i];
    int64_t total = 0, nonempty = 0;
    for (int64_t c : m.counts) total += c, nonempty += c > 0;
    for (const GroupedRow& r : rows[i]) {
      w.begin_object();
      w.key("kernel"), w.value(r.kernel);
      w.key("name"), w.value(m.name);
      w.key("model"), w.value(m.model);
      w.key("gemm"), w.value(m.gemm);
      w.key("experts"), w.value(m.experts);
      w.key("nonempty_experts"), w.value(nonempty);
      w.key("N"), w.value(m.n);
      w.key("K"), w.value(m.k);
      w.key("tokens"), w.value(m.tokens);
      w.key("top_k"), w.value(m.top_k);
      w.key("skew"), w.value(m.skew);
      w.key("rows"), w.value(total);
      w.key("status"), w.value(r.status);
      if (!r.message.empty()) w.key("message"), w.value(r.message);
      if (!r.dispatched.empty()) w.key("dispatched"), w.value(r.dispatched);
      w.key("method"), w.value(r.method);
      w.key("iters"), w.value(r.iters);
      w.key("input_sets"), w.value(r.input_sets);
      w.key("samples_us"), w.number_array(r.samples_us);
      w.key("us_median"), w.value(r.us_median);
      w.key("us_min"), w.value(r.us_min);
      w.key("us_max"), w.value(r.us_max);
      w.key("tflops"), w.value(r.tflops);
      w.key("gbps"), w.value(r.gbps);
      w.key("speedup_vs_cublas_loop"), w.value(r.speedup_vs_cublas_loop);
      w.key("speedup_vs_cublas_grouped"), w.value(r.speedup_vs_cublas_grouped);
      if (r.verified) w.key("verified"), w.value(*r.verified);
      else w.key("verified"), w.null();
      w.key("rel_error"), w.value(r.rel_error);
      w.end_object();
    }
  }
  w.end_array();
  w.end_object();
  FILE* f = std::fopen(o.json_path.c_str(), "w");
  if (f == nullptr || std::fputs(w.str().c_str(), f) < 0 || std::fclose(f) != 0) {
    std::fprintf(stderr, "anvil-bench --grouped: cannot write %s\n", o.json_path.c_str());
  }
}

void run_shape(const MoeShape& m, const GroupedOptions& o, cudaStream_t stream, cublasHandle_t blas,
               std::vector<GroupedRow>& rows, size_t l2) {
  ShapeContext ctx;
  ctx.shape = &m;
  ctx.opt = &o;
  ctx.stream = stream;
  ctx.blas = blas;
  const size_t es = verify::dtype_bytes(o.dtype);
  const size_t out_es = verify::dtype_bytes(output_dtype(o));
  const bool fp8 = o.dtype == anvil::DataType::kE4M3;
  int64_t total = 0, max_count = 0, nonempty = 0;
  ctx.offsets_host.push_back(0);
  for (int64_t c : m.counts) {
    total += c;
    max_count = std::max(max_count, c);
    nonempty += c > 0;
    ctx.offsets_host.push_back(total);
  }
  const int64_t max_rows = std::max<int64_t>(64, (max_count + 63) / 64 * 64);
  const bool want_masked = std::find(o.kernels.begin(), o.kernels.end(), "anvil-masked") != o.kernels.end() &&
                           m.tokens <= kMaskedMaxTokens;

  ctx.contiguous.layout = anvil::GroupedLayout::kContiguous;
  ctx.contiguous.experts = m.experts;
  ctx.contiguous.n = m.n;
  ctx.contiguous.k = m.k;
  ctx.contiguous.rows = total;
  ctx.contiguous.input = o.dtype;
  ctx.contiguous.output = output_dtype(o);
  ctx.contiguous.scales = fp8 ? o.fp8_scales : anvil::ScaleMode::kNone;
  ctx.masked = ctx.contiguous;
  ctx.masked.layout = anvil::GroupedLayout::kMasked;
  ctx.masked.rows = max_rows;
  // The masked layout plans on its real rows per expert, as a decode step knows them.
  ctx.masked.expected_rows_per_expert = std::max<int64_t>(1, (total + nonempty - 1) / std::max<int64_t>(nonempty, 1));

  std::vector<Kernel> kernels;
  for (const std::string& label : o.kernels) {
    GroupedRow r;
    r.kernel = label;
    Kernel k;
    k.label = label;
    k.masked = label == "anvil-masked";
    k.row = rows.size();
    if (k.masked && !want_masked) {
      r.status = "unsupported";
      r.message = "the masked layout is measured at <= 512 tokens (decode)";
      k.active = false;
    }
    if (fp8 && label == "cublas-grouped") {
      r.status = "unsupported";
      r.message = "cublasGemmGroupedBatchedEx takes no FP8 inputs";
      k.active = false;
    }
    if (label == "anvil") r.dispatched = anvil::grouped_dispatch_name(ctx.contiguous) ? anvil::grouped_dispatch_name(ctx.contiguous) : "";
    if (k.masked) r.dispatched = anvil::grouped_dispatch_name(ctx.masked) ? anvil::grouped_dispatch_name(ctx.masked) : "";
    rows.push_back(r);
    kernels.push_back(k);
  }

  Buffers& b = ctx.buf;
  // Block scales: slack rows after A and D for the cuBLASLt loop's rounded-up last expert.
  const bool block = fp8 && o.fp8_scales == anvil::ScaleMode::kBlock128;
  const int64_t slack_rows = block ? 16 : 0;
  b.a_bytes = size_t((total + slack_rows) * m.k) * es;
  b.w_bytes = size_t(m.experts * m.n * m.k) * es;
  b.d_bytes = size_t((total + slack_rows) * m.n) * out_es;
  b.am_bytes = want_masked ? size_t(m.experts * max_rows * m.k) * es : 0;
  b.dm_bytes = want_masked ? size_t(m.experts * max_rows * m.n) * out_es : 0;
  b.set_bytes = align_up(b.a_bytes) + align_up(b.w_bytes) + align_up(b.d_bytes) + align_up(b.am_bytes) +
                align_up(b.dm_bytes);
  const size_t ref_bytes = size_t(std::max(total, want_masked ? m.experts * max_rows : 0) * m.n) * sizeof(float);
  int sets = rotating_set_count(b.set_bytes, l2, o.max_input_sets);
  const size_t cap = size_t(o.mem_cap_gb * kGiB);
  while (sets > 1 && size_t(sets) * b.set_bytes + ref_bytes > cap) --sets;
  b.sets = sets;
  DeviceMemory memory, ref, routing, scales;
  const int64_t scale_rows = std::max<int64_t>(1, std::max(total, want_masked ? m.experts * max_rows : 0));
  // Scale floats: A's (contiguous, masked, the loop's gathered copy) then W's.
  const int64_t k_blocks = (m.k + 127) / 128;
  const int64_t a_floats = block ? k_blocks * std::max<int64_t>(total, 1) : scale_rows;
  const int64_t am_floats = block && want_masked ? k_blocks * m.experts * max_rows : 0;
  const int64_t loop_floats = block ? k_blocks * (total + 16 * m.experts) : 0;
  const int64_t b_floats = m.experts * (block ? (m.n + 127) / 128 * k_blocks : m.n);
  if (!memory.allocate(size_t(sets) * b.set_bytes) || !ref.allocate(ref_bytes) ||
      !routing.allocate(size_t(2 * m.experts + 2) * sizeof(int) + 256) ||
      (fp8 && !scales.allocate(size_t(a_floats + am_floats + loop_floats + b_floats) * sizeof(float)))) {
    for (GroupedRow& r : rows) r.status = "error", r.message = "out of device memory";
    return;
  }
  b.base = memory.get();
  ctx.offsets = reinterpret_cast<int*>(routing.get());
  ctx.counts = ctx.offsets + m.experts + 1;
  ctx.error_flags = ctx.counts + m.experts;
  std::vector<int> host_offsets(ctx.offsets_host.begin(), ctx.offsets_host.end());
  std::vector<int> host_counts(m.counts.begin(), m.counts.end());
  BENCH_CUDA(cudaMemcpy(ctx.offsets, host_offsets.data(), host_offsets.size() * sizeof(int), cudaMemcpyHostToDevice));
  BENCH_CUDA(cudaMemcpy(ctx.counts, host_counts.data(), host_counts.size() * sizeof(int), cudaMemcpyHostToDevice));
  BENCH_CUDA(cudaMemset(ctx.error_flags, 0, sizeof(int)));
  for (int s = 0; s < sets; ++s) {
    const uint64_t seed = o.seed + uint64_t(s) * 4;
    BENCH_CUDA(verify::fill_random(b.a(s), o.dtype, total * m.k, seed, 1.0f, stream));
    BENCH_CUDA(verify::fill_random(b.w(s), o.dtype, m.experts * m.n * m.k, seed + 1, 1.0f, stream));
    if (want_masked) BENCH_CUDA(verify::fill_random(b.am(s), o.dtype, m.experts * max_rows * m.k, seed + 2, 1.0f, stream));
  }
  if (fp8) {
    float* sa = reinterpret_cast<float*>(scales.get());
    BENCH_CUDA(verify::fill_scales(sa, a_floats, o.seed + 101, stream));
    if (am_floats > 0) BENCH_CUDA(verify::fill_scales(sa + a_floats, am_floats, o.seed + 103, stream));
    BENCH_CUDA(verify::fill_scales(sa + a_floats + am_floats + loop_floats, b_floats, o.seed + 102, stream));
    ctx.scale_a = sa;
    ctx.scale_a_masked = am_floats > 0 ? sa + a_floats : nullptr;
    ctx.scale_b = sa + a_floats + am_floats + loop_floats;
    ctx.loop_scale_a = sa + a_floats + am_floats;
  }
  sync_or_die(ctx, "verify::fill_random");

  // cuBLAS set-up: a cuBLASLt plan per distinct row count; grouped pointer arrays per set.
  std::map<int64_t, std::unique_ptr<CublasLtGemm>> lt;
  ctx.lt = &lt;
  for (Kernel& k : kernels) {
    if (!k.active) continue;
    if (k.label == "cublas-loop") {
      std::string why;
      const auto plan_rows = [&](int64_t c) {
        if (lt.count(c) != 0) return true;
        auto g = std::make_unique<CublasLtGemm>();
        if (!g->prepare(c, m.n, m.k, o.dtype, output_dtype(o), ctx.contiguous.scales, why)) return false;
        lt.emplace(c, std::move(g));
        return true;
      };
      for (int64_t c : m.counts) {
        const int64_t run_rows = block ? (c + 15) / 16 * 16 : c;
        const bool ok = c == 0 || plan_rows(run_rows);
        if (!ok) {
          rows[k.row].status = "unsupported", rows[k.row].message = why, k.active = false;
          break;
        }
        ctx.loop_rows.push_back(run_rows);
      }
      if (k.active && block) {
        // Expert e's [k_blocks, loop_rows[e]] block of A's scales, where a dense GEMM reads
        // it (the rounded-up rows' scales stay the fill's: their outputs are overwritten).
        float* loop = const_cast<float*>(ctx.loop_scale_a);
        BENCH_CUDA(verify::fill_scales(loop, loop_floats, o.seed + 104, stream));
        int64_t at = 0;
        for (int64_t e = 0; e < m.experts; ++e) {
          ctx.loop_scale_first.push_back(at);
          const int64_t rows_e = m.counts[size_t(e)];
          if (rows_e > 0) {
            BENCH_CUDA(cudaMemcpy2DAsync(loop + at, size_t(ctx.loop_rows[size_t(e)]) * sizeof(float),
                                         ctx.scale_a + ctx.offsets_host[size_t(e)], size_t(total) * sizeof(float),
                                         size_t(rows_e) * sizeof(float), size_t(k_blocks), cudaMemcpyDeviceToDevice,
                                         stream));
          }
          at += k_blocks * ctx.loop_rows[size_t(e)];
        }
        sync_or_die(ctx, "the cuBLASLt loop's scales");
      }
    }
  }
  const bool want_grouped_blas = std::any_of(kernels.begin(), kernels.end(), [](const Kernel& k) {
    return k.active && k.label == "cublas-grouped";
  });
  if (want_grouped_blas) {
    const size_t groups = size_t(nonempty);
    if (!ctx.g_pointers.allocate(size_t(sets) * 3 * groups * sizeof(void*))) fatal("out of device memory");
    std::vector<const void*> host(size_t(sets) * 3 * groups);
    for (int s = 0; s < sets; ++s) {
      size_t g = 0;
      for (int64_t e = 0; e < m.experts; ++e) {
        const int64_t c = m.counts[size_t(e)];
        if (c == 0) continue;
        const int64_t first = ctx.offsets_host[size_t(e)];
        host[(size_t(s) * 3 + 0) * groups + g] = b.w(s) + size_t(e * m.n * m.k) * es;  // cuBLAS A: W_e, op T
        host[(size_t(s) * 3 + 1) * groups + g] = b.a(s) + size_t(first * m.k) * es;     // cuBLAS B: A_e, op N
        host[(size_t(s) * 3 + 2) * groups + g] = b.d(s) + size_t(first * m.n) * es;     // C: D_e (col-major N x c)
        if (s == 0) {
          ctx.g_m.push_back(int(m.n)), ctx.g_n.push_back(int(c)), ctx.g_k.push_back(int(m.k));
          ctx.g_lda.push_back(int(m.k)), ctx.g_ldb.push_back(int(m.k)), ctx.g_ldc.push_back(int(m.n));
          ctx.g_ta.push_back(CUBLAS_OP_T), ctx.g_tb.push_back(CUBLAS_OP_N);
          ctx.g_alpha.push_back(1.0f), ctx.g_beta.push_back(0.0f), ctx.g_size.push_back(1);
        }
        ++g;
      }
    }
    BENCH_CUDA(cudaMemcpy(ctx.g_pointers.get(), host.data(), host.size() * sizeof(void*), cudaMemcpyHostToDevice));
    auto** dev = reinterpret_cast<void**>(ctx.g_pointers.get());
    for (int s = 0; s < sets; ++s) {
      ctx.g_a.push_back(const_cast<const void**>(dev + (size_t(s) * 3 + 0) * groups));
      ctx.g_b.push_back(const_cast<const void**>(dev + (size_t(s) * 3 + 1) * groups));
      ctx.g_c.push_back(dev + (size_t(s) * 3 + 2) * groups);
    }
  }

  // References on set 0: contiguous and (if measured) masked.
  DeviceMemory ref_masked;
  if (o.verify) {
    anvil::GroupedGemmArgs a = grouped_args(ctx, false, 0);
    BENCH_CUDA(verify::reference_grouped(ctx.contiguous, a, ctx.offsets_host, reinterpret_cast<float*>(ref.get()), stream));
    if (want_masked) {
      if (!ref_masked.allocate(size_t(m.experts * max_rows * m.n) * sizeof(float))) fatal("out of device memory");
      a = grouped_args(ctx, true, 0);
      BENCH_CUDA(verify::reference_grouped(ctx.masked, a, m.counts, reinterpret_cast<float*>(ref_masked.get()), stream));
    }
    sync_or_die(ctx, "verify::reference_grouped");
  }

  const double flops = 2.0 * double(total) * double(m.n) * double(m.k);
  const double bytes =
      double(es) * (double(total) * m.k + double(nonempty) * m.n * m.k) + double(out_es) * double(total) * m.n;
  for (Kernel& k : kernels) {
    if (!k.active) continue;
    GroupedRow& row = rows[k.row];
    row.input_sets = sets;
    const float* r = reinterpret_cast<const float*>(k.masked ? ref_masked.get() : ref.get());
    std::string err;
    auto fail_row = [&](const std::string& msg) {
      row.status = "error", row.message = msg, k.active = false;
      std::fprintf(stderr, "    %-16s error: %s\n", k.label.c_str(), msg.c_str());
    };
    if (o.verify && !check(row, k, ctx, r, [&] { return launch(k, ctx, 0, err); })) {
      fail_row(err);
      continue;
    }
    // Warm-up doubling as the estimate.
    int n = sets;
    double ms = 0;
    cudaEvent_t t0, t1;
    BENCH_CUDA(cudaEventCreate(&t0));
    BENCH_CUDA(cudaEventCreate(&t1));
    bool ok = true;
    for (int round = 0; round < 12; ++round) {
      BENCH_CUDA(cudaEventRecord(t0, stream));
      for (int i = 0; i < n && ok; ++i) ok = launch(k, ctx, i % sets, err);
      BENCH_CUDA(cudaEventRecord(t1, stream));
      sync_or_die(ctx, k.label);
      float f = 0;
      BENCH_CUDA(cudaEventElapsedTime(&f, t0, t1));
      ms = f;
      if (!ok || ms >= 5.0 || n >= o.max_iters) break;
      n = std::min(o.max_iters, n * 2);
    }
    (void)cudaEventDestroy(t0);
    (void)cudaEventDestroy(t1);
    if (!ok) {
      fail_row(err);
      continue;
    }
    k.iters = choose_iters(ms * 1000.0 / n, o.min_replay_ms, o.max_iters, sets);
    row.iters = k.iters;
    std::string why;
    if (capture_graph(stream, k.iters, [&](int i, std::string& e) { return launch(k, ctx, i % sets, e); }, &k.graph,
                      why)) {
      row.method = "graph";
      if (o.verify) {
        check(row, k, ctx, r, [&] {
          BENCH_CUDA(cudaGraphLaunch(k.graph, stream));
          return true;
        });
      }
    } else {
      row.method = "events-batch (graph capture failed: " + why + ")";
    }
  }

  // Interleaved timing.
  std::vector<Kernel*> active;
  for (Kernel& k : kernels)
    if (k.active) active.push_back(&k);
  std::vector<cudaEvent_t> events(active.size() + 1);
  for (auto& e : events) BENCH_CUDA(cudaEventCreate(&e));
  bool spin_ok = true;
  for (int rep = 0; rep < o.repeats && !active.empty(); ++rep) {
    std::vector<Kernel*> order;
    for (size_t j = 0; j < active.size(); ++j) order.push_back(active[(j + size_t(rep)) % active.size()]);
    if (spin_ok && launch_spin(stream, kSpinUs) != cudaSuccess) {
      (void)cudaGetLastError();
      spin_ok = false;
    }
    BENCH_CUDA(cudaEventRecord(events[0], stream));
    for (size_t j = 0; j < order.size(); ++j) {
      if (order[j]->graph != nullptr) {
        BENCH_CUDA(cudaGraphLaunch(order[j]->graph, stream));
      } else {
        std::string err;
        for (int i = 0; i < order[j]->iters; ++i) {
          if (!launch(*order[j], ctx, i % sets, err)) fatal("%s: %s", order[j]->label.c_str(), err.c_str());
        }
      }
      BENCH_CUDA(cudaEventRecord(events[j + 1], stream));
    }
    sync_or_die(ctx, "timed replays");
    for (size_t j = 0; j < order.size(); ++j) {
      float f = 0;
      BENCH_CUDA(cudaEventElapsedTime(&f, events[j], events[j + 1]));
      rows[order[j]->row].samples_us.push_back(double(f) * 1000.0 / order[j]->iters);
    }
  }
  for (auto& e : events) (void)cudaEventDestroy(e);
  for (Kernel& k : kernels) {
    if (k.graph != nullptr) (void)cudaGraphExecDestroy(k.graph);
    GroupedRow& row = rows[k.row];
    if (!k.active || row.samples_us.empty()) continue;
    row.us_median = median_of(row.samples_us);
    row.us_min = *std::min_element(row.samples_us.begin(), row.samples_us.end());
    row.us_max = *std::max_element(row.samples_us.begin(), row.samples_us.end());
    row.tflops = flops / row.us_median / 1e6;
    row.gbps = bytes / row.us_median / 1e3;
  }
  int flags = 0;
  BENCH_CUDA(cudaMemcpy(&flags, ctx.error_flags, sizeof(int), cudaMemcpyDeviceToHost));
  if (flags != 0) fatal("%s: the grouped kernel reported invalid routing (error word %d)", m.name.c_str(), flags);
  double loop_us = NAN, grouped_us = NAN;
  for (const GroupedRow& r : rows) {
    if (r.kernel == "cublas-loop" && r.status == "ok") loop_us = r.us_median;
    if (r.kernel == "cublas-grouped" && r.status == "ok") grouped_us = r.us_median;
  }
  for (GroupedRow& r : rows) {
    if (r.status != "ok") continue;
    r.speedup_vs_cublas_loop = loop_us / r.us_median;
    r.speedup_vs_cublas_grouped = grouped_us / r.us_median;
    std::fprintf(stderr, "    %-16s %10.2f us %7.1f TFLOP/s %6.0f GB/s  %.3fx loop  %.3fx grouped%s\n",
                 r.kernel.c_str(), r.us_median, r.tflops, r.gbps, r.speedup_vs_cublas_loop,
                 r.speedup_vs_cublas_grouped, r.verified && !*r.verified ? "  WRONG RESULT" : "");
  }
}

}  // namespace

int run_grouped(int argc, char** argv) {
  const GroupedOptions o = parse_grouped_options(argc, argv);
  const std::vector<MoeShape> shapes = load_moe_suite(o);
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::fprintf(stderr, "anvil-bench --grouped: no usable CUDA GPU\n");
    return 2;
  }
  BENCH_CUDA(cudaSetDevice(o.device));
  cudaDeviceProp prop{};
  BENCH_CUDA(cudaGetDeviceProperties(&prop, o.device));
  cudaStream_t stream = nullptr;
  BENCH_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cublasHandle_t blas = nullptr;
  if (cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS) fatal("cublasCreate failed");
  if (cublasSetStream(blas, stream) != CUBLAS_STATUS_SUCCESS) fatal("cublasSetStream failed");
  // A workspace of its own keeps cuBLAS from allocating during graph capture.
  DeviceMemory blas_workspace;
  if (!blas_workspace.allocate(size_t(32) << 20) ||
      cublasSetWorkspace(blas, blas_workspace.get(), size_t(32) << 20) != CUBLAS_STATUS_SUCCESS) {
    fatal("cublasSetWorkspace failed");
  }
  std::vector<std::vector<GroupedRow>> rows;
  set_fatal_hook([&](const std::string& why) { write_json(o, shapes, rows, prop, why); });
  std::fprintf(stderr, "anvil-bench --grouped: %s, %d SMs, %zu shapes\n", prop.name, prop.multiProcessorCount,
               shapes.size());
  for (size_t i = 0; i < shapes.size(); ++i) {
    std::fprintf(stderr, "[%zu/%zu] %s: E=%lld N=%lld K=%lld\n", i + 1, shapes.size(), shapes[i].name.c_str(),
                 static_cast<long long>(shapes[i].experts), static_cast<long long>(shapes[i].n),
                 static_cast<long long>(shapes[i].k));
    rows.emplace_back();
    run_shape(shapes[i], o, stream, blas, rows.back(), size_t(prop.l2CacheSize));
  }
  set_fatal_hook(nullptr);
  write_json(o, shapes, rows, prop, "");
  cublasDestroy(blas);
  (void)cudaStreamDestroy(stream);
  return 0;
}

}  // namespace bench
