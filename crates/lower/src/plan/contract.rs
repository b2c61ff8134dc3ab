//! A float `dot` becomes a [`ContractionKernel`]: its axes grouped into batch, rows, columns
//! and the contracted dim, its operands read through affine maps over those groups (a group
//! that no single stride walks is copied into a dense buffer first), the right operand read in
//! place or packed into panels of the target's width, and a tile grid chosen from the work and
//! the caches.
//!
//! Panels: a right operand whose columns are not unit-stride, or that is large and reused by
//! many rows, is packed into panels `nr` columns wide (`[batch][n / nr][k][nr]`, zero-padded
//! past `n`), so the microkernels stream it contiguously and never see a column edge. A small
//! or rarely reused one with unit-stride columns and `n` a multiple of `nr` is read in place,
//! which costs no copy: the "small problems skip packing" case. A weight or constant right
//! operand is packed once, by setup commands into a derived slot (`accy_artifact`'s
//! `SlotRole::Derived`, identified by the source and a layout string), never on a run; so it is
//! packed unless small, whatever the number of rows.
//!
//! Tiles: k is walked in blocks short enough that a microkernel call's part of A and B fit in half
//! the L1 cache, so A's stays there while every column panel reuses it (`tile_k`), on targets whose
//! contraction code blocks k ([`crate::Options::blocks_k`]); k stays one block when A's row panel
//! alone fits half the L1 and B a few L2 caches. When k fits one block, a tile's columns keep its
//! panels' `k × tile_n` block within half the L2 cache, so the rows of the tile reuse it from there
//! — or, on targets that block k, within two L2 caches, so that each row panel of A brought into
//! the L1 serves more column panels; rows are then split until there are enough tiles for the work.
//! When k takes several blocks, the emitter walks them outermost in the tile, keeping the tile's
//! partial sums in a buffer, so a tile's columns are bounded by one block of k instead of all of
//! it, and its rows by its partial sums; the grid is the one with enough tiles whose reads (or
//! copies) of A and reads of B cost least per flop (`k_outer_tile`): large, square-ish tiles, each
//! row panel of A serving many column panels and each block of B many row panels. The grid depends
//! on the program, the target's register tile and the cache sizes in [`crate::Options`] — never on
//! the thread count — so results do not change with the number of threads. The rules in numbers,
//! and the measurements behind them: `contract_tiles.rs`.

use accy_artifact::{Access, DerivedSource, Slot, SlotRole};
use accy_ir::{Axes, DType, Dim, Type, ValueId};

use super::expr::{BufId, ExprId, ExprKind};
use super::fuse::Waiting;
use super::views::{self, PointMap};
use super::{buffers, elements, Buffer, Home, Pending, Planner};
use crate::error::CompileError;
use crate::kernel::{ContractionKernel, IndexMap, KernelBinding, KernelNode, Node, Operand, Store};

/// A dot's operand in the kernel's terms: a buffer and its map over three grouped dims.
struct Grouped {
    buf: BufId,
    map: IndexMap,
}

/// The single stride that walks `axes` (a group, in order) of a tensor of `dims` read with
/// `strides`, as one dim of their product: the innermost axis's stride, if every axis's stride
/// is the next one's times its extent (axes of extent 1 do not matter); `Some(0)` for an empty
/// group.
pub(super) fn group_stride(strides: &[i64], dims: &[Dim], axes: &[usize]) -> Option<i64> {
    let live: Vec<usize> = axes
        .iter()
        .copied()
        .filter(|&a| dims.get(a).copied().unwrap_or(1) > 1)
        .collect();
    let Some(&last) = live.last() else {
        return Some(0);
    };
    for pair in live.windows(2) {
        let (outer, inner) = (pair[0], pair[1]);
        let expected = strides
            .get(inner)?
            .checked_mul(i64::try_from(*dims.get(inner)?).ok()?)?;
        if *strides.get(outer)? != expected {
            return None;
        }
    }
    strides.get(last).copied()
}

fn product(dims: &[Dim], axes: &[usize]) -> Result<u64, CompileError> {
    axes.iter()
        .try_fold(1u64, |acc, &a| {
            acc.checked_mul(dims.get(a).copied().unwrap_or(1))
        })
        .ok_or_else(|| CompileError::unsupported("a dot's extent overflows u64"))
}

