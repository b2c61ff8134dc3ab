//! The expansions on the kernel interpreter: special values, and agreement with the reference
//! functions on a sweep (the bounds themselves are asserted on generated code in
//! `accy-accuracy`, and measured exhaustively by `cargo xtask ulp`).
