// Tuned plans (include/anvil/tuning.h): the cache format, its checks, and the lookup the
// dispatcher makes when it plans a problem. Not installed: the library, anvil-tune and
// the tests include it.
//
// A tuned entry is a PlanOverrides for one problem (dtypes, layouts, epilogue, batch
// invariance, FP8 scale mode, M, N, K, batch). It is applied where the planner runs - once per problem
// and pointer set, on a plan-cache miss - so a lookup costs nothing on the calls that
// replay a cached plan.
#pragma once

#include <string>
#include <vector>

#include "anvil/gemm.h"
#include "plan/planner.h"

namespace anvil::detail {

// The cache format's version: a file with another one is refused.
inline constexpr int kTuningSchemaVersion = 1;
inline constexpr const char* kTuningCacheFormat = "anvil-tuning-cache";
// The library version a cache records (informational; the schema version decides).
inline constexpr const char* kTuningAnvilVersion = "0.1.0";
// The environment variable naming a cache to load at the first call.
inline constexpr const char* kTuningCacheVariable = "ANVIL_TUNING_CACHE";

// The GPU and CUDA runtime a cache was measured on; a cache applies only where all three
// match.
struct DeviceIdentity {
  std::string gpu;       // cudaDeviceProp::name, e.g. "NVIDIA H200"
  int sm_count = 0;
  int cuda_runtime = 0;  // cudaRuntimeGetVersion, e.g. 13000
  bool operator==(const DeviceIdentity&) const = default;
};

// What a tuned entry is keyed by: everything about a problem that the planner's choice
// depends on, except the pointers (a call's pointers are checked when the plan is used).
struct TuningProblem {
  int64_t m = 0, n = 0, k = 0, batch = 1;
  DataType a = DataType::kBF16, b = DataType::kBF16, d = DataType::kBF16;
  Order a_order = Order::kRowMajor, b_order = Order::kColMajor;
  // Whether A's and B's leading dimensions and batch strides are multiples of 8 elements
  // (what TMA and the decode kernels need to read them in place).
  bool strides_aligned = true;
  Activation activation = Activation::kIdentity;
  BiasMode bias = BiasMode::kNone;
  bool batch_invariant = false;
  ScaleMode scales = ScaleMode::kNone;  // 8-bit inputs: how their sums are scaled
  bool operator==(const TuningProblem&) const = default;
};
TuningProblem tuning_problem(const GemmDesc& desc);
// A description with the problem's key: packed strides (K, or K + 8 where the key says
// unaligned), C and D in D's dtype, beta 0.
GemmDesc tuning_desc(const TuningProblem& problem);

struct TunedEntry {
  TuningProblem problem;
  PlanOverrides plan;       // the measured fastest
  double us = 0;            // its median time per call
  bool has_runner_up = false;
  PlanOverrides runner_up;  // the second fastest, for information
  double runner_up_us = 0;
  double untuned_us = 0;    // the planner's own choice, for information (0: not measured)
};

struct TuningCache {
  int schema_version = kTuningSchemaVersion;
  DeviceIdentity device;
  std::string date;  // ISO-8601 UTC
  std::string anvil_version = kTuningAnvilVersion;
  std::vector<TunedEntry> entries;
};

// Parses and checks a cache document: the format, the schema version, the header and
// every entry (names, ranges, and that the plan takes the problem it names). The message
// says which entry and why.
Status parse_tuning_cache(const std::string& text, TuningCache* out, Diagnostic* diag);
std::string tuning_cache_json(const TuningCache& cache);
// The overrides as the cache spells them ("family", "sm90_variant", ...), e.g. for
// anvil-tune's progress lines: "sm90-gemm/wide-pair", "sm90-decode/splits=4".
std::string describe_overrides(const PlanOverrides& overrides);
// An epilogue activation as caches spell it: "identity", "relu", "gelu-erf", "gelu-tanh",
// "silu", "swiglu"; the parse is false for any other name.
const char* activation_name(Activation a);
bool parse_activation_name(const std::string& name, Activation* out);

// Whether a plan made with tuned overrides may run the call these facts describe: its
// family takes the problem, the workspace holds what it needs, and in batch-invariant
// mode it keeps the one summation order. why (kReasonChars) says what refused it.
bool tuned_plan_usable(const LaunchPlan& plan, const PlanOverrides& overrides, const GemmDesc& desc,
                       const DeviceInfo& device, const CallFacts& facts, char* why);

// The loaded cache (replacing any earlier one), and forgetting it.
Status install_tuning_cache(TuningCache cache, const char* source, Diagnostic* diag);
void clear_loaded_tuning_cache();

// The tuned overrides for desc on a device: the loaded cache first, then the built-in
// table. A loaded cache from another device is skipped with one warning line.
bool find_tuned_overrides(const GemmDesc& desc, const DeviceIdentity& device, PlanOverrides* out);

// The plan the library runs: the tuned one where an entry names the problem and the call
// can run it, otherwise the planner's own. device null: no tuned plans.
LaunchPlan plan_with_tuning(const GemmDesc& desc, const DeviceInfo& info, const DeviceIdentity* device,
                            const CallFacts& facts);

// The current CUDA device's identity (asked once per device), null without a usable device.
const DeviceIdentity* current_device_identity();

// Reads ANVIL_TUNING_CACHE once per process (std::call_once) and loads the cache it names;
// a failure is reported on stderr in one line and leaves no cache loaded.
void load_environment_tuning_cache();

// The built-in table (src/plan/tuned/builtin.json, compiled in): its caches, parsed once.
const std::vector<TuningCache>& builtin_tuning_caches();

}  // namespace anvil::detail
