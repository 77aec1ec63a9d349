// Input shapes encoding: every expected string below is what torch 1.13's
// profiler printed for the same inputs (tests/integration/torch_shapes_probe.py).
#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "ptprof/shapes.hpp"

using namespace ptprof::shapes;

namespace {

// c10::ScalarType values.
constexpr uint8_t kByte = 0, kLong = 4, kHalf = 5, kFloat = 6, kDouble = 7, kBool = 11, kBFloat16 = 15;

struct Built {
  std::vector<uint8_t> bytes;
  bool truncated = false;
};

// A small input-list builder in the bridge's terms.
struct In {
  enum Kind { T, S, L, U, O } kind;
  uint8_t dtype = 0;
  std::vector<int64_t> dims;
  uint64_t count = 0;
};
In tensor(uint8_t dtype, std::vector<int64_t> dims) { return {In::T, dtype, std::move(dims), 0}; }
In scalar() { return {In::S, 0, {}, 0}; }
In list(uint64_t n) { return {In::L, 0, {}, n}; }
In undef() { return {In::U, 0, {}, 0}; }
In other() { return {In::O, 0, {}, 0}; }

Built encode(const std::vector<In>& inputs, size_t capacity = 4048) {
  std::vector<uint8_t> buf(capacity, 0xEE);
  Encoder enc(buf.data(), buf.size());
  for (const auto& in : inputs) {
    bool ok = false;
    switch (in.kind) {
      case In::T:
        ok = enc.tensor(in.dtype, in.dims);
        break;
      case In::S:
        ok = enc.scalar();
        break;
      case In::L:
        ok = enc.tensor_list(in.count);
        break;
      case In::U:
        ok = enc.undefined();
        break;
      case In::O:
        ok = enc.other();
        break;
    }
    if (!ok) break;
  }
  REQUIRE(enc.size() <= capacity);
  buf.resize(enc.size());
  return {buf, enc.truncated()};
}

std::string shapes(const Built& b) {
  auto s = shapes_text(b.bytes);
  REQUIRE(s.ok());
  return *s;
}
std::string dtypes(const Built& b) {
  auto s = dtypes_text(b.bytes);
  REQUIRE(s.ok());
  return *s;
}

}  // namespace

TEST_CASE("shapes: conv2d, tensors then scalars and int lists", "[shapes]") {
  // aten::conv2d(input, weight, bias, stride, padding, dilation, groups)
  auto b = encode({tensor(kFloat, {4, 3, 16, 16}), tensor(kFloat, {8, 3, 3, 3}), tensor(kFloat, {8}), other(), other(),
                   other(), scalar()});
  CHECK(shapes(b) == "[[4, 3, 16, 16], [8, 3, 3, 3], [8], [], [], [], []]");
  CHECK(dtypes(b) == R"(["float", "float", "float", "", "", "", "Scalar"])");
}

TEST_CASE("shapes: tensor plus python scalar (wrapped number is a 0-dim long tensor)", "[shapes]") {
  // torch.ones(2) + 1 -> aten::add(self, other, alpha)
  auto b = encode({tensor(kFloat, {2}), tensor(kLong, {}), scalar()});
  CHECK(shapes(b) == "[[2], [], []]");
  CHECK(dtypes(b) == R"(["float", "long int", "Scalar"])");
}

TEST_CASE("shapes: tensor lists print [] (torch.cat, torch.stack)", "[shapes]") {
  auto b = encode({list(2), scalar()});
  CHECK(shapes(b) == "[[], []]");
  CHECK(dtypes(b) == R"(["TensorList", "Scalar"])");
  // aten::broadcast_tensors(tensors)
  CHECK(shapes(encode({list(2)})) == "[[]]");
  CHECK(dtypes(encode({list(0)})) == R"(["TensorList"])");
}

TEST_CASE("shapes: None and strings print [] with an empty dtype", "[shapes]") {
  // F.linear(x, w, None)
  auto b = encode({tensor(kFloat, {2, 3}), tensor(kFloat, {4, 3}), other()});
  CHECK(shapes(b) == "[[2, 3], [4, 3], []]");
  CHECK(dtypes(b) == R"(["float", "float", ""])");
  // torch.div(a, b, rounding_mode="floor")
  CHECK(dtypes(encode({tensor(kFloat, {2}), tensor(kFloat, {2}), other()})) == R"(["float", "float", ""])");
}

