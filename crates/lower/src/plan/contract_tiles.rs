//! The tiles of a contraction kernel: its block of k and its tile grid, from the work, the
//! target's register tile and the cache sizes in [`crate::Options`] (the rules: `contract.rs`'s
//! module documentation).

use accy_ir::DType;

use super::Planner;

/// The work one contraction tile should hold, in flops: tens of microseconds on one core.
pub(crate) const TILE_FLOPS: u64 = 1 << 21;

/// The most workgroups one contraction dispatch gets.
pub(crate) const MAX_TILES: u64 = 64;

/// How many L2 caches' worth of one batch's right operand a tile of a contraction whose k is
/// one block may read, on targets that block k (see `tile`).
pub(crate) const ONE_BLOCK_TILE_B_L2S: u64 = 2;

/// The fewest workgroups a contraction whose k is blocked is split into when its work allows
/// ([`TILE_FLOPS`] each): enough to share among a few threads with a thread that loses its
/// core holding up one tile of many; its tiles are otherwise as large as the caches allow.
/// Also the most tiles a one-block contraction's wide tiles keep of the narrow grid's (`tile`).
pub(crate) const K_OUTER_MIN_TILES: u64 = 16;

/// How many L2 caches' worth one batch's right operand may take for a contraction whose row
/// panel of A fits half the L1 to keep k in one block (see `tile_k`).
pub(crate) const ONE_BLOCK_B_L2S: u64 = 4;

