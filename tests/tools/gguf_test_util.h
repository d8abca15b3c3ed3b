// Shared by the GGUF reader tests: runs gguf_gen.py (the independent writer) and reads back the
// file it wrote and its JSON sidecar.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "gguf.h"

namespace quiver::llm::test {

struct Generated {
  std::string path;
  nlohmann::json side;            // gguf_gen.py's sidecar
  std::vector<std::byte> bytes;   // the file
};

// Writes `<name>.gguf` with gguf_gen.py `args` into the test's temporary directory.
inline Generated generate(const std::string& name, const std::string& args) {
  const std::string base = testing::TempDir() + "quiver_gguf_" + std::to_string(getpid()) + "_" + name;
  Generated g{base + ".gguf", {}, {}};
  const std::string cmd = std::string(QUIVER_TEST_PYTHON3) + " " + QUIVER_GGUF_GEN + " " + g.path + " --json " +
                          base + ".json " + args;
  if (std::system(cmd.c_str()) != 0) throw std::runtime_error("gguf_gen.py failed: " + cmd);
  std::ifstream js(base + ".json");
  g.side = nlohmann::json::parse(js);
  std::ifstream f(g.path, std::ios::binary);
  std::vector<char> raw((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  g.bytes.resize(raw.size());
  std::memcpy(g.bytes.data(), raw.data(), raw.size());
  std::remove((base + ".json").c_str());
  return g;
}

}  // namespace quiver::llm::test