TEST_CASE("shapes: 0-dim and empty tensors", "[shapes]") {
  // torch.tensor(3.0) * torch.tensor(2.0)
  CHECK(shapes(encode({tensor(kFloat, {}), tensor(kFloat, {})})) == "[[], []]");
  // torch.ones(0, 5).sum()
  CHECK(shapes(encode({tensor(kFloat, {0, 5}), other()})) == "[[0, 5], []]");
}

TEST_CASE("shapes: undefined tensors, e.g. unused grads in backward", "[shapes]") {
  // UnbindBackward0 with two of three grads undefined
  auto b = encode({tensor(kFloat, {}), undef(), undef()});
  CHECK(shapes(b) == "[[], [], []]");
  CHECK(dtypes(b) == R"(["float", "", ""])");
}

TEST_CASE("shapes: backward nodes and scopes without inputs", "[shapes]") {
  // AddmmBackward0 receives the output grad
  CHECK(shapes(encode({tensor(kFloat, {3, 2})})) == "[[3, 2]]");
  // autograd::engine::evaluate_function: ..., Optimizer.step#SGD.step, record_function("outer")
  CHECK(shapes(encode({})) == "[]");
  CHECK(dtypes(encode({})) == "[]");
  // record_function("inner", "some args"): the args string is one input
  CHECK(shapes(encode({other()})) == "[[]]");
  CHECK(dtypes(encode({other()})) == R"([""])");
}

TEST_CASE("shapes: many inputs (_convolution has 13)", "[shapes]") {
  auto b = encode({tensor(kFloat, {4, 3, 16, 16}), tensor(kFloat, {8, 3, 3, 3}), tensor(kFloat, {8}), other(), other(),
                   other(), scalar(), other(), scalar(), scalar(), scalar(), scalar(), scalar()});
  CHECK(shapes(b) == "[[4, 3, 16, 16], [8, 3, 3, 3], [8], [], [], [], [], [], [], [], [], [], []]");
}

TEST_CASE("shapes: dtype names match c10::TypeMeta under torch 1.13", "[shapes]") {
  CHECK(dtype_name(kByte) == "unsigned char");
  CHECK(dtype_name(1) == "signed char");
  CHECK(dtype_name(2) == "short int");
  CHECK(dtype_name(3) == "int");
  CHECK(dtype_name(kLong) == "long int");
  CHECK(dtype_name(kHalf) == "c10::Half");
  CHECK(dtype_name(kDouble) == "double");
  CHECK(dtype_name(8) == "c10::complex<c10::Half>");
  CHECK(dtype_name(9) == "c10::complex<float>");
  CHECK(dtype_name(10) == "c10::complex<double>");
  CHECK(dtype_name(kBool) == "bool");
  CHECK(dtype_name(12) == "c10::qint8");
  CHECK(dtype_name(13) == "c10::quint8");
  CHECK(dtype_name(14) == "c10::qint32");
  CHECK(dtype_name(kBFloat16) == "c10::BFloat16");
  CHECK(dtype_name(200).empty());
}

TEST_CASE("shapes: large dims use multi-byte varints", "[shapes]") {
  auto b = encode({tensor(kFloat, {1, 127, 128, 16384, int64_t(1) << 40})});
  CHECK(shapes(b) == "[[1, 127, 128, 16384, 1099511627776]]");
  // tag, dtype, ndim, then 1+1+2+3+6 varint bytes
  CHECK(b.bytes.size() == 3 + 13);
}

TEST_CASE("shapes: truncation keeps whole items and marks the cut", "[shapes]") {
  // Each [2, 3] float tensor takes 5 bytes; 12 bytes hold two plus the mark.
  std::vector<In> in(5, tensor(kFloat, {2, 3}));
  auto b = encode(in, 12);
  CHECK(b.truncated);
  CHECK(b.bytes.size() == 11);
  CHECK(shapes(b) == "[[2, 3], [2, 3], ...]");
  CHECK(dtypes(b) == R"(["float", "float", "..."])");

  // Exactly enough room: no mark.
  auto exact = encode({tensor(kFloat, {2, 3}), scalar()}, 7);
  CHECK_FALSE(exact.truncated);
  CHECK(shapes(exact) == "[[2, 3], []]");

  // One byte: only the mark fits.
  auto tiny = encode({scalar()}, 1);
  CHECK(tiny.truncated);
  CHECK(shapes(tiny) == "[...]");

  // A single tensor larger than the buffer (slow size path).
  auto big = encode({scalar(), tensor(kFloat, std::vector<int64_t>(64, 1))}, 40);
  CHECK(shapes(big) == "[[], ...]");
}

