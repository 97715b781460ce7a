// anvil-fuzz: random valid GEMM problems through the public API, each checked against the
// reference GEMM (src/verify/fuzz_problem.h says what is drawn, fuzz_runner.h how each is
// judged). The dispatcher must run every problem correctly; a named kernel may refuse a
// problem with a status, which is counted, not failed.
#include <cuda_runtime_api.h>

#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "anvil/gemm.h"
#include "anvil/lab.h"
#include "json.h"
#include "system_info.h"
#include "verify/device_probe.h"
#include "verify/fuzz_problem.h"
#include "verify/fuzz_runner.h"
#include "verify/grouped_fuzz.h"

namespace {

namespace verify = anvil::verify;

const char* kUsage =
    "usage: anvil-fuzz [options]\n"
    "\n"
    "Draws random valid GEMM problems (sizes 1..9000 leaning to small ones, primes and tile\n"
    "edges +-1; every layout, dtype, epilogue, padding, offset base pointers, alpha/beta,\n"
    "C == D, strided batches), runs each through anvil::gemm with D poisoned and checks it\n"
    "against the reference GEMM and D's padding against stray writes.\n"
    "\n"
    "  --seed N          run seed; problem i depends only on (seed, i)   [1]\n"
    "  --problems N      how many problems   [2000]\n"
    "  --first I         start at problem I   [0]\n"
    "  --only I          run problem I alone (reproduces a failure)\n"
    "  --kernel NAME     a kernel by name (anvil-bench --list); refusals are counted   [auto]\n"
    "  --small           the GPU test tier's small sizes\n"
    "  --grouped         grouped (mixture-of-experts) GEMMs through anvil::grouped_gemm instead:\n"
    "                    both layouts, 1-300 experts, empty and one-row experts, unaligned\n"
    "                    segments, every epilogue, a third e4m3 with no, per-tensor or row/column\n"
    "                    scales; rows no expert owns must stay poisoned\n"
    "  --fp8             FP8 problems (e4m3 / e5m2 pairs, every scale mode; docs/fp8.md); with\n"
    "                    --grouped, only the e4m3 problems of the grouped stream are run\n"
    "  --invariant-split batch-invariant problems on weights the mode splits (N <= 2048,\n"
    "                    K of 16384-131072 on 1-600 rows or of 1024-16384 on 1-4096 rows;\n"
    "                    docs/planner.md#batch-invariance)\n"
    "  --json FILE       write the summary and every failure as JSON\n"
    "  --verbose         print every problem and its outcome\n"
    "  --allow-no-gpu    without an sm_90 GPU, say so and exit 0 instead of 2\n"
    "\n"
    "Exit status: 0 no failure, 1 a failure (or a usage error), 2 no usable sm_90 GPU.\n";

struct Options {
  uint64_t seed = 1;
  int64_t problems = 2000;
  int64_t first = 0;
  std::string kernel = "auto";
  bool small = false;
  bool grouped = false;
  bool fp8 = false;
  bool invariant_split = false;
  std::string json_path;
  bool verbose = false;
  bool allow_no_gpu = false;
};

[[noreturn]] void usage_error(const std::string& message) {
  std::fprintf(stderr, "anvil-fuzz: %s\n(anvil-fuzz --help lists the options)\n", message.c_str());
  std::exit(1);
}

int64_t parse_count(const char* flag, const char* text) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text, &end, 10);
  // Bounded so that first + problems and the per-problem seed arithmetic cannot overflow.
  if (end == text || *end != '\0' || v < 0 || errno == ERANGE || v > (1LL << 40)) {
    usage_error(std::string(flag) + " needs an integer from 0 to 2^40");
  }
  return v;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) usage_error(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (arg == "--seed") {
      o.seed = static_cast<uint64_t>(parse_count("--seed", value()));
    } else if (arg == "--problems") {
      o.problems = parse_count("--problems", value());
    } else if (arg == "--first") {
      o.first = parse_count("--first", value());
    } else if (arg == "--only") {
      o.first = parse_count("--only", value());
      o.problems = 1;
    } else if (arg == "--kernel") {
      o.kernel = value();
    } else if (arg == "--small") {
      o.small = true;
    } else if (arg == "--grouped") {
      o.grouped = true;
    } else if (arg == "--fp8") {
      o.fp8 = true;
    } else if (arg == "--invariant-split") {
      o.invariant_split = true;
    } else if (arg == "--json") {
      o.json_path = value();
    } else if (arg == "--verbose") {
      o.verbose = true;
    } else if (arg == "--allow-no-gpu") {
      o.allow_no_gpu = true;
    } else {
      usage_error("unknown option " + arg);
    }
  }
  if (o.invariant_split && (o.fp8 || o.grouped)) usage_error("--invariant-split draws 16-bit dense problems only");
  if (o.grouped && o.kernel != "auto") usage_error("--grouped runs anvil::grouped_gemm; --kernel does not apply");
  if (o.kernel != "auto") {
    bool known = false;
    for (int k = 0; k < anvil::kernel_count(); ++k) known = known || o.kernel == anvil::kernel_name(k);
    if (!known) usage_error("unknown kernel '" + o.kernel + "'");
  }
  return o;
}

