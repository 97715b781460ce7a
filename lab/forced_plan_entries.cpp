// Measurement-only registry entries (the lab's, not the product's): sm90-gemm with one
// choice of the planner forced, under the names anvil-bench and the tests use. Each is a
// set of PlanOverrides run through the internal entry point, so the library holds no
// forced path of its own.
#include <cstdint>

#include "host/registry.h"
#include "plan/launch.h"

namespace anvil::detail {

extern const KernelInfo kSm90Gemm;

namespace {

constexpr const char* kPingPongName = "sm90-gemm-pingpong";
constexpr const char* kStreamKName = "sm90-gemm-streamk";
constexpr char kFitName[] = "sm90-gemm-fit";
constexpr const char* kPow2Name = "sm90-gemm-pow2";
constexpr const char* kPairNName = "sm90-gemm-pair-n";
constexpr char kNarrow64Name[] = "sm90-gemm-narrow64";
constexpr char kNarrow96Name[] = "sm90-gemm-narrow96";
constexpr const char* kSplitKName = "sm90-gemm-splitk4";
constexpr int kForcedSlices = 4;

PlanOverrides sm90_with_variant(Sm90Variant v) {
  PlanOverrides o;
  o.family = KernelFamily::kSm90Gemm;
  o.sm90_variant = static_cast<int>(v);
  return o;
}

PlanOverrides pingpong() { return sm90_with_variant(Sm90Variant::kPingPongPair); }
PlanOverrides stream_k() { return sm90_with_variant(Sm90Variant::kTallStreamK); }
PlanOverrides pair_n() { return sm90_with_variant(Sm90Variant::kWidePairN); }
PlanOverrides narrow64() { return sm90_with_variant(Sm90Variant::kFitNarrow64); }
PlanOverrides narrow96() { return sm90_with_variant(Sm90Variant::kFitNarrow96); }
PlanOverrides fit() {
  PlanOverrides o;
  o.family = KernelFamily::kSm90Gemm;
  o.sm90_fit_only = true;
  return o;
}
PlanOverrides split_k() {
  PlanOverrides o;
  o.family = KernelFamily::kSm90Gemm;
  o.split_k_slices = kForcedSlices;
  return o;
}
PlanOverrides pow2() {
  PlanOverrides o;
  o.family = KernelFamily::kSm90Gemm;
  o.fit_widths = false;
  return o;
}

// One entry's launch and workspace: the planner with the entry's overrides.
template <PlanOverrides (*kOverrides)()>
Status launch(const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag) {
  const PlanOverrides overrides = kOverrides();
  LaunchPlan plan;
  const Status s = plan_for(desc, &args, &overrides, &plan, diag);
  return s != Status::kSuccess ? s : launch_plan(plan, desc, args, diag);
}

template <PlanOverrides (*kOverrides)()>
size_t workspace(const GemmDesc& desc, const GemmArgs* args) {
  const PlanOverrides overrides = kOverrides();
  return workspace_size(desc, args, &overrides);
}

Status check(const GemmDesc& desc, const GemmArgs* args, Diagnostic* diag) { return kSm90Gemm.check(desc, args, diag); }

// The fitted widths (160-224 columns, and the narrow 64 and 96) are not whole 128-column
// gate/up pairs: the entry named kName refuses SwiGLU.
template <const char* kName>
Status check_fitted(const GemmDesc& desc, const GemmArgs* args, Diagnostic* diag) {
  if (desc.epilogue.activation == Activation::kSwiGLU) {
    return fail(diag, Status::kNotSupported, "%s: SwiGLU needs 128-column gate/up pairs, which a fitted width is not",
                kName);
  }
  return check(desc, args, diag);
}

// Split-K runs where the slices can be batch-stride views of the operands: K-major A and B
// read in place, one matrix, K in four slices of whole 16-byte groups, and not in
// batch-invariant mode. Refusing the rest keeps the entry from quietly running whole tiles.
Status check_split_k(const GemmDesc& desc, const GemmArgs* args, Diagnostic* diag) {
  const bool in_place = desc.a.order == Order::kRowMajor && desc.b.order == Order::kColMajor && desc.a.ld % 8 == 0 &&
                        desc.b.ld % 8 == 0 &&
                        (args == nullptr || (reinterpret_cast<uintptr_t>(args->a) % 16 == 0 &&
                                             reinterpret_cast<uintptr_t>(args->b) % 16 == 0));
  if (!in_place || desc.batch != 1 || desc.batch_invariant || desc.k % (8 * kForcedSlices) != 0) {
    return fail(diag, Status::kNotSupported,
                "%s: needs K-major A and B read in place, batch 1, K a multiple of %d, no batch invariance", kSplitKName,
                8 * kForcedSlices);
  }
  return check(desc, args, diag);
}

}  // namespace

extern const KernelInfo kSm90GemmSplitK4{kSplitKName,
                                         "sm90-gemm's split-K forced to 4 slices: the slices as one strided-batched "
                                         "launch into fp32 partials in the workspace, summed in slice order with the "
                                         "fused epilogue (for tests and measurement)",
                                         check_split_k, launch<split_k>, workspace<split_k>};
extern const KernelInfo kSm90GemmPingPong{kPingPongName,
                                          "sm90-gemm's ping-pong schedule: 128x128 tiles taken in turn by the two "
                                          "consumer warpgroups (epilogue overlaps the other's mainloop), 2-CTA multicast; "
                                          "what sm90-gemm runs for fused epilogues",
                                          check, launch<pingpong>, workspace<pingpong>};
extern const KernelInfo kSm90GemmFit{kFitName,
                                     "sm90-gemm's fitted widths on every problem: 128x160, 128x192 or 128x224 tiles "
                                     "(whichever pays fewer waves x width) in multicasting 2-CTA clusters or single "
                                     "CTAs, TMA stores for whole 64-column boxes (for tests and measurement)",
                                     check_fitted<kFitName>, launch<fit>, workspace<fit>};
extern const KernelInfo kSm90GemmPow2{kPow2Name,
                                      "sm90-gemm choosing among its 128- and 256-wide tiles and stream-K only, "
                                      "without fitted widths or row split (for measurement against them)",
                                      check, launch<pow2>, workspace<pow2>};
extern const KernelInfo kSm90GemmPairN{kPairNName,
                                       "sm90-gemm's 128x256 tiles in 2-CTA clusters along N multicasting A, on every "
                                       "problem (what sm90-gemm runs for an odd number of 128-row tiles; for tests "
                                       "and measurement)",
                                       check, launch<pair_n>, workspace<pair_n>};
extern const KernelInfo kSm90GemmNarrow64{kNarrow64Name,
                                          "sm90-gemm's 128x64 tiles in single CTAs, on every problem (a narrow "
                                          "fitted width; for tests and measurement)",
                                          check_fitted<kNarrow64Name>, launch<narrow64>, workspace<narrow64>};
extern const KernelInfo kSm90GemmNarrow96{kNarrow96Name,
                                          "sm90-gemm's 128x96 tiles in single CTAs, on every problem (a narrow "
                                          "fitted width; for tests and measurement)",
                                          check_fitted<kNarrow96Name>, launch<narrow96>, workspace<narrow96>};
extern const KernelInfo kSm90GemmStreamK{kStreamKName,
                                         "sm90-gemm's stream-K configuration on every problem, whatever the wave plan "
                                         "says: 256x128 tiles, the last waves' K iterations spread over all SMs, "
                                         "partials fixed up in a fixed order (for tests and measurement)",
                                         check, launch<stream_k>, workspace<stream_k>};

}  // namespace anvil::detail
