// anvil-bench: times anvil's kernels against cuBLASLt on nn.Linear problems.
//
// The numbers are meant to be quoted, so the protocol errs on the side of honesty:
//  - inputs are random (never zeros, which run measurably faster on tensor cores) and
//    rotate through enough sets that their total exceeds 3x L2, so no launch finds its
//    operands already cached by the previous one;
//  - launches are captured back to back in a CUDA graph, so launch overhead is not
//    counted against short kernels, and a replay lasts long enough (>= 20 ms) for event
//    resolution not to matter;
//  - the kernels compared on one problem are timed in turn within each repeat, so clock
//    changes under the 700 W power cap hit them all alike and their ratios are fair;
//  - every kernel, cuBLAS included, is checked against an independent reference, both on
//    a direct launch and on the captured graph that is actually timed.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "anvil/gemm.h"
#include "anvil/lab.h"
#include "anvil/swiglu.h"
#include "bench.h"
#include "check.h"
#include "cublaslt_gemm.h"
#include "plan/launch.h"
#include "spin.h"
#include "system_info.h"
#include "timing.h"
#include "verify/verify.h"

namespace bench {
namespace {

constexpr size_t kAlign = 256;  // what TMA and cuBLASLt's fastest paths want
constexpr double kWarmupTargetMs = 5.0;
// Long enough for the host to queue a round of graph replays behind it.
constexpr double kSpinUs = 1000.0;
constexpr int kMaxWarmupRounds = 12;
constexpr float kFillScale = 1.0f;
// The normal fill's standard deviation: the uniform fill's variance (1/3), so that the
// verification tolerances (derived for that variance) hold for both.
constexpr float kNormalStddev = 0.57735027f;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
// Left free beyond the input sets for graphs, cuBLAS internals and the CUDA context.
constexpr size_t kHeadroomBytes = size_t(1) << 30;

const char* kMethod =
    "Per (shape, kernel): random inputs (never zeros) in R rotating input sets (A, W, D), R "
    "chosen so that R x (bytes of A + W + D) > 3x L2 (2 <= R <= max-input-sets, memory "
    "permitting). Warm-up launches time an estimate, then iters launches (a multiple of R, "
    "enough for one replay to last >= min-replay-ms, at most max-iters) cycling through the "
    "sets are captured back to back in one CUDA graph; the graph is replayed once as warm-up "
    "(and verified), then replayed `repeats` times, each replay timed with CUDA events; "
    "per-call time = replay time / iters; median, min and max of the repeats are reported. "
    "Kernels on one shape are interleaved: each repeat queues one replay of every kernel back "
    "to back (behind a 1 ms GPU spin, so the first replay does not wait on the host), events "
    "between them, the starting kernel rotating, so ratios come from the same clocks. Every "
    "kernel's output is checked against verify::reference_gemm (poisoned output first) after a "
    "direct launch and after the warm-up replay of its graph. cuBLAS is cuBLASLt in the "
    "same process on the same buffers (fp32 compute, 32 MiB workspace, heuristic's first "
    "algorithm). Where a kernel cannot be captured, a batch of iters launches between events is "
    "timed instead (row method says so).";

// The method text for the JSON: kMethod, then what --epilogue changes. With no epilogue
// it reads as it did before the option existed.
std::string method_text(Epilogue e) {
  std::string m = kMethod;
  if (e == Epilogue::kNone) return m + " GB/s counts A and W read once and D written once.";
  m += std::string(" Epilogue '") + epilogue_name(e) +
       "': the anvil rows (the dispatcher's pick and named kernels) run the GEMM with this "
       "epilogue fused; the cublas row (and an anvil-plain row) run the plain GEMM of the same "
       "shape with no epilogue, so speedup_vs_cublas of a fused row is plain cuBLAS time / "
       "fused anvil time and includes the epilogue's cost. Each row is verified against "
       "verify::reference_gemm with its own description (fused or plain).";
  switch (e) {
    case Epilogue::kBias:
    case Epilogue::kBiasGelu:
    case Epilogue::kBiasRelu:
      m += " Bias: per column (length N, nn.Linear), fp32, random, one buffer per shape shared "
           "by all input sets" +
           std::string(e == Epilogue::kBiasGelu ? "; GELU is the tanh form." : ".");
      break;
    case Epilogue::kSwiGLU:
      m += " SwiGLU: N is the GEMM width (gate and up columns interleaved in blocks of 64, "
           "anvil/swiglu.h; a random W stands in for the fused weight) and anvil's D is "
           "M x N/2 (ld N/2), while the plain rows write M x N; each set's D slot is sized "
           "for the larger. Shapes whose N is not a multiple of 128 are unsupported.";
      break;
    case Epilogue::kResidual:
      m += " Residual: beta = 1 and C a random input of D's shape and dtype, distinct from D, "
           "one per input set (it rotates with A, W and D and counts towards the set size).";
      break;
    default:
      break;
  }
  m += " FLOPs are 2*M*N*K for every row (the GEMM's; epilogue arithmetic is not counted). "
       "GB/s counts each row's own minimum traffic: A and W read once, its D written once "
       "(M x N/2 for a fused SwiGLU row), plus C read once (residual) and the N fp32 bias "
       "values read once (bias modes).";
  return m;
}

std::string status_text(anvil::Status st, const anvil::Diagnostic& diag) {
  std::string s = anvil::to_string(st);
  if (diag.message[0]) s += std::string(": ") + diag.message;
  return s;
}

size_t align_up(size_t x) { return (x + kAlign - 1) / kAlign * kAlign; }

// Device memory owned for one problem; freed on scope exit so a skipped or failed problem
// leaves nothing behind for the next.
class DeviceAlloc {
 public:
  DeviceAlloc() = default;
  ~DeviceAlloc() {
    if (ptr_) (void)cudaFree(ptr_);
  }
  DeviceAlloc(const DeviceAlloc&) = delete;
  DeviceAlloc& operator=(const DeviceAlloc&) = delete;
  // False only for an out-of-memory refusal, which the caller reports per row; any other
  // failure is fatal.
  bool allocate(size_t bytes) {
    cudaError_t e = cudaMalloc(&ptr_, bytes);
    if (e == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();  // clear it so later calls do not report it
      ptr_ = nullptr;
      return false;
    }
    BENCH_CUDA(e);
    return true;
  }
  char* get() const { return static_cast<char*>(ptr_); }

