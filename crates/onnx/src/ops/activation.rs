//! Activation functions, each composed from IR ops by the formula the ONNX operator spec
//! gives (attributes are float32 in ONNX, so their f32 value is used in every dtype).

use accy_ir::{BinaryOp, CompareOp, UnaryOp};

use crate::emit::{Emitter, Val};
use crate::error::{invalid, unsupported, NodeResult};
use crate::node::Node;

/// `Relu`, `LeakyRelu`, `PRelu`, `Elu`, `Selu`, `Celu`, `HardSigmoid`, `HardSwish`,
/// `Softplus`, `Softsign`, `Mish`, `Gelu`, `ThresholdedRelu`, `Shrink`, `Swish`.
pub(super) fn activation(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    let x = node.input(0)?;
    let d = em.dtype(x);
    let attr =
        |name: &str, default: f32| -> NodeResult<f64> { Ok(f64::from(node.float(name, default)?)) };
    let zero = em.scalar(d, 0.0);
    let out = match node.op() {
        "Relu" => {
            node.check_attrs(&[])?;
            em.binary(BinaryOp::Max, x, zero)?
        }
        "LeakyRelu" => {
            node.check_attrs(&["alpha"])?;
            let scaled = em.binary_scalar(BinaryOp::Mul, x, attr("alpha", 0.01)?)?;
            positive_else(em, x, scaled)?
        }
        "PRelu" => {
            node.check_attrs(&[])?;
            let slope = node.input(1)?;
            let scaled = em.binary(BinaryOp::Mul, x, slope)?;
            let neg = em.compare(CompareOp::Lt, x, zero)?;
            let x_full = em.broadcast_to(x, &em.dims(scaled))?;
            em.select(neg, scaled, x_full)?
        }
        "Elu" => {
            node.check_attrs(&["alpha"])?;
            node.expect_float(em, x)?;
            let e = exp_minus_one(em, x)?;
            let neg = em.binary_scalar(BinaryOp::Mul, e, attr("alpha", 1.0)?)?;
            positive_else(em, x, neg)?
        }
        "Selu" => {
            node.check_attrs(&["alpha", "gamma"])?;
            node.expect_float(em, x)?;
            let alpha = attr("alpha", 1.673_263_2)?;
            let gamma = attr("gamma", 1.050_701)?;
            let e = em.unary(UnaryOp::Exp, x)?;
            let ae = em.binary_scalar(BinaryOp::Mul, e, alpha)?;
            let neg = em.binary_scalar(BinaryOp::Sub, ae, alpha)?;
            let y = positive_else(em, x, neg)?;
            em.binary_scalar(BinaryOp::Mul, y, gamma)?
        }
        "Celu" => {
            node.check_attrs(&["alpha"])?;
            node.expect_float(em, x)?;
            let alpha = attr("alpha", 1.0)?;
            let scaled = em.binary_scalar(BinaryOp::Div, x, alpha)?;
            let e = exp_minus_one(em, scaled)?;
            let neg = em.binary_scalar(BinaryOp::Mul, e, alpha)?;
            let neg = em.binary(BinaryOp::Min, neg, zero)?;
            let pos = em.binary(BinaryOp::Max, x, zero)?;
            em.binary(BinaryOp::Add, pos, neg)?
        }
        "HardSigmoid" => {
            node.check_attrs(&["alpha", "beta"])?;
            hard_sigmoid(em, x, attr("alpha", 0.2)?, attr("beta", 0.5)?)?
        }
        "HardSwish" => {
            node.check_attrs(&[])?;
            let h = hard_sigmoid(em, x, 1.0 / 6.0, 0.5)?;
            em.binary(BinaryOp::Mul, x, h)?
        }
        "Softplus" => {
            node.check_attrs(&[])?;
            node.expect_float(em, x)?;
            softplus(em, x)?
        }
        "Softsign" => {
            node.check_attrs(&[])?;
            node.expect_float(em, x)?;
            let a = em.unary(UnaryOp::Abs, x)?;
            let den = em.binary_scalar(BinaryOp::Add, a, 1.0)?;
            em.binary(BinaryOp::Div, x, den)?
        }
        "Mish" => {
            node.check_attrs(&[])?;
            node.expect_float(em, x)?;
            let sp = softplus(em, x)?;
            let t = em.unary(UnaryOp::Tanh, sp)?;
            em.binary(BinaryOp::Mul, x, t)?
        }
        "Gelu" => {
            node.check_attrs(&["approximate"])?;
            node.expect_float(em, x)?;
            gelu(em, x, &node.string("approximate", "none")?)?
        }
        "ThresholdedRelu" => {
            node.check_attrs(&["alpha"])?;
            let alpha = em.scalar(d, attr("alpha", 1.0)?);
            let above = em.compare(CompareOp::Gt, x, alpha)?;
            em.select(above, x, zero)?
        }
        "Shrink" => {
            node.check_attrs(&["bias", "lambd"])?;
            let (bias, lambd) = (attr("bias", 0.0)?, attr("lambd", 0.5)?);
            let lo = em.scalar(d, -lambd);
            let hi = em.scalar(d, lambd);
            let below = em.compare(CompareOp::Lt, x, lo)?;
            let above = em.compare(CompareOp::Gt, x, hi)?;
            let plus = em.binary_scalar(BinaryOp::Add, x, bias)?;
            let minus = em.binary_scalar(BinaryOp::Sub, x, bias)?;
            let upper = em.select(above, minus, zero)?;
            em.select(below, plus, upper)?
        }
        "Swish" => {
            node.check_attrs(&["alpha"])?;
            node.expect_float(em, x)?;
            let ax = em.binary_scalar(BinaryOp::Mul, x, attr("alpha", 1.0)?)?;
            let s = em.unary(UnaryOp::Sigmoid, ax)?;
            em.binary(BinaryOp::Mul, x, s)?
        }
        other => return unsupported(format!("`{other}` has no importer")),
    };
    Ok(vec![out])
}

