// Status messages stay one printable line whatever bytes a corrupt input puts into them.
#include <gtest/gtest.h>

#include "support/status.h"

namespace tierjit {
namespace {

TEST(Status, MessagesArePrintableOneLine) {
  Status s = invalid_argument("t.txt:1: '{}'", std::string("a\0b\x07\nc\td", 8));
  EXPECT_EQ(s.message(), "t.txt:1: 'a\\x00b\\x07 c d'");
  try {
    s.throw_if_error();
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), s.message());  // no NUL left to cut what() short
    EXPECT_EQ(e.code(), StatusCode::kInvalidArgument);
  }
  EXPECT_EQ(invalid_argument("plain {} ü", 1).message(), "plain 1 ü");
  EXPECT_EQ(invalid_argument("{}", std::string("\xff\xc3(")).message(), "\\xff\\xc3(");
  EXPECT_EQ(s.with_prefix("f.onnx").message(), "f.onnx: t.txt:1: 'a\\x00b\\x07 c d'");
}

}  // namespace
}  // namespace tierjit