 private:
  void* ptr_ = nullptr;
};

struct Device {
  int ordinal = 0;
  cudaDeviceProp prop{};
  std::string pci_bus_id;
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  std::unique_ptr<CublasLtGemm> cublas;
  bool spin_ok = true;
};

// Where one problem's rotating input sets live: A, W, C, D per set, C empty (c_bytes 0)
// unless a fused row reads it (--epilogue residual).
struct InputSets {
  int count = 0;
  size_t a_bytes = 0, w_bytes = 0, c_bytes = 0, d_bytes = 0, set_bytes = 0;
  char* base = nullptr;
  void* a(int s) const { return base + size_t(s) * set_bytes; }
  void* w(int s) const { return base + size_t(s) * set_bytes + align_up(a_bytes); }
  void* c(int s) const {
    return base + size_t(s) * set_bytes + align_up(a_bytes) + align_up(w_bytes);
  }
  void* d(int s) const {
    return base + size_t(s) * set_bytes + align_up(a_bytes) + align_up(w_bytes) +
           align_up(c_bytes);
  }
};

struct Candidate {
  const KernelSpec* spec = nullptr;
  size_t row = 0;  // index into Results::rows (the vector may grow meanwhile)
  anvil::GemmDesc desc;
  // Runs the plain GEMM while --epilogue asks for a fused one (cublas, anvil-plain), so it
  // is checked against the plain reference. Always false without an epilogue.
  bool plain = false;
  bool active = false;
  cudaGraphExec_t graph = nullptr;
  int iters = 0;
};

struct ProblemContext {
  const Problem* problem = nullptr;
  Device* dev = nullptr;
  InputSets sets;
  void* bias = nullptr;  // one per problem, shared by all sets; null without a bias epilogue
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  // FP8 scales, one set per problem shared by all input sets (null without them).
  const float* scale_a = nullptr;
  const float* scale_b = nullptr;
};

// The arguments of an anvil launch of c on input set s; C and bias only where c's
// description reads them.
anvil::GemmArgs anvil_args(const Candidate& c, const ProblemContext& ctx, int s) {
  anvil::GemmArgs args;
  args.a = ctx.sets.a(s);
  args.b = ctx.sets.w(s);
  if (c.desc.beta != 0.0f) args.c = ctx.sets.c(s);
  args.d = ctx.sets.d(s);
  if (c.desc.epilogue.bias != anvil::BiasMode::kNone) args.bias = ctx.bias;
  args.workspace = ctx.workspace;
  args.workspace_bytes = ctx.workspace_bytes;
  args.stream = ctx.dev->stream;
  args.scale_a = ctx.scale_a;
  args.scale_b = ctx.scale_b;
  return args;
}

// One launch of candidate c on input set s. Returns false with a reason instead of
// exiting, because a failure inside graph capture is expected for some kernels.
bool launch(const Candidate& c, const ProblemContext& ctx, int s, std::string& err) {
  if (c.spec->kind == KernelSpec::Kind::kCublas) {
    cublasStatus_t st =
        ctx.dev->cublas->run(ctx.sets.a(s), ctx.sets.w(s), ctx.sets.d(s), ctx.dev->stream, ctx.scale_a, ctx.scale_b);
    if (st != CUBLAS_STATUS_SUCCESS) {
      err = std::string("cublasLtMatmul: ") + cublas_status_text(st);
      return false;
    }
    return true;
  }
  const anvil::GemmArgs args = anvil_args(c, ctx, s);
  anvil::Diagnostic diag;
  anvil::Status st = c.spec->planned ? anvil::detail::gemm(c.desc, args, &c.spec->overrides, &diag)
                                     : anvil::gemm(c.desc, args, &diag);
  if (st != anvil::Status::kSuccess) {
    err = "anvil::gemm: " + status_text(st, diag);
    return false;
  }
  return true;
}

// Waits for the stream; a failure here is a kernel fault (bad address, trap), after which
// the CUDA context is unusable, so it ends the run naming the culprit.
void sync_or_die(const ProblemContext& ctx, const std::string& who) {
  cudaError_t e = cudaStreamSynchronize(ctx.dev->stream);
  if (e != cudaSuccess)
    fatal("%s on %s failed while running: %s (%s)", who.c_str(), ctx.problem->name.c_str(),
          cudaGetErrorName(e), cudaGetErrorString(e));
  e = cudaGetLastError();
  if (e != cudaSuccess)
    fatal("%s on %s left a CUDA error: %s (%s)", who.c_str(), ctx.problem->name.c_str(),
          cudaGetErrorName(e), cudaGetErrorString(e));
}

float elapsed_ms(const Device& dev) {
  BENCH_CUDA(cudaEventSynchronize(dev.stop));
  float ms = 0;
  BENCH_CUDA(cudaEventElapsedTime(&ms, dev.start, dev.stop));
  return ms;
}

// Times n direct launches cycling through the sets; NaN (with err) if a launch failed.
double time_batch(const Candidate& c, const ProblemContext& ctx, int n, std::string& err) {
  const Device& dev = *ctx.dev;
  BENCH_CUDA(cudaEventRecord(dev.start, dev.stream));
  for (int i = 0; i < n; ++i) {
    if (!launch(c, ctx, i % ctx.sets.count, err)) {
      sync_or_die(ctx, c.spec->label);
      return kNaN;
    }
  }
  BENCH_CUDA(cudaEventRecord(dev.stop, dev.stream));
  float ms = elapsed_ms(dev);
  sync_or_die(ctx, c.spec->label);
  return ms;
}

int choose_iters(double est_us, const Options& opt, int sets) {
  return bench::choose_iters(est_us, opt.min_replay_ms, opt.max_iters, sets);
}

// Captures c.iters launches into a graph. Returns false with a reason when the kernel
// cannot be captured; the stream is left out of capture mode either way.
bool capture(Candidate& c, const ProblemContext& ctx, std::string& why) {
  return capture_graph(
      ctx.dev->stream, c.iters, [&](int i, std::string& err) { return launch(c, ctx, i % ctx.sets.count, err); },
      &c.graph, why);
}

// Enqueues candidate c's timed unit: one graph replay, or the same launches directly.
void enqueue_timed(const Candidate& c, const ProblemContext& ctx) {
  if (c.graph) {
    BENCH_CUDA(cudaGraphLaunch(c.graph, ctx.dev->stream));
    return;
  }
  std::string err;
  for (int i = 0; i < c.iters; ++i) {
    // It launched fine during warm-up, so a refusal now is a bug worth stopping for.
    if (!launch(c, ctx, i % ctx.sets.count, err))
      fatal("%s on %s: %s", c.spec->label.c_str(), ctx.problem->name.c_str(), err.c_str());
  }
}

// Events for one round of interleaved timing: boundary j is recorded before kernel j's
// replay, so kernel j's time is the span from event j to event j+1.
class EventChain {
 public:
  explicit EventChain(size_t n) : events_(n, nullptr) {
    for (auto& e : events_) BENCH_CUDA(cudaEventCreate(&e));
  }
  ~EventChain() {
    for (auto e : events_) (void)cudaEventDestroy(e);
  }
  EventChain(const EventChain&) = delete;
  EventChain& operator=(const EventChain&) = delete;
  cudaEvent_t operator[](size_t i) const { return events_[i]; }

