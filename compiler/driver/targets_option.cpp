#include "driver/targets_option.h"

#include "targets/target.h"

#include <sstream>
#include <stdexcept>

namespace quiver::compiler {

static std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep)) {
    cur.erase(0, cur.find_first_not_of(" \t"));
    cur.erase(cur.find_last_not_of(" \t") + 1);
    if (!cur.empty()) out.push_back(cur);
  }
  return out;
}

// "ptx, spirv, cpu, ...": the registry's names, for messages.
static std::string joined_names() {
  std::string out;
  for (const std::string& name : target_names()) out += (out.empty() ? "" : ", ") + name;
  return out;
}

std::vector<TargetRequest> parse_targets(const std::string& spec) {
  std::vector<TargetRequest> out;
  if (spec.empty() || spec == "all") {
    for (const std::string& name : target_names()) out.push_back({name, {}});
    return out;
  }
  for (const std::string& entry : split(spec, ';')) {
    TargetRequest r;
    auto colon = entry.find(':');
    r.name = entry.substr(0, colon);
    if (colon != std::string::npos) r.archs = split(entry.substr(colon + 1), ',');
    if (!find_target(r.name))
      throw std::invalid_argument("unknown target '" + r.name + "' in --targets (known: " + joined_names() + ")");
    for (const auto& prev : out)
      if (prev.name == r.name) throw std::invalid_argument("target '" + r.name + "' is listed twice in --targets");
    if (colon != std::string::npos && r.archs.empty())
      throw std::invalid_argument("target '" + r.name + "' has an empty architecture list in --targets");
    out.push_back(std::move(r));
  }
  return out;
}

std::string targets_help() {
  return "targets and archs, e.g. 'ptx:sm_80,sm_90;spirv;cpu' (targets: " + joined_names() + "; default: all)";
}

}  // namespace quiver::compiler