/// `x > 0 ? x : otherwise`.
fn positive_else(em: &mut Emitter, x: Val, otherwise: Val) -> NodeResult<Val> {
    let zero = em.scalar(em.dtype(x), 0.0);
    let pos = em.compare(CompareOp::Gt, x, zero)?;
    em.select(pos, x, otherwise)
}

/// `exp(x) - 1`, as the ONNX specs of `Elu` and `Celu` write it.
fn exp_minus_one(em: &mut Emitter, x: Val) -> NodeResult<Val> {
    let e = em.unary(UnaryOp::Exp, x)?;
    em.binary_scalar(BinaryOp::Sub, e, 1.0)
}

/// `log(exp(x) + 1)`.
fn softplus(em: &mut Emitter, x: Val) -> NodeResult<Val> {
    let e = em.unary(UnaryOp::Exp, x)?;
    let e1 = em.binary_scalar(BinaryOp::Add, e, 1.0)?;
    em.unary(UnaryOp::Log, e1)
}

/// `max(0, min(1, alpha * x + beta))`.
fn hard_sigmoid(em: &mut Emitter, x: Val, alpha: f64, beta: f64) -> NodeResult<Val> {
    let ax = em.binary_scalar(BinaryOp::Mul, x, alpha)?;
    let y = em.binary_scalar(BinaryOp::Add, ax, beta)?;
    let y = em.binary_scalar(BinaryOp::Min, y, 1.0)?;
    em.binary_scalar(BinaryOp::Max, y, 0.0)
}

/// `0.5 x (1 + erf(x / sqrt 2))`, or with `approximate="tanh"`
/// `0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))`.
pub(super) fn gelu(em: &mut Emitter, x: Val, approximate: &str) -> NodeResult<Val> {
    let inner = match approximate {
        "none" => {
            let s = em.binary_scalar(BinaryOp::Mul, x, std::f64::consts::FRAC_1_SQRT_2)?;
            em.unary(UnaryOp::Erf, s)?
        }
        "tanh" => {
            let x2 = em.binary(BinaryOp::Mul, x, x)?;
            let x3 = em.binary(BinaryOp::Mul, x2, x)?;
            let c = em.binary_scalar(BinaryOp::Mul, x3, 0.044715)?;
            let s = em.binary(BinaryOp::Add, x, c)?;
            let k = (2.0 / std::f64::consts::PI).sqrt();
            let s = em.binary_scalar(BinaryOp::Mul, s, k)?;
            em.unary(UnaryOp::Tanh, s)?
        }
        other => return invalid(format!("approximate `{other}` must be `none` or `tanh`")),
    };
    let one_plus = em.binary_scalar(BinaryOp::Add, inner, 1.0)?;
    let half_x = em.binary_scalar(BinaryOp::Mul, x, 0.5)?;
    em.binary(BinaryOp::Mul, half_x, one_plus)
}

/// `Clip(x, min?, max?)`: `min(max(x, min), max)`.
pub(super) fn clip(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    node.check_attrs(&[])?;
    let mut y = node.input(0)?;
    if let Some(lo) = node.opt_input(1) {
        y = em.binary(BinaryOp::Max, y, lo)?;
    }
    if let Some(hi) = node.opt_input(2) {
        y = em.binary(BinaryOp::Min, y, hi)?;
    }
    Ok(vec![y])
}
