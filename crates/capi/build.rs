//! Tells the tests which target they were built for, so `tests/c_abi.rs` can ask the `cc`
//! crate for the C compiler of that target.

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    if let Ok(target) = std::env::var("TARGET") {
        println!("cargo::rustc-env=ACCY_CAPI_TARGET={target}");
    }
}
