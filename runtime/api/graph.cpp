// Recorded launch sequences (include/quiver/runtime.h, Graph; docs/runtime.md, "Graphs"). The
// API layer records what Kernel::launch_packed has checked; the backend turns the list into
// what replays it with one submission (backend.h, Device::build_graph).
#include <algorithm>
#include <cstring>

#include "api/impl.h"

namespace quiver {
namespace detail {

void DeviceImpl::refuse_while_recording(const char* what) const {
  if (recording_here() == nullptr) return;
  throw Error(ErrorCode::InvalidArgument,
              std::string(what) + " on the Device being recorded (Device::record): only kernel launches can be "
                                  "recorded; do it before or after the recording");
}

void DeviceImpl::begin_recording(GraphImpl* graph) const {
  if (recording_ != nullptr)
    throw Error(ErrorCode::InvalidArgument,
                recording_thread_ == std::this_thread::get_id()
                    ? "Device::record: this thread is already recording on this Device (records do not nest)"
                    : "Device::record: another thread is recording on this Device (one recording at a time)");
  recording_ = graph;
  recording_thread_ = std::this_thread::get_id();
}

void GraphImpl::add(const std::shared_ptr<ModuleImpl>& module, size_t kernel, Grid grid, std::span<const Arg> args,
                    std::span<const backend::LaunchArg> packed) {
  backend::RecordedLaunch launch;
  launch.module = &module->backend();
  launch.kernel = kernel;
  launch.grid = grid;
  launch.args.assign(packed.begin(), packed.end());
  launch.scalars.resize(packed.size());
  for (size_t i = 0; i < packed.size(); ++i) {
    if (packed[i].buffer != nullptr) {
      buffers_.push_back(args[i].buffer->shared_from_this());
    } else {
      // The value now, not the caller's storage: a recorded scalar is fixed.
      std::memcpy(launch.scalars[i].data(), packed[i].scalar, packed[i].scalar_size);
      launch.args[i].scalar = launch.scalars[i].data();
    }
  }
  if (std::find(modules_.begin(), modules_.end(), module) == modules_.end()) modules_.push_back(module);
  // Moving a RecordedLaunch keeps its scalars' storage, so the pointers above stay valid.
  launches_.push_back(std::move(launch));
}

void GraphImpl::replay() const {
  std::lock_guard lock(device_->mutex());
  device_->refuse_while_recording("Graph::replay");
  graph_->replay();
}

}  // namespace detail

Graph Device::record(const std::function<void()>& work) const {
  if (!impl_) throw Error(ErrorCode::InvalidArgument, "quiver::Device is empty (moved-from)");
  const detail::DeviceImpl& d = *impl_;
  auto graph = std::make_shared<detail::GraphImpl>(impl_);
  {
    std::lock_guard lock(d.mutex());
    d.begin_recording(graph.get());
  }
  struct StopRecording {
    const detail::DeviceImpl& d;
    ~StopRecording() {
      std::lock_guard lock(d.mutex());
      d.end_recording();
    }
  };
  {
    StopRecording stop{d};
    work();
  }
  std::lock_guard lock(d.mutex());
  graph->build();
  return Graph(std::move(graph));
}

void Graph::replay() const {
  if (!impl_) throw Error(ErrorCode::InvalidArgument, "quiver::Graph is empty (default-constructed or moved-from)");
  impl_->replay();
}

size_t Graph::launch_count() const noexcept { return impl_ ? impl_->launch_count() : 0; }

}  // namespace quiver
