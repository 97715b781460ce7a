// Tuned plans (tuning.h): the cache's JSON form and checks, the loaded and built-in
// tables, and the lookup the dispatcher makes when it plans a problem.
#include "plan/tuning.h"

#include <cuda_runtime_api.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <sstream>
#include <unordered_map>

#if defined(ANVIL_HAVE_JSON)
#include <nlohmann/json.hpp>
#endif

#include "host/plan_cache.h"
#include "host/validate.h"
#include "kernels/sm90/split_k.h"

namespace anvil::detail {
namespace {

#if defined(ANVIL_HAVE_JSON)
using Json = nlohmann::ordered_json;
#endif

// ---- names as the cache spells them ----

template <class E>
struct Named {
  E value;
  const char* name;
};
constexpr Named<DataType> kDtypes[] = {{DataType::kBF16, "bf16"}, {DataType::kF16, "fp16"}, {DataType::kF32, "f32"},
                                       {DataType::kE4M3, "e4m3"}, {DataType::kE5M2, "e5m2"}};
// As ScaleMode's to_string spells them (anvil-bench's --scales takes the short forms).
constexpr Named<ScaleMode> kScaleModes[] = {{ScaleMode::kNone, "none"},
                                            {ScaleMode::kTensor, "tensor"},
                                            {ScaleMode::kRowColumn, "row-column"},
                                            {ScaleMode::kBlock128, "block128"}};
constexpr Named<Order> kOrders[] = {{Order::kRowMajor, "row"}, {Order::kColMajor, "col"}};
constexpr Named<Activation> kActivations[] = {{Activation::kIdentity, "identity"}, {Activation::kReLU, "relu"},
                                              {Activation::kGeluErf, "gelu-erf"},   {Activation::kGeluTanh, "gelu-tanh"},
                                              {Activation::kSiLU, "silu"},          {Activation::kSwiGLU, "swiglu"}};
constexpr Named<BiasMode> kBiasModes[] = {
    {BiasMode::kNone, "none"}, {BiasMode::kPerColumn, "per-column"}, {BiasMode::kPerRow, "per-row"}};
constexpr Named<PlanOverrides::RowSplit> kRowSplits[] = {{PlanOverrides::RowSplit::kAuto, "auto"},
                                                         {PlanOverrides::RowSplit::kNever, "never"},
                                                         {PlanOverrides::RowSplit::kAlways, "always"}};
constexpr Named<PlanOverrides::SwapAb> kSwapAbs[] = {{PlanOverrides::SwapAb::kAuto, "auto"},
                                                     {PlanOverrides::SwapAb::kNever, "never"},
                                                     {PlanOverrides::SwapAb::kAlways, "always"}};
// The largest M, N, K and batch an entry may name (the kernels' grid limits are checked
// per problem by the plan).
constexpr int64_t kMaxExtent = (int64_t{1} << 31) - 1;
constexpr int64_t kMaxBatch = 65535;

template <class E, size_t N>
const char* name_of(const Named<E> (&table)[N], E value) {
  for (const auto& t : table) {
    if (t.value == value) return t.name;
  }
  return "?";
}

// The value a table spells `name`; false where no entry does.
template <class E, size_t N>
bool value_of(const Named<E> (&table)[N], const std::string& name, E* out) {
  for (const auto& t : table) {
    if (name == t.name) {
      *out = t.value;
      return true;
    }
  }
  return false;
}

// The index i < count of the enumerator whose name (names(E(i))) is `name`; -1 for none.
template <class E, class Names>
int index_of_name(const std::string& name, int count, Names names) {
  for (int i = 0; i < count; ++i) {
    if (name == names(static_cast<E>(i))) return i;
  }
  return -1;
}

// A parse failure with the place it happened, caught once at the top.
struct CacheError {
  std::string message;
};

#if defined(ANVIL_HAVE_JSON)
[[noreturn]] void refuse(const std::string& where, const std::string& what) { throw CacheError{where + ": " + what}; }

template <class E, size_t N>
E parse_name(const Named<E> (&table)[N], const Json& v, const std::string& where) {
  if (!v.is_string()) refuse(where, "expected a string, got " + v.dump());
  E value{};
  if (value_of(table, v.get<std::string>(), &value)) return value;
  const std::string s = v.get<std::string>();
  std::string known;
  for (const auto& t : table) known += std::string(known.empty() ? "" : ", ") + t.name;
  refuse(where, "unknown name '" + s + "' (known: " + known + ")");
}

void require_object(const Json& v, const std::string& where, std::initializer_list<const char*> keys) {
  if (!v.is_object()) refuse(where, "expected an object");
  for (const auto& item : v.items()) {
    bool known = false;
    for (const char* k : keys) known = known || item.key() == k;
    if (!known) refuse(where, "unknown field '" + item.key() + "'");
  }
}

const Json& field(const Json& obj, const char* key, const std::string& where) {
  const auto it = obj.find(key);
  if (it == obj.end()) refuse(where, std::string("missing field '") + key + "'");
  return *it;
}

int64_t parse_int(const Json& v, const std::string& where, int64_t lo, int64_t hi) {
  if (!v.is_number_integer()) refuse(where, "expected an integer, got " + v.dump());
  const int64_t x = v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX) ? INT64_MAX : v.get<int64_t>();
  if (x < lo || x > hi) refuse(where, std::to_string(x) + " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return x;
}

bool parse_bool(const Json& v, const std::string& where) {
  if (!v.is_boolean()) refuse(where, "expected true or false, got " + v.dump());
  return v.get<bool>();
}

double parse_time(const Json& v, const std::string& where) {
  if (!v.is_number()) refuse(where, "expected a number of microseconds, got " + v.dump());
  const double x = v.get<double>();
  if (!std::isfinite(x) || x < 0) refuse(where, "a time must be finite and >= 0");
  return x;
}

std::string parse_string(const Json& v, const std::string& where) {
  if (!v.is_string()) refuse(where, "expected a string, got " + v.dump());
  return v.get<std::string>();
}

// ---- problems and plans <-> JSON ----

Json problem_json(const TuningProblem& p) {
  Json j;
  j["m"] = p.m;
  j["n"] = p.n;
  j["k"] = p.k;
  j["batch"] = p.batch;
  j["a"] = name_of(kDtypes, p.a);
  j["b"] = name_of(kDtypes, p.b);
  j["d"] = name_of(kDtypes, p.d);
  j["a_order"] = name_of(kOrders, p.a_order);
  j["b_order"] = name_of(kOrders, p.b_order);
  j["strides_aligned"] = p.strides_aligned;
  j["activation"] = name_of(kActivations, p.activation);
  j["bias"] = name_of(kBiasModes, p.bias);
  j["batch_invariant"] = p.batch_invariant;
  if (p.scales != ScaleMode::kNone) j["scales"] = name_of(kScaleModes, p.scales);
  return j;
}

bool is_fp8(DataType t) { return t == DataType::kE4M3 || t == DataType::kE5M2; }

TuningProblem parse_problem(const Json& j, const std::string& where) {
  require_object(j, where, {"m", "n", "k", "batch", "a", "b", "d", "a_order", "b_order", "strides_aligned",
                            "activation", "bias", "batch_invariant", "scales"});
  TuningProblem p;
  p.m = parse_int(field(j, "m", where), where + ".m", 1, kMaxExtent);
  p.n = parse_int(field(j, "n", where), where + ".n", 1, kMaxExtent);
  p.k = parse_int(field(j, "k", where), where + ".k", 1, kMaxExtent);
  p.batch = j.contains("batch") ? parse_int(j["batch"], where + ".batch", 1, kMaxBatch) : 1;
  p.a = parse_name(kDtypes, field(j, "a", where), where + ".a");
  p.b = parse_name(kDtypes, field(j, "b", where), where + ".b");
  p.d = parse_name(kDtypes, field(j, "d", where), where + ".d");
  p.a_order = parse_name(kOrders, field(j, "a_order", where), where + ".a_order");
  p.b_order = parse_name(kOrders, field(j, "b_order", where), where + ".b_order");
  p.strides_aligned = parse_bool(field(j, "strides_aligned", where), where + ".strides_aligned");
  p.activation = parse_name(kActivations, field(j, "activation", where), where + ".activation");
  p.bias = parse_name(kBiasModes, field(j, "bias", where), where + ".bias");
  p.batch_invariant = parse_bool(field(j, "batch_invariant", where), where + ".batch_invariant");
  // Absent in caches of 16-bit problems: no scales.
  if (j.contains("scales")) p.scales = parse_name(kScaleModes, j["scales"], where + ".scales");
  const bool sixteen = p.a == p.b && (p.a == DataType::kBF16 || p.a == DataType::kF16);
  if (!sixteen && !(is_fp8(p.a) && is_fp8(p.b))) {
    refuse(where, "A and B must share a 16-bit dtype (bf16 or fp16) or both be 8-bit (e4m3, e5m2)");
  }
  if (is_fp8(p.d)) refuse(where, "D must be bf16, fp16 or f32");
  if (sixteen && p.scales != ScaleMode::kNone) refuse(where, "scales apply to 8-bit inputs only");
  if (p.activation == Activation::kSwiGLU && p.n % 2 != 0) refuse(where, "SwiGLU needs an even N");
  return p;
}

Json plan_json(const PlanOverrides& o) {
  Json j;
  j["family"] = o.family == KernelFamily::kNone ? "auto" : family_name(o.family);
  if (o.sm90_variant >= 0) j["sm90_variant"] = variant_name(static_cast<Sm90Variant>(o.sm90_variant));
  else j["sm90_variant"] = nullptr;
  j["fit_widths"] = o.fit_widths;
  j["allow_stream_k"] = o.allow_stream_k;
  j["decode_splits"] = o.decode_splits;
  j["row_split"] = name_of(kRowSplits, o.row_split);
  j["split_k_slices"] = o.split_k_slices;
  if (o.swap_ab != PlanOverrides::SwapAb::kAuto) j["swap_ab"] = name_of(kSwapAbs, o.swap_ab);
  if (o.fp8_variant >= 0) j["fp8_variant"] = fp8_variant_name(static_cast<Fp8Variant>(o.fp8_variant));
  return j;
}

PlanOverrides parse_plan(const Json& j, const std::string& where) {
  require_object(j, where, {"family", "sm90_variant", "fit_widths", "allow_stream_k", "decode_splits", "row_split",
                            "split_k_slices", "swap_ab", "fp8_variant"});
  PlanOverrides o;
  const std::string family = parse_string(field(j, "family", where), where + ".family");
  if (family != "auto") {
    const int f = index_of_name<KernelFamily>(family, kKernelFamilies, family_name);
    if (f < 0) refuse(where + ".family", "unknown kernel family '" + family + "'");
    o.family = static_cast<KernelFamily>(f);
  }
  if (j.contains("sm90_variant") && !j["sm90_variant"].is_null()) {
    const std::string v = parse_string(j["sm90_variant"], where + ".sm90_variant");
    o.sm90_variant = index_of_name<Sm90Variant>(v, kSm90Variants, variant_name);
    if (o.sm90_variant < 0) refuse(where + ".sm90_variant", "unknown sm90-gemm variant '" + v + "'");
    if (o.family != KernelFamily::kSm90Gemm) refuse(where, "an sm90_variant needs family sm90-gemm");
  }
  if (j.contains("fit_widths")) o.fit_widths = parse_bool(j["fit_widths"], where + ".fit_widths");
  if (j.contains("allow_stream_k")) o.allow_stream_k = parse_bool(j["allow_stream_k"], where + ".allow_stream_k");
  if (j.contains("decode_splits")) {
    o.decode_splits = static_cast<int>(parse_int(j["decode_splits"], where + ".decode_splits", 0, kMaxClusterSplit));
  }
  if (j.contains("row_split")) o.row_split = parse_name(kRowSplits, j["row_split"], where + ".row_split");
  if (j.contains("swap_ab")) o.swap_ab = parse_name(kSwapAbs, j["swap_ab"], where + ".swap_ab");
  if (j.contains("split_k_slices")) {
    o.split_k_slices = static_cast<int>(parse_int(j["split_k_slices"], where + ".split_k_slices", 0, kSplitKMaxSlices));
    if (o.split_k_slices > 1 && o.family != KernelFamily::kSm90Gemm && o.family != KernelFamily::kSm90Fp8) {
      refuse(where, "split_k_slices needs family sm90-gemm or sm90-fp8");
    }
  }
  if (j.contains("fp8_variant") && !j["fp8_variant"].is_null()) {
    const std::string v = parse_string(j["fp8_variant"], where + ".fp8_variant");
    o.fp8_variant = index_of_name<Fp8Variant>(v, kFp8Variants, fp8_variant_name);
    if (o.fp8_variant < 0) refuse(where + ".fp8_variant", "unknown sm90-fp8 configuration '" + v + "'");
    if (o.family != KernelFamily::kSm90Fp8) refuse(where, "an fp8_variant needs family sm90-fp8");
  }
  return o;
}

#endif  // ANVIL_HAVE_JSON

struct ProblemHash {
  size_t operator()(const TuningProblem& p) const {
    uint64_t h = 1469598103934665603ull;
    const auto mix = [&](uint64_t v) { h = (h ^ v) * 1099511628211ull; };
    mix(uint64_t(p.m)), mix(uint64_t(p.n)), mix(uint64_t(p.k)), mix(uint64_t(p.batch));
    mix(uint64_t(p.a) | uint64_t(p.b) << 4 | uint64_t(p.d) << 8 | uint64_t(p.a_order) << 12 |
        uint64_t(p.b_order) << 14 | uint64_t(p.strides_aligned) << 16 | uint64_t(p.activation) << 17 |
        uint64_t(p.bias) << 21 | uint64_t(p.batch_invariant) << 23 | uint64_t(p.scales) << 24);
    return static_cast<size_t>(h);
  }
};

#if defined(ANVIL_HAVE_JSON)

std::string problem_text(const TuningProblem& p) {
  char buf[96];
  std::snprintf(buf, sizeof(buf), "%lldx%lldx%lld", static_cast<long long>(p.m), static_cast<long long>(p.n),
                static_cast<long long>(p.k));
  return buf;
}

DeviceInfo device_info_for(const DeviceIdentity& id) {
  return id.sm_count == DeviceInfo::h200().sm_count ? DeviceInfo::h200() : DeviceInfo::fallback(id.sm_count);
}

// The load-time check of one entry: the plan it forces takes the problem it names, as
// the planner judges it from the description.
void check_entry_plan(const TunedEntry& e, const DeviceIdentity& id, const std::string& where) {
  const GemmDesc desc = tuning_desc(e.problem);
  Diagnostic diag;
  if (validate_desc(desc, &diag) != Status::kSuccess) refuse(where, std::string("invalid problem: ") + diag.message);
  CallFacts facts;
  for (int f = 0; f < kKernelFamilies; ++f) facts.accepts[f] = decode_family_accepts(static_cast<KernelFamily>(f), desc);
  const DeviceInfo device = device_info_for(id);
  const LaunchPlan p = plan(desc, device, &e.plan, &facts);
  char why[kReasonChars] = {};
  if (!tuned_plan_usable(p, e.plan, desc, device, facts, why)) {
    refuse(where, "the plan " + describe_overrides(e.plan) + " cannot run " + problem_text(e.problem) + ": " + why);
  }
}

TuningCache parse_cache_json(const Json& doc, const std::string& where) {
  require_object(doc, where, {"format", "schema_version", "gpu", "sm_count", "cuda_runtime", "date", "anvil_version",
                              "tool", "entries"});
  const std::string format = parse_string(field(doc, "format", where), where + ".format");
  if (format != kTuningCacheFormat) refuse(where, "not an anvil tuning cache (format '" + format + "')");
  TuningCache c;
  const Json& version = field(doc, "schema_version", where);
  if (!version.is_number_integer() || version.get<int64_t>() != kTuningSchemaVersion) {
    refuse(where, "schema version " + version.dump() + ", this library reads version " +
                      std::to_string(kTuningSchemaVersion) + " (re-run anvil-tune)");
  }
  c.device.gpu = parse_string(field(doc, "gpu", where), where + ".gpu");
  c.device.sm_count = static_cast<int>(parse_int(field(doc, "sm_count", where), where + ".sm_count", 1, 4096));
  c.device.cuda_runtime = static_cast<int>(parse_int(field(doc, "cuda_runtime", where), where + ".cuda_runtime", 1, 1000000));
  if (doc.contains("date")) c.date = parse_string(doc["date"], where + ".date");
  if (doc.contains("anvil_version")) c.anvil_version = parse_string(doc["anvil_version"], where + ".anvil_version");
  const Json& entries = field(doc, "entries", where);
  if (!entries.is_array()) refuse(where + ".entries", "expected an array");
  std::unordered_map<TuningProblem, size_t, ProblemHash> seen;
  for (size_t i = 0; i < entries.size(); ++i) {
    const std::string at = where + ".entries[" + std::to_string(i) + "]";
    const Json& j = entries[i];
    require_object(j, at, {"problem", "plan", "us", "runner_up", "untuned_us"});
    TunedEntry e;
    e.problem = parse_problem(field(j, "problem", at), at + ".problem");
    e.plan = parse_plan(field(j, "plan", at), at + ".plan");
    e.us = parse_time(field(j, "us", at), at + ".us");
    if (j.contains("runner_up") && !j["runner_up"].is_null()) {
      const Json& r = j["runner_up"];
      require_object(r, at + ".runner_up", {"plan", "us"});
      e.has_runner_up = true;
      e.runner_up = parse_plan(field(r, "plan", at + ".runner_up"), at + ".runner_up.plan");
      e.runner_up_us = parse_time(field(r, "us", at + ".runner_up"), at + ".runner_up.us");
    }
    if (j.contains("untuned_us")) e.untuned_us = parse_time(j["untuned_us"], at + ".untuned_us");
    if (!seen.emplace(e.problem, i).second) {
      refuse(at, "the problem " + problem_text(e.problem) + " is already tuned by entry " + std::to_string(seen[e.problem]));
    }
    check_entry_plan(e, c.device, at);
    c.entries.push_back(e);
  }
  return c;
}
#endif  // ANVIL_HAVE_JSON

// ---- the tables ----

struct Table {
  TuningCache cache;
  std::string source;
  std::unordered_map<TuningProblem, PlanOverrides, ProblemHash> index;
  mutable std::atomic<bool> warned{false};  // the foreign-device warning is printed once

