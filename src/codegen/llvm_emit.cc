// Kernel IR -> LLVM IR. Emits `void symbol(ptr buffers, ptr dims)`: loads each buffer pointer and
// dim once in the entry block, then the body. Loops are emitted already rotated (guard, body with
// an i64 phi, latch) so the loop vectorizer needs no canonicalization; every buffer gets its own
// alias scope (buffers that are written must not overlap others, codegen.h). Contiguous vector
// accesses (index = ramp(base, 1, n)) become vector loads/stores, other vector indices gathers/
// scatters. float32 exp/log/tanh/erf/sigmoid become polynomials (math_emit.cc) so they vectorize.
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/MDBuilder.h>

#include <unordered_map>

#include "codegen/codegen_internal.h"

namespace tierjit::codegen {

namespace {

using kir::NodeKind;

struct Buffer {
  llvm::Value* ptr = nullptr;
  DType dtype = DType::kUndefined;
  llvm::MDNode* scope = nullptr;    // !alias.scope
  llvm::MDNode* noalias = nullptr;  // !noalias (every other parameter buffer)
};

class Emitter {
 public:
  Emitter(llvm::LLVMContext& ctx, llvm::Module& m) : ctx_(ctx), m_(m), b_(ctx) {}

  Status function(const kir::Function& f, const std::string& symbol, const CpuInfo& cpu) {
    auto* ptr_ty = llvm::PointerType::get(ctx_, 0);
    auto* fn_ty = llvm::FunctionType::get(b_.getVoidTy(), {ptr_ty, ptr_ty}, false);
    fn_ = llvm::Function::Create(fn_ty, llvm::Function::ExternalLinkage, symbol, m_);
    fn_->addFnAttr(llvm::Attribute::NoUnwind);
    fn_->addFnAttr("prefer-vector-width", std::to_string(cpu.vector_bits));
    for (unsigned i = 0; i < 2; ++i) {
      fn_->addParamAttr(i, llvm::Attribute::NoAlias);
      fn_->addParamAttr(i, llvm::Attribute::NoCapture);
      fn_->addParamAttr(i, llvm::Attribute::ReadOnly);
    }
    entry_ = llvm::BasicBlock::Create(ctx_, "entry", fn_);
    b_.SetInsertPoint(entry_);

    llvm::MDBuilder mdb(ctx_);
    llvm::MDNode* domain = mdb.createAnonymousAliasScopeDomain("tierjit.buffers");
    std::vector<llvm::Metadata*> scopes;
    for (const kir::BufferParam& p : f.buffers) {
      scopes.push_back(mdb.createAnonymousAliasScope(domain, p.name));
    }
    for (size_t i = 0; i < f.buffers.size(); ++i) {
      Buffer buf;
      buf.dtype = f.buffers[i].dtype;
      TJ_RETURN_IF_ERROR(check_dtype(buf.dtype));
      llvm::Value* slot = b_.CreateConstInBoundsGEP1_64(ptr_ty, fn_->getArg(0), i);
      auto* ld = b_.CreateAlignedLoad(ptr_ty, slot, llvm::Align(8), f.buffers[i].name);
      ld->setMetadata(llvm::LLVMContext::MD_nonnull, llvm::MDNode::get(ctx_, {}));
      buf.ptr = ld;
      buf.scope = llvm::MDNode::get(ctx_, {scopes[i]});
      std::vector<llvm::Metadata*> others;
      for (size_t j = 0; j < scopes.size(); ++j) {
        if (j != i) others.push_back(scopes[j]);
      }
      buf.noalias = llvm::MDNode::get(ctx_, others);
      buffers_[f.buffers[i].name] = buf;
    }
    for (size_t k = 0; k < f.dims.size(); ++k) {
      llvm::Value* slot = b_.CreateConstInBoundsGEP1_64(b_.getInt64Ty(), fn_->getArg(1), k);
      vars_[f.dims[k]] = b_.CreateAlignedLoad(b_.getInt64Ty(), slot, llvm::Align(8), f.dims[k]);
    }
    TJ_RETURN_IF_ERROR(stmt(f.body));
    b_.CreateRetVoid();
    return Status();
  }

 private:
  static Status check_dtype(DType t) {
    if (kir::is_kernel_dtype(t)) return Status();
    return unsupported("codegen: dtype {} is not supported yet", dtype_name(t));
  }

