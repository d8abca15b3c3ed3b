#include "driver/targets_option.h"

#include <algorithm>
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

std::vector<TargetRequest> parse_targets(const std::string& spec, const std::vector<std::string>& available) {
  static const std::vector<std::string> known = {"ptx", "hsaco", "spirv", "msl", "wgsl", "cpu"};
  std::vector<TargetRequest> out;
  if (spec.empty() || spec == "all") {
    for (const auto& a : available) out.push_back({a, {}});
    return out;
  }
  for (const std::string& entry : split(spec, ';')) {
    TargetRequest r;
    auto colon = entry.find(':');
    r.name = entry.substr(0, colon);
    if (colon != std::string::npos) r.archs = split(entry.substr(colon + 1), ',');
    if (std::find(known.begin(), known.end(), r.name) == known.end())
      throw std::invalid_argument("unknown target '" + r.name + "' in --targets (known: ptx, hsaco, spirv, msl, wgsl, cpu)");
    if (std::find(available.begin(), available.end(), r.name) == available.end())
      throw std::invalid_argument("target '" + r.name + "' is not available in this build of quiverc");
    for (const auto& prev : out)
      if (prev.name == r.name) throw std::invalid_argument("target '" + r.name + "' is listed twice in --targets");
    if (colon != std::string::npos && r.archs.empty())
      throw std::invalid_argument("target '" + r.name + "' has an empty architecture list in --targets");
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace quiver::compiler
