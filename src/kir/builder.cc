// Kernel-IR node builders (builder.h): result types follow the operands.
#include "kir/builder.h"

namespace tierjit::kir {

namespace {
Type type_of(const Expr& e) { return e ? e->type : Type{}; }
}  // namespace

Expr imm(int64_t v, Type t) { return std::make_shared<IntImm>(t, v); }
Expr fimm(double v, Type t) { return std::make_shared<FloatImm>(t, v); }
Expr var(std::string name, Type t) { return std::make_shared<Var>(t, std::move(name)); }
Expr binary(BinaryOp op, Expr a, Expr b) {
  Type t = type_of(a);
  return std::make_shared<Binary>(t, op, std::move(a), std::move(b));
}
Expr add(Expr a, Expr b) { return binary(BinaryOp::kAdd, std::move(a), std::move(b)); }
Expr sub(Expr a, Expr b) { return binary(BinaryOp::kSub, std::move(a), std::move(b)); }
Expr mul(Expr a, Expr b) { return binary(BinaryOp::kMul, std::move(a), std::move(b)); }
Expr div(Expr a, Expr b) { return binary(BinaryOp::kDiv, std::move(a), std::move(b)); }
Expr mod(Expr a, Expr b) { return binary(BinaryOp::kMod, std::move(a), std::move(b)); }
Expr min(Expr a, Expr b) { return binary(BinaryOp::kMin, std::move(a), std::move(b)); }
Expr max(Expr a, Expr b) { return binary(BinaryOp::kMax, std::move(a), std::move(b)); }
Expr compare(CmpOp op, Expr a, Expr b) {
  Type t = boolean(type_of(a).lanes);
  return std::make_shared<Compare>(t, op, std::move(a), std::move(b));
}
Expr lt(Expr a, Expr b) { return compare(CmpOp::kLt, std::move(a), std::move(b)); }
Expr select(Expr cond, Expr t, Expr f) {
  Type ty = type_of(t);
  return std::make_shared<Select>(ty, std::move(cond), std::move(t), std::move(f));
}
Expr cast(Type t, Expr v) { return std::make_shared<Cast>(t, std::move(v)); }
Expr load(Type t, std::string buffer, Expr index) {
  return std::make_shared<Load>(t, std::move(buffer), std::move(index));
}
Expr broadcast(Expr scalar, int lanes) {
  Type t = type_of(scalar).with_lanes(lanes);
  return std::make_shared<Broadcast>(t, std::move(scalar));
}
Expr ramp(Expr base, Expr stride, int lanes) {
  Type t = type_of(base).with_lanes(lanes);
  return std::make_shared<Ramp>(t, std::move(base), std::move(stride));
}
Expr call(Intrinsic op, std::vector<Expr> args) {
  Type t = args.empty() ? Type{} : type_of(args[0]);
  return std::make_shared<Call>(t, op, std::move(args));
}
Expr shuffle(Expr vector, std::vector<int> indices) {
  Type t = type_of(vector).with_lanes(static_cast<int>(indices.size()));
  return std::make_shared<Shuffle>(t, std::move(vector), std::move(indices));
}
Expr slice(Expr vector, int begin, int lanes) {
  if (begin == 0 && type_of(vector).lanes == lanes) return vector;
  std::vector<int> idx;
  for (int k = 0; k < lanes; ++k) idx.push_back(begin + k);
  return shuffle(std::move(vector), std::move(idx));
}

Stmt for_loop(std::string var, Expr min, Expr extent, Stmt body, ForKind kind) {
  return std::make_shared<For>(std::move(var), std::move(min), std::move(extent), kind,
                               std::move(body));
}
Stmt store(std::string buffer, Expr index, Expr value) {
  return std::make_shared<Store>(std::move(buffer), std::move(index), std::move(value));
}
Stmt let(std::string var, Expr value, Stmt body) {
  return std::make_shared<LetStmt>(std::move(var), std::move(value), std::move(body));
}
Stmt if_then_else(Expr cond, Stmt then_case, Stmt else_case) {
  return std::make_shared<IfThenElse>(std::move(cond), std::move(then_case), std::move(else_case));
}
Stmt block(std::vector<Stmt> stmts) { return std::make_shared<Block>(std::move(stmts)); }
Stmt allocate(std::string buffer, DType dtype, int64_t size, Stmt body) {
  return std::make_shared<Allocate>(std::move(buffer), dtype, size, std::move(body));
}

Stmt call_kernel(kernels::Microkernel k, std::vector<std::pair<std::string, Expr>> pointers,
                 std::vector<Expr> ints) {
  std::vector<std::string> buffers;
  std::vector<Expr> args;
  for (auto& [buffer, offset] : pointers) {
    buffers.push_back(std::move(buffer));
    args.push_back(std::move(offset));
  }
  for (Expr& e : ints) args.push_back(std::move(e));
  return std::make_shared<CallKernel>(k, std::move(buffers), std::move(args));
}

}  // namespace tierjit::kir
