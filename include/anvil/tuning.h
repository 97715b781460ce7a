// Tuned plans: measured launch choices that replace the planner's own for the problems
// they name. docs/tuning.md describes the cache format and how anvil-tune makes one.
//
// The library carries a built-in table for the GPUs the project has tuned on. A cache
// made by anvil-tune on the user's own GPU is loaded with load_tuning_cache() or named by
// the environment variable ANVIL_TUNING_CACHE (a path), which is read once, at the first
// gemm(), can_implement(), workspace_size() or dispatch_name() call of the process.
//
// A cache made on another GPU model, SM count or CUDA runtime version is ignored, with
// one warning line on stderr. Every entry is checked when the file is loaded; a tuned
// plan that a call's own checks refuse (an operand's alignment, too small a workspace)
// is not used, and the call runs the planner's own choice.
#pragma once

#include "anvil/gemm.h"

namespace anvil {

// Loads the tuning cache at path, replacing any loaded before (the built-in table stays).
// Errors leave no cache loaded and name the problem: kInvalidArgument for a file that
// cannot be read, is not JSON, has another schema version, or holds an entry with an
// unknown kernel family or variant, a value out of range, or a plan the kernels would
// refuse for the problem it names. Plans already made for earlier calls are dropped, so
// the next call of each problem plans again.
Status load_tuning_cache(const char* path, Diagnostic* diag = nullptr);

// Forgets the loaded cache (the built-in table stays), and the plans made with it.
void clear_tuning_cache();

}  // namespace anvil
