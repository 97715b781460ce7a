// Between the grouped GEMM's entry points (grouped.cpp) and its kernels (gemm_grouped.cu).
#pragma once

#include "anvil/grouped.h"
#include "plan/grouped_plan.h"

namespace anvil::detail {

int64_t grouped_output_cols(const GroupedGemmDesc& d);
int64_t grouped_storage_rows(const GroupedGemmDesc& d);
// The floats of scale_a, and of scale_b per expert, that the scale mode reads (grouped.h).
int64_t grouped_scale_a_floats(const GroupedGemmDesc& d);
int64_t grouped_scale_b_floats_per_expert(const GroupedGemmDesc& d);
Status validate_grouped_desc(const GroupedGemmDesc& d, Diagnostic* diag);
Status validate_grouped_args(const GroupedGemmDesc& d, const GroupedGemmArgs& a, Diagnostic* diag);

// Launches exactly `plan` (gemm_grouped.cu); desc and args already validated.
Status launch_grouped_plan(const GroupedPlan& plan, const GroupedGemmDesc& desc, const GroupedGemmArgs& args,
                           Diagnostic* diag);

}  // namespace anvil::detail