  // Register type (bool is i1) and memory type (bool is i8).
  llvm::Type* scalar_type(DType t, bool memory) {
    switch (t) {
      case DType::kFloat32:
        return b_.getFloatTy();
      case DType::kFloat64:
        return b_.getDoubleTy();
      case DType::kInt8:
      case DType::kUInt8:
        return b_.getInt8Ty();
      case DType::kInt16:
      case DType::kUInt16:
        return b_.getInt16Ty();
      case DType::kInt32:
      case DType::kUInt32:
        return b_.getInt32Ty();
      case DType::kBool:
        return memory ? b_.getInt8Ty() : b_.getInt1Ty();
      default:
        return b_.getInt64Ty();
    }
  }
  llvm::Type* type(kir::Type t, bool memory = false) {
    llvm::Type* s = scalar_type(t.dtype, memory);
    return t.lanes == 1 ? s : llvm::FixedVectorType::get(s, t.lanes);
  }

  llvm::Value* intrinsic(llvm::Intrinsic::ID id, llvm::Type* t, std::vector<llvm::Value*> args) {
    llvm::Function* decl = llvm::Intrinsic::getDeclaration(&m_, id, {t});
    return b_.CreateCall(decl, args);
  }

  // ---- expressions ----

  Expected<llvm::Value*> expr(const kir::Expr& e) {
    kir::Type t = e->type;
    switch (e->kind) {
      case NodeKind::kIntImm: {
        llvm::Type* s = scalar_type(t.dtype, false);
        llvm::Constant* c =
            llvm::ConstantInt::get(s, static_cast<uint64_t>(e->as<kir::IntImm>()->value), true);
        return t.lanes == 1
                   ? c
                   : llvm::ConstantVector::getSplat(llvm::ElementCount::getFixed(t.lanes), c);
      }
      case NodeKind::kFloatImm:
        return llvm::ConstantFP::get(type(t), e->as<kir::FloatImm>()->value);
      case NodeKind::kVar: {
        auto it = vars_.find(e->as<kir::Var>()->name);
        if (it == vars_.end())
          return internal_error("codegen: unbound {}", e->as<kir::Var>()->name);
        return it->second;
      }
      case NodeKind::kBinary:
        return binary(*e->as<kir::Binary>());
      case NodeKind::kCompare:
        return compare(*e->as<kir::Compare>());
      case NodeKind::kSelect: {
        const auto* s = e->as<kir::Select>();
        TJ_ASSIGN_OR_RETURN(llvm::Value * c, expr(s->cond));
        TJ_ASSIGN_OR_RETURN(llvm::Value * x, expr(s->t));
        TJ_ASSIGN_OR_RETURN(llvm::Value * y, expr(s->f));
        return b_.CreateSelect(c, x, y);
      }
      case NodeKind::kCast:
        return cast(*e->as<kir::Cast>());
      case NodeKind::kLoad:
        return load(*e->as<kir::Load>());
      case NodeKind::kBroadcast: {
        TJ_ASSIGN_OR_RETURN(llvm::Value * v, expr(e->as<kir::Broadcast>()->value));
        return b_.CreateVectorSplat(t.lanes, v);
      }
      case NodeKind::kRamp: {
        const auto* r = e->as<kir::Ramp>();
        TJ_ASSIGN_OR_RETURN(llvm::Value * base, expr(r->base));
        TJ_ASSIGN_OR_RETURN(llvm::Value * stride, expr(r->stride));
        std::vector<llvm::Constant*> iota;
        for (int i = 0; i < t.lanes; ++i)
          iota.push_back(llvm::ConstantInt::get(base->getType(), i));
        llvm::Value* steps =
            b_.CreateMul(b_.CreateVectorSplat(t.lanes, stride), llvm::ConstantVector::get(iota));
        return b_.CreateAdd(b_.CreateVectorSplat(t.lanes, base), steps);
      }
      case NodeKind::kCall:
        return call(*e->as<kir::Call>());
      case NodeKind::kShuffle: {
        const auto* sh = e->as<kir::Shuffle>();
        TJ_ASSIGN_OR_RETURN(llvm::Value * v, expr(sh->vector));
        if (t.lanes == 1) {
          if (sh->vector->type.lanes == 1) return v;
          return b_.CreateExtractElement(v, b_.getInt64(static_cast<uint64_t>(sh->indices[0])));
        }
        if (sh->vector->type.lanes == 1) return b_.CreateVectorSplat(t.lanes, v);
        return b_.CreateShuffleVector(v, sh->indices);
      }
      default:
        return unsupported("codegen: expression {}", kir::node_kind_name(e->kind));
    }
  }

