// Tier-0 conv chains: a connected set of float32 Convs and the elementwise nodes between them
// (Relu, LeakyRelu, Clip, Sigmoid, Tanh, Add of two same-shape tensors, MaxPool) whose intermediate values
// are read only inside the set runs with every intermediate in one layout oneDNN's kernels read
// and write directly: no reorder per Conv, one reorder at the exit. Channels-last (NHWC,
// nn::ActLayout::kChannelsLast: the layout of oneDNN's brgemm convolutions, dense and
// depthwise, on AVX-512) on CPUs with AVX-512F; blocks of 8 channels (nChw8c,
// nn::ActLayout::kBlocked8: its AVX2 direct kernels' layout) without, when the chain's values
// have multiples of 8 channels (set_conv_chain_layout_for_testing).
// Planned once per node list with the other tier-0 fusions (interp::plan_fusion, executor.h).
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "interp/kernel.h"
#include "interp/kernels/dnnl_util.h"
#include "ir/graph.h"

namespace tierjit::interp {

struct Frame;
struct ChainClipProof;
namespace nn {
struct Window;
}

/// One planned chain (see the file comment). What a chain is and where it stops:
/// - members: Conv (one output; W and B read from outside the chain), the activations
///   conv_fusion_for() accepts (other inputs absent or constants), Add with two inputs, MaxPool
///   without Indices (computed channels-last exactly as tier 0's kernel: same taps,
///   same NaN-propagating fold; oneDNN's pooling is not used: its max does not propagate NaN);
/// - every value produced by a member but the last one is read only by members, at data
///   positions (Conv input 0, activation input 0, Add inputs), is no graph output and is
///   read by no other node (of this list or another region): so the chain can run whole at
///   the position of its last member, the only value it hands out being the last member's;
/// - grown backwards from that last member over producers whose every reader is already in
///   the chain; at least two Convs (one Conv alone gains nothing over the Conv kernel);
/// - nothing is planned in graphs with subgraphs (captures are not in users()).
/// AveragePool, GlobalAveragePool, BatchNormalization and every other op end a chain (they run
/// their kernels on plain tensors; the models at hand have BatchNormalization folded into the
/// Convs and one GlobalAveragePool at the end, where the chain's exit reorder is due anyway).
struct ConvChain {
  enum class Kind : uint8_t { kConv, kUnary, kAdd, kMaxPool };
  struct Step {
    const ir::Node* node = nullptr;
    Kind kind = Kind::kConv;
    int in[2] = {-1, -1};  ///< slots of the data inputs (Conv X, activation X, Add A and B)
    int out = -1;          ///< slot of the output
    nn::ConvPostOp post;   ///< kConv: the activation of the next aliased step, as a post-op
    bool aliased = false;  ///< kUnary: applied by the Conv as its post-op; output = input
    /// kConv read only by an Add (a residual): the Add's step, whose other operand the Conv may
    /// accumulate into in place (oneDNN's sum post-op) when a call allows it (run_conv_chain);
    /// sum_act: the Relu / LeakyRelu step reading that Add alone, applied after the sum; -1:
    /// none. sum_post: the post-ops of that form.
    int sum_add = -1, sum_act = -1;
    nn::ConvPostOp sum_post;
    /// kConv: the MaxPool step that alone reads its output (or, with an aliased activation,
    /// the activation's): the Conv may pool its values before storing them where a call's
    /// window and kernel allow (direct_conv_f32's MaxPoolAfter), the MaxPool step then done.
    /// -1: none.
    int pool = -1;
  };
  std::vector<int> node_indices;         ///< members' indices in the node list, ascending
  std::vector<Step> steps;               ///< one per member, in node-list order
  std::vector<const ir::Value*> values;  ///< slots: every value a member reads or writes
  std::vector<int> last_use;             ///< per slot: the last step reading it, -1: none
  std::vector<bool> external;            ///< per slot: not produced by a member
  /// Clips that run as their Convs' post-ops on calls that prove it exact (conv_chain_bounds.h).
  std::shared_ptr<const ChainClipProof> clip_proof;

