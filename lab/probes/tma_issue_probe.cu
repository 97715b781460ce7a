// anvil-tma-issue-probe: what limits how fast one thread can issue TMA copies that each
// complete on a different mbarrier? The stream probe (stream_probe.cu) found that a CTA's
// one producer thread issues the copy of stage i + 1 only ~300 cycles after stage i has
// landed, while boxes completing on the same barrier go out ~130 cycles apart. This probe
// changes one thing at a time in the producer loop and prints, for one CTA alone, when each
// of its first stages was issued and when it landed, and for 128 CTAs the streaming rate.
//
//   anvil-tma-issue-probe [--json FILE]
//
// The weight: 8192 x 8192 bf16 (two copies alternate, 256 MiB, so L2 never holds it);
// CTA c streams rows [64 c, 64 c + 64) over all of K in 64 x 64 boxes (8 KiB, 128-byte
// swizzle), 16-stage ring, a consumer thread that frees each stage once it lands. Every
// variant runs on a constant weight, then the base loop and four producers again on
// hashed data, as anvil-stream-probe's weight holds.
// Measured (docs/notes/tma-ring-rate.md): on an H100 no variant waits for the previous
// stage's landing; whether the H200 does is the open question this probe is for.
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "arch/sm90/mbarrier.cuh"
#include "arch/sm90/tma.cuh"
#include "probe_check.h"

namespace {

constexpr int kRows = 8192, kCols = 8192, kBoxRows = 64, kBoxCols = 64;
constexpr int kStageBytes = kBoxRows * kBoxCols * 2;
constexpr int kStages = 16;
constexpr int kKBlocks = kCols / kBoxCols;  // 128 stages per CTA
constexpr int kTimeline = 32;

enum Variant : int {
  kBase = 0,          // thread 0: wait empty, arrive.expect_tx, copy
  kCopyThenArrive,    // thread 0: wait empty, copy, arrive.expect_tx (cuBLAS's order)
  kElectedWarp,       // warp 0 converged, elect.sync picks the issuing lane every stage
  kGroupBarrier4,     // four consecutive stages complete on one barrier (announced together)
  kGlobalDescriptor,  // the tensor map read from global memory instead of the kernel parameter
  kTwoBoxes,          // each stage as two 32-row boxes
  kUnrolled4,         // four stages per loop turn, written out (distinct registers per copy)
  kFourProducers,     // lane 0 of warps 0, 2, 3, 4 each issue every fourth stage
  kNoPrefetch,        // base without prefetch.tensormap
  kNoPrefetchCold,    // the same, and its one-CTA timeline from a launch with no launch before it
  kVariants
};
const char* kNames[kVariants] = {"base",           "copy then arrive", "elected warp", "one barrier per 4 stages",
                                 "global descriptor", "two 32-row boxes", "unrolled by 4", "four producer warps",
                                 "no descriptor prefetch", "no prefetch, first launch"};

__device__ __forceinline__ bool elect_one() {
  uint32_t pred;
  asm volatile(
      "{\n.reg .pred p;\n.reg .b32 r;\n"
      "elect.sync r|p, 0xffffffff;\n"
      "selp.b32 %0, 1, 0, p;\n}\n"
      : "=r"(pred));
  return pred != 0;
}

template <int V>
__global__ void __launch_bounds__(160) probe_kernel(const __grid_constant__ CUtensorMap map_param,
                                                   const CUtensorMap* map_global, int row_offset,
                                                   long long* timeline) {
  using namespace anvil::sm90;
  extern __shared__ uint8_t smem_raw[];
  uint8_t* ring = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t{1023});
  uint64_t* full = reinterpret_cast<uint64_t*>(ring + kStages * kStageBytes);
  uint64_t* empty = full + kStages;
  const CUtensorMap* map = V == kGlobalDescriptor ? map_global : &map_param;
  constexpr int kGroup = V == kGroupBarrier4 ? 4 : 1;  // stages per full barrier
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      mbarrier_init(&full[s], 1);
      mbarrier_init(&empty[s], 1);
    }
    fence_barrier_init();
    if (V != kNoPrefetch && V != kNoPrefetchCold) tma_prefetch_descriptor(map);
  }
  __syncthreads();
  const int row0 = row_offset + blockIdx.x * kBoxRows;
  long long* tl = blockIdx.x == 0 ? timeline : nullptr;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  auto issue = [&](int i) {
    const int slot = i % kStages;
    uint64_t* bar = &full[(slot / kGroup) * kGroup];
    uint8_t* dst = ring + slot * kStageBytes;
    const bool arms = i % kGroup == 0;
    if (tl != nullptr && i < kTimeline) tl[i] = clock64();
    if (V == kCopyThenArrive) {
      tma_load_2d(dst, map, bar, i * kBoxCols, row0);
      mbarrier_arrive_expect_tx(bar, kStageBytes);
    } else if (V == kTwoBoxes) {
      mbarrier_arrive_expect_tx(bar, kStageBytes);
      tma_load_2d(dst, map, bar, i * kBoxCols, row0);  // the half map: 32 rows a box
      tma_load_2d(dst + kStageBytes / 2, map, bar, i * kBoxCols, row0 + kBoxRows / 2);
    } else {
      if (arms) mbarrier_arrive_expect_tx(bar, kStageBytes * kGroup);
      tma_load_2d(dst, map, bar, i * kBoxCols, row0);
    }
  };
  auto wait_free = [&](int i) { mbarrier_wait(&empty[i % kStages], ((i / kStages) & 1) ^ 1); };
  if (V == kElectedWarp) {
    if (warp == 0) {
      for (int i = 0; i < kKBlocks; ++i) {
        wait_free(i);
        if (elect_one()) issue(i);
        __syncwarp();
      }
    }
  } else if (V == kFourProducers) {
    const int producer = lane != 0 || warp == 1 ? -1 : warp == 0 ? 0 : warp - 1;
    if (producer >= 0) {
      for (int i = producer; i < kKBlocks; i += 4) {
        wait_free(i);
        issue(i);
      }
    }
  } else if (V == kUnrolled4) {
    if (threadIdx.x == 0) {
      for (int i = 0; i < kKBlocks; i += 4) {
        wait_free(i);
        wait_free(i + 1);
        wait_free(i + 2);
        wait_free(i + 3);
#pragma unroll
        for (int j = 0; j < 4; ++j) issue(i + j);
      }
    }
  } else if (V == kGroupBarrier4) {
    if (threadIdx.x == 0) {
      for (int i = 0; i < kKBlocks; ++i) {
        if (i % 4 == 0) {
          for (int j = i; j < i + 4; ++j) wait_free(j);
        }
        issue(i);
      }
    }
  } else {
    if (threadIdx.x == 0) {
      for (int i = 0; i < kKBlocks; ++i) {
        wait_free(i);
        issue(i);
      }
    }
  }
  if (threadIdx.x == 32) {
    // The consumer: stage i has landed once its barrier's phase completes.
    for (int i = 0; i < kKBlocks; ++i) {
      const int slot = i % kStages;
      const int group_bar = (slot / kGroup) * kGroup;
      if (slot % kGroup == 0) mbarrier_wait(&full[group_bar], (i / kStages) & 1);
      if (tl != nullptr && i < kTimeline) tl[kTimeline + i] = clock64();
      mbarrier_arrive(&empty[slot]);
    }
  }
}

