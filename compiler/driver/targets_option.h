// `--targets ptx:sm_80,sm_90;spirv;cpu`: which targets to build, each with its arch list. The
// names are the target registry's (compiler/targets/registry.cpp).
#pragma once

#include <string>
#include <vector>

namespace quiver::compiler {

struct TargetRequest {
  std::string name;                 // "ptx", "spirv", "cpu", ...
  std::vector<std::string> archs;   // empty = the target's defaults
};

// Empty or "all": every registry target, in registry order. Throws std::invalid_argument naming
// the bad entry (an unknown target's message lists the registry's).
std::vector<TargetRequest> parse_targets(const std::string& spec);

// The help text of --targets, which names every registry target.
std::string targets_help();

}  // namespace quiver::compiler
