//! The op importers and the table that dispatches a node to one by op type.
//!
//! Each importer checks the attributes it understands (refusing others), reads the inputs it
//! needs at import time, emits IR through the [`Emitter`] and returns one value per output
//! it produces (optional outputs beyond those are refused by the driver if requested).

mod activation;
mod attention;
mod conv;
mod elementwise;
mod generate;
mod index;
mod loss;
mod matmul;
mod norm;
mod pool;
mod quant;
mod reduce;
mod resize;
mod scatter;
mod shape;
mod slice;
mod window;

use crate::emit::{Emitter, Val};
use crate::error::{invalid, unsupported, NodeResult};
use crate::node::Node;

type Importer = fn(&mut Emitter, &Node) -> NodeResult<Vec<Val>>;

/// (op type, first opset in which accy's importer applies, importer). Ops that exist in
/// opset 13 list 13; newer ops list the opset that introduced them.
const TABLE: &[(&str, i64, Importer)] = &[
    ("Abs", 13, elementwise::unary),
    ("Neg", 13, elementwise::unary),
    ("Sqrt", 13, elementwise::unary),
    ("Exp", 13, elementwise::unary),
    ("Log", 13, elementwise::unary),
    ("Tanh", 13, elementwise::unary),
    ("Sigmoid", 13, elementwise::unary),
    ("Erf", 13, elementwise::unary),
    ("Sin", 13, elementwise::unary),
    ("Cos", 13, elementwise::unary),
    ("Tan", 13, elementwise::unary),
    ("Floor", 13, elementwise::unary),
    ("Ceil", 13, elementwise::unary),
    ("Round", 13, elementwise::unary),
    ("Not", 13, elementwise::unary),
    ("BitwiseNot", 18, elementwise::unary),
    ("Reciprocal", 13, elementwise::unary),
    ("Sign", 13, elementwise::unary),
    ("IsNaN", 13, elementwise::unary),
    ("IsInf", 13, elementwise::unary),
    ("Add", 13, elementwise::binary),
    ("Sub", 13, elementwise::binary),
    ("Mul", 13, elementwise::binary),
    ("Div", 13, elementwise::binary),
    ("Pow", 13, elementwise::binary),
    ("Mod", 13, elementwise::binary),
    ("And", 13, elementwise::binary),
    ("Or", 13, elementwise::binary),
    ("Xor", 13, elementwise::binary),
    ("BitwiseAnd", 18, elementwise::binary),
    ("BitwiseOr", 18, elementwise::binary),
    ("BitwiseXor", 18, elementwise::binary),
    ("BitShift", 13, elementwise::binary),
    ("Equal", 13, elementwise::binary),
    ("Less", 13, elementwise::binary),
    ("LessOrEqual", 13, elementwise::binary),
    ("Greater", 13, elementwise::binary),
    ("GreaterOrEqual", 13, elementwise::binary),
    ("Max", 13, elementwise::variadic),
    ("Min", 13, elementwise::variadic),
    ("Sum", 13, elementwise::variadic),
    ("Mean", 13, elementwise::variadic),
    ("Where", 13, elementwise::where_),
    ("Cast", 13, elementwise::cast),
    ("CastLike", 15, elementwise::cast),
    ("Relu", 13, activation::activation),
    ("LeakyRelu", 13, activation::activation),
    ("PRelu", 13, activation::activation),
    ("Elu", 13, activation::activation),
    ("Selu", 13, activation::activation),
    ("Celu", 13, activation::activation),
    ("HardSigmoid", 13, activation::activation),
    ("HardSwish", 14, activation::activation),
    ("Softplus", 13, activation::activation),
    ("Softsign", 13, activation::activation),
    ("Mish", 18, activation::activation),
    ("Gelu", 20, activation::activation),
    ("ThresholdedRelu", 13, activation::activation),
    ("Shrink", 13, activation::activation),
    ("Swish", 24, activation::activation),
    ("Clip", 13, activation::clip),
    ("Softmax", 13, norm::softmax),
    ("LogSoftmax", 13, norm::softmax),
    ("Hardmax", 13, norm::softmax),
    ("LayerNormalization", 17, norm::layer_norm),
    ("RMSNormalization", 23, norm::rms_norm),
    ("BatchNormalization", 13, norm::batch_norm),
    ("InstanceNormalization", 13, norm::instance_norm),
    ("GroupNormalization", 18, norm::group_norm),
    ("MeanVarianceNormalization", 13, norm::mvn),
    ("LpNormalization", 13, norm::lp_norm),
    ("LRN", 13, norm::lrn),
    ("ReduceSum", 13, reduce::reduce),
    ("ReduceMean", 13, reduce::reduce),
    ("ReduceMax", 13, reduce::reduce),
    ("ReduceMin", 13, reduce::reduce),
    ("ReduceProd", 13, reduce::reduce),
    ("ReduceL1", 13, reduce::reduce),
    ("ReduceL2", 13, reduce::reduce),
    ("ReduceLogSum", 13, reduce::reduce),
    ("ReduceLogSumExp", 13, reduce::reduce),
    ("ReduceSumSquare", 13, reduce::reduce),
    ("ArgMax", 13, reduce::arg),
    ("ArgMin", 13, reduce::arg),
    ("MatMul", 13, matmul::matmul_node),
    ("Gemm", 13, matmul::gemm),
    ("Einsum", 13, matmul::einsum),
    ("Reshape", 13, shape::reshape),
    ("Flatten", 13, shape::flatten),
    ("Squeeze", 13, shape::squeeze),
    ("Unsqueeze", 13, shape::unsqueeze),
    ("Expand", 13, shape::expand),
    ("Transpose", 13, shape::transpose),
    ("Identity", 13, shape::identity),
    ("Dropout", 13, shape::identity),
    ("Concat", 13, shape::concat),
    ("Split", 13, shape::split),
    ("Tile", 13, shape::tile),
    ("Shape", 13, shape::shape),
    ("Size", 13, shape::shape),
    ("DepthToSpace", 13, shape::depth_space),
    ("SpaceToDepth", 13, shape::depth_space),
    ("Slice", 13, slice::slice),
    ("Pad", 13, slice::pad),
    ("CenterCropPad", 18, slice::center_crop_pad),
    ("Gather", 13, index::gather),
    ("GatherElements", 13, index::gather_elements),
    ("GatherND", 13, index::gather_nd),
    ("Compress", 13, index::compress),
    ("CumSum", 13, index::cumsum),
    ("Constant", 13, generate::constant),
    ("ConstantOfShape", 13, generate::constant_of_shape),
    ("Range", 13, generate::range),
    ("EyeLike", 13, generate::eye_like),
    ("Trilu", 14, generate::trilu),
    ("OneHot", 13, generate::one_hot),
    ("NegativeLogLikelihoodLoss", 13, loss::nll_loss),
    ("SoftmaxCrossEntropyLoss", 13, loss::softmax_cross_entropy),
    ("Attention", 23, attention::attention),
    ("RotaryEmbedding", 23, attention::rotary_embedding),
    ("MaxPool", 13, pool::max_pool),
    ("AveragePool", 13, pool::average_pool),
    ("LpPool", 13, pool::lp_pool),
    ("GlobalAveragePool", 13, pool::global_pool),
    ("GlobalMaxPool", 13, pool::global_pool),
    ("Conv", 13, conv::conv),
    ("ConvTranspose", 13, conv::conv_transpose),
    ("Resize", 13, resize::resize),
    ("QuantizeLinear", 13, quant::quantize),
    ("DequantizeLinear", 13, quant::dequantize),
    ("QLinearMatMul", 13, quant::qlinear_matmul),
    ("ScatterElements", 13, scatter::scatter_elements),
    ("ScatterND", 13, scatter::scatter_nd),
    ("TopK", 13, scatter::top_k),
    ("HannWindow", 17, generate::window),
    ("HammingWindow", 17, generate::window),
    ("BlackmanWindow", 17, generate::window),
];