 private:
  std::vector<cudaEvent_t> events_;
};

// Poisons set 0's output, runs `run` (which must write it) and checks it against ref.
// Records the worse of successive checks in row.
template <typename Run>
bool check_output(Row& row, const Candidate& c, const ProblemContext& ctx, const float* ref,
                  Run&& run, const char* stage) {
  const anvil::GemmDesc& desc = c.desc;
  int64_t d_elems =
      anvil::verify::storage_elements(desc.d, desc.m, anvil::verify::output_cols(desc), 1);
  BENCH_CUDA(anvil::verify::poison(ctx.sets.d(0), desc.d.dtype, d_elems, ctx.dev->stream));
  if (!run()) return false;
  sync_or_die(ctx, c.spec->label);
  anvil::verify::Tolerance tol = anvil::verify::tolerance_for(desc);
  anvil::verify::Comparison cmp =
      anvil::verify::compare(desc, ctx.sets.d(0), ref, tol, ctx.dev->stream);
  sync_or_die(ctx, std::string("verify::compare after ") + c.spec->label);
  bool first = !row.verified.has_value();
  bool passed = cmp.passed && (first || *row.verified);
  if (first || !cmp.passed || !(cmp.rel_frobenius <= row.rel_error)) {
    row.rel_error = cmp.rel_frobenius;
    row.max_abs_error = cmp.max_abs_err;
    row.nonfinite = cmp.nonfinite;
    row.out_of_tolerance = cmp.out_of_tolerance;
  }
  row.tol_rel_frobenius = tol.rel_frobenius;
  row.verified = passed;
  if (!cmp.passed) {
    char buf[256];
    std::snprintf(buf, sizeof(buf),
                  "verification failed (%s): rel %.3e (tol %.1e), %lld non-finite, %lld out of "
                  "tolerance, max abs err %.3e",
                  stage, cmp.rel_frobenius, tol.rel_frobenius,
                  static_cast<long long>(cmp.nonfinite),
                  static_cast<long long>(cmp.out_of_tolerance), cmp.max_abs_err);
    if (row.message.empty()) row.message = buf;
  }
  return true;
}

void mark_all(Results& res, const std::vector<Candidate>& cands, const char* status,
              const std::string& msg) {
  for (const auto& c : cands) {
    Row& row = res.rows[c.row];
    if (row.status != "ok") continue;
    row.status = status;
    row.message = msg;
  }
}

void run_problem(const Problem& p, int index, int total, const Options& opt,
                 const std::vector<KernelSpec>& specs, Device& dev, Results& res) {
  const anvil::DataType in = opt.dtype;
  const anvil::DataType out = output_dtype(opt);
  const bool fp8 = in == anvil::DataType::kE4M3;
  const anvil::ScaleMode scales = fp8 ? opt.scales : anvil::ScaleMode::kNone;
  namespace verify = anvil::verify;
  // plain: what cuBLAS (and anvil-plain) compute; fused: what the anvil rows compute. The
  // two are the same description without --epilogue.
  anvil::GemmDesc plain = anvil::linear_desc(p.m, p.n, p.k, in, out);
  plain.batch_invariant = opt.batch_invariant;  // cuBLAS reads only the sizes and dtypes
  plain.scales = scales;  // cuBLAS gets the same scales (CublasLtGemm::prepare)
  const anvil::GemmDesc fused = with_epilogue(plain, opt.epilogue);
  const bool has_epilogue = opt.epilogue != Epilogue::kNone;
  const bool fused_reads_c = fused.beta != 0.0f;
  const bool fused_reads_bias = fused.epilogue.bias != anvil::BiasMode::kNone;

  ProblemContext ctx;
  ctx.problem = &p;
  ctx.dev = &dev;
  const size_t in_bytes = verify::dtype_bytes(in);
  const size_t out_bytes = verify::dtype_bytes(out);
  const int64_t a_elems = verify::storage_elements(plain.a, p.m, p.k, 1);
  const int64_t w_elems = verify::storage_elements(plain.b, p.k, p.n, 1);
  // A per-column bias has one value per GEMM column.
  const int64_t bias_elems = fused_reads_bias ? p.n : 0;
  const size_t bias_bytes = size_t(bias_elems) * verify::dtype_bytes(fused.epilogue.bias_dtype);
  auto d_elems_of = [&](const anvil::GemmDesc& d) {
    return verify::storage_elements(d.d, p.m, verify::output_cols(d), 1);
  };
  const int64_t c_elems = verify::storage_elements(fused.c, p.m, verify::output_cols(fused), 1);

  const double flops = 2.0 * double(p.m) * double(p.n) * double(p.k);
  // A row's own minimum traffic: A and W read once, its D written once, plus C and the
  // bias where its description reads them.
  auto min_bytes_of = [&](const anvil::GemmDesc& d) {
    const double out_elems = double(p.m) * double(verify::output_cols(d));
    double bytes = double(p.m * p.k + p.n * p.k) * double(in_bytes) + out_elems * double(out_bytes);
    if (d.beta != 0.0f) bytes += out_elems * double(out_bytes);
    if (d.epilogue.bias != anvil::BiasMode::kNone) bytes += double(bias_bytes);
    return bytes;
  };

  std::fprintf(stderr, "[%d/%d] %s  M=%lld N=%lld K=%lld%s%s\n", index + 1, total, p.name.c_str(),
               static_cast<long long>(p.m), static_cast<long long>(p.n),
               static_cast<long long>(p.k), has_epilogue ? "  epilogue " : "",
               has_epilogue ? epilogue_name(opt.epilogue) : "");

  // A SwiGLU shape needs whole 128-column gate/up block pairs; otherwise no row of the
  // shape is a SwiGLU measurement, the plain ones included.
  std::string shape_unsupported;
  if (opt.epilogue == Epilogue::kSwiGLU && p.n % (2 * anvil::kSwiGLUBlock) != 0) {
    char buf[160];
    std::snprintf(buf, sizeof(buf),
                  "--epilogue swiglu needs N (the GEMM width) to be a multiple of %lld, got %lld",
                  static_cast<long long>(2 * anvil::kSwiGLUBlock), static_cast<long long>(p.n));
    shape_unsupported = buf;
  }

  // ---- one row per kernel, and the description-level checks ----
  std::vector<Candidate> cands;
  size_t workspace_needed = 0;
  for (const auto& spec : specs) {
    Candidate c;
    c.spec = &spec;
    c.plain = has_epilogue && (spec.kind == KernelSpec::Kind::kCublas ||
                               spec.kind == KernelSpec::Kind::kAnvilPlain);
    c.desc = c.plain ? plain : fused;
    Row row;
    row.kernel = spec.label;
    row.name = p.name;
    row.m = p.m;
    row.n = p.n;
    row.k = p.k;
    row.dtype = dtype_name(in);
    row.out_dtype = dtype_name(out);
    row.epilogue = epilogue_name(c.plain ? Epilogue::kNone : opt.epilogue);
    row.flops = flops;
    row.min_bytes = min_bytes_of(c.desc);
    if (!shape_unsupported.empty()) {
      row.status = "unsupported";
      row.message = shape_unsupported;
    } else if (spec.kind == KernelSpec::Kind::kCublas) {
      std::string why;
      if (!dev.cublas->prepare(p.m, p.n, p.k, in, out, scales, why)) {
        row.status = "unsupported";
        row.message = why;
      } else {
        row.algo = dev.cublas->algo_description();
      }
    } else {
      anvil::Diagnostic diag;
      anvil::Status st = anvil::Status::kSuccess;
      if (spec.planned) {
        // Through the planner with the options' overrides: the plan names the kernel.
        anvil::detail::LaunchPlan plan;
        st = anvil::detail::plan_for(c.desc, nullptr, &spec.overrides, &plan, &diag);
        if (st == anvil::Status::kSuccess) row.dispatched = plan.kernel_name;
      } else if (spec.kind == KernelSpec::Kind::kAnvilNamed) {
        c.desc.kernel = spec.label.c_str();
        row.dispatched = spec.label;
      } else {
        const char* picked = anvil::dispatch_name(c.desc);
        if (picked) row.dispatched = std::string(picked);
      }
      if (st == anvil::Status::kSuccess && !spec.planned) st = anvil::can_implement(c.desc, nullptr, &diag);
      if (st == anvil::Status::kSuccess && spec.kind != KernelSpec::Kind::kAnvilNamed) {
        // Split-K, where the plan takes it, for the record (--split-k compares with and without).
        anvil::detail::LaunchPlan plan;
        const bool sm90 = anvil::detail::plan_for(c.desc, nullptr, spec.planned ? &spec.overrides : nullptr, &plan,
                                                  nullptr) == anvil::Status::kSuccess &&
                          (plan.family == anvil::detail::KernelFamily::kSm90Gemm ||
                           plan.family == anvil::detail::KernelFamily::kSm90Fp8);
        if (sm90 && plan.k_splits > 1) {
          row.algo = "split-K " + std::to_string(plan.k_splits) + " slices of K = " + std::to_string(plan.slice_k);
        }
        if (plan.family == anvil::detail::KernelFamily::kSm90Fp8Decode) {
          row.algo = std::to_string(plan.decode.token_tile) + "-token tile, K split " + std::to_string(plan.decode.splits);
        }
      }
      if (st != anvil::Status::kSuccess) {
        row.status = "unsupported";
        row.message = status_text(st, diag);
      } else {
        workspace_needed = std::max(workspace_needed, spec.planned
                                                          ? anvil::detail::workspace_size(c.desc, nullptr, &spec.overrides)
                                                          : anvil::workspace_size(c.desc));
      }
    }
    c.active = row.status == "ok";
    c.row = res.rows.size();
    res.rows.push_back(std::move(row));
    cands.push_back(c);
  }
  auto any_active = [&]() {
    return std::any_of(cands.begin(), cands.end(), [](const Candidate& c) { return c.active; });
  };
  for (const auto& c : cands) {
    const Row& row = res.rows[c.row];
    if (!c.active)
      std::fprintf(stderr, "    %-28s %s: %s\n", c.spec->label.c_str(), row.status.c_str(),
                   row.message.c_str());
  }
  if (!any_active()) return;

  // ---- what the active rows need: each set's D slot fits the largest output (a plain
  // row's M x N next to SwiGLU's M x N/2), C only for fused rows that read it ----
  bool need_fused = false, need_plain = false;
  int64_t d_elems = 0;
  for (const auto& c : cands) {
    if (!c.active) continue;
    (c.plain ? need_plain : need_fused) = true;
    d_elems = std::max(d_elems, d_elems_of(c.desc));
  }
  const bool need_c = need_fused && fused_reads_c;
  const bool need_bias = need_fused && fused_reads_bias;
  ctx.sets.a_bytes = size_t(a_elems) * in_bytes;
  ctx.sets.w_bytes = size_t(w_elems) * in_bytes;
  ctx.sets.c_bytes = need_c ? size_t(c_elems) * out_bytes : 0;
  ctx.sets.d_bytes = size_t(d_elems) * out_bytes;
  ctx.sets.set_bytes = align_up(ctx.sets.a_bytes) + align_up(ctx.sets.w_bytes) +
                       align_up(ctx.sets.c_bytes) + align_up(ctx.sets.d_bytes);

  // ---- input sets: enough to exceed 3x L2, within the memory cap and what is free ----
  const size_t set_bytes = ctx.sets.set_bytes;
  const size_t l2 = size_t(std::max(dev.prop.l2CacheSize, 0));
  int64_t r = rotating_set_count(set_bytes, l2, opt.max_input_sets);
  // One fp32 reference per description the active rows use.
  const size_t ref_fused_bytes =
      opt.verify && need_fused ? align_up(size_t(p.m * verify::output_cols(fused)) * sizeof(float))
                               : 0;
  const size_t ref_plain_bytes =
      opt.verify && need_plain ? align_up(size_t(p.m * p.n) * sizeof(float)) : 0;
  const size_t ref_bytes = ref_fused_bytes + ref_plain_bytes;
  const size_t bias_alloc = need_bias ? align_up(bias_bytes) : 0;
  size_t free_bytes = 0, total_bytes = 0;
  BENCH_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
  const double extras =
      double(ref_bytes + bias_alloc + align_up(workspace_needed) + kHeadroomBytes);
  const double budget = std::min(opt.mem_cap_gb * kGiB, double(free_bytes) - extras);
  const int64_t fit = budget > 0 ? int64_t(budget / double(set_bytes)) : 0;
  if (fit < 1) {
    char buf[200];
    std::snprintf(
        buf, sizeof(buf),
        "one input set (%.2f GiB) plus reference does not fit: %.2f GiB free, cap %.1f GiB",
        double(set_bytes) / kGiB, double(free_bytes) / kGiB, opt.mem_cap_gb);
    mark_all(res, cands, "error", buf);
    std::fprintf(stderr, "    skipped: %s\n", buf);
    return;
  }
  r = std::min(r, fit);
  const int sets = static_cast<int>(r);
  ctx.sets.count = sets;

  DeviceAlloc set_mem, ref_mem, bias_mem, ws_mem, scale_mem;
  const int64_t scales_a = verify::scale_elements_a(plain), scales_b = verify::scale_elements_b(plain);
  const size_t scale_bytes = align_up(size_t(scales_a) * 4) + align_up(size_t(scales_b) * 4);
  if (!set_mem.allocate(size_t(sets) * set_bytes) || (ref_bytes && !ref_mem.allocate(ref_bytes)) ||
      (bias_alloc && !bias_mem.allocate(bias_alloc)) || (scale_bytes && !scale_mem.allocate(scale_bytes)) ||
      (workspace_needed && !ws_mem.allocate(align_up(workspace_needed)))) {
    mark_all(res, cands, "error", "cudaMalloc: out of device memory");
    std::fprintf(stderr, "    skipped: out of device memory\n");
    return;
  }
  ctx.sets.base = set_mem.get();
  ctx.bias = bias_mem.get();
  ctx.workspace = ws_mem.get();
  ctx.workspace_bytes = workspace_needed ? align_up(workspace_needed) : 0;
  if (scale_bytes > 0) {
    float* scale_a = reinterpret_cast<float*>(scale_mem.get());
    float* scale_b = reinterpret_cast<float*>(scale_mem.get() + align_up(size_t(scales_a) * 4));
    BENCH_CUDA(verify::fill_scales(scale_a, scales_a, opt.seed + 0x30000, dev.stream));
    BENCH_CUDA(verify::fill_scales(scale_b, scales_b, opt.seed + 0x30001, dev.stream));
    ctx.scale_a = scale_a;
    ctx.scale_b = scale_b;
  }
  float* ref_fused = reinterpret_cast<float*>(ref_mem.get());
  float* ref_plain = reinterpret_cast<float*>(ref_mem.get() + ref_fused_bytes);
  auto ref_for = [&](const Candidate& c) { return c.plain ? ref_plain : ref_fused; };

  // A and W in the chosen distribution; C and the bias stay uniform (read once per tile
  // or row, they do not feed the tensor cores).
  auto fill_operand = [&](void* p, int64_t count, uint64_t seed) {
    return opt.inputs == InputDistribution::kNormal
               ? verify::fill_random_normal(p, in, count, seed, kNormalStddev, dev.stream)
               : verify::fill_random(p, in, count, seed, kFillScale, dev.stream);
  };
  for (int s = 0; s < sets; ++s) {
    // Distinct seeds per set and operand, so no two sets hold the same data.
    uint64_t seed = opt.seed + uint64_t(s) * 2;
    BENCH_CUDA(fill_operand(ctx.sets.a(s), a_elems, seed));
    BENCH_CUDA(fill_operand(ctx.sets.w(s), w_elems, seed + 1));
    // C and bias take seeds past any set's A and W (--max-input-sets <= 4096).
    if (need_c)
      BENCH_CUDA(verify::fill_random(ctx.sets.c(s), out, c_elems, opt.seed + 0x10000 + uint64_t(s),
                                     kFillScale, dev.stream));
  }
  if (need_bias)
    BENCH_CUDA(verify::fill_random(ctx.bias, fused.epilogue.bias_dtype, bias_elems,
                                   opt.seed + 0x20000, kFillScale, dev.stream));
  sync_or_die(ctx, "verify::fill_random");

  // ---- argument-level checks (alignment, workspace) on the real pointers ----
  for (auto& c : cands) {
    if (!c.active || c.spec->kind == KernelSpec::Kind::kCublas) continue;
    const anvil::GemmArgs args = anvil_args(c, ctx, 0);
    anvil::Diagnostic diag;
    anvil::Status st = anvil::can_implement(c.desc, &args, &diag);
    if (st != anvil::Status::kSuccess) {
      Row& row = res.rows[c.row];
      row.status = "unsupported";
      row.message = status_text(st, diag);
      c.active = false;
      std::fprintf(stderr, "    %-28s unsupported: %s\n", c.spec->label.c_str(),
                   row.message.c_str());
    }
  }
  if (!any_active()) return;

  // ---- the references, once per problem, on set 0 ----
  if (opt.verify) {
    BENCH_CUDA(cudaEventRecord(dev.start, dev.stream));
    if (need_fused) {
      anvil::GemmArgs args;
      args.a = ctx.sets.a(0);
      args.b = ctx.sets.w(0);
      if (fused_reads_c) args.c = ctx.sets.c(0);
      if (fused_reads_bias) args.bias = ctx.bias;
      args.scale_a = ctx.scale_a;
      args.scale_b = ctx.scale_b;
      BENCH_CUDA(verify::reference_gemm(fused, args, ref_fused, dev.stream));
    }
    if (need_plain) {
      anvil::GemmArgs args;
      args.a = ctx.sets.a(0);
      args.b = ctx.sets.w(0);
      args.scale_a = ctx.scale_a;
      args.scale_b = ctx.scale_b;
      BENCH_CUDA(verify::reference_gemm(plain, args, ref_plain, dev.stream));
    }
    BENCH_CUDA(cudaEventRecord(dev.stop, dev.stream));
    float ms = elapsed_ms(dev);
    sync_or_die(ctx, "verify::reference_gemm");
    std::fprintf(stderr, "    reference%s: %.1f ms; %d input sets of %.1f MiB (L2 %.1f MiB)\n",
                 need_fused && need_plain ? "s (fused, plain)" : "", ms, sets,
                 double(set_bytes) / (1 << 20), double(l2) / (1 << 20));
  } else {
    std::fprintf(stderr, "    %d input sets of %.1f MiB (L2 %.1f MiB)\n", sets,
                 double(set_bytes) / (1 << 20), double(l2) / (1 << 20));
  }

  // ---- per kernel: verify, warm up, choose iters, capture, replay once ----
  for (auto& c : cands) {
    if (!c.active) continue;
    Row& row = res.rows[c.row];
    row.input_sets = sets;
    if (c.spec->kind == KernelSpec::Kind::kCublas) {
      // Descriptors are per problem and the kernel list has at most one cuBLAS entry, but
      // preparing again keeps this independent of the row loop above.
      std::string why;
      if (!dev.cublas->prepare(p.m, p.n, p.k, in, out, scales, why)) fatal("cuBLASLt: %s", why.c_str());
    }
    std::string err;
    auto fail_row = [&](const std::string& msg) {
      row.status = "error";
      row.message = msg;
      c.active = false;
      std::fprintf(stderr, "    %-28s error: %s\n", c.spec->label.c_str(), msg.c_str());
    };

    if (opt.verify) {
      bool launched = check_output(
          row, c, ctx, ref_for(c), [&] { return launch(c, ctx, 0, err); }, "direct launch");
      if (!launched) {
        sync_or_die(ctx, c.spec->label);
        fail_row(err);
        continue;
      }
    }

    // Warm-up doubling as the estimate: batches grow until one lasts kWarmupTargetMs,
    // then the last batch's per-call time sizes the graph.
    int n = sets;
    double ms = 0;
    const int64_t cap = std::max<int64_t>(sets, int64_t(opt.max_iters) / sets * sets);
    for (int round = 0;; ++round) {
      ms = time_batch(c, ctx, n, err);
      if (std::isnan(ms)) break;
      if (ms >= kWarmupTargetMs || n >= cap || round + 1 >= kMaxWarmupRounds) break;
      double grow = kWarmupTargetMs / std::max(ms, 1e-3);
      int64_t next = round_to_sets(static_cast<int64_t>(std::ceil(n * std::min(grow, 1e4))), sets);
      n = static_cast<int>(std::min<int64_t>(std::max<int64_t>(next, int64_t(n) * 2), cap));
    }
    if (std::isnan(ms)) {
      fail_row(err);
      continue;
    }
    const double est_us = ms * 1000.0 / n;
    c.iters = choose_iters(est_us, opt, sets);
    row.iters = c.iters;

    std::string why;
    if (capture(c, ctx, why)) {
      row.method = "graph";
      if (opt.verify) {
        check_output(
            row, c, ctx, ref_for(c),
            [&] {
              BENCH_CUDA(cudaGraphLaunch(c.graph, dev.stream));
              return true;
            },
            "graph replay");
      } else {
        BENCH_CUDA(cudaGraphLaunch(c.graph, dev.stream));
        sync_or_die(ctx, c.spec->label);
      }
    } else {
      row.method = "events-batch (graph capture failed: " + why + ")";
      enqueue_timed(c, ctx);  // the warm-up the graph replay would have been
      sync_or_die(ctx, c.spec->label);
    }
    std::fprintf(stderr, "    %-28s ready: ~%.2f us/call, %d launches per replay, %s%s\n",
                 c.spec->label.c_str(), est_us, c.iters, c.graph ? "graph" : "no graph",
                 row.verified ? (*row.verified ? ", verified" : ", VERIFICATION FAILED") : "");
  }

  // ---- interleaved timing ----
  std::vector<Candidate*> active;
  for (auto& c : cands)
    if (c.active) active.push_back(&c);
  EventChain events(active.size() + 1);
  for (int rep = 0; rep < opt.repeats && !active.empty(); ++rep) {
    // Rotating who goes first keeps any drift inside a round from always favouring the
    // same kernel.
    std::vector<Candidate*> order;
    for (size_t j = 0; j < active.size(); ++j)
      order.push_back(active[(j + size_t(rep)) % active.size()]);
    if (dev.spin_ok && launch_spin(dev.stream, kSpinUs) != cudaSuccess) {
      // Only a nicety (e.g. no sm_90a image on another GPU): go on without it.
      (void)cudaGetLastError();
      dev.spin_ok = false;
    }
    // The whole round is queued before waiting, so consecutive replays run back to back
    // with no host round trip between them.
    BENCH_CUDA(cudaEventRecord(events[0], dev.stream));
    for (size_t j = 0; j < order.size(); ++j) {
      enqueue_timed(*order[j], ctx);
      BENCH_CUDA(cudaEventRecord(events[j + 1], dev.stream));
    }
    sync_or_die(ctx, "timed replays (" + std::to_string(order.size()) + " kernels)");
    for (size_t j = 0; j < order.size(); ++j) {
      float ms = 0;
      BENCH_CUDA(cudaEventElapsedTime(&ms, events[j], events[j + 1]));
      res.rows[order[j]->row].samples_us.push_back(double(ms) * 1000.0 / order[j]->iters);
    }
  }
  double clock_after = sm_clock_mhz(dev.pci_bus_id).value_or(kNaN);

  for (auto& c : cands) {
    if (c.graph) {
      (void)cudaGraphExecDestroy(c.graph);
      c.graph = nullptr;
    }
    if (!c.active) continue;
    Row& row = res.rows[c.row];
    row.sm_clock_mhz_after = clock_after;
    if (row.samples_us.empty()) continue;
    row.us_median = median_of(row.samples_us);
    row.us_min = *std::min_element(row.samples_us.begin(), row.samples_us.end());
    row.us_max = *std::max_element(row.samples_us.begin(), row.samples_us.end());
    row.tflops = flops / row.us_median / 1e6;
    row.gbps = row.min_bytes / row.us_median / 1e3;
  }
  // A cuBLAS that failed verification still serves as the baseline: its row shows the
  // failure, and hiding every ratio would make the cause harder to see.
  double cublas_us = kNaN;
  for (const auto& c : cands) {
    const Row& row = res.rows[c.row];
    if (c.spec->kind == KernelSpec::Kind::kCublas && row.status == "ok") cublas_us = row.us_median;
  }
  for (const auto& c : cands) {
    Row& row = res.rows[c.row];
    if (row.status == "ok" && std::isfinite(cublas_us))
      row.speedup_vs_cublas = cublas_us / row.us_median;
    if (row.status != "ok") continue;
    char ratio[48] = "";
    if (std::isfinite(row.speedup_vs_cublas))
      std::snprintf(ratio, sizeof(ratio), "  %.3fx cuBLAS", row.speedup_vs_cublas);
    std::fprintf(stderr, "    %-28s %10.2f us  %7.1f TFLOP/s  %6.0f GB/s  [%.2f..%.2f]%s%s\n",
                 c.spec->label.c_str(), row.us_median, row.tflops, row.gbps, row.us_min, row.us_max,
                 ratio, row.verified && !*row.verified ? "  WRONG RESULT" : "");
  }
}

void list_kernels() {
  std::printf("anvil kernels (use with --kernels; 'anvil' = the dispatcher's pick):\n");
  for (int i = 0; i < anvil::kernel_count(); ++i) {
    const char* summary = anvil::kernel_summary(i);
    std::printf("  %-28s %s\n", anvil::kernel_name(i), summary ? summary : "");
  }
  std::printf("  %-28s %s\n", "anvil-plain",
              "the dispatcher's pick on the plain GEMM (ignores --epilogue)");
  std::printf("  %-28s %s\n", "cublas", "cuBLASLt, fp32 compute, heuristic's first algorithm");
}

void write_outputs(const Options& opt, const Results& res) {
  bool ok = true;
  if (!opt.json_path.empty()) ok &= write_file(opt.json_path, to_json(res));
  if (!opt.csv_path.empty()) ok &= write_file(opt.csv_path, to_csv(res));
  if (!ok) std::exit(1);
}

int run(int argc, char** argv) {
  Options opt = parse_options(argc, argv);
  if (opt.list) {
    list_kernels();
    return 0;
  }
  // Everything that can be checked without a GPU is checked first, so a typo in a suite or
  // a kernel name fails in a second rather than after minutes of measuring.
  std::vector<Problem> problems = load_problems(opt);
  std::vector<KernelSpec> specs = expand_kernels(opt.kernels);
  apply_overrides(opt, specs);
  std::optional<AnchorFile> anchors;
  if (!opt.anchors_path.empty()) anchors = load_anchors(opt.anchors_path);

  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    std::fprintf(stderr,
                 "anvil-bench: no usable CUDA GPU (%s); anvil-bench must run on a machine with "
                 "an NVIDIA GPU and driver.\n",
                 e != cudaSuccess ? cudaGetErrorString(e) : "no devices");
    return 2;
  }
  if (opt.device >= count) {
    std::fprintf(stderr, "anvil-bench: --device %d, but only %d CUDA device(s)\n", opt.device,
                 count);
    return 1;
  }

