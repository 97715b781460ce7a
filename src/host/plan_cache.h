// A process-wide cache of launch plans: what a kernel's host code derives from a problem
// before launching it (tensor maps, the parameter block, grid choices), keyed by everything
// that derivation depends on. Building three tensor maps costs microseconds of driver
// calls per launch; a lookup here costs a hash and a copy of about 1 KiB under a shared lock.
//
// Safe to use from any number of host threads: lookups share a reader lock, inserts and
// evictions take the writer lock. Bounded: past its capacity the least recently used plan
// is dropped, so a process that sees endless distinct pointers stays small.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <shared_mutex>
#include <type_traits>
#include <unordered_map>

#include <cuda_runtime.h>

#include "anvil/gemm.h"
#include "host/registry.h"

namespace anvil::detail {

// Everything a plan may depend on, flattened into plain integers so that two keys are
// equal exactly when their bytes are. Build it with make_plan_key, which zeroes padding.
struct PlanKey {
  static constexpr size_t kMaxKernelName = 64;

  struct Operand {
    int32_t dtype, order;
    int64_t ld, batch_stride;
    uint64_t address;
  };

  uint64_t hash;  // of every field below; set by make_plan_key
  char kernel[kMaxKernelName];  // the kernel's registry name, truncated and zero-padded
  int64_t m, n, k, batch;
  Operand a, b, c, d;
  uint32_t alpha_bits, beta_bits;
  int32_t activation, bias_mode, bias_dtype;
  int32_t device;
  int32_t batch_invariant;
  int32_t scale_mode;  // FP8 scales (also keeps the next field aligned without padding)
  uint64_t bias_address;
  uint64_t workspace_address;  // repacked operands live in the workspace
  uint64_t workspace_bytes;
  uint64_t scale_a_address, scale_b_address;  // the FP8 kernel's parameters hold them

  bool operator==(const PlanKey& other) const { return std::memcmp(this, &other, sizeof(PlanKey)) == 0; }
};
static_assert(std::has_unique_object_representations_v<PlanKey>,
              "PlanKey is compared bytewise and must have no padding");

// The stream is deliberately not part of the key: a plan describes the problem, not
// where it is enqueued.
PlanKey make_plan_key(int device, const char* kernel_name, const GemmDesc& desc, const GemmArgs& args);

// Storage for one plan: any trivially copyable type up to kCapacity bytes. The stored
// size is checked on read, so a plan is never read back as a different type's bytes.
struct PlanBlob {
  static constexpr size_t kCapacity = 1280;  // up to five 128-byte CUtensorMaps and parameters

  template <class Plan>
  static constexpr bool fits = std::is_trivially_copyable_v<Plan> && sizeof(Plan) <= kCapacity;

  template <class Plan>
  void store(const Plan& plan) {
    static_assert(fits<Plan>, "a plan must be trivially copyable and at most 1.25 KiB");
    size = sizeof(Plan);
    std::memcpy(bytes, &plan, sizeof(Plan));
  }
  template <class Plan>
  bool load(Plan* plan) const {
    static_assert(fits<Plan>, "a plan must be trivially copyable and at most 1.25 KiB");
    if (size != sizeof(Plan)) return false;
    std::memcpy(plan, bytes, sizeof(Plan));
    return true;
  }

  uint32_t size = 0;
  unsigned char bytes[kCapacity];
};

class PlanCache {
 public:
  static constexpr size_t kDefaultCapacity = 256;

  struct Stats {
    uint64_t hits, misses, insertions, evictions;
    size_t size;
  };

  explicit PlanCache(size_t capacity = kDefaultCapacity);
  PlanCache(const PlanCache&) = delete;
  PlanCache& operator=(const PlanCache&) = delete;

  // The cache the kernels share.
  static PlanCache& global();

  // Copies the plan stored under key into *blob; false when there is none.
  bool find(const PlanKey& key, PlanBlob* blob);
  // Stores (or replaces) the plan for key, evicting the least recently used one when full.
  void insert(const PlanKey& key, const PlanBlob& blob);

  // Typed convenience: false also when the stored plan has another size than Plan.
  template <class Plan>
  bool find(const PlanKey& key, Plan* plan) {
    PlanBlob blob;
    return find(key, &blob) && blob.load(plan);
  }
  template <class Plan>
  void insert(const PlanKey& key, const Plan& plan) {
    PlanBlob blob;
    blob.store(plan);
    insert(key, blob);
  }

  void clear();
  size_t capacity() const { return capacity_; }
  Stats stats() const;

 private:
  struct KeyHash {
    size_t operator()(const PlanKey& key) const { return static_cast<size_t>(key.hash); }
  };
  struct Entry {
    PlanBlob blob;
    // Written under the shared lock by concurrent readers, hence atomic; read for
    // eviction under the exclusive lock.
    std::atomic<uint64_t> last_use{0};
  };

  void evict_least_recently_used();

  const size_t capacity_;
  mutable std::shared_mutex mutex_;
  std::unordered_map<PlanKey, Entry, KeyHash> entries_;
  std::atomic<uint64_t> clock_{0};
  std::atomic<uint64_t> hits_{0}, misses_{0}, insertions_{0}, evictions_{0};
};

// The launch plan of `plan_name` (a kernel configuration) for this problem on the current
// device: from the global cache, or made by build(Plan*) -> Status and then cached. Every
// per-problem host cost of a launch (tensor maps, occupancy queries, function attributes)
// belongs in build, so that repeated calls pay only the lookup.
template <class Plan, class Build>
Status find_or_build_plan(const char* plan_name, const GemmDesc& desc, const GemmArgs& args, Plan* plan,
                          Diagnostic* diag, Build build) {
  static_assert(PlanBlob::fits<Plan>, "a cached plan must be trivially copyable and at most 1.25 KiB");
  // A name cut short could let two configurations share plans.
  if (std::strlen(plan_name) >= PlanKey::kMaxKernelName) {
    return fail(diag, Status::kInternalError, "plan name too long for the cache key: %s", plan_name);
  }
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) {
    cudaGetLastError();
    return fail(diag, Status::kCudaError, "%s: cudaGetDevice failed", plan_name);
  }
  const PlanKey key = make_plan_key(device, plan_name, desc, args);
  if (PlanCache::global().find(key, plan)) return Status::kSuccess;
  const Status s = build(plan);
  if (s == Status::kSuccess) PlanCache::global().insert(key, *plan);
  return s;
}

}  // namespace anvil::detail
