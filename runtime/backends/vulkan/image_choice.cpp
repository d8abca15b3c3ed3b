#include "image_choice.h"

#include <cstdio>
#include <map>
#include <string_view>
#include <unordered_map>

namespace quiver::backend::vulkan {
namespace {

// VkComponentTypeKHR values (the NV extension's VkComponentTypeNV has the same numbering).
const char* component_name(uint32_t type) {
  switch (type) {
    case 0: return "f16";
    case 1: return "f32";
    case 2: return "f64";
    case 3: return "i8";
    case 4: return "i16";
    case 5: return "i32";
    case 6: return "i64";
    case 7: return "u8";
    case 8: return "u16";
    case 9: return "u32";
    case 10: return "u64";
    case 1000141000: return "bf16";   // VK_COMPONENT_TYPE_BFLOAT16_KHR
    default: return nullptr;
  }
}

const char* scope_name(uint32_t scope) {
  switch (scope) {
    case 1: return "device";
    case 2: return "workgroup";
    case 3: return "subgroup";
    case 5: return "queue_family";
    default: return nullptr;
  }
}

}  // namespace

std::string cooperative_matrix_granularity_offer(const VkCooperativeMatrixFlexibleDimensionsPropertiesNV& p) {
  const char* a = component_name(p.AType);
  const char* b = component_name(p.BType);
  const char* c = component_name(p.CType);
  if (!a || !b || !c || p.ResultType != p.CType || p.saturatingAccumulation || p.scope != 2 || p.workgroupInvocations == 0)
    return "";
  return "cooperative_matrix_workgroup_granularity:" + std::to_string(p.MGranularity) + "x" +
         std::to_string(p.NGranularity) + "x" + std::to_string(p.KGranularity) + ":" + a + "*" + b + "+" + c + ":" +
         std::to_string(p.workgroupInvocations);
}

bool requirement_offered(const std::set<std::string>& offers, const std::string& r) {
  if (offers.count(r)) return true;
  const std::string kind = "cooperative_matrix_workgroup:";
  if (r.compare(0, kind.size(), kind) != 0) return false;
  unsigned m = 0, n = 0, k = 0, threads = 0;
  char types[64] = {};
  int end = 0;
  if (std::sscanf(r.c_str() + kind.size(), "%ux%ux%u:%63[^:]:%u%n", &m, &n, &k, types, &threads, &end) != 5 ||
      r.c_str()[kind.size() + end] != '\0' || m == 0 || n == 0 || k == 0)
    return false;
  unsigned max_dimension = 0;
  for (const std::string& o : offers)
    std::sscanf(o.c_str(), "cooperative_matrix_workgroup_max_dimension:%u", &max_dimension);
  if (m > max_dimension || n > max_dimension || k > max_dimension) return false;
  const std::string granularity = "cooperative_matrix_workgroup_granularity:";
  for (auto it = offers.lower_bound(granularity); it != offers.end() && it->compare(0, granularity.size(), granularity) == 0;
       ++it) {
    unsigned gm = 0, gn = 0, gk = 0, gt = 0;
    char gtypes[64] = {};
    if (std::sscanf(it->c_str() + granularity.size(), "%ux%ux%u:%63[^:]:%u", &gm, &gn, &gk, gtypes, &gt) != 5) continue;
    if (gt == threads && std::string(gtypes) == types && gm && gn && gk && m % gm == 0 && n % gn == 0 && k % gk == 0)
      return true;
  }
  return false;
}

std::string subgroup_size_requirement(uint32_t min_subgroup_size, uint32_t max_subgroup_size) {
  if (min_subgroup_size == 0 || min_subgroup_size != max_subgroup_size) return "";
  return "subgroup_size:" + std::to_string(min_subgroup_size);
}

std::string cooperative_matrix_requirement(const VkCooperativeMatrixPropertiesKHR& p) {
  const char* a = component_name(p.AType);
  const char* b = component_name(p.BType);
  const char* c = component_name(p.CType);
  const char* r = component_name(p.ResultType);
  const char* s = scope_name(p.scope);
  if (!a || !b || !c || !r || !s) return "";   // a type or scope this runtime does not name
  std::string out = "cooperative_matrix:" + std::to_string(p.MSize) + "x" + std::to_string(p.NSize) + "x" +
                    std::to_string(p.KSize) + ":" + a + "*" + b + "+" + c;
  if (p.ResultType != p.CType) out += std::string("->") + r;
  if (p.saturatingAccumulation) out += "(sat)";
  return out + ":" + s;
}

uint32_t parse_vulkan_arch(const std::string& arch) {
  unsigned major = 0, minor = 0;
  int consumed = 0;
  if (std::sscanf(arch.c_str(), "vulkan%u.%u%n", &major, &minor, &consumed) != 2) return 0;
  if (major == 0 || major > 9 || minor > 9) return 0;
  const std::string rest = arch.substr(static_cast<size_t>(consumed));
  if (!rest.empty() && (rest[0] != '_' || rest.size() == 1)) return 0;
  return VK_MAKE_API_VERSION(0, major, minor, 0);
}

bool SpirvChoice::any() const {
  for (int i : image)
    if (i >= 0) return true;
  return false;
}

namespace {

// "a (3 kernels), b (1 kernel)" in first-seen order.
std::string counted(const std::vector<std::pair<std::string, size_t>>& groups, const char* separator) {
  std::string out;
  for (const auto& [what, n] : groups)
    out += (out.empty() ? "" : separator) + what + " (" + std::to_string(n) + (n == 1 ? " kernel)" : " kernels)");
  return out;
}

void count(std::vector<std::pair<std::string, size_t>>& groups, std::map<std::string, size_t>& where,
           const std::string& what) {
  auto [it, added] = where.emplace(what, groups.size());
  if (added) groups.emplace_back(what, 0);
  ++groups[it->second].second;
}

}  // namespace

SpirvChoice choose_spirv_images(const format::Manifest& manifest, uint32_t device_api_version,
                                const std::set<std::string>& offers) {
  const size_t n = manifest.kernels.size();
  SpirvChoice choice;
  choice.image.assign(n, -1);
  choice.why.assign(n, "");
  std::unordered_map<std::string_view, size_t> kernel_of;
  kernel_of.reserve(n);
  for (size_t k = 0; k < n; ++k) kernel_of.emplace(manifest.kernels[k].symbol, k);
  std::vector<uint32_t> best_version(n, 0);
  std::vector<size_t> best_requirements(n, 0);
  std::vector<std::string> has(n), skipped(n);   // per kernel: its SPIR-V images; why some were not taken
  std::vector<std::pair<std::string, size_t>> skip_groups;
  std::map<std::string, size_t> skip_index;
  for (size_t i = 0; i < manifest.images.size(); ++i) {
    const format::Image& image = manifest.images[i];
    if (image.target != format::Target::SPIRV) continue;
    const uint32_t v = parse_vulkan_arch(image.arch);
    const bool version_ok = v != 0 && VK_API_VERSION_MAJOR(v) == VK_API_VERSION_MAJOR(device_api_version) &&
                            VK_API_VERSION_MINOR(v) <= VK_API_VERSION_MINOR(device_api_version);
    std::string missing;
    for (const std::string& r : image.requirements)
      if (!requirement_offered(offers, r)) missing += (missing.empty() ? "" : ", ") + r;
    const std::string not_taken = missing.empty() ? "" : image.arch + " needs " + missing;
    for (const std::string& symbol : image.kernels) {
      auto found = kernel_of.find(symbol);
      if (found == kernel_of.end()) continue;   // the reader checked every symbol: not reached
      const size_t k = found->second;
      has[k] += (has[k].empty() ? "spirv " : ", spirv ") + image.arch;
      if (!version_ok) continue;
      if (!not_taken.empty()) {
        skipped[k] += (skipped[k].empty() ? "" : "; ") + not_taken;
        count(skip_groups, skip_index, not_taken);
        continue;
      }
      const size_t r = image.requirements.size();
      if (choice.image[k] < 0 || v > best_version[k] || (v == best_version[k] && r > best_requirements[k])) {
        choice.image[k] = static_cast<int>(i);
        best_version[k] = v;
        best_requirements[k] = r;
      }
    }
  }
  std::vector<std::pair<std::string, size_t>> taken_groups;
  std::map<std::string, size_t> taken_index;
  for (size_t k = 0; k < n; ++k) {
    if (choice.image[k] >= 0) {
      count(taken_groups, taken_index, manifest.images[static_cast<size_t>(choice.image[k])].arch);
      continue;
    }
    choice.why[k] = "it needs a 'spirv' image of arch vulkan1.2 or another version up to the device's (Vulkan " +
                    std::to_string(VK_API_VERSION_MAJOR(device_api_version)) + "." +
                    std::to_string(VK_API_VERSION_MINOR(device_api_version)) + ") whose requirements the device meets" +
                    (skipped[k].empty() ? "" : " (not " + skipped[k] + ")") + "; the file has for it: " +
                    (has[k].empty() ? std::string("no SPIR-V image") : has[k]);
  }
  choice.taken = counted(taken_groups, ", ");
  choice.skipped = skip_groups.empty() ? "" : "not " + counted(skip_groups, "; ");
  return choice;
}

}  // namespace quiver::backend::vulkan
