// anvil-racecheck-probe: how compute-sanitizer's racecheck orders shared-memory accesses
// across a CTA barrier when warpgroups have passed different numbers of named barriers
// before it - the pattern of the load-path decode kernels (decode_ldg_kernel.cuh), whose
// warpgroups pass one warpgroup barrier per K step and may have a step more or fewer than
// each other.
//
//   compute-sanitizer --tool racecheck anvil-racecheck-probe S0 S1 S2 S3 [pad] [cp_async]
//
// Warpgroup w runs Sw steps, each filling one slot of its own two-slot ring (16-byte stores,
// or cp.async copies with `cp_async`), passing `bar.sync w+1, 128` and reading a
// neighbour's value back. Then, like the kernel: one more warpgroup barrier, a store over
// its own ring (the park), __syncthreads, and every thread reads another thread's park in
// every ring. Every read is ordered after the store it reads by a barrier both threads
// pass, so there is no race. With `pad`, a warpgroup with fewer steps passes the missing
// warpgroup barriers before its park (the kernels pass them after it; either way all
// warpgroups reach __syncthreads having passed equally many).
//
// Measured on the H200 (CUDA 13.0's compute-sanitizer, docs/worklog.md session 16): equal
// step counts or `pad` - no hazard; unequal counts (0 1 0 1, 0 0 0 1, 1 2 1 2, 2 3 2 3) -
// "potential RAW hazard" between the park and the reads after __syncthreads, with stores or
// cp.async (bench/results/h200-2026-11-30-s16-racecheck-probe.txt).
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

namespace {

#define PROBE_CHECK(call)                                                           \
  do {                                                                              \
    const cudaError_t e = (call);                                                   \
    if (e != cudaSuccess) {                                                         \
      std::fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorString(e));        \
      return 1;                                                                     \
    }                                                                               \
  } while (0)

constexpr int kWarpgroups = 4;
constexpr int kSlotFloats = 512;  // 128 threads x 16 bytes

__device__ __forceinline__ void warpgroup_sync(int warpgroup) {
  asm volatile("bar.sync %0, 128;\n" ::"r"(warpgroup + 1) : "memory");
}

struct ProbeArgs {
  int steps[kWarpgroups];
  int most_steps;
  bool pad, cp_async;
};

__global__ void __launch_bounds__(128 * kWarpgroups, 1) probe_kernel(ProbeArgs args, const float4* src, float* out) {
  __shared__ alignas(128) float ring[kWarpgroups][2][kSlotFloats];
  const int warpgroup = threadIdx.x / 128, thread = threadIdx.x % 128;
  const int steps = args.steps[warpgroup];
  float acc = 0.f;
  for (int step = 0; step < steps; ++step) {
    float* slot = ring[warpgroup][step % 2];
    if (args.cp_async) {
      const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(slot + thread * 4));
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16, 16;\n" ::"r"(dst), "l"(src + thread) : "memory");
      asm volatile("cp.async.commit_group;\n" ::: "memory");
      asm volatile("cp.async.wait_group 0;\n" ::: "memory");
    } else {
      *reinterpret_cast<float4*>(slot + thread * 4) = src[thread];
    }
    // One barrier per step, as in the kernel: the slot written next step was last read two
    // steps ago, before this barrier.
    warpgroup_sync(warpgroup);
    acc += slot[(thread + 5) % 128 * 4];
  }
  if (args.pad) {
    for (int step = steps; step < args.most_steps; ++step) warpgroup_sync(warpgroup);
  }
  warpgroup_sync(warpgroup);
  ring[warpgroup][0][thread] = acc + static_cast<float>(warpgroup);  // the park
  __syncthreads();
  float sum = 0.f;
  for (int w = 0; w < kWarpgroups; ++w) sum += ring[w][0][(thread + 37) % 128];
  out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 1 + kWarpgroups) {
    std::fprintf(stderr, "usage: %s S0 S1 S2 S3 [pad 0|1] [cp_async 0|1]\n", argv[0]);
    return 2;
  }
  ProbeArgs args{};
  for (int w = 0; w < kWarpgroups; ++w) {
    args.steps[w] = std::atoi(argv[1 + w]);
    if (args.steps[w] > args.most_steps) args.most_steps = args.steps[w];
  }
  args.pad = argc > 5 && std::atoi(argv[5]) != 0;
  args.cp_async = argc > 6 && std::atoi(argv[6]) != 0;
  constexpr int kBlocks = 8, kThreads = 128 * kWarpgroups;
  float4* src = nullptr;
  float* out = nullptr;
  PROBE_CHECK(cudaMalloc(&src, 128 * sizeof(float4)));
  PROBE_CHECK(cudaMemset(src, 0x3f, 128 * sizeof(float4)));
  PROBE_CHECK(cudaMalloc(&out, kBlocks * kThreads * sizeof(float)));
  probe_kernel<<<kBlocks, kThreads>>>(args, src, out);
  PROBE_CHECK(cudaGetLastError());
  PROBE_CHECK(cudaDeviceSynchronize());
  PROBE_CHECK(cudaFree(src));
  PROBE_CHECK(cudaFree(out));
  std::printf("steps %d %d %d %d, pad %d, cp_async %d: ran\n", args.steps[0], args.steps[1], args.steps[2],
              args.steps[3], args.pad ? 1 : 0, args.cp_async ? 1 : 0);
  return 0;
}
