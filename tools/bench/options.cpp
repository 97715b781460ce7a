#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>

#include "bench.h"
#include "json.h"

namespace bench {

const char* input_distribution_name(InputDistribution d) {
  return d == InputDistribution::kNormal ? "normal" : "uniform";
}

namespace {

const char* kUsage =
    "usage: anvil-bench [options]\n"
    "\n"
    "Times anvil's GEMM kernels against cuBLASLt on nn.Linear problems\n"
    "D[M,N] = A[M,K] W[N,K]^T (all row-major), verifying every result.\n"
    "anvil-bench --grouped SUITE times the grouped (MoE) GEMM instead: --grouped --help.\n"
    "\n"
    "problems:\n"
    "  --shapes FILE        shape suite {\"shapes\": [{\"name\", \"M\", \"N\", \"K\"}, ...]};\n"
    "                       may be given more than once\n"
    "  --m LIST --n LIST --k LIST\n"
    "                       comma lists; every combination is run (names m<M>n<N>k<K>)\n"
    "  --only NAMES         keep only these shape names (comma list)\n"
    "\n"
    "what to run:\n"
    "  --kernels LIST       comma list of: anvil (the dispatcher's pick), cublas,\n"
    "                       anvil-plain (the dispatcher's pick without --epilogue),\n"
    "                       all-ladder (every ladder-* kernel), all-ladder-sm100 (the\n"
    "                       Blackwell ladder: sm100-ladder-*, sm100-gemm-static, sm100-gemm),\n"
    "                       all (every anvil kernel),\n"
    "                       or kernel names from --list   [anvil,cublas]\n"
    "  --epilogue NAME      what anvil's kernels fuse after the GEMM   [none]\n"
    "                         none       D = A W^T\n"
    "                         bias       + bias (fp32, length N, per column)\n"
    "                         bias-gelu  gelu_tanh(. + bias)\n"
    "                         bias-relu  relu(. + bias)\n"
    "                         silu       silu(.)\n"
    "                         swiglu     silu(gate) * up: N is the GEMM width, D is M x N/2;\n"
    "                                    N must be a multiple of 128\n"
    "                         residual   + C (beta = 1, C a separate input shaped like D)\n"
    "                       cublas and anvil-plain stay the plain GEMM of the same shape, so\n"
    "                       'vs cuBLAS' includes the fused epilogue's cost\n"
    "  --dtype bf16|fp16|e4m3   input dtype   [bf16]\n"
    "  --out-dtype bf16|fp16|f32   output dtype   [same as --dtype; bf16 for e4m3]\n"
    "  --scales none|tensor|rowcol|block   e4m3 only: the scale mode (docs/fp8.md); cuBLASLt\n"
    "                       gets the same scales (per tensor, outer vectors, or 1x128 / 128x128\n"
    "                       blocks where it offers them)   [tensor]\n"
    "  --list               print anvil's kernels and exit\n"
    "\n"
    "measuring:\n"
    "  --repeats N          timed graph replays per kernel, interleaved   [7]\n"
    "  --min-replay-ms MS   launches per replay are chosen to last at least this   [20]\n"
    "  --max-iters N        cap on launches per replay   [2000]\n"
    "  --max-input-sets N   cap on rotating input sets   [64]\n"
    "  --mem-cap-gb GB      cap on the input sets' total size   [40]\n"
    "  --no-verify          skip the correctness check\n"
    "  --batch-invariant    anvil rows ask for batch invariance (GemmDesc::batch_invariant)\n"
    "  --decode-splits S    force the decode kernels' K split (1-8) on the anvil rows\n"
    "  --row-split never|always\n"
    "                       never, or always, hand sm90-gemm's last rows to a decode kernel\n"
    "  --swap-ab never|always\n"
    "                       never, or wherever a decode kernel takes D^T = B^T A^T, run the\n"
    "                       transposed problem (the planner swaps for narrow N on many rows)\n"
    "  --fp8-variant NAME   e4m3: force this sm90-fp8 configuration (fp8-wide-pair, ...,\n"
    "                       as anvil-plan --dtype e4m3 lists them) on the anvil rows\n"
    "  --split-k S          sm90-gemm's and sm90-fp8's split-K on the anvil rows: 1 never\n"
    "                       splits, S > 1 forces S slices where K divides into them (FP8:\n"
    "                       whole 128-wide K blocks, at least 4 a slice)   [the planner's rule]\n"
    "  --trace-plans        print each plan the anvil rows run (stderr, once per problem)\n"
    "  --seed N             base seed of the random inputs\n"
    "  --inputs uniform|normal\n"
    "                       uniform in [-1, 1], or normal with the same variance\n"
    "                       (torch.randn's shape, as the anchors)   [uniform]\n"
    "  --device N           CUDA device ordinal   [0]\n"
    "\n"
    "output:\n"
    "  --json FILE          full results as JSON\n"
    "  --csv FILE           one line per (shape, kernel)\n"
    "  --check-anchors FILE compare the cuBLAS times with an anchor file's us_median\n"
    "\n"
    "Exit status: 0 done, 1 error, 2 no usable CUDA GPU.\n";

[[noreturn]] void usage_error(const std::string& msg) {
  std::fprintf(stderr, "anvil-bench: %s\n(anvil-bench --help lists the options)\n", msg.c_str());
  std::exit(1);
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    std::string item = s.substr(start, comma - start);
    // Surrounding spaces come from quoting like --kernels "anvil, cublas".
    size_t b = item.find_first_not_of(' ');
    size_t e = item.find_last_not_of(' ');
    if (b != std::string::npos) out.push_back(item.substr(b, e - b + 1));
    start = comma + 1;
  }
  return out;
}

int64_t parse_int(const std::string& s, const char* what, int64_t lo, int64_t hi) {
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || errno != 0 || v < lo || v > hi) {
    usage_error(std::string("bad value for ") + what + ": '" + s + "'");
  }
  return v;
}