  Expected<llvm::Value*> binary(const kir::Binary& n) {
    TJ_ASSIGN_OR_RETURN(llvm::Value * a, expr(n.a));
    TJ_ASSIGN_OR_RETURN(llvm::Value * c, expr(n.b));
    kir::Type t = n.type;
    bool fp = t.is_float();
    bool sgn = dtype_is_signed(t.dtype);
    switch (n.op) {
      case kir::BinaryOp::kAdd:
        return fp ? b_.CreateFAdd(a, c) : b_.CreateAdd(a, c);
      case kir::BinaryOp::kSub:
        return fp ? b_.CreateFSub(a, c) : b_.CreateSub(a, c);
      case kir::BinaryOp::kMul:
        return fp ? b_.CreateFMul(a, c) : b_.CreateMul(a, c);
      case kir::BinaryOp::kDiv:
        return fp ? b_.CreateFDiv(a, c) : sgn ? b_.CreateSDiv(a, c) : b_.CreateUDiv(a, c);
      case kir::BinaryOp::kMod:
        return sgn ? b_.CreateSRem(a, c) : b_.CreateURem(a, c);
      case kir::BinaryOp::kMin:
        return intrinsic(fp    ? llvm::Intrinsic::minnum
                         : sgn ? llvm::Intrinsic::smin
                               : llvm::Intrinsic::umin,
                         a->getType(), {a, c});
      case kir::BinaryOp::kMax:
        return intrinsic(fp    ? llvm::Intrinsic::maxnum
                         : sgn ? llvm::Intrinsic::smax
                               : llvm::Intrinsic::umax,
                         a->getType(), {a, c});
      case kir::BinaryOp::kAnd:
        return b_.CreateAnd(a, c);
      case kir::BinaryOp::kOr:
        return b_.CreateOr(a, c);
    }
    return unsupported("codegen: binary op");
  }

  Expected<llvm::Value*> compare(const kir::Compare& n) {
    TJ_ASSIGN_OR_RETURN(llvm::Value * a, expr(n.a));
    TJ_ASSIGN_OR_RETURN(llvm::Value * c, expr(n.b));
    kir::Type t = n.a->type;
    using P = llvm::CmpInst::Predicate;
    if (t.is_float()) {
      static constexpr P kFp[] = {P::FCMP_OEQ, P::FCMP_UNE, P::FCMP_OLT,
                                  P::FCMP_OLE, P::FCMP_OGT, P::FCMP_OGE};
      return b_.CreateFCmp(kFp[static_cast<int>(n.op)], a, c);
    }
    bool sgn = dtype_is_signed(t.dtype) && !t.is_bool();
    static constexpr P kS[] = {P::ICMP_EQ,  P::ICMP_NE,  P::ICMP_SLT,
                               P::ICMP_SLE, P::ICMP_SGT, P::ICMP_SGE};
    static constexpr P kU[] = {P::ICMP_EQ,  P::ICMP_NE,  P::ICMP_ULT,
                               P::ICMP_ULE, P::ICMP_UGT, P::ICMP_UGE};
    return b_.CreateICmp((sgn ? kS : kU)[static_cast<int>(n.op)], a, c);
  }

  Expected<llvm::Value*> cast(const kir::Cast& n) {
    TJ_ASSIGN_OR_RETURN(llvm::Value * v, expr(n.value));
    kir::Type from = n.value->type;
    kir::Type to = n.type;
    llvm::Type* lt = type(to);
    if (from.dtype == to.dtype) return v;
    if (to.is_bool()) {
      return from.is_float() ? b_.CreateFCmpUNE(v, llvm::Constant::getNullValue(v->getType()))
                             : b_.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType()));
    }
    bool from_signed = dtype_is_signed(from.dtype) && !from.is_bool();
    if (from.is_float() && to.is_float()) return b_.CreateFPCast(v, lt);
    if (from.is_float())
      return dtype_is_signed(to.dtype) ? b_.CreateFPToSI(v, lt) : b_.CreateFPToUI(v, lt);
    if (to.is_float()) return from_signed ? b_.CreateSIToFP(v, lt) : b_.CreateUIToFP(v, lt);
    return b_.CreateIntCast(v, lt, from_signed);
  }

