// Printable names: model-supplied strings (value, node, graph and input/output names) escaped
// before they reach a terminal, a log or a one-line error, so a name cannot break a line, move
// the cursor or emit bytes that are not UTF-8. Used by every printer of names (ir printer,
// Node::describe, region listings, the CLI's outputs).
#pragma once

#include <string>
#include <string_view>

namespace tierjit::support {

/// `name` with JSON-style escapes: backslash -> "\\", newline "\n", carriage return "\r", tab
/// "\t", other control characters (< 0x20, 0x7f) "\u00XX"; bytes that are not part of valid UTF-8
/// "\xNN". Valid UTF-8 (non-ASCII letters included) and every other printable character are
/// kept. The identity on ordinary names ("x", "layer.0/attn:0").
std::string escape_name(std::string_view name);

/// Escapes only what escape_name escapes besides the backslash (control characters, invalid
/// UTF-8), for whole messages whose names are already escaped: applying it twice changes nothing.
std::string escape_controls(std::string_view text);

}  // namespace tierjit::support
