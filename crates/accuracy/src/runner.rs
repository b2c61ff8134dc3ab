//! Compiling and running one-op programs: `y = f(x)` (or `pow(x, y)`) over `n` elements, by an
//! [`accy_session::Session`] in default or exact mode, so what runs is exactly what any
//! program containing the op gets.

use accy_ir::{Builder, DType, Type};
use accy_session::{Handle, Scratch, Session, SessionOptions};

use crate::functions::{Function, Op};

/// A compiled one-op program and a session to run it in.
#[derive(Debug)]
pub struct Runner {
    session: Session,
    handle: Handle,
    n: usize,
    binary: bool,
}

impl Runner {
    /// `f` over `n` elements of `dtype`, compiled in default mode (`exact` false) or exact
    /// mode for this CPU's best target, one thread per invocation (callers run their own).
    pub fn new(f: &Function, dtype: DType, n: usize, exact: bool) -> Result<Runner, String> {
        Runner::with_options(
            f,
            dtype,
            n,
            SessionOptions::default().with_reassociate_float_sums(!exact),
        )
    }

    /// As [`Runner::new`] with explicit session options (a lower tier, say).
    pub fn with_options(
        f: &Function,
        dtype: DType,
        n: usize,
        options: SessionOptions,
    ) -> Result<Runner, String> {
        let session = Session::with_options(options.with_threads(1)).map_err(|e| e.to_string())?;
        let ty = Type::new(dtype, &[n as u64]);
        let mut b = Builder::new();
        let err = |e: accy_ir::BuildError| e.to_string();
        let x = b.input("x", ty.clone()).map_err(err)?;
        let y = match f.op {
            Op::Unary(op) => b.unary(op, x).map_err(err)?,
            Op::Binary(op) => {
                let y = b.input("y", ty).map_err(err)?;
                b.binary(op, x, y).map_err(err)?
            }
        };
        b.output(y).map_err(err)?;
        let program = b.finish().map_err(err)?;
        let handle = session
            .compile_program_with_weights(&program, &Default::default())
            .map_err(|e| e.to_string())?;
        Ok(Runner {
            session,
            handle,
            n,
            binary: f.is_binary(),
        })
    }

    /// The elements per run.
    pub fn len(&self) -> usize {
        self.n
    }

    /// True when a run has no elements.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The code generator's name (`x64-avx512`, …).
    pub fn target(&self) -> &'static str {
        self.session.target_name()
    }

    /// Runs the program: `out = f(a)` or `f(a, b)`; every slice has [`Runner::len`]
    /// elements (`b` is ignored by unary functions).
    pub fn run<T: bytemuck::Pod>(
        &self,
        scratch: &mut Scratch,
        a: &[T],
        b: &[T],
        out: &mut [T],
    ) -> Result<(), String> {
        let inputs: Vec<&[T]> = if self.binary { vec![a, b] } else { vec![a] };
        self.session
            .invoke_typed(self.handle, scratch, &inputs, &mut [out])
            .map_err(|e| e.to_string())
    }
}
