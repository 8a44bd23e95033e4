// NumPy .npy files <-> tierjit::Tensor for the CLI's feeds and outputs.
// Format: https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html (versions
// 1.0, 2.0, 3.0). Little-endian only, C order only; every malformed file is a one-line error.
#include <algorithm>
#include <cctype>
#include <cstring>
#include <fstream>
#include <limits>

#include "support/file_io.h"
#include "support/float16.h"
#include "cli_util.h"

namespace tierjit::cli {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
// The largest header dict read_npy looks at before the data (numpy writes ~128 bytes).
constexpr uint64_t kMaxHeaderBytes = uint64_t{1} << 24;

struct DescrEntry {
  const char* descr;
  DType dtype;
};
// Single-byte types are written '|' by numpy; '<' and '=' are accepted for them too.
constexpr DescrEntry kDescrs[] = {
    {"f2", DType::kFloat16}, {"f4", DType::kFloat32}, {"f8", DType::kFloat64},
    {"i1", DType::kInt8},    {"i2", DType::kInt16},   {"i4", DType::kInt32},
    {"i8", DType::kInt64},   {"u1", DType::kUInt8},   {"u2", DType::kUInt16},
    {"u4", DType::kUInt32},  {"u8", DType::kUInt64},  {"b1", DType::kBool},
};

std::optional<DType> dtype_from_descr(const std::string& d, std::string& why) {
  if (d.size() < 2) {
    why = "unknown dtype '" + d + "'";
    return std::nullopt;
  }
  char order = d[0];
  std::string code = d.substr(1);
  if (order == '>') {
    why = "big-endian dtype '" + d + "' is not supported (save with a little-endian dtype)";
    return std::nullopt;
  }
  if (order != '<' && order != '|' && order != '=') {
    why = "unknown dtype '" + d + "'";
    return std::nullopt;
  }
  for (const auto& e : kDescrs)
    if (code == e.descr) return e.dtype;
  why = "unsupported dtype '" + d + "' (supported: <f2 <f4 <f8 <i1..<i8 <u1..<u8 |b1)";
  return std::nullopt;
}

const char* descr_for(DType t) {
  switch (t) {
    case DType::kFloat16: return "<f2";
    case DType::kFloat32: return "<f4";
    case DType::kFloat64: return "<f8";
    case DType::kInt8: return "|i1";
    case DType::kInt16: return "<i2";
    case DType::kInt32: return "<i4";
    case DType::kInt64: return "<i8";
    case DType::kUInt8: return "|u1";
    case DType::kUInt16: return "<u2";
    case DType::kUInt32: return "<u4";
    case DType::kUInt64: return "<u8";
    case DType::kBool: return "|b1";
    default: return nullptr;
  }
}

// A tiny parser for the header's Python dict literal:
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
class HeaderParser {
 public:
  explicit HeaderParser(const std::string& s) : s_(s) {}

  bool parse(std::string& descr, bool& fortran, Shape& shape, std::string& why) {
    bool have_descr = false, have_fortran = false, have_shape = false;
    skip_ws();
    if (!eat('{')) return fail(why, "header is not a dict");
    while (true) {
      skip_ws();
      if (eat('}')) break;
      std::string key;
      if (!parse_string(key)) return fail(why, "bad key in header");
      skip_ws();
      if (!eat(':')) return fail(why, "missing ':' in header");
      skip_ws();
      if (key == "descr") {
        if (!parse_string(descr)) return fail(why, "'descr' is not a simple type string");
        have_descr = true;
      } else if (key == "fortran_order") {
        if (s_.compare(pos_, 4, "True") == 0) {
          fortran = true;
          pos_ += 4;
        } else if (s_.compare(pos_, 5, "False") == 0) {
          fortran = false;
          pos_ += 5;
        } else {
          return fail(why, "bad 'fortran_order' value");
        }
        have_fortran = true;
      } else if (key == "shape") {
        if (!parse_shape(shape)) return fail(why, "bad 'shape' value");
        have_shape = true;
      } else {
        return fail(why, "unexpected key '" + key + "' in header");
      }
      skip_ws();
      if (eat(',')) continue;
      skip_ws();
      if (eat('}')) break;
      return fail(why, "malformed header dict");
    }
    if (!have_descr || !have_fortran || !have_shape)
      return fail(why, "header lacks 'descr', 'fortran_order' or 'shape'");
    return true;
  }

