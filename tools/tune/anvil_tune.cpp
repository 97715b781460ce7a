// anvil-tune: measures the planner's candidate plans for each shape on this GPU and writes
// a tuning cache (docs/tuning.md) that the library loads with load_tuning_cache() or
// ANVIL_TUNING_CACHE.
//
// For each shape the candidates are the planner's own plan and every alternative it can
// be forced into (src/plan/planner.h, PlanOverrides): sm90-gemm on the transposed problem
// beyond 128 tokens, each sm90-gemm variant, the row split on and off, and each decode
// family with each K split, as far as the plan takes the problem; for e4m3 inputs each
// sm90-fp8 configuration, its split-K and sm90-fp8-decode's K splits. Forced choices that
// land on the same launch are measured once. Each candidate
// is checked against the reference, then timed with anvil-bench's method (timing.h):
// random inputs rotating through sets larger than L2, launches captured into a CUDA graph,
// the median of timed replays. The search uses short replays; the two fastest and the
// planner's own plan are then timed again, interleaved, with longer replays, and the
// faster of the two wins if it beats the planner's plan by --min-gain.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "anvil/gemm.h"
#include "check.h"
#include "kernels/sm90/fp8_decode_plan.h"
#include "plan/launch.h"
#include "plan/tuning.h"
#include "spin.h"
#include "system_info.h"
#include "timing.h"
#include "verify/verify.h"

namespace {

using anvil::DataType;
using anvil::GemmDesc;
using anvil::detail::KernelFamily;
using anvil::detail::LaunchPlan;
using anvil::detail::PlanOverrides;

constexpr const char* kUsage =
    "usage: anvil-tune --shapes FILE [options]\n"
    "\n"
    "Measures the planner's candidate plans for each nn.Linear shape in FILE on the current\n"
    "GPU and writes a tuning cache for load_tuning_cache() / ANVIL_TUNING_CACHE.\n"
    "\n"
    "  --shapes FILE          {\"shapes\": [{\"name\", \"M\", \"N\", \"K\"}, ...]} (anvil-bench's format; a\n"
    "                         shape may add \"bias\": true, nn.Linear's bias, and \"activation\":\n"
    "                         \"relu\", \"gelu-erf\", \"gelu-tanh\", \"silu\" or \"swiglu\" (gate/up fused,\n"
    "                         N = 2F: include/anvil/swiglu.h), the epilogue it is tuned with)\n"
    "  --dtype bf16|fp16|e4m3 inputs (and output for bf16 and fp16) [bf16]\n"
    "  --out-dtype bf16|fp16|f32  e4m3 only: the output [bf16]\n"
    "  --scales none|tensor|rowcol|block  e4m3 only: the scale mode (docs/fp8.md), random\n"
    "                         scales in [0.5, 1.5] [tensor]\n"
    "  --batch-invariant      tune GemmDesc::batch_invariant problems (only plans that keep it)\n"
    "  --out FILE             the cache to write [anvil-tuning-cache.json]; rewritten after each shape\n"
    "  --max-candidates N     at most N plans per shape, the planner's own included [32]\n"
    "  --min-gain PCT         keep a plan only if it beats the planner's by PCT percent [1]\n"
    "  --search-replay-ms X   replay length while searching [1]\n"
    "  --final-replay-ms X    replay length when the finalists are timed again [10]\n"
    "  --device D             CUDA device [0]\n"
    "  --list                 print each shape's candidate plans and exit (no GPU needed)\n"
    "  --verbose              also print every candidate's search time\n"
    "  --record FILE          write every shape's candidates and times as JSON, the record\n"
    "                         scripts/eval_planner.py evaluates a planner against\n"
    "  -h, --help             this text\n"
    "\n"
    "One line per shape: the candidates measured, the planner's plan and time, the best\n"
    "plan and its gain. Entries are written only where a plan beats the planner's.\n";

struct Options {
  std::string shapes_path;
  std::string out_path = "anvil-tuning-cache.json";
  DataType dtype = DataType::kBF16;
  DataType out_dtype = DataType::kBF16;  // e4m3 only; 16-bit inputs write their own dtype
  anvil::ScaleMode scales = anvil::ScaleMode::kTensor;  // e4m3 only
  bool batch_invariant = false;
  int max_candidates = 32;
  double min_gain_pct = 1.0;
  double search_replay_ms = 1.0;
  double final_replay_ms = 10.0;
  int device = 0;
  bool list = false;
  bool verbose = false;
  std::string record_path;
};

constexpr int kSearchRepeats = 3;
constexpr int kFinalRepeats = 7;
constexpr int kMaxInputSets = 8;
constexpr int kMaxItersPerReplay = 2000;
constexpr double kSpinUs = 1000.0;
constexpr size_t kAlign = 256;
constexpr double kMemoryCapBytes = 40e9;  // input sets, all together
// A candidate whose first launches take this many times the planner's plan's is not timed
// further: it cannot win, and the search's time goes to the ones that can.
constexpr double kPruneFactor = 2.0;

[[noreturn]] void usage_error(const std::string& msg) {
  std::fprintf(stderr, "anvil-tune: %s\n\n%s", msg.c_str(), kUsage);
  std::exit(1);
}

// An option's value as one of its named choices, or a usage error listing them.
template <typename T>
T one_of(const std::string& option, const std::string& v, std::initializer_list<std::pair<const char*, T>> choices) {
  std::string names;
  for (const auto& [name, choice] : choices) {
    if (v == name) return choice;
    names += (names.empty() ? "" : ", ") + std::string(name);
  }
  usage_error(option + ": one of " + names + ", not '" + v + "'");
}

Options parse(int argc, char** argv) {
  Options o;
  bool out_dtype_given = false, scales_given = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage_error(a + " needs a value");
      return argv[++i];
    };
    const auto number = [&](double lo, double hi) {
      const std::string v = value();
      char* end = nullptr;
      const double x = std::strtod(v.c_str(), &end);
      if (end == v.c_str() || *end != '\0' || !(x >= lo && x <= hi)) usage_error(a + ": bad value '" + v + "'");
      return x;
    };
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (a == "--shapes") {
      o.shapes_path = value();
    } else if (a == "--out") {
      o.out_path = value();
    } else if (a == "--dtype") {
      o.dtype = one_of<DataType>(a, value(), {{"bf16", DataType::kBF16}, {"fp16", DataType::kF16}, {"e4m3", DataType::kE4M3}});
    } else if (a == "--out-dtype") {
      o.out_dtype = one_of<DataType>(a, value(), {{"bf16", DataType::kBF16}, {"fp16", DataType::kF16}, {"f32", DataType::kF32}});
      out_dtype_given = true;
    } else if (a == "--scales") {
      o.scales = one_of<anvil::ScaleMode>(a, value(), {{"none", anvil::ScaleMode::kNone},
                                           {"tensor", anvil::ScaleMode::kTensor},
                                           {"rowcol", anvil::ScaleMode::kRowColumn},
                                           {"block", anvil::ScaleMode::kBlock128}});
      scales_given = true;
    } else if (a == "--list") {
      o.list = true;
    } else if (a == "--verbose") {
      o.verbose = true;
    } else if (a == "--record") {
      o.record_path = value();
    } else if (a == "--batch-invariant") {
      o.batch_invariant = true;
    } else if (a == "--max-candidates") {
      o.max_candidates = static_cast<int>(number(1, 1000));
    } else if (a == "--min-gain") {
      o.min_gain_pct = number(0, 100);
    } else if (a == "--search-replay-ms") {
      o.search_replay_ms = number(0.01, 1000);
    } else if (a == "--final-replay-ms") {
      o.final_replay_ms = number(0.01, 1000);
    } else if (a == "--device") {
      o.device = static_cast<int>(number(0, 1024));
    } else {
      usage_error("unknown option " + a);
    }
  }
  if (o.shapes_path.empty()) usage_error("--shapes FILE is required");
  const bool fp8 = o.dtype == DataType::kE4M3;
  if (!fp8 && (out_dtype_given || scales_given)) usage_error("--out-dtype and --scales apply to --dtype e4m3 only");
  if (fp8 && o.batch_invariant) usage_error("--batch-invariant: FP8 problems have no batch-invariant mode");
  if (!fp8) o.out_dtype = o.dtype, o.scales = anvil::ScaleMode::kNone;
  return o;
}

