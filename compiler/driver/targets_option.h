// `--targets ptx:sm_80,sm_90;spirv;cpu`: which targets to build, each with its arch list.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace quiver::compiler {

struct TargetRequest {
  std::string name;                 // "ptx", "spirv", "cpu", ...
  std::vector<std::string> archs;   // empty = the target's defaults
};

// Throws std::invalid_argument naming the bad entry. `available` are the targets this build
// of quiverc has; `known` every target the language names (an unavailable known target is a
// clear "not available in this build" error, an unknown one is "unknown target").
std::vector<TargetRequest> parse_targets(const std::string& spec, const std::vector<std::string>& available);

}  // namespace quiver::compiler
