// anvil-stream-probe: how fast can a weight matrix be streamed into shared memory, as a
// function of how the CTAs cut it? The decode kernel's question in isolation: no math, a
// producer thread filling a stage ring with TMA copies and a consumer thread releasing
// the stages as they land. Each pattern streams a 8192 x 8192 bf16 matrix (128 MiB; two
// copies alternate so L2 never holds the input) and reports time per pass and bandwidth.
//
//   anvil-stream-probe [--json FILE] [--only SUBSTRING] [--timeline]
//
// --only runs the patterns whose name holds SUBSTRING; --timeline also stamps one launch
// of each TMA pattern: when each of the first CTAs' first stages was issued and landed
// (SM cycles), printed for CTA 0 and written to the JSON.
//
// Pattern knobs: rows of the weight per CTA (the TMA box height), 64-column boxes per
// stage (how many contiguous 128-byte pieces of a row one stage holds), K splits, ring
// depth, how many stages the producer frees before issuing them together, and an optional
// token tile (X rows) re-read from L2 with every stage, as the decode kernel does.
// Also: where each CTA starts its K range, L2 promotion, clusters, spinning waits, 3-D
// boxes spanning several K blocks, K blocks visited out of order, a stage's rows as several
// shorter boxes, an L2 evict-first hint, a second producer thread, the consumer announcing
// each stage's bytes instead of the producer, each row of a box as its own 128-byte bulk
// copy, the barriers on separate 128-byte lines. "bulk" patterns copy contiguous 16 KiB
// runs instead (cp.async.bulk, no tensor map): the sequential-read ceiling; "ldg" patterns
// read the same cut with 16-byte loads from every thread (the SM's load path, no TMA).
//
// What it found (docs/notes/tma-ring-rate.md): in this probe's loop a TMA-fed CTA completes
// about one stage per ~0.55 us whatever the ring depth, until DRAM saturates, its producer
// thread's copy to one stage's barrier waiting for its copy to the previous stage's (more
// producer warps issue proportionally more); the load path has no such limit once enough
// requests are in flight. anvil-tma-issue-probe's plain producer loop issues its stages
// ~160 cycles apart on the H200 and an H100: the wait belongs to this loop, not the card.
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "arch/sm90/bulk_copy.cuh"
#include "arch/sm90/mbarrier.cuh"
#include "arch/sm90/tma.cuh"
#include "host/tensor_map.h"
#include "json.h"
#include "system_info.h"
#include "verify/device_probe.h"
#include "probe_check.h"

namespace {

constexpr int kRows = 8192, kCols = 8192;  // the weight: 8192 x 8192 bf16
constexpr int kBoxCols = 64;                // 128 bytes: the 128-byte swizzle's width
constexpr int kBoxesPerRow = kCols / kBoxCols;
constexpr int kBulkBytes = 16384;

struct Pattern {
  const char* name;
  int rows_per_cta;     // box height; 0 for bulk patterns
  int boxes_per_stage;  // contiguous 128-byte pieces of each row per stage
  int splits;           // K splits (CTAs per row block)
  int stages;
  int issue_group;      // stages freed before the producer issues them together
  int token_rows;       // X rows re-read with every box (0: none)
  int bulk_ctas;        // > 0: contiguous cp.async.bulk streaming with this many CTAs
  int rotation = 0;     // kRotate*: where each CTA starts its K range
  bool flat = false;    // the matrix viewed as 64-column lines: each 128-line box is contiguous
  CUtensorMapL2promotion promotion = CU_TENSOR_MAP_L2_PROMOTION_L2_256B;  // anvil's default
  bool spin = false;    // wait with test_wait in a loop instead of the suspending try_wait
  // > 1: one 3-D box spans this many 64-column blocks of K (the matrix viewed as
  // (64 columns, rows, K / 64 blocks 128 bytes apart)), landing as that many consecutive
  // swizzled [rows][128 B] tiles - the layout wgmma reads.
  int box_kblocks = 1;
  int cluster_rows = 1;  // > 1: clusters of this many neighbouring row blocks (placement only)
  // > 0: no TMA - this many threads per CTA read the same cut with 16-byte ld.global
  // (the SM's load path, as a cp.async or register producer would use).
  int ldg_threads = 0;
  // Consecutive stages' K blocks: in order, or stepping by kPermuteStride blocks (mod the
  // range), so that no two stages in flight read neighbouring 128-byte pieces of a row.
  bool permuted = false;
  int row_boxes = 1;         // > 1: the CTA's rows of a stage as this many shorter boxes
  bool evict_first = false;  // the weight's boxes with an L2 evict-first cache hint
  int producers = 1;         // 2 or 4: producer threads in different warps take the stages in turn
  int row_blocks = 0;        // > 0: only this many row blocks (CTAs) - one alone shows its own latency
  // The consumer thread, not the producer, announces each stage's bytes (arrive.expect_tx
  // for the stage's next use, before it frees the slot): the producer thread then issues
  // nothing but copies - whether its own barrier arrivals hold its next stage back.
  bool consumer_arms = false;
  // Each of the stage's rows as its own 128-byte cp.async.bulk (no tensor map), the same
  // cut: whether the tensor-map path or the memory system sets the rate.
  bool row_copies = false;
  // The stages' barriers this many 8-byte words apart (1: packed, as the kernels keep
  // them; 16: each on its own 128-byte line): whether the landings' transaction updates and
  // the waits' polling of neighbouring barriers contend.
  int barrier_stride = 1;
};

// Where a CTA starts its K range (it wraps around to cover all of it). All CTAs run at
// about the same pace, so without rotation every in-flight request sits at nearly the same
// column offset of its row.
constexpr int kRotateNone = 0;
constexpr int kRotateSpread = 1;  // row block b starts at b / blocks of the range
constexpr int kRotateGroups = 2;  // 8 groups of row blocks, each group at one of 8 starts

// An odd stride visits every K block of a power-of-two range once.
constexpr int kPermuteStride = 37;
// The timeline: for the first kTimelineCtas CTAs, the SM clock (clock64) at which the
// producer issued each of the first kTimelineStages stages and at which the consumer saw
// it land - whether a CTA's stages land together after one round trip or one at a time.
constexpr int kTimelineCtas = 4;
constexpr int kTimelineStages = 48;

struct StreamParams {
  int stages, stage_bytes, issue_group, boxes_per_stage, token_rows, rows_per_cta;
  int boxes_per_split;
  int rotation, flat, spin, box_kblocks;
  int permuted, row_boxes, evict_first, producers;
  int consumer_arms, row_copies, barrier_stride;
  const uint8_t* bulk_base;  // the bulk patterns' source; the row-copy patterns' weight
  int64_t bulk_bytes_per_cta, bulk_total_bytes;
  long long* timeline;  // null, or [kTimelineCtas][2 (issue, land)][kTimelineStages]
};

// tma_load_2d with an L2 cache policy (createpolicy): the weight is read once, so it may
// be the first thing L2 evicts.
__device__ __forceinline__ void tma_load_2d_evict_first(void* smem_dst, const void* tensor_map, uint64_t* bar,
                                                        int32_t c0, int32_t c1) {
  uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint"
      " [%0], [%1, {%3, %4}], [%2], %5;\n" ::"r"(anvil::sm90::smem_addr(smem_dst)),
      "l"(tensor_map), "r"(anvil::sm90::smem_addr(bar)), "r"(c0), "r"(c1), "l"(policy)
      : "memory");
}

