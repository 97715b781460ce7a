// The grouped GEMM's public entry points: validation, the plan, the device error word.
#include <cstdint>
#include <cstring>

#include "anvil/grouped.h"
#include "host/grouped_launch.h"
#include "host/registry.h"
#include "host/validate.h"
#include "plan/grouped_plan.h"
#include "plan/launch.h"

namespace anvil {
namespace detail {
namespace {

constexpr int64_t kMaxExtent = int64_t{1} << 30;
constexpr int64_t kMaxExperts = int64_t{1} << 16;

bool is_half(DataType t) { return t == DataType::kBF16 || t == DataType::kF16; }
bool is_known(DataType t) { return is_half(t) || t == DataType::kF32; }
bool is_known_input(DataType t) { return is_known(t) || t == DataType::kE4M3 || t == DataType::kE5M2; }
int64_t element_bytes(DataType t) {
  if (t == DataType::kF32) return 4;
  return t == DataType::kE4M3 || t == DataType::kE5M2 ? 1 : 2;
}

struct Span {
  uintptr_t begin, end;
};
bool overlap(Span x, Span y) { return x.begin < y.end && y.begin < x.end; }
Span span_of(const void* p, int64_t bytes) {
  const auto b = reinterpret_cast<uintptr_t>(p);
  return {b, b + static_cast<uintptr_t>(bytes)};
}

}  // namespace

int64_t grouped_output_cols(const GroupedGemmDesc& d) {
  return d.epilogue.activation == Activation::kSwiGLU ? d.n / 2 : d.n;
}

// Rows of A and D: all tokens (contiguous) or E x max_rows (masked).
int64_t grouped_storage_rows(const GroupedGemmDesc& d) {
  return d.layout == GroupedLayout::kMasked ? d.experts * d.rows : d.rows;
}

int64_t grouped_scale_a_floats(const GroupedGemmDesc& d) {
  switch (d.scales) {
    case ScaleMode::kTensor: return 1;
    case ScaleMode::kRowColumn: return grouped_storage_rows(d);
    case ScaleMode::kBlock128: return (d.k + 127) / 128 * grouped_storage_rows(d);
    default: return 0;
  }
}

int64_t grouped_scale_b_floats_per_expert(const GroupedGemmDesc& d) {
  switch (d.scales) {
    case ScaleMode::kTensor: return 1;
    case ScaleMode::kRowColumn: return d.n;
    case ScaleMode::kBlock128: return (d.n + 127) / 128 * ((d.k + 127) / 128);
    default: return 0;
  }
}

Status validate_grouped_desc(const GroupedGemmDesc& d, Diagnostic* diag) {
  if (d.layout != GroupedLayout::kContiguous && d.layout != GroupedLayout::kMasked) {
    return fail(diag, Status::kInvalidArgument, "grouped: unknown layout %d", static_cast<int>(d.layout));
  }
  if (d.index_type != IndexType::kInt32 && d.index_type != IndexType::kInt64) {
    return fail(diag, Status::kInvalidArgument, "grouped: unknown index type %d", static_cast<int>(d.index_type));
  }
  if (d.offsets_are_ends && d.layout != GroupedLayout::kContiguous) {
    return fail(diag, Status::kInvalidArgument, "grouped: offsets_are_ends applies to the contiguous layout (masked takes counts)");
  }
  if (d.experts < 1 || d.experts > kMaxExperts) {
    return fail(diag, Status::kInvalidArgument, "grouped: experts must be in [1, %lld], got %lld",
                static_cast<long long>(kMaxExperts), static_cast<long long>(d.experts));
  }
  if (d.n < 1 || d.k < 1 || d.rows < 0) {
    return fail(diag, Status::kInvalidArgument, "grouped: sizes must be n >= 1, k >= 1, rows >= 0 (n=%lld k=%lld rows=%lld)",
                static_cast<long long>(d.n), static_cast<long long>(d.k), static_cast<long long>(d.rows));
  }
  if (d.n > kMaxExtent || d.k > kMaxExtent || grouped_storage_rows(d) > kMaxExtent) {
    return fail(diag, Status::kNotSupported, "grouped: n, k and the rows of A must stay below 2^30");
  }
  if (!is_known_input(d.input) || !is_known_input(d.output) || !is_known_input(d.epilogue.bias_dtype)) {
    return fail(diag, Status::kInvalidArgument, "grouped: unknown dtype value");
  }
  if (!is_known(d.output) || !is_known(d.epilogue.bias_dtype)) {
    return fail(diag, Status::kNotSupported, "grouped: D and the bias are bf16, fp16 or fp32 (got D %s, bias %s)",
                to_string(d.output), to_string(d.epilogue.bias_dtype));
  }
  if (!is_half(d.input) && d.input != DataType::kE4M3) {
    return fail(diag, Status::kNotSupported, "grouped: A and W must be bf16, fp16 or e4m3 (got %s)", to_string(d.input));
  }
  const int scales = static_cast<int>(d.scales);
  if (scales < 0 || scales > static_cast<int>(ScaleMode::kBlock128)) {
    return fail(diag, Status::kInvalidArgument, "grouped: unknown scale mode %d", scales);
  }
  if (d.input != DataType::kE4M3 && d.scales != ScaleMode::kNone) {
    return fail(diag, Status::kNotSupported, "grouped: scales (%s) apply to e4m3 inputs only; A and W are %s",
                to_string(d.scales), to_string(d.input));
  }
  const auto act = d.epilogue.activation;
  if (static_cast<int>(act) < 0 || static_cast<int>(act) > static_cast<int>(Activation::kSwiGLU)) {
    return fail(diag, Status::kInvalidArgument, "grouped: unknown activation %d", static_cast<int>(act));
  }
  if (d.epilogue.bias != BiasMode::kNone && d.epilogue.bias != BiasMode::kPerColumn) {
    return fail(diag, Status::kNotSupported, "grouped: the bias is one vector of N per expert (kPerColumn) or none");
  }
  if (act == Activation::kSwiGLU && d.n % 128 != 0) {
    return fail(diag, Status::kNotSupported,
                "grouped: SwiGLU needs the GEMM width n to be a multiple of 128 (gate/up blocks of 64), got %lld",
                static_cast<long long>(d.n));
  }
  // TMA reads rows of A and W at 16-byte aligned addresses: 8 half or 16 e4m3 values.
  const int64_t k_multiple = 16 / element_bytes(d.input);
  if (d.k % k_multiple != 0) {
    return fail(diag, Status::kMisalignedOperand,
                "grouped: K must be a multiple of %lld %s elements (TMA reads rows of A and W 16-byte aligned), got %lld",
                static_cast<long long>(k_multiple), to_string(d.input), static_cast<long long>(d.k));
  }
  if (d.expected_rows_per_expert < 0) {
    return fail(diag, Status::kInvalidArgument, "grouped: expected_rows_per_expert must be >= 0");
  }
  // The device numbers tiles in 32-bit integers.
  if (grouped_max_tiles(d, 64, 128) > (int64_t{1} << 30)) {
    return fail(diag, Status::kNotSupported, "grouped: too many tiles");
  }
  return Status::kSuccess;
}

Status validate_grouped_args(const GroupedGemmDesc& d, const GroupedGemmArgs& a, Diagnostic* diag) {
  const int64_t storage_rows = grouped_storage_rows(d);
  if (storage_rows == 0) return Status::kSuccess;  // nothing is read or written
  if (a.a == nullptr || a.w == nullptr || a.d == nullptr || a.bounds == nullptr) {
    return fail(diag, Status::kInvalidArgument, "grouped: a, w, d and %s must be set",
                d.layout == GroupedLayout::kMasked ? "the counts (bounds)" : "the offsets (bounds)");
  }
  if (d.epilogue.bias != BiasMode::kNone && a.bias == nullptr) {
    return fail(diag, Status::kInvalidArgument, "grouped: the bias mode needs a bias pointer");
  }
  if (reinterpret_cast<uintptr_t>(a.a) % 16 != 0 || reinterpret_cast<uintptr_t>(a.w) % 16 != 0) {
    return fail(diag, Status::kMisalignedOperand, "grouped: TMA needs 16-byte aligned A and W");
  }
  if (reinterpret_cast<uintptr_t>(a.d) % element_bytes(d.output) != 0 ||
      (a.bias != nullptr && reinterpret_cast<uintptr_t>(a.bias) % element_bytes(d.epilogue.bias_dtype) != 0)) {
    return fail(diag, Status::kMisalignedOperand, "grouped: D and the bias must be aligned to their element size");
  }
  const uintptr_t index_bytes = d.index_type == IndexType::kInt64 ? 8 : 4;
  if (reinterpret_cast<uintptr_t>(a.bounds) % index_bytes != 0 || reinterpret_cast<uintptr_t>(a.error_flags) % 4 != 0) {
    return fail(diag, Status::kMisalignedOperand, "grouped: offsets/counts and the error word must be aligned to their type");
  }
  if (d.scales != ScaleMode::kNone) {
    if (a.scale_a == nullptr || a.scale_b == nullptr) {
      return fail(diag, Status::kInvalidArgument, "grouped: %s scales: scale_%s is null", to_string(d.scales),
                  a.scale_a == nullptr ? "a" : "b");
    }
    if (reinterpret_cast<uintptr_t>(a.scale_a) % 4 != 0 || reinterpret_cast<uintptr_t>(a.scale_b) % 4 != 0) {
      return fail(diag, Status::kMisalignedOperand, "grouped: scale_a and scale_b are fp32 arrays: 4-byte aligned");
    }
  }
  const Span d_span = span_of(a.d, storage_rows * grouped_output_cols(d) * element_bytes(d.output));
  const Span a_span = span_of(a.a, storage_rows * d.k * element_bytes(d.input));
  const Span w_span = span_of(a.w, d.experts * d.n * d.k * element_bytes(d.input));
  if (overlap(d_span, a_span) || overlap(d_span, w_span)) {
    return fail(diag, Status::kInvalidArgument, "grouped: D overlaps A or W");
  }
  if (d.scales != ScaleMode::kNone) {
    const int64_t b_floats = (d.scale_b_per_expert ? d.experts : 1) * grouped_scale_b_floats_per_expert(d);
    if (overlap(d_span, span_of(a.scale_a, grouped_scale_a_floats(d) * 4)) ||
        overlap(d_span, span_of(a.scale_b, b_floats * 4))) {
      return fail(diag, Status::kInvalidArgument, "grouped: D overlaps scale_a or scale_b");
    }
  }
  return Status::kSuccess;
}

}  // namespace detail

using namespace detail;

Status can_implement(const GroupedGemmDesc& desc, const GroupedGemmArgs* args, Diagnostic* diag) {
  Status s = validate_grouped_desc(desc, diag);
  if (s != Status::kSuccess) return s;
  if (args != nullptr) {
    s = validate_grouped_args(desc, *args, diag);
    if (s != Status::kSuccess) return s;
  }
  return validate_device(diag);
}

size_t grouped_workspace_size(const GroupedGemmDesc&) { return 0; }

const char* grouped_dispatch_name(const GroupedGemmDesc& desc) {
  if (validate_grouped_desc(desc, nullptr) != Status::kSuccess) return nullptr;
  const GroupedPlan plan = plan_grouped(desc, current_device_info());
  return grouped_variant_name(plan.variant, plan.fp8, plan.block_scales);
}

Status grouped_gemm(const GroupedGemmDesc& desc, const GroupedGemmArgs& args, Diagnostic* diag) {
  const Status s = can_implement(desc, &args, diag);
  if (s != Status::kSuccess) return s;
  if (grouped_storage_rows(desc) == 0) return Status::kSuccess;
  return launch_grouped_plan(plan_grouped(desc, current_device_info()), desc, args, diag);
}

Status grouped_error_status(int flags, Diagnostic* diag) {
  if (flags == 0) return Status::kSuccess;
  return fail(diag, Status::kInvalidArgument, "grouped: invalid routing bounds (error word 0x%x):%s%s%s%s", flags,
              (flags & kGroupedOffsetsDecrease) != 0 ? " offsets decrease (unsorted);" : "",
              (flags & kGroupedOffsetsOutOfRange) != 0 ? " an offset lies outside [0, rows];" : "",
              (flags & kGroupedCountOutOfRange) != 0 ? " a count lies outside [0, max_rows];" : "",
              " those experts were skipped");
}

Status check_grouped_bounds(const GroupedGemmDesc& desc, const int64_t* b, Diagnostic* diag) {
  if (b == nullptr) return fail(diag, Status::kInvalidArgument, "grouped: no bounds given");
  if (desc.layout == GroupedLayout::kContiguous && desc.offsets_are_ends) {
    // E ends: the rules of E + 1 offsets whose first is 0.
    for (int64_t e = 0; e < desc.experts; ++e) {
      const int64_t begin = e == 0 ? 0 : b[e - 1];
      if (b[e] < begin) {
        return fail(diag, Status::kInvalidArgument,
                    "grouped: row ends decrease at expert %lld (%lld < %lld): tokens must be sorted by expert",
                    static_cast<long long>(e), static_cast<long long>(b[e]), static_cast<long long>(begin));
      }
      if (b[e] < 0 || b[e] > desc.rows) {
        return fail(diag, Status::kInvalidArgument, "grouped: expert %lld's row end %lld lies outside [0, rows = %lld]",
                    static_cast<long long>(e), static_cast<long long>(b[e]), static_cast<long long>(desc.rows));
      }
    }
    return Status::kSuccess;
  }
  for (int64_t e = 0; e < desc.experts; ++e) {
    if (desc.layout == GroupedLayout::kMasked) {
      if (b[e] < 0 || b[e] > desc.rows) {
        return fail(diag, Status::kInvalidArgument, "grouped: counts[%lld] = %lld lies outside [0, max_rows = %lld]",
                    static_cast<long long>(e), static_cast<long long>(b[e]), static_cast<long long>(desc.rows));
      }
      continue;
    }
    if (b[e + 1] < b[e]) {
      return fail(diag, Status::kInvalidArgument,
                  "grouped: offsets decrease at expert %lld (offsets[%lld] = %lld > offsets[%lld] = %lld): tokens must be sorted by expert",
                  static_cast<long long>(e), static_cast<long long>(e), static_cast<long long>(b[e]),
                  static_cast<long long>(e + 1), static_cast<long long>(b[e + 1]));
    }
    if (b[e] < 0 || b[e + 1] > desc.rows) {
      return fail(diag, Status::kInvalidArgument, "grouped: expert %lld's rows [%lld, %lld) leave [0, rows = %lld]",
                  static_cast<long long>(e), static_cast<long long>(b[e]), static_cast<long long>(b[e + 1]),
                  static_cast<long long>(desc.rows));
    }
  }
  return Status::kSuccess;
}

}  // namespace anvil
