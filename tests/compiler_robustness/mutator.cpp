#include "mutator.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstddef>
#include <string_view>

namespace robustness {
namespace {

// Longest first, so that "<<=" is one token rather than "<" "<=".
constexpr std::array<std::string_view, 40> kPunctuators = {
    "<<=", ">>=", "...", "->*", "::", "->", "++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||",
    "+=",  "-=",  "*=",  "/=",  "%=", "&=", "|=", "^=", "+",  "-",  "*",  "/",  "%",  "<",  ">",  "=",
    "!",   "~",   "&",   "|",   "^",  "?",  ":",  ".",
};

// What an operator may become: same arity, so most flips still parse and reach the back ends.
constexpr std::array<std::string_view, 18> kBinaryOps = {"+",  "-",  "*",  "/",  "%",  "<<", ">>", "&",  "|",
                                                        "^",  "<",  ">",  "<=", ">=", "==", "!=", "&&", "||"};
constexpr std::array<std::string_view, 10> kAssignOps = {"=", "+=", "-=", "*=", "/=", "%=", "<<=", ">>=", "&=", "|="};
// Literals that stress constant folding, shifts, sizes and conversions.
constexpr std::array<std::string_view, 14> kLiterals = {
    "0",   "1", "-1", "2147483647", "2147483648", "4294967295", "4294967296", "18446744073709551615u",
    "1e309", "0.0f", "-0.0", "1.0e-45f", "0x7fffffff", "65536"};

bool is_ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

template <typename T>
T pick(std::mt19937_64& rng, T lo, T hi) {  // inclusive
  return std::uniform_int_distribution<T>(lo, hi)(rng);
}

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> lines;
  size_t at = 0;
  while (at < s.size()) {
    size_t nl = s.find('\n', at);
    size_t end = nl == std::string::npos ? s.size() : nl + 1;
    lines.push_back(s.substr(at, end - at));
    at = end;
  }
  return lines;
}

std::string concat(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += l;
  return s;
}

// Indices of tokens satisfying `pred`.
template <typename Pred>
std::vector<size_t> where(const std::vector<Token>& t, Pred pred) {
  std::vector<size_t> idx;
  for (size_t i = 0; i < t.size(); ++i)
    if (pred(t[i].text)) idx.push_back(i);
  return idx;
}

bool is_identifier(std::string_view s) {
  return !s.empty() && (std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_');
}
bool is_number(std::string_view s) { return !s.empty() && std::isdigit(static_cast<unsigned char>(s[0])); }

// One edit; returns its description.
std::string edit_once(std::string& text, std::mt19937_64& rng) {
  std::vector<Token> tokens = tokenize(text);
  if (tokens.size() < 2) {
    text += "}";
    return "append '}'";
  }
  auto any_token = [&] { return pick<size_t>(rng, 0, tokens.size() - 1); };
  const int kind = pick(rng, 0, 11);
  switch (kind) {
    case 0: {  // delete a token
      size_t i = any_token();
      std::string d = "delete token '" + tokens[i].text + "'";
      tokens.erase(tokens.begin() + static_cast<ptrdiff_t>(i));
      text = join(tokens);
      return d;
    }
    case 1: {  // duplicate a token
      size_t i = any_token();
      tokens.insert(tokens.begin() + static_cast<ptrdiff_t>(i), tokens[i]);
      text = join(tokens);
      return "duplicate token '" + tokens[i].text + "'";
    }
    case 2: {  // swap two tokens (adjacent, or anywhere)
      size_t i = pick<size_t>(rng, 0, tokens.size() - 2);
      size_t j = pick(rng, 0, 1) ? i + 1 : any_token();
      std::swap(tokens[i].text, tokens[j].text);
      text = join(tokens);
      return "swap tokens '" + tokens[j].text + "' and '" + tokens[i].text + "'";
    }
    case 3: {  // flip an operator
      auto ops = where(tokens, [](const std::string& s) {
        return std::find(kBinaryOps.begin(), kBinaryOps.end(), s) != kBinaryOps.end() ||
               std::find(kAssignOps.begin(), kAssignOps.end(), s) != kAssignOps.end();
      });
      if (ops.empty()) break;
      size_t i = ops[pick<size_t>(rng, 0, ops.size() - 1)];
      bool assign = std::find(kAssignOps.begin(), kAssignOps.end(), tokens[i].text) != kAssignOps.end();
      std::string old = tokens[i].text;
      tokens[i].text = assign ? kAssignOps[pick<size_t>(rng, 0, kAssignOps.size() - 1)]
                              : kBinaryOps[pick<size_t>(rng, 0, kBinaryOps.size() - 1)];
      text = join(tokens);
      return "operator '" + old + "' -> '" + tokens[i].text + "'";
    }
    case 4: {  // replace a number
      auto nums = where(tokens, [](const std::string& s) { return is_number(s); });
      if (nums.empty()) break;
      size_t i = nums[pick<size_t>(rng, 0, nums.size() - 1)];
      std::string old = tokens[i].text;
      tokens[i].text = kLiterals[pick<size_t>(rng, 0, kLiterals.size() - 1)];
      text = join(tokens);
      return "literal '" + old + "' -> '" + tokens[i].text + "'";
    }
    case 5: {  // replace an identifier with another one from the same file
      auto ids = where(tokens, [](const std::string& s) { return is_identifier(s); });
      if (ids.size() < 2) break;
      size_t i = ids[pick<size_t>(rng, 0, ids.size() - 1)];
      size_t j = ids[pick<size_t>(rng, 0, ids.size() - 1)];
      std::string old = tokens[i].text;
      tokens[i].text = tokens[j].text;
      text = join(tokens);
      return "identifier '" + old + "' -> '" + tokens[i].text + "'";
    }
    case 6: case 7: case 8: {  // line edits: delete, duplicate, swap
      auto lines = split_lines(text);
      if (lines.size() < 2) break;
      size_t i = pick<size_t>(rng, 0, lines.size() - 1), j = pick<size_t>(rng, 0, lines.size() - 1);
      std::string d;
      if (kind == 6) {
        d = "delete line " + std::to_string(i + 1);
        lines.erase(lines.begin() + static_cast<ptrdiff_t>(i));
      } else if (kind == 7) {
        d = "duplicate line " + std::to_string(i + 1) + " after line " + std::to_string(j + 1);
        lines.insert(lines.begin() + static_cast<ptrdiff_t>(j) + 1, lines[i]);
      } else {
        d = "swap lines " + std::to_string(i + 1) + " and " + std::to_string(j + 1);
        std::swap(lines[i], lines[j]);
      }
      text = concat(lines);
      return d;
    }
    case 9: {  // truncate
      size_t at = pick<size_t>(rng, 0, text.size() - 1);
      text.resize(at);
      return "truncate at byte " + std::to_string(at);
    }
    case 10: {  // insert random bytes (NUL, control characters, invalid UTF-8 included)
      size_t at = pick<size_t>(rng, 0, text.size());
      size_t n = pick<size_t>(rng, 1, 8);
      std::string noise;
      for (size_t k = 0; k < n; ++k) noise += static_cast<char>(pick(rng, 0, 255));
      text.insert(at, noise);
      return "insert " + std::to_string(n) + " random bytes at byte " + std::to_string(at);
    }
    default: {  // insert a punctuator (unbalances brackets, adds stray operators)
      static constexpr std::array<std::string_view, 10> kStray = {"{", "}", "(", ")", "[", "]", ";", ",", "*", "&"};
      size_t i = any_token();
      std::string_view p = kStray[pick<size_t>(rng, 0, kStray.size() - 1)];
      tokens.insert(tokens.begin() + static_cast<ptrdiff_t>(i), Token{" ", std::string(p)});
      text = join(tokens);
      return "insert '" + std::string(p) + "' before token " + std::to_string(i);
    }
  }
  // The chosen edit did not apply (no operator, number, ...): delete a line instead.
  auto lines = split_lines(text);
  size_t i = pick<size_t>(rng, 0, lines.size() - 1);
  lines.erase(lines.begin() + static_cast<ptrdiff_t>(i));
  text = concat(lines);
  return "delete line " + std::to_string(i + 1);
}

}  // namespace

std::vector<Token> tokenize(const std::string& s) {
  std::vector<Token> out;
  size_t i = 0;
  std::string space;
  while (i < s.size()) {
    char c = s[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      space += c;
      ++i;
      continue;
    }
    if (s.compare(i, 2, "//") == 0) {
      size_t e = s.find('\n', i);
      e = e == std::string::npos ? s.size() : e;
      space += s.substr(i, e - i);
      i = e;
      continue;
    }
    if (s.compare(i, 2, "/*") == 0) {
      size_t e = s.find("*/", i + 2);
      e = e == std::string::npos ? s.size() : e + 2;
      space += s.substr(i, e - i);
      i = e;
      continue;
    }
    size_t len = 1;
    if (is_ident_char(c)) {
      while (i + len < s.size() && (is_ident_char(s[i + len]) || (std::isdigit(static_cast<unsigned char>(c)) && s[i + len] == '.')))
        ++len;
    } else if (c == '"' || c == '\'') {
      while (i + len < s.size() && s[i + len] != c && s[i + len] != '\n') len += s[i + len] == '\\' ? 2 : 1;
      len = std::min(len + 1, s.size() - i);
    } else {
      for (std::string_view p : kPunctuators)
        if (s.compare(i, p.size(), p) == 0) {
          len = p.size();
          break;
        }
    }
    out.push_back({space, s.substr(i, len)});
    space.clear();
    i += len;
  }
  if (!space.empty()) out.push_back({space, ""});
  return out;
}

std::string join(const std::vector<Token>& tokens) {
  std::string s;
  for (const Token& t : tokens) s += t.space + t.text;
  return s;
}

Mutant mutate(const std::string& source, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Mutant m{source, {}};
  const int edits = pick(rng, 1, 3);
  for (int e = 0; e < edits && !m.text.empty(); ++e) m.edits.push_back(edit_once(m.text, rng));
  return m;
}

}  // namespace robustness