  // Address of buffer[index] for a scalar index, or a vector of addresses.
  Expected<std::pair<const Buffer*, llvm::Value*>> address(const std::string& name,
                                                           const kir::Expr& index, int lanes,
                                                           bool* contiguous) {
    auto it = buffers_.find(name);
    if (it == buffers_.end()) return internal_error("codegen: unknown buffer {}", name);
    const Buffer& buf = it->second;
    llvm::Type* elem = scalar_type(buf.dtype, true);
    *contiguous = lanes == 1;
    kir::Expr base_index = index;
    if (lanes > 1) {
      if (const auto* r = index->as<kir::Ramp>()) {
        const auto* s = r->stride->as<kir::IntImm>();
        if (s && s->value == 1) {
          *contiguous = true;
          base_index = r->base;
        }
      }
    }
    TJ_ASSIGN_OR_RETURN(llvm::Value * idx, expr(base_index));
    if (idx->getType()->getScalarSizeInBits() < 64) {
      llvm::Type* wide = b_.getInt64Ty();
      if (auto* vt = llvm::dyn_cast<llvm::VectorType>(idx->getType())) {
        wide = llvm::VectorType::get(wide, vt->getElementCount());
      }
      idx = b_.CreateSExt(idx, wide);
    }
    return std::make_pair(&buf, b_.CreateInBoundsGEP(elem, buf.ptr, idx));
  }

  void tag(llvm::Instruction* inst, const Buffer& buf) {
    if (buf.scope) {
      inst->setMetadata(llvm::LLVMContext::MD_alias_scope, buf.scope);
      inst->setMetadata(llvm::LLVMContext::MD_noalias, buf.noalias);
    }
  }

  Expected<llvm::Value*> load(const kir::Load& n) {
    bool contiguous = false;
    TJ_ASSIGN_OR_RETURN(auto addr, address(n.buffer, n.index, n.type.lanes, &contiguous));
    const Buffer& buf = *addr.first;
    llvm::Type* mem = type(n.type, true);
    llvm::Align align(dtype_size(buf.dtype));
    llvm::Instruction* inst;
    if (contiguous) {
      inst = b_.CreateAlignedLoad(mem, addr.second, align);
    } else {
      inst = b_.CreateMaskedGather(mem, addr.second, align);
    }
    tag(inst, buf);
    if (n.type.is_bool()) return b_.CreateICmpNE(inst, llvm::Constant::getNullValue(mem));
    return inst;
  }

  // ---- math ----

  Expected<llvm::Value*> call(const kir::Call& n) {
    std::vector<llvm::Value*> args;
    for (const kir::Expr& a : n.args) {
      TJ_ASSIGN_OR_RETURN(llvm::Value * v, expr(a));
      args.push_back(v);
    }
    return emit_intrinsic(b_, m_, n.op, n.type.dtype, args);
  }

  // ---- statements ----

