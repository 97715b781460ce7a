// Host side of the TMA-fed decode kernel (decode_kernel.cuh), shared by its 16-bit
// families (gemm_decode.cu: sm90-decode, sm90-decode-r64) and its 8-bit one
// (gemm_fp8_decode.cu: sm90-fp8-decode): the kernel for an input dtype, its residency, the
// tensor maps and the cached cluster launch of a planned grid.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>

#include "host/plan_cache.h"
#include "host/registry.h"
#include "kernels/sm90/decode_kernel.cuh"
#include "kernels/sm90/decode_launch.h"
#include "kernels/sm90/decode_plan.h"
#include "kernels/sm90/tma_operands.h"
#include "plan/launch.h"

namespace anvil::detail {

// One configuration's kernel for the input dtype: e4m3 x e4m3 for the 8-bit
// configurations (the only pair sm90-fp8-decode instantiates), bf16 or fp16 otherwise.
template <class Config>
auto decode_kernel_for(DataType input) {
  if constexpr (Config::kElementBytes == 1) {
    (void)input;
    return sm90_decode_kernel<Config, sm90::Input::kE4M3>;
  } else {
    return input == DataType::kBF16 ? sm90_decode_kernel<Config, sm90::Input::kBF16>
                                    : sm90_decode_kernel<Config, sm90::Input::kF16>;
  }
}

// CTAs of one configuration that fit on the GPU at once in clusters of `splits`.
template <class Config>
int decode_tma_resident_ctas(const char* name, int splits) {
  return decode_resident_ctas(name, decode_kernel_for<Config>(Config::kElementBytes == 1 ? DataType::kE4M3 : DataType::kBF16),
                              Config::kThreads, decode_smem_bytes<Config>(), splits);
}

// What one decode launch needs besides the kernel: the parameter block (tensor maps
// included: driver calls, so the plan cache keeps it) and the grid.
struct DecodeLaunch {
  DecodeParams params;
  DecodeLaunchPlan plan;
};

template <class Config>
Status build_decode_launch(const GemmDesc& desc, const GemmArgs& args, const DecodeLaunchPlan& plan, DecodeLaunch* out,
                           Diagnostic* diag) {
  constexpr int kTokenTile = Config::kTokenTile;
  DecodeParams params{};
  params.epilogue = make_epilogue_params(desc, args);
  params.k_tiles = plan.k_tiles;
  params.token_tiles = plan.token_tiles;
  params.batched = desc.batch > 1;
  // A slice of no k-tiles would free a stage it never took: at most one slice per k-tile.
  params.k_slices = Config::kFoldKSlices ? std::clamp(plan.k_slices, 1, plan.k_tiles) : 1;
  if constexpr (Config::kElementBytes == 1) {
    params.scales.a = args.scale_a;
    params.scales.b = args.scale_b;
    params.scales.mode = desc.scales;
    params.scales.cols = desc.n;
  }
  if constexpr (Config::kBlockScales) {
    // Block scales are applied per K block in the mainloop; the finished sums take none.
    params.scales.mode = ScaleMode::kNone;
    params.w_block_scales = args.scale_b;
    int shift = 0;
    const Status scales = encode_block_scales_a(&params.map_x_scales, args.scale_a, plan.k_tiles, desc.m, kTokenTile,
                                                &shift, diag);
    if (scales != Status::kSuccess) return scales;
    params.x_scale_line = ScaleLine{desc.m, 0, shift};
  }

  static_assert(Config::kBlockK % Config::kBoxK == 0, "whole boxes: one 128-byte swizzle row of K each");
  // GEMM B (column-major: row j of W is K-contiguous) is wgmma's A side. A box is 128
  // bytes of K: 64 16-bit or 128 8-bit values (encode_kmajor_sw128 reads the dtype).
  Status s = encode_kmajor_sw128(&params.map_w, args.b, desc.b, desc.k, desc.n, Config::kBlockM, diag, desc.batch);
  if (s != Status::kSuccess) return s;
  s = encode_kmajor_sw128(&params.map_x, args.a, desc.a, desc.k, desc.m, kTokenTile, diag, desc.batch);
  if (s != Status::kSuccess) return s;
  out->params = params;
  out->plan = plan;
  return Status::kSuccess;
}

// One configuration's launch of a planned grid.
template <class Config>
Status launch_decode_config(const char* name, const char* config_key, const DecodePlan& plan, const GemmDesc& desc,
                            const GemmArgs& args, Diagnostic* diag) {
  return cached_decode_launch<DecodeLaunch>(
      name, config_key, decode_kernel_for<Config>(desc.a.dtype), Config::kThreads, decode_smem_bytes<Config>(), plan,
      desc, args, diag,
      [&](DecodeLaunch* out) { return build_decode_launch<Config>(desc, args, decode_grid(plan), out, diag); });
}

}  // namespace anvil::detail