struct Shape {
  std::string name;
  int64_t m = 0, n = 0, k = 0;
  bool bias = false;  // nn.Linear's bias, one per output column in the inputs' dtype
  anvil::Activation activation = anvil::Activation::kIdentity;
};

// The problem a shape names, as a tuned entry keys it (tuning_desc): nn.Linear's layout
// with the shape's epilogue - a tuned entry names the epilogue too, so a biased layer or a
// fused SwiGLU MLP needs entries of its own.
GemmDesc shape_desc(const Shape& sh, const Options& opt) {
  anvil::detail::TuningProblem p;
  p.m = sh.m, p.n = sh.n, p.k = sh.k;
  p.a = p.b = opt.dtype;
  p.d = opt.out_dtype;
  p.scales = opt.scales;
  p.activation = sh.activation;
  p.bias = sh.bias ? anvil::BiasMode::kPerColumn : anvil::BiasMode::kNone;
  p.batch_invariant = opt.batch_invariant;
  GemmDesc desc = anvil::detail::tuning_desc(p);
  desc.epilogue.bias_dtype = opt.out_dtype;
  return desc;
}

// "e4m3 (block128 scales) -> bf16": the inputs and output, for the header line.
std::string dtype_text(const Options& opt) {
  if (opt.dtype != DataType::kE4M3) return anvil::to_string(opt.dtype);
  return std::string("e4m3 (") + anvil::to_string(opt.scales) + " scales) -> " + anvil::to_string(opt.out_dtype);
}

// " + bias + silu": a shape's epilogue in its progress line.
std::string epilogue_text(const Shape& sh) {
  std::string t = sh.bias ? " + bias" : "";
  if (sh.activation != anvil::Activation::kIdentity) t += std::string(" + ") + anvil::detail::activation_name(sh.activation);
  return t;
}

