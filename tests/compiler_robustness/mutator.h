// Deterministic mutations of C++ kernel sources for the compiler robustness test: token- and
// line-level edits that make the near-valid, subtly broken programs a user's typo produces,
// plus truncation and raw byte noise.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace robustness {

struct Mutant {
  std::string text;
  std::vector<std::string> edits;  // what was done, for the failure report ("swap lines 4 and 9")
};

// Applies 1..3 random edits to `source`. The same (source, seed) always gives the same mutant.
Mutant mutate(const std::string& source, uint64_t seed);

// The source split into tokens, each with the whitespace and comments before it, so that
// joining the pieces gives the source back exactly (exposed for the mutator's own checks).
struct Token {
  std::string space;  // whitespace / comments before the token
  std::string text;
};
std::vector<Token> tokenize(const std::string& source);
std::string join(const std::vector<Token>& tokens);

}  // namespace robustness
