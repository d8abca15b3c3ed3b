// The GGUF reader on broken files: each corruption of a valid file (gguf_gen.py's, at the field
// offsets its sidecar gives) must give an error that names the file and the field, key or
// tensor at fault; random truncations and bit flips must give errors only (ASan checks that
// nothing is read outside the file: the reader views an exactly sized heap copy).
#include <random>

#include "gguf_test_util.h"

namespace quiver::llm::test {
namespace {

const char kLabel[] = "corrupt.gguf";

class GgufCorrupt : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    gen_ = new Generated(generate("corrupt", "--seed 21 --embd 64 --heads 4 --kv-heads 2 --ff 96 --vocab 40 "
                                             "--type-attn Q8_0 --type-ffn Q4_0 --type-embd F16 --alignment 64"));
    std::remove(gen_->path.c_str());
  }
  static void TearDownTestSuite() {
    delete gen_;
    gen_ = nullptr;
  }

  // The error parsing `bytes` gives (then from_gguf's, with `config`); "" when there is none.
  static std::string error_of(const std::vector<std::byte>& bytes, bool config = false) {
    try {
      Gguf g = Gguf::view(bytes, kLabel);
      if (config) from_gguf(g);
    } catch (const GgufError& e) {
      return e.what();
    }
    return "";
  }
  // The file with `value` written at `offset`.
  template <typename T>
  static std::vector<std::byte> with(uint64_t offset, T value, std::vector<std::byte> bytes = gen_->bytes) {
    std::memcpy(bytes.data() + offset, &value, sizeof(T));
    return bytes;
  }
  static std::vector<std::byte> truncated(uint64_t size) {
    return std::vector<std::byte>(gen_->bytes.begin(), gen_->bytes.begin() + static_cast<ptrdiff_t>(size));
  }
  static const nlohmann::json& kv(const std::string& key) {
    for (const auto& e : gen_->side["layout"]["kv"])
      if (e["key"] == key) return e;
    throw std::runtime_error("no key " + key + " in the sidecar");
  }
  static const nlohmann::json& info(const std::string& name) {
    for (const auto& e : gen_->side["layout"]["tensors"])
      if (e["name"] == name) return e;
    throw std::runtime_error("no tensor " + name + " in the sidecar");
  }
  static uint64_t at(const nlohmann::json& e, const char* field) { return e[field].get<uint64_t>(); }

  static Generated* gen_;
};
Generated* GgufCorrupt::gen_ = nullptr;

std::string invalid(const std::string& field, const std::string& what) {
  return std::string(kLabel) + ": invalid GGUF file: " + field + ": " + what;
}

TEST_F(GgufCorrupt, TheValidFileParses) {
  EXPECT_EQ(error_of(gen_->bytes, true), "");
  EXPECT_EQ(error_of(with<uint32_t>(4, 2), true), "");   // version 2 has the same layout
}

TEST_F(GgufCorrupt, HeaderFields) {
  std::vector<std::byte> bad_magic = gen_->bytes;
  bad_magic[0] = std::byte{'X'};
  EXPECT_EQ(error_of(bad_magic), invalid("magic", "not a GGUF file (the first 4 bytes are not \"GGUF\")"));
  EXPECT_EQ(error_of(with<uint32_t>(4, 1)),
            invalid("version", "version 1 is not supported (this reader reads 2 and 3, little-endian)"));
  EXPECT_EQ(error_of(with<uint32_t>(4, 0x03000000)),
            invalid("version", "version 50331648 is not supported (this reader reads 2 and 3, little-endian; "
                               "this is a big-endian file)"));
  const uint64_t size = gen_->bytes.size();
  EXPECT_EQ(error_of(with<uint64_t>(8, uint64_t{1} << 62)),
            invalid("tensor count", "4611686018427387904 items of at least 32 bytes each cannot fit in the " +
                                        std::to_string(size - 16) + " bytes left in the file (a wrong count or a "
                                        "truncated file)"));
  EXPECT_EQ(error_of(with<uint64_t>(16, ~uint64_t{0})),
            invalid("metadata count", "18446744073709551615 items of at least 13 bytes each cannot fit in the " +
                                          std::to_string(size - 24) + " bytes left in the file (a wrong count or "
                                          "a truncated file)"));
  // More pairs than there are: the reader runs into the tensor infos and fails on what it finds.
  EXPECT_NE(error_of(with<uint64_t>(16, gen_->side["layout"]["kv"].size() + 1)), "");
}