  Device dev;
  dev.ordinal = opt.device;
  BENCH_CUDA(cudaSetDevice(dev.ordinal));
  BENCH_CUDA(cudaGetDeviceProperties(&dev.prop, dev.ordinal));
  char bus[64] = {};
  if (cudaDeviceGetPCIBusId(bus, sizeof(bus), dev.ordinal) == cudaSuccess) dev.pci_bus_id = bus;
  BENCH_CUDA(cudaStreamCreateWithFlags(&dev.stream, cudaStreamNonBlocking));
  BENCH_CUDA(cudaEventCreate(&dev.start));
  BENCH_CUDA(cudaEventCreate(&dev.stop));
  bool want_cublas = std::any_of(specs.begin(), specs.end(), [](const KernelSpec& s) {
    return s.kind == KernelSpec::Kind::kCublas;
  });
  if (want_cublas) dev.cublas = std::make_unique<CublasLtGemm>();

  Results res;
  RunInfo& info = res.info;
  info.gpu = dev.prop.name;
  info.sm_count = dev.prop.multiProcessorCount;
  info.l2_bytes = dev.prop.l2CacheSize;
  info.compute_capability = std::to_string(dev.prop.major) + "." + std::to_string(dev.prop.minor);
  BENCH_CUDA(cudaDriverGetVersion(&info.driver));
  BENCH_CUDA(cudaRuntimeGetVersion(&info.runtime));
  info.driver_release =
      first_line_of("nvidia-smi --query-gpu=driver_version --format=csv,noheader" +
                    (dev.pci_bus_id.empty() ? std::string() : " -i " + dev.pci_bus_id));
  info.commit = commit_id();
  info.date = utc_now_iso8601();
  info.dtype = dtype_name(opt.dtype);
  info.out_dtype = dtype_name(output_dtype(opt));
  info.scales = opt.dtype == anvil::DataType::kE4M3 ? anvil::to_string(opt.scales) : "none";
  info.epilogue = epilogue_name(opt.epilogue);
  info.batch_invariant = opt.batch_invariant;
  info.inputs = input_distribution_name(opt.inputs);
  info.method = method_text(opt.epilogue);
  for (const auto& s : specs) info.kernels.push_back(s.label);
  info.shape_files = opt.shape_files;
  info.repeats = opt.repeats;
  info.min_replay_ms = opt.min_replay_ms;
  info.max_iters = opt.max_iters;
  info.verify = opt.verify;
  if (anchors) {
    info.anchors_path = anchors->path;
    info.anchors_device = anchors->device;
  }

