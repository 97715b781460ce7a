// The launch-plan cache (src/host/plan_cache.h): keys that tell problems apart, typed
// storage, least-recently-used eviction, and many threads finding and inserting at once
// (this binary is also what CI runs under ThreadSanitizer).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "anvil/gemm.h"
#include "host/plan_cache.h"

namespace anvil::detail {
namespace {

alignas(256) unsigned char g_fake_memory[8192];
void* fake(size_t byte_offset) { return g_fake_memory + byte_offset; }

GemmArgs some_args() {
  GemmArgs args;
  args.a = fake(0);
  args.b = fake(1024);
  args.c = fake(2048);
  args.d = fake(3072);
  args.bias = fake(4096);
  args.workspace = fake(5120);
  args.workspace_bytes = 1024;
  return args;
}

// Built by hand: this binary links only the cache, not the library's linear_desc.
GemmDesc some_desc() {
  GemmDesc d;
  d.m = 4096;
  d.n = 8192;
  d.k = 1024;
  d.a = MatrixLayout{DataType::kBF16, Order::kRowMajor, 1024, 0};
  d.b = MatrixLayout{DataType::kBF16, Order::kColMajor, 1024, 0};
  d.c = MatrixLayout{DataType::kBF16, Order::kRowMajor, 8192, 0};
  d.d = d.c;
  return d;
}

PlanKey key_for(int64_t m) {
  GemmDesc desc = some_desc();
  desc.m = m;
  return make_plan_key(0, "sm90-gemm", desc, some_args());
}

// A plan whose every byte depends on its id, so a torn or misfiled copy shows.
struct FakePlan {
  uint64_t id;
  unsigned char body[600];
  uint64_t id_again;

