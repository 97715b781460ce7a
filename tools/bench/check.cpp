#include "check.h"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>

namespace bench {

namespace {
std::function<void(const std::string&)>& hook_slot() {
  static std::function<void(const std::string&)> hook;
  return hook;
}
}  // namespace

void set_fatal_hook(std::function<void(const std::string&)> hook) { hook_slot() = std::move(hook); }

void fatal(const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  std::fprintf(stderr, "anvil-bench: error: %s\n", buf);
  // Take the hook out first: if saving the partial results fails in turn, the nested
  // fatal() must not recurse into it.
  auto hook = std::move(hook_slot());
  hook_slot() = nullptr;
  if (hook) hook(buf);
  std::exit(1);
}

void check_cuda(cudaError_t err, const char* expr, const char* file, int line) {
  if (err == cudaSuccess) return;
  fatal("%s failed at %s:%d: %s (%s)", expr, file, line, cudaGetErrorName(err),
        cudaGetErrorString(err));
}

}  // namespace bench