  explicit Table(TuningCache c, std::string from) : cache(std::move(c)), source(std::move(from)) {
    for (const auto& e : cache.entries) index.emplace(e.problem, e.plan);
  }
  const PlanOverrides* find(const TuningProblem& p) const {
    const auto it = index.find(p);
    return it != index.end() ? &it->second : nullptr;
  }
};

std::shared_mutex g_loaded_mutex;
std::shared_ptr<const Table> g_loaded;
std::once_flag g_environment_once;

void set_loaded(std::shared_ptr<const Table> table) {
  {
    std::unique_lock lock(g_loaded_mutex);
    g_loaded = std::move(table);
  }
  // Plans made under the previous table must be made again.
  PlanCache::global().clear();
}

Status load_file(const char* path, Diagnostic* diag) {
  if (path == nullptr || *path == '\0') return fail(diag, Status::kInvalidArgument, "tuning cache: no path given");
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(diag, Status::kInvalidArgument, "tuning cache %s: cannot be opened", path);
  std::ostringstream text;
  text << in.rdbuf();
  TuningCache cache;
  Diagnostic inner;
  if (parse_tuning_cache(text.str(), &cache, &inner) != Status::kSuccess) {
    return fail(diag, inner.status, "tuning cache %s: %s", path, inner.message);
  }
  return install_tuning_cache(std::move(cache), path, diag);
}

#include "plan/tuned/builtin_table.inc"  // kBuiltinTuningTable: src/plan/tuned/builtin.json

std::vector<std::unique_ptr<Table>> parse_builtin() {
  std::vector<std::unique_ptr<Table>> tables;
#if !defined(ANVIL_HAVE_JSON)
  // Built without a JSON reader: no table to read (anvil-plan and the planner still work).
  return tables;
#else
  try {
    const Json doc = Json::parse(kBuiltinTuningTable);
    for (const Json& c : doc.at("caches")) tables.push_back(std::make_unique<Table>(parse_cache_json(c, "built-in"), "built-in"));
  } catch (const CacheError& e) {
    std::fprintf(stderr, "anvil: the built-in tuning table is unusable and is ignored: %s\n", e.message.c_str());
    tables.clear();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "anvil: the built-in tuning table is unusable and is ignored: %s\n", e.what());
    tables.clear();
  }
  return tables;
#endif
}

const std::vector<std::unique_ptr<Table>>& builtin_tables() {
  static const std::vector<std::unique_ptr<Table>> tables = parse_builtin();
  return tables;
}

}  // namespace