std::vector<Shape> load_shapes(const std::string& path) {
  std::ifstream in(path);
  if (!in) usage_error("cannot open " + path);
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    usage_error(path + ": not valid JSON (" + e.what() + ")");
  }
  if (!doc.is_object() || !doc.contains("shapes") || !doc["shapes"].is_array()) {
    usage_error(path + ": expected a top-level object with a \"shapes\" array");
  }
  std::vector<Shape> shapes;
  for (size_t i = 0; i < doc["shapes"].size(); ++i) {
    const auto& s = doc["shapes"][i];
    Shape sh;
    try {
      sh.m = s.at("M").get<int64_t>();
      sh.n = s.at("N").get<int64_t>();
      sh.k = s.at("K").get<int64_t>();
      sh.name = s.contains("name") ? s["name"].get<std::string>() : std::to_string(sh.m) + "x" + std::to_string(sh.n) + "x" + std::to_string(sh.k);
      sh.bias = s.contains("bias") && s["bias"].get<bool>();
      if (s.contains("activation")) {
        const std::string act = s["activation"].get<std::string>();
        if (!anvil::detail::parse_activation_name(act, &sh.activation)) {
          usage_error(path + ": shapes[" + std::to_string(i) + "]: unknown activation '" + act +
                      "' (identity, relu, gelu-erf, gelu-tanh, silu, swiglu)");
        }
      }
    } catch (const std::exception& e) {
      usage_error(path + ": shapes[" + std::to_string(i) + "]: " + e.what());
    }
    if (sh.m < 1 || sh.n < 1 || sh.k < 1) usage_error(path + ": shapes[" + std::to_string(i) + "]: M, N and K must be >= 1");
    shapes.push_back(sh);
  }
  if (shapes.empty()) usage_error(path + ": no shapes");
  return shapes;
}

// ---- candidates ----

struct Candidate {
  PlanOverrides overrides;
  LaunchPlan plan;
  std::string label;
  bool untuned = false;
  bool ok = true;
  cudaGraphExec_t graph = nullptr;
  int iters = 0;
  double estimate_us = NAN, search_us = NAN, final_us = NAN;
  bool pruned = false;
};

// Two forced choices that give the same launch are measured once.
std::string launch_signature(const LaunchPlan& p) {
  char buf[160];
  std::snprintf(buf, sizeof(buf), "%d/%d/%d/%d/%d/%d/%lld/%d/%d/%d/%d", int(p.family), int(p.variant), int(p.fp8_variant),
                int(p.decode.config), p.decode.splits, p.k_splits, static_cast<long long>(p.main_rows), int(p.tail_family),
                int(p.tail.config), p.tail.splits, int(p.swap_ab));
  return buf;
}

constexpr int64_t kDecodeCandidateMaxTokens = 1024;

// K in equal slices (split_k.h; FP8's in whole 128-wide blocks), each slice count the
// planner can take; the plan drops those K does not divide into.
void add_split_k(KernelFamily family, std::vector<PlanOverrides>& tried) {
  for (int slices : {2, 3, 4, 6, 8, 12, 16}) {
    PlanOverrides o;
    o.family = family;
    o.split_k_slices = slices;
    tried.push_back(o);
  }
}

// 8-bit inputs run on two families: each sm90-fp8 configuration, its split-K, and
// sm90-fp8-decode at each K split up to the tokens it takes.
void fp8_candidates(const GemmDesc& desc, std::vector<PlanOverrides>& tried) {
  const auto decode = [&] {
    // Wherever the planner can weigh it, whether or not sm90-fp8 would split this K.
    if (!anvil::detail::fp8_decode_token_range(desc.m, desc.scales)) return;
    for (int s : {0, 1, 2, 3, 4, 6, 8}) {
      PlanOverrides o;
      o.family = KernelFamily::kSm90Fp8Decode;
      o.decode_splits = s;
      tried.push_back(o);
    }
  };
  if (desc.m <= 128) decode();
  for (int v = 0; v < anvil::detail::kFp8Variants; ++v) {
    PlanOverrides o;
    o.family = KernelFamily::kSm90Fp8;
    o.fp8_variant = v;
    tried.push_back(o);
  }
  add_split_k(KernelFamily::kSm90Fp8, tried);
  if (desc.m > 128) decode();
}

