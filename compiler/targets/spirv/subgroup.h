// Subgroup ops MLIR 19's GPU→SPIR-V patterns leave out or restrict: gpu.lane_id (not lowered at
// all) and gpu.shuffle (lowered only when `width` is a constant equal to the target env's fixed
// subgroup size, which a portable Vulkan module cannot know).
#pragma once

namespace mlir {
class RewritePatternSet;
class SPIRVTypeConverter;
}  // namespace mlir

namespace quiver::compiler::spirv_target {

// gpu.lane_id → SubgroupLocalInvocationId; gpu.shuffle {xor, idx, down, up} →
// OpGroupNonUniformShuffle{Xor,,Down,Up} on the whole subgroup, with `valid` = the source lane
// is below `width` (and, for up, not below lane 0).
void populate_subgroup_patterns(mlir::SPIRVTypeConverter& converter, mlir::RewritePatternSet& patterns);

}  // namespace quiver::compiler::spirv_target