// Hashed 32-bit words: data that differs from line to line, as a weight does.
__global__ void fill_random(uint32_t* data, int64_t words) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < words; i += int64_t{gridDim.x} * blockDim.x) {
    uint32_t h = static_cast<uint32_t>(i) * 2654435761u;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    data[i] = h;
  }
}

using Encode = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                            const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                            CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

CUtensorMap make_map(void* base, uint64_t rows, int box_rows) {
  static Encode encode = nullptr;
  if (encode == nullptr) {
    cudaDriverEntryPointQueryResult q;
    CHECK_CUDA(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", reinterpret_cast<void**>(&encode), 12000,
                                                cudaEnableDefault, &q));
    if (q != cudaDriverEntryPointSuccess || encode == nullptr) {
      std::fprintf(stderr, "cuTensorMapEncodeTiled not found\n");
      std::exit(1);
    }
  }
  CUtensorMap map;
  const cuuint64_t dims[2] = {kCols, rows};
  const cuuint64_t strides[1] = {kCols * 2};
  const cuuint32_t box[2] = {kBoxCols, static_cast<cuuint32_t>(box_rows)};
  const cuuint32_t elem[2] = {1, 1};
  CUresult r = encode(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, base, dims, strides, box, elem,
                      CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    std::fprintf(stderr, "encode failed %d\n", static_cast<int>(r));
    std::exit(1);
  }
  return map;
}