double parse_positive_double(const std::string& s, const char* what) {
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || !(v > 0)) {
    usage_error(std::string("bad value for ") + what + ": '" + s + "'");
  }
  return v;
}

std::vector<int64_t> parse_dims(const std::string& s, const char* what) {
  std::vector<int64_t> out;
  for (const auto& item : split_commas(s)) out.push_back(parse_int(item, what, 1, 1 << 24));
  if (out.empty()) usage_error(std::string("empty list for ") + what);
  return out;
}

// A shape dimension read from JSON: a positive whole number that fits the kernels' sizes.
bool json_dim(const json::Value* v, int64_t& out) {
  if (!v || !v->is_number()) return false;
  double d = v->as_number();
  if (!(d >= 1 && d <= (1 << 24)) || d != static_cast<double>(static_cast<int64_t>(d)))
    return false;
  out = static_cast<int64_t>(d);
  return true;
}

// snprintf rather than string concatenation: GCC 12 raises a false -Wrestrict on
// "m" + std::to_string(...) at -O3.
std::string dims_name(int64_t m, int64_t n, int64_t k) {
  char buf[96];
  std::snprintf(buf, sizeof(buf), "m%lldn%lldk%lld", static_cast<long long>(m),
                static_cast<long long>(n), static_cast<long long>(k));
  return buf;
}

}  // namespace

const char* dtype_name(anvil::DataType t) {
  switch (t) {
    case anvil::DataType::kBF16:
      return "bf16";
    case anvil::DataType::kF16:
      return "fp16";
    case anvil::DataType::kF32:
      return "f32";
    case anvil::DataType::kE4M3:
      return "e4m3";
    case anvil::DataType::kE5M2:
      return "e5m2";
  }
  return "?";
}

std::optional<anvil::DataType> parse_dtype(const std::string& s) {
  if (s == "bf16" || s == "bfloat16") return anvil::DataType::kBF16;
  if (s == "fp16" || s == "f16" || s == "float16" || s == "half") return anvil::DataType::kF16;
  if (s == "f32" || s == "fp32" || s == "float32") return anvil::DataType::kF32;
  if (s == "e4m3" || s == "fp8" || s == "float8_e4m3fn") return anvil::DataType::kE4M3;
  return std::nullopt;
}

std::optional<anvil::ScaleMode> parse_scales(const std::string& s) {
  if (s == "none") return anvil::ScaleMode::kNone;
  if (s == "tensor") return anvil::ScaleMode::kTensor;
  if (s == "rowcol" || s == "row-column") return anvil::ScaleMode::kRowColumn;
  if (s == "block" || s == "block128") return anvil::ScaleMode::kBlock128;
  return std::nullopt;
}

namespace {
constexpr Epilogue kEpilogues[] = {Epilogue::kNone,     Epilogue::kBias,  Epilogue::kBiasGelu,
                                   Epilogue::kBiasRelu, Epilogue::kSilu,  Epilogue::kSwiGLU,
                                   Epilogue::kResidual};
}  // namespace