std::vector<Candidate> enumerate(const GemmDesc& desc, const Options& opt) {
  std::vector<PlanOverrides> tried;
  tried.push_back(PlanOverrides{});  // the planner's own choice
  const bool fp8 = desc.a.dtype == DataType::kE4M3;
  if (fp8) fp8_candidates(desc, tried);
  // sm90-gemm on the transposed problem (its own variant choice, the tokens on the tiles' N
  // side), past the decode kernels' token counts: the tile widths then cut the tokens
  // (docs/notes/transposed-sm90-gemm.md).
  if (anvil::detail::transposable(desc) && !desc.batch_invariant && desc.m > 128) {
    PlanOverrides o;
    o.family = KernelFamily::kSm90Gemm;
    o.swap_ab = PlanOverrides::SwapAb::kAlways;
    tried.push_back(o);
  }
  auto sm90 = [&] {
    for (int v = 0; v < anvil::detail::kSm90Variants; ++v) {
      // The folded-slice configurations sum K whole outside batch-invariant mode: the same
      // work as fit-narrow-96 or a pair, with a second accumulator.
      if (!desc.batch_invariant && anvil::detail::folds_k_slices(static_cast<anvil::detail::Sm90Variant>(v))) continue;
      PlanOverrides o;
      o.family = KernelFamily::kSm90Gemm;
      o.sm90_variant = v;
      tried.push_back(o);
    }
    add_split_k(KernelFamily::kSm90Gemm, tried);
    for (auto mode : {PlanOverrides::RowSplit::kNever, PlanOverrides::RowSplit::kAlways}) {
      PlanOverrides o;
      o.family = KernelFamily::kSm90Gemm;
      o.row_split = mode;
      tried.push_back(o);
    }
  };
  auto decode = [&] {
    for (KernelFamily f : {KernelFamily::kDecodeTma, KernelFamily::kDecodeR64, KernelFamily::kDecodeLdg,
                           KernelFamily::kDecodeLdgR64}) {
      // Past a few of its widest token tiles a family reads the weight too many times: only
      // the 256-token tiles stay a candidate there (sm90-decode-r64's widest is 128 tokens).
      const int64_t widest = f == KernelFamily::kDecodeR64 ? 128 : f == KernelFamily::kDecodeLdgR64 ? 32 : 16;
      if (f != KernelFamily::kDecodeTma && desc.m > 4 * widest) continue;
      for (int s : {0, 1, 2, 3, 4, 6, 8}) {
        PlanOverrides o;
        o.family = f;
        o.decode_splits = s;
        tried.push_back(o);
      }
    }
  };
  // The decode kernels take any number of tokens, in tiles of up to 256 with K split across
  // a cluster: a candidate wherever sm90-gemm's tiles may leave SMs idle (up to 1024 tokens,
  // four token tiles). Few tokens try them first.
  const bool few_tokens = desc.m <= 128;
  if (!fp8 && few_tokens) decode();
  // A narrow output: the transposed problem on the decode kernels (the planner's choice of
  // kernel for it, at each K split), and the problem as it is.
  if (!fp8 && anvil::detail::transposable(desc) && !desc.batch_invariant && desc.n < desc.m &&
      desc.n <= kDecodeCandidateMaxTokens) {
    for (int s : {0, 1, 2, 4, 8}) {
      PlanOverrides o;
      o.swap_ab = PlanOverrides::SwapAb::kAlways;
      o.decode_splits = s;
      tried.push_back(o);
    }
    PlanOverrides unswapped;
    unswapped.swap_ab = PlanOverrides::SwapAb::kNever;
    tried.push_back(unswapped);
  }
  if (!fp8) sm90();
  if (!fp8 && !few_tokens && desc.m <= kDecodeCandidateMaxTokens) decode();

  std::vector<Candidate> out;
  std::vector<std::string> seen;
  const anvil::detail::CallFacts facts = anvil::detail::call_facts(desc, nullptr);
  for (size_t i = 0; i < tried.size() && int(out.size()) < opt.max_candidates; ++i) {
    Candidate c;
    c.overrides = tried[i];
    c.untuned = i == 0;
    anvil::Diagnostic diag;
    if (anvil::detail::plan_for(desc, nullptr, &c.overrides, &c.plan, &diag) != anvil::Status::kSuccess) continue;
    if (!c.untuned && !anvil::detail::tuned_plan_usable(c.plan, c.overrides, desc, anvil::detail::current_device_info(), facts, nullptr)) continue;
    const std::string sig = launch_signature(c.plan);
    if (std::find(seen.begin(), seen.end(), sig) != seen.end()) continue;
    seen.push_back(sig);
    // A plan whose decode launch takes every row on repacked copies names that kernel.
    const bool decode_on_copies = c.plan.row_split() && c.plan.main_rows == 0;
    c.label = c.untuned && decode_on_copies
                  ? std::string("planner (repack, then ") + anvil::detail::family_name(c.plan.tail_family) + ")"
              : c.untuned ? std::string("planner (") + anvil::detail::describe_overrides([&] {
                PlanOverrides o;
                o.family = c.plan.family;
                if (c.plan.family == KernelFamily::kSm90Gemm) o.sm90_variant = static_cast<int>(c.plan.variant);
                else if (c.plan.family == KernelFamily::kSm90Fp8 && c.plan.k_splits > 1) o.split_k_slices = c.plan.k_splits;
                else if (c.plan.family == KernelFamily::kSm90Fp8) o.fp8_variant = static_cast<int>(c.plan.fp8_variant);
                else if (c.plan.family != KernelFamily::kFallback) o.decode_splits = c.plan.k_splits;
                if (c.plan.swap_ab) o.swap_ab = PlanOverrides::SwapAb::kAlways;
                return o;
              }()) + ")"
                        : anvil::detail::describe_overrides(c.overrides);
    out.push_back(std::move(c));
  }
  return out;
}

