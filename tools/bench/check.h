// Error handling for anvil-bench: any failed CUDA or cuBLAS call ends the run with a
// message naming the call, after giving the results gathered so far a chance to be saved
// (a long sweep that dies at the last shape should not lose the others).
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <string>

namespace bench {

// Called once by fatal() with the reason, before exiting; used to write partial results.
void set_fatal_hook(std::function<void(const std::string&)> hook);

[[noreturn]] void fatal(const char* fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

void check_cuda(cudaError_t err, const char* expr, const char* file, int line);

}  // namespace bench

#define BENCH_CUDA(expr) ::bench::check_cuda((expr), #expr, __FILE__, __LINE__)