 private:
  static bool fail(std::string& why, const std::string& msg) {
    why = msg;
    return false;
  }
  void skip_ws() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool eat(char c) {
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool parse_string(std::string& out) {
    if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"')) return false;
    char q = s_[pos_++];
    size_t end = s_.find(q, pos_);
    if (end == std::string::npos) return false;
    out = s_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return true;
  }
  bool parse_shape(Shape& shape) {
    if (!eat('(')) return false;
    shape.clear();
    while (true) {
      skip_ws();
      if (eat(')')) return true;
      size_t start = pos_;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
      if (pos_ == start || pos_ - start > 15) return false;
      shape.push_back(std::stoll(s_.substr(start, pos_ - start)));
      skip_ws();
      if (eat(',')) continue;
      skip_ws();
      if (eat(')')) return true;
      return false;
    }
  }

  const std::string& s_;
  size_t pos_ = 0;
};

}  // namespace

namespace {

// What a .npy header declares: dtype, shape, where the data starts and how many bytes it needs.
struct NpyHeader {
  DType dtype = DType::kUndefined;
  std::string descr;
  Shape shape;
  size_t data_offset = 0;
  uint64_t numel = 0;
};

// Parses the magic, version and header dict of `bytes` (which may end right after the header).
Status parse_npy_header(const std::string& bytes, const std::string& source, NpyHeader& h) {
  auto bad = [&](const std::string& why) -> Status {
    return invalid_argument("{}: not a valid .npy file: {}", source, why);
  };
  if (bytes.size() < kMagicLen + 2 || std::memcmp(bytes.data(), kMagic, kMagicLen) != 0)
    return bad(bytes.size() < kMagicLen + 2 ? "file too short" : "bad magic (expected \\x93NUMPY)");
  uint8_t major = static_cast<uint8_t>(bytes[6]);
  uint8_t minor = static_cast<uint8_t>(bytes[7]);
  size_t len_bytes;
  if (major == 1 && minor == 0) {
    len_bytes = 2;
  } else if ((major == 2 || major == 3) && minor == 0) {
    len_bytes = 4;
  } else {
    return bad(fmt::format("unsupported format version {}.{}", major, minor));
  }
  size_t pre = kMagicLen + 2 + len_bytes;
  if (bytes.size() < pre) return bad("truncated header");
  uint64_t header_len = 0;
  for (size_t i = 0; i < len_bytes; ++i)
    header_len |= static_cast<uint64_t>(static_cast<uint8_t>(bytes[8 + i])) << (8 * i);
  if (header_len > bytes.size() - pre) return bad("truncated header");
  std::string header = bytes.substr(pre, header_len);
  std::string why;
  bool fortran = false;
  if (!HeaderParser(header).parse(h.descr, fortran, h.shape, why)) return bad(why);
  auto dtype = dtype_from_descr(h.descr, why);
  if (!dtype) return bad(why);
  if (fortran)
    return invalid_argument("{}: fortran_order (column-major) .npy files are not supported; "
                            "save with numpy.ascontiguousarray first", source);
  h.dtype = *dtype;
  h.data_offset = pre + header_len;
  // Element count, guarding against overflow before any comparison with sizes.
  const uint64_t esize = dtype_size(h.dtype);
  h.numel = 1;
  for (int64_t d : h.shape) {
    if (d != 0 && h.numel > std::numeric_limits<uint64_t>::max() / esize / static_cast<uint64_t>(d))
      return bad("shape too large");
    h.numel *= static_cast<uint64_t>(d);
  }
  return Status();
}

// The declared data size against `limit` (bytes): kResourceExhausted naming the file.
Status check_declared_size(const NpyHeader& h, int64_t limit, const std::string& source) {
  const uint64_t need = h.numel * dtype_size(h.dtype);
  if (limit > 0 && need > static_cast<uint64_t>(limit))
    return resource_exhausted("{}: declares {} {} ({} bytes), over the memory limit of {} bytes",
                              source, h.descr, shape_to_string(h.shape), need, limit);
  return Status();
}

}  // namespace

Expected<Tensor> parse_npy(const std::string& bytes, const std::string& source, int64_t memory_limit_bytes) {
  auto bad = [&](const std::string& why) -> Status {
    return invalid_argument("{}: not a valid .npy file: {}", source, why);
  };
  NpyHeader h;
  TJ_RETURN_IF_ERROR(parse_npy_header(bytes, source, h));
  TJ_RETURN_IF_ERROR(check_declared_size(h, memory_limit_bytes, source));
  const size_t data_bytes = bytes.size() - h.data_offset;
  const size_t esize = dtype_size(h.dtype);
  if (h.numel > data_bytes / esize)
    return bad(fmt::format("truncated data: shape {} of {} needs {} bytes, file has {}",
                           shape_to_string(h.shape), h.descr, h.numel * esize, data_bytes));
  if (h.numel * esize != data_bytes)
    return bad(fmt::format("{} trailing bytes after the data", data_bytes - h.numel * esize));
  Tensor t = Tensor::from_bytes(h.dtype, h.shape, bytes.data() + h.data_offset);
  if (h.dtype == DType::kBool) {
    uint8_t* p = t.data<uint8_t>();
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = p[i] != 0;
  }
  return t;
}

Expected<Tensor> read_npy(const std::string& path, int64_t memory_limit_bytes) {
  // A regular file only (a FIFO would block, a device never ends), then the header: a tensor
  // over the limit, or a file whose size is not the header's plus the declared data, is refused
  // before any of its data is read.
  TJ_ASSIGN_OR_RETURN(const int64_t file_size, regular_file_size(path));
  {
    std::ifstream in(path, std::ios::binary);
    if (in) {
      std::string head(kMagicLen + 2 + 4, '\0');
      in.read(head.data(), static_cast<std::streamsize>(head.size()));
      head.resize(static_cast<size_t>(in.gcount()));
      NpyHeader h;
      size_t want = 0;
      if (head.size() >= kMagicLen + 4 && std::memcmp(head.data(), kMagic, kMagicLen) == 0) {
        const bool v1 = head[6] == 1;
        const size_t pre = kMagicLen + 2 + (v1 ? 2 : 4);
        uint64_t header_len = 0;
        for (size_t i = 0; i < (v1 ? 2u : 4u) && 8 + i < head.size(); ++i)
          header_len |= static_cast<uint64_t>(static_cast<uint8_t>(head[8 + i])) << (8 * i);
        want = header_len <= kMaxHeaderBytes ? pre + header_len : 0;  // a sane header only
      }
      if (want > head.size()) {
        head.resize(want);
        in.seekg(0);
        in.read(head.data(), static_cast<std::streamsize>(want));
        head.resize(static_cast<size_t>(in.gcount()));
      }
      if (want > 0 && head.size() == want && parse_npy_header(head, path, h).ok()) {
        TJ_RETURN_IF_ERROR(check_declared_size(h, memory_limit_bytes, path));
        const uint64_t data = h.numel * dtype_size(h.dtype);
        const uint64_t have = static_cast<uint64_t>(file_size) - std::min<uint64_t>(h.data_offset, file_size);
        if (have != data)
          return invalid_argument(
              "{}: not a valid .npy file: the header declares {} {} ({} bytes of data), the file "
              "has {} bytes after its {}-byte header", path, h.descr, shape_to_string(h.shape),
              data, have, h.data_offset);
      }
    }
  }
  // Whatever the header said (a bad one is reported by parse_npy below), no more than the
  // largest header and the memory limit's worth of data is read.
  const int64_t limit = memory_limit_bytes > 0 ? memory_limit_bytes : kDefaultMemoryLimit;
  std::string bytes;
  TJ_RETURN_IF_ERROR(read_file_bytes(path, bytes, limit + static_cast<int64_t>(kMaxHeaderBytes) + 16,
                                     "memory limit (plus the largest .npy header)"));
  return parse_npy(bytes, path, memory_limit_bytes);
}

Expected<std::string> serialize_npy(const Tensor& t) {
  Tensor src = t;
  if (t.dtype() == DType::kBFloat16) {  // .npy has no bfloat16: widen to float32
    src = Tensor::empty(DType::kFloat32, t.shape());
    const uint16_t* in = t.data<uint16_t>();
    float* out = src.data<float>();
    for (int64_t i = 0; i < t.numel(); ++i) out[i] = support::bfloat16_to_float(in[i]);
  }
  const char* descr = descr_for(src.dtype());
  if (!descr)
    return unsupported("dtype {} cannot be written as .npy (use --output-format pb)",
                       dtype_name(src.dtype()));
  std::string shape = "(";
  for (size_t i = 0; i < src.shape().size(); ++i) {
    shape += std::to_string(src.shape()[i]);
    shape += (src.shape().size() == 1 || i + 1 < src.shape().size()) ? "," : "";
    if (i + 1 < src.shape().size()) shape += " ";
  }
  shape += ")";
  std::string dict = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", descr, shape);
  // Pad with spaces so that magic + len + header is a multiple of 64, ending in '\n'.
  bool v2 = dict.size() + 1 + 10 + 64 > 65535;
  size_t pre = kMagicLen + 2 + (v2 ? 4 : 2);
  size_t total = pre + dict.size() + 1;
  size_t pad = (64 - total % 64) % 64;
  dict.append(pad, ' ');
  dict.push_back('\n');
  std::string out(kMagic, kMagicLen);
  out.push_back(static_cast<char>(v2 ? 2 : 1));
  out.push_back(0);
  uint64_t hl = dict.size();
  for (size_t i = 0; i < (v2 ? 4u : 2u); ++i) out.push_back(static_cast<char>((hl >> (8 * i)) & 0xff));
  out += dict;
  out.append(static_cast<const char*>(src.raw_data()), src.nbytes());
  return out;
}

Status write_npy(const std::string& path, const Tensor& t) {
  auto bytes = serialize_npy(t);
  if (!bytes.ok()) return bytes.status().with_prefix(path);
  return write_file_no_follow(path, *bytes);
}

}  // namespace tierjit::cli