  Status stmt(const kir::Stmt& s) {
    switch (s->kind) {
      case NodeKind::kFor:
        return loop(*s->as<kir::For>());
      case NodeKind::kStore: {
        const auto* st = s->as<kir::Store>();
        TJ_ASSIGN_OR_RETURN(llvm::Value * v, expr(st->value));
        bool contiguous = false;
        TJ_ASSIGN_OR_RETURN(auto addr,
                            address(st->buffer, st->index, st->value->type.lanes, &contiguous));
        const Buffer& buf = *addr.first;
        if (st->value->type.is_bool()) v = b_.CreateZExt(v, type(st->value->type, true));
        llvm::Align align(dtype_size(buf.dtype));
        llvm::Instruction* inst;
        if (contiguous) {
          inst = b_.CreateAlignedStore(v, addr.second, align);
        } else {
          inst = b_.CreateMaskedScatter(v, addr.second, align);
        }
        tag(inst, buf);
        return Status();
      }
      case NodeKind::kLetStmt: {
        const auto* l = s->as<kir::LetStmt>();
        TJ_ASSIGN_OR_RETURN(llvm::Value * v, expr(l->value));
        v->setName(l->var);
        vars_[l->var] = v;
        TJ_RETURN_IF_ERROR(stmt(l->body));
        vars_.erase(l->var);
        return Status();
      }
      case NodeKind::kIfThenElse: {
        const auto* i = s->as<kir::IfThenElse>();
        TJ_ASSIGN_OR_RETURN(llvm::Value * c, expr(i->cond));
        auto* then_bb = llvm::BasicBlock::Create(ctx_, "then", fn_);
        auto* else_bb = i->else_case ? llvm::BasicBlock::Create(ctx_, "else", fn_) : nullptr;
        auto* join_bb = llvm::BasicBlock::Create(ctx_, "endif", fn_);
        b_.CreateCondBr(c, then_bb, else_bb ? else_bb : join_bb);
        b_.SetInsertPoint(then_bb);
        TJ_RETURN_IF_ERROR(stmt(i->then_case));
        b_.CreateBr(join_bb);
        if (else_bb) {
          b_.SetInsertPoint(else_bb);
          TJ_RETURN_IF_ERROR(stmt(i->else_case));
          b_.CreateBr(join_bb);
        }
        b_.SetInsertPoint(join_bb);
        return Status();
      }
      case NodeKind::kBlock:
        for (const kir::Stmt& c : s->as<kir::Block>()->stmts) TJ_RETURN_IF_ERROR(stmt(c));
        return Status();
      case NodeKind::kAllocate: {
        const auto* a = s->as<kir::Allocate>();
        TJ_RETURN_IF_ERROR(check_dtype(a->dtype));
        llvm::IRBuilder<> eb(entry_, entry_->begin());  // static alloca in the entry block
        auto* alloca = eb.CreateAlloca(scalar_type(a->dtype, true),
                                       eb.getInt64(std::max<int64_t>(a->size, 1)), a->buffer);
        alloca->setAlignment(llvm::Align(64));
        Buffer buf;
        buf.ptr = alloca;
        buf.dtype = a->dtype;
        buffers_[a->buffer] = buf;
        TJ_RETURN_IF_ERROR(stmt(a->body));
        buffers_.erase(a->buffer);
        return Status();
      }
      case NodeKind::kCallKernel:
        return call_kernel(*s->as<kir::CallKernel>());
      default:
        return unsupported("codegen: statement {}", kir::node_kind_name(s->kind));
    }
  }

  // A microkernel call: `void symbol(ptr..., i64...)`, the symbol defined in the JIT at the
  // microkernel's address (jit.cc).
  Status call_kernel(const kir::CallKernel& c) {
    const kernels::MicrokernelInfo& info = kernels::microkernel_info(c.kernel);
    auto* ptr_ty = llvm::PointerType::get(ctx_, 0);
    std::vector<llvm::Type*> params;
    std::vector<llvm::Value*> args;
    for (size_t i = 0; i < c.args.size(); ++i) {
      TJ_ASSIGN_OR_RETURN(llvm::Value * v, expr(c.args[i]));
      if (i < c.buffers.size()) {
        auto it = buffers_.find(c.buffers[i]);
        if (it == buffers_.end())
          return internal_error("codegen: {}: unknown buffer '{}'", info.name, c.buffers[i]);
        v = b_.CreateInBoundsGEP(scalar_type(it->second.dtype, true), it->second.ptr, v);
        params.push_back(ptr_ty);
      } else {
        params.push_back(b_.getInt64Ty());
      }
      args.push_back(v);
    }
    llvm::FunctionCallee fn = m_.getOrInsertFunction(
        info.symbol, llvm::FunctionType::get(b_.getVoidTy(), params, false));
    llvm::CallInst* call = b_.CreateCall(fn, args);
    call->setDoesNotThrow();
    return Status();
  }

  // for (v = min; v < min + extent; ++v), emitted rotated: if (extent > 0) do { body } while (...).
  Status loop(const kir::For& f) {
    TJ_ASSIGN_OR_RETURN(llvm::Value * lo, expr(f.min));
    TJ_ASSIGN_OR_RETURN(llvm::Value * ext, expr(f.extent));
    if (f.for_kind == kir::ForKind::kParallel) return parallel_loop(f, lo, ext);
    return loop_range(f, lo, ext);
  }

