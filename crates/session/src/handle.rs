//! Handles and the generation-checked slot table behind them.

/// Names one compiled program in later calls: a slot index and the slot's generation when the
/// program was compiled. [`crate::Session::release`] moves the slot's generation on (wrapping),
/// so every copy of the old handle is refused with [`crate::Error::InvalidHandle`] from then
/// on, even after the slot is reused. Handles are plain values: copy them freely.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Handle {
    /// Slot index, below [`crate::MAX_PROGRAMS`].
    pub index: u32,
    /// The slot's generation when this handle was issued.
    pub generation: u32,
}

/// A fixed table of `N` slots, each holding an optional `T` and a generation counter.
/// `insert` takes the lowest free slot; `remove` frees it and bumps its generation.
#[derive(Debug)]
pub(crate) struct SlotTable<T, const N: usize> {
    slots: Vec<(u32, Option<T>)>,
}

impl<T: Clone, const N: usize> SlotTable<T, N> {
    pub(crate) fn new() -> Self {
        SlotTable {
            slots: (0..N).map(|_| (0, None)).collect(),
        }
    }

    /// Stores `value` in the lowest free slot, or gives it back when every slot is taken.
    pub(crate) fn insert(&mut self, value: T) -> Result<Handle, T> {
        match self.slots.iter().position(|(_, v)| v.is_none()) {
            Some(i) => {
                self.slots[i].1 = Some(value);
                Ok(Handle {
                    index: i as u32,
                    generation: self.slots[i].0,
                })
            }
            None => Err(value),
        }
    }

    /// True if a slot is free (so an `insert` would succeed now).
    pub(crate) fn has_free(&self) -> bool {
        self.slots.iter().any(|(_, v)| v.is_none())
    }

    /// The value `h` names, if `h` is live.
    pub(crate) fn get(&self, h: Handle) -> Option<&T> {
        match self.slots.get(h.index as usize) {
            Some((generation, Some(v))) if *generation == h.generation => Some(v),
            _ => None,
        }
    }

    /// Frees the slot `h` names and moves its generation on; `None` if `h` is not live.
    pub(crate) fn remove(&mut self, h: Handle) -> Option<T> {
        self.get(h)?;
        let slot = &mut self.slots[h.index as usize];
        slot.0 = slot.0.wrapping_add(1);
        slot.1.take()
    }

    /// Number of live values.
    pub(crate) fn live(&self) -> usize {
        self.slots.iter().filter(|(_, v)| v.is_some()).count()
    }

    #[cfg(test)]
    pub(crate) fn set_generation(&mut self, index: usize, generation: u32) {
        self.slots[index].0 = generation;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn release_invalidates_every_copy_and_reuse_gets_a_new_generation() {
        let mut t: SlotTable<&str, 2> = SlotTable::new();
        let a = t.insert("a").unwrap();
        let b = t.insert("b").unwrap();
        assert_eq!((a.index, b.index), (0, 1));
        assert_eq!(t.insert("c"), Err("c"));
        assert!(!t.has_free());
        assert_eq!(t.remove(a), Some("a"));
        assert_eq!(t.get(a), None);
        assert_eq!(t.remove(a), None);
        let c = t.insert("c").unwrap();
        assert_eq!(c.index, 0);
        assert_ne!(c.generation, a.generation);
        assert_eq!(t.get(a), None);
        assert_eq!(t.get(c), Some(&"c"));
        assert_eq!(
            t.get(Handle {
                index: 7,
                generation: 0
            }),
            None
        );
        assert_eq!(t.live(), 2);
    }

    #[test]
    fn generations_wrap_and_the_old_handle_stays_dead() {
        let mut t: SlotTable<u8, 1> = SlotTable::new();
        t.set_generation(0, u32::MAX);
        let h = t.insert(1).unwrap();
        assert_eq!(h.generation, u32::MAX);
        t.remove(h).unwrap();
        let h2 = t.insert(2).unwrap();
        assert_eq!(h2.generation, 0);
        assert_eq!(t.get(h), None);
        assert_eq!(t.get(h2), Some(&2));
    }
}
