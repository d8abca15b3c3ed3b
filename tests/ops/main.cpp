// The gate's main: prints the backend and the seed first (a failure can be repeated with
// QUIVER_OPS_SEED=<seed>), runs the tests, then writes the measured errors as JSON to the path in
// QUIVER_OPS_REPORT or given as --report=PATH.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "gate.h"

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  std::string report;
  if (const char* env = std::getenv("QUIVER_OPS_REPORT")) report = env;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--report=", 9) == 0) report = argv[i] + 9;
    else {
      std::fprintf(stderr, "usage: %s [gtest options] [--report=PATH]\n", argv[0]);
      return 2;
    }
  }
  try {
    quiver::Device& dev = gate::device();
    std::printf("ops gate: backend %s, device %s, image %s, seed %llu%s\n", dev.backend_name().c_str(),
                dev.device_name().c_str(), std::string(quiver::ops::library(dev).backend_image()).c_str(),
                static_cast<unsigned long long>(gate::seed()), gate::big_shapes() ? ", big shapes" : "");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ops gate: %s\n", e.what());
    return 1;
  }
  int status = RUN_ALL_TESTS();
  if (!report.empty()) gate::write_report(report);
  return status;
}