TEST_CASE("shapes: the encoder never writes past its capacity", "[shapes]") {
  for (size_t cap = 1; cap < 40; ++cap) {
    std::vector<uint8_t> buf(cap + 8, 0xEE);
    Encoder enc(buf.data(), cap);
    for (int i = 0; i < 10; ++i) {
      if (!enc.tensor(kFloat, std::array<int64_t, 3>{300, 2, 70000})) break;
      if (!enc.tensor_list(1000)) break;
      if (!enc.scalar()) break;
    }
    CHECK(enc.size() <= cap);
    for (size_t i = cap; i < buf.size(); ++i) CHECK(buf[i] == 0xEE);
    std::span<const uint8_t> bytes(buf.data(), enc.size());
    CHECK(shapes_text(bytes).ok());
  }
}

TEST_CASE("shapes: malformed bytes give an error naming the offset", "[shapes]") {
  const std::vector<uint8_t> unknown_tag{uint8_t(Tag::Scalar), 0x7f};
  auto unknown = shapes_text(unknown_tag);
  CHECK_FALSE(unknown.ok());
  CHECK(unknown.error().find("byte 1") != std::string::npos);

  const std::vector<uint8_t> cut_dims{uint8_t(Tag::Tensor), kFloat, 3, 2};
  auto cut = shapes_text(cut_dims);
  CHECK_FALSE(cut.ok());
  CHECK(cut.error().find("byte 0") != std::string::npos);

  const std::vector<uint8_t> runaway_varint{uint8_t(Tag::TensorList), 0x80, 0x80};
  CHECK_FALSE(dtypes_text(runaway_varint).ok());

  const std::vector<uint8_t> after_mark{uint8_t(Tag::Truncated), uint8_t(Tag::Scalar)};
  CHECK_FALSE(shapes_text(after_mark).ok());

  const std::vector<uint8_t> huge_ndim{uint8_t(Tag::Tensor), kFloat, 0xff, 0xff, 0xff, 0xff, 0x0f};
  CHECK_FALSE(shapes_text(huge_ndim).ok());
}

TEST_CASE("concrete inputs: int lists and ints keep their values; torch's texts do not show them", "[shapes]") {
  std::vector<uint8_t> buf(64, 0xEE);
  Encoder enc(buf.data(), buf.size());
  const std::vector<int64_t> size = {512, 512};
  const auto get = [](const std::vector<int64_t>& v, size_t i) { return v[i]; };
  // torch.ones(512, 512): size, dtype, layout, device, pin_memory.
  REQUIRE(enc.int_list(size, size.size(), get));
  for (int i = 0; i < 4; ++i) REQUIRE(enc.other());
  std::span<const uint8_t> ones(buf.data(), enc.size());
  CHECK(shapes_text(ones).value() == "[[], [], [], [], []]");
  CHECK(dtypes_text(ones).value() == R"(["", "", "", "", ""])");
  CHECK(concrete_text(ones).value() == "[512, 512]");

  // aten::mul(Tensor[4, 3], 2) and a negative int, an empty list, a tensor list.
  std::vector<uint8_t> buf2(64, 0xEE);
  Encoder e2(buf2.data(), buf2.size());
  const std::vector<int64_t> dims = {4, 3}, none = {};
  REQUIRE(e2.tensor(kFloat, dims));
  REQUIRE(e2.int_value(2));
  REQUIRE(e2.other());
  REQUIRE(e2.int_value(-7));
  REQUIRE(e2.int_list(none, 0, get));
  REQUIRE(e2.tensor_list(2));
  std::span<const uint8_t> mul(buf2.data(), e2.size());
  CHECK(shapes_text(mul).value() == "[[4, 3], [], [], [], [], []]");
  CHECK(dtypes_text(mul).value() == R"(["float", "Scalar", "", "Scalar", "", "TensorList"])");
  CHECK(concrete_text(mul).value() == "[4, 3], 2, -7, []");

  // Nothing with a value: "".
  std::vector<uint8_t> buf3(8, 0xEE);
  Encoder e3(buf3.data(), buf3.size());
  REQUIRE(e3.other());
  REQUIRE(e3.scalar());
  CHECK(concrete_text({buf3.data(), e3.size()}).value().empty());

  // A list that does not fit is truncated whole.
  std::vector<uint8_t> small(6, 0xEE);
  Encoder e4(small.data(), small.size());
  const std::vector<int64_t> big = {1 << 20, 1 << 20, 1 << 20};
  CHECK_FALSE(e4.int_list(big, big.size(), get));
  CHECK(shapes_text({small.data(), e4.size()}).value() == "[...]");
  CHECK(concrete_text({small.data(), e4.size()}).value() == "...");
}