impl Planner<'_> {
    /// The k block of a contraction: long enough to amortise reloading the accumulators, short
    /// enough that what one microkernel call touches — its block of A (`mr × tile_k`, reused
    /// by the next column panel) and of B (`tile_k × nr`, streamed) — takes half the L1 cache,
    /// so streaming B does not evict A; `k` itself when that fits, else `k` split into equal
    /// blocks (multiples of 8). A target whose contraction code does not block k
    /// ([`crate::Options::blocks_k`]) gets `k`.
    ///
    /// `k` is one block too when A's row panel alone (`mr × k`, or `m × k` for a product of fewer
    /// rows: an MLP layer run on one input) takes at most half the L1 and one batch's B (`k × n`)
    /// at most [`ONE_BLOCK_B_L2S`] L2 caches: the panel still stays in the L1 (B's panels stream
    /// past it, each read once per call), and a block of k as long as k saves the partial sums'
    /// round trips through the tile buffer, while the row tiles that re-read B (the grid of one
    /// block is split along m) find it in the caches. Paired runs on a Zen 3 core (AVX2, 32 KiB L1,
    /// 512 KiB L2), one k block against the blocks the first rule gives (128 at k = 256, 176 at
    /// k = 512): 256³ 2.7%, 512³ 1.8%, 64×512×512 7.3%, 1024×512×1024 2.1% and 2048×512×512 4.2%
    /// faster; without a bound on B, 512×256×4096 (B 4 MiB) no different and 128×512×3072 (B 6 MiB,
    /// re-read by three row tiles where blocks of k had one) 4.5% slower — the bound keeps both
    /// blocked. The caches are a logical CPU's share (`Blocking`), so with SMT the rule applies up
    /// to half the k.
    ///
    /// Counting one input's one row rather than `mr` keeps examples/mlp.accy's first layer (k
    /// 784; its k = 512 layers fit either way on a Zen 3 core) in one block: no pass over k to
    /// emit per block (the program's code 10422 → 9038 bytes, a warm compile about 4% faster),
    /// and its tiles are the one-block rule's narrower ones, so two threads share the layer more
    /// evenly (paired runs, 2 threads: latency p50 26.4-29.6 → 22.2-26.6 µs; 1 thread no
    /// different).
    pub(super) fn tile_k(&self, dtype: DType, [m, n, k]: [u64; 3], (mr, nr): (u64, u64)) -> u64 {
        if !self.options.blocks_k {
            return k.max(1);
        }
        let size = dtype.size_bytes();
        let half_l1 = self.options.caches.l1d / 2;
        let fit = (half_l1 / ((mr + nr).max(1) * size)).max(64);
        let b_bytes = k.saturating_mul(n).saturating_mul(size);
        let panel_fits = mr.min(m).max(1).saturating_mul(k).saturating_mul(size) <= half_l1;
        let b_fits = b_bytes <= self.options.caches.l2.saturating_mul(ONE_BLOCK_B_L2S);
        if k <= fit || (panel_fits && b_fits) {
            return k.max(1);
        }
        let blocks = k.div_ceil(fit);
        k.div_ceil(blocks).next_multiple_of(8)
    }

    /// The tile of a contraction of `[batch, m, n]` whose k is walked in blocks of `tile_k`,
    /// outermost in the tile (see the module documentation). A block of B's panels
    /// (`tile_k × tile_n`) takes at most a quarter of the L2 cache and the tile's partial sums
    /// (`tile_m × tile_n`, the emitter's tile buffer) at most half, so both stay there while the
    /// tile's row panels reuse the one and every block of k the other. (Partial sums up to a
    /// quarter, as before, gave 174×176 tiles at 1024³ and 2048³, up to half 342×176, whose blocks
    /// of B serve twice the row panels: paired runs on a Zen 3 core, 1 thread, 1024³ 1.0-2.6% and
    /// 2048³ 3.9% faster (two runs each); three eighths 1.2% slower than half at 1024³, three
    /// quarters no different; 512×1024×512 no different.) Among the tiles that allow, of equal
    /// shares of the row and column panels, the grid has at least [`K_OUTER_MIN_TILES`] tiles where
    /// the work asks for them ([`TILE_FLOPS`] each), and then the least traffic per flop: every
    /// tile reads its rows of A (`tile_m × k`; counted twice on every target, as when the rule was
    /// measured with A copied: read, then written to the worker's scratch) and its columns of B
    /// (`k × tile_n`) into the L2, so the cost is `(2 · tile_m + w · tile_n) / (tile_m · tile_n)`,
    /// `w` 1, or ¼ while all of B fits half the L2 (B read again by every row tile then costs
    /// little): square-ish tiles, a little wider than tall. (Splitting the rows first, as this did
    /// before, gave 128×768×3072 tiles of 28×768 whose B was read from memory by five row tiles,
    /// each reusing it twice.)
    pub(super) fn k_outer_tile(
        &self,
        dtype: DType,
        [batch, m, n, k]: [u64; 4],
        tile_k: u64,
        (mr, nr): (u64, u64),
    ) -> (u64, u64) {
        let size = dtype.size_bytes();
        let quarter_l2 = self.options.caches.l2 / 4;
        let (mr, nr) = (mr.max(1), nr.max(1));
        let m_panels = m.div_ceil(mr).max(1);
        let n_panels = n.div_ceil(nr).max(1);
        let q_most = (quarter_l2 / (tile_k.max(1) * size) / nr).clamp(1, n_panels);
        let want = tiles_wanted([batch, m, n, k], K_OUTER_MIN_TILES);
        let batch = batch.max(1);
        // Partial sums of more than one row panel stay within half the L2.
        let half_l2 = self.options.caches.l2 / 2;
        let row_shares = shares(m_panels, (half_l2 / (mr * nr * size).max(1)).max(1));
        // B read by every row tile costs little while all of it stays in the L2.
        let b_bytes = batch
            .saturating_mul(k)
            .saturating_mul(n)
            .saturating_mul(size);
        let b_weight = if b_bytes <= half_l2 { 0.25 } else { 1.0 };
        // (enough tiles, tiles when not enough, cost) ordered best first.
        let mut best = (mr, nr);
        let mut best_key: Option<(bool, u64, f64)> = None;
        for q in shares(n_panels, q_most) {
            for &p in &row_shares {
                let (rows, cols) = (p.saturating_mul(mr), q * nr);
                if p > 1 && rows.saturating_mul(cols).saturating_mul(size) > half_l2 {
                    continue;
                }
                let tiles = batch
                    .saturating_mul(m_panels.div_ceil(p))
                    .saturating_mul(n_panels.div_ceil(q));
                let cost = (2.0 * rows as f64 + b_weight * cols as f64) / (rows * cols) as f64;
                let enough = tiles >= want;
                let key = (enough, if enough { 0 } else { tiles }, cost);
                let better = best_key.is_none_or(|b| {
                    (key.0, key.1) > (b.0, b.1) || ((key.0, key.1) == (b.0, b.1) && key.2 < b.2)
                });
                if better {
                    best_key = Some(key);
                    best = (rows, cols);
                }
            }
        }
        best
    }

    /// The tile of a contraction of `[batch, m, n, k]` for a `mr × nr` register tile whose k is one
    /// block (see the module documentation): its columns keep one batch's block of B (`k × tile_n`)
    /// within half the L2, or, on targets that block k, within [`ONE_BLOCK_TILE_B_L2S`] L2 caches;
    /// its rows are then split until the grid has the tiles the work asks for ([`TILE_FLOPS`] each,
    /// at most [`MAX_TILES`]). The wider tile lets each row panel of A brought into the L1 (copied,
    /// when these runs were made), from rows far apart, serve more column panels, while B's
    /// contiguous panels stream from the L3 for every row panel: paired runs on a Zen 3 core (AVX2,
    /// 512 KiB L2), 1 thread, against blocks within half the L2: 512³ 0.5-5.2% (three runs),
    /// 1024×512×1024 3.5-4.6% (two), 2048×512×512 0.3-1.7%, 64×512×512 0.2-0.9% faster, 256³ and
    /// 512×256×4096 no different; up to twice as wide again, no different. The wide columns stop
    /// where a row panel's partial sums (`mr × tile_n`, the buffer T an epilogue reads) would
    /// outgrow half the L1, which only a short k reaches (1024×64×4096 would otherwise get tiles
    /// 2048 wide; it keeps the half-L2 rule's 1024). A wide grid never has fewer tiles than the
    /// narrow one, up to [`K_OUTER_MIN_TILES`]: a small product (examples/mlp.accy's 1×512×512)
    /// keeps the split among threads that the narrow tiles gave it (with one wide tile its 2-thread
    /// latency went from 30 to 39 µs).
    pub(super) fn tile(
        &self,
        dtype: DType,
        [batch, m, n, k]: [u64; 4],
        (mr, nr): (u64, u64),
    ) -> (u64, u64) {
        let size = dtype.size_bytes();
        let l2 = self.options.caches.l2;
        let n_max = n.div_ceil(nr).max(1) * nr;
        let want = tiles_wanted([batch, m, n, k], MAX_TILES);
        let m_panels = m.div_ceil(mr).max(1);
        let grid = |b_bytes: u64| {
            let tile_n = (b_bytes / (k.max(1) * size) / nr * nr).clamp(nr, n_max);
            let tiles_n = n.div_ceil(tile_n).max(1);
            let tiles_m = want.div_ceil(batch.max(1) * tiles_n).clamp(1, m_panels);
            let tile_m = m.div_ceil(tiles_m).div_ceil(mr).max(1) * mr;
            // Too few tiles yet (few rows): split the columns further.
            (tile_m, narrowed([batch, m, n], tile_m, tile_n, nr, want))
        };
        let count = |(tile_m, tile_n): (u64, u64)| {
            batch.max(1) * m.div_ceil(tile_m.max(1)).max(1) * n.div_ceil(tile_n.max(1)).max(1)
        };
        let narrow = grid(l2 / 2);
        if !self.options.blocks_k {
            return narrow;
        }
        // The wide rule never widens a row panel's partial sums (`mr × tile_n`, the buffer an
        // epilogue reads) past half the L1, nor narrows the tile below the half-L2 rule's.
        let t_cols = self.options.caches.l1d / 2 / (mr * size).max(1);
        let b_bytes = t_cols
            .saturating_mul(k.max(1) * size)
            .clamp(l2 / 2, l2.saturating_mul(ONE_BLOCK_TILE_B_L2S).max(l2 / 2));
        let (tile_m, tile_n) = grid(b_bytes);
        let floor = count(narrow).min(K_OUTER_MIN_TILES);
        (tile_m, narrowed([batch, m, n], tile_m, tile_n, nr, floor))
    }
}

