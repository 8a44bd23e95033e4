// Kernel IR: loop nests over flat buffers (index expressions in elements), loads and stores,
// scalar and vector arithmetic, let and if. Sits between graph regions and codegen/ (which turns
// a kir::Function into machine code). Nodes are small immutable structs owned by shared_ptr and
// listed once in nodes.def; each lists its fields once (TJ_KIR_FIELDS), which gives structural
// hash, equality, the Visitor and the Mutator generically.
//
// Semantics: integer arithmetic wraps (two's complement), integer Div/Mod truncate toward zero
// (as C), Min/Max of floats return the other operand when one is NaN (as fmin/fmax); a Load or
// Store index is in elements of the buffer's dtype and must be in bounds (codegen does not check).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/microkernels.h"
#include "support/status.h"
#include "tierjit/dtype.h"

namespace tierjit::kir {

/// A scalar dtype and a lane count (1 = scalar; vectors use 4, 8, 16, ...). Bool is DType::kBool.
struct Type {
  DType dtype = DType::kUndefined;
  int lanes = 1;

  bool is_float() const { return dtype_is_float(dtype); }
  bool is_int() const { return dtype_is_integer(dtype); }
  bool is_bool() const { return dtype == DType::kBool; }
  bool is_scalar() const { return lanes == 1; }
  Type with_lanes(int n) const { return Type{dtype, n}; }
  Type element() const { return Type{dtype, 1}; }
  friend bool operator==(const Type&, const Type&) = default;
};
inline Type f32(int lanes = 1) { return Type{DType::kFloat32, lanes}; }
inline Type f64(int lanes = 1) { return Type{DType::kFloat64, lanes}; }
inline Type i32(int lanes = 1) { return Type{DType::kInt32, lanes}; }
inline Type i64(int lanes = 1) { return Type{DType::kInt64, lanes}; }
inline Type boolean(int lanes = 1) { return Type{DType::kBool, lanes}; }

enum class NodeKind : uint8_t {
#define TJ_KIR_EXPR(n) k##n,
#define TJ_KIR_STMT(n) k##n,
#include "kir/nodes.def"
};
std::string_view node_kind_name(NodeKind k);

enum class BinaryOp : uint8_t { kAdd, kSub, kMul, kDiv, kMod, kMin, kMax, kAnd, kOr };
enum class CmpOp : uint8_t { kEq, kNe, kLt, kLe, kGt, kGe };
/// Math intrinsics of Call. Float operands; exp/log/tanh/erf/sigmoid of float32 are expanded by
/// codegen into vectorizable polynomials (error bounds in docs/codegen.md).
enum class Intrinsic : uint8_t {
  kExp,
  kLog,
  kTanh,
  kErf,
  kSigmoid,
  kSqrt,
  kAbs,
  kFloor,
  kCeil,
  kRound,
  kFma,
  kPow
};
/// serial: plain loop; vectorized: loop-vectorizer hint; unrolled: full-unroll hint;
/// parallel: runs serially for now (see docs/codegen.md).
/// How a For loop runs. kParallel: split across the OpenMP team (codegen outlines the body to
/// GOMP_parallel), or run on the calling thread while other processes or this one's background
/// compiles hold the spare cores (support::spare_cores_for, asked at each run of the loop).
enum class ForKind : uint8_t { kSerial, kParallel, kVectorized, kUnrolled };

std::string_view binary_op_name(BinaryOp op);
std::string_view cmp_op_name(CmpOp op);
std::string_view intrinsic_name(Intrinsic op);
int intrinsic_arity(Intrinsic op);
std::string_view for_kind_name(ForKind k);

struct ExprNode;
struct StmtNode;
using Expr = std::shared_ptr<const ExprNode>;
using Stmt = std::shared_ptr<const StmtNode>;

struct ExprNode {
  NodeKind kind;
  Type type;
  ExprNode(NodeKind k, Type t) : kind(k), type(t) {}
  virtual ~ExprNode() = default;
  template <class T>
  const T* as() const {
    return kind == T::kKind ? static_cast<const T*>(this) : nullptr;
  }
};
struct StmtNode {
  NodeKind kind;
  explicit StmtNode(NodeKind k) : kind(k) {}
  virtual ~StmtNode() = default;
  template <class T>
  const T* as() const {
    return kind == T::kKind ? static_cast<const T*>(this) : nullptr;
  }
};

// Each node lists its fields once: tie() gives them to hash, equality, visitor and mutator.
#define TJ_KIR_FIELDS(...)                           \
  auto tie() const { return std::tie(__VA_ARGS__); } \
  auto tie() { return std::tie(__VA_ARGS__); }
#define TJ_KIR_EXPR_NODE(Name) static constexpr NodeKind kKind = NodeKind::k##Name;
#define TJ_KIR_STMT_NODE(Name) static constexpr NodeKind kKind = NodeKind::k##Name;

struct IntImm : ExprNode {
  TJ_KIR_EXPR_NODE(IntImm)
  int64_t value;
  IntImm(Type t, int64_t v) : ExprNode(kKind, t), value(v) {}
  TJ_KIR_FIELDS(value)
};
struct FloatImm : ExprNode {
  TJ_KIR_EXPR_NODE(FloatImm)
  double value;
  FloatImm(Type t, double v) : ExprNode(kKind, t), value(v) {}
  TJ_KIR_FIELDS(value)
};
struct Var : ExprNode {
  TJ_KIR_EXPR_NODE(Var)
  std::string name;
  Var(Type t, std::string n) : ExprNode(kKind, t), name(std::move(n)) {}
  TJ_KIR_FIELDS(name)
};
struct Binary : ExprNode {
  TJ_KIR_EXPR_NODE(Binary)
  BinaryOp op;
  Expr a, b;
  Binary(Type t, BinaryOp o, Expr x, Expr y)
      : ExprNode(kKind, t), op(o), a(std::move(x)), b(std::move(y)) {}
  TJ_KIR_FIELDS(op, a, b)
};
struct Compare : ExprNode {
  TJ_KIR_EXPR_NODE(Compare)
  CmpOp op;
  Expr a, b;
  Compare(Type t, CmpOp o, Expr x, Expr y)
      : ExprNode(kKind, t), op(o), a(std::move(x)), b(std::move(y)) {}
  TJ_KIR_FIELDS(op, a, b)
};
struct Select : ExprNode {
  TJ_KIR_EXPR_NODE(Select)
  Expr cond, t, f;
  Select(Type ty, Expr c, Expr x, Expr y)
      : ExprNode(kKind, ty), cond(std::move(c)), t(std::move(x)), f(std::move(y)) {}
  TJ_KIR_FIELDS(cond, t, f)
};
struct Cast : ExprNode {
  TJ_KIR_EXPR_NODE(Cast)
  Expr value;
  Cast(Type t, Expr v) : ExprNode(kKind, t), value(std::move(v)) {}
  TJ_KIR_FIELDS(value)
};
struct Load : ExprNode {
  TJ_KIR_EXPR_NODE(Load)
  std::string buffer;
  Expr index;  ///< int64 (or int32), same lanes as the result
  Load(Type t, std::string buf, Expr i)
      : ExprNode(kKind, t), buffer(std::move(buf)), index(std::move(i)) {}
  TJ_KIR_FIELDS(buffer, index)
};
struct Broadcast : ExprNode {
  TJ_KIR_EXPR_NODE(Broadcast)
  Expr value;  ///< scalar
  Broadcast(Type t, Expr v) : ExprNode(kKind, t), value(std::move(v)) {}
  TJ_KIR_FIELDS(value)
};
struct Ramp : ExprNode {
  TJ_KIR_EXPR_NODE(Ramp)
  Expr base, stride;  ///< scalars
  Ramp(Type t, Expr b, Expr s) : ExprNode(kKind, t), base(std::move(b)), stride(std::move(s)) {}
  TJ_KIR_FIELDS(base, stride)
};
struct Call : ExprNode {
  TJ_KIR_EXPR_NODE(Call)
  Intrinsic op;
  std::vector<Expr> args;
  Call(Type t, Intrinsic o, std::vector<Expr> a) : ExprNode(kKind, t), op(o), args(std::move(a)) {}
  TJ_KIR_FIELDS(op, args)
};
/// Lanes of `vector` picked by constant indices: result lane k = vector lane indices[k]
/// (0 <= indices[k] < vector lanes; result lanes = indices.size(), 1 gives a scalar). Used to
/// take halves of a vector for tree reductions (LLVM shufflevector / extractelement).
struct Shuffle : ExprNode {
  TJ_KIR_EXPR_NODE(Shuffle)
  Expr vector;
  std::vector<int> indices;
  Shuffle(Type t, Expr v, std::vector<int> i)
      : ExprNode(kKind, t), vector(std::move(v)), indices(std::move(i)) {}
  TJ_KIR_FIELDS(vector, indices)
};

struct For : StmtNode {
  TJ_KIR_STMT_NODE(For)
  std::string var;  ///< int64 loop variable
  Expr min, extent;
  ForKind for_kind;
  Stmt body;
  For(std::string v, Expr mn, Expr ext, ForKind k, Stmt b)
      : StmtNode(kKind),
        var(std::move(v)),
        min(std::move(mn)),
        extent(std::move(ext)),
        for_kind(k),
        body(std::move(b)) {}
  TJ_KIR_FIELDS(var, min, extent, for_kind, body)
};
struct Store : StmtNode {
  TJ_KIR_STMT_NODE(Store)
  std::string buffer;
  Expr index, value;
  Store(std::string buf, Expr i, Expr v)
      : StmtNode(kKind), buffer(std::move(buf)), index(std::move(i)), value(std::move(v)) {}
  TJ_KIR_FIELDS(buffer, index, value)
};
struct LetStmt : StmtNode {
  TJ_KIR_STMT_NODE(LetStmt)
  std::string var;
  Expr value;
  Stmt body;
  LetStmt(std::string v, Expr val, Stmt b)
      : StmtNode(kKind), var(std::move(v)), value(std::move(val)), body(std::move(b)) {}
  TJ_KIR_FIELDS(var, value, body)
};
struct IfThenElse : StmtNode {
  TJ_KIR_STMT_NODE(IfThenElse)
  Expr cond;                  ///< scalar bool
  Stmt then_case, else_case;  ///< else_case may be null
  IfThenElse(Expr c, Stmt t, Stmt e)
      : StmtNode(kKind), cond(std::move(c)), then_case(std::move(t)), else_case(std::move(e)) {}
  TJ_KIR_FIELDS(cond, then_case, else_case)
};
struct Block : StmtNode {
  TJ_KIR_STMT_NODE(Block)
  std::vector<Stmt> stmts;
  explicit Block(std::vector<Stmt> s) : StmtNode(kKind), stmts(std::move(s)) {}
  TJ_KIR_FIELDS(stmts)
};
struct Allocate : StmtNode {
  TJ_KIR_STMT_NODE(Allocate)
  std::string buffer;
  DType dtype;
  int64_t size;  ///< elements, constant (the scratch lives on the stack; keep it small)
  Stmt body;
  Allocate(std::string buf, DType t, int64_t n, Stmt b)
      : StmtNode(kKind), buffer(std::move(buf)), dtype(t), size(n), body(std::move(b)) {}
  TJ_KIR_FIELDS(buffer, dtype, size, body)
};
/// A call of a kernel-layer microkernel (kernels/microkernels.def): its pointer arguments are
/// `buffers[i]` + `args[i]` elements (int64 offsets), then its int64 arguments `args[buffers.size()
/// ...]`. The microkernel may read and write those buffers as its documentation says; the
/// generated code around it treats the call as an opaque statement (never vectorized across).
struct CallKernel : StmtNode {
  TJ_KIR_STMT_NODE(CallKernel)
  kernels::Microkernel kernel;
  std::vector<std::string> buffers;
  std::vector<Expr> args;  ///< offsets (one per buffer), then the int64 arguments
  CallKernel(kernels::Microkernel k, std::vector<std::string> bufs, std::vector<Expr> a)
      : StmtNode(kKind), kernel(k), buffers(std::move(bufs)), args(std::move(a)) {}
  TJ_KIR_FIELDS(kernel, buffers, args)
};
#undef TJ_KIR_EXPR_NODE
#undef TJ_KIR_STMT_NODE

/// A kernel buffer parameter: buffers[i] of the C ABI is the i-th BufferParam.
struct BufferParam {
  std::string name;
  DType dtype;
  friend bool operator==(const BufferParam&, const BufferParam&) = default;
};

/// A kernel: `void name(void* const* buffers, const int64_t* dims)`. dims[k] is bound to the
/// int64 Var named dims[k] in body.
struct Function {
  std::string name;
  std::vector<BufferParam> buffers;
  std::vector<std::string> dims;
  Stmt body;
};

// ---- Visitor and Mutator (generated from nodes.def) ----

/// Read-only walk. Each visit() by default visits the node's children in field order.
class Visitor {
 public:
  virtual ~Visitor() = default;
  void visit(const Expr& e);
  void visit(const Stmt& s);
#define TJ_KIR_EXPR(n) virtual void visit(const n& node);
#define TJ_KIR_STMT(n) virtual void visit(const n& node);
#include "kir/nodes.def"

