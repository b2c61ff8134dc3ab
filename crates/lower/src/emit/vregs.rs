//! Where the vector values of a vectorized inner loop live, on every ISA: a linear scan over
//! the values' live ranges hands out the ISA's allocatable vector registers, and values that
//! find none live in the frame's vector slots ([`super::frame::Layout::vec_slot`]).
//!
//! Varying values (those computed at every vector of points) are placed first, so they never
//! spill while a loop-invariant value holds a register: a spilled varying value costs a store
//! and a load per iteration, a spilled uniform one (evaluated before the loop and broadcast)
//! only a load per use. Uniform values then take the registers no varying value ever needs,
//! most-used first, for the whole loop.

use crate::kernel::{KernelNode, NodeId};

/// Where a vector value lives while the inner loop runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Home {
    /// Not a vector value.
    None,
    /// In this vector register.
    Reg(u8),
    /// In this frame vector slot.
    Slot(usize),
}

/// The homes of a kernel's vector values: per node, and the number of vector slots used.
///
/// `needs_vec[i]` marks node `i` as a vector value, `uniform[i]` as one that holds for the
/// whole loop; the values in `results` (the result, and a kept value's node, see
/// [`crate::kernel::Keep`]) stay live to the end; `regs` lists the allocatable registers in the
/// order to hand them out.
pub(crate) fn allocate(
    nodes: &[KernelNode],
    results: &[NodeId],
    uniform: &[bool],
    needs_vec: &[bool],
    regs: &[u8],
) -> (Vec<Home>, usize) {
    allocate_except(nodes, results, uniform, needs_vec, &[], &[], regs)
}

/// [`allocate`], except that the varying values marked in `no_home` get no home (their
/// users read them some other way, e.g. from an opmask) while their own operands still stay
/// live until they are read; and that node `i` takes over the register of the first operand
/// in `reuse[i]` that is read last by node `i` — for instructions that overwrite
/// one of their sources (an x86 FMA accumulates into its destination), so the emitter need
/// not copy it first. The emitter of a node with a hint must read the operand before it
/// writes the destination.
pub(crate) fn allocate_except(
    nodes: &[KernelNode],
    results: &[NodeId],
    uniform: &[bool],
    needs_vec: &[bool],
    no_home: &[bool],
    reuse: &[Vec<NodeId>],
    regs: &[u8],
) -> (Vec<Home>, usize) {
    let n = nodes.len();
    let varying = |i: usize| needs_vec[i] && !uniform[i];
    let mut last_use: Vec<usize> = (0..n).collect();
    let mut uses = vec![0usize; n];
    for (j, kn) in nodes.iter().enumerate() {
        if varying(j) {
            for o in kn.node.operands() {
                if let Some(l) = last_use.get_mut(o as usize) {
                    *l = (*l).max(j);
                    uses[o as usize] += 1;
                }
            }
        }
    }
    for &r in results {
        if let Some(l) = last_use.get_mut(r as usize) {
            *l = usize::MAX;
        }
    }
    let mut home = vec![Home::None; n];
    let mut slots = 0;
    let mut new_slot = || {
        slots += 1;
        Home::Slot(slots - 1)
    };
    // Varying values: a register is free again after its value's last use.
    let mut owner: Vec<Option<usize>> = vec![None; regs.len()];
    let mut ever_used = vec![false; regs.len()];
    let homeless = |i: usize| no_home.get(i).copied().unwrap_or(false);
    for i in (0..n).filter(|&i| varying(i) && !homeless(i)) {
        for o in owner.iter_mut() {
            if o.is_some_and(|v| last_use[v] < i) {
                *o = None;
            }
        }
        let inherited = reuse.get(i).into_iter().flatten().find_map(|&o| {
            let o = o as usize;
            let dies_here = last_use.get(o) == Some(&i);
            let r = regs
                .iter()
                .position(|&r| home.get(o) == Some(&Home::Reg(r)))?;
            (dies_here && owner[r] == Some(o)).then_some(r)
        });
        if let Some(r) = inherited {
            owner[r] = Some(i);
            home[i] = Home::Reg(regs[r]);
            continue;
        }
        home[i] = match owner.iter().position(Option::is_none) {
            Some(r) => {
                owner[r] = Some(i);
                ever_used[r] = true;
                Home::Reg(regs[r])
            }
            None => new_slot(),
        };
    }
    // Uniform values, most-used first, into the registers no varying value touches.
    let mut order: Vec<usize> = (0..n).filter(|&i| needs_vec[i] && uniform[i]).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(uses[i]));
    let mut free = regs
        .iter()
        .zip(&ever_used)
        .filter(|(_, &used)| !used)
        .map(|(&r, _)| r);
    for i in order {
        home[i] = match free.next() {
            Some(r) => Home::Reg(r),
            None => new_slot(),
        };
    }
    (home, slots)
}

