#include "report.h"

#include <algorithm>
#include <cstdio>
#include <iomanip>
#include <string_view>
#include <unordered_map>

namespace quiver::dump {
namespace {

using format::Access;
using format::FatBinary;
using format::Image;
using format::Kernel;
using nlohmann::json;

// Strings from the file are untrusted: control characters (terminal escape sequences) are
// shown as \xNN rather than sent to the terminal.
std::string printable(const std::string& s) {
  std::string out;
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 15];
    } else {
      out += c;
    }
  }
  return out;
}

// Kernel names by symbol, for the images' kernel lists: a map, since a file may have 256
// images each listing 4096 kernels (a scan of the kernels per symbol: 4 billion comparisons).
class KernelNames {
 public:
  explicit KernelNames(const format::Manifest& m) {
    names_.reserve(m.kernels.size());
    for (const Kernel& k : m.kernels) names_.emplace(k.symbol, &k.name);
  }
  std::string operator()(const std::string& symbol) const {
    auto it = names_.find(symbol);
    return it == names_.end() ? symbol : printable(*it->second);
  }

 private:
  std::unordered_map<std::string_view, const std::string*> names_;
};

std::string join(const std::vector<std::string>& parts, const char* sep) {
  std::string s;
  for (const std::string& p : parts) s += (s.empty() ? "" : sep) + p;
  return s;
}

// The image table's kernels cell: how many kernels the image holds, then their names in
// manifest order while the cell stays within kKernelNamesWidth characters (always at least one
// name), and "…" when some are left out. An op library image holds dozens of kernels; the table
// stays one readable line per image, and --kernel NAME / --json show every name.
constexpr size_t kKernelNamesWidth = 48;
constexpr const char* kMore = "…";

std::string kernels_cell(const KernelNames& kernel_name, const Image& im, bool& abbreviated) {
  std::string cell = std::to_string(im.kernels.size());
  for (size_t i = 0; i < im.kernels.size(); ++i) {
    std::string name = kernel_name(im.kernels[i]);
    if (i > 0 && cell.size() + 2 + name.size() > kKernelNamesWidth) {
      abbreviated = true;
      return cell + "; " + kMore;
    }
    cell += (i == 0 ? ": " : "; ") + name;
  }
  return cell;
}

std::string ratio(const Image& im) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2fx", static_cast<double>(im.raw_size) / static_cast<double>(im.size));
  return buf;
}

// A left-aligned text table whose columns are as wide as their widest cell.
void print_table(std::ostream& out, const std::vector<std::vector<std::string>>& rows, const std::string& indent) {
  std::vector<size_t> width;
  for (const auto& row : rows)
    for (size_t c = 0; c < row.size(); ++c) {
      if (width.size() <= c) width.push_back(0);
      width[c] = std::max(width[c], row[c].size());
    }
  for (const auto& row : rows) {
    std::string line = indent;
    for (size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size()) line += std::string(width[c] - row[c].size() + 2, ' ');
    }
    out << line << "\n";
  }
}

}  // namespace

std::string param_spelling(const format::Param& p) {
  std::string elem(format::to_string(p.type));
  if (p.vec_width > 1) elem = "vec<" + elem + ", " + std::to_string(p.vec_width) + ">";
  if (!p.is_buffer) return elem;
  return (p.access == Access::Read ? "const " : "") + elem + "*";
}

