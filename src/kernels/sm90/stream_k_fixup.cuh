// The stream-K fixup between the consumer mainloop and the epilogue (stream_k.h has the
// plan). Each consumer warpgroup handles its own rows of the tile, with its own flag, so
// the two warpgroups of a CTA never wait for each other.
//
// A parked partial keeps the accumulator's register layout: thread t's float4 number j
// sits at [j][t], so each warp's 16-byte stores and loads cover 512 contiguous bytes and
// the finisher, whose fragment has the same layout, adds element for element.
#pragma once

#include "arch/sm90/fence.cuh"
#include "arch/sm90/global_flag.cuh"
#include "arch/sm90/named_barrier.cuh"
#include "kernels/sm90/epilogue_store.cuh"
#include "kernels/sm90/kernel_config.h"
#include "kernels/sm90/stream_k.h"

namespace anvil::detail {

template <class Config>
inline constexpr int kPartialFloat4s = Config::kSlabs * Config::kBlockN / 2 / 4;  // per thread

template <class Config>
__device__ __forceinline__ float4* partial_slot(const StreamKWorkspace& w, int cta, int consumer) {
  return reinterpret_cast<float4*>(w.partials) +
         static_cast<size_t>(cta * Config::kConsumers + consumer) * kPartialFloat4s<Config> * 128;
}

// A piece of a tile that another CTA finishes: park it and raise this warpgroup's flag.
template <class Config>
__device__ __forceinline__ void park_partial_in_workspace(const StreamKWorkspace& w, int cta, int consumer,
                                             const float (&acc)[Config::kSlabs][Config::kBlockN / 2]) {
  const int t = threadIdx.x % 128;
  float4* slot = partial_slot<Config>(w, cta, consumer);
#pragma unroll
  for (int j = 0; j < kPartialFloat4s<Config>; ++j) {
    const float* a = &acc[4 * j / (Config::kBlockN / 2)][4 * j % (Config::kBlockN / 2)];
    __stcg(slot + j * 128 + t, make_float4(a[0], a[1], a[2], a[3]));
  }
  // Every thread's stores precede the barrier; the fence after it makes them visible
  // GPU-wide before the flag (the release half of the flag protocol).
  sm90::warpgroup_sync(consumer);
  if (t == 0) {
    sm90::fence_acq_rel_gpu();
    sm90::store_relaxed_gpu(w.flags + cta * Config::kConsumers + consumer, 1);
  }
}

// The finishing piece of a tile: wait for the CTAs first_cta .. cta - 1 that parked the
// tile's earlier iterations, then add their partials, the next-lower CTA first.
template <class Config>
__device__ __forceinline__ void add_parked_partials(const StreamKWorkspace& w, int cta, int first_cta, int consumer,
                                                    float (&acc)[Config::kSlabs][Config::kBlockN / 2]) {
  const int t = threadIdx.x % 128;
  if (t == 0) {
    for (int c = cta - 1; c >= first_cta; --c) {
      while (sm90::load_acquire_gpu(w.flags + c * Config::kConsumers + consumer) == 0) {
      }
    }
  }
  sm90::warpgroup_sync(consumer);
#pragma unroll 1
  for (int c = cta - 1; c >= first_cta; --c) {
    const float4* slot = partial_slot<Config>(w, c, consumer);
#pragma unroll
    for (int j = 0; j < kPartialFloat4s<Config>; ++j) {
      const float4 v = __ldcg(slot + j * 128 + t);
      float* a = &acc[4 * j / (Config::kBlockN / 2)][4 * j % (Config::kBlockN / 2)];
      a[0] += v.x;
      a[1] += v.y;
      a[2] += v.z;
      a[3] += v.w;
    }
  }
}

}  // namespace anvil::detail