/// ONNX ops the IR cannot express exactly today, with the reason given when one is met.
const REFUSED: &[(&str, &str)] = &[
    (
        "Sinh",
        "accy's IR has no accurate sinh (exp(x) - exp(-x) cancels near 0)",
    ),
    (
        "Cosh",
        "accy's IR has no cosh that stays finite where exp overflows",
    ),
    ("Asin", "accy's IR has no inverse trigonometric functions"),
    ("Acos", "accy's IR has no inverse trigonometric functions"),
    ("Atan", "accy's IR has no inverse trigonometric functions"),
    ("Asinh", "accy's IR has no accurate asinh"),
    ("Acosh", "accy's IR has no accurate acosh"),
    ("Atanh", "accy's IR has no accurate atanh"),
    (
        "NonZero",
        "its output shape depends on the data (accy compiles static shapes)",
    ),
    (
        "Unique",
        "its output shape depends on the data (accy compiles static shapes)",
    ),
    ("If", "control flow (subgraphs) is not supported"),
    ("Loop", "control flow (subgraphs) is not supported"),
    ("Scan", "control flow (subgraphs) is not supported"),
];

/// The op types accy imports, each with the first opset version it applies to.
pub fn supported_ops() -> impl Iterator<Item = (&'static str, i64)> {
    TABLE.iter().map(|&(name, since, _)| (name, since))
}

/// Imports one node, returning a value per output it produces.
pub(crate) fn import(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    let op = node.op();
    let Some(&(_, since, importer)) = TABLE.iter().find(|(name, ..)| *name == op) else {
        if let Some((_, why)) = REFUSED.iter().find(|(name, _)| *name == op) {
            return unsupported(format!("op `{op}` is not supported: {why}"));
        }
        return unsupported(format!("op `{op}` is not supported"));
    };
    if node.opset < since {
        return invalid(format!(
            "op `{op}` is defined from opset {since}, but the model imports opset {}",
            node.opset
        ));
    }
    importer(em, node)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn op_names_are_unique_and_refused_ops_have_no_importer() {
        let mut names: Vec<&str> = supported_ops().map(|(n, _)| n).collect();
        let count = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), count, "an op is listed twice");
        for (refused, _) in REFUSED {
            assert!(
                !names.contains(refused),
                "{refused} is both imported and refused"
            );
        }
        assert!(supported_ops().all(|(_, since)| (13..=24).contains(&since)));
        assert_eq!(count, 137);
    }
}
