#include "system_info.h"

#include <cstdio>
#include <cstdlib>
#include <ctime>

namespace bench {

std::optional<std::string> first_line_of(const std::string& command) {
  // stderr is dropped so a missing tool does not clutter the bench's own output.
  std::string full = command + " 2>/dev/null";
  FILE* pipe = popen(full.c_str(), "r");
  if (!pipe) return std::nullopt;
  std::string line;
  char buf[256];
  bool got = false;
  if (std::fgets(buf, sizeof(buf), pipe)) {
    line = buf;
    got = true;
  }
  // Drain the rest so the child is not killed by SIGPIPE before pclose reads its status.
  while (std::fgets(buf, sizeof(buf), pipe)) {
  }
  int rc = pclose(pipe);
  if (!got || rc != 0) return std::nullopt;
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r' || line.back() == ' '))
    line.pop_back();
  size_t start = line.find_first_not_of(' ');
  if (start == std::string::npos) return std::nullopt;
  return line.substr(start);
}

std::optional<double> sm_clock_mhz(const std::string& pci_bus_id) {
  std::string cmd = "nvidia-smi --query-gpu=clocks.sm --format=csv,noheader,nounits";
  // The bus id comes from the CUDA runtime (hex digits, ':' and '.'), so it is safe to
  // pass to the shell; anything else is ignored rather than quoted.
  bool safe = !pci_bus_id.empty();
  for (char c : pci_bus_id) {
    bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') ||
              c == ':' || c == '.';
    if (!ok) safe = false;
  }
  std::optional<std::string> line;
  if (safe) line = first_line_of(cmd + " -i " + pci_bus_id);
  if (!line) line = first_line_of(cmd);
  if (!line) return std::nullopt;
  char* end = nullptr;
  double mhz = std::strtod(line->c_str(), &end);
  if (end == line->c_str() || mhz <= 0) return std::nullopt;  // "[N/A]" and the like
  return mhz;
}

std::string commit_id() {
  if (const char* env = std::getenv("ANVIL_COMMIT"); env && *env) return env;
  if (auto line = first_line_of("git rev-parse --short HEAD")) return *line;
  return "unknown";
}

std::string utc_now_iso8601() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace bench
