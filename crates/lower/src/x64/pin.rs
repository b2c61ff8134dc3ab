//! Loop state in registers for the vector loops.
//!
//! Scalar code keeps every counter and map offset in its frame slot (`emit/frame.rs`): simple,
//! and nothing needs saving around import calls. In a vector loop that costs a store-forwarded
//! read-modify-write of each slot per iteration, a dependency chain of several cycles that
//! bounded memory-bound kernels at well under a cycle per element. A vector loop's body calls
//! nothing, so while it runs, the innermost counter and the offsets of the maps that move
//! along its dim live in caller-saved registers ([`PIN_REGS`]), loaded from their slots
//! before the loop and written back after it, or dropped after a run of whole vectors known
//! at compile time, whose slots already hold what the restore after the loop would give back.

#[allow(
    unused_imports,
    reason = "dynasm! expansions need both traits in scope"
)]
use dynasmrt::{DynasmApi, DynasmLabelApi};

use super::asm::{add_slot, fits_i32, x64};
use super::kernel::Emitter;

/// The registers loop state may occupy: r8–r11, rsi, rdi (no vector code uses them).
const PIN_REGS: [u8; 6] = [8, 9, 10, 11, 6, 7];

impl Emitter<'_> {
    /// Moves dim `d`'s counter and the offsets of the maps that move along `d` into registers
    /// (as many as there are; the rest stay in their slots). Only around code that calls
    /// nothing; [`Emitter::unpin`] puts them back, or [`Emitter::drop_pins`] forgets them.
    /// `extra` are further slots the loop steps (tile column pointers, see `tile.rs`).
    pub(crate) fn pin_loop_state(&mut self, d: usize, extra: &[i32]) {
        let mut slots = vec![self.lay.counter[d]];
        slots.extend(self.moving_slots(d));
        slots.dedup();
        slots.extend_from_slice(extra);
        for (slot, reg) in slots.into_iter().zip(PIN_REGS) {
            x64!(self.ops; mov Rq(reg), QWORD [rsp + slot]);
            self.pinned.push((slot, reg));
        }
    }

    /// Whether the run of dim `d` is whole vectors of `lanes` points known at compile time (an
    /// inner dim: dim 0's run is the workgroup's share) and its moving state is all pinned:
    /// then it leaves no tail, and its slots still hold the run's start after the loop, which
    /// is what the restore would give back, so the loop may drop its pins instead.
    pub(crate) fn whole_pinned_run(&self, d: usize, lanes: i64) -> bool {
        d > 0 && self.k.dims[d].is_multiple_of(lanes as u64) && self.pins_all_moving(d)
    }

    /// Whether every map offset that moves along dim `d`, and dim `d`'s counter, is pinned:
    /// then a loop over `d` changes no slot while it runs.
    pub(crate) fn pins_all_moving(&self, d: usize) -> bool {
        let counter = self.lay.counter[d];
        self.pinned_reg(counter).is_some()
            && self
                .moving_slots(d)
                .into_iter()
                .all(|slot| self.pinned_reg(slot).is_some())
    }

    /// The slots of the map offsets that move along dim `d`.
    fn moving_slots(&self, d: usize) -> Vec<i32> {
        self.maps()
            .iter()
            .filter(|m| self.stride(m, d) != 0)
            .map(|m| m.slot)
            .collect()
    }

    /// Forgets the pinned registers without writing them back: for a loop that leaves its
    /// slots as they were before it ([`Emitter::pins_all_moving`] and a restore to come).
    pub(crate) fn drop_pins(&mut self) {
        self.pinned.clear();
    }

    /// Writes the pinned registers back to their slots.
    pub(crate) fn unpin(&mut self) {
        for (slot, reg) in std::mem::take(&mut self.pinned) {
            x64!(self.ops; mov QWORD [rsp + slot], Rq(reg));
        }
    }

    pub(crate) fn pinned_reg(&self, slot: i32) -> Option<u8> {
        self.pinned
            .iter()
            .find(|&&(s, _)| s == slot)
            .map(|&(_, r)| r)
    }

    /// `rax =` the frame slot's value (from its register when pinned).
    pub(crate) fn slot_to_rax(&mut self, slot: i32) {
        match self.pinned_reg(slot) {
            Some(reg) => x64!(self.ops; mov rax, Rq(reg)),
            None => x64!(self.ops; mov rax, QWORD [rsp + slot]),
        }
    }

    /// The frame slot's value `+= value` (in its register when pinned; clobbers rax).
    pub(crate) fn add_to_slot(&mut self, slot: i32, value: i64) {
        if value == 0 {
            return;
        }
        match (self.pinned_reg(slot), fits_i32(value)) {
            (Some(reg), Some(v)) => x64!(self.ops; add Rq(reg), v),
            (Some(reg), None) => x64!(self.ops; mov rax, QWORD value ; add Rq(reg), rax),
            (None, _) => add_slot(self.ops, slot, value),
        }
    }
}
