//! Dispatch chains (`plan/chain.rs`) run by the backend's code: a row softmax and a layer
//! norm compiled for caches so small that their passes are chained (and their outputs are
//! stored with non-temporal stores where the backend has them), in exact mode; each
//! chain run as its links one after the other (the layer norm's; the softmax's links keep
//! rows in worker scratch and compute only workgroup by workgroup) and workgroup by workgroup
//! in both orders (every link's kernel with the one workgroup, `Launch::only`), which must
//! agree, and the result compared bit for bit with the interpreter. The softmax's stored `exp` keeps one
//! workgroup's rows in worker scratch (`crate::kernel::RowScratch`), which the runner keeps
//! from one link to the next. The group fails if the planner formed no chain, gave the layer
//! norm's last link no prefetch hint or the softmax's exp no worker scratch, so it never
//! passes for want of one.

use accy_artifact::{Blocking, Command};
use accy_ir::{interp, text, DType, Tensor, TensorData};

use super::Conformance;
use crate::testing::{run_artifact, same_results};

const SOFTMAX: &str = "program {
  %x = input \"x\" : f32[48,40]
  %m = reduce max %x, axes=[1] : f32[48]
  %mb = broadcast %m, dims=[48,40], axes=[0] : f32[48,40]
  %d = sub %x, %mb : f32[48,40]
  %e = exp %d : f32[48,40]
  %s = reduce sum %e, axes=[1] : f32[48]
  %sb = broadcast %s, dims=[48,40], axes=[0] : f32[48,40]
  %y = div %e, %sb : f32[48,40]
  output %y
}";

const LAYER_NORM: &str = "program {
  %x = input \"x\" : f64[24,36]
  %g = input \"g\" : f64[36]
  %s = reduce sum %x, axes=[1] : f64[24]
  %n = constant 0.027777777777777776 : f64[]
  %nb = broadcast %n, dims=[24], axes=[] : f64[24]
  %mean = mul %s, %nb : f64[24]
  %meanb = broadcast %mean, dims=[24,36], axes=[0] : f64[24,36]
  %c = sub %x, %meanb : f64[24,36]
  %sq = mul %c, %c : f64[24,36]
  %ss = reduce sum %sq, axes=[1] : f64[24]
  %var = mul %ss, %nb : f64[24]
  %r = rsqrt %var : f64[24]
  %rb = broadcast %r, dims=[24,36], axes=[0] : f64[24,36]
  %xn = mul %c, %rb : f64[24,36]
  %gb = broadcast %g, dims=[24,36], axes=[1] : f64[24,36]
  %y = mul %xn, %gb : f64[24,36]
  output %y
}";

pub(super) fn chains(s: &mut Conformance<'_>, _: u32) -> Result<(), String> {
    let mut options = s.options.clone().with_reassociate(false);
    options.caches = Blocking {
        l1d: 256,
        l2: 1024,
        llc: 2048,
        ..Default::default()
    };
    for source in [SOFTMAX, LAYER_NORM] {
        let program = text::parse(source).map_err(|e| e.to_string())?;
        let compiled = crate::compile_detailed(&program, s.runner.target(), &options)
            .map_err(|e| format!("compile failed: {e}"))?;
        // The layer norm's last link reads `x`, which its first reads row by row: it carries
        // the hint to fetch the next workgroup's rows, whose code runs here too.
        let hinted = compiled
            .kernels
            .last()
            .is_some_and(|k| k.as_loop().is_some_and(|k| k.prefetch.is_some()));
        if source == LAYER_NORM && !hinted {
            return Err(format!(
                "the chain's last link has no prefetch hint\n{source}"
            ));
        }
        // The softmax's exp, stored once in exact mode, keeps its rows in worker scratch
        // from the link that writes them while it sums them to the division that reads them.
        let in_scratch = compiled
            .kernels
            .iter()
            .filter(|k| k.as_loop().is_some_and(|k| !k.row_scratch.is_empty()))
            .count();
        if source == SOFTMAX && in_scratch != 2 {
            return Err(format!(
                "{in_scratch} kernels keep rows in worker scratch, not 2\n{source}"
            ));
        }
        let artifact = compiled.artifact;
        let links = artifact
            .launch
            .commands
            .iter()
            .filter(|c| matches!(c, Command::Dispatch { chained: true, .. }))
            .count();
        if links == 0 {
            return Err(format!("no chain was formed for\n{source}"));
        }
        let args: Vec<Tensor> = program
            .inputs()
            .map(|(_, p)| {
                let n = p.ty.element_count().unwrap_or(0) as usize;
                let data = match p.ty.dtype {
                    DType::F64 => {
                        TensorData::F64((0..n).map(|i| (i % 23) as f64 * 0.3 - 2.9).collect())
                    }
                    _ => TensorData::F32((0..n).map(|i| (i % 37) as f32 * 0.25 - 4.0).collect()),
                };
                Tensor::new(&p.ty.dims, data).map_err(|e| e.to_string())
            })
            .collect::<Result<_, String>>()?;
        let expected = interp::eval(&program, &args).map_err(|e| e.to_string())?;
        let actual = run_artifact(&artifact, &program, &args, s.runner)?;
        same_results(&expected, &actual).map_err(|e| format!("{e}\n{source}"))?;
        s.checked += links + 1;
    }
    super::softmax::softmax_edges(s)
}