// ---- device memory and timing ----

struct Buffers {
  void* base = nullptr;
  size_t set_bytes = 0, a_bytes = 0, w_bytes = 0, d_bytes = 0, bias_bytes = 0;
  int sets = 0;
  float* ref = nullptr;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  // FP8 scales, one set shared by the input sets (null without them).
  float* scale_a = nullptr;
  float* scale_b = nullptr;
  ~Buffers() {
    if (base) (void)cudaFree(base);
    if (ref) (void)cudaFree(ref);
    if (workspace) (void)cudaFree(workspace);
    if (scale_a) (void)cudaFree(scale_a);
    if (scale_b) (void)cudaFree(scale_b);
  }
  char* set(int s) const { return static_cast<char*>(base) + size_t(s) * set_bytes; }
};

size_t align_up(size_t x) { return (x + kAlign - 1) / kAlign * kAlign; }

anvil::GemmArgs args_for(const Buffers& b, int s, cudaStream_t stream) {
  anvil::GemmArgs a;
  a.a = b.set(s);
  a.b = b.set(s) + align_up(b.a_bytes);
  a.d = b.set(s) + align_up(b.a_bytes) + align_up(b.w_bytes);
  if (b.bias_bytes > 0) a.bias = b.set(s) + align_up(b.a_bytes) + align_up(b.w_bytes) + align_up(b.d_bytes);
  a.workspace = b.workspace;
  a.workspace_bytes = b.workspace_bytes;
  a.scale_a = b.scale_a;
  a.scale_b = b.scale_b;
  a.stream = stream;
  return a;
}

bool launch(const Candidate& c, const GemmDesc& desc, const Buffers& b, int s, cudaStream_t stream, std::string& err) {
  anvil::Diagnostic diag;
  const anvil::Status st = anvil::detail::gemm(desc, args_for(b, s, stream), &c.overrides, &diag);
  if (st != anvil::Status::kSuccess) {
    err = std::string(anvil::to_string(st)) + ": " + diag.message;
    return false;
  }
  return true;
}

struct Timer {
  cudaStream_t stream = nullptr;
  std::vector<cudaEvent_t> events;
  explicit Timer(cudaStream_t s, size_t n) : stream(s), events(n) {
    for (auto& e : events) BENCH_CUDA(cudaEventCreate(&e));
  }
  ~Timer() {
    for (auto e : events) (void)cudaEventDestroy(e);
  }
};

// Times each candidate's graph `repeats` times, interleaved within each repeat behind a
// GPU spin; returns the median microseconds per launch for each.
std::vector<double> time_graphs(const std::vector<Candidate*>& cs, cudaStream_t stream, int repeats) {
  Timer t(stream, cs.size() + 1);
  std::vector<std::vector<double>> samples(cs.size());
  for (int r = 0; r < repeats; ++r) {
    BENCH_CUDA(bench::launch_spin(stream, kSpinUs));
    for (size_t j = 0; j < cs.size(); ++j) {
      const size_t idx = (j + r) % cs.size();  // the starting candidate rotates
      BENCH_CUDA(cudaEventRecord(t.events[j], stream));
      BENCH_CUDA(cudaGraphLaunch(cs[idx]->graph, stream));
    }
    BENCH_CUDA(cudaEventRecord(t.events[cs.size()], stream));
    BENCH_CUDA(cudaStreamSynchronize(stream));
    for (size_t j = 0; j < cs.size(); ++j) {
      const size_t idx = (j + r) % cs.size();
      float ms = 0;
      BENCH_CUDA(cudaEventElapsedTime(&ms, t.events[j], t.events[j + 1]));
      samples[idx].push_back(ms * 1000.0 / cs[idx]->iters);
    }
  }
  std::vector<double> med;
  for (auto& s : samples) med.push_back(bench::median_of(s));
  return med;
}

void destroy_graph(Candidate& c) {
  if (c.graph) (void)cudaGraphExecDestroy(c.graph);
  c.graph = nullptr;
}