impl<'p> Planner<'p> {
    /// `x` as a buffer and a map over three groups of its axes (`groups[i]` lists axes of `x`,
    /// outermost first); a constant is filled into a buffer and a view no single stride per
    /// group walks is copied into a dense one, axes in group order.
    fn grouped(&mut self, x: ValueId, groups: [&[usize]; 3]) -> Result<Grouped, CompileError> {
        let ty = self.ty(x)?.clone();
        let e = self.buffered(x)?;
        let view = match &self.exprs.get(e)?.kind {
            ExprKind::Load { binding, map } => Some((*binding, map.clone())),
            _ => None,
        };
        if let Some((buf, map)) = view {
            let strides: Option<Vec<i64>> = groups
                .iter()
                .map(|g| group_stride(&map.strides, &ty.dims, g))
                .collect();
            if let Some(strides) = strides {
                return Ok(Grouped {
                    buf,
                    map: IndexMap::new(map.offset, &strides),
                });
            }
        }
        // Copy into a dense buffer in group order: [g0 axes..., g1 axes..., g2 axes...].
        let order: Vec<usize> = groups.iter().flat_map(|g| g.iter().copied()).collect();
        let dims: Vec<Dim> = order
            .iter()
            .map(|&a| ty.dims.get(a).copied().unwrap_or(1))
            .collect();
        let mut srcs = vec![(None, 0i64); ty.dims.len()];
        for (p, &a) in order.iter().enumerate() {
            if let Some(s) = srcs.get_mut(a) {
                *s = (Some(p), 0);
            }
        }
        let root = self.exprs.remap(e, &PointMap::shifted(&srcs, &dims))?;
        let buf = self.add_buffer(Buffer {
            dtype: ty.dtype,
            elements: elements(&ty)?,
            home: Home::Scratch,
        })?;
        self.store_all(&dims, root, buf)?;
        let dense = views::row_major(&dims, 0)?;
        let mut at = 0;
        let mut strides = [0i64; 3];
        for (g, group) in groups.iter().enumerate() {
            at += group.len();
            strides[g] = group_stride(
                &dense.strides,
                &dims,
                &(at - group.len()..at).collect::<Vec<_>>(),
            )
            .ok_or_else(|| CompileError::internal("a dense copy is not grouped"))?;
        }
        Ok(Grouped {
            buf,
            map: IndexMap::new(0, &strides),
        })
    }

    /// Elements of `rhs` (over `(b, k, n)`) packed into panels `nr` columns wide.
    fn panel_elements([batch, k, n]: [u64; 3], nr: u64) -> Result<u64, CompileError> {
        n.div_ceil(nr)
            .checked_mul(k)
            .and_then(|v| v.checked_mul(nr))
            .and_then(|v| v.checked_mul(batch))
            .ok_or_else(|| CompileError::unsupported("a packed operand overflows u64"))
    }

    /// `rhs` (over `(b, k, n)`) packed into panels `nr` columns wide: once, at setup, into a
    /// derived slot when `rhs` is a weight or a constant (shared by every dot packing it the
    /// same way), else on every run into a new scratch buffer. Returns the buffer.
    fn panels(
        &mut self,
        rhs: &Grouped,
        dtype: DType,
        shape: [u64; 3],
        nr: u64,
    ) -> Result<BufId, CompileError> {
        let elements = Self::panel_elements(shape, nr)?;
        let source = match self.bufs.get(rhs.buf as usize).map(|b| &b.home) {
            Some(Home::Slot(slot)) => match self.plan.slot(*slot).map(|s| &s.role) {
                Some(SlotRole::Weight(name)) => Some(DerivedSource::Weight(name.clone())),
                Some(SlotRole::Constant { .. }) => Some(DerivedSource::Constant(*slot)),
                _ => None,
            },
            _ => None,
        };
        let Some(source) = source else {
            let buf = self.add_buffer(Buffer {
                dtype,
                elements,
                home: Home::Scratch,
            })?;
            self.pack(rhs, dtype, shape, nr, buf)?;
            return Ok(buf);
        };
        let [batch, k, n] = shape;
        let [sb, sk, sn] = [0, 1, 2].map(|d| rhs.map.strides.get(d).copied().unwrap_or(0));
        // Everything that decides the bytes: equal layouts of one source are equal bytes.
        let layout = format!(
            "{dtype} panels {nr} wide of [batch {batch}, k {k}, n {n}] read at {} strides \
             [{sb}, {sk}, {sn}]",
            rhs.map.offset
        );
        if let Some(&buf) = self.derived.get(&(rhs.buf, layout.clone())) {
            return Ok(buf);
        }
        let bytes = elements
            .checked_mul(dtype.size_bytes())
            .ok_or_else(|| CompileError::unsupported("a packed operand overflows u64"))?;
        let slot = self
            .plan
            .add(Slot {
                role: SlotRole::Derived {
                    source,
                    layout: layout.clone(),
                },
                byte_size: bytes,
                alignment: buffers::SCRATCH_ALIGNMENT,
                ty: None,
            })
            .ok_or_else(|| CompileError::unsupported("too many slots"))?;
        let buf = self.add_buffer(Buffer {
            dtype,
            elements,
            home: Home::Slot(slot),
        })?;
        self.in_setup = true;
        let packed = self.pack(rhs, dtype, shape, nr, buf);
        self.in_setup = false;
        packed?;
        self.derived.insert((rhs.buf, layout), buf);
        Ok(buf)
    }

