// The compiler's target registry: one line per folder under compiler/targets/, naming its
// target and the registration of its passes. Its order is the default build order, so it fixes
// the order of images in every fat binary built without --targets: a new target goes at the end.
#include "targets/target.h"

namespace quiver::compiler {

std::unique_ptr<Target> create_ptx_target();
std::unique_ptr<Target> create_spirv_target();
std::unique_ptr<Target> create_cpu_target();
std::unique_ptr<Target> create_hsaco_target();
std::unique_ptr<Target> create_msl_target();
std::unique_ptr<Target> create_wgsl_target();
void register_ptx_passes();
void register_spirv_passes();
void register_cpu_passes();
void register_hsaco_passes();
void register_msl_passes();
void register_wgsl_passes();

namespace {
// The image kinds of a line, as an array that lives as long as the program.
template <format::Target... kinds>
constexpr format::Target kImages[sizeof...(kinds)] = {kinds...};
}  // namespace

std::span<const TargetEntry> target_registry() {
  // ptx adds cubins where ptxas exists, msl a metallib where Apple's tools do.
  static const TargetEntry entries[] = {
      {"ptx", kImages<format::Target::PTX, format::Target::CUBIN>, create_ptx_target, register_ptx_passes},
      {"spirv", kImages<format::Target::SPIRV>, create_spirv_target, register_spirv_passes},
      {"cpu", kImages<format::Target::CPU>, create_cpu_target, register_cpu_passes},
      {"hsaco", kImages<format::Target::HSACO>, create_hsaco_target, register_hsaco_passes},
      {"msl", kImages<format::Target::MSL, format::Target::METALLIB>, create_msl_target, register_msl_passes},
      {"wgsl", kImages<format::Target::WGSL>, create_wgsl_target, register_wgsl_passes},
  };
  return entries;
}

const TargetEntry* find_target(std::string_view name) {
  for (const TargetEntry& e : target_registry())
    if (e.name == name) return &e;
  return nullptr;
}

void register_passes() {
  for (const TargetEntry& e : target_registry()) e.register_passes();
}

std::vector<std::string> target_names() {
  std::vector<std::string> names;
  for (const TargetEntry& e : target_registry()) names.emplace_back(e.name);
  return names;
}

}  // namespace quiver::compiler