struct Failure {
  int64_t index = 0;
  std::string problem;  // describe() of the problem
  verify::FuzzOutcome outcome;
};

struct Summary {
  std::string gpu;
  std::string skipped;  // why nothing ran, if nothing did
  std::string aborted;  // why the run stopped early, if it did
  int64_t run = 0, passed = 0, refused = 0, failed = 0;
  double seconds = 0;
  std::vector<Failure> failures;
};

std::string rerun_command(const Options& o, int64_t index) {
  std::string cmd = "anvil-fuzz --seed " + std::to_string(o.seed) + " --only " + std::to_string(index);
  if (o.kernel != "auto") cmd += " --kernel " + o.kernel;
  if (o.small) cmd += " --small";
  if (o.grouped) cmd += " --grouped";
  if (o.fp8) cmd += " --fp8";
  if (o.invariant_split) cmd += " --invariant-split";
  return cmd;
}

bool write_json(const Options& o, const Summary& s) {
  namespace json = bench::json;
  json::Writer w;
  w.begin_object();
  w.key("tool");
  w.value("anvil-fuzz");
  w.key("gpu");
  w.value(s.gpu);
  w.key("date");
  w.value(bench::utc_now_iso8601());
  w.key("commit");
  w.value(bench::commit_id());
  w.key("seed");
  w.value(static_cast<int64_t>(o.seed));
  w.key("first");
  w.value(o.first);
  w.key("kernel");
  w.value(o.kernel);
  w.key("sizes");
  w.value(o.small ? "small" : "default");
  w.key("mode");
  w.value(o.grouped ? "grouped" : "gemm");
  if (!s.skipped.empty()) {
    w.key("skipped");
    w.value(s.skipped);
  }
  if (!s.aborted.empty()) {
    w.key("aborted");
    w.value(s.aborted);
  }
  w.key("problems");
  w.value(s.run);
  w.key("passed");
  w.value(s.passed);
  w.key("refused");
  w.value(s.refused);
  w.key("failed");
  w.value(s.failed);
  w.key("seconds");
  w.value(s.seconds);
  w.key("failures");
  w.begin_array();
  for (const Failure& f : s.failures) {
    const verify::Comparison& c = f.outcome.comparison;
    w.begin_object();
    w.key("index");
    w.value(f.index);
    w.key("problem");
    w.value(f.problem);
    w.key("kernel");
    w.value(f.outcome.kernel);
    w.key("message");
    w.value(f.outcome.message);
    w.key("rel_frobenius");
    w.value(c.rel_frobenius);
    w.key("max_abs_err");
    w.value(c.max_abs_err);
    w.key("worst_index");
    w.value(c.worst_index);
    w.key("nonfinite");
    w.value(c.nonfinite);
    w.key("out_of_tolerance");
    w.value(c.out_of_tolerance);
    w.key("rerun");
    w.value(rerun_command(o, f.index));
    w.end_object();
  }
  w.end_array();
  w.end_object();
  std::ofstream file(o.json_path);
  file << w.str() << "\n";
  if (!file) {
    std::fprintf(stderr, "anvil-fuzz: cannot write %s\n", o.json_path.c_str());
    return false;
  }
  return true;
}

void print_progress(const Summary& s, int64_t total) {
  std::printf("[%6lld/%lld] passed %lld, refused %lld, failed %lld (%.1f s)\n", static_cast<long long>(s.run),
              static_cast<long long>(total), static_cast<long long>(s.passed), static_cast<long long>(s.refused),
              static_cast<long long>(s.failed), s.seconds);
  std::fflush(stdout);
}

