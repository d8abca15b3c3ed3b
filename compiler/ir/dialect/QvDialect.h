// The qv dialect (QvDialect.td, QvOps.td; docs/ir.md "The qv dialect"): quiver's operations
// with no upstream op, with their verifiers.
#pragma once

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"

#include "ir/dialect/QvDialect.h.inc"
#include "ir/dialect/QvEnums.h.inc"

#define GET_OP_CLASSES
#include "ir/dialect/QvOps.h.inc"
