// quiver::Module: looking kernels up by their canonical name.
#include <algorithm>
#include <string>

#include "api/impl.h"

namespace quiver {
namespace {
const detail::ModuleImpl& checked(const std::shared_ptr<detail::ModuleImpl>& impl) {
  if (!impl) throw Error(ErrorCode::InvalidArgument, "quiver::Module is empty (moved-from)");
  return *impl;
}
}  // namespace

bool Module::has_kernel(std::string_view name) const {
  const detail::ModuleImpl& m = checked(impl_);
  // The image description starts with its target: "cubin sm_90", "cpu x86_64", "spirv ...".
  std::string_view image = m.image();
  std::optional<format::Target> loaded = format::target_from_string(image.substr(0, image.find(' ')));
  // Then its arch ("sm_90a"): a kernel limited to some archs (QV_TARGETS(ptx:sm_90a)) is only in
  // those images of its target.
  std::string_view arch = image.find(' ') == std::string_view::npos ? std::string_view() : image.substr(image.find(' ') + 1);
  arch = arch.substr(0, arch.find(' '));
  for (const format::Kernel& k : m.manifest().kernels) {
    if (k.name != name) continue;
    if (!loaded || std::find(k.targets.begin(), k.targets.end(), *loaded) == k.targets.end()) return false;
    for (const format::Image& img : m.manifest().images)
      if (img.target == *loaded && img.arch == arch)
        return std::find(img.kernels.begin(), img.kernels.end(), k.symbol) != img.kernels.end();
    return true;
  }
  return false;
}

Kernel Module::kernel(std::string_view name) const {
  const detail::ModuleImpl& m = checked(impl_);
  const std::vector<format::Kernel>& kernels = m.manifest().kernels;
  for (size_t i = 0; i < kernels.size(); ++i) {
    if (kernels[i].name == name) return Kernel(impl_, i, kernels[i].name);
  }
  std::string list;
  for (const format::Kernel& k : kernels) {
    if (!list.empty()) list += ", ";
    list += k.name;
  }
  throw Error(ErrorCode::NotFound, "kernel '" + std::string(name) + "' not found in '" +
                                       m.label() + "'; its kernels are: " +
                                       (list.empty() ? std::string("(none)") : list));
}

std::vector<std::string> Module::kernel_names() const {
  const detail::ModuleImpl& m = checked(impl_);
  std::vector<std::string> names;
  names.reserve(m.manifest().kernels.size());
  for (const format::Kernel& k : m.manifest().kernels) names.push_back(k.name);
  return names;
}

std::string_view Module::backend_image() const { return checked(impl_).image(); }

}  // namespace quiver