TuningProblem tuning_problem(const GemmDesc& desc) {
  TuningProblem p;
  p.m = desc.m, p.n = desc.n, p.k = desc.k, p.batch = desc.batch;
  p.a = desc.a.dtype, p.b = desc.b.dtype, p.d = desc.d.dtype;
  p.a_order = desc.a.order, p.b_order = desc.b.order;
  const auto aligned = [&](const MatrixLayout& l) { return l.ld % 8 == 0 && (desc.batch <= 1 || l.batch_stride % 8 == 0); };
  p.strides_aligned = aligned(desc.a) && aligned(desc.b);
  p.activation = desc.epilogue.activation;
  p.bias = desc.epilogue.bias;
  p.batch_invariant = desc.batch_invariant;
  p.scales = desc.scales;
  return p;
}

GemmDesc tuning_desc(const TuningProblem& p) {
  GemmDesc d;
  d.m = p.m, d.n = p.n, d.k = p.k, d.batch = p.batch;
  const int64_t pad = p.strides_aligned ? 0 : 1;  // an odd leading dimension
  const auto operand = [&](DataType t, Order o, int64_t rows, int64_t cols) {
    const int64_t ld = (o == Order::kRowMajor ? cols : rows) + pad;
    return MatrixLayout{t, o, ld, ld * (o == Order::kRowMajor ? rows : cols)};
  };
  d.a = operand(p.a, p.a_order, p.m, p.k);
  d.b = operand(p.b, p.b_order, p.k, p.n);
  const int64_t out_cols = p.activation == Activation::kSwiGLU ? p.n / 2 : p.n;
  d.d = MatrixLayout{p.d, Order::kRowMajor, out_cols, out_cols * p.m};
  d.c = d.d;
  d.epilogue.activation = p.activation;
  d.epilogue.bias = p.bias;
  d.batch_invariant = p.batch_invariant;
  d.scales = p.scales;
  return d;
}