/// The distinct panel counts of a tile, at most `most`, when `panels` panels are shared
/// equally among 1, 2, … tiles (`panels.div_ceil(tiles)`), largest first: at most `most` and
/// about `2·√panels` of them.
pub(super) fn shares(panels: u64, most: u64) -> Vec<u64> {
    let mut out = Vec::new();
    let mut tiles = panels.div_ceil(most.max(1)).max(1);
    while tiles <= panels {
        let share = panels.div_ceil(tiles);
        out.push(share);
        if share == 1 {
            break;
        }
        // The fewest tiles whose share is smaller.
        tiles = panels.div_ceil(share - 1);
    }
    out
}

/// How many tiles the work of a contraction of `[batch, m, n, k]` asks for: [`TILE_FLOPS`]
/// each, from 1 to `most`.
fn tiles_wanted([batch, m, n, k]: [u64; 4], most: u64) -> u64 {
    let flops = 2u64
        .saturating_mul(batch)
        .saturating_mul(m)
        .saturating_mul(n)
        .saturating_mul(k);
    (flops / TILE_FLOPS).clamp(1, most)
}

/// `tile_n`, or narrower (a multiple of `nr`) when `tile_m`-row tiles of `[batch, m, n]` are
/// fewer than `want`: split the columns until they are not.
fn narrowed([batch, m, n]: [u64; 3], tile_m: u64, tile_n: u64, nr: u64, want: u64) -> u64 {
    let row_tiles = batch.max(1) * m.div_ceil(tile_m.max(1)).max(1);
    if row_tiles * n.div_ceil(tile_n.max(1)).max(1) >= want {
        return tile_n;
    }
    let n_max = n.div_ceil(nr).max(1) * nr;
    let cols = want.div_ceil(row_tiles);
    (n.div_ceil(cols).div_ceil(nr) * nr).clamp(nr, n_max)
}