 protected:
  template <class T>
  void visit_children(const T& node);
};

/// Rebuilding walk. Each visit() by default mutates the children and returns `self` unchanged
/// when no child changed (sharing is kept), else a copy with the new children.
class Mutator {
 public:
  virtual ~Mutator() = default;
  Expr mutate(const Expr& e);
  Stmt mutate(const Stmt& s);

 protected:
#define TJ_KIR_EXPR(n) virtual Expr visit(const n& node, const Expr& self);
#define TJ_KIR_STMT(n) virtual Stmt visit(const n& node, const Stmt& self);
#include "kir/nodes.def"
  template <class T, class Handle>
  Handle mutate_children(const T& node, const Handle& self);
};

// ---- Structural hash, equality, printing, verification ----

uint64_t structural_hash(const Expr& e);
uint64_t structural_hash(const Stmt& s);
/// Hash of name, params, dims and body: a factor of the code cache key.
uint64_t structural_hash(const Function& f);
bool structural_equal(const Expr& a, const Expr& b);
bool structural_equal(const Stmt& a, const Stmt& b);
bool structural_equal(const Function& a, const Function& b);

/// C-like text, e.g. "for (i, 0, n) {\n  y[i] = (a[i] * x[i]);\n}\n".
std::string to_string(const Expr& e);
std::string to_string(const Stmt& s, int indent = 0);
std::string to_string(const Function& f);

/// True for the dtypes kernel IR values and buffers may have and codegen compiles: float32,
/// float64, (u)int8/16/32/64 and bool. float16/bfloat16 and strings are not (yet) among them.
bool is_kernel_dtype(DType t);

/// Checks that every Var is bound (loop var, let, dim), every buffer is a param or allocated,
/// operand types agree (dtype and lanes), indices are integer, conditions bool, and no null
/// child. Returns kInvalidArgument naming the first offending node.
Status verify(const Function& f);

}  // namespace tierjit::kir