const char* activation_name(Activation a) { return name_of(kActivations, a); }

bool parse_activation_name(const std::string& name, Activation* out) { return value_of(kActivations, name, out); }

std::string describe_overrides(const PlanOverrides& o) {
  std::string s = o.family == KernelFamily::kNone ? "auto" : family_name(o.family);
  if (o.sm90_variant >= 0) s += std::string("/") + variant_name(static_cast<Sm90Variant>(o.sm90_variant));
  if (o.fp8_variant >= 0) s += std::string("/") + fp8_variant_name(static_cast<Fp8Variant>(o.fp8_variant));
  if (o.decode_splits > 0) s += "/splits=" + std::to_string(o.decode_splits);
  if (o.row_split != PlanOverrides::RowSplit::kAuto) s += std::string("/row-split=") + name_of(kRowSplits, o.row_split);
  if (o.split_k_slices > 1) s += "/split-k=" + std::to_string(o.split_k_slices);
  if (o.swap_ab != PlanOverrides::SwapAb::kAuto) s += std::string("/swap-ab=") + name_of(kSwapAbs, o.swap_ab);
  if (!o.fit_widths) s += "/no-fit";
  if (!o.allow_stream_k) s += "/no-stream-k";
  return s;
}

bool tuned_plan_usable(const LaunchPlan& p, const PlanOverrides& o, const GemmDesc& desc, const DeviceInfo& device,
                       const CallFacts& facts, char* why) {
  const auto no = [&](const char* fmt, auto... args) {
    if (why != nullptr) std::snprintf(why, kReasonChars, fmt, args...);
    return false;
  };
  if (p.family == KernelFamily::kNone) return no("%s", p.family_reason);
  const int f = static_cast<int>(p.family);
  // A swapped plan runs the transposed problem, which its family's checks judged apart.
  if (!(p.swap_ab ? facts.transposed_accepts[f] : facts.accepts[f])) {
    return no("%s's checks refuse the problem%s", family_name(p.family), p.swap_ab ? " transposed" : "");
  }
  if (p.swap_ab && desc.batch_invariant) return no("batch-invariant: no plan swaps A and B");
  if (o.family != KernelFamily::kNone && p.family != o.family) return no("the plan runs %s, not %s", family_name(p.family), family_name(o.family));
  if (p.workspace_bytes > facts.workspace_bytes) return no("it needs %zu workspace bytes, the call has %zu", p.workspace_bytes, facts.workspace_bytes);
  const bool sm90 = p.family == KernelFamily::kSm90Gemm;
  if (sm90 && p.variant == Sm90Variant::kTallStreamK && !facts.workspace_aligned16) return no("stream-K needs a 16-byte aligned workspace");
  if (sm90 && tile_shape(p.variant).block_n % 128 != 0 && desc.epilogue.activation == Activation::kSwiGLU) {
    return no("fitted widths cannot hold SwiGLU's 128-column gate/up pairs");
  }
  const bool fp8 = p.family == KernelFamily::kSm90Fp8;
  const bool decode = !sm90 && !fp8 && p.family != KernelFamily::kFallback;
  if (decode && o.decode_splits > 0 && p.decode.splits != o.decode_splits) {
    return no("a K split of %d is not possible here (the plan splits %d)", o.decode_splits, p.decode.splits);
  }
  if ((sm90 || fp8) && o.split_k_slices > 1 && p.k_splits != o.split_k_slices) {
    return no("a split-K of %d slices is not possible here (the plan splits %d)", o.split_k_slices, p.k_splits);
  }
  // The planner runs its own configuration where a forced one does not take the problem.
  if (fp8 && o.fp8_variant >= 0 && static_cast<int>(p.fp8_variant) != o.fp8_variant) {
    return no("%s does not take this problem", fp8_variant_name(static_cast<Fp8Variant>(o.fp8_variant)));
  }
  if (desc.batch_invariant) {
    const auto ldg = [](KernelFamily k) { return k == KernelFamily::kDecodeLdg || k == KernelFamily::kDecodeLdgR64; };
    if (ldg(p.family) || (p.row_split() && ldg(p.tail_family))) return no("batch-invariant: the load-path kernels split K within a CTA");
    if (sm90 && p.variant == Sm90Variant::kTallStreamK) return no("batch-invariant: stream-K changes the summation order");
    // Every plan of the mode cuts K where the weight's split says, whatever M is.
    const int splits = batch_invariant_k_split(desc, device, facts);
    if (splits == 1 && (p.k_splits > 1 || (p.row_split() && p.tail.splits > 1))) {
      return no("batch-invariant: a K split changes the summation order");
    }
    // The cuts: sm90-decode's cluster, sm90-decode-r64's or sm90-gemm's folded slices, or
    // sm90-gemm's split-K in equal slices.
    const bool decode_cuts = p.family == KernelFamily::kDecodeTma ||
                             (p.family == KernelFamily::kDecodeR64 && p.decode.k_slices == splits);
    if (splits > 1 && (p.k_splits != splits || p.row_split() || (decode && !decode_cuts) ||
                       (sm90 && !folds_k_slices(p.variant) && p.slice_k * splits != desc.k))) {
      return no("batch-invariant: the weight's K is summed in %d slices, the plan's in %d", splits, p.k_splits);
    }
  }
  return true;
}

