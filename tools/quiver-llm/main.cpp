// quiver-llm: greedy generation with a Llama-family GGUF model on the op library (docs/llm.md).
//   quiver-llm MODEL.gguf [--backend B] --prompt-ids 1,2,3 [-n N] [--dump-logits FILE] [--bench]
// Prints `ids: <generated ids>` and, where the file has a vocabulary, `text: <their text>`.
// Any error prints `quiver-llm: <what>` and exits 1.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <quiver/ops.h>
#include <quiver/runtime.h>

#include "gguf.h"
#include "llama.h"

namespace {

using quiver::llm::GgufError;

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// "1,2,3" -> ids, each a decimal integer in [0, vocab).
std::vector<int32_t> parse_prompt_ids(const std::string& text, uint32_t vocab) {
  std::vector<int32_t> ids;
  size_t start = 0;
  while (true) {
    size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    bool digits = !item.empty() && item.size() <= 10 && item.find_first_not_of("0123456789") == std::string::npos;
    if (!digits)
      throw UsageError("--prompt-ids: '" + item + "' (item " + std::to_string(ids.size() + 1) +
                       ") is not a token id (a non-negative decimal integer); expected e.g. 1,2,3");
    uint64_t id = std::stoull(item);
    if (id >= vocab)
      throw UsageError("--prompt-ids: token id " + item + " is not below the vocabulary size " +
                       std::to_string(vocab));
    ids.push_back(static_cast<int32_t>(id));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return ids;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The device's copy bandwidth as `add` of two 64 MiB f32 buffers into a third (reads two,
// writes one: 3 x 64 MiB moved per run), best of 10 runs after one warm-up, in GB/s.
double add_bandwidth_gbs(const quiver::Device& dev) {
  const size_t n = size_t(16) << 20;
  auto a = dev.alloc<float>(n), b = dev.alloc<float>(n), c = dev.alloc<float>(n);
  std::vector<float> ones(n, 1.0f);
  a.upload(std::span<const float>(ones));
  b.upload(std::span<const float>(ones));
  quiver::ops::add(dev, a, b, c, n);
  dev.synchronize();
  double best = 1e30;
  for (int r = 0; r < 10; ++r) best = std::min(best, dev.elapsed_ms([&] { quiver::ops::add(dev, a, b, c, n); }));
  return 3.0 * n * sizeof(float) / (best * 1e-3) / 1e9;
}

int run(int argc, char** argv) {
  CLI::App app{"quiver-llm: greedy generation with a Llama-family GGUF model on quiver's op library"};
  std::string model_path, backend, prompt_text, dump_path;
  int64_t n_generate = 16;
  bool bench = false, no_graph = false, token_prefill = false, gguf_layout = false, int8_activations = false;
  app.add_option("model", model_path, "the model (.gguf, architecture llama)")->required();
  app.add_option("--backend", backend, "cuda, vulkan, cpu (default: the best one found; QUIVER_BACKEND overrides)");
  app.add_option("--prompt-ids", prompt_text, "the prompt's token ids, comma-separated")->required();
  app.add_option("-n", n_generate, "tokens to generate (greedy), at least 1")
      ->check(CLI::Range(int64_t(1), int64_t(1) << 31));
  app.add_option("--dump-logits", dump_path,
                 "write the logits that chose each generated token: N rows of vocabulary-size float32 (little-endian)");
  app.add_flag("--bench", bench, "print prefill and decode tokens/s and the weight bandwidth reached");
  app.add_flag("--token-prefill", token_prefill,
               "run the prompt one token at a time through the decode step (float activations throughout) "
               "instead of as one batch");
  app.add_flag("--gguf-layout", gguf_layout,
               "keep Q8_0 / Q4_0 (and, with --int8-activations, Q6_K) weights in the file's block order on the "
               "device instead of repacking them for 16-byte loads (matvec_q8_0 / q4_0 / q6_k instead of "
               "matvec_q8_0r / q4_0r / q6_kr_a8)");
  app.add_flag("--int8-activations", int8_activations,
               "decode with the products of repacked Q8_0 / Q4_0 / Q6_K and of Q4_K weights on int8 activations (x "
               "quantized per 32-element block, integer dot products: matvec_q8_0r_a8 / q4_0r_a8 / q6_kr_a8 / "
               "q4_k_a8); docs/numerics.md has the error");
  app.add_flag("--no-graph", no_graph,
               "queue each decode step's launches one by one instead of replaying the step recorded once");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);   // --help
    std::fprintf(stderr, "quiver-llm: %s\nRun with --help for more information.\n", e.what());
    return 1;
  }

  quiver::llm::Gguf gguf = quiver::llm::Gguf::open(model_path);
  quiver::llm::LlamaConfig cfg = quiver::llm::from_gguf(gguf);
  std::vector<int32_t> prompt = parse_prompt_ids(prompt_text, cfg.vocab_size);
  if (prompt.size() + uint64_t(n_generate) > cfg.context_length)
    throw UsageError(model_path + ": " + std::to_string(prompt.size()) + " prompt tokens + " +
                     std::to_string(n_generate) + " to generate exceed llama.context_length " +
                     std::to_string(cfg.context_length));
  std::ofstream dump;
  if (!dump_path.empty()) {
    dump.open(dump_path, std::ios::binary | std::ios::trunc);
    if (!dump) throw UsageError("--dump-logits: cannot write " + dump_path);
  }

  quiver::Device dev = quiver::Device::open(backend);
  // Positions 0 .. prompt + N - 2 are run (the last generated token is never fed back).
  const size_t positions = prompt.size() + size_t(n_generate) - 1;
  quiver::llm::LlamaModel model(dev, gguf, cfg, positions, token_prefill ? 1 : prompt.size(), !gguf_layout,
                                  int8_activations);
  std::vector<float> logits(dump ? cfg.vocab_size : 0);
  auto dump_logits = [&] {
    if (!dump) return;
    model.logits().download(std::span<float>(logits));
    dump.write(reinterpret_cast<const char*>(logits.data()), std::streamsize(logits.size() * sizeof(float)));
  };

  // Prefill: the whole prompt at once (docs/llm.md, "Prefill"), or token by token through the
  // decode step. --bench runs it once before (module loads, pipelines) and times the second run
  // on the device as well.
  auto queue_prefill = [&] {
    if (!token_prefill) {
      model.set_prompt(prompt);
      model.queue_prefill();
      return;
    }
    for (size_t i = 0; i < prompt.size(); ++i) {
      model.set_input(prompt[i], static_cast<int32_t>(i));
      model.queue_step();
    }
  };
  double prefill_device_ms = 0;
  if (bench) {
    queue_prefill();
    dev.synchronize();
    prefill_device_ms = dev.elapsed_ms(queue_prefill);
  }
  auto t0 = std::chrono::steady_clock::now();
  queue_prefill();
  int32_t first = 0;
  model.token().download(std::span<int32_t>(&first, 1));
  double prefill_s = seconds_since(t0);
  dump_logits();

  // Decode: the step recorded once and replayed; each replay embeds the token the last one
  // chose and advances the position, on the device. The host waits only at the end (or for
  // --dump-logits). --no-graph queues the step's launches one by one instead.
  const size_t steps = size_t(n_generate) - 1;
  quiver::Graph step;
  if (!no_graph && steps > 0) step = dev.record([&] { model.queue_step(); });
  // The host's time per step is taken over the first steps only: the device is idle after the
  // prefill's download, so those queue without waiting. Later ones may wait in the backend for a
  // slot (Vulkan keeps a bounded number of submissions in flight), which is the device's time,
  // not the host's.
  constexpr size_t kHostTimedSteps = 8;
  double host_s = 0;
  auto t1 = std::chrono::steady_clock::now();
  for (size_t i = 0; i < steps; ++i) {
    auto h0 = std::chrono::steady_clock::now();
    if (no_graph) model.queue_step();
    else step.replay();
    if (i < kHostTimedSteps) host_s += seconds_since(h0);
    dump_logits();
  }
  const size_t host_timed = std::min(steps, kHostTimedSteps);
  // generated()[p]: the token chosen at position p; the N generated are those of positions
  // prompt - 1 .. prompt + N - 2.
  std::vector<int32_t> all(positions);
  model.generated().download(std::span<int32_t>(all));
  double decode_s = seconds_since(t1);
  std::vector<int32_t> generated(all.begin() + ptrdiff_t(prompt.size()) - 1, all.end());
  if (generated.front() != first)
    throw std::runtime_error("the device's record of the first generated token disagrees with the step's output");
  if (dump) {
    dump.close();
    if (!dump) throw UsageError("--dump-logits: writing " + dump_path + " failed");
  }

  std::string ids_line = "ids:";
  for (int32_t id : generated) ids_line += " " + std::to_string(id);
  std::printf("%s\n", ids_line.c_str());
  if (gguf.has("tokenizer.ggml.tokens")) {
    std::vector<std::string> vocabulary = quiver::llm::tokens(gguf);
    std::string text;
    for (int32_t id : generated) text += quiver::llm::render_token(vocabulary[size_t(id)]);
    // Written whole: a byte token may be <0x00>, which %s would end the text at.
    std::fputs("text: ", stdout);
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fputc('\n', stdout);
  }
  if (bench) {
    size_t decoded = generated.size() - 1;   // steps timed after the prefill
    double bytes = double(model.weight_bytes_per_token());
    double copy = add_bandwidth_gbs(dev);
    std::printf("bench: device %s (%s)\n", dev.device_name().c_str(), dev.backend_name().c_str());
    std::printf("bench: prefill %zu tokens, %.2f tokens/s (wall clock to the first id), %.3f ms on the device: "
                "%.2f tokens/s, %.1f TFLOP/s of matrix products (%s)\n",
                prompt.size(), double(prompt.size()) / prefill_s, prefill_device_ms,
                double(prompt.size()) / (prefill_device_ms * 1e-3),
                model.prefill_matrix_flops(prompt.size()) / (prefill_device_ms * 1e-3) / 1e12,
                token_prefill ? "token by token" : "one batch");
    if (decoded > 0) {
      double tps = double(decoded) / decode_s;
      std::printf("bench: decode %zu tokens, %.2f tokens/s (%s)\n", decoded, tps,
                  no_graph ? "launches queued one by one" : "one recorded step replayed");
      if (!no_graph) std::printf("bench: launches per decode step %zu\n", step.launch_count());
      const double host_step_s = host_s / double(host_timed);
      std::printf("bench: host time per decode step %.1f us (the first %zu steps), %.3f of the step\n",
                  host_step_s * 1e6, host_timed, host_step_s / (decode_s / double(decoded)));
      std::printf("bench: weights read per decoded token %.0f bytes, %.2f GB/s\n", bytes, bytes * tps / 1e9);
      std::printf("bench: add bandwidth (2 reads + 1 write of 64 MiB) %.2f GB/s, weights at %.3f of it\n", copy,
                  bytes * tps / 1e9 / copy);
    } else {
      std::printf("bench: decode: no step timed (-n 1 generates from the prefill alone)\n");
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "quiver-llm: %s\n", e.what());
    return 1;
  }
}
