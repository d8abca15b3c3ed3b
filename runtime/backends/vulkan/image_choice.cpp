#include "image_choice.h"

#include <cstdio>

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

int choose_spirv_image(const format::Manifest& manifest, uint32_t device_api_version,
                       const std::set<std::string>& offers, std::string& report, std::string& why) {
  int best = -1;
  uint32_t best_version = 0;
  size_t best_requirements = 0;
  std::string skipped;
  for (size_t i = 0; i < manifest.images.size(); ++i) {
    const format::Image& image = manifest.images[i];
    if (image.target != format::Target::SPIRV) continue;
    const uint32_t v = parse_vulkan_arch(image.arch);
    if (v == 0 || VK_API_VERSION_MAJOR(v) != VK_API_VERSION_MAJOR(device_api_version) ||
        VK_API_VERSION_MINOR(v) > VK_API_VERSION_MINOR(device_api_version))
      continue;
    std::string missing;
    for (const std::string& r : image.requirements)
      if (!requirement_offered(offers, r)) missing += (missing.empty() ? "" : ", ") + r;
    if (!missing.empty()) {
      skipped += (skipped.empty() ? "" : "; ") + image.arch + " needs " + missing;
      continue;
    }
    const size_t n = image.requirements.size();
    if (best < 0 || v > best_version || (v == best_version && n > best_requirements)) {
      best = static_cast<int>(i);
      best_version = v;
      best_requirements = n;
    }
  }
  report = skipped.empty() ? "" : "not " + skipped;
  if (best < 0)
    why = "it needs a 'spirv' image of arch vulkan1.2 or another version up to the device's (Vulkan " +
          std::to_string(VK_API_VERSION_MAJOR(device_api_version)) + "." +
          std::to_string(VK_API_VERSION_MINOR(device_api_version)) + ") whose requirements the device meets" +
          (skipped.empty() ? "" : " (" + report + ")") + "; the file has: " + format::describe_images(manifest);
  return best;
}

}  // namespace quiver::backend::vulkan
