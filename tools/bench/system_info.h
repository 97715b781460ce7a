// Facts about the run that go into the results file next to the numbers.
#pragma once

#include <optional>
#include <string>

namespace bench {

// Runs a shell command and returns its first output line (trimmed), or nothing when the
// command fails or prints nothing.
std::optional<std::string> first_line_of(const std::string& command);

// The current SM clock in MHz read through nvidia-smi; nothing when nvidia-smi is absent
// or answers something else. pci_bus_id picks the GPU when the host has several.
// nvidia-smi, not NVML: linking NVML would tie the binary to the driver's library.
std::optional<double> sm_clock_mhz(const std::string& pci_bus_id);

// ANVIL_COMMIT, else the checkout's short hash, else "unknown".
std::string commit_id();

// Now in UTC, ISO-8601 ("2026-11-29T12:34:56Z").
std::string utc_now_iso8601();

}  // namespace bench