// Runs the problems in order; a CUDA error that may have broken the context ends the run.
void run_all(const Options& o, Summary& s) {
  cudaStream_t stream = nullptr;
  const cudaError_t e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  if (e != cudaSuccess) {
    s.aborted = std::string("cudaStreamCreateWithFlags: ") + cudaGetErrorName(e);
    return;
  }
  const verify::FuzzLimits limits = o.small ? verify::small_fuzz_limits() : verify::default_fuzz_limits();
  const auto start = std::chrono::steady_clock::now();
  {
    verify::FuzzRunner runner(stream);
    for (int64_t i = o.first; i < o.first + o.problems; ++i) {
      std::string problem;
      verify::FuzzOutcome outcome;
      if (o.grouped) {
        const verify::GroupedFuzzProblem g = verify::make_grouped_fuzz_problem(o.seed, i, o.small);
        if (o.fp8 && g.desc.input != anvil::DataType::kE4M3) continue;  // --grouped --fp8: the e4m3 ones
        problem = verify::describe(g);
        outcome = verify::run_grouped_fuzz_problem(g, stream);
      } else {
        const verify::FuzzProblem p = o.fp8               ? verify::make_fp8_fuzz_problem(o.seed, i, limits)
                                      : o.invariant_split ? verify::make_invariant_split_fuzz_problem(o.seed, i, limits)
                                                          : verify::make_fuzz_problem(o.seed, i, limits);
        problem = verify::describe(p);
        outcome = runner.run(p, o.kernel.c_str());
      }
      ++s.run;
      s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (o.verbose) {
        std::printf("%s %s | %s%s%s\n", verify::to_string(outcome.result), problem.c_str(),
                    outcome.kernel.c_str(), outcome.message.empty() ? "" : ": ", outcome.message.c_str());
      }
      switch (outcome.result) {
        case verify::FuzzResult::kPassed: ++s.passed; break;
        case verify::FuzzResult::kRefused: ++s.refused; break;
        case verify::FuzzResult::kFailed:
          ++s.failed;
          std::printf("FAIL %s | kernel %s: %s\n  rerun: %s\n", problem.c_str(),
                      outcome.kernel.c_str(), outcome.message.c_str(), rerun_command(o, i).c_str());
          s.failures.push_back({i, problem, outcome});
          break;
      }
      if (outcome.context_lost) {
        s.aborted = "stopped after problem " + std::to_string(i) + ": " + outcome.message;
        std::printf("anvil-fuzz: %s; the CUDA context cannot be trusted after this\n", s.aborted.c_str());
        break;
      }
      if (!o.verbose && s.run % 250 == 0) print_progress(s, o.problems);
    }
  }
  cudaStreamDestroy(stream);
}

}  // namespace

int main(int argc, char** argv) {
  anvil::lab::register_lab_kernels();  // --kernel may name a lab kernel
  const Options o = parse(argc, argv);
  Summary s;
  const std::string unavailable = verify::sm90_unavailable_reason();
  if (!unavailable.empty()) {
    s.skipped = "no sm_90 GPU: " + unavailable;
    std::printf("anvil-fuzz: skipped, %s\n", s.skipped.c_str());
    if (!o.json_path.empty() && !write_json(o, s)) return 1;
    return o.allow_no_gpu ? 0 : 2;
  }
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess) s.gpu = prop.name;
  std::printf("anvil-fuzz: %lld %sproblems from seed %llu (first %lld), kernel %s, on %s\n",
              static_cast<long long>(o.problems), o.grouped ? "grouped " : "", static_cast<unsigned long long>(o.seed),
              static_cast<long long>(o.first), o.grouped ? "grouped_gemm" : o.kernel.c_str(), s.gpu.c_str());

  run_all(o, s);

  print_progress(s, o.problems);
  std::printf("anvil-fuzz: %s: %lld run, %lld passed, %lld refused, %lld failed%s%s\n",
              s.failed == 0 && s.aborted.empty() ? "OK" : "FAILED", static_cast<long long>(s.run),
              static_cast<long long>(s.passed), static_cast<long long>(s.refused), static_cast<long long>(s.failed),
              s.aborted.empty() ? "" : "; ", s.aborted.c_str());
  const bool json_ok = o.json_path.empty() || write_json(o, s);
  return s.failed == 0 && s.aborted.empty() && json_ok ? 0 : 1;
}
