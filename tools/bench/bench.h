// Shared data of anvil-bench: what to run (options, problems, kernels) and what came out
// (rows), so that option parsing, measuring and reporting live in separate files.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "anvil/gemm.h"
#include "plan/planner.h"

namespace bench {

// What --epilogue fuses into anvil's kernels. cuBLAS (and anvil-plain) always run the
// plain GEMM of the same shape, so their times are the baseline the fused cost is read
// against.
enum class Epilogue {
  kNone = 0,
  kBias,      // + bias[j], fp32, length N (nn.Linear)
  kBiasGelu,  // gelu_tanh(z + bias[j])
  kBiasRelu,  // relu(z + bias[j])
  kSilu,      // silu(z), no bias
  kSwiGLU,    // silu(gate) * up: N is the GEMM width, D is M x N/2 (anvil/swiglu.h)
  kResidual,  // z + 1 * C, C a separate input of D's shape and dtype
};

const char* epilogue_name(Epilogue e);  // the --epilogue spelling
std::optional<Epilogue> parse_epilogue(const std::string& s);
// plain (beta 0, no epilogue) with e applied: activation, bias, beta and, for SwiGLU,
// C's and D's leading dimension N/2.
anvil::GemmDesc with_epilogue(const anvil::GemmDesc& plain, Epilogue e);

struct Problem {
  std::string name;
  int64_t m = 0, n = 0, k = 0;
};

enum class InputDistribution { kUniform, kNormal };
const char* input_distribution_name(InputDistribution d);  // "uniform", "normal"

struct Options {
  std::vector<std::string> shape_files;
  std::vector<int64_t> ms, ns, ks;
  std::vector<std::string> only;  // keep just these shape names
  anvil::DataType dtype = anvil::DataType::kBF16;
  std::optional<anvil::DataType> out_dtype;  // default: same as dtype (bf16 for e4m3)
  anvil::ScaleMode scales = anvil::ScaleMode::kTensor;  // e4m3 inputs only
  std::vector<std::string> kernels = {"anvil", "cublas"};
  Epilogue epilogue = Epilogue::kNone;
  int repeats = 7;
  double min_replay_ms = 20.0;
  int max_iters = 2000;
  int max_input_sets = 64;
  double mem_cap_gb = 40.0;
  bool verify = true;
  bool batch_invariant = false;  // GemmDesc::batch_invariant on the anvil rows
  // The planner's choices forced on the anvil rows (--decode-splits, --row-split,
  // --swap-ab, --split-k, --trace-plans); `overridden` when any flag set them.
  anvil::detail::PlanOverrides overrides;
  bool overridden = false;
  bool list = false;
  std::string json_path, csv_path, anchors_path;
  int device = 0;
  uint64_t seed = 20261129;
  // The inputs' distribution: uniform in [-1, 1], or normal with the same variance (1/3)
  // - torch.randn's shape, which the anchors were measured with. On the H200 the two gave
  // times within 1.5% of each other (docs/notes/cublas-anchor-gap.md).
  InputDistribution inputs = InputDistribution::kUniform;
};

// D's dtype: --out-dtype, else the input dtype (bf16 for 8-bit inputs, an input type only).
inline anvil::DataType output_dtype(const Options& o) {
  return o.out_dtype.value_or(o.dtype == anvil::DataType::kE4M3 ? anvil::DataType::kBF16 : o.dtype);
}

// Exits with a message and status 1 on a bad command line; prints help and exits 0 on -h.
Options parse_options(int argc, char** argv);

// The problems the options name: shape files first (in file order), then the --m/--n/--k
// product. Exits with a message on unreadable or malformed input.
std::vector<Problem> load_problems(const Options& opt);

struct KernelSpec {
  // kAnvilPlain: the dispatcher's pick on the plain GEMM, ignoring --epilogue.
  enum class Kind { kAnvilAuto, kAnvilNamed, kAnvilPlain, kCublas };
  std::string label;  // what the row's `kernel` says
  Kind kind = Kind::kAnvilAuto;
  // Run through the planner with these overrides (anvil::detail::gemm) instead of by name
  // or the public entry point: the automatic pick and the families' names under --decode-
  // splits, --row-split, --split-k or --trace-plans.
  bool planned = false;
  anvil::detail::PlanOverrides overrides;
};

// Gives the specs that the options' overrides apply to (the automatic pick, and the
// kernel families by name) those overrides.
void apply_overrides(const Options& opt, std::vector<KernelSpec>& specs);

// Expands "anvil", "anvil-plain", "cublas", "all-ladder", "all" and registry names; exits
// on unknown ones.
std::vector<KernelSpec> expand_kernels(const std::vector<std::string>& names);

const char* dtype_name(anvil::DataType t);  // "bf16", "fp16", "f32", "e4m3"
std::optional<anvil::DataType> parse_dtype(const std::string& s);

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct Row {
  std::string kernel;
  std::string name;
  int64_t m = 0, n = 0, k = 0;
  std::string dtype, out_dtype;
  std::string epilogue = "none";  // what this row computed: --epilogue, or none for plain rows
  std::string status = "ok";  // ok | unsupported | error
  std::string message;
  std::optional<std::string> dispatched;
  std::string method;
  std::string algo;  // cuBLASLt's chosen configuration, or anvil's split-K, for the record
  std::vector<double> samples_us;
  double us_median = kNaN, us_min = kNaN, us_max = kNaN;
  double tflops = kNaN, gbps = kNaN, speedup_vs_cublas = kNaN;
  std::optional<bool> verified;
  double rel_error = kNaN, max_abs_error = kNaN;
  int64_t nonfinite = -1, out_of_tolerance = -1;
  double tol_rel_frobenius = kNaN;
  int64_t iters = 0;
  int input_sets = 0;
  double sm_clock_mhz_after = kNaN;  // right after this problem's timing loop
  double flops = 0, min_bytes = 0;
};

struct AnchorCheck {
  std::string name;
  int64_t m = 0, n = 0, k = 0;
  std::string dtype;
  double cublas_us = kNaN, anchor_us = kNaN, ratio = kNaN;  // ratio = cublas_us / anchor_us
};

struct RunInfo {
  std::string gpu;
  int sm_count = 0;
  int64_t l2_bytes = 0;
  std::string compute_capability;
  int driver = 0, runtime = 0;
  std::optional<std::string> driver_release;  // nvidia-smi's driver_version
  double sm_clock_mhz_before = kNaN, sm_clock_mhz_after = kNaN;
  std::string commit, date;
  std::string dtype, out_dtype;
  std::string scales = "none";    // --scales, for e4m3 inputs
  std::string epilogue = "none";  // --epilogue
  bool batch_invariant = false;   // --batch-invariant
  std::string inputs = "uniform";  // --inputs
  std::string method;
  std::vector<std::string> kernels;
  std::vector<std::string> shape_files;
  int repeats = 0;
  double min_replay_ms = 0;
  int max_iters = 0;
  bool verify = true;
  std::string anchors_path;
  std::optional<std::string> anchors_device;
  std::vector<AnchorCheck> anchor_check;
  std::optional<std::string> aborted;
};

struct Results {
  RunInfo info;
  std::vector<Row> rows;
};

// Reporting (report.cpp).
void print_table(const Results& r);
void print_anchor_check(const RunInfo& info);
std::string to_json(const Results& r);
std::string to_csv(const Results& r);
// Writes text to path; returns false with a message on stderr on failure.
bool write_file(const std::string& path, const std::string& text);

// Anchors (anchors.cpp): loads the file up front, so a typo fails before a long run.
struct Anchor {
  std::string name;
  int64_t m = 0, n = 0, k = 0;
  std::string dtype;  // normalised: bf16 | fp16
  double us_median = kNaN;
};
struct AnchorFile {
  std::string path;
  std::optional<std::string> device;
  std::vector<Anchor> rows;
};
AnchorFile load_anchors(const std::string& path);
std::vector<AnchorCheck> check_anchors(const AnchorFile& anchors, const std::vector<Row>& rows);

}  // namespace bench