// The stage barriers, `stride` words apart.
struct Barriers {
  uint64_t* base;
  int stride;
  __device__ uint64_t& operator[](int i) const { return base[i * stride]; }
};

__device__ __forceinline__ void wait_phase(uint64_t* bar, uint32_t phase, bool spin) {
  if (spin) {
    while (!anvil::sm90::mbarrier_test_wait(bar, phase)) {
    }
  } else {
    anvil::sm90::mbarrier_wait(bar, phase);
  }
}

__global__ void __launch_bounds__(160) stream_kernel(const __grid_constant__ CUtensorMap map_w,
                                                    const __grid_constant__ CUtensorMap map_x, StreamParams p) {
  using namespace anvil::sm90;
  extern __shared__ uint8_t smem_raw[];
  uint8_t* ring = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t{1023});
  const Barriers full{reinterpret_cast<uint64_t*>(ring + int64_t{p.stages} * p.stage_bytes), p.barrier_stride};
  const Barriers empty{full.base + p.stages * p.barrier_stride, p.barrier_stride};
  if (threadIdx.x == 0) {
    for (int s = 0; s < p.stages; ++s) {
      mbarrier_init(&full[s], 1);
      mbarrier_init(&empty[s], 1);
    }
    fence_barrier_init();
  }
  __syncthreads();

  const bool bulk = p.bulk_base != nullptr && !p.row_copies;
  // The last CTA's run is clipped at the end of the matrix.
  const int64_t bulk_begin = int64_t{blockIdx.x} * p.bulk_bytes_per_cta;
  const int64_t bulk_bytes = bulk ? std::min(p.bulk_bytes_per_cta, p.bulk_total_bytes - bulk_begin) : 0;
  int n_stages;
  if (bulk) {
    n_stages = static_cast<int>((bulk_bytes + p.stage_bytes - 1) / p.stage_bytes);
  } else {
    n_stages = p.boxes_per_split / p.boxes_per_stage;
  }
  const int cta = blockIdx.y * gridDim.x + blockIdx.x;
  long long* timeline = p.timeline != nullptr && cta < kTimelineCtas ? p.timeline + cta * 2 * kTimelineStages : nullptr;
  // Producer 0 is thread 0; more producers are lane 0 of warps 2, 3 and 4 (warp 1 is the
  // consumer's), producer k issuing the stages i with i mod producers = k.
  const int warp = static_cast<int>(threadIdx.x / 32);
  const int producer = threadIdx.x % 32 != 0 || warp == 1 ? -1 : warp == 0 ? 0 : warp - 1 < p.producers ? warp - 1 : -1;
  if (p.consumer_arms && threadIdx.x == 32) {
    for (int s = 0; s < std::min(p.stages, n_stages); ++s) mbarrier_arrive_expect_tx(&full[s], p.stage_bytes);
  }
  if (p.consumer_arms) __syncthreads();
  if (producer >= 0) {
    const int row0 = blockIdx.y * p.rows_per_cta;
    const int box0 = blockIdx.x * p.boxes_per_split;
    int start = 0;
    if (p.rotation == kRotateSpread) start = (blockIdx.y * n_stages / gridDim.y) % n_stages;
    if (p.rotation == kRotateGroups) start = (blockIdx.y % 8) * n_stages / 8;
    const int w_box_bytes = p.rows_per_cta * kBoxCols * 2;
    const int x_box_bytes = p.token_rows * kBoxCols * 2;
    const int sub_rows = p.rows_per_cta / p.row_boxes;
    for (int i = 0; i < n_stages; ++i) {
      if (p.producers > 1 && i % p.producers != producer) continue;
      if (i % p.issue_group == 0) {
        for (int j = i; j < std::min(i + p.issue_group, n_stages); ++j) {
          wait_phase(&empty[j % p.stages], ((j / p.stages) & 1) ^ 1, p.spin);
        }
      }
      if (timeline != nullptr && i < kTimelineStages) timeline[i] = clock64();
      const int slot = i % p.stages;
      uint8_t* stage = ring + int64_t{slot} * p.stage_bytes;
      if (bulk) {
        const int64_t offset = int64_t{i} * p.stage_bytes;
        const uint32_t bytes =
            static_cast<uint32_t>(std::min<int64_t>(p.stage_bytes, bulk_bytes - offset));
        mbarrier_arrive_expect_tx(&full[slot], bytes);
        bulk_copy_g2s(stage, p.bulk_base + bulk_begin + offset, bytes, &full[slot]);
      } else if (p.flat) {
        // Line l of the flat view is bytes [128 l, 128 l + 128): CTA c's boxes are one
        // contiguous run of the matrix.
        mbarrier_arrive_expect_tx(&full[slot], p.stage_bytes);
        const int line0 = (blockIdx.y * n_stages + i) * p.boxes_per_stage * p.rows_per_cta;
        for (int b = 0; b < p.boxes_per_stage; ++b) {
          tma_load_2d(stage + b * w_box_bytes, &map_w, &full[slot], 0, line0 + b * p.rows_per_cta);
        }
      } else {
        if (!p.consumer_arms) mbarrier_arrive_expect_tx(&full[slot], p.stage_bytes);
        const int step = p.permuted ? static_cast<int>(int64_t{i + start} * kPermuteStride % n_stages)
                                    : (i + start) % n_stages;
        for (int b = 0; b < p.boxes_per_stage; b += p.box_kblocks) {
          const int col = (box0 + step * p.boxes_per_stage + b) * kBoxCols;
          if (p.box_kblocks > 1) {
            tma_load_3d(stage + b * w_box_bytes, &map_w, &full[slot], 0, row0, col / kBoxCols);
          } else if (p.row_copies) {
            for (int r = 0; r < p.rows_per_cta; ++r) {
              bulk_copy_g2s(stage + b * w_box_bytes + r * kBoxCols * 2,
                            p.bulk_base + (int64_t{row0 + r} * kCols + col) * 2, kBoxCols * 2, &full[slot]);
            }
          } else {
            for (int r = 0; r < p.row_boxes; ++r) {
              uint8_t* dst = stage + b * w_box_bytes + r * sub_rows * kBoxCols * 2;
              if (p.evict_first) {
                tma_load_2d_evict_first(dst, &map_w, &full[slot], col, row0 + r * sub_rows);
              } else {
                tma_load_2d(dst, &map_w, &full[slot], col, row0 + r * sub_rows);
              }
            }
          }
          if (p.token_rows > 0) {
            tma_load_2d(stage + p.boxes_per_stage * w_box_bytes + b * x_box_bytes, &map_x, &full[slot], col, 0);
          }
        }
      }
    }
  } else if (threadIdx.x == 32) {
    for (int i = 0; i < n_stages; ++i) {
      wait_phase(&full[i % p.stages], (i / p.stages) & 1, p.spin);
      if (timeline != nullptr && i < kTimelineStages) timeline[kTimelineStages + i] = clock64();
      // Armed before the slot is freed, so the next phase's bytes are announced before
      // its copies can be issued.
      if (p.consumer_arms && i + p.stages < n_stages) mbarrier_arrive_expect_tx(&full[i % p.stages], p.stage_bytes);
      mbarrier_arrive(&empty[i % p.stages]);
    }
  }
}

