// anvil's version (semantic versioning; the changes are listed in CHANGELOG.md). CMake's
// project(anvil VERSION ...) holds the same numbers and refuses to configure when they
// differ.
#pragma once

#define ANVIL_VERSION_MAJOR 0
#define ANVIL_VERSION_MINOR 2
#define ANVIL_VERSION_PATCH 0
#define ANVIL_VERSION_STRING "0.2.0"

// One number that orders versions: major * 10000 + minor * 100 + patch.
#define ANVIL_VERSION (ANVIL_VERSION_MAJOR * 10000 + ANVIL_VERSION_MINOR * 100 + ANVIL_VERSION_PATCH)
