// Whether this machine can run anvil's kernels, asked once per process by the GPU tests
// and the fuzzer so that both skip with the same reason.
#pragma once

#include <string>

namespace anvil::verify {

// Empty when device 0 is compute capability 9.0; otherwise why not, in words.
std::string sm90_unavailable_reason();

}  // namespace anvil::verify