#if !defined(ANVIL_HAVE_JSON)
// Built without nlohmann-json (CMake found none): caches can be neither read nor written.
Status parse_tuning_cache(const std::string&, TuningCache*, Diagnostic* diag) {
  return fail(diag, Status::kNotSupported,
              "this anvil was built without a JSON reader (nlohmann-json): tuning caches cannot be read");
}

std::string tuning_cache_json(const TuningCache&) { return std::string(); }
#else
Status parse_tuning_cache(const std::string& text, TuningCache* out, Diagnostic* diag) {
  try {
    const Json doc = Json::parse(text);
    *out = parse_cache_json(doc, "cache");
    return Status::kSuccess;
  } catch (const CacheError& e) {
    return fail(diag, Status::kInvalidArgument, "%s", e.message.c_str());
  } catch (const Json::parse_error& e) {
    return fail(diag, Status::kInvalidArgument, "not valid JSON (%s)", e.what());
  } catch (const std::exception& e) {
    return fail(diag, Status::kInvalidArgument, "malformed cache (%s)", e.what());
  }
}

std::string tuning_cache_json(const TuningCache& c) {
  Json doc;
  doc["format"] = kTuningCacheFormat;
  doc["schema_version"] = c.schema_version;
  doc["gpu"] = c.device.gpu;
  doc["sm_count"] = c.device.sm_count;
  doc["cuda_runtime"] = c.device.cuda_runtime;
  doc["date"] = c.date;
  doc["anvil_version"] = c.anvil_version;
  doc["tool"] = "anvil-tune";
  Json entries = Json::array();
  for (const auto& e : c.entries) {
    Json j;
    j["problem"] = problem_json(e.problem);
    j["plan"] = plan_json(e.plan);
    j["us"] = e.us;
    if (e.has_runner_up) j["runner_up"] = Json{{"plan", plan_json(e.runner_up)}, {"us", e.runner_up_us}};
    if (e.untuned_us > 0) j["untuned_us"] = e.untuned_us;
    entries.push_back(std::move(j));
  }
  doc["entries"] = std::move(entries);
  return doc.dump(1) + "\n";
}
#endif  // ANVIL_HAVE_JSON