const char* epilogue_name(Epilogue e) {
  switch (e) {
    case Epilogue::kNone:
      return "none";
    case Epilogue::kBias:
      return "bias";
    case Epilogue::kBiasGelu:
      return "bias-gelu";
    case Epilogue::kBiasRelu:
      return "bias-relu";
    case Epilogue::kSilu:
      return "silu";
    case Epilogue::kSwiGLU:
      return "swiglu";
    case Epilogue::kResidual:
      return "residual";
  }
  return "?";
}

std::optional<Epilogue> parse_epilogue(const std::string& s) {
  for (Epilogue e : kEpilogues)
    if (s == epilogue_name(e)) return e;
  return std::nullopt;
}

anvil::GemmDesc with_epilogue(const anvil::GemmDesc& plain, Epilogue e) {
  anvil::GemmDesc d = plain;
  auto biased = [&](anvil::Activation act) {
    d.epilogue = {act, anvil::BiasMode::kPerColumn, anvil::DataType::kF32};
  };
  switch (e) {
    case Epilogue::kNone:
      break;
    case Epilogue::kBias:
      biased(anvil::Activation::kIdentity);
      break;
    case Epilogue::kBiasGelu:
      biased(anvil::Activation::kGeluTanh);
      break;
    case Epilogue::kBiasRelu:
      biased(anvil::Activation::kReLU);
      break;
    case Epilogue::kSilu:
      d.epilogue.activation = anvil::Activation::kSiLU;
      break;
    case Epilogue::kSwiGLU:
      d.epilogue.activation = anvil::Activation::kSwiGLU;
      // D (and C, unused) are M x N/2, stored densely.
      d.c.ld = d.d.ld = std::max<int64_t>(d.n / 2, 1);
      break;
    case Epilogue::kResidual:
      d.beta = 1.0f;  // C keeps linear_desc's layout, which is D's
      break;
  }
  return d;
}