#[cfg(test)]
mod tests {
    use accy_ir::{BinaryOp, DType};

    use super::*;
    use crate::kernel::Node;

    fn node(node: Node) -> KernelNode {
        KernelNode {
            node,
            dtype: DType::F32,
        }
    }

    fn add(lhs: NodeId, rhs: NodeId) -> KernelNode {
        node(Node::Binary {
            op: BinaryOp::Add,
            lhs,
            rhs,
        })
    }

    fn load() -> KernelNode {
        node(Node::Load {
            binding: 0,
            map: crate::kernel::IndexMap::new(0, &[1]),
        })
    }

    #[test]
    fn varying_values_get_registers_before_uniform_ones_and_reuse_them() {
        // %0 = const, %1 = const, %2 = load, %3 = %2 + %0, %4 = %3 * %1, %5 = %4 + %0
        let nodes = vec![
            node(Node::Const { bits: 0 }),
            node(Node::Const { bits: 1 }),
            load(),
            add(2, 0),
            add(3, 1),
            add(4, 0),
        ];
        let uniform = [true, true, false, false, false, false];
        let needs = [true; 6];
        // Two registers: the varying chain needs both (%2 dies at %3, %3 at %4, ...), so both
        // constants spill; %0 is used twice, %1 once.
        let (home, slots) = allocate(&nodes, &[5], &uniform, &needs, &[7, 8]);
        assert_eq!(
            home,
            [
                Home::Slot(0),
                Home::Slot(1),
                Home::Reg(7),
                Home::Reg(8),
                Home::Reg(7),
                Home::Reg(8)
            ]
        );
        assert_eq!(slots, 2);
        // Four registers: the constants take the two the chain never needs, %0 first.
        let (home, slots) = allocate(&nodes, &[5], &uniform, &needs, &[7, 8, 9, 10]);
        assert_eq!(home[..2], [Home::Reg(9), Home::Reg(10)]);
        assert_eq!(slots, 0);
    }

    #[test]
    fn a_homeless_value_gets_no_register_but_keeps_its_operands_live() {
        // The homeless %3 reads %0 and %1 after %2 is loaded, so %2 must not take their
        // registers (as it would if %3's reads were not counted).
        // %0, %1 loads; %2 load; %3 = %0 + %1 (homeless); %4 = %2 + %2 (the result).
        let nodes = vec![load(), load(), load(), add(0, 1), add(2, 2)];
        let uniform = [false; 5];
        let needs = [true; 5];
        let no_home = [false, false, false, true, false];
        let (home, slots) =
            allocate_except(&nodes, &[4], &uniform, &needs, &no_home, &[], &[7, 8, 9]);
        assert_eq!(
            home,
            [
                Home::Reg(7),
                Home::Reg(8),
                Home::Reg(9),
                Home::None,
                Home::Reg(7)
            ]
        );
        assert_eq!(slots, 0);
    }

    #[test]
    fn a_hinted_node_takes_the_register_of_an_operand_read_last_there() {
        // %0, %1 loads; %2 = %0 + %1; %3 = %2 + %1; %4 = %3 + %0 (the result).
        let nodes = vec![load(), load(), add(0, 1), add(2, 1), add(3, 0)];
        let (uniform, needs, no_home) = ([false; 5], [true; 5], [false; 5]);
        let regs = [7, 8, 9, 10];
        let (plain, _) = allocate_except(&nodes, &[4], &uniform, &needs, &no_home, &[], &regs);
        assert_eq!(plain[2], Home::Reg(9));
        // %2 may not take %1's register (%3 reads %1 again); %3 takes it, %1 being read last
        // there; %4 takes %0's.
        let reuse = [vec![], vec![], vec![1], vec![1], vec![0]];
        let (home, slots) =
            allocate_except(&nodes, &[4], &uniform, &needs, &no_home, &reuse, &regs);
        assert_eq!(
            home,
            [
                Home::Reg(7),
                Home::Reg(8),
                Home::Reg(9),
                Home::Reg(8),
                Home::Reg(7)
            ]
        );
        assert_eq!(slots, 0);
        // The result never gives its register away (it is read after the loop body).
        let nodes = vec![load(), add(0, 0), add(1, 0)];
        let reuse = [vec![], vec![0], vec![1]];
        let (home, _) = allocate_except(
            &nodes,
            &[1],
            &[false; 3],
            &[true; 3],
            &[false; 3],
            &reuse,
            &regs,
        );
        assert_ne!(home[2], home[1]);
    }
}
