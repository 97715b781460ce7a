// Stream-K for the persistent Hopper GEMM: when the output tiles do not fill the last
// wave of SMs (256 x 10240 makes 80 wide tiles for 132 SMs), the K iterations of the
// trailing tiles are dealt out evenly over all CTAs instead, so every SM works to the end.
//
// The plan, in numbers that host and device compute alike:
//   - the first dp_tiles tiles (dp_turns per CTA, whole waves) run as usual, one tile
//     per CTA per turn;
//   - the remaining sk_tiles tiles form one run of sk_tiles * k_tiles iterations, cut into
//     sk_ctas contiguous ranges of equal length (the first `extra` one longer);
//   - a CTA walks its range from the end backwards, one work unit per tile it touches.
//
// A tile cut between CTAs is finished by the CTA holding its last K iteration - always the
// highest-numbered CTA among its contributors. The others park their fp32 partial sums in
// the workspace and raise a flag; the finisher waits for the flags of lower-numbered CTAs
// only. CTAs start in index order, so a CTA waited on has started (or finished) before its
// waiter: no deadlock even if the grid is not all resident at once. Walking backwards puts
// each CTA's parked partial first in its range and the finishing unit last, so the
// finisher rarely waits at all. The finisher adds the partials in a fixed order (its own,
// then from the next-lower CTA downwards): results are bitwise reproducible.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

// The plan is host arithmetic (tested on the CPU) that the kernel repeats on the device.
#if defined(__CUDACC__)
#define ANVIL_HOST_DEVICE __host__ __device__
#else
#define ANVIL_HOST_DEVICE
#endif

namespace anvil::detail {

struct WorkUnit {
  int linear;   // tile index in the scheduler's order
  int k_begin;  // first and one-past-last K tile of this unit
  int k_end;
};

struct StreamKPlan {
  int tiles = 0;
  int k_tiles = 0;
  int ctas = 0;      // the grid
  int dp_turns = 0;  // turns of whole tiles per CTA before the stream-K range (the last may be partial)
  int sk_ctas = 0;   // CTAs sharing the stream-K iterations (the first sk_ctas of the grid)
  int per_cta = 0;   // iterations per stream-K range ...
  int extra = 0;     // ... plus one for the first `extra` ranges

  ANVIL_HOST_DEVICE int dp_tiles() const { return dp_turns * ctas; }

  // First stream-K iteration of CTA c's range (c may be sk_ctas: the end of the run).
  ANVIL_HOST_DEVICE int range_begin(int c) const {
    if (c >= sk_ctas) c = sk_ctas;
    return c * per_cta + (c < extra ? c : extra);
  }

  // The CTA whose range holds stream-K iteration `iteration`.
  ANVIL_HOST_DEVICE int cta_of(int iteration) const {
    const int long_part = extra * (per_cta + 1);
    return iteration < long_part ? iteration / (per_cta + 1) : extra + (iteration - long_part) / per_cta;
  }
};

// The shortest stream-K range: below this, parking and adding partials outweighs the
// K iterations a piece carries.
inline constexpr int kStreamKMinIterations = 4;

// The plan for `tiles` output tiles of `k_tiles` iterations on a grid of `ctas`. Tiles that
// fill whole waves stay data-parallel, except the last full wave, which joins the partial
// one: each CTA then gets at least one tile's worth of iterations, so a tile is cut into
// two or three pieces rather than dozens. min_iterations bounds the range length from
// below (fewer CTAs share the run when it is short). Returns an all data-parallel plan
// (sk_ctas == 0, every tile whole) when the tiles fill whole waves exactly or the run is
// too large for 32-bit iteration indices. tiles must stay below 2^31 (sm90_check).
inline StreamKPlan plan_stream_k(int64_t tiles, int k_tiles, int ctas, int min_iterations = 1) {
  StreamKPlan plan;
  plan.tiles = static_cast<int>(tiles);
  plan.k_tiles = k_tiles;
  plan.ctas = ctas;
  if (ctas <= 0 || k_tiles <= 0 || tiles <= 0) return plan;
  const int64_t full_waves = tiles / ctas;
  const int64_t dp_turns = full_waves > 0 && tiles % ctas != 0 ? full_waves - 1 : full_waves;
  const int64_t sk_tiles = tiles - dp_turns * ctas;
  const int64_t iterations = sk_tiles * k_tiles;
  if (sk_tiles == 0 || iterations >= (int64_t{1} << 31)) {
    plan.dp_turns = static_cast<int>((tiles + ctas - 1) / ctas);
    return plan;
  }
  if (min_iterations < 1) min_iterations = 1;
  const int64_t sk_ctas = std::min<int64_t>(ctas, std::max<int64_t>(1, iterations / min_iterations));
  plan.dp_turns = static_cast<int>(dp_turns);
  plan.sk_ctas = static_cast<int>(sk_ctas);
  plan.per_cta = static_cast<int>(iterations / sk_ctas);
  plan.extra = static_cast<int>(iterations % sk_ctas);
  return plan;
}

// One CTA's work units in order: its data-parallel tiles, then its stream-K range from
// the end backwards. Producer and consumers walk the same sequence.
struct StreamKCursor {
  const StreamKPlan* plan;
  int cta;
  int turn = 0;
  int sk_begin, sk_end;  // the part of the range not yet handed out

  ANVIL_HOST_DEVICE StreamKCursor(const StreamKPlan& p, int cta_index)
      : plan(&p), cta(cta_index), sk_begin(p.range_begin(cta_index)), sk_end(p.range_begin(cta_index + 1)) {}

  ANVIL_HOST_DEVICE bool next(WorkUnit* unit) {
    // Whole tiles; in an all data-parallel plan the last turn leaves some CTAs without one.
    if (turn < plan->dp_turns && cta + turn * plan->ctas < plan->tiles) {
      *unit = WorkUnit{cta + turn * plan->ctas, 0, plan->k_tiles};
      ++turn;
      return true;
    }
    if (sk_end <= sk_begin) return false;
    const int tile = (sk_end - 1) / plan->k_tiles;
    const int tile_start = tile * plan->k_tiles;
    const int begin = sk_begin > tile_start ? sk_begin : tile_start;
    *unit = WorkUnit{plan->dp_tiles() + tile, begin - tile_start, sk_end - tile_start};
    sk_end = begin;
    return true;
  }
};

// Where the parked partials and their flags live (the caller's workspace).
struct StreamKWorkspace {
  float* partials = nullptr;  // [cta][consumer][float4 j][thread]
  int* flags = nullptr;       // [cta][consumer]; zeroed before each launch, 1 once the partial is parked
};

// Bytes of workspace stream-K needs: one parked partial (the consumer warpgroups' share
// of a tile in fp32) and one flag per warpgroup, per CTA of the grid.
inline size_t stream_k_partial_bytes(int ctas, int tile_elements) {
  return static_cast<size_t>(ctas) * static_cast<size_t>(tile_elements) * sizeof(float);
}
inline size_t stream_k_flag_bytes(int ctas, int consumers) {
  return (static_cast<size_t>(ctas) * static_cast<size_t>(consumers) * sizeof(int) + 255) / 256 * 256;
}

}  // namespace anvil::detail