Options parse_options(int argc, char** argv) {
  Options opt;
  bool kernels_given = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    // Both "--opt value" and "--opt=value" are accepted.
    std::string inline_value;
    bool has_inline = false;
    if (a.rfind("--", 0) == 0) {
      size_t eq = a.find('=');
      if (eq != std::string::npos) {
        inline_value = a.substr(eq + 1);
        a = a.substr(0, eq);
        has_inline = true;
      }
    }
    auto value = [&]() -> std::string {
      if (has_inline) return inline_value;
      if (i + 1 >= argc) usage_error(a + " needs a value");
      return argv[++i];
    };
    auto no_value = [&]() {
      if (has_inline) usage_error(a + " takes no value");
    };

    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (a == "--list") {
      no_value();
      opt.list = true;
    } else if (a == "--shapes") {
      opt.shape_files.push_back(value());
    } else if (a == "--m") {
      opt.ms = parse_dims(value(), "--m");
    } else if (a == "--n") {
      opt.ns = parse_dims(value(), "--n");
    } else if (a == "--k") {
      opt.ks = parse_dims(value(), "--k");
    } else if (a == "--only") {
      for (auto& s : split_commas(value())) opt.only.push_back(s);
    } else if (a == "--dtype") {
      std::string v = value();
      auto t = parse_dtype(v);
      if (!t || *t == anvil::DataType::kF32)
        usage_error("--dtype must be bf16, fp16 or e4m3, not '" + v + "'");
      opt.dtype = *t;
    } else if (a == "--scales") {
      std::string v = value();
      auto m = parse_scales(v);
      if (!m) usage_error("--scales must be none, tensor, rowcol or block, not '" + v + "'");
      opt.scales = *m;
    } else if (a == "--out-dtype") {
      std::string v = value();
      auto t = parse_dtype(v);
      if (!t) usage_error("--out-dtype must be bf16, fp16 or f32, not '" + v + "'");
      opt.out_dtype = *t;
    } else if (a == "--epilogue") {
      std::string v = value();
      auto e = parse_epilogue(v);
      if (!e)
        usage_error("--epilogue must be none, bias, bias-gelu, bias-relu, silu, swiglu or "
                    "residual, not '" + v + "'");
      opt.epilogue = *e;
    } else if (a == "--kernels") {
      if (!kernels_given) opt.kernels.clear();
      kernels_given = true;
      for (auto& s : split_commas(value())) opt.kernels.push_back(s);
    } else if (a == "--repeats") {
      opt.repeats = static_cast<int>(parse_int(value(), "--repeats", 1, 1000));
    } else if (a == "--min-replay-ms") {
      opt.min_replay_ms = parse_positive_double(value(), "--min-replay-ms");
    } else if (a == "--max-iters") {
      opt.max_iters = static_cast<int>(parse_int(value(), "--max-iters", 1, 1000000));
    } else if (a == "--max-input-sets") {
      opt.max_input_sets = static_cast<int>(parse_int(value(), "--max-input-sets", 1, 4096));
    } else if (a == "--mem-cap-gb") {
      opt.mem_cap_gb = parse_positive_double(value(), "--mem-cap-gb");
    } else if (a == "--no-verify") {
      no_value();
      opt.verify = false;
    } else if (a == "--batch-invariant") {
      no_value();
      opt.batch_invariant = true;
    } else if (a == "--decode-splits") {
      opt.overrides.decode_splits = static_cast<int>(parse_int(value(), "--decode-splits", 1, 8));
      opt.overridden = true;
    } else if (a == "--row-split") {
      const std::string v = value();
      if (v == "never") opt.overrides.row_split = anvil::detail::PlanOverrides::RowSplit::kNever;
      else if (v == "always") opt.overrides.row_split = anvil::detail::PlanOverrides::RowSplit::kAlways;
      else usage_error("--row-split takes never or always, not '" + v + "'");
      opt.overridden = true;
    } else if (a == "--swap-ab") {
      const std::string v = value();
      if (v == "never") opt.overrides.swap_ab = anvil::detail::PlanOverrides::SwapAb::kNever;
      else if (v == "always") opt.overrides.swap_ab = anvil::detail::PlanOverrides::SwapAb::kAlways;
      else usage_error("--swap-ab takes never or always, not '" + v + "'");
      opt.overridden = true;
    } else if (a == "--fp8-variant") {
      const std::string v = value();
      int found = -1;
      for (int i = 0; i < anvil::detail::kFp8Variants; ++i) {
        if (v == anvil::detail::fp8_variant_name(static_cast<anvil::detail::Fp8Variant>(i))) found = i;
      }
      if (found < 0) usage_error("--fp8-variant takes an sm90-fp8 configuration name (anvil-plan --dtype e4m3), not '" + v + "'");
      opt.overrides.fp8_variant = found;
      opt.overridden = true;
    } else if (a == "--split-k") {
      opt.overrides.split_k_slices =
          static_cast<int>(parse_int(value(), "--split-k", 1, anvil::detail::kSplitKMaxSlices));
      opt.overridden = true;
    } else if (a == "--trace-plans") {
      opt.overrides.trace = true;
      opt.overridden = true;
    } else if (a == "--inputs") {
      const std::string v = value();
      if (v == "uniform") {
        opt.inputs = InputDistribution::kUniform;
      } else if (v == "normal") {
        opt.inputs = InputDistribution::kNormal;
      } else {
        usage_error("--inputs takes uniform or normal, not '" + v + "'");
      }
    } else if (a == "--seed") {
      opt.seed = static_cast<uint64_t>(parse_int(value(), "--seed", 0, INT64_MAX));
    } else if (a == "--device") {
      opt.device = static_cast<int>(parse_int(value(), "--device", 0, 1024));
    } else if (a == "--json") {
      opt.json_path = value();
    } else if (a == "--csv") {
      opt.csv_path = value();
    } else if (a == "--check-anchors") {
      opt.anchors_path = value();
    } else {
      usage_error(std::string("unknown option '") + argv[i] + "'");
    }
  }
  if (opt.kernels.empty()) usage_error("--kernels names no kernel");
  return opt;
}

std::vector<Problem> load_problems(const Options& opt) {
  std::vector<Problem> problems;
  for (const auto& path : opt.shape_files) {
    json::Value doc;
    std::string err;
    if (!json::parse_file(path, doc, err)) usage_error("cannot read shapes: " + err);
    const json::Value* shapes = doc.find("shapes");
    if (!shapes || !shapes->is_array())
      usage_error(path + ": expected a top-level object with a \"shapes\" array");
    size_t index = 0;
    for (const auto& s : shapes->items()) {
      Problem p;
      const json::Value* name = s.find("name");
      if (!s.is_object() || !json_dim(s.find("M"), p.m) || !json_dim(s.find("N"), p.n) ||
          !json_dim(s.find("K"), p.k)) {
        usage_error(path + ": shapes[" + std::to_string(index) +
                    "] needs positive integer M, N and K");
      }
      if (name && name->is_string() && !name->as_string().empty()) {
        p.name = name->as_string();
      } else {
        p.name = dims_name(p.m, p.n, p.k);
      }
      problems.push_back(std::move(p));
      ++index;
    }
  }

  bool any_dims = !opt.ms.empty() || !opt.ns.empty() || !opt.ks.empty();
  if (any_dims) {
    if (opt.ms.empty() || opt.ns.empty() || opt.ks.empty())
      usage_error("--m, --n and --k must be given together");
    for (int64_t m : opt.ms)
      for (int64_t n : opt.ns)
        for (int64_t k : opt.ks) problems.push_back({dims_name(m, n, k), m, n, k});
  }

  if (!opt.only.empty()) {
    std::vector<Problem> kept;
    for (const auto& want : opt.only) {
      bool found = false;
      for (const auto& p : problems) {
        if (p.name == want) {
          kept.push_back(p);
          found = true;
        }
      }
      if (!found) usage_error("--only: no shape named '" + want + "'");
    }
    problems = std::move(kept);
  }

  if (problems.empty() && !opt.list) usage_error("no problems: give --shapes FILE or --m/--n/--k");
  return problems;
}

