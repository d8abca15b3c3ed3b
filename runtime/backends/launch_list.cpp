// The portable replay of a recorded launch sequence (backend.h, Device::build_graph): each
// launch again through its module, in order. The CPU backend runs launches before launch()
// returns, so a list is all a graph can be there; GPU backends override build_graph.
#include "backends/backend.h"

namespace quiver::backend {
namespace {

class LaunchList final : public Graph {
 public:
  explicit LaunchList(std::span<const RecordedLaunch> launches) : launches_(launches) {}
  void replay() override {
    for (const RecordedLaunch& l : launches_) l.module->launch(l.kernel, l.grid, l.args);
  }

 private:
  std::span<const RecordedLaunch> launches_;
};

}  // namespace

std::unique_ptr<Graph> Device::build_graph(std::span<const RecordedLaunch> launches) {
  return std::make_unique<LaunchList>(launches);
}

}  // namespace quiver::backend
