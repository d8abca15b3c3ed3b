// The spirv target's passes: on the neutral IR, the conversion of each kernel's gpu.module, and
// on each kernel's spirv.module until it is whole (the msl target runs them too, through the
// spirv target).
include "ir/PassBase.td"

def Exp2ToGlslStandIn : QvPass<"qv-spirv-exp2-to-glsl-stand-in"> {
  let summary = "f32 math.exp2 as spirv.GL.Exp, a stand-in retagged GLSL.std.450 Exp2 in the binary";
  let dependentDialects = ["mlir::spirv::SPIRVDialect"];
}
def StructureControlFlow : QvPass<"qv-spirv-structure-control-flow"> {
  let summary = "scf.index_switch as scf.if chains, single-block scf.execute_region inlined (in every kernel)";
}
def TopTestedLoops : QvPass<"qv-spirv-top-tested-loops"> {
  let summary = "lifted do-while scf.while loops of every kernel get their test at the top";
}
def ExactSignedRemainder : QvPass<"qv-spirv-exact-signed-remainder"> {
  let summary = "arith.remsi(a, b) as a - (a / b) * b in every kernel (MLIR 19's Vulkan remsi is wrong for INT_MIN)";
}
def MarkRightOperands : KernelListPass<"qv-spirv-mark-right-operands"> {
  let summary = "retypes the right operands of tile products in the named kernels to vector<16 x 16 x T>";
}
def AccumulatorMathToLanes : KernelListPass<"qv-spirv-accumulator-math-to-lanes"> {
  let summary = "in the named kernels, accumulator math cooperative matrices lack (row statistics, to_matrix_a, "
                "exp2, max) on per-lane shares through a subgroup scratch; their subgroup size folds to 32";
}
def WrapKernels : KernelListPass<"qv-spirv-wrap-kernels"> {
  let summary = "each named kernel as a gpu.func kernel in a gpu.module @qv_spirv_<symbol> of its own, with the "
                "entry point's LocalSize and each parameter's descriptor binding, workgroup allocas as allocs";
  let dependentDialects = ["mlir::gpu::GPUDialect", "mlir::spirv::SPIRVDialect"];
}
def ConvertKernels : KernelListPass<"qv-spirv-convert-kernels", [
    Option<"cooperative_matrix", "cooperative-matrix", "bool", "false",
           "SPIR-V 1.6 with matrix tiles as cooperative matrices and qv.dot4_i8 as OpSDot (the vulkan1.3_coopmat image)">]> {
  let summary = "each named kernel's gpu.module @qv_spirv_<symbol> converted to a spirv.module beside it (MLIR's "
                "conversions to the spirv dialect and quiver's subgroup, atomic, cooperative-matrix and integer-dot "
                "patterns)";
  let dependentDialects = ["mlir::spirv::SPIRVDialect"];
}

// The steps on one kernel's spirv.module after MLIR's conversion and spirv-lower-abi-attrs.
class SpirvModulePass<string argument> : QvPass<argument, "mlir::spirv::ModuleOp">;

def AliasSharedBindings : SpirvModulePass<"qv-spirv-alias-shared-bindings"> {
  let summary = "variables sharing a descriptor binding (a buffer and its word views) decorated Aliased";
}
def ReadOnlyBindings : SpirvModulePass<"qv-spirv-read-only-bindings"> {
  let summary = "the descriptor-set-0 variables at the named bindings decorated NonWritable (none where the kernel "
                "loads from a binding it may write)";
  let options = [ListOption<"bindings", "bindings", "unsigned", "the bindings of the parameters the kernel only reads">];
}
def SpecializeParameters : SpirvModulePass<"qv-spirv-specialize-parameters"> {
  let summary = "the loads of the named scalar parameters of a kernel as specialization constants with SpecId = the "
                "parameter's index";
  let options = [
    Option<"kernel", "kernel", "std::string", "", "the kernel's symbol (its bindings are <symbol>_arg_<i>)">,
    ListOption<"parameters", "parameters", "unsigned", "the QV_SPECIALIZE parameters' indices">,
  ];
}
def SubgroupBuiltinCapability : SpirvModulePass<"qv-spirv-subgroup-builtin-capability"> {
  let summary = "GroupNonUniform required where the module reads the subgroup lane or size builtins (after "
                "spirv-update-vce)";
}
def ListInterfaces : SpirvModulePass<"qv-spirv-list-interfaces"> {
  let summary = "each entry point's interface lists every global variable its function uses; SPIR-V 1.4 at least";
}
def VulkanMemoryModel : SpirvModulePass<"qv-spirv-vulkan-memory-model"> {
  let summary = "a module using cooperative matrices takes the Vulkan memory model";
}