std::vector<KernelSpec> expand_kernels(const std::vector<std::string>& names) {
  std::vector<KernelSpec> out;
  std::set<std::string> seen;
  auto add = [&](const std::string& label, KernelSpec::Kind kind) {
    if (!seen.insert(label).second) return;
    KernelSpec spec;
    spec.label = label;
    spec.kind = kind;
    out.push_back(spec);
  };
  for (const auto& name : names) {
    if (name == "anvil" || name == "auto") {
      add("anvil", KernelSpec::Kind::kAnvilAuto);
    } else if (name == "anvil-plain") {
      add("anvil-plain", KernelSpec::Kind::kAnvilPlain);
    } else if (name == "cublas" || name == "cublaslt") {
      add("cublas", KernelSpec::Kind::kCublas);
    } else if (name == "all-ladder" || name == "all-ladder-sm100" || name == "all") {
      bool ladder_only = name == "all-ladder";
      // The Blackwell ladder (docs/blackwell.md): its steps, then the two persistent
      // production kernels that end it, static before CLC.
      bool sm100_ladder = name == "all-ladder-sm100";
      int added = 0;
      for (int i = 0; i < anvil::kernel_count(); ++i) {
        std::string kn = anvil::kernel_name(i);
        if (ladder_only && kn.rfind("ladder-", 0) != 0) continue;
        if (sm100_ladder && kn.rfind("sm100-ladder-", 0) != 0) continue;
        add(kn, KernelSpec::Kind::kAnvilNamed);
        ++added;
      }
      if (sm100_ladder && added > 0) {
        for (const char* last : {"sm100-gemm-static", "sm100-gemm"}) add(last, KernelSpec::Kind::kAnvilNamed);
      }
      if (added == 0) usage_error("'" + name + "' matches no kernel in this build");
    } else {
      bool known = false;
      for (int i = 0; i < anvil::kernel_count(); ++i) {
        if (name == anvil::kernel_name(i)) known = true;
      }
      if (!known) {
        std::string msg = "unknown kernel '" + name +
                          "'; known: anvil, anvil-plain, cublas, all-ladder, all-ladder-sm100, all";
        for (int i = 0; i < anvil::kernel_count(); ++i)
          msg += std::string(", ") + anvil::kernel_name(i);
        usage_error(msg);
      }
      add(name, KernelSpec::Kind::kAnvilNamed);
    }
  }
  return out;
}

void apply_overrides(const Options& opt, std::vector<KernelSpec>& specs) {
  if (!opt.overridden) return;
  using anvil::detail::KernelFamily;
  constexpr KernelFamily kFamilies[] = {KernelFamily::kSm90Gemm,  KernelFamily::kDecodeTma,
                                        KernelFamily::kDecodeLdg, KernelFamily::kDecodeR64,
                                        KernelFamily::kDecodeLdgR64, KernelFamily::kSm90Fp8,
                                        KernelFamily::kSm90Fp8Decode};
  for (KernelSpec& spec : specs) {
    if (spec.kind == KernelSpec::Kind::kAnvilAuto || spec.kind == KernelSpec::Kind::kAnvilPlain) {
      spec.planned = true;
      spec.overrides = opt.overrides;
      continue;
    }
    if (spec.kind != KernelSpec::Kind::kAnvilNamed) continue;
    for (KernelFamily f : kFamilies) {
      if (spec.label == anvil::detail::family_name(f)) {
        spec.planned = true;
        spec.overrides = opt.overrides;
        spec.overrides.family = f;
      }
    }
  }
}

}  // namespace bench