  /// What a call resolves from the shapes of its external inputs (slot shapes, convolution
  /// geometries, pooling windows): resolved once per distinct set of shapes and kept here,
  /// most recently used first, at most kResolvedKept (run_conv_chain; thread-safe).
  struct Resolved;
  static constexpr size_t kResolvedKept = 16;
  mutable std::mutex resolved_mu;
  mutable std::vector<std::shared_ptr<const Resolved>> resolved;
};

/// The data inputs of a chain member: 2 for Add (A and B), else 1 (X); the others (W, B, Clip's
/// bounds, ...) are read from outside the chain.
inline size_t conv_chain_data_inputs(const ir::Node& n) { return n.op() == ir::OpKind::Add ? 2 : 1; }

/// The conv chains of `nodes` (in topological order, all from `graph`); `eligible[i]` false
/// keeps nodes[i] out (e.g. a node of another fusion). Pure; one pass over the nodes.
std::vector<std::shared_ptr<const ConvChain>> plan_conv_chains(
    std::span<const ir::Node* const> nodes, const ir::Graph& graph,
    const std::vector<bool>& eligible);

/// Runs chain `c` on `frame` (all of its members, at the position of its last one): float32
/// data of spatial rank 1-3 with no zero-sized dim, Adds of equal shapes; intermediates in the
/// chain's layout (the file comment); the exit value as a plain tensor in frame.values. Every intermediate value
/// holds a tensor of its shape and dtype whose contents are unspecified (shapes are all that is
/// read from them, e.g. by a recording), as for the Conv + activation fusion. Returns false,
/// having done nothing, when the inputs do not fit (another dtype, shape or rank, an invalid
/// node): the caller then runs the members one by one. Outputs equal the members' kernels bit
/// for bit where oneDNN runs the same convolution kernel: every Conv that oneDNN runs
/// channels-last alone too (its brgemm kernels: resnet18's 3x3 and mobilenet_v2's depthwise
/// layers), and a first layer of few input channels whose output channels fill one block of
/// oneDNN's blocked layout (16 on AVX-512: convnet_small's 1 -> 16; the direct kernel runs
/// alone and in the chain, its nChw16c output being channels-last then); not necessarily 1x1
/// kernels (oneDNN's GEMM on the plain layout alone, its brgemm 1x1 kernel in a chain) nor
/// other first layers (nChw16c alone, channels-last brgemm in a chain): the same products,
/// possibly summed in another order (tests/interp/conv_chain_test.cc: 1e-5). On AVX2 in blocks
/// of 8 the dense and depthwise kernels are those oneDNN runs alone (nChw8c either way).
/// A call whose images split evenly over the intra-op threads (or are at least 4 per thread)
/// runs, when the cores are free, split by images: each of the intra-op threads runs every step on its share of the
/// batch, in pieces of 8, 4, 2 and 1 images, with one-thread kernels, then takes the pieces of a
/// late thread's share that thread has not begun (one fork and join per
/// call instead of one per step, whose threads wait at every join; four
/// piece sizes bound the oneDNN primitives created per Conv, 0.1-0.6 ms each, whatever the
/// calls' batch sizes); the values are those of the unsplit run within the same tolerance
/// (conv_chain_image_splits counts these calls).
/// Errors: a member kernel's or oneDNN's.
Expected<bool> run_conv_chain(const ConvChain& c, Frame& frame, const ExecOptions& options,
                              const SubgraphRunner& runner);

/// Residual Adds this process has run as their Convs' sum post-op (ConvChain::Step::sum_add);
/// tests check which path ran.
uint64_t conv_chain_residual_sums();

/// Chain calls this process has run split by images (each intra-op thread running every step
/// on its share of the batch with one-thread kernels; run_conv_chain); tests check which path ran.
uint64_t conv_chain_image_splits();

/// Forces the layout conv chains keep their intermediates in (kChannelsLast or kBlocked8; the
/// latter still only where every value laid out so has a multiple of 8 channels, else
/// kChannelsLast); nullopt: the CPU's choice (the file comment). For tests and benchmarks, to run
/// both layouts on any CPU; process-wide, applies to calls whose shapes are resolved after it (a chain keeps
/// the shapes of its recent calls).
void set_conv_chain_layout_for_testing(std::optional<nn::ActLayout> layout);

/// MaxPool of window `w` (resolved by nn::resolve_window, as the MaxPool kernel does) on the
/// channels-last float32 tensor x of plain shape `x_shape` (rank 3-5, no zero dim) into
/// channels-last y, bit for bit tier 0's MaxPool (NaN anywhere in a window gives NaN; a window
/// with no in-bounds tap gives the lowest float). `threads`: OpenMP threads above 2^15
/// tap-channels of work.
void max_pool_channels_last(const nn::Window& w, const Shape& x_shape, const float* x, float* y,
                            int threads);

}  // namespace tierjit::interp