template <int V>
void launch(const CUtensorMap& map, const CUtensorMap* gmap, int ctas, int row_offset, long long* tl) {
  const int smem = kStages * kStageBytes + 1024 + 2 * kStages * 8;
  CHECK_CUDA(cudaFuncSetAttribute(probe_kernel<V>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  probe_kernel<V><<<ctas, 160, smem>>>(map, gmap, row_offset, tl);
  CHECK_CUDA(cudaGetLastError());
}

using LaunchFn = void (*)(const CUtensorMap&, const CUtensorMap*, int, int, long long*);
const LaunchFn kLaunch[kVariants] = {launch<0>, launch<1>, launch<2>, launch<3>, launch<4>,
                                     launch<5>, launch<6>, launch<7>, launch<8>, launch<9>};

}  // namespace

int main(int argc, char** argv) {
  const char* json_path = nullptr;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--json" && i + 1 < argc) json_path = argv[++i];
  }
  // Two copies of the weight, one after the other: rows [0, 8192) and [8192, 16384).
  void* weight = nullptr;
  const size_t bytes = size_t{2} * kRows * kCols * 2;
  CHECK_CUDA(cudaMalloc(&weight, bytes));
  CHECK_CUDA(cudaMemset(weight, 0x3c, bytes));
  const CUtensorMap map = make_map(weight, 2 * kRows, kBoxRows);
  const CUtensorMap map_half = make_map(weight, 2 * kRows, kBoxRows / 2);
  CUtensorMap* gmap = nullptr;
  CHECK_CUDA(cudaMalloc(&gmap, sizeof(CUtensorMap)));
  CHECK_CUDA(cudaMemcpy(gmap, &map, sizeof(CUtensorMap), cudaMemcpyHostToDevice));
  long long* tl = nullptr;
  CHECK_CUDA(cudaMalloc(&tl, 2 * kTimeline * sizeof(long long)));
  cudaEvent_t e0, e1;
  CHECK_CUDA(cudaEventCreate(&e0));
  CHECK_CUDA(cudaEventCreate(&e1));
  FILE* js = json_path ? std::fopen(json_path, "w") : nullptr;
  if (js) std::fprintf(js, "{\"tool\": \"anvil-tma-issue-probe\", \"variants\": [\n");
  // Every variant on a constant weight, then the base and four producers again on hashed
  // data (whether what the weight holds changes the rate).
  std::vector<int> order;
  for (int v = 0; v < kVariants; ++v) order.push_back(v);
  order.push_back(-1);  // the switch to hashed data
  order.push_back(kBase);
  order.push_back(kFourProducers);
  bool hashed = false;
  for (size_t o = 0; o < order.size(); ++o) {
    const int v = order[o];
    if (v < 0) {
      fill_random<<<1024, 256>>>(static_cast<uint32_t*>(weight), static_cast<int64_t>(bytes / 4));
      CHECK_CUDA(cudaGetLastError());
      CHECK_CUDA(cudaDeviceSynchronize());
      hashed = true;
      continue;
    }
    // kTwoBoxes copies each stage as two boxes of the 32-row map.
    const CUtensorMap& m = v == kTwoBoxes ? map_half : map;
    // One CTA alone: its timeline (warm the descriptor and the code first).
    CHECK_CUDA(cudaMemset(tl, 0xff, 2 * kTimeline * sizeof(long long)));
    if (v != kNoPrefetchCold) kLaunch[v](m, gmap, 1, 0, tl);
    kLaunch[v](m, gmap, 1, kRows, tl);
    CHECK_CUDA(cudaDeviceSynchronize());
    std::vector<long long> t(2 * kTimeline);
    CHECK_CUDA(cudaMemcpy(t.data(), tl, t.size() * sizeof(long long), cudaMemcpyDeviceToHost));
    const long long t0 = t[0];
    // 128 CTAs stream the whole weight: median of 5 timings of 10 launches each.
    std::vector<float> ms;
    for (int rep = 0; rep < 5; ++rep) {
      CHECK_CUDA(cudaEventRecord(e0));
      for (int it = 0; it < 10; ++it) kLaunch[v](m, gmap, kRows / kBoxRows, (it % 2) * kRows, nullptr);
      CHECK_CUDA(cudaEventRecord(e1));
      CHECK_CUDA(cudaEventSynchronize(e1));
      float x;
      CHECK_CUDA(cudaEventElapsedTime(&x, e0, e1));
      ms.push_back(x / 10);
    }
    std::sort(ms.begin(), ms.end());
    const double us = ms[2] * 1e3;
    const double tbps = double(kRows) * kCols * 2 / (us * 1e-6) / 1e12;
    // One CTA: mean issue spacing over stages 1..15 and landing of stage 15.
    const std::string name = std::string(kNames[v]) + (hashed ? ", hashed data" : "");
    std::printf("%-38s 128 CTAs %7.1f us %5.2f TB/s | one CTA: issue", name.c_str(), us, tbps);
    for (int i = 0; i < 8; ++i) std::printf(" %6lld", t[i] - t0);
    std::printf(" | land");
    for (int i = 0; i < 8; ++i) std::printf(" %6lld", t[kTimeline + i] - t0);
    std::printf(" | stage 31 issued %lld landed %lld\n", t[31] - t0, t[kTimeline + 31] - t0);
    if (js) {
      std::fprintf(js, "%s  {\"name\": \"%s\", \"us_128_ctas\": %.2f, \"tbps_128_ctas\": %.3f, \"issue\": [", o ? ",\n" : "",
                   name.c_str(), us, tbps);
      for (int i = 0; i < kTimeline; ++i) std::fprintf(js, "%s%lld", i ? ", " : "", t[i] - t0);
      std::fprintf(js, "], \"land\": [");
      for (int i = 0; i < kTimeline; ++i) std::fprintf(js, "%s%lld", i ? ", " : "", t[kTimeline + i] - t0);
      std::fprintf(js, "]}");
    }
  }
  if (js) {
    std::fprintf(js, "\n]}\n");
    std::fclose(js);
  }
  int dev = 0;
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, dev));
  std::printf("device: %s\n", prop.name);
  return 0;
}
