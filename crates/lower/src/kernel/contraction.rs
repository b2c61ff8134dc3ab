//! The second kernel form: [`ContractionKernel`], a batched matrix product followed by an
//! elementwise epilogue, stored once.
//!
//! Semantics, which [`crate::kernel::run_contraction`] implements and emitters reproduce:
//! - the iteration space is `(b, m, n)` over `batch × m × n`, and `k` runs over `0..k`;
//! - the accumulator of point `(b, m, n)` starts at `+0` and becomes `acc + A(b, m, k) ·
//!   B(b, k, n)` for `k` ascending, with the multiply rounded before the add (the IR's `dot`,
//!   bit for bit). In default mode ([`crate::Options::reassociate`]) an emitter may instead
//!   fuse the multiply and add (FMA) and split the sum into blocks; each result then lies
//!   within `γ_K · Σ_k |A|·|B|` of the exact sum (`γ_K = K·u / (1 − K·u)`, `u` the unit
//!   roundoff), the bound `accy_ir::Op::Dot` documents;
//! - `A(b, m, k)` is element `lhs.map(b, m, k)` of `lhs.binding`, `B(b, k, n)` element
//!   `rhs.map(b, k, n)` of `rhs.binding`: transposed or strided operands are strides, not
//!   copies;
//! - the epilogue nodes are evaluated at each point as a loop kernel's nodes are, with
//!   [`Node::Acc`] reading the finished accumulator and every load ranging over `(b, m, n)`;
//!   the `result` node's value is stored at `store.map(b, m, n)` of `store.binding`;
//! - the workgroups split the space into `tile_m × tile_n` tiles of each batch: workgroup `w`
//!   covers batch `w / (tiles_m · tiles_n)`, rows `tile_m · ((w / tiles_n) mod tiles_m)` and
//!   columns `tile_n · (w mod tiles_n)` ([`ContractionKernel::workgroups`]); no two tiles
//!   write the same element, so they may run in any order at once; `tile_k` is a schedule
//!   hint that does not change the semantics.

use accy_ir::DType;

use super::{IndexMap, KernelBinding, KernelNode, NodeId, Store};

/// One operand of a contraction: a binding read through an affine map over three dims —
/// `(b, m, k)` for the left operand, `(b, k, n)` for the right one — or, for the right
/// operand, from panels ([`Operand::panels`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Operand {
    /// The binding read.
    pub binding: u32,
    /// Element offset as a function of the operand's three dims. For a panelled operand only
    /// the offset and the batch stride (`strides[0]`) count.
    pub map: IndexMap,
    /// `Some(w)`: the right operand is stored as panels `w` columns wide, the layout its
    /// microkernels read without strides: element `(b, k, n)` is at `offset + b · strides[0] +
    /// (n / w) · k_len · w + k · w + n mod w`, and the columns of the last panel beyond `n`
    /// hold zeros. `None`: the map alone gives the offset.
    pub panels: Option<u64>,
}

impl Operand {
    /// An operand read through `map`.
    pub fn strided(binding: u32, map: IndexMap) -> Operand {
        Operand {
            binding,
            map,
            panels: None,
        }
    }

    /// The element offset of `(b, x, y)` (`(b, m, k)` or `(b, k, n)`), `k_len` being the
    /// contracted length (used by panels). Exact for every in-range point of a validated
    /// kernel; saturates instead of overflowing otherwise.
    pub fn offset(&self, point: [u64; 3], k_len: u64) -> i128 {
        let [b, x, y] = point.map(i128::from);
        let stride = |d: usize| i128::from(self.map.strides.get(d).copied().unwrap_or(0));
        let base = i128::from(self.map.offset).saturating_add(b.saturating_mul(stride(0)));
        let rest = match self.panels {
            None => x
                .saturating_mul(stride(1))
                .saturating_add(y.saturating_mul(stride(2))),
            Some(w) => {
                let w = i128::from(w.max(1));
                (y / w)
                    .saturating_mul(i128::from(k_len))
                    .saturating_mul(w)
                    .saturating_add(x * w)
                    .saturating_add(y % w)
            }
        };
        base.saturating_add(rest)
    }
}

/// A batched matrix product with an epilogue; see the module documentation for its exact
/// semantics.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContractionKernel {
    /// A name unique within one compiled program.
    pub name: String,
    /// Number of independent products.
    pub batch: u64,
    /// Rows of the result.
    pub m: u64,
    /// Columns of the result.
    pub n: u64,
    /// Length of the contracted dim.
    pub k: u64,
    /// The accumulator's dtype, which both operands have: f32 or f64.
    pub dtype: DType,
    /// The buffers, by binding number.
    pub bindings: Vec<KernelBinding>,
    /// The left operand, over `(b, m, k)`.
    pub lhs: Operand,
    /// The right operand, over `(b, k, n)`.
    pub rhs: Operand,
    /// The epilogue's nodes over `(b, m, n)`, in evaluation order; [`super::Node::Acc`] reads
    /// the accumulator.
    pub epilogue: Vec<KernelNode>,
    /// The epilogue node whose value is stored.
    pub result: NodeId,
    /// Where results go, over `(b, m, n)`.
    pub store: Store,
    /// Rows of one workgroup's tile (at least 1).
    pub tile_m: u64,
    /// Columns of one workgroup's tile (at least 1).
    pub tile_n: u64,
    /// Length of the blocks the emitted code walks k in (at least 1; `k` or more for one
    /// block), chosen so a row panel's block of the left operand stays in the L1 cache while
    /// the column panels reuse it; the planner gives a target whose code does not block k
    /// (`crate::Target::blocks_k`) `k`. Blocking changes no result: each accumulator still
    /// sums its terms in ascending k.
    pub tile_k: u64,
    /// Whether the emitted code copies each row panel's block of the left operand into the
    /// worker's scratch before the column panels read it (else it reads A in place). The code
    /// copies only where `ContractionKernel::a_copy_fits`; the planner sets it only there,
    /// for more than one row, on targets that ask for it ([`crate::Target::copies_a`]).
    /// Copying changes no result.
    pub copy_a: bool,
}

impl ContractionKernel {
    /// The result space `[batch, m, n]`, the dims every epilogue map ranges over.
    pub fn space(&self) -> [u64; 3] {
        [self.batch, self.m, self.n]
    }

    /// Tiles along m and along n of one batch.
    pub fn tiles(&self) -> (u64, u64) {
        (
            self.m.div_ceil(self.tile_m.max(1)),
            self.n.div_ceil(self.tile_n.max(1)),
        )
    }

    /// Whether a copy of A's row panels can be made and pays for itself with register tiles
    /// `nr` columns wide: A's rows are unit-stride along k, a tile has several column panels
    /// to reuse each copy, and k is 32 or more. The one rule for the planner's
    /// [`ContractionKernel::copy_a`] and the emitters' schedule.
    pub(crate) fn a_copy_fits(&self, nr: u64) -> bool {
        self.lhs.map.strides.get(2) == Some(&1) && self.tile_n >= 2 * nr && self.k >= 32
    }

    /// The number of workgroups of its dispatch: one per tile of each batch (at least 1; a
    /// kernel with nothing to store still runs one workgroup, which does nothing).
    pub fn workgroups(&self) -> u64 {
        let (tm, tn) = self.tiles();
        self.batch.saturating_mul(tm).saturating_mul(tn).max(1)
    }

    /// Whether the epilogue is only the accumulator (a plain product).
    pub fn plain(&self) -> bool {
        matches!(
            self.epilogue.get(self.result as usize).map(|n| &n.node),
            Some(super::Node::Acc)
        )
    }
}