TEST_F(GgufCorrupt, Truncations) {
  const size_t size = gen_->bytes.size();
  EXPECT_EQ(error_of(truncated(0)), invalid("magic", "truncated (needs 4 bytes at offset 0, the file has 0)"));
  EXPECT_EQ(error_of(truncated(12)), invalid("tensor count", "truncated (needs 8 bytes at offset 8, the file has 12)"));
  const size_t n_tensors = gen_->side["tensors"].size();
  EXPECT_EQ(error_of(truncated(30)),
            invalid("tensor count", std::to_string(n_tensors) + " items of at least 32 bytes each cannot fit in the "
                                    "14 bytes left in the file (a wrong count or a truncated file)"));
  const auto& kvs = gen_->side["layout"]["kv"];
  size_t dup_b = 0;
  while (kvs[dup_b]["key"] != "test.dup_b") ++dup_b;
  EXPECT_EQ(error_of(truncated(at(kvs[dup_b], "key_offset") + 10)),
            invalid("metadata[" + std::to_string(dup_b) + "] key", "string length 10 exceeds the 2 bytes left in the file"));
  const uint64_t nested = at(kv("test.nested"), "value_offset");
  // test.nested's last string, "\u2581d" (4 bytes at +75), cut after 2 of them.
  EXPECT_EQ(error_of(truncated(nested + 77)),
            invalid("metadata key 'test.nested'[2][0]", "string length 4 exceeds the 2 bytes left in the file"));
  const nlohmann::json& q = info("blk.0.attn_q.weight");
  EXPECT_EQ(error_of(truncated(at(q, "type_offset") + 2)),
            invalid("tensor 'blk.0.attn_q.weight' type",
                    "truncated (needs 4 bytes at offset " + std::to_string(at(q, "type_offset")) +
                        ", the file has " + std::to_string(at(q, "type_offset") + 2) + ")"));
  const nlohmann::json& last = gen_->side["layout"]["tensors"].back();
  const uint64_t infos_end = at(last, "offset_offset") + 8, data = gen_->side["layout"]["data_offset"];
  ASSERT_LT(infos_end, data) << "the test needs padding before the data section";
  EXPECT_EQ(error_of(truncated(data - 1)),
            invalid("data section", "truncated (it starts at offset " + std::to_string(data) + ", the file has " +
                                        std::to_string(data - 1) + " bytes)"));
  const std::string last_name = last["name"];
  const nlohmann::json& last_tensor = gen_->side["tensors"].back();
  const uint64_t last_bytes = last_tensor["bytes"], last_offset = last_tensor["offset"];
  ASSERT_EQ(data + last_offset + last_bytes, size) << "the last tensor ends the file";
  EXPECT_EQ(error_of(truncated(size - 1)),
            invalid("tensor '" + last_name + "' offset",
                    "its " + std::to_string(last_bytes) + " bytes at " + std::to_string(last_offset) +
                        " run past the data section's " + std::to_string(size - 1 - data) + " bytes"));
}