// The same cut read through the load path: thread t takes 16-byte pieces t, t + threads,
// ... of the CTA's rows x K range (pieces of one row first), 8 loads in flight per thread.
// The XOR keeps the loads live; the store never happens for random data.
__global__ void ldg_stream_kernel(const uint4* __restrict__ w, int rows_per_cta, int pieces_per_split,
                                  uint32_t* sink) {
  constexpr int kRowPieces = kCols * 2 / 16;
  const int pieces = rows_per_cta * pieces_per_split;
  const uint4* base = w + int64_t{blockIdx.y} * rows_per_cta * kRowPieces + int64_t{blockIdx.x} * pieces_per_split;
  uint32_t x = 0;
  constexpr int kInFlight = 8;
  for (int i = threadIdx.x; i < pieces; i += kInFlight * blockDim.x) {
    uint4 v[kInFlight];
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) {
      const int piece = i + u * blockDim.x;
      if (piece < pieces) {
        v[u] = __ldcs(base + int64_t{piece / pieces_per_split} * kRowPieces + piece % pieces_per_split);
      } else {
        v[u] = make_uint4(0, 0, 0, 0);
      }
    }
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) x ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  if (x == 0x9e3779b9u) sink[blockIdx.y * gridDim.x + blockIdx.x] = x;
}

__global__ void fill_kernel(uint32_t* data, int64_t words, uint32_t seed) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < words; i += int64_t{gridDim.x} * blockDim.x) {
    uint32_t h = static_cast<uint32_t>(i) * 2654435761u ^ seed;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    data[i] = h;
  }
}

// False when the driver refuses the view: a finding, not a crash (the pattern reports no time).
bool make_map(CUtensorMap* map, const void* base, int rows, int box_rows, int cols = kCols,
                     CUtensorMapL2promotion promotion = CU_TENSOR_MAP_L2_PROMOTION_L2_256B, int box_kblocks = 1) {
  anvil::detail::TensorMapRequest request;
  request.base = base;
  request.dtype = anvil::DataType::kBF16;
  request.inner = static_cast<uint64_t>(cols);
  request.outer = static_cast<uint64_t>(rows);
  request.line_stride = static_cast<uint64_t>(cols);
  request.box_inner = kBoxCols;
  request.box_outer = static_cast<uint32_t>(box_rows);
  request.l2_promotion = promotion;
  if (box_kblocks > 1) {  // (64 columns, rows, K / 64 blocks): blocks 64 elements apart
    request.inner = kBoxCols;
    request.line_stride = static_cast<uint64_t>(cols);
    request.batches = static_cast<uint64_t>(cols / kBoxCols);
    request.batch_stride = kBoxCols;
    request.box_inner = kBoxCols;
    request.box_batches = static_cast<uint32_t>(box_kblocks);
  }
  anvil::Diagnostic diag;
  std::memset(map, 0, sizeof(*map));
  if (anvil::detail::encode_tensor_map(map, request, &diag) != anvil::Status::kSuccess) {
    std::fprintf(stderr, "tensor map refused: %s\n", diag.message);
    return false;
  }
  return true;
}

