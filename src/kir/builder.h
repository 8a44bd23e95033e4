// Helpers that build kernel-IR nodes with their result types filled in (kir.h). They do not
// check operand types; kir::verify() does, before codegen.
#pragma once

#include "kir/kir.h"

namespace tierjit::kir {

// Expressions.
Expr imm(int64_t v, Type t = i64());         ///< integer (or bool) constant
Expr fimm(double v, Type t = f32());         ///< float constant
Expr var(std::string name, Type t = i64());  ///< reference to a bound name
Expr binary(BinaryOp op, Expr a, Expr b);    ///< type of a
Expr add(Expr a, Expr b);
Expr sub(Expr a, Expr b);
Expr mul(Expr a, Expr b);
Expr div(Expr a, Expr b);
Expr mod(Expr a, Expr b);
Expr min(Expr a, Expr b);
Expr max(Expr a, Expr b);
Expr compare(CmpOp op, Expr a, Expr b);  ///< bool with the lanes of a
Expr lt(Expr a, Expr b);
Expr select(Expr cond, Expr t, Expr f);  ///< type of t
Expr cast(Type t, Expr v);
Expr load(Type t, std::string buffer, Expr index);
Expr broadcast(Expr scalar, int lanes);
Expr ramp(Expr base, Expr stride, int lanes);
Expr call(Intrinsic op, std::vector<Expr> args);  ///< type of args[0]
Expr shuffle(Expr vector, std::vector<int> indices);  ///< element type of vector, indices.size() lanes
/// Lanes [begin, begin + lanes) of `vector` (the vector itself when that is all of it).
Expr slice(Expr vector, int begin, int lanes);

// Statements.
Stmt for_loop(std::string var, Expr min, Expr extent, Stmt body, ForKind kind = ForKind::kSerial);
Stmt store(std::string buffer, Expr index, Expr value);
Stmt let(std::string var, Expr value, Stmt body);
Stmt if_then_else(Expr cond, Stmt then_case, Stmt else_case = nullptr);
Stmt block(std::vector<Stmt> stmts);
Stmt allocate(std::string buffer, DType dtype, int64_t size, Stmt body);
/// A microkernel call: pointer arguments `pointers[i].first + pointers[i].second` (buffer name,
/// element offset), then the int64 arguments `ints`.
Stmt call_kernel(kernels::Microkernel k, std::vector<std::pair<std::string, Expr>> pointers,
                 std::vector<Expr> ints);

}  // namespace tierjit::kir