TEST_F(GgufCorrupt, MetadataFields) {
  EXPECT_EQ(error_of(with<uint64_t>(at(kv("general.architecture"), "key_offset"), uint64_t{1} << 50)),
            invalid("metadata[0] key", "string length 1125899906842624 exceeds the " +
                                           std::to_string(gen_->bytes.size() - 32) + " bytes left in the file"));
  const uint64_t arch = at(kv("general.architecture"), "value_offset");
  EXPECT_NE(error_of(with<uint64_t>(arch, ~uint64_t{0})).find(
                invalid("metadata key 'general.architecture'", "string length 18446744073709551615 exceeds")),
            std::string::npos);
  const uint64_t tokens = at(kv("tokenizer.ggml.tokens"), "value_offset");
  EXPECT_NE(error_of(with<uint64_t>(tokens + 4, uint64_t{1} << 61))
                .find(invalid("metadata key 'tokenizer.ggml.tokens' count", "2305843009213693952 items of at least 8")),
            std::string::npos);
  EXPECT_NE(error_of(with<uint64_t>(tokens + 12, uint64_t{1} << 40))
                .find(invalid("metadata key 'tokenizer.ggml.tokens'[0]", "string length 1099511627776 exceeds")),
            std::string::npos);
  EXPECT_EQ(error_of(with<uint32_t>(at(kv("test.u8"), "type_offset"), 13)),
            invalid("metadata key 'test.u8' value type", "unknown metadata value type 13"));
  EXPECT_EQ(error_of(with<uint32_t>(at(kv("test.nested"), "value_offset"), 99)),
            invalid("metadata key 'test.nested' element type", "unknown metadata value type 99"));
  EXPECT_EQ(error_of(with<uint8_t>(at(kv("test.bool"), "value_offset"), 2)),
            invalid("metadata key 'test.bool'", "a BOOL must be 0 or 1, not 2"));
  // test.dup_b renamed test.dup_a.
  EXPECT_EQ(error_of(with<char>(at(kv("test.dup_b"), "key_offset") + 8 + 9, 'a')),
            invalid("metadata key 'test.dup_a'", "the key appears twice"));
  const uint64_t align = at(kv("general.alignment"), "value_offset");
  EXPECT_EQ(error_of(with<uint32_t>(align, 3)), invalid("metadata key 'general.alignment'", "3 is not a power of two"));
  EXPECT_EQ(error_of(with<uint32_t>(align, 0)), invalid("metadata key 'general.alignment'", "0 is not a power of two"));
  EXPECT_EQ(error_of(with<uint32_t>(at(kv("general.alignment"), "type_offset"), 5)),
            invalid("metadata key 'general.alignment'", "must be a U32, not a I32"));
}

