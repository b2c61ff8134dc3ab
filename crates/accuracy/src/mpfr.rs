//! Correctly rounded f64 references from GNU MPFR, loaded at run time from the system's
//! `libmpfr.so.6` (present wherever GCC is, which needs it), so nothing here needs MPFR's
//! headers or links against it: without the library [`Mpfr::load`] says so and only the f32
//! measurements run.
//!
//! Each evaluation works at 128 bits and rounds once to f64 (`mpfr_get_d`, round to nearest):
//! MPFR's functions are correctly rounded at their working precision, so the result is the
//! correctly rounded f64 value unless the exact one lies within 2^-75 relative of a rounding
//! boundary.

use std::ffi::{c_char, c_int, c_long, c_ulong, c_void, CStr};

/// `__mpfr_struct` (mpfr.h): precision, sign, exponent, limb pointer.
#[repr(C)]
struct MpfrT {
    prec: c_long,
    sign: c_int,
    exp: c_long,
    limbs: *mut c_void,
}

type Unary = unsafe extern "C" fn(*mut MpfrT, *const MpfrT, c_int) -> c_int;
type Binary = unsafe extern "C" fn(*mut MpfrT, *const MpfrT, *const MpfrT, c_int) -> c_int;

/// Round to nearest (`MPFR_RNDN`).
const RNDN: c_int = 0;
/// Working precision in bits.
const PRECISION: c_long = 128;

/// The MPFR functions the references use.
#[derive(Clone, Copy, Debug)]
pub struct Mpfr {
    init2: unsafe extern "C" fn(*mut MpfrT, c_long),
    clear: unsafe extern "C" fn(*mut MpfrT),
    set_d: unsafe extern "C" fn(*mut MpfrT, f64, c_int) -> c_int,
    get_d: unsafe extern "C" fn(*const MpfrT, c_int) -> f64,
    add_ui: unsafe extern "C" fn(*mut MpfrT, *const MpfrT, c_ulong, c_int) -> c_int,
    ui_div: unsafe extern "C" fn(*mut MpfrT, c_ulong, *const MpfrT, c_int) -> c_int,
    neg: Unary,
    exp: Unary,
    log: Unary,
    tanh: Unary,
    erf: Unary,
    sin: Unary,
    cos: Unary,
    sqrt: Unary,
    rec_sqrt: Unary,
    pow: Binary,
}

// SAFETY: the struct holds only addresses of MPFR's functions, which are reentrant (each
// call works on the variables it is given; `Scratch` keeps one set per thread).
unsafe impl Send for Mpfr {}
// SAFETY: as above; nothing in it is ever written after loading.
unsafe impl Sync for Mpfr {}

/// Looks `name` up in `lib` as a function pointer of type `T`.
///
/// # Safety
/// `lib` must be a live `dlopen` handle and `T` the function's exact C signature.
unsafe fn symbol<T: Copy>(lib: *mut c_void, name: &CStr) -> Result<T, String> {
    // SAFETY: `lib` is a live handle and `name` a NUL-terminated string (caller's contract).
    let p = unsafe { libc::dlsym(lib, name.as_ptr()) };
    if p.is_null() {
        return Err(format!("libmpfr.so.6 has no {name:?}"));
    }
    // SAFETY: `T` is a function pointer type with the symbol's signature (caller's
    // contract), and function pointers have the size and representation of `*mut c_void`.
    Ok(unsafe { std::mem::transmute_copy::<*mut c_void, T>(&p) })
}

impl Mpfr {
    /// Loads the system's MPFR, or says why it could not.
    pub fn load() -> Result<Mpfr, String> {
        let path: &CStr = c"libmpfr.so.6";
        // SAFETY: a plain dlopen of a shared library by name; the handle is kept for the
        // life of the process (never closed), so the function pointers stay valid.
        let lib = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        if lib.is_null() {
            // SAFETY: dlerror returns a thread-local C string or null.
            let why = unsafe { libc::dlerror() };
            let why = if why.is_null() {
                "unknown error".to_owned()
            } else {
                // SAFETY: non-null dlerror results are NUL-terminated strings.
                unsafe { CStr::from_ptr(why as *const c_char) }
                    .to_string_lossy()
                    .into_owned()
            };
            return Err(format!("cannot load libmpfr.so.6 (GNU MPFR): {why}"));
        }
        // SAFETY: `lib` is live, and each type below is the signature mpfr.h declares for
        // the name (mpfr_prec_t and mpfr_exp_t are `long`, mpfr_rnd_t an int-sized enum).
        unsafe {
            Ok(Mpfr {
                init2: symbol(lib, c"mpfr_init2")?,
                clear: symbol(lib, c"mpfr_clear")?,
                set_d: symbol(lib, c"mpfr_set_d")?,
                get_d: symbol(lib, c"mpfr_get_d")?,
                add_ui: symbol(lib, c"mpfr_add_ui")?,
                ui_div: symbol(lib, c"mpfr_ui_div")?,
                neg: symbol(lib, c"mpfr_neg")?,
                exp: symbol(lib, c"mpfr_exp")?,
                log: symbol(lib, c"mpfr_log")?,
                tanh: symbol(lib, c"mpfr_tanh")?,
                erf: symbol(lib, c"mpfr_erf")?,
                sin: symbol(lib, c"mpfr_sin")?,
                cos: symbol(lib, c"mpfr_cos")?,
                sqrt: symbol(lib, c"mpfr_sqrt")?,
                rec_sqrt: symbol(lib, c"mpfr_rec_sqrt")?,
                pow: symbol(lib, c"mpfr_pow")?,
            })
        }
    }

