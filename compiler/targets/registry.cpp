// The compiler's target list: one line per folder under compiler/targets/.
#include "targets/target.h"

namespace quiver::compiler {

std::unique_ptr<Target> create_ptx_target();
std::unique_ptr<Target> create_spirv_target();
std::unique_ptr<Target> create_cpu_target();
std::unique_ptr<Target> create_hsaco_target();
std::unique_ptr<Target> create_msl_target();
std::unique_ptr<Target> create_wgsl_target();

std::span<const TargetEntry> target_registry() {
  static const TargetEntry entries[] = {
      {"ptx", create_ptx_target},
      {"spirv", create_spirv_target},
      {"cpu", create_cpu_target},
      {"hsaco", create_hsaco_target},
      {"msl", create_msl_target},
      {"wgsl", create_wgsl_target},
  };
  return entries;
}

}  // namespace quiver::compiler
