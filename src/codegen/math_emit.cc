// Vectorizable float32 exp, log, tanh, erf emitted as straight-line LLVM IR (no calls, no
// branches), so the loop vectorizer and SLP can widen them. Scalar or vector-of-float operands.
// Sources: Cephes expf/logf/tanhf (S. Moshier) range reduction and minimax coefficients; erf is
// Eigen's rational approximation (generic_fast_erf_float). Special values follow libm: NaN in,
// NaN out; exp overflows to inf and underflows through denormals to 0; log(0) = -inf, log(x<0) =
// NaN, log(inf) = inf. Maximum errors against glibc, measured in tests/codegen/math_test.cc, are
// in docs/codegen.md. emit_intrinsic() lowers every kir math intrinsic.
#include <llvm/IR/Intrinsics.h>

#include "codegen/codegen_internal.h"

namespace tierjit::codegen {

namespace {

llvm::Value* fconst(llvm::Value* like, double v) {
  return llvm::ConstantFP::get(like->getType(), v);
}
llvm::Value* iconst(llvm::Type* t, int64_t v) {
  return llvm::ConstantInt::get(t, static_cast<uint64_t>(v), true);
}

// The integer type with the lanes of `x` (i32 per float lane).
llvm::Type* int_like(llvm::IRBuilder<>& b, llvm::Value* x) {
  llvm::Type* t = x->getType();
  if (auto* v = llvm::dyn_cast<llvm::VectorType>(t))
    return llvm::VectorType::get(b.getInt32Ty(), v->getElementCount());
  return b.getInt32Ty();
}

llvm::Value* call1(llvm::IRBuilder<>& b, llvm::Intrinsic::ID id, llvm::Value* x) {
  llvm::Module* m = b.GetInsertBlock()->getModule();
  return b.CreateCall(llvm::Intrinsic::getDeclaration(m, id, {x->getType()}), {x});
}
llvm::Value* call2(llvm::IRBuilder<>& b, llvm::Intrinsic::ID id, llvm::Value* x, llvm::Value* y) {
  llvm::Module* m = b.GetInsertBlock()->getModule();
  return b.CreateCall(llvm::Intrinsic::getDeclaration(m, id, {x->getType()}), {x, y});
}

// Horner: c[0]*x^(n-1) + ... + c[n-1].
llvm::Value* horner(llvm::IRBuilder<>& b, llvm::Value* x, std::initializer_list<double> c) {
  auto it = c.begin();
  llvm::Value* p = fconst(x, *it++);
  llvm::Module* m = b.GetInsertBlock()->getModule();
  llvm::Function* fma = llvm::Intrinsic::getDeclaration(m, llvm::Intrinsic::fmuladd, {x->getType()});
  // llvm.fmuladd: one fused multiply-add per coefficient where the target has FMA (half the
  // instructions of a multiply and an add; the polynomial rounds once per step instead of twice).
  for (; it != c.end(); ++it) p = b.CreateCall(fma, {p, x, fconst(x, *it)});
  return p;
}

// 2^n for integer-valued n in [-127, 127] (i32 lanes), as float.
llvm::Value* pow2i(llvm::IRBuilder<>& b, llvm::Value* n, llvm::Type* float_t) {
  llvm::Value* bits =
      b.CreateShl(b.CreateAdd(n, iconst(n->getType(), 127)), iconst(n->getType(), 23));
  return b.CreateBitCast(bits, float_t);
}

llvm::Value* intrinsic(llvm::IRBuilder<>& b, llvm::Module& m, llvm::Intrinsic::ID id, llvm::Type* t,
                       std::vector<llvm::Value*> args) {
  return b.CreateCall(llvm::Intrinsic::getDeclaration(&m, id, {t}), args);
}

}  // namespace

Expected<llvm::Value*> emit_intrinsic(llvm::IRBuilder<>& b, llvm::Module& m, kir::Intrinsic op,
                                      DType dtype, const std::vector<llvm::Value*>& args) {
  llvm::Value* x = args[0];
  llvm::Type* t = x->getType();
  bool is_f32 = dtype == DType::kFloat32;
  using I = llvm::Intrinsic::ID;
  auto unary = [&](I id) { return intrinsic(b, m, id, t, {x}); };
  switch (op) {
    case kir::Intrinsic::kExp:
      return is_f32 ? emit_exp_f32(b, x) : unary(llvm::Intrinsic::exp);
    case kir::Intrinsic::kLog:
      return is_f32 ? emit_log_f32(b, x) : unary(llvm::Intrinsic::log);
    case kir::Intrinsic::kTanh:
      return is_f32 ? emit_tanh_f32(b, x) : emit_libm_per_lane(b, m, "tanh", x);
    case kir::Intrinsic::kErf:
      return is_f32 ? emit_erf_f32(b, x) : emit_libm_per_lane(b, m, "erf", x);
    case kir::Intrinsic::kSigmoid: {
      // e = exp(-|x|) never overflows; sigmoid = 1/(1+e) for x >= 0, e/(1+e) for x < 0.
      llvm::Value* na = b.CreateFNeg(intrinsic(b, m, llvm::Intrinsic::fabs, t, {x}));
      llvm::Value* e =
          is_f32 ? emit_exp_f32(b, na) : intrinsic(b, m, llvm::Intrinsic::exp, t, {na});
      llvm::Value* one = llvm::ConstantFP::get(t, 1.0);
      llvm::Value* r = b.CreateFDiv(one, b.CreateFAdd(one, e));
      return b.CreateSelect(b.CreateFCmpOLT(x, llvm::Constant::getNullValue(t)), b.CreateFMul(e, r),
                            r);
    }
    case kir::Intrinsic::kSqrt:
      return unary(llvm::Intrinsic::sqrt);
    case kir::Intrinsic::kAbs:
      if (dtype_is_float(dtype)) return unary(llvm::Intrinsic::fabs);
      if (!dtype_is_signed(dtype)) return x;
      return intrinsic(b, m, llvm::Intrinsic::abs, t, {x, b.getFalse()});
    case kir::Intrinsic::kFloor:
      return unary(llvm::Intrinsic::floor);
    case kir::Intrinsic::kCeil:
      return unary(llvm::Intrinsic::ceil);
    case kir::Intrinsic::kRound:
      return unary(llvm::Intrinsic::roundeven);  // ONNX Round: half to even
    case kir::Intrinsic::kFma:
      return intrinsic(b, m, llvm::Intrinsic::fma, t, {args[0], args[1], args[2]});
    case kir::Intrinsic::kPow:
      return intrinsic(b, m, llvm::Intrinsic::pow, t, {args[0], args[1]});
  }
  return unsupported("codegen: intrinsic {}", kir::intrinsic_name(op));
}

llvm::Value* emit_exp_f32(llvm::IRBuilder<>& b, llvm::Value* x) {
  // exp(x) = 2^n * exp(r), n = round(x / ln 2), r = x - n ln 2 in [-ln2/2, ln2/2].
  llvm::Value* xc = call2(b, llvm::Intrinsic::maxnum,
                          call2(b, llvm::Intrinsic::minnum, x, fconst(x, 89.0)), fconst(x, -104.0));
  llvm::Value* n =
      call1(b, llvm::Intrinsic::roundeven, b.CreateFMul(xc, fconst(x, 1.44269504088896341)));
  llvm::Value* r = b.CreateFSub(xc, b.CreateFMul(n, fconst(x, 0.693359375)));
  r = b.CreateFSub(r, b.CreateFMul(n, fconst(x, -2.12194440e-4)));
  llvm::Value* p = horner(b, r,
                          {1.9875691500E-4, 1.3981999507E-3, 8.3334519073E-3, 4.1665795894E-2,
                           1.6666665459E-1, 5.0000001201E-1});
  llvm::Value* y =
      b.CreateFAdd(b.CreateFAdd(b.CreateFMul(p, b.CreateFMul(r, r)), r), fconst(x, 1.0));
  // n in [-150, 129]: scale in two steps so each factor is a normal float and the product
  // overflows to inf or rounds into denormals exactly once.
  llvm::Type* it = int_like(b, x);
  llvm::Value* ni = b.CreateFPToSI(n, it);
  llvm::Value* n1 = b.CreateAShr(ni, iconst(it, 1));
  llvm::Value* n2 = b.CreateSub(ni, n1);
  llvm::Value* res =
      b.CreateFMul(b.CreateFMul(y, pow2i(b, n1, x->getType())), pow2i(b, n2, x->getType()));
  return b.CreateSelect(b.CreateFCmpUNO(x, x), x, res);
}

llvm::Value* emit_log_f32(llvm::IRBuilder<>& b, llvm::Value* x) {
  llvm::Type* it = int_like(b, x);
  // Denormals: scale by 2^23 first.
  llvm::Value* tiny = b.CreateFCmpOLT(x, fconst(x, 1.17549435e-38));
  llvm::Value* xs = b.CreateSelect(tiny, b.CreateFMul(x, fconst(x, 8388608.0)), x);
  llvm::Value* eadj = b.CreateSelect(tiny, iconst(it, -23), iconst(it, 0));
  // x = m * 2^e with m in [0.5, 1).
  llvm::Value* bits = b.CreateBitCast(xs, it);
  llvm::Value* e = b.CreateSub(b.CreateAnd(b.CreateLShr(bits, iconst(it, 23)), iconst(it, 0xff)),
                               iconst(it, 126));
  e = b.CreateAdd(e, eadj);
  llvm::Value* m = b.CreateBitCast(
      b.CreateOr(b.CreateAnd(bits, iconst(it, 0x807fffff)), iconst(it, 0x3f000000)), x->getType());
  // If m < sqrt(1/2): e -= 1, m = 2m - 1; else m = m - 1 (so m is in [sqrt(1/2)-1, sqrt(2)-1)).
  llvm::Value* lo = b.CreateFCmpOLT(m, fconst(x, 0.707106781186547524));
  e = b.CreateSub(e, b.CreateZExt(lo, it));
  m = b.CreateFSub(b.CreateSelect(lo, b.CreateFAdd(m, m), m), fconst(x, 1.0));
  llvm::Value* z = b.CreateFMul(m, m);
  llvm::Value* p =
      horner(b, m,
             {7.0376836292E-2, -1.1514610310E-1, 1.1676998740E-1, -1.2420140846E-1, 1.4249322787E-1,
              -1.6668057665E-1, 2.0000714765E-1, -2.4999993993E-1, 3.3333331174E-1});
  llvm::Value* y = b.CreateFMul(b.CreateFMul(p, m), z);
  llvm::Value* fe = b.CreateSIToFP(e, x->getType());
  y = b.CreateFAdd(y, b.CreateFMul(fe, fconst(x, -2.12194440e-4)));
  y = b.CreateFSub(y, b.CreateFMul(z, fconst(x, 0.5)));
  llvm::Value* r = b.CreateFAdd(m, y);
  r = b.CreateFAdd(r, b.CreateFMul(fe, fconst(x, 0.693359375)));
  // Special values: x < 0 or NaN -> NaN; +-0 -> -inf; +inf -> +inf.
  double inf = std::numeric_limits<double>::infinity();
  r = b.CreateSelect(b.CreateFCmpULT(x, fconst(x, 0.0)),
                     fconst(x, std::numeric_limits<double>::quiet_NaN()), r);
  r = b.CreateSelect(b.CreateFCmpOEQ(x, fconst(x, 0.0)), fconst(x, -inf), r);
  return b.CreateSelect(b.CreateFCmpOEQ(x, fconst(x, inf)), x, r);
}

llvm::Value* emit_tanh_f32(llvm::IRBuilder<>& b, llvm::Value* x) {
  // |x| < 0.625: x + x^3 P(x^2); else sign(x) (1 - 2 / (exp(2|x|) + 1)).
  llvm::Value* a = call1(b, llvm::Intrinsic::fabs, x);
  llvm::Value* z = b.CreateFMul(x, x);
  llvm::Value* p = horner(b, z,
                          {-5.70498872745E-3, 2.06390887954E-2, -5.37397155531E-2, 1.33314422036E-1,
                           -3.33332819422E-1});
  llvm::Value* small = b.CreateFAdd(x, b.CreateFMul(b.CreateFMul(x, z), p));
  small = call2(b, llvm::Intrinsic::copysign, small, x);  // tanh(-0) = -0
  llvm::Value* e = emit_exp_f32(b, b.CreateFAdd(a, a));
  llvm::Value* large =
      b.CreateFSub(fconst(x, 1.0), b.CreateFDiv(fconst(x, 2.0), b.CreateFAdd(e, fconst(x, 1.0))));
  large = call2(b, llvm::Intrinsic::copysign, large, x);
  return b.CreateSelect(b.CreateFCmpOLT(a, fconst(x, 0.625)), small, large);
}

llvm::Value* emit_erf_f32(llvm::IRBuilder<>& b, llvm::Value* x) {
  // erf(x) = x P(x^2) / Q(x^2) on [-4, 4] (|erf| rounds to 1 beyond); NaN passes the clamp.
  llvm::Value* xc = b.CreateSelect(b.CreateFCmpOGT(x, fconst(x, 4.0)), fconst(x, 4.0), x);
  xc = b.CreateSelect(b.CreateFCmpOLT(xc, fconst(x, -4.0)), fconst(x, -4.0), xc);
  llvm::Value* x2 = b.CreateFMul(xc, xc);
  llvm::Value* p = horner(
      b, x2,
      {-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06, -5.69250639462346e-05,
       -7.34990630326855e-04, -2.95459980854025e-03, -1.60960333262415e-02});
  llvm::Value* q = horner(b, x2,
                          {-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03,
                           -7.37332916720468e-03, -1.42647390514189e-02});
  return b.CreateFMul(xc, b.CreateFDiv(p, q));  // x * (p/q): no underflow for tiny x
}

llvm::Value* emit_libm_per_lane(llvm::IRBuilder<>& b, llvm::Module& m, const char* name,
                                llvm::Value* x) {
  llvm::Type* t = x->getType();
  llvm::Type* s = t->getScalarType();
  std::string fname = name;
  if (s->isFloatTy()) fname += 'f';
  llvm::FunctionCallee fn = m.getOrInsertFunction(fname, llvm::FunctionType::get(s, {s}, false));
  auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(t);
  if (!vt) return b.CreateCall(fn, {x});
  llvm::Value* out = llvm::PoisonValue::get(t);
  for (unsigned i = 0; i < vt->getNumElements(); ++i) {
    llvm::Value* lane = b.CreateCall(fn, {b.CreateExtractElement(x, i)});
    out = b.CreateInsertElement(out, lane, i);
  }
  return out;
}

}  // namespace tierjit::codegen