// Median time per launch over 9 repeats of 40 back-to-back launches, after 6 warm-up ones.
// launch(i) alternates the two input copies so that L2 never holds the one being read.
template <class Launch>
double median_us_per_launch(Launch launch) {
  for (int i = 0; i < 6; ++i) launch(i);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaDeviceSynchronize());
  constexpr int kLaunches = 40, kRepeats = 9;
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  std::vector<double> samples;
  for (int r = 0; r < kRepeats; ++r) {
    CHECK_CUDA(cudaEventRecord(start));
    for (int i = 0; i < kLaunches; ++i) launch(i);
    CHECK_CUDA(cudaEventRecord(stop));
    CHECK_CUDA(cudaEventSynchronize(stop));
    CHECK_CUDA(cudaGetLastError());
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
    samples.push_back(ms * 1000.0 / kLaunches);
  }
  CHECK_CUDA(cudaEventDestroy(start));
  CHECK_CUDA(cudaEventDestroy(stop));
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

struct Measured {
  double us, tbps;
  int ctas, smem_bytes, resident_per_sm;
  // With --timeline: [kTimelineCtas][2][kTimelineStages] clock64 stamps of one launch
  // (issue, then land), each CTA's relative to its first issue; empty otherwise.
  std::vector<long long> timeline;
};

