// support::escape_name / escape_controls: names printed by tierjit cannot break a line, drive a
// terminal or emit bytes that are not UTF-8; ordinary names are unchanged.
#include <gtest/gtest.h>

#include <string>

#include "support/escape.h"

namespace tierjit::support {
namespace {

TEST(Escape, OrdinaryNamesAreUnchanged) {
  for (const std::string s : {"x", "layer.0/attn:0", "input_ids", "", "héllo wörld", "名前", "a b'c\"d"})
    EXPECT_EQ(escape_name(s), s);
}

TEST(Escape, ControlCharactersAndBadBytesAreEscaped) {
  EXPECT_EQ(escape_name("y\nz"), "y\\nz");
  EXPECT_EQ(escape_name("a\tb\rc"), "a\\tb\\rc");
  EXPECT_EQ(escape_name("\x1b[2J"), "\\u001b[2J");
  EXPECT_EQ(escape_name(std::string("a\0b", 3)), "a\\u0000b");
  EXPECT_EQ(escape_name("\x7f"), "\\u007f");
  EXPECT_EQ(escape_name("back\\slash"), "back\\\\slash");
  EXPECT_EQ(escape_name("\xff\xfe"), "\\xff\\xfe");
  EXPECT_EQ(escape_name("\xc3"), "\\xc3");                 // truncated sequence
  EXPECT_EQ(escape_name("\xc0\xaf"), "\\xc0\\xaf");        // overlong '/'
  EXPECT_EQ(escape_name("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a UTF-16 surrogate
  const std::string escaped = escape_name("out\n\x1b]0;title\x07\xff");
  for (char c : escaped) {
    EXPECT_GE(static_cast<unsigned char>(c), 0x20) << escaped;
    EXPECT_LT(static_cast<unsigned char>(c), 0x7f) << escaped;
  }
}

TEST(Escape, ControlsOnlyKeepsBackslashesAndIsIdempotent) {
  EXPECT_EQ(escape_controls("a\\nb\n"), "a\\nb\\n");
  const std::string once = escape_controls("x\x1b\xff\\");
  EXPECT_EQ(once, "x\\u001b\\xff\\");
  EXPECT_EQ(escape_controls(once), once);
}

}  // namespace
}  // namespace tierjit::support