Status install_tuning_cache(TuningCache cache, const char* source, Diagnostic* diag) {
  set_loaded(std::make_shared<const Table>(std::move(cache), source != nullptr ? source : "(memory)"));
  if (diag != nullptr) *diag = Diagnostic{};
  return Status::kSuccess;
}

void clear_loaded_tuning_cache() { set_loaded(nullptr); }

void load_environment_tuning_cache() {
  std::call_once(g_environment_once, [] {
    const char* path = std::getenv(kTuningCacheVariable);
    if (path == nullptr || *path == '\0') return;
    Diagnostic diag;
    if (load_file(path, &diag) != Status::kSuccess) {
      std::fprintf(stderr, "anvil: %s not loaded, the built-in plans are used: %s\n", kTuningCacheVariable, diag.message);
    }
  });
}

const std::vector<TuningCache>& builtin_tuning_caches() {
  static const std::vector<TuningCache> caches = [] {
    std::vector<TuningCache> out;
    for (const auto& t : builtin_tables()) out.push_back(t->cache);
    return out;
  }();
  return caches;
}

bool find_tuned_overrides(const GemmDesc& desc, const DeviceIdentity& device, PlanOverrides* out) {
  load_environment_tuning_cache();
  std::shared_ptr<const Table> loaded;
  {
    std::shared_lock lock(g_loaded_mutex);
    loaded = g_loaded;
  }
  const TuningProblem key = tuning_problem(desc);
  if (loaded != nullptr) {
    if (loaded->cache.device == device) {
      if (const PlanOverrides* o = loaded->find(key)) return *out = *o, true;
    } else if (!loaded->warned.exchange(true)) {
      const DeviceIdentity& c = loaded->cache.device;
      std::fprintf(stderr,
                   "anvil: tuning cache %s ignored: made on %s (%d SMs, CUDA runtime %d), this is %s (%d SMs, CUDA "
                   "runtime %d)\n",
                   loaded->source.c_str(), c.gpu.c_str(), c.sm_count, c.cuda_runtime, device.gpu.c_str(),
                   device.sm_count, device.cuda_runtime);
    }
  }
  for (const auto& t : builtin_tables()) {
    if (t->cache.device != device) continue;
    if (const PlanOverrides* o = t->find(key)) return *out = *o, true;
  }
  return false;
}