  // A parallel loop through libgomp's ABI: the body is outlined into `void fn.par(ptr ctx)`,
  // where ctx holds every variable and buffer pointer in scope plus the range; each OpenMP
  // thread runs a contiguous chunk. GOMP_parallel(fn, ctx, tierjit_team_threads(), 0): 0 (the
  // default team), or 1 while other processes or background compiles hold the spare cores.
  Status parallel_loop(const kir::For& f, llvm::Value* lo, llvm::Value* ext) {
    std::vector<std::pair<std::string, llvm::Value*>> cvars(vars_.begin(), vars_.end());
    std::vector<std::pair<std::string, Buffer>> cbufs(buffers_.begin(), buffers_.end());
    auto* ptr_ty = llvm::PointerType::get(ctx_, 0);
    std::vector<llvm::Type*> fields;
    for (auto& [name, v] : cvars) fields.push_back(v->getType());
    for (size_t i = 0; i < cbufs.size(); ++i) fields.push_back(ptr_ty);
    fields.push_back(b_.getInt64Ty());
    fields.push_back(b_.getInt64Ty());
    auto* st = llvm::StructType::get(ctx_, fields);
    llvm::AllocaInst* ctx_mem;
    {
      llvm::IRBuilder<> eb(entry_, entry_->begin());
      ctx_mem = eb.CreateAlloca(st, nullptr, f.var + ".ctx");
    }
    std::vector<llvm::Value*> values;
    for (auto& [name, v] : cvars) values.push_back(v);
    for (auto& [name, buf] : cbufs) values.push_back(buf.ptr);
    values.push_back(lo);
    values.push_back(ext);
    for (size_t i = 0; i < values.size(); ++i)
      b_.CreateStore(values[i], b_.CreateStructGEP(st, ctx_mem, i));

    auto* outlined = llvm::Function::Create(
        llvm::FunctionType::get(b_.getVoidTy(), {ptr_ty}, false), llvm::Function::InternalLinkage,
        fn_->getName() + "." + f.var + ".par", m_);
    outlined->setAttributes(fn_->getAttributes().removeParamAttributes(ctx_, 1));
    // Emit the outlined body with its own scope, then restore ours.
    auto saved_fn = fn_;
    auto saved_entry = entry_;
    auto saved_vars = vars_;
    auto saved_bufs = buffers_;
    llvm::IRBuilderBase::InsertPoint saved_ip = b_.saveIP();
    fn_ = outlined;
    entry_ = llvm::BasicBlock::Create(ctx_, "entry", outlined);
    b_.SetInsertPoint(entry_);
    vars_.clear();
    buffers_.clear();
    llvm::Value* arg = outlined->getArg(0);
    auto field = [&](size_t i) { return b_.CreateLoad(fields[i], b_.CreateStructGEP(st, arg, i)); };
    size_t i = 0;
    for (auto& [name, v] : cvars) vars_[name] = field(i++);
    for (auto& [name, buf] : cbufs) {
      Buffer copy = buf;
      copy.ptr = field(i++);
      buffers_[name] = copy;
    }
    llvm::Value* plo = field(i++);
    llvm::Value* pext = field(i++);
    auto* i32 = b_.getInt32Ty();
    llvm::FunctionCallee tid_fn =
        m_.getOrInsertFunction("omp_get_thread_num", llvm::FunctionType::get(i32, false));
    llvm::FunctionCallee nth_fn =
        m_.getOrInsertFunction("omp_get_num_threads", llvm::FunctionType::get(i32, false));
    llvm::Value* tid = b_.CreateSExt(b_.CreateCall(tid_fn), b_.getInt64Ty());
    llvm::Value* nth = b_.CreateSExt(b_.CreateCall(nth_fn), b_.getInt64Ty());
    llvm::Value* chunk = b_.CreateSDiv(b_.CreateAdd(pext, b_.CreateSub(nth, b_.getInt64(1))), nth);
    auto smin = [&](llvm::Value* a, llvm::Value* c) {
      return intrinsic(llvm::Intrinsic::smin, a->getType(), {a, c});
    };
    llvm::Value* begin = smin(b_.CreateMul(tid, chunk), pext);
    llvm::Value* end = smin(b_.CreateMul(b_.CreateAdd(tid, b_.getInt64(1)), chunk), pext);
    Status s = loop_range(f, b_.CreateAdd(plo, begin), b_.CreateSub(end, begin));
    if (s.ok()) b_.CreateRetVoid();
    fn_ = saved_fn;
    entry_ = saved_entry;
    vars_ = std::move(saved_vars);
    buffers_ = std::move(saved_bufs);
    b_.restoreIP(saved_ip);
    TJ_RETURN_IF_ERROR(s);

    llvm::FunctionCallee gomp = m_.getOrInsertFunction(
        "GOMP_parallel",
        llvm::FunctionType::get(b_.getVoidTy(), {ptr_ty, ptr_ty, i32, i32}, false));
    llvm::Value* threads = b_.CreateCall(
        m_.getOrInsertFunction("tierjit_team_threads", llvm::FunctionType::get(i32, false)));
    b_.CreateCall(gomp, {outlined, ctx_mem, threads, b_.getInt32(0)});
    return Status();
  }