    /// Commands copying `rhs` (over `(b, k, n)`) into panels `nr` columns wide in `buf`
    /// (`[batch][n / nr][k][nr]`, zero past `n`).
    fn pack(
        &mut self,
        rhs: &Grouped,
        dtype: DType,
        [batch, k, n]: [u64; 3],
        nr: u64,
        buf: BufId,
    ) -> Result<(), CompileError> {
        let overflow = || CompileError::unsupported("a packed operand overflows u64");
        let per_batch = Self::panel_elements([1, k, n], nr)?;
        let full = n / nr;
        let to_i64 = |v: u64| i64::try_from(v).map_err(|_| overflow());
        let [sb, sk, sn] = [0, 1, 2].map(|d| rhs.map.strides.get(d).copied().unwrap_or(0));
        if n % nr != 0 {
            // Zeros past the last column, so microkernels may compute whole panels.
            self.push(Pending::Fill {
                buf,
                pattern: 0,
                width: 4,
            })?;
        }
        let (pb, pk, nr_i) = (to_i64(per_batch)?, to_i64(k * nr)?, to_i64(nr)?);
        if full > 0 {
            // Walk B's rows in order when its columns are contiguous (one pass over each row,
            // scattering its panels' pieces), else panel by panel.
            let (dims, load, store) = if sn == 1 {
                (
                    [batch, k, full, nr],
                    [sb, sk, sn * nr_i, sn],
                    [pb, nr_i, pk, 1],
                )
            } else {
                (
                    [batch, full, k, nr],
                    [sb, sn * nr_i, sk, sn],
                    [pb, pk, nr_i, 1],
                )
            };
            let root = self.exprs.push(
                ExprKind::Load {
                    binding: rhs.buf,
                    map: IndexMap::new(rhs.map.offset, &load),
                },
                dtype,
            )?;
            self.kernel(&dims, 4, root, None, buf, IndexMap::new(0, &store))?;
        }
        if n % nr != 0 {
            let first = to_i64(full * nr)?;
            let load = IndexMap::new(rhs.map.offset + sn * first, &[sb, sk, sn]);
            let root = self.exprs.push(
                ExprKind::Load {
                    binding: rhs.buf,
                    map: load,
                },
                dtype,
            )?;
            let store = IndexMap::new(to_i64(full)? * pk, &[pb, nr_i, 1]);
            self.kernel(&[batch, k, n % nr], 3, root, None, buf, store)?;
        }
        Ok(())
    }