TEST_F(GgufCorrupt, TensorInfoFields) {
  const std::string q = "tensor 'blk.0.attn_q.weight'";
  const nlohmann::json& qi = info("blk.0.attn_q.weight");
  EXPECT_EQ(error_of(with<uint32_t>(at(qi, "n_dims_offset"), 5)), invalid(q + " n_dims", "5 dimensions (1 to 4 allowed)"));
  EXPECT_EQ(error_of(with<uint32_t>(at(qi, "n_dims_offset"), 0)), invalid(q + " n_dims", "0 dimensions (1 to 4 allowed)"));
  EXPECT_EQ(error_of(with<uint64_t>(at(qi, "dims_offset") + 8, 0)), invalid(q + " dims[1]", "a dimension is 0"));
  EXPECT_EQ(error_of(with<uint64_t>(at(qi, "dims_offset") + 8, uint64_t{1} << 60,
                                    with<uint64_t>(at(qi, "dims_offset"), uint64_t{1} << 40))),
            invalid(q + " dims", "the element count overflows (dims so far [1099511627776] and 1152921504606846976)"));
  EXPECT_EQ(error_of(with<uint32_t>(at(qi, "type_offset"), 99)),
            invalid(q + " type", "ggml type 99 is not supported (F32, F16, BF16, Q8_0, Q4_0, Q4_K and Q6_K are)"));
  EXPECT_EQ(error_of(with<uint32_t>(at(qi, "type_offset"), 3)),
            invalid(q + " type", "ggml type Q4_1 (3) is not supported (F32, F16, BF16, Q8_0, Q4_0, Q4_K and Q6_K are)"));
  EXPECT_EQ(error_of(with<uint64_t>(at(qi, "dims_offset"), 48)),
            invalid(q + " dims[0]", "a row of 48 elements is not a whole number of Q8_0 blocks of 32"));
  const uint64_t offset = gen_->side["tensors"][2]["offset"];   // the order of the infos
  ASSERT_EQ(gen_->side["tensors"][2]["name"], "blk.0.attn_q.weight");
  EXPECT_EQ(error_of(with<uint64_t>(at(qi, "offset_offset"), offset + 32)),
            invalid(q + " offset", std::to_string(offset + 32) + " is not a multiple of the alignment 64"));
  const uint64_t data_size = gen_->bytes.size() - gen_->side["layout"]["data_offset"].get<uint64_t>();
  EXPECT_EQ(error_of(with<uint64_t>(at(qi, "offset_offset"), uint64_t{1} << 40)),
            invalid(q + " offset", "its 4352 bytes at 1099511627776 run past the data section's " +
                                       std::to_string(data_size) + " bytes"));
  EXPECT_EQ(error_of(with<uint64_t>(at(qi, "offset_offset"), ~uint64_t{63})),
            invalid(q + " offset", "its 4352 bytes at 18446744073709551552 run past the data section's " +
                                       std::to_string(data_size) + " bytes"));
  EXPECT_EQ(error_of(with<uint64_t>(at(qi, "name_offset"), uint64_t{1} << 33)),
            invalid("tensor[2] name", "string length 8589934592 exceeds the " +
                                          std::to_string(gen_->bytes.size() - at(qi, "name_offset") - 8) +
                                          " bytes left in the file"));
  // blk.0.attn_k.weight renamed blk.0.attn_q.weight.
  EXPECT_EQ(error_of(with<char>(at(info("blk.0.attn_k.weight"), "name_offset") + 8 + 11, 'q')),
            invalid(q, "the tensor name appears twice"));
}

TEST_F(GgufCorrupt, LlamaModel) {
  const std::string model = std::string(kLabel) + ": llama model: ";
  const nlohmann::json& down = info("blk.1.ffn_down.weight");
  EXPECT_EQ(error_of(with<uint64_t>(at(down, "dims_offset") + 8, 32), true),
            model + "tensor 'blk.1.ffn_down.weight': expected shape [96, 64], found [96, 32]");
  EXPECT_EQ(error_of(with<char>(at(info("blk.1.ffn_up.weight"), "name_offset") + 8 + 10, 'x'), true),
            model + "tensor 'blk.1.ffn_up.weight' is missing (expected shape [64, 96])");
  EXPECT_EQ(error_of(with<char>(at(kv("general.architecture"), "value_offset") + 8 + 4, 'b'), true),
            model + "general.architecture is 'llamb', not 'llama'");
  EXPECT_EQ(error_of(with<char>(at(kv("llama.block_count"), "key_offset") + 8 + 16, '!'), true),
            std::string(kLabel) + ": GGUF metadata key 'llama.block_count': missing");
  EXPECT_EQ(error_of(with<uint32_t>(at(kv("llama.block_count"), "value_offset"), 3), true),
            model + "tensor 'blk.2.attn_norm.weight' is missing (expected shape [64])");
  EXPECT_EQ(error_of(with<uint32_t>(at(kv("llama.attention.head_count_kv"), "value_offset"), 3), true),
            model + "head_count 4 is not a multiple of head_count_kv 3");
  EXPECT_EQ(error_of(with<uint32_t>(at(kv("llama.rope.dimension_count"), "value_offset"), 17), true),
            model + "rope.dimension_count 17 must be even and between 2 and the head size 16");
  EXPECT_EQ(error_of(with<uint32_t>(at(kv("llama.attention.value_length"), "value_offset"), 32), true),
            model + "llama.attention.value_length 32 is not embedding_length / head_count = 16 (not supported)");
  EXPECT_EQ(error_of(with<uint32_t>(at(kv("llama.embedding_length"), "value_offset"), 0), true),
            model + "'llama.embedding_length' is 0");
}

