// Included by kernels/saxpy.cpp through quiver_add_fatbin(INCLUDE_DIRS): the installed-package
// test edits this file to check that the depfile makes the fat binary depend on it.
#pragma once
#include <quiver/kernel.h>

QV_DEVICE float axpy(float a, float x, float y) { return a * x + y; }