void print_human(std::ostream& out, const FatBinary& fb, const Selection& sel, const std::vector<ImageReport>& images) {
  const format::Header& h = fb.header();
  const format::Manifest& m = fb.manifest();
  print_table(out,
              {{"file:", printable(fb.label())},
               {"format:", std::to_string(h.major) + "." + std::to_string(h.minor) + " (header " +
                               std::to_string(h.header_size) + " bytes, file " + std::to_string(h.file_size) +
                               " bytes)"},
               {"manifest:", std::to_string(h.manifest_size) + " bytes at offset " +
                                 std::to_string(h.manifest_offset) + ", checksum " +
                                 format::checksum_hex(h.manifest_checksum)},
               {"compiler:", printable(m.compiler_version)},
               {"source hash:", printable(m.source_hash)}},
              "");

  out << "\nkernels (" << sel.kernels.size() << " of " << m.kernels.size() << "):\n";
  for (size_t ki : sel.kernels) {
    const Kernel& k = m.kernels[ki];
    std::vector<std::string> targets;
    for (format::Target t : k.targets) targets.emplace_back(format::to_string(t));
    out << "  " << printable(k.name) << "\n";
    print_table(out,
                {{"symbol:", k.symbol},
                 {"block:", std::to_string(k.block[0]) + " x " + std::to_string(k.block[1]) + " x " +
                                std::to_string(k.block[2])},
                 {"shared:", std::to_string(k.shared_bytes) + " bytes"},
                 {"barrier:", k.uses_barrier ? "yes" : "no"},
                 {"targets:", targets.empty() ? "(none)" : join(targets, ", ")}},
                "    ");
    if (k.params.empty()) {
      out << "    params: (none)\n";
      continue;
    }
    out << "    params:\n";
    std::vector<std::vector<std::string>> rows = {{"#", "name", "kind", "type", "access"}};
    for (size_t a = 0; a < k.params.size(); ++a) {
      const format::Param& p = k.params[a];
      rows.push_back({std::to_string(a), p.name.empty() ? "(unnamed)" : printable(p.name), p.is_buffer ? "buffer" : "scalar",
                      param_spelling(p), p.access == Access::Read ? "read" : "read_write"});
    }
    print_table(out, rows, "      ");
  }

  out << "\nimages (" << sel.images.size() << " of " << m.images.size() << "):\n";
  std::vector<std::vector<std::string>> rows = {
      {"#", "target", "arch", "raw bytes", "compressed", "ratio", "offset", "checksum", "kernels"}};
  bool abbreviated = false;
  const KernelNames kernel_name(m);
  for (size_t ii : sel.images) {
    const Image& im = m.images[ii];
    rows.push_back({std::to_string(ii), std::string(format::to_string(im.target)), im.arch, std::to_string(im.raw_size),
                    std::to_string(im.size), ratio(im), std::to_string(im.offset), format::checksum_hex(im.checksum),
                    kernels_cell(kernel_name, im, abbreviated)});
  }
  print_table(out, rows, "  ");
  if (abbreviated)
    out << "  (" << kMore << ": more kernels; --kernel NAME shows the images holding one, --json lists them all)\n";
  // What a device must offer to run an image (docs/format.md "Image requirements").
  for (size_t ii : sel.images) {
    const Image& im = m.images[ii];
    if (im.requirements.empty()) continue;
    std::vector<std::string> needs;
    for (const std::string& r : im.requirements) needs.push_back(printable(r));
    out << "  image " << ii << " (" << format::to_string(im.target) << " " << printable(im.arch)
        << ") requires: " << join(needs, ", ") << "\n";
  }
  // Images whose kernels wait for earlier launches themselves (docs/abi.md "Overlapped launches").
  std::vector<std::string> overlapping;
  for (size_t ii : sel.images)
    if (m.images[ii].programmatic_launch) overlapping.push_back(std::to_string(ii));
  if (!overlapping.empty())
    out << "  image" << (overlapping.size() > 1 ? "s " : " ") << join(overlapping, ", ")
        << ": launches may overlap the previous kernel (programmatic_launch)\n";

  for (const ImageReport& r : images) {
    if (!r.disassembly) continue;
    const Image& im = m.images[r.index];
    out << "\n=== image " << r.index << ": " << format::to_string(im.target) << " " << im.arch << " ===\n";
    if (!r.disassembly_ok) out << "(no disassembly) ";
    out << *r.disassembly;
    if (!r.disassembly->empty() && r.disassembly->back() != '\n') out << "\n";
  }
}

json to_json(const FatBinary& fb, const Selection& sel, const std::vector<ImageReport>& images) {
  const format::Header& h = fb.header();
  json manifest = json::parse(format::manifest_to_json(fb.manifest()));
  json kernels = json::array(), image_list = json::array();
  for (size_t ki : sel.kernels) kernels.push_back(manifest["kernels"][ki]);
  for (size_t ii : sel.images) {
    json im = manifest["images"][ii];
    im["index"] = ii;
    for (const ImageReport& r : images)
      if (r.index == ii && r.disassembly) {
        im[r.disassembly_ok ? "disassembly" : "disassembly_error"] = *r.disassembly;
      }
    image_list.push_back(std::move(im));
  }
  manifest["kernels"] = std::move(kernels);
  manifest["images"] = std::move(image_list);
  return {{"file", fb.label()},
          {"header",
           {{"magic", "QVFB\r\n\x1a\n"},
            {"version", std::to_string(h.major) + "." + std::to_string(h.minor)},
            {"major", h.major},
            {"minor", h.minor},
            {"header_size", h.header_size},
            {"file_size", h.file_size},
            {"manifest_offset", h.manifest_offset},
            {"manifest_size", h.manifest_size},
            {"manifest_checksum", format::checksum_hex(h.manifest_checksum)},
            {"flags", h.flags},
            {"header_checksum", format::checksum_hex(h.header_checksum)}}},
          {"manifest", std::move(manifest)}};
}

}  // namespace quiver::dump
