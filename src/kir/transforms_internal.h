// Helpers shared by the loop transforms (transforms*.cc): substitution of names, free-name
// queries, and "rewrite the loop that binds v". Not part of the public kir interface.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>

#include "kir/kir.h"
#include "support/status.h"

namespace tierjit::kir::transforms_detail {

/// `e` / `s` with every Var named in `m` replaced by its expression (no capture check: the
/// verifier forbids shadowing, so a bound name never meets a substituted one).
Expr substitute(const Expr& e, const std::map<std::string, Expr>& m);
Stmt substitute(const Stmt& s, const std::map<std::string, Expr>& m);

/// True when `e` (or anything in `s`) reads a Var whose name is in `names`.
bool uses_any(const Expr& e, const std::set<std::string>& names);
bool uses_any(const Stmt& s, const std::set<std::string>& names);

/// Names of the buffers that `s` stores to.
std::set<std::string> stored_buffers(const Stmt& s);

/// Replaces the first For (pre-order) binding `loop_var` by fn(that loop). kUnsupported when no
/// loop binds it; fn's error is returned as is.
Expected<Stmt> rewrite_loop(const Stmt& s, const std::string& loop_var,
                            const std::function<Expected<Stmt>(const For&)>& fn);

/// `stmts` without loops of constant extent <= 0; one statement is returned as is, none as an
/// empty Block.
Stmt sequence(const std::vector<Stmt>& stmts);

}  // namespace tierjit::kir::transforms_detail