  static FakePlan make(uint64_t id) {
    FakePlan p;
    p.id = id;
    for (size_t i = 0; i < sizeof(p.body); ++i) p.body[i] = static_cast<unsigned char>(id * 31 + i);
    p.id_again = ~id;
    return p;
  }
  bool consistent_with(uint64_t expected_id) const {
    const FakePlan expected = make(expected_id);
    return std::memcmp(this, &expected, sizeof(*this)) == 0;
  }
};

TEST(PlanKey, SameProblemSameKey) {
  const PlanKey x = make_plan_key(0, "sm90-gemm", some_desc(), some_args());
  const PlanKey y = make_plan_key(0, "sm90-gemm", some_desc(), some_args());
  EXPECT_TRUE(x == y);
  EXPECT_EQ(x.hash, y.hash);
}

// Each operand's own fields, one at a time: a key built from another operand's ld (or
// from one shared field) would pass the test above for the operand it does read.
TEST(PlanKey, EachOperandsFieldsChangeTheKeyAlone) {
  const PlanKey base = make_plan_key(0, "sm90-gemm", some_desc(), some_args());
  MatrixLayout GemmDesc::*const operands[] = {&GemmDesc::a, &GemmDesc::b, &GemmDesc::c, &GemmDesc::d};
  const void* GemmArgs::*const pointers[] = {&GemmArgs::a, &GemmArgs::b, &GemmArgs::c};
  const char* const names[] = {"a", "b", "c", "d"};
  std::vector<std::pair<std::string, PlanKey>> variants;
  for (int i = 0; i < 4; ++i) {
    auto with_layout = [&](const char* field, auto change) {
      GemmDesc desc = some_desc();
      change(desc.*operands[i]);
      variants.emplace_back(std::string(names[i]) + " " + field, make_plan_key(0, "sm90-gemm", desc, some_args()));
    };
    with_layout("dtype", [](MatrixLayout& l) { l.dtype = l.dtype == DataType::kBF16 ? DataType::kF16 : DataType::kBF16; });
    with_layout("order", [](MatrixLayout& l) { l.order = l.order == Order::kRowMajor ? Order::kColMajor : Order::kRowMajor; });
    with_layout("ld", [](MatrixLayout& l) { l.ld += 8; });
    with_layout("batch stride", [](MatrixLayout& l) { l.batch_stride += 64; });
    GemmArgs args = some_args();
    if (i < 3) {
      args.*pointers[i] = static_cast<const unsigned char*>(args.*pointers[i]) + 16;
    } else {
      args.d = static_cast<unsigned char*>(args.d) + 16;
    }
    variants.emplace_back(std::string(names[i]) + " address", make_plan_key(0, "sm90-gemm", some_desc(), args));
  }
  for (size_t x = 0; x < variants.size(); ++x) {
    EXPECT_FALSE(variants[x].second == base) << variants[x].first;
    EXPECT_NE(variants[x].second.hash, base.hash) << variants[x].first;
    for (size_t y = x + 1; y < variants.size(); ++y) {
      EXPECT_FALSE(variants[x].second == variants[y].second) << variants[x].first << " vs " << variants[y].first;
    }
  }
}

TEST(PlanKey, EveryInputChangesTheKey) {
  const PlanKey base = make_plan_key(0, "sm90-gemm", some_desc(), some_args());
  std::vector<std::pair<std::string, PlanKey>> variants;
  auto with_desc = [&](const std::string& what, auto change) {
    GemmDesc desc = some_desc();
    change(desc);
    variants.emplace_back(what, make_plan_key(0, "sm90-gemm", desc, some_args()));
  };
  auto with_args = [&](const std::string& what, auto change) {
    GemmArgs args = some_args();
    change(args);
    variants.emplace_back(what, make_plan_key(0, "sm90-gemm", some_desc(), args));
  };
  variants.emplace_back("device", make_plan_key(1, "sm90-gemm", some_desc(), some_args()));
  variants.emplace_back("kernel", make_plan_key(0, "ladder-10-persistent", some_desc(), some_args()));
  with_desc("m", [](GemmDesc& d) { d.m += 1; });
  with_desc("n", [](GemmDesc& d) { d.n += 1; });
  with_desc("k", [](GemmDesc& d) { d.k += 8; });
  with_desc("batch", [](GemmDesc& d) { d.batch = 2; });
  with_desc("a dtype", [](GemmDesc& d) { d.a.dtype = DataType::kF16; });
  with_desc("b order", [](GemmDesc& d) { d.b.order = Order::kRowMajor; });
  with_desc("c ld", [](GemmDesc& d) { d.c.ld += 8; });
  with_desc("d batch stride", [](GemmDesc& d) { d.d.batch_stride = 1 << 20; });
  with_desc("alpha", [](GemmDesc& d) { d.alpha = 0.5f; });
  with_desc("beta", [](GemmDesc& d) { d.beta = 1.0f; });
  with_desc("activation", [](GemmDesc& d) { d.epilogue.activation = Activation::kGeluTanh; });
  with_desc("bias mode", [](GemmDesc& d) { d.epilogue.bias = BiasMode::kPerRow; });
  with_desc("bias dtype", [](GemmDesc& d) { d.epilogue.bias_dtype = DataType::kBF16; });
  with_desc("batch invariance", [](GemmDesc& d) { d.batch_invariant = true; });
  with_args("a pointer", [](GemmArgs& a) { a.a = fake(16); });
  with_args("b pointer", [](GemmArgs& a) { a.b = fake(1040); });
  with_args("c pointer", [](GemmArgs& a) { a.c = a.d; });
  with_args("d pointer", [](GemmArgs& a) { a.d = fake(3088); });
  with_args("bias pointer", [](GemmArgs& a) { a.bias = fake(4112); });
  with_args("workspace", [](GemmArgs& a) { a.workspace = fake(6144); });
  with_args("workspace bytes", [](GemmArgs& a) { a.workspace_bytes = 2048; });
  with_desc("scale mode", [](GemmDesc& d) { d.scales = ScaleMode::kTensor; });
  with_args("scale_a", [](GemmArgs& a) { a.scale_a = reinterpret_cast<const float*>(0x5000); });
  with_args("scale_b", [](GemmArgs& a) { a.scale_b = reinterpret_cast<const float*>(0x6000); });
  for (const auto& [what, key] : variants) {
    EXPECT_FALSE(key == base) << what;
    EXPECT_NE(key.hash, base.hash) << what;
  }
}

TEST(PlanKey, StreamAndKernelFieldAreNotPartOfIt) {
  GemmArgs on_stream = some_args();
  on_stream.stream = reinterpret_cast<cudaStream_t>(0x1234);
  GemmDesc named = some_desc();
  named.kernel = "sm90-gemm";  // the kernel comes in by name, whatever desc.kernel said
  EXPECT_TRUE(make_plan_key(0, "sm90-gemm", named, on_stream) == make_plan_key(0, "sm90-gemm", some_desc(), some_args()));
}

TEST(PlanKey, LongKernelNamesAreTruncatedNotOverrun) {
  const std::string long_name(200, 'x');
  const PlanKey key = make_plan_key(0, long_name.c_str(), some_desc(), some_args());
  EXPECT_EQ(std::string(key.kernel), std::string(PlanKey::kMaxKernelName - 1, 'x'));
  const PlanKey unnamed = make_plan_key(0, nullptr, some_desc(), some_args());
  EXPECT_EQ(unnamed.kernel[0], '\0');
}

TEST(PlanCache, MissThenHit) {
  PlanCache cache(8);
  FakePlan plan{};
  EXPECT_FALSE(cache.find(key_for(1), &plan));
  cache.insert(key_for(1), FakePlan::make(1));
  ASSERT_TRUE(cache.find(key_for(1), &plan));
  EXPECT_TRUE(plan.consistent_with(1));
  EXPECT_FALSE(cache.find(key_for(2), &plan));
  const PlanCache::Stats s = cache.stats();
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.misses, 2u);
  EXPECT_EQ(s.insertions, 1u);
  EXPECT_EQ(s.size, 1u);
}

TEST(PlanCache, InsertReplacesThePlanOfAKnownKey) {
  PlanCache cache(8);
  cache.insert(key_for(1), FakePlan::make(1));
  cache.insert(key_for(1), FakePlan::make(7));
  FakePlan plan{};
  ASSERT_TRUE(cache.find(key_for(1), &plan));
  EXPECT_TRUE(plan.consistent_with(7));
  EXPECT_EQ(cache.stats().size, 1u);
  EXPECT_EQ(cache.stats().insertions, 1u);
}

TEST(PlanCache, APlanIsNotReadBackAsAnotherType) {
  PlanCache cache(8);
  cache.insert(key_for(1), FakePlan::make(1));
  uint64_t wrong = 0;
  EXPECT_FALSE(cache.find(key_for(1), &wrong));
  PlanBlob blob;
  ASSERT_TRUE(cache.find(key_for(1), &blob));
  EXPECT_EQ(blob.size, sizeof(FakePlan));
}

TEST(PlanCache, EvictsTheLeastRecentlyUsedPlanWhenFull) {
  PlanCache cache(4);
  for (int64_t m = 1; m <= 4; ++m) cache.insert(key_for(m), FakePlan::make(uint64_t(m)));
  FakePlan plan{};
  ASSERT_TRUE(cache.find(key_for(1), &plan));  // 2 is now the least recently used
  cache.insert(key_for(5), FakePlan::make(5));
  EXPECT_EQ(cache.stats().size, 4u);
  EXPECT_EQ(cache.stats().evictions, 1u);
  EXPECT_FALSE(cache.find(key_for(2), &plan));
  for (int64_t m : {1, 3, 4, 5}) {
    ASSERT_TRUE(cache.find(key_for(m), &plan)) << m;
    EXPECT_TRUE(plan.consistent_with(uint64_t(m))) << m;
  }
}

TEST(PlanCache, ClearEmptiesIt) {
  PlanCache cache(4);
  cache.insert(key_for(1), FakePlan::make(1));
  cache.clear();
  FakePlan plan{};
  EXPECT_FALSE(cache.find(key_for(1), &plan));
  EXPECT_EQ(cache.stats().size, 0u);
}

TEST(PlanCache, GlobalIsBounded) {
  EXPECT_EQ(PlanCache::global().capacity(), PlanCache::kDefaultCapacity);
}

// Eight threads over more keys than the cache holds, so that finds race with inserts and
// evictions of the same and neighbouring entries. Every plan found must be whole and be
// the one filed under its key.
TEST(PlanCache, EightThreadsFindAndInsertConcurrently) {
  constexpr int kThreads = 8;
  constexpr int kKeys = 96;
  constexpr int kIterations = 20000;
  PlanCache cache(32);
  std::vector<PlanKey> keys;
  for (int i = 0; i < kKeys; ++i) keys.push_back(key_for(1000 + i));

  std::atomic<int64_t> finds{0}, torn{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      uint64_t state = 0x9E3779B97F4A7C15ull * uint64_t(t + 1);
      for (int i = 0; i < kIterations; ++i) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        // Half the traffic on eight hot keys, the rest spread: hits and evictions both.
        const int index = (state >> 33) % 2 == 0 ? int((state >> 40) % 8) : int((state >> 40) % kKeys);
        FakePlan plan;
        finds.fetch_add(1, std::memory_order_relaxed);
        if (cache.find(keys[size_t(index)], &plan)) {
          if (!plan.consistent_with(uint64_t(index))) torn.fetch_add(1, std::memory_order_relaxed);
        } else {
          cache.insert(keys[size_t(index)], FakePlan::make(uint64_t(index)));
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();

  EXPECT_EQ(torn.load(), 0) << "a plan came back torn or under the wrong key";
  const PlanCache::Stats s = cache.stats();
  EXPECT_EQ(int64_t(s.hits + s.misses), finds.load());
  EXPECT_LE(s.size, cache.capacity());
  EXPECT_GT(s.hits, 0u);
  EXPECT_GT(s.evictions, 0u);
  EXPECT_EQ(s.insertions - s.evictions, s.size);
}

}  // namespace
}  // namespace anvil::detail