// Verifies c on set 0 against the reference, estimates its time, and captures a graph of
// enough launches for one replay to last replay_ms. False (with why) when it fails, or
// (c.pruned) when its estimate exceeds prune_above_us.
bool prepare(Candidate& c, const GemmDesc& desc, const Buffers& b, cudaStream_t stream, double replay_ms, bool verify,
             std::string& why, double prune_above_us = INFINITY) {
  destroy_graph(c);
  if (verify) {
    const int64_t d_elems = anvil::verify::storage_elements(desc.d, desc.m, anvil::verify::output_cols(desc), 1);
    const anvil::GemmArgs a0 = args_for(b, 0, stream);
    BENCH_CUDA(anvil::verify::poison(a0.d, desc.d.dtype, d_elems, stream));
    if (!launch(c, desc, b, 0, stream, why)) return false;
    BENCH_CUDA(cudaStreamSynchronize(stream));
    const auto tol = anvil::verify::tolerance_for(desc);
    const auto cmp = anvil::verify::compare(desc, a0.d, b.ref, tol, stream);
    BENCH_CUDA(cudaStreamSynchronize(stream));
    if (!cmp.passed) {
      why = "VERIFICATION FAILED: " + anvil::verify::describe(cmp);
      return false;
    }
  }
  // Estimate: a pass over the sets with direct launches, timed after a first pass has made
  // (and cached) each set's launch plan.
  bool ok = true;
  for (int s = 0; s < b.sets && ok; ++s) ok = launch(c, desc, b, s, stream, why);
  cudaEvent_t e0, e1;
  BENCH_CUDA(cudaEventCreate(&e0));
  BENCH_CUDA(cudaEventCreate(&e1));
  BENCH_CUDA(cudaEventRecord(e0, stream));
  for (int s = 0; s < b.sets && ok; ++s) ok = launch(c, desc, b, s, stream, why);
  BENCH_CUDA(cudaEventRecord(e1, stream));
  BENCH_CUDA(cudaStreamSynchronize(stream));
  float ms = 0;
  BENCH_CUDA(cudaEventElapsedTime(&ms, e0, e1));
  (void)cudaEventDestroy(e0);
  (void)cudaEventDestroy(e1);
  if (!ok) return false;
  c.estimate_us = ms * 1000.0 / b.sets;
  if (c.estimate_us > prune_above_us) {
    c.pruned = true;
    why = "pruned";
    return false;
  }
  c.iters = bench::choose_iters(c.estimate_us, replay_ms, kMaxItersPerReplay, b.sets);
  if (!bench::capture_graph(
          stream, c.iters, [&](int i, std::string& err) { return launch(c, desc, b, i % b.sets, stream, err); },
          &c.graph, why)) {
    return false;
  }
  BENCH_CUDA(cudaGraphLaunch(c.graph, stream));  // warm-up replay
  BENCH_CUDA(cudaStreamSynchronize(stream));
  return true;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Tunes one shape; returns true with an entry where a plan beat the planner's.
bool tune_shape(const Shape& sh, int index, int total, const Options& opt, const cudaDeviceProp& prop,
                cudaStream_t stream, anvil::detail::TunedEntry* entry, nlohmann::json* record) {
  const auto t0 = std::chrono::steady_clock::now();
  const GemmDesc desc = shape_desc(sh, opt);
  std::vector<Candidate> cands = enumerate(desc, opt);
  const auto shape_text = [&] {
    char buf[160];
    std::snprintf(buf, sizeof(buf), "[%d/%d] %s %lldx%lldx%lld%s", index, total, sh.name.c_str(),
                  static_cast<long long>(sh.m), static_cast<long long>(sh.n), static_cast<long long>(sh.k),
                  epilogue_text(sh).c_str());
    return std::string(buf);
  };
  if (cands.empty()) {
    std::printf("%s: no plan takes this problem\n", shape_text().c_str());
    return false;
  }

  // Buffers: A, W, D per set; as many sets as exceed 3x L2, within the cap.
  Buffers b;
  const size_t in = anvil::verify::dtype_bytes(opt.dtype), out = anvil::verify::dtype_bytes(opt.out_dtype);
  b.a_bytes = size_t(sh.m * sh.k) * in;
  b.w_bytes = size_t(sh.n * sh.k) * in;
  b.d_bytes = size_t(sh.m * anvil::verify::output_cols(desc)) * out;
  b.bias_bytes = sh.bias ? size_t(sh.n) * out : 0;
  b.set_bytes = align_up(b.a_bytes) + align_up(b.w_bytes) + align_up(b.d_bytes) + align_up(b.bias_bytes);
  b.sets = bench::rotating_set_count(b.set_bytes, size_t(prop.l2CacheSize), kMaxInputSets);
  while (b.sets > 1 && double(b.sets) * double(b.set_bytes) > kMemoryCapBytes) --b.sets;
  for (const auto& c : cands) b.workspace_bytes = std::max(b.workspace_bytes, anvil::detail::workspace_size(desc, nullptr, &c.overrides));
  BENCH_CUDA(cudaMalloc(&b.base, size_t(b.sets) * b.set_bytes));
  BENCH_CUDA(cudaMalloc(reinterpret_cast<void**>(&b.ref), size_t(sh.m * sh.n) * sizeof(float)));
  if (b.workspace_bytes > 0) BENCH_CUDA(cudaMalloc(&b.workspace, b.workspace_bytes));
  const int64_t scales_a = anvil::verify::scale_elements_a(desc), scales_b = anvil::verify::scale_elements_b(desc);
  if (scales_a > 0) {
    BENCH_CUDA(cudaMalloc(reinterpret_cast<void**>(&b.scale_a), size_t(scales_a) * sizeof(float)));
    BENCH_CUDA(anvil::verify::fill_scales(b.scale_a, scales_a, 0x30000, stream));
  }
  if (scales_b > 0) {
    BENCH_CUDA(cudaMalloc(reinterpret_cast<void**>(&b.scale_b), size_t(scales_b) * sizeof(float)));
    BENCH_CUDA(anvil::verify::fill_scales(b.scale_b, scales_b, 0x30001, stream));
  }
  for (int s = 0; s < b.sets; ++s) {
    const anvil::GemmArgs a = args_for(b, s, stream);
    BENCH_CUDA(anvil::verify::fill_random(const_cast<void*>(a.a), opt.dtype, sh.m * sh.k, 1000 + 2 * s, 1.0f, stream));
    BENCH_CUDA(anvil::verify::fill_random(const_cast<void*>(a.b), opt.dtype, sh.n * sh.k, 1001 + 2 * s, 1.0f, stream));
    if (sh.bias) {
      BENCH_CUDA(anvil::verify::fill_random(const_cast<void*>(a.bias), opt.out_dtype, sh.n, 5000 + s, 1.0f, stream));
    }
  }
  BENCH_CUDA(anvil::verify::reference_gemm(desc, args_for(b, 0, stream), b.ref, stream));
  BENCH_CUDA(cudaStreamSynchronize(stream));

  // Search: every candidate verified, then short replays.
  // The planner's plan comes first; it sets the bar past which the others are pruned.
  std::vector<Candidate*> live;
  double prune_above_us = INFINITY;
  int pruned = 0;
  for (auto& c : cands) {
    std::string why;
    if (!prepare(c, desc, b, stream, opt.search_replay_ms, true, why, prune_above_us)) {
      c.ok = false;
      if (c.pruned) ++pruned;
      else std::printf("    %s: %s\n", c.label.c_str(), why.c_str());
      continue;
    }
    if (c.untuned) prune_above_us = kPruneFactor * c.estimate_us;
    live.push_back(&c);
  }
  if (live.empty()) {
    std::printf("%s: no candidate ran\n", shape_text().c_str());
    return false;
  }
  const std::vector<double> search = time_graphs(live, stream, kSearchRepeats);
  for (size_t i = 0; i < live.size(); ++i) live[i]->search_us = search[i];
  if (opt.verbose) {
    for (const auto* c : live) std::printf("    %-40s %10.2f us\n", c->label.c_str(), c->search_us);
  }
  for (auto* c : live) destroy_graph(*c);

  // Finalists: the two fastest and the planner's own, timed again with longer replays.
  std::vector<Candidate*> ranked = live;
  std::sort(ranked.begin(), ranked.end(), [](auto* x, auto* y) { return x->search_us < y->search_us; });
  std::vector<Candidate*> finalists(ranked.begin(), ranked.begin() + std::min<size_t>(2, ranked.size()));
  Candidate* untuned = cands[0].untuned && cands[0].ok ? &cands[0] : nullptr;
  if (untuned != nullptr && std::find(finalists.begin(), finalists.end(), untuned) == finalists.end()) finalists.push_back(untuned);
  for (auto* c : finalists) {
    std::string why;
    if (!prepare(*c, desc, b, stream, opt.final_replay_ms, false, why)) bench::fatal("%s: %s", c->label.c_str(), why.c_str());
  }
  const std::vector<double> fin = time_graphs(finalists, stream, kFinalRepeats);
  for (size_t i = 0; i < finalists.size(); ++i) finalists[i]->final_us = fin[i];
  for (auto* c : finalists) destroy_graph(*c);
  std::sort(finalists.begin(), finalists.end(), [](auto* x, auto* y) { return x->final_us < y->final_us; });

  Candidate* best = finalists[0];
  Candidate* second = nullptr;
  for (auto* c : finalists) {
    if (c != best && !c->untuned && second == nullptr) second = c;
  }
  const double planner_us = untuned != nullptr ? untuned->final_us : NAN;
  const double gain = planner_us / best->final_us;
  const bool keep = !best->untuned && (!(planner_us > 0) || gain >= 1.0 + opt.min_gain_pct / 100.0);
  std::printf("%s: %zu plans (%d pruned), %s %.2f us; best %s %.2f us (%.3fx) -> %s  [%.1f s]\n", shape_text().c_str(), live.size(), pruned,
              untuned != nullptr ? untuned->label.c_str() : "planner (failed)", planner_us, best->label.c_str(),
              best->final_us, gain, keep ? "tuned" : "planner kept", seconds_since(t0));
  std::fflush(stdout);
  if (record != nullptr) {
    nlohmann::json row;
    row["name"] = sh.name;
    row["M"] = sh.m;
    row["N"] = sh.n;
    row["K"] = sh.k;
    if (sh.bias) row["bias"] = true;
    if (sh.activation != anvil::Activation::kIdentity) row["activation"] = anvil::detail::activation_name(sh.activation);
    row["planner"] = untuned != nullptr ? untuned->label : std::string("planner (failed)");
    row["planner_us"] = planner_us > 0 ? planner_us : 0.0;
    row["best"] = best->label;
    row["best_us"] = best->final_us;
    nlohmann::json search = nlohmann::json::object();
    for (const auto* c : live) search[c->label] = c->search_us;
    row["candidates_search_us"] = search;
    record->push_back(row);
  }
  if (!keep) return false;
  entry->problem = anvil::detail::tuning_problem(desc);
  entry->plan = best->overrides;
  entry->us = best->final_us;
  entry->untuned_us = planner_us > 0 ? planner_us : 0;
  if (second != nullptr) {
    entry->has_runner_up = true;
    entry->runner_up = second->overrides;
    entry->runner_up_us = second->final_us;
  }
  return true;
}

bool write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  return static_cast<bool>(out);
}