    /// `dot` of f32 or f64 operands as a contraction kernel; returns the result's view.
    pub(super) fn contraction(
        &mut self,
        v: ValueId,
        lhs: (ValueId, &Axes, &Axes),
        rhs: (ValueId, &Axes, &Axes),
    ) -> Result<ExprId, CompileError> {
        let ty = self.ty(v)?.clone();
        let dtype = ty.dtype;
        let (l_dims, r_dims) = (self.dims(lhs.0)?.to_vec(), self.dims(rhs.0)?.to_vec());
        let free = |rank: usize, batch: &Axes, contract: &Axes| -> Vec<usize> {
            (0..rank)
                .filter(|&a| !batch.contains(&(a as u32)) && !contract.contains(&(a as u32)))
                .collect()
        };
        let axes = |a: &Axes| a.iter().map(|&x| x as usize).collect::<Vec<usize>>();
        let (lb, lc, rb, rc) = (axes(lhs.1), axes(lhs.2), axes(rhs.1), axes(rhs.2));
        let (lf, rf) = (
            free(l_dims.len(), lhs.1, lhs.2),
            free(r_dims.len(), rhs.1, rhs.2),
        );
        let batch = product(&l_dims, &lb)?;
        let m = product(&l_dims, &lf)?;
        let k = product(&l_dims, &lc)?;
        let n = product(&r_dims, &rf)?;
        if lhs.0 == rhs.0 {
            // One value as both operands is grouped (copied, packed or read in place) once
            // per operand, but counted as one use: a waiting product fused into the first
            // operand's kernel would leave nothing stored for the second. As for a value
            // concatenated with itself, waiting products are emitted first.
            self.flush_all()?;
        }
        let a = self.grouped(lhs.0, [&lb, &lf, &lc])?;
        let b = self.grouped(rhs.0, [&rb, &rc, &rf])?;
        let (mr, nr) = self.options.micro_tile(dtype);
        let dst = self.destination(v)?;
        let size = dtype.size_bytes();
        let tile_k = self.tile_k(dtype, [m, n, k], (mr, nr));
        let (tile_m, tile_n) = if tile_k < k {
            self.k_outer_tile(dtype, [batch, m, n, k], tile_k, (mr, nr))
        } else {
            self.tile(dtype, [batch, m, n, k], (mr, nr))
        };
        // Read B in place when its columns are unit-stride, whole panels, and it is small or
        // reused by few rows; else pack it.
        let unit = b.map.strides.get(2) == Some(&1) || n <= 1;
        let bytes = batch
            .saturating_mul(k)
            .saturating_mul(n)
            .saturating_mul(size);
        // A weight or constant is packed once, at setup, so it is worth packing whenever it
        // is not small.
        let prepackable = self.bufs.get(b.buf as usize).is_some_and(|x| {
            matches!(x.home, Home::Slot(s) if matches!(
                self.plan.slot(s).map(|s| &s.role),
                Some(SlotRole::Weight(_) | SlotRole::Constant { .. })
            ))
        });
        let small = bytes <= 64 << 10;
        let in_place = unit && n % nr == 0 && (small || (m <= 2 * mr && !prepackable));
        let (rhs_buf, rhs_op) = if in_place {
            (b.buf, None)
        } else {
            let panels = self.panels(&b, dtype, [batch, k, n], nr)?;
            let per_batch = n.div_ceil(nr) * k * nr;
            let bs = i64::try_from(per_batch)
                .map_err(|_| CompileError::unsupported("a packed operand exceeds i64"))?;
            (
                panels,
                Some(IndexMap::new(0, &[if batch > 1 { bs } else { 0 }, 0, 0])),
            )
        };
        let mut reads = vec![a.buf];
        if !reads.contains(&rhs_buf) {
            reads.push(rhs_buf);
        }
        let binding_of = |buf: BufId| reads.iter().position(|&r| r == buf).unwrap_or(0) as u32;
        let mut bindings: Vec<KernelBinding> = Vec::new();
        for &buf in &reads {
            let info = self.buffer(buf)?;
            bindings.push(KernelBinding {
                dtype: info.dtype,
                elements: info.elements,
                access: Access::Read,
            });
        }
        let out = self.buffer(dst)?;
        bindings.push(KernelBinding {
            dtype: out.dtype,
            elements: out.elements,
            access: Access::Write,
        });
        let to_i64 = |v: u64| {
            i64::try_from(v).map_err(|_| CompileError::unsupported("a dot's extent exceeds i64"))
        };
        let lhs_op = Operand::strided(binding_of(a.buf), a.map);
        let rhs_op = match rhs_op {
            Some(map) => Operand {
                binding: binding_of(rhs_buf),
                map,
                panels: Some(nr),
            },
            None => Operand::strided(binding_of(b.buf), b.map),
        };
        let mut kernel = ContractionKernel {
            name: String::new(),
            batch,
            m,
            n,
            k,
            dtype,
            lhs: lhs_op,
            rhs: rhs_op,
            epilogue: vec![KernelNode {
                node: Node::Acc,
                dtype,
            }],
            result: 0,
            store: Store {
                binding: bindings.len() as u32 - 1,
                map: IndexMap::new(0, &[to_i64(m * n)?, to_i64(n)?, 1]),
            },
            bindings,
            tile_m,
            tile_n,
            tile_k,
            copy_a: false,
        };
        // Only where the emitters make the copy, so that the kernel says what its code does;
        // and not for one row, which shares cache sets with no other.
        kernel.copy_a = self.options.copies_a && m > 1 && kernel.a_copy_fits(nr);
        if batch * m * n > 0 {
            // Emitted when something reads the result: it may fuse as the epilogue.
            self.waiting.push(Waiting {
                kernel,
                reads,
                dst,
                value: v,
                dims: ty.dims.to_vec(),
                groups: (lb.len(), lf.len()),
                sources: self.exprs.current.into_iter().collect(),
            });
        }
        self.view_of(dst, &Type::new(dtype, &ty.dims))
    }
}
