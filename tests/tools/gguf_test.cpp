// The GGUF reader on valid files: gguf_gen.py writes random Llama models (every accepted tensor
// type, tied and untied output, defaults left out or not, versions 2 and 3, several alignments)
// and its sidecar says what it wrote; the reader must find the same metadata, configuration,
// tensors and, once dequantized, the same values.
#include <cmath>
#include <limits>

#include "gguf_test_util.h"

namespace quiver::llm::test {
namespace {

struct Case {
  const char* name;
  const char* args;
};

const Case kCases[] = {
    {"f32_gqa", "--seed 11 --embd 64 --heads 4 --kv-heads 2 --ff 128 --vocab 300 --rope-dims 8"},
    {"q8_q4_tied", "--seed 12 --embd 64 --heads 4 --kv-heads 1 --ff 96 --vocab 280 --type-embd F16 "
                   "--type-attn Q8_0 --type-ffn Q4_0 --tied --alignment 64"},
    {"k_quants", "--seed 13 --embd 256 --heads 8 --kv-heads 4 --ff 512 --vocab 320 --type-embd BF16 "
                 "--type-attn Q4_K --type-ffn Q6_K --type-output Q6_K --alignment 128 --layers 1"},
    {"defaults_v2", "--seed 14 --embd 96 --heads 6 --ff 160 --vocab 50 --no-defaults --no-tokens "
                    "--type-norm F16 --type-output BF16 --version 2 --layers 3"},
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class GgufFiles : public testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    gen_ = generate(GetParam().name, GetParam().args);
  }
  void TearDown() override { std::remove(gen_.path.c_str()); }
  Generated gen_;
};

void expect_value(const Gguf& g, const std::string& key, const nlohmann::json& expected) {
  SCOPED_TRACE(key);
  const Value* v = g.find(key);
  ASSERT_NE(v, nullptr);
  const int type = expected["type"];
  EXPECT_EQ(static_cast<int>(v->type), type);
  const nlohmann::json& x = expected["value"];
  switch (static_cast<ValueType>(type)) {
    case ValueType::U8: case ValueType::U16: case ValueType::U32: case ValueType::U64:
      EXPECT_EQ(g.get_u64(key), x.get<uint64_t>());
      break;
    case ValueType::I8: case ValueType::I16: case ValueType::I32:
      EXPECT_EQ(g.get_i32(key), x.get<int32_t>());
      break;
    case ValueType::I64: EXPECT_EQ(std::get<int64_t>(v->data), x.get<int64_t>()); break;
    case ValueType::F32: EXPECT_EQ(g.get_f32(key), x.get<float>()); break;
    case ValueType::F64: EXPECT_EQ(std::get<double>(v->data), x.get<double>()); break;
    case ValueType::Bool: EXPECT_EQ(g.get_bool(key), x.get<bool>()); break;
    case ValueType::String: EXPECT_EQ(g.get_string(key), x.get<std::string>()); break;
    case ValueType::Array: {   // test.nested: an array of arrays of strings
      const Array& outer = g.get_array(key);
      ASSERT_EQ(outer.element_type, ValueType::Array);
      ASSERT_EQ(outer.items.size(), x.size());
      for (size_t i = 0; i < x.size(); ++i) {
        const Array& inner = std::get<Array>(outer.items[i].data);
        EXPECT_EQ(inner.element_type, ValueType::String);
        ASSERT_EQ(inner.items.size(), x[i].size());
        for (size_t j = 0; j < x[i].size(); ++j)
          EXPECT_EQ(std::get<std::string>(inner.items[j].data), x[i][j].get<std::string>());
      }
      break;
    }
  }
}

TEST_P(GgufFiles, MetadataConfigAndTokens) {
  const Gguf g = Gguf::open(gen_.path);
  const nlohmann::json& side = gen_.side;
  EXPECT_EQ(g.label(), gen_.path);
  EXPECT_EQ(g.alignment(), side["alignment"].get<uint32_t>());
  EXPECT_EQ(g.data_offset(), side["layout"]["data_offset"].get<uint64_t>());
  for (const auto& [key, expected] : side["metadata"].items()) expect_value(g, key, expected);

  const LlamaConfig cfg = from_gguf(g);
  const nlohmann::json& c = side["config"];
  static constexpr std::pair<const char*, uint32_t LlamaConfig::*> kCounts[] = {
      {"context_length", &LlamaConfig::context_length},   {"embedding_length", &LlamaConfig::embedding_length},
      {"block_count", &LlamaConfig::block_count},         {"feed_forward_length", &LlamaConfig::feed_forward_length},
      {"head_count", &LlamaConfig::head_count},           {"head_count_kv", &LlamaConfig::head_count_kv},
      {"head_dim", &LlamaConfig::head_dim},               {"rope_dimension_count", &LlamaConfig::rope_dimension_count},
      {"vocab_size", &LlamaConfig::vocab_size}};
  for (const auto& [field, member] : kCounts) EXPECT_EQ(cfg.*member, c[field].get<uint32_t>()) << field;
  EXPECT_EQ(cfg.rms_norm_epsilon, c["rms_norm_epsilon"].get<float>());
  EXPECT_EQ(cfg.rope_freq_base, c["rope_freq_base"].get<float>());
  EXPECT_EQ(cfg.tied_output, c["tied_output"].get<bool>());

  const auto& expected_tokens = side["tokens"];
  if (expected_tokens.empty()) {
    EXPECT_FALSE(g.has("tokenizer.ggml.tokens"));
    EXPECT_THROW(tokens(g), GgufError);
  } else {
    EXPECT_EQ(tokens(g), expected_tokens.get<std::vector<std::string>>());
  }
}

TEST_P(GgufFiles, TensorsDequantizeToTheWrittenValues) {
  const Gguf g = Gguf::open(gen_.path);
  const Gguf v = Gguf::view(gen_.bytes, "in memory");
  const nlohmann::json& expected = gen_.side["tensors"];
  ASSERT_EQ(g.tensors().size(), expected.size());
  const uint64_t data_offset = gen_.side["layout"]["data_offset"];
  for (size_t i = 0; i < expected.size(); ++i) {
    const nlohmann::json& e = expected[i];
    const std::string name = e["name"];
    SCOPED_TRACE(name + " (" + e["type"].get<std::string>() + ")");
    const Tensor& t = g.tensor(name);
    EXPECT_EQ(&t, &g.tensors()[i]);   // file order
    EXPECT_EQ(static_cast<uint32_t>(t.type), e["type_id"].get<uint32_t>());
    EXPECT_EQ(t.dims, e["dims"].get<std::vector<uint64_t>>());
    EXPECT_EQ(t.offset, e["offset"].get<uint64_t>());
    EXPECT_EQ(t.bytes.size(), e["bytes"].get<size_t>());
    EXPECT_EQ(v.tensor(name).bytes.data(), gen_.bytes.data() + data_offset + t.offset);
    ASSERT_EQ(std::memcmp(t.bytes.data(), v.tensor(name).bytes.data(), t.bytes.size()), 0);

    std::vector<float> out(t.elements() + 1, std::numeric_limits<float>::quiet_NaN());
    const float guard = out.back() = -12345.0f;
    dequantize_row(t.type, t.bytes, t.elements(), out.data());
    EXPECT_EQ(out.back(), guard);
    double sum = 0, sumsq = 0, wsum = 0;
    for (size_t k = 0; k < t.elements(); ++k) {
      const double x = out[k], w = static_cast<double>(k % 251 + 1) / 251.0;
      sum += x;
      sumsq += x * x;
      wsum += x * w;
    }
    // Each value may differ from numpy's by an ulp where the compiler fuses a multiply-add.
    const double abs_sum = e["abs_sum"];
    EXPECT_NEAR(sum, e["sum"].get<double>(), 1e-6 * abs_sum + 1e-12);
    EXPECT_NEAR(sumsq, e["sumsq"].get<double>(), 1e-6 * e["sumsq"].get<double>() + 1e-12);
    EXPECT_NEAR(wsum, e["wsum"].get<double>(), 1e-6 * e["abs_wsum"].get<double>() + 1e-12);
    for (const auto& s : e["samples"]) {
      const size_t k = s[0];
      const double x = s[1];
      EXPECT_NEAR(out[k], x, 1e-6 * std::fabs(x) + 1e-12) << "element " << k;
    }
  }
}

TEST_P(GgufFiles, GettersNameTheFileAndKey) {
  const Gguf g = Gguf::open(gen_.path);
  auto error = [&](auto&& f) -> std::string {
    try {
      f();
    } catch (const GgufError& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_EQ(error([&] { g.get_string("llama.block_count"); }),
            gen_.path + ": GGUF metadata key 'llama.block_count': is a U32, not a STRING");
  EXPECT_EQ(error([&] { g.get_u32("llama.no_such_key"); }),
            gen_.path + ": GGUF metadata key 'llama.no_such_key': missing");
  EXPECT_EQ(error([&] { g.get_u32("test.i8"); }), gen_.path + ": GGUF metadata key 'test.i8': is negative");
  EXPECT_EQ(error([&] { g.get_u32("test.u64"); }),
            gen_.path + ": GGUF metadata key 'test.u64': 1099511627776 does not fit in 32 bits");
  EXPECT_EQ(error([&] { g.get_i32("test.u32"); }),
            gen_.path + ": GGUF metadata key 'test.u32': does not fit in a signed 32-bit integer");
  EXPECT_EQ(error([&] { g.get_f32("test.string"); }),
            gen_.path + ": GGUF metadata key 'test.string': is a STRING, not a F32 or F64");
  EXPECT_EQ(error([&] { g.get_array("test.bool"); }),
            gen_.path + ": GGUF metadata key 'test.bool': is a BOOL, not an ARRAY");
  EXPECT_EQ(error([&] { g.get_u32("test.f32", 7); }),
            gen_.path + ": GGUF metadata key 'test.f32': is a F32, not an integer");
  EXPECT_EQ(g.get_u32("test.absent", 7), 7u);
  EXPECT_EQ(g.get_f32("test.f64", 3.0f), -1.5f);
  EXPECT_EQ(error([&] { g.tensor("blk.0.attn_qq.weight"); }),
            gen_.path + ": no tensor 'blk.0.attn_qq.weight' in the file");
}

INSTANTIATE_TEST_SUITE_P(Models, GgufFiles, testing::ValuesIn(kCases),
                         [](const testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

TEST(Gguf, RenderToken) {
  EXPECT_EQ(render_token("\xE2\x96\x81hello"), " hello");
  EXPECT_EQ(render_token("ab\xE2\x96\x81\xE2\x96\x81" "cd"), "ab  cd");
  EXPECT_EQ(render_token("<0x0A>"), "\n");
  EXPECT_EQ(render_token("<0xff>"), "\xff");
  EXPECT_EQ(render_token("<0x00>"), std::string(1, '\0'));
  EXPECT_EQ(render_token("<0xZZ>"), "<0xZZ>");
  EXPECT_EQ(render_token("<0x0A"), "<0x0A");
  EXPECT_EQ(render_token("<s>"), "<s>");
  EXPECT_EQ(render_token("h\xC3\xA9llo"), "h\xC3\xA9llo");
  EXPECT_EQ(render_token(""), "");
}

TEST(Gguf, UnreadableFilesAreNamed) {
  auto error = [](const std::string& path) -> std::string {
    try {
      Gguf::open(path);
    } catch (const GgufError& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_EQ(error("/nonexistent/model.gguf"), "/nonexistent/model.gguf: cannot open GGUF file: No such file or directory");
  const std::string dir = testing::TempDir();
  EXPECT_EQ(error(dir), dir + ": cannot read GGUF file (not a regular file?)");
  const std::string empty = dir + "quiver_gguf_empty_" + std::to_string(getpid()) + ".gguf";
  std::ofstream(empty).close();
  EXPECT_EQ(error(empty), empty + ": invalid GGUF file: magic: truncated (needs 4 bytes at offset 0, the file has 0)");
  std::remove(empty.c_str());
}

TEST(Gguf, DequantizeRowChecksItsArguments) {
  std::vector<std::byte> block(144);
  std::vector<float> out(512);
  EXPECT_THROW(dequantize_row(GgmlType::Q4_K, block, 100, out.data()), GgufError);   // not whole blocks
  EXPECT_THROW(dequantize_row(GgmlType::Q4_K, block, 512, out.data()), GgufError);   // bytes too short
  EXPECT_NO_THROW(dequantize_row(GgmlType::Q4_K, block, 256, out.data()));
  EXPECT_THROW(dequantize_row(static_cast<GgmlType>(3), block, 32, out.data()), GgufError);
}

}  // namespace
}  // namespace quiver::llm::test