  if (dev.prop.major != 9)
    std::fprintf(stderr,
                 "anvil-bench: warning: %s is sm_%d%d; anvil's kernels are built for sm_90a and "
                 "will be reported unsupported\n",
                 dev.prop.name, dev.prop.major, dev.prop.minor);
  std::fprintf(stderr, "anvil-bench: %s, %d SMs, L2 %.0f MiB, driver %d, runtime %d, commit %s\n",
               info.gpu.c_str(), info.sm_count, double(info.l2_bytes) / (1 << 20), info.driver,
               info.runtime, info.commit.c_str());

  // If a CUDA error ends the run part-way, what was measured so far is still written.
  set_fatal_hook([&](const std::string& why) {
    res.info.aborted = why;
    res.info.sm_clock_mhz_after = kNaN;
    if (!opt.json_path.empty()) write_file(opt.json_path, to_json(res));
    if (!opt.csv_path.empty()) write_file(opt.csv_path, to_csv(res));
    if (!res.rows.empty()) print_table(res);
  });

  info.sm_clock_mhz_before = sm_clock_mhz(dev.pci_bus_id).value_or(kNaN);
  for (size_t i = 0; i < problems.size(); ++i)
    run_problem(problems[i], static_cast<int>(i), static_cast<int>(problems.size()), opt, specs,
                dev, res);
  info.sm_clock_mhz_after = sm_clock_mhz(dev.pci_bus_id).value_or(kNaN);

  if (anchors) info.anchor_check = check_anchors(*anchors, res.rows);
  set_fatal_hook(nullptr);

  print_table(res);
  print_anchor_check(info);
  write_outputs(opt, res);

  dev.cublas.reset();
  (void)cudaEventDestroy(dev.start);
  (void)cudaEventDestroy(dev.stop);
  (void)cudaStreamDestroy(dev.stream);
  return 0;
}

}  // namespace

// The grouped (mixture-of-experts) mode: grouped_bench.cpp.
int run_grouped(int argc, char** argv);

}  // namespace bench

int main(int argc, char** argv) {
  // Ladder steps and ablations can be named (--kernels, --list) next to the library's own.
  anvil::lab::register_lab_kernels();
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--grouped") == 0) return bench::run_grouped(argc, argv);
  }
  return bench::run(argc, argv);
}
