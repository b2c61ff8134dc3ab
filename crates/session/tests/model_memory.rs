//! Memory measured from the OS: one model with plans for batch 1, 8, 37 and 64, 4 inference
//! slots each, grows the process's resident memory by at most its weights (given and packed)
//! × 1.1 plus the scratch the plans report plus 1 MiB for the runtime's own pages (the pool's
//! threads' stacks, the plans' code and tables); adding plans does not change `weight_bytes`.
//! A second copy of the weights (4.4 MB given, as much packed) would exceed it. Without the
//! 1 MiB, growth measured 14.16-14.30 MB against a bound of 14.27 MB: a flaky test.
//! (Alone in its test binary, so no other test's memory is counted.)

mod common;

use accy_session::{Model, ModelContext, SessionOptions, Weights};
use common::{mlp, mlp_weights, values};

/// Resident bytes of this process, from `/proc/self/statm` (pages × `page` bytes).
fn resident(page: u64) -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("read /proc/self/statm");
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .expect("statm has a resident field");
    pages * page
}

/// The page size `statm` counts in, as `getconf PAGESIZE` reports it (this crate has no
/// libc dependency to ask `sysconf` directly).
fn page_size() -> u64 {
    let out = std::process::Command::new("getconf")
        .arg("PAGESIZE")
        .output()
        .expect("getconf PAGESIZE");
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .expect("page size")
}

#[test]
#[allow(
    clippy::print_stdout,
    reason = "the figures are the report of this test"
)]
fn resident_memory_grows_by_the_weights_once_plus_the_reported_scratch() {
    let (i, h, o) = (1024, 1024, 64);
    let context = ModelContext::with_options(SessionOptions::default().with_threads(2)).unwrap();
    let list = mlp_weights(i, h, o);
    let named: Vec<(&str, &[u8])> = list
        .iter()
        .map(|(n, b)| (n.as_str(), b.as_slice()))
        .collect();
    // The source bytes stay alive to the end, so freeing them cannot hide growth.
    let page = page_size();
    let before = resident(page);

    let weights = Weights::new(&named).unwrap();
    let model = Model::with_context(&context, &mlp(8, i, h, o), weights).unwrap();
    let weight_bytes = model.weight_bytes();
    let mut plans = Vec::new();
    for rows in [1, 8, 37, 64] {
        let program = mlp(rows, i, h, o);
        let plan = model.prepare(&program, 4).unwrap();
        assert_eq!(
            model.weight_bytes(),
            weight_bytes,
            "batch {rows} added weights"
        );
        let x = values((rows * i) as usize, rows as usize);
        let mut y = vec![0.0f32; (rows * o) as usize];
        plan.run_typed(&[&x], &mut [&mut y]).unwrap();
        plans.push(plan);
    }
    let grown = resident(page).saturating_sub(before);
    let scratch: u64 = plans.iter().map(|p| p.scratch_bytes() as u64).sum();
    let given = model.definition().weights().given_bytes();
    let runtime = 1 << 20;
    let bound = weight_bytes + weight_bytes / 10 + scratch + runtime;
    println!(
        "weights {given} given + {} packed = {weight_bytes} bytes; scratch of 4 plans x 4 \
         slots {scratch} bytes (per slot: {}); resident growth {grown} bytes; bound {bound}",
        weight_bytes - given,
        plans
            .iter()
            .map(|p| p.slot_bytes().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    assert!(
        grown <= bound,
        "resident memory grew {grown} bytes, more than weights {weight_bytes} × 1.1 + scratch \
         {scratch} + {runtime} for the runtime"
    );
    drop(list);
}