Measured run(const Pattern& pat, uint8_t* const w[2], uint8_t* const x[2], bool with_timeline) {
  const bool bulk = pat.bulk_ctas > 0;
  StreamParams p{};
  p.stages = pat.stages;
  p.issue_group = std::max(1, pat.issue_group);
  dim3 grid;
  if (bulk) {
    p.stage_bytes = kBulkBytes;
    p.bulk_total_bytes = int64_t{kRows} * kCols * 2;
    p.bulk_bytes_per_cta = (p.bulk_total_bytes / pat.bulk_ctas + 15) / 16 * 16;
    grid = dim3(pat.bulk_ctas, 1, 1);
  } else {
    p.rows_per_cta = pat.rows_per_cta;
    p.boxes_per_stage = pat.boxes_per_stage;
    p.token_rows = pat.token_rows;
    p.boxes_per_split = kBoxesPerRow / pat.splits;
    p.stage_bytes = pat.boxes_per_stage * (pat.rows_per_cta + pat.token_rows) * kBoxCols * 2;
    p.rotation = pat.rotation;
    p.flat = pat.flat;
    p.spin = pat.spin;
    p.box_kblocks = pat.box_kblocks;
    p.permuted = pat.permuted;
    p.row_boxes = pat.row_boxes;
    p.evict_first = pat.evict_first;
    p.producers = pat.producers;
    p.consumer_arms = pat.consumer_arms;
    p.row_copies = pat.row_copies;
    p.barrier_stride = std::max(1, pat.barrier_stride);
    // The flat view has the same bytes per CTA: rows_per_cta x 64-column boxes, K / splits.
    grid = dim3(pat.flat ? 1 : pat.splits, kRows / pat.rows_per_cta * (pat.flat ? pat.splits : 1), 1);
    if (pat.row_blocks > 0) grid.y = static_cast<unsigned>(pat.row_blocks);
  }
  const int smem = pat.stages * p.stage_bytes + 2 * pat.stages * 8 * std::max(1, pat.barrier_stride) + 1024;
  CHECK_CUDA(cudaFuncSetAttribute(stream_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  int resident = 0;
  const int threads = 32 * (1 + std::max(1, pat.producers));  // producer warps and the consumer's
  CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, stream_kernel, threads, smem));

  // The weight (or the row blocks of it streamed); X re-reads come from L2.
  const double bytes = double{kCols} * 2 * (pat.row_blocks > 0 ? pat.row_blocks * pat.rows_per_cta : kRows);
  const int ctas = static_cast<int>(grid.x * grid.y);
  if (pat.ldg_threads > 0) {
    uint32_t* sink = nullptr;
    CHECK_CUDA(cudaMalloc(&sink, sizeof(uint32_t) * ctas));
    const int pieces_per_split = kCols * 2 / 16 / pat.splits;
    const double us = median_us_per_launch([&](int i) {
      ldg_stream_kernel<<<grid, pat.ldg_threads>>>(reinterpret_cast<const uint4*>(w[i & 1]), pat.rows_per_cta,
                                                   pieces_per_split, sink);
    });
    CHECK_CUDA(cudaFree(sink));
    return {us, bytes / (us * 1e-6) / 1e12, ctas, 0, 0, {}};
  }

  CUtensorMap map_w[2], map_x[2];
  bool maps_ok = true;
  for (int b = 0; b < 2; ++b) {
    maps_ok &= pat.flat ? make_map(&map_w[b], w[b], kRows * kBoxesPerRow, pat.rows_per_cta, kBoxCols)
                        : make_map(&map_w[b], w[b], kRows, bulk ? 64 : pat.rows_per_cta / pat.row_boxes, kCols,
                                   pat.promotion, pat.box_kblocks);
    maps_ok &= make_map(&map_x[b], x[b], 256, std::max(8, pat.token_rows));
  }
  if (!maps_ok) return {-1, 0, ctas, smem, resident, {}};
  long long* timeline = nullptr;
  auto launch = [&](int i) {
    StreamParams q = p;
    if (bulk || pat.row_copies) q.bulk_base = w[i & 1];
    q.timeline = timeline;
    cudaLaunchConfig_t config{};
    config.gridDim = grid;
    config.blockDim = dim3(static_cast<unsigned>(threads), 1, 1);
    config.dynamicSmemBytes = static_cast<size_t>(smem);
    cudaLaunchAttribute cluster{};
    cluster.id = cudaLaunchAttributeClusterDimension;
    cluster.val.clusterDim.x = 1;
    cluster.val.clusterDim.y = static_cast<unsigned>(pat.cluster_rows);
    cluster.val.clusterDim.z = 1;
    config.attrs = &cluster;
    config.numAttrs = pat.cluster_rows > 1 ? 1 : 0;
    CHECK_CUDA(cudaLaunchKernelEx(&config, stream_kernel, map_w[i & 1], map_x[i & 1], q));
  };
  const double us = median_us_per_launch(launch);
  Measured m{us, bytes / (us * 1e-6) / 1e12, ctas, smem, resident, {}};
  if (with_timeline && !bulk) {
    // One more launch, stamped, right behind a plain one so that it starts on a busy GPU as
    // the timed ones do.
    const size_t count = size_t{kTimelineCtas} * 2 * kTimelineStages;
    long long* stamps = nullptr;
    CHECK_CUDA(cudaMalloc(&stamps, count * sizeof(long long)));
    CHECK_CUDA(cudaMemset(stamps, 0, count * sizeof(long long)));
    launch(0);
    timeline = stamps;  // the launch lambda reads it by reference
    launch(1);
    timeline = nullptr;
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaDeviceSynchronize());
    m.timeline.resize(count);
    CHECK_CUDA(cudaMemcpy(m.timeline.data(), stamps, count * sizeof(long long), cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaFree(stamps));
    // Each CTA's stamps relative to its first issue; -1 where nothing was stamped (a CTA
    // that does not exist, a stage past its range).
    for (int c = 0; c < kTimelineCtas; ++c) {
      long long* cta_stamps = m.timeline.data() + c * 2 * kTimelineStages;
      const long long t0 = cta_stamps[0];
      for (int i = 0; i < 2 * kTimelineStages; ++i) cta_stamps[i] = cta_stamps[i] != 0 ? cta_stamps[i] - t0 : -1;
    }
  }
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  std::string json_path, only;
  bool with_timeline = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--json") == 0 && i + 1 < argc) json_path = argv[++i];
    else if (std::strcmp(argv[i], "--only") == 0 && i + 1 < argc) only = argv[++i];
    else if (std::strcmp(argv[i], "--timeline") == 0) with_timeline = true;
  }
  // The same answer the GPU tests and the fuzzer skip on (no driver, no device, not sm_90).
  const std::string unavailable = anvil::verify::sm90_unavailable_reason();
  if (!unavailable.empty()) {
    std::fprintf(stderr, "anvil-stream-probe: %s\n", unavailable.c_str());
    return 2;
  }
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));

  uint8_t *w[2], *x[2];
  for (int b = 0; b < 2; ++b) {
    CHECK_CUDA(cudaMalloc(&w[b], size_t{kRows} * kCols * 2));
    CHECK_CUDA(cudaMalloc(&x[b], size_t{256} * kCols * 2));
    fill_kernel<<<1024, 256>>>(reinterpret_cast<uint32_t*>(w[b]), int64_t{kRows} * kCols / 2, 17u + b);
    fill_kernel<<<64, 256>>>(reinterpret_cast<uint32_t*>(x[b]), int64_t{256} * kCols / 2, 91u + b);
  }
  CHECK_CUDA(cudaGetLastError());

  // name, rows/CTA, boxes/stage, splits, stages, issue group, token rows, bulk CTAs[, rotation, flat]
  const std::vector<Pattern> patterns = {
      // "rate:" - why a CTA of one-box stages completes about one stage per ~0.55 us
      // whatever its ring depth (docs/notes/tma-ring-rate.md), while cuBLAS's one-box-stage
      // kernels complete one per ~0.2-0.4 us. Each varies one thing against the first; run
      // them with --only rate: --timeline for the landing times of each CTA's stages.
      {.name = "rate: 64 rows, 1 box, 16 stages", .rows_per_cta = 64, .boxes_per_stage = 1, .splits = 1,
       .stages = 16, .issue_group = 1, .token_rows = 0, .bulk_ctas = 0},
      {.name = "rate: 64 rows, 1 box, 4 stages", .rows_per_cta = 64, .boxes_per_stage = 1, .splits = 1,
       .stages = 4, .issue_group = 1, .token_rows = 0, .bulk_ctas = 0},
      {.name = "rate: 64 rows, 1 box, 2 stages", .rows_per_cta = 64, .boxes_per_stage = 1, .splits = 1,
       .stages = 2, .issue_group = 1, .token_rows = 0, .bulk_ctas = 0},
      {.name = "rate: 64 rows, 1 box, 16 stages, K blocks 37 apart", .rows_per_cta = 64, .boxes_per_stage = 1,
       .splits = 1, .stages = 16, .issue_group = 1, .token_rows = 0, .bulk_ctas = 0, .permuted = true},
      {.name = "rate: 64 rows as 2 boxes of 32, 16 stages", .rows_per_cta = 64, .boxes_per_stage = 1, .splits = 1,
       .stages = 16, .issue_group = 1, .token_rows = 0, .bulk_ctas = 0, .row_boxes = 2},
      {.name = "rate: 64 rows as 4 boxes of 16, 16 stages", .rows_per_cta = 64, .boxes_per_stage = 1, .splits = 1,
       .stages = 16, .issue_group = 1, .token_rows = 0, .bulk_ctas = 0, .row_boxes = 4},
      {.name = "rate: 64 rows, 1 box, 16 stages, evict-first", .rows_per_cta = 64, .boxes_per_stage = 1,
       .splits = 1, .stages = 16, .issue_group = 1, .token_rows = 0, .bulk_ctas = 0, .evict_first = true},
      {.name = "rate: 64 rows, 1 box, 16 stages, 2 producers", .rows_per_cta = 64, .boxes_per_stage = 1,
       .splits = 1, .stages = 16, .issue_group = 1, .token_rows = 0, .bulk_ctas = 0, .producers = 2},
      {.name = "rate: 64 rows, 1 box, 16 stages, consumer arms", .rows_per_cta = 64, .boxes_per_stage = 1,
       .splits = 1, .stages = 16, .issue_group = 1, .token_rows = 0, .bulk_ctas = 0, .consumer_arms = true},
      {.name = "rate: 64 rows, 1 box, 16 stages, 4 producers", .rows_per_cta = 64, .boxes_per_stage = 1,
       .splits = 1, .stages = 16, .issue_group = 1, .token_rows = 0, .bulk_ctas = 0, .producers = 4},
      // The producer waits for several free stages, then issues their copies back to back:
      // with the consumer announcing the bytes, no barrier operation stands between them.
      {.name = "rate: 64 rows, 1 box, 16 stages, issue 4", .rows_per_cta = 64, .boxes_per_stage = 1,
       .splits = 1, .stages = 16, .issue_group = 4, .token_rows = 0, .bulk_ctas = 0},
      {.name = "rate: 64 rows, 1 box, 16 stages, issue 4, consumer arms", .rows_per_cta = 64, .boxes_per_stage = 1,
       .splits = 1, .stages = 16, .issue_group = 4, .token_rows = 0, .bulk_ctas = 0, .consumer_arms = true},
      {.name = "rate: 64 rows, 1 box, 16 stages, issue 8, consumer arms", .rows_per_cta = 64, .boxes_per_stage = 1,
       .splits = 1, .stages = 16, .issue_group = 8, .token_rows = 0, .bulk_ctas = 0, .consumer_arms = true},
      {.name = "rate: 64 rows, 4 boxes, 6 stages, 2 producers", .rows_per_cta = 64, .boxes_per_stage = 4,
       .splits = 1, .stages = 6, .issue_group = 1, .token_rows = 0, .bulk_ctas = 0, .producers = 2},
      {.name = "rate: one CTA, 64 rows, 1 box, 16 stages, issue 8, consumer arms", .rows_per_cta = 64,
       .boxes_per_stage = 1, .splits = 1, .stages = 16, .issue_group = 8, .token_rows = 0, .bulk_ctas = 0,
       .row_blocks = 1, .consumer_arms = true},
      {.name = "rate: 64 rows, 64 row copies, 16 stages", .rows_per_cta = 64, .boxes_per_stage = 1, .splits = 1,
       .stages = 16, .issue_group = 1, .token_rows = 0, .bulk_ctas = 0, .row_copies = true},
      {.name = "rate: 64 rows, 64 row copies, 16 stages, consumer arms", .rows_per_cta = 64, .boxes_per_stage = 1,
       .splits = 1, .stages = 16, .issue_group = 1, .token_rows = 0, .bulk_ctas = 0, .consumer_arms = true,
       .row_copies = true},
      {.name = "rate: 64 rows, 1 box, 16 stages, barriers 128 B apart", .rows_per_cta = 64, .boxes_per_stage = 1,
       .splits = 1, .stages = 16, .issue_group = 1, .token_rows = 0, .bulk_ctas = 0, .barrier_stride = 16},
      {.name = "rate: 128 rows, 1 box, 8 stages (64 CTAs)", .rows_per_cta = 128, .boxes_per_stage = 1, .splits = 1,
       .stages = 8, .issue_group = 1, .token_rows = 0, .bulk_ctas = 0},
      {.name = "rate: 64 rows, 4 boxes, 6 stages", .rows_per_cta = 64, .boxes_per_stage = 4, .splits = 1,
       .stages = 6, .issue_group = 1, .token_rows = 0, .bulk_ctas = 0},
      // One CTA on an idle GPU: its stages' round trip with nothing else in the memory system.
      {.name = "rate: one CTA, 64 rows, 1 box, 16 stages", .rows_per_cta = 64, .boxes_per_stage = 1, .splits = 1,
       .stages = 16, .issue_group = 1, .token_rows = 0, .bulk_ctas = 0, .row_blocks = 1},
      {.name = "rate: one CTA, 64 rows, 1 box, 16 stages, consumer arms", .rows_per_cta = 64, .boxes_per_stage = 1,
       .splits = 1, .stages = 16, .issue_group = 1, .token_rows = 0, .bulk_ctas = 0, .row_blocks = 1,
       .consumer_arms = true},
      {.name = "rate: one CTA, 64 rows, 64 row copies, 16 stages", .rows_per_cta = 64, .boxes_per_stage = 1,
       .splits = 1, .stages = 16, .issue_group = 1, .token_rows = 0, .bulk_ctas = 0, .row_blocks = 1,
       .row_copies = true},
      {.name = "rate: one CTA, 64 rows, 4 boxes, 6 stages", .rows_per_cta = 64, .boxes_per_stage = 4, .splits = 1,
       .stages = 6, .issue_group = 1, .token_rows = 0, .bulk_ctas = 0, .row_blocks = 1},
      // cuBLAS's M <= 8 kernel on this weight (nvjet_sm90_tst_64x8_64x16_2x1: 128 CTAs of
      // 64 rows, the whole K each, 16 stages, one CTA per SM), and neighbours of it.
      {"cuBLAS-like m8: 64 rows, 1 box, 1 split, 16 stages + 8 X", 64, 1, 1, 16, 1, 8, 0},
      {"ldg: 64 rows, 1 split, 256 threads", 64, 1, 1, 1, 1, 0, 0, kRotateNone, false,
       CU_TENSOR_MAP_L2_PROMOTION_L2_256B, false, 1, 1, 256},
      {"ldg: 64 rows, 1 split, 512 threads", 64, 1, 1, 1, 1, 0, 0, kRotateNone, false,
       CU_TENSOR_MAP_L2_PROMOTION_L2_256B, false, 1, 1, 512},
      {"ldg: 128 rows, 2 splits, 512 threads", 128, 1, 2, 1, 1, 0, 0, kRotateNone, false,
       CU_TENSOR_MAP_L2_PROMOTION_L2_256B, false, 1, 1, 512},
      {"ldg: 128 rows, 2 splits, 1024 threads", 128, 1, 2, 1, 1, 0, 0, kRotateNone, false,
       CU_TENSOR_MAP_L2_PROMOTION_L2_256B, false, 1, 1, 1024},
      {"64 rows, 1 box, 1 split, 16 stages, clusters of 2", 64, 1, 1, 16, 1, 0, 0, kRotateNone, false,
       CU_TENSOR_MAP_L2_PROMOTION_L2_256B, false, 1, 2},
      {"64 rows, 1 box, 1 split, 16 stages + 8 X, clusters of 2", 64, 1, 1, 16, 1, 8, 0, kRotateNone, false,
       CU_TENSOR_MAP_L2_PROMOTION_L2_256B, false, 1, 2},
      {"128 rows, 1 box, 2 splits, 6 stages, clusters of 2", 128, 1, 2, 6, 1, 0, 0, kRotateNone, false,
       CU_TENSOR_MAP_L2_PROMOTION_L2_256B, false, 1, 2},
      {"64 rows, 1 box, 1 split, 16 stages, spin waits", 64, 1, 1, 16, 1, 0, 0, kRotateNone, false,
       CU_TENSOR_MAP_L2_PROMOTION_L2_256B, true},
      {"64 rows, 4 boxes, 1 split, 6 stages (1 CTA/SM)", 64, 4, 1, 6, 1, 0, 0},
      {"64 rows, 1 3-D box of 4 K blocks, 1 split, 6 stages", 64, 4, 1, 6, 1, 0, 0, kRotateNone, false,
       CU_TENSOR_MAP_L2_PROMOTION_L2_256B, false, 4},
      {"128 rows, 1 3-D box of 2 K blocks, 2 splits, 3 stages", 128, 2, 2, 3, 1, 0, 0, kRotateNone, false,
       CU_TENSOR_MAP_L2_PROMOTION_L2_256B, false, 2},
      {"128 rows, 1 box, 2 splits, 6 stages, spin waits", 128, 1, 2, 6, 1, 0, 0, kRotateNone, false,
       CU_TENSOR_MAP_L2_PROMOTION_L2_256B, true},
      {"decode-m8, spin waits", 128, 1, 2, 6, 1, 8, 0, kRotateNone, false, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, true},
      {"64 rows, 1 box, 1 split, 16 stages, spread start", 64, 1, 1, 16, 1, 0, 0, kRotateSpread},
      {"64 rows, 1 box, 1 split, 16 stages, 8 starts", 64, 1, 1, 16, 1, 0, 0, kRotateGroups},
      {"64 rows, 1 box, 1 split, 16 stages, L2 promotion none", 64, 1, 1, 16, 1, 0, 0, kRotateNone, false,
       CU_TENSOR_MAP_L2_PROMOTION_NONE},
      {"64 rows, 1 box, 1 split, 16 stages, L2 promotion 128B", 64, 1, 1, 16, 1, 0, 0, kRotateNone, false,
       CU_TENSOR_MAP_L2_PROMOTION_L2_128B},
      {"64 rows, 2 boxes, 1 split, 8 stages, L2 promotion 128B", 64, 2, 1, 8, 1, 0, 0, kRotateNone, false,
       CU_TENSOR_MAP_L2_PROMOTION_L2_128B},
      {"128 rows, 1 box, 2 splits, 6 stages, L2 promotion none", 128, 1, 2, 6, 1, 0, 0, kRotateNone, false,
       CU_TENSOR_MAP_L2_PROMOTION_NONE},
      {"128 rows, 1 box, 2 splits, 6 stages, L2 promotion 128B", 128, 1, 2, 6, 1, 0, 0, kRotateNone, false,
       CU_TENSOR_MAP_L2_PROMOTION_L2_128B},
      {"128 rows, 1 box, 2 splits, 6 stages, spread, promotion 128B", 128, 1, 2, 6, 1, 0, 0, kRotateSpread, false,
       CU_TENSOR_MAP_L2_PROMOTION_L2_128B},
      {"64 rows, 1 box, 1 split, 16 stages (no X)", 64, 1, 1, 16, 1, 0, 0},
      {"64 rows, 1 box, 1 split, 8 stages (2 CTAs/SM)", 64, 1, 1, 8, 1, 0, 0},
      {"64 rows, 1 box, 2 splits, 8 stages (2 CTAs/SM)", 64, 1, 2, 8, 1, 0, 0},
      {"128 rows, 1 box, 2 splits, 8 stages + 8 X (1 CTA/SM)", 128, 1, 2, 8, 1, 8, 0},
      {"128 rows, 1 box, 1 split, 8 stages (1 CTA/SM, 64 CTAs)", 128, 1, 1, 8, 1, 0, 0},
      {"128 rows, 1 box, 2 splits, 6 stages, spread start", 128, 1, 2, 6, 1, 0, 0, kRotateSpread},
      {"128 rows, 1 box, 2 splits, 6 stages, 8 starts", 128, 1, 2, 6, 1, 0, 0, kRotateGroups},
      {"128 rows, 1 box, 4 splits, 6 stages, spread start", 128, 1, 4, 6, 1, 0, 0, kRotateSpread},
      {"decode-m64, spread start", 128, 1, 2, 4, 1, 64, 0, kRotateSpread},
      {"flat: 128 lines (16 KiB contiguous) per box, 6 stages", 128, 1, 2, 6, 1, 0, 0, kRotateNone, true},
      {"decode-m8: 128 rows, 1 box, 2 splits, 6 stages", 128, 1, 2, 6, 1, 8, 0},
      {"128 rows, 1 box, 2 splits, 6 stages (no X)", 128, 1, 2, 6, 1, 0, 0},
      {"128 rows, 1 box, 2 splits, 6 stages, issue 2", 128, 1, 2, 6, 2, 0, 0},
      {"128 rows, 1 box, 2 splits, 6 stages, issue 3", 128, 1, 2, 6, 3, 0, 0},
      {"128 rows, 2 boxes, 2 splits, 3 stages", 128, 2, 2, 3, 1, 0, 0},
      {"128 rows, 4 boxes, 2 splits, 3 stages (1 CTA/SM)", 128, 4, 2, 3, 1, 0, 0},
      {"128 rows, 1 box, 2 splits, 12 stages (1 CTA/SM)", 128, 1, 2, 12, 1, 0, 0},
      {"128 rows, 1 box, 4 splits, 6 stages", 128, 1, 4, 6, 1, 0, 0},
      {"64 rows, 2 boxes, 1 split, 6 stages", 64, 2, 1, 6, 1, 0, 0},
      {"32 rows, 4 boxes, 1 split, 6 stages", 32, 4, 1, 6, 1, 0, 0},
      {"16 rows, 8 boxes, 1 split, 6 stages", 16, 8, 1, 6, 1, 0, 0},
      {"decode-m64: 128 rows, 1 box, 2 splits, 4 stages", 128, 1, 2, 4, 1, 64, 0},
      {"128 rows, 1 box, 2 splits, 4 stages (no X)", 128, 1, 2, 4, 1, 0, 0},
      {"256 rows, 1 box, 4 splits, 2 stages + 64 X", 256, 1, 4, 2, 1, 64, 0},
      {"256 rows, 1 box, 4 splits, 4 stages + 64 X (1 CTA/SM)", 256, 1, 4, 4, 1, 64, 0},
      {"bulk 16 KiB, 128 CTAs, 6 stages", 0, 0, 0, 6, 1, 0, 128},
      {"bulk 16 KiB, 132 CTAs, 6 stages", 0, 0, 0, 6, 1, 0, 132},
      {"bulk 16 KiB, 264 CTAs, 6 stages", 0, 0, 0, 6, 1, 0, 264},
  };
  bench::json::Writer out;
  out.begin_object();
  out.key("tool");
  out.value("anvil-stream-probe");
  out.key("gpu");
  out.value(prop.name);
  out.key("date");
  out.value(bench::utc_now_iso8601());
  out.key("commit");
  out.value(bench::commit_id());
  out.key("bytes_per_pass");
  out.value(double{kRows} * kCols * 2);
  out.key("patterns");
  out.begin_array();
  std::printf("%-58s %6s %8s %4s %9s %8s\n", "pattern", "CTAs", "smem KiB", "/SM", "us", "TB/s");
  for (const Pattern& pat : patterns) {
    if (!only.empty() && std::strstr(pat.name, only.c_str()) == nullptr) continue;
    const Measured m = run(pat, w, x, with_timeline);
    std::printf("%-58s %6d %8.1f %4d %9.2f %8.3f\n", pat.name, m.ctas, m.smem_bytes / 1024.0, m.resident_per_sm, m.us,
                m.tbps);
    out.begin_object();
    out.key("name");
    out.value(pat.name);
    out.key("ctas");
    out.value(m.ctas);
    out.key("smem_bytes");
    out.value(m.smem_bytes);
    out.key("resident_per_sm");
    out.value(m.resident_per_sm);
    out.key("us");
    out.value(m.us);
    out.key("weight_tbps");
    out.value(m.tbps);
    if (!m.timeline.empty()) {
      // Landing times of the first stages, in SM cycles after the CTA's first issue: CTA 0's
      // printed, every stamped CTA's in the JSON.
      std::printf("  CTA 0 lands (cycles):");
      for (int i = 0; i < kTimelineStages; ++i) std::printf(" %lld", m.timeline[kTimelineStages + i]);
      std::printf("\n");
      // The answer in three numbers per CTA: how long the producer took to issue the first
      // `depth` stages (the ring's first lap, all issuable at once), when the first landed,
      // and the median gap between consecutive landings. Serialized stages: gaps near the
      // first landing; a memory-system bound: the first lap lands within a round trip.
      for (int c = 0; c < kTimelineCtas; ++c) {
        const long long* issue = m.timeline.data() + c * 2 * kTimelineStages;
        const long long* land = issue + kTimelineStages;
        const int depth = std::min(pat.stages, kTimelineStages);
        std::vector<long long> gaps;
        for (int i = 1; i < kTimelineStages; ++i) {
          if (land[i] >= 0 && land[i - 1] >= 0) gaps.push_back(land[i] - land[i - 1]);
        }
        if (gaps.empty() || land[0] < 0 || issue[depth - 1] < 0) continue;
        std::sort(gaps.begin(), gaps.end());
        std::printf("  CTA %d: first %d issued within %lld cycles, first landing %lld, landing gap median %lld\n", c,
                    depth, issue[depth - 1], land[0], gaps[gaps.size() / 2]);
      }
      out.key("timeline_cycles");
      out.begin_array();
      for (int c = 0; c < kTimelineCtas; ++c) {
        for (int role = 0; role < 2; ++role) {
          out.begin_array();
          for (int i = 0; i < kTimelineStages; ++i) out.value(static_cast<double>(m.timeline[(c * 2 + role) * kTimelineStages + i]));
          out.end_array();
        }
      }
      out.end_array();
    }
    out.end_object();
  }
  out.end_array();
  out.end_object();
  if (!json_path.empty()) std::ofstream(json_path) << out.str() << "\n";
  for (int b = 0; b < 2; ++b) {
    CHECK_CUDA(cudaFree(w[b]));
    CHECK_CUDA(cudaFree(x[b]));
  }
  return 0;
}
