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
  // A kernel limited by QV_TARGETS (to targets, or to archs of one: ptx:sm_90a) is in some
  // images only: the question is whether the one loaded lists its symbol.
  const detail::ModuleContents::KernelEntry* k = m.contents().find_kernel(name);
  return k != nullptr && k->in_image;
}

Kernel Module::kernel(std::string_view name) const {
  const detail::ModuleImpl& m = checked(impl_);
  const std::vector<format::Kernel>& kernels = m.manifest().kernels;
  if (const detail::ModuleContents::KernelEntry* k = m.contents().find_kernel(name))
    return Kernel(impl_, k->index, kernels[k->index].name);
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