// Arrays nested deeper than the reader allows: built by hand (no model needs one).
TEST(GgufNesting, DeepArraysAreRefused) {
  auto file = [](int depth) {
    std::vector<std::byte> b;
    auto put = [&](const void* p, size_t n) {
      const auto* c = static_cast<const std::byte*>(p);
      b.insert(b.end(), c, c + n);
    };
    auto u32 = [&](uint32_t v) { put(&v, 4); };
    auto u64 = [&](uint64_t v) { put(&v, 8); };
    put("GGUF", 4), u32(3), u64(0), u64(1), u64(1), put("k", 1), u32(9);
    for (int i = 1; i < depth; ++i) u32(9), u64(1);   // an array of one array ...
    u32(0), u64(1), put("\x07", 1);                   // ... of one U8
    return b;
  };
  EXPECT_NO_THROW(Gguf::view(file(8), "nested.gguf"));
  try {
    Gguf::view(file(9), "nested.gguf");
    FAIL() << "no error";
  } catch (const GgufError& e) {
    EXPECT_EQ(std::string(e.what()), "nested.gguf: invalid GGUF file: metadata key 'k'[0][0][0][0][0][0][0][0]: "
                                     "arrays nested more than 8 deep");
  }
}

// Random truncations, bit flips and field overwrites: errors only, and whatever parses
// dequantizes within its bytes.
TEST_F(GgufCorrupt, RandomDamageGivesErrorsOnly) {
  std::mt19937_64 rng(20261127);
  std::vector<uint64_t> fields = {4, 8, 16};
  for (const auto& e : gen_->side["layout"]["kv"])
    for (const char* f : {"key_offset", "type_offset", "value_offset"}) fields.push_back(e[f]);
  for (const auto& e : gen_->side["layout"]["tensors"])
    for (const char* f : {"name_offset", "n_dims_offset", "dims_offset", "type_offset", "offset_offset"})
      fields.push_back(e[f]);
  const uint64_t interesting[] = {0, 1, 2, 3, 4, 5, 9, 13, 31, 32, 63, 64, 255, 256, 0x7FFFFFFF, 0xFFFFFFFF,
                                  uint64_t{1} << 32, uint64_t{1} << 62, ~uint64_t{0}};
  int parsed = 0, refused = 0;
  std::vector<float> out;
  for (int iter = 0; iter < 3000; ++iter) {
    std::vector<std::byte> b = gen_->bytes;
    switch (rng() % 3) {
      case 0: b.resize(rng() % b.size()); break;
      case 1:
        for (int k = 1 + rng() % 8; k > 0; --k) b[rng() % b.size()] ^= std::byte(1u << (rng() % 8));
        break;
      default: {
        const uint64_t off = fields[rng() % fields.size()] + (rng() % 3 == 0 ? 8 : 0);
        const uint64_t v = interesting[rng() % std::size(interesting)];
        std::memcpy(b.data() + off, &v, rng() % 2 ? 4 : 8);
      }
    }
    b.shrink_to_fit();   // exactly the file's bytes: ASan sees any read past them
    try {
      Gguf g = Gguf::view(b, kLabel);
      try {
        from_gguf(g);
        (void)tokens(g);
      } catch (const GgufError&) {
      }
      for (const Tensor& t : g.tensors()) {
        out.assign(t.elements(), 0.0f);
        dequantize_row(t.type, t.bytes, t.elements(), out.data());
      }
      ++parsed;
    } catch (const GgufError& e) {
      ASSERT_EQ(std::string(e.what()).rfind(kLabel, 0), 0u) << e.what();
      ++refused;
    }
  }
  RecordProperty("parsed", parsed);
  RecordProperty("refused", refused);
  EXPECT_GT(refused, 1000);
  EXPECT_GT(parsed, 10);
}

}  // namespace
}  // namespace quiver::llm::test