int run(int argc, char** argv) {
  const Options opt = parse(argc, argv);
  const std::vector<Shape> shapes = load_shapes(opt.shapes_path);
  if (opt.list) {
    // The planner's view only: the H200's description where no GPU answers.
    for (size_t i = 0; i < shapes.size(); ++i) {
      const GemmDesc desc = shape_desc(shapes[i], opt);
      const std::vector<Candidate> cands = enumerate(desc, opt);
      std::printf("[%zu/%zu] %s %lldx%lldx%lld%s: %zu plans\n", i + 1, shapes.size(), shapes[i].name.c_str(),
                  static_cast<long long>(shapes[i].m), static_cast<long long>(shapes[i].n),
                  static_cast<long long>(shapes[i].k), epilogue_text(shapes[i]).c_str(), cands.size());
      for (const auto& c : cands) std::printf("    %s\n", c.label.c_str());
    }
    return 0;
  }
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::fprintf(stderr, "anvil-tune: no CUDA device\n");
    return 2;
  }
  BENCH_CUDA(cudaSetDevice(opt.device));
  cudaDeviceProp prop{};
  BENCH_CUDA(cudaGetDeviceProperties(&prop, opt.device));
  if (prop.major != 9) {
    std::fprintf(stderr, "anvil-tune: %s is sm_%d%d; anvil's kernels need sm_90\n", prop.name, prop.major, prop.minor);
    return 2;
  }
  const anvil::detail::DeviceIdentity* id = anvil::detail::current_device_identity();
  if (id == nullptr) bench::fatal("cannot read the device's name and CUDA runtime version");
  cudaStream_t stream = nullptr;
  BENCH_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  anvil::detail::TuningCache cache;
  cache.device = *id;
  cache.date = bench::utc_now_iso8601();
  std::printf("anvil-tune: %zu shapes, %s, %s (%d SMs, CUDA runtime %d) -> %s\n", shapes.size(),
              dtype_text(opt).c_str(), id->gpu.c_str(), id->sm_count, id->cuda_runtime,
              opt.out_path.c_str());
  const auto t0 = std::chrono::steady_clock::now();
  nlohmann::json record;
  if (!opt.record_path.empty()) {
    record["tool"] = "anvil-tune --record";
    record["gpu"] = id->gpu;
    record["sm_count"] = id->sm_count;
    record["cuda_runtime"] = id->cuda_runtime;
    record["date"] = cache.date;
    record["commit"] = bench::commit_id();
    record["dtype"] = anvil::to_string(opt.dtype);
    if (opt.dtype == DataType::kE4M3) {
      record["out_dtype"] = anvil::to_string(opt.out_dtype);
      record["scales"] = anvil::to_string(opt.scales);
    }
    record["shapes"] = opt.shapes_path;
    record["method"] = "each candidate verified, then timed in interleaved CUDA-graph replays of --search-replay-ms "
                       "(candidates_search_us); the planner's plan and the two fastest again in replays of "
                       "--final-replay-ms (planner_us, best_us)";
    record["rows"] = nlohmann::json::array();
  }
  for (size_t i = 0; i < shapes.size(); ++i) {
    anvil::detail::TunedEntry e;
    if (tune_shape(shapes[i], int(i + 1), int(shapes.size()), opt, prop, stream, &e,
                   opt.record_path.empty() ? nullptr : &record["rows"])) {
      // Two shapes of one file may be the same problem: the later measurement stands.
      cache.entries.erase(std::remove_if(cache.entries.begin(), cache.entries.end(),
                                         [&](const auto& x) { return x.problem == e.problem; }),
                          cache.entries.end());
      cache.entries.push_back(e);
    }
    if (!write_text(opt.out_path, anvil::detail::tuning_cache_json(cache))) bench::fatal("cannot write %s", opt.out_path.c_str());
    if (!opt.record_path.empty() && !write_text(opt.record_path, record.dump(1))) {
      bench::fatal("cannot write %s", opt.record_path.c_str());
    }
  }
  // The written cache must load: the same checks the library makes.
  anvil::detail::TuningCache back;
  anvil::Diagnostic diag;
  if (anvil::detail::parse_tuning_cache(anvil::detail::tuning_cache_json(cache), &back, &diag) != anvil::Status::kSuccess) {
    bench::fatal("the cache written does not load: %s", diag.message);
  }
  std::printf("anvil-tune: %zu of %zu shapes tuned in %.1f s -> %s\n", cache.entries.size(), shapes.size(),
              seconds_since(t0), opt.out_path.c_str());
  (void)cudaStreamDestroy(stream);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return run(argc, argv); }