    /// The correctly rounded f64 value of function `name` at `a` (and `b` for `pow`); NaN for
    /// a name it does not know.
    pub fn eval(&self, name: &str, a: f64, b: f64) -> f64 {
        Scratch::with(self, |s| s.eval(name, a, b))
    }
}

/// Three initialised MPFR variables: `x`, `y` and the result.
struct Scratch {
    m: Mpfr,
    v: Box<[MpfrT; 3]>,
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Option<Scratch>> = const { std::cell::RefCell::new(None) };
}

impl Scratch {
    /// Runs `f` with this thread's variables (initialised on first use).
    fn with<R>(m: &Mpfr, f: impl FnOnce(&mut Scratch) -> R) -> R {
        SCRATCH.with(|cell| {
            let mut slot = cell.borrow_mut();
            let s = slot.get_or_insert_with(|| Scratch::new(*m));
            f(s)
        })
    }

    fn new(m: Mpfr) -> Scratch {
        let blank = || MpfrT {
            prec: 0,
            sign: 0,
            exp: 0,
            limbs: std::ptr::null_mut(),
        };
        let mut v = Box::new([blank(), blank(), blank()]);
        for x in v.iter_mut() {
            // SAFETY: `x` is a writable mpfr struct that mpfr_init2 initialises; it is
            // cleared exactly once, in `Drop`.
            unsafe { (m.init2)(x, PRECISION) };
        }
        Scratch { m, v }
    }

    fn eval(&mut self, name: &str, a: f64, b: f64) -> f64 {
        let m = self.m;
        let [x, y, r] = &mut *self.v;
        let (x, y, r): (*mut MpfrT, *mut MpfrT, *mut MpfrT) = (x, y, r);
        // SAFETY: the three variables were initialised by mpfr_init2 and stay alive while
        // this runs; MPFR allows the result variable to be an operand.
        unsafe {
            (m.set_d)(x, a, RNDN);
            (m.set_d)(y, b, RNDN);
            let unary = match name {
                "exp" => Some(m.exp),
                "log" => Some(m.log),
                "tanh" => Some(m.tanh),
                "erf" => Some(m.erf),
                "sin" => Some(m.sin),
                "cos" => Some(m.cos),
                "sqrt" => Some(m.sqrt),
                "rsqrt" => Some(m.rec_sqrt),
                _ => None,
            };
            match (unary, name) {
                (Some(f), _) => {
                    f(r, x, RNDN);
                }
                (None, "pow") => {
                    (m.pow)(r, x, y, RNDN);
                }
                (None, "sigmoid") => {
                    // 1 / (1 + e^-x), each step at 128 bits.
                    (m.neg)(r, x, RNDN);
                    (m.exp)(r, r, RNDN);
                    (m.add_ui)(r, r, 1, RNDN);
                    (m.ui_div)(r, 1, r, RNDN);
                }
                _ => return f64::NAN,
            }
            (m.get_d)(r, RNDN)
        }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        for x in self.v.iter_mut() {
            // SAFETY: initialised in `new`, cleared once here.
            unsafe { (self.m.clear)(x) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_are_correctly_rounded_where_that_is_known() {
        let Ok(m) = Mpfr::load() else {
            return;
        };
        assert_eq!(m.eval("exp", 1.0, 0.0), std::f64::consts::E);
        assert_eq!(m.eval("log", 2.0, 0.0), std::f64::consts::LN_2);
        assert_eq!(m.eval("sqrt", 2.0, 0.0), std::f64::consts::SQRT_2);
        assert_eq!(m.eval("pow", 2.0, 10.0), 1024.0);
        assert_eq!(m.eval("sigmoid", 0.0, 0.0), 0.5);
        assert_eq!(m.eval("sin", 0.0, 0.0), 0.0);
        assert!(m.eval("log", -1.0, 0.0).is_nan());
        // Subnormal results round once, correctly.
        assert_eq!(m.eval("exp", -745.0, 0.0), 5e-324);
        assert_eq!(m.eval("sigmoid", -720.0, 0.0), 2.0322308024243e-313_f64);
    }
}