  // for (v = lo; v < lo + ext; ++v) body, emitted rotated.
  Status loop_range(const kir::For& f, llvm::Value* lo, llvm::Value* ext) {
    llvm::Value* hi = b_.CreateAdd(lo, ext, f.var + ".end");
    auto* pre_bb = b_.GetInsertBlock();
    auto* body_bb = llvm::BasicBlock::Create(ctx_, f.var + ".body", fn_);
    auto* exit_bb = llvm::BasicBlock::Create(ctx_, f.var + ".exit", fn_);
    b_.CreateCondBr(b_.CreateICmpSGT(ext, b_.getInt64(0)), body_bb, exit_bb);
    b_.SetInsertPoint(body_bb);
    llvm::PHINode* iv = b_.CreatePHI(b_.getInt64Ty(), 2, f.var);
    iv->addIncoming(lo, pre_bb);
    vars_[f.var] = iv;
    TJ_RETURN_IF_ERROR(stmt(f.body));
    vars_.erase(f.var);
    llvm::Value* next =
        b_.CreateAdd(iv, b_.getInt64(1), f.var + ".next", /*HasNUW=*/false, /*HasNSW=*/true);
    auto* br = b_.CreateCondBr(b_.CreateICmpSLT(next, hi), body_bb, exit_bb);
    iv->addIncoming(next, b_.GetInsertBlock());

    // Loop metadata: the self-reference plus hints for the loop kind.
    std::vector<llvm::Metadata*> md = {
        nullptr, llvm::MDNode::get(ctx_, llvm::MDString::get(ctx_, "llvm.loop.mustprogress"))};
    auto hint = [&](const char* name, bool on) {
      md.push_back(llvm::MDNode::get(
          ctx_, {llvm::MDString::get(ctx_, name), llvm::ConstantAsMetadata::get(b_.getInt1(on))}));
    };
    if (f.for_kind == kir::ForKind::kVectorized) hint("llvm.loop.vectorize.enable", true);
    if (f.for_kind == kir::ForKind::kUnrolled) {
      md.push_back(llvm::MDNode::get(ctx_, llvm::MDString::get(ctx_, "llvm.loop.unroll.full")));
    }
    llvm::MDNode* loop_id = llvm::MDNode::getDistinct(ctx_, md);
    loop_id->replaceOperandWith(0, loop_id);
    br->setMetadata(llvm::LLVMContext::MD_loop, loop_id);
    b_.SetInsertPoint(exit_bb);
    return Status();
  }

  llvm::LLVMContext& ctx_;
  llvm::Module& m_;
  llvm::IRBuilder<> b_;
  llvm::Function* fn_ = nullptr;
  llvm::BasicBlock* entry_ = nullptr;
  std::unordered_map<std::string, llvm::Value*> vars_;
  std::unordered_map<std::string, Buffer> buffers_;
};

}  // namespace

Expected<std::unique_ptr<llvm::Module>> emit_module(const kir::Function& f, llvm::LLVMContext& ctx,
                                                    llvm::TargetMachine& tm,
                                                    const std::string& symbol) {
  auto m = std::make_unique<llvm::Module>(symbol, ctx);
  m->setTargetTriple(tm.getTargetTriple().str());
  m->setDataLayout(tm.createDataLayout());
  TJ_RETURN_IF_ERROR(emit_function(f, *m, symbol));
  return m;
}

Status emit_function(const kir::Function& f, llvm::Module& m, const std::string& symbol) {
  Emitter em(m.getContext(), m);
  return em.function(f, symbol, host_cpu());
}

}  // namespace tierjit::codegen
