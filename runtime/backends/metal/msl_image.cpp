#include "msl_image.h"

#include <cctype>
#include <charconv>

namespace quiver::msl_image {
namespace {

bool is_identifier(std::string_view s) {
  if (s.empty() || s.size() > 512) return false;
  if (!std::isalpha(static_cast<unsigned char>(s[0])) && s[0] != '_') return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

bool parse_uint(std::string_view s, uint32_t& value) {
  if (s.empty() || s.size() > 9) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  return ec == std::errc() && end == s.data() + s.size();
}

// "key=value" -> value when the word starts with `key=`.
bool take_field(std::string_view word, std::string_view key, std::string_view& value) {
  if (word.size() <= key.size() || word.substr(0, key.size()) != key || word[key.size()] != '=') return false;
  value = word.substr(key.size() + 1);
  return true;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (;;) {
    size_t at = s.find(sep, start);
    out.push_back(s.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start));
    if (at == std::string_view::npos) return out;
    start = at + 1;
  }
}

// One "//@qv-kernel ..." line (without the marker) into `k`.
bool parse_kernel_line(std::string_view rest, KernelSource& k, std::string& error) {
  std::vector<std::string_view> words = split(rest, ' ');
  if (words.size() != 3) {
    error = "expected '<symbol> function=<name> buffers=<list>'";
    return false;
  }
  if (!is_identifier(words[0])) {
    error = "the kernel symbol '" + std::string(words[0]) + "' is not an identifier";
    return false;
  }
  k.symbol = words[0];
  std::string_view function, buffers;
  if (!take_field(words[1], "function", function) || !is_identifier(function)) {
    error = "expected function=<identifier>";
    return false;
  }
  k.function = function;
  if (!take_field(words[2], "buffers", buffers) && words[2] != "buffers=") {
    error = "expected buffers=<comma-separated indices>";
    return false;
  }
  if (!buffers.empty()) {
    for (std::string_view n : split(buffers, ',')) {
      uint32_t index = 0;
      if (!parse_uint(n, index) || index >= 31) {   // Metal has 31 buffer argument slots
        error = "buffer index '" + std::string(n) + "' is not a number below 31";
        return false;
      }
      k.buffer_index.push_back(index);
    }
  }
  return true;
}

}  // namespace

std::string write(const Image& image) {
  std::string text(kMagicLine);
  text += " msl=" + std::to_string(image.msl_major) + "." + std::to_string(image.msl_minor) + "\n";
  for (const KernelSource& k : image.kernels) {
    text += std::string(kKernelMarker) + k.symbol + " function=" + k.function + " buffers=";
    for (size_t i = 0; i < k.buffer_index.size(); ++i) text += (i ? "," : "") + std::to_string(k.buffer_index[i]);
    text += "\n" + k.source;
    if (!k.source.empty() && k.source.back() != '\n') text += "\n";
  }
  return text;
}

bool parse(std::string_view text, Image& image, std::string& error) {
  image = Image{};
  size_t eol = text.find('\n');
  std::string_view first = text.substr(0, eol);
  std::string prefix = std::string(kMagicLine) + " msl=";
  if (eol == std::string_view::npos || first.substr(0, prefix.size()) != prefix) {
    error = "the image does not start with '" + prefix + "<version>'";
    return false;
  }
  std::vector<std::string_view> version = split(first.substr(prefix.size()), '.');
  if (version.size() != 2 || !parse_uint(version[0], image.msl_major) || !parse_uint(version[1], image.msl_minor) ||
      image.msl_major < 2) {
    error = "bad MSL version '" + std::string(first.substr(prefix.size())) + "' (2.x or newer expected)";
    return false;
  }
  size_t pos = eol + 1;
  size_t line_number = 2;
  KernelSource* current = nullptr;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    std::string_view line = text.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
    if (line.substr(0, kKernelMarker.size()) == kKernelMarker) {
      KernelSource k;
      std::string why;
      if (!parse_kernel_line(line.substr(kKernelMarker.size()), k, why)) {
        error = "line " + std::to_string(line_number) + ": " + why;
        return false;
      }
      for (const KernelSource& other : image.kernels)
        if (other.symbol == k.symbol) {
          error = "line " + std::to_string(line_number) + ": kernel '" + k.symbol + "' appears twice";
          return false;
        }
      image.kernels.push_back(std::move(k));
      current = &image.kernels.back();
    } else if (current) {
      current->source.append(line);
      current->source += '\n';
    } else if (!line.empty()) {
      error = "line " + std::to_string(line_number) + ": source text before the first kernel marker";
      return false;
    }
    if (end == std::string_view::npos) break;
    pos = end + 1;
    ++line_number;
  }
  if (image.kernels.empty()) {
    error = "the image holds no kernel";
    return false;
  }
  for (const KernelSource& k : image.kernels)
    if (k.source.find("kernel void " + k.function + "(") == std::string::npos) {
      error = "kernel '" + k.symbol + "': its source has no 'kernel void " + k.function + "('";
      return false;
    }
  return true;
}

}  // namespace quiver::msl_image
