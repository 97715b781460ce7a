#include "host/plan_cache.h"

#include <limits>
#include <mutex>

namespace anvil::detail {
namespace {

uint64_t mix64(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Word-at-a-time: the key is a multiple of 8 bytes, and a launch hashes one per call.
uint64_t hash_words(const void* data, size_t bytes) {
  static_assert(sizeof(PlanKey) % sizeof(uint64_t) == 0);
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t h = 0x9E3779B97F4A7C15ull ^ bytes;
  for (size_t offset = 0; offset < bytes; offset += sizeof(uint64_t)) {
    uint64_t word;
    std::memcpy(&word, p + offset, sizeof(word));
    h = mix64(h ^ word) + 0x9E3779B97F4A7C15ull;
  }
  return h;
}

uint32_t float_bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

uint64_t address_of(const void* p) { return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p)); }

PlanKey::Operand operand(const MatrixLayout& layout, const void* address) {
  PlanKey::Operand o{};
  o.dtype = static_cast<int32_t>(layout.dtype);
  o.order = static_cast<int32_t>(layout.order);
  o.ld = layout.ld;
  o.batch_stride = layout.batch_stride;
  o.address = address_of(address);
  return o;
}

}  // namespace

PlanKey make_plan_key(int device, const char* kernel_name, const GemmDesc& desc, const GemmArgs& args) {
  PlanKey key;
  std::memset(&key, 0, sizeof(key));  // padding-free by static_assert, but names are zero-padded
  if (kernel_name != nullptr) {
    for (size_t i = 0; i + 1 < PlanKey::kMaxKernelName && kernel_name[i] != '\0'; ++i) key.kernel[i] = kernel_name[i];
  }
  key.device = device;
  key.m = desc.m;
  key.n = desc.n;
  key.k = desc.k;
  key.batch = desc.batch;
  key.a = operand(desc.a, args.a);
  key.b = operand(desc.b, args.b);
  key.c = operand(desc.c, args.c);
  key.d = operand(desc.d, args.d);
  key.alpha_bits = float_bits(desc.alpha);
  key.beta_bits = float_bits(desc.beta);
  key.activation = static_cast<int32_t>(desc.epilogue.activation);
  key.bias_mode = static_cast<int32_t>(desc.epilogue.bias);
  key.bias_dtype = static_cast<int32_t>(desc.epilogue.bias_dtype);
  key.batch_invariant = desc.batch_invariant ? 1 : 0;
  key.bias_address = address_of(args.bias);
  key.workspace_address = address_of(args.workspace);
  key.workspace_bytes = args.workspace_bytes;
  key.scale_mode = static_cast<int32_t>(desc.scales);
  key.scale_a_address = address_of(args.scale_a);
  key.scale_b_address = address_of(args.scale_b);
  key.hash = hash_words(reinterpret_cast<const unsigned char*>(&key) + sizeof(key.hash), sizeof(key) - sizeof(key.hash));
  return key;
}

PlanCache::PlanCache(size_t capacity) : capacity_(capacity > 0 ? capacity : 1) { entries_.reserve(capacity_); }

PlanCache& PlanCache::global() {
  // Never destroyed: kernels may launch from static destructors of other translation units.
  static PlanCache* cache = new PlanCache(kDefaultCapacity);
  return *cache;
}

bool PlanCache::find(const PlanKey& key, PlanBlob* blob) {
  std::shared_lock lock(mutex_);
  const auto it = entries_.find(key);
  if (it == entries_.end()) {
    misses_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  it->second.last_use.store(clock_.fetch_add(1, std::memory_order_relaxed), std::memory_order_relaxed);
  *blob = it->second.blob;
  hits_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void PlanCache::insert(const PlanKey& key, const PlanBlob& blob) {
  std::unique_lock lock(mutex_);
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    if (entries_.size() >= capacity_) evict_least_recently_used();
    it = entries_.try_emplace(key).first;
    insertions_.fetch_add(1, std::memory_order_relaxed);
  }
  it->second.blob = blob;
  it->second.last_use.store(clock_.fetch_add(1, std::memory_order_relaxed), std::memory_order_relaxed);
}

// A linear scan: inserts happen once per new problem, and 256 entries scan in well under
// the time of the tensor-map encoding the insert follows.
void PlanCache::evict_least_recently_used() {
  auto oldest = entries_.end();
  uint64_t oldest_use = std::numeric_limits<uint64_t>::max();
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    const uint64_t use = it->second.last_use.load(std::memory_order_relaxed);
    if (use < oldest_use) {
      oldest_use = use;
      oldest = it;
    }
  }
  if (oldest != entries_.end()) {
    entries_.erase(oldest);
    evictions_.fetch_add(1, std::memory_order_relaxed);
  }
}

void PlanCache::clear() {
  std::unique_lock lock(mutex_);
  entries_.clear();
}

PlanCache::Stats PlanCache::stats() const {
  std::shared_lock lock(mutex_);
  return Stats{hits_.load(std::memory_order_relaxed), misses_.load(std::memory_order_relaxed),
               insertions_.load(std::memory_order_relaxed), evictions_.load(std::memory_order_relaxed),
               entries_.size()};
}

}  // namespace anvil::detail
