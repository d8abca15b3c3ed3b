// The compiler's target registry (compiler/targets/registry.cpp) is where --targets, its help,
// the front end's QV_TARGETS names and the build plan get their targets: each line round-trips
// by name, the targets' own names agree with their lines, the image kinds of the lines cover the
// format's target table once each, quiverc's --help and --targets errors list exactly the
// registry, and a target that makes an image kind its line does not list fails the build.
#include <gtest/gtest.h>

#include <cstdio>
#include <set>
#include <stdexcept>
#include <string>

#include "driver/build_jobs.h"
#include "driver/targets_option.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/MLIRContext.h"
#include "targets/target.h"

namespace quiver::compiler {
namespace {

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

TEST(TargetRegistry, EveryLineRoundTripsAndNamesItsTarget) {
  ASSERT_FALSE(target_registry().empty());
  std::set<std::string_view> names;
  for (const TargetEntry& e : target_registry()) {
    EXPECT_TRUE(names.insert(e.name).second) << "two lines named " << e.name;
    EXPECT_EQ(find_target(e.name), &e) << e.name;
    ASSERT_NE(e.create, nullptr) << e.name;
    EXPECT_EQ(e.create()->name(), e.name) << "the target's own name differs from its registry line";
    EXPECT_FALSE(e.images.empty()) << e.name;
  }
  EXPECT_EQ(target_names().size(), target_registry().size());
  EXPECT_EQ(find_target("cuda"), nullptr);
  EXPECT_EQ(find_target("PTX"), nullptr);
  EXPECT_EQ(find_target(""), nullptr);
}

// Every image kind a fat binary may hold is made by exactly one target: a kind added to the
// format needs a target line, and no two targets claim one kind.
TEST(TargetRegistry, ImageKindsCoverTheFormatTableOnce) {
  std::vector<int> makers(format::kTargetCount, 0);
  for (const TargetEntry& e : target_registry())
    for (format::Target t : e.images) ++makers[static_cast<size_t>(t)];
  for (const format::TargetInfo& t : format::targets())
    EXPECT_EQ(makers[static_cast<size_t>(t.target)], 1) << t.name << " images: made by that many targets";
}

TEST(TargetsOption, DefaultIsEveryRegistryTargetInOrder) {
  for (const std::string spec : {"", "all"}) {
    std::vector<std::string> got;
    for (const TargetRequest& r : parse_targets(spec)) {
      got.push_back(r.name);
      EXPECT_TRUE(r.archs.empty()) << r.name;
    }
    EXPECT_EQ(got, target_names()) << "spec '" << spec << "'";
  }
  std::vector<TargetRequest> some = parse_targets("cpu; ptx:sm_80, sm_90a");
  ASSERT_EQ(some.size(), 2u);
  EXPECT_EQ(some[0].name, "cpu");
  EXPECT_EQ(some[1].name, "ptx");
  EXPECT_EQ(some[1].archs, (std::vector<std::string>{"sm_80", "sm_90a"}));
}

TEST(TargetsOption, UnknownTargetListsTheRegistry) {
  try {
    parse_targets("ptx;cuda:sm_90");
    FAIL() << "an unknown target was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "unknown target 'cuda' in --targets (known: " + joined(target_names()) + ")");
  }
  EXPECT_THROW(parse_targets("cpu;cpu"), std::invalid_argument);
  EXPECT_THROW(parse_targets("ptx:"), std::invalid_argument);
}

// quiverc's --help, from the binary: the --targets line names the registry's targets, no more.
TEST(TargetsOption, QuivercHelpListsTheRegistry) {
  EXPECT_NE(targets_help().find("(targets: " + joined(target_names()) + ";"), std::string::npos) << targets_help();
  FILE* pipe = ::popen(QUIVERC_EXE " --help", "r");
  ASSERT_NE(pipe, nullptr);
  std::string help;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;) help.append(buf, n);
  ASSERT_EQ(::pclose(pipe), 0) << help;
  const size_t at = help.find("(targets: ");
  ASSERT_NE(at, std::string::npos) << help;
  const size_t from = at + std::string("(targets: ").size();
  EXPECT_EQ(help.substr(from, help.find(';', from) - from), joined(target_names())) << help;
}

// A target whose compile() returns an image kind its registry line does not list.
class WrongKindTarget final : public Target {
 public:
  std::string_view name() const override { return "wrong_kind"; }
  std::vector<TargetImage> compile(mlir::ModuleOp, std::span<const format::Kernel>, const TargetOptions&) override {
    return {TargetImage{format::Target::WGSL, "any", {std::byte{1}}, {}, {}}};
  }
};
constexpr format::Target kCpuOnly[] = {format::Target::CPU};
std::unique_ptr<Target> create_wrong_kind() { return std::make_unique<WrongKindTarget>(); }
const TargetEntry kWrongKind{"wrong_kind", kCpuOnly, create_wrong_kind};

TEST(BuildJobs, AnImageKindOutsideTheLineFailsTheJob) {
  mlir::MLIRContext context;
  frontend::Result fe;
  fe.module = mlir::ModuleOp::create(mlir::UnknownLoc::get(&context));
  BuildJobResult r = run_build_job(BuildJob{&kWrongKind, {}, {}}, fe, BuildJobOptions{});
  ASSERT_TRUE(r.error.has_value());
  EXPECT_EQ(*r.error, "wrong_kind: the target made a wgsl image, which its line in compiler/targets/registry.cpp "
                      "does not list");
}

}  // namespace
}  // namespace quiver::compiler
