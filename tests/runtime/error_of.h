// Checking the quiver::Error a call throws: what runtime tests (and the op library's tests of
// runtime behaviour, tests/ops/graph_test.cpp) compare with the message they expect.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "quiver/runtime.h"

namespace quiver::test {

// Runs `f` and returns the quiver::Error it throws (a test failure when it throws nothing).
template <typename F>
quiver::Error error_of(F&& f) {
  try {
    f();
  } catch (const quiver::Error& e) {
    return e;
  }
  ADD_FAILURE() << "no quiver::Error was thrown";
  return quiver::Error(quiver::ErrorCode::InvalidArgument, "");
}

}  // namespace quiver::test

#define EXPECT_CONTAINS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)
