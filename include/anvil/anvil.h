// anvil: hand-written tensor-core GEMM kernels for LLM inference shapes.
#pragma once

#include "anvil/fp8.h"
#include "anvil/gemm.h"
#include "anvil/grouped.h"
#include "anvil/swiglu.h"
#include "anvil/version.h"
#include "anvil/tuning.h"