LaunchPlan plan_with_tuning(const GemmDesc& desc, const DeviceInfo& info, const DeviceIdentity* device,
                            const CallFacts& facts) {
  PlanOverrides tuned;
  if (device != nullptr && find_tuned_overrides(desc, *device, &tuned)) {
    LaunchPlan p = plan(desc, info, &tuned, &facts);
    if (tuned_plan_usable(p, tuned, desc, info, facts, nullptr)) {
      std::snprintf(p.family_reason, kReasonChars, "tuned: %s", describe_overrides(tuned).c_str());
      return p;
    }
  }
  return plan(desc, info, nullptr, &facts);
}

const DeviceIdentity* current_device_identity() {
  constexpr int kMaxDevices = 64;
  struct Slot {
    std::once_flag once;
    bool ok = false;
    DeviceIdentity id;
  };
  static Slot slots[kMaxDevices];
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= kMaxDevices) {
    cudaGetLastError();
    return nullptr;
  }
  Slot& s = slots[device];
  std::call_once(s.once, [&] {
    cudaDeviceProp prop{};
    int runtime = 0;
    if (cudaGetDeviceProperties(&prop, device) != cudaSuccess || cudaRuntimeGetVersion(&runtime) != cudaSuccess) {
      cudaGetLastError();
      return;
    }
    s.id.gpu = prop.name;
    s.id.sm_count = prop.multiProcessorCount;
    s.id.cuda_runtime = runtime;
    s.ok = true;
  });
  return s.ok ? &s.id : nullptr;
}

}  // namespace anvil::detail

namespace anvil {

Status load_tuning_cache(const char* path, Diagnostic* diag) {
  // The variable is read first, so that an explicit load is never replaced by it.
  detail::load_environment_tuning_cache();
  const Status s = detail::load_file(path, diag);
  if (s != Status::kSuccess) detail::clear_loaded_tuning_cache();
  return s;
}

void clear_tuning_cache() {
  detail::load_environment_tuning_cache();
  detail::clear_loaded_tuning_cache();
}

}  // namespace anvil
