//! Handles and the generation-checked slot table behind them.
//!
//! The table is read on every invoke, from any number of threads, and written only by compile
//! and release. Its design keeps the invoke path free of shared writes, so concurrent callers
//! scale: each slot is an [`ArcSwapOption`] (the `arc-swap` crate) holding the program together
//! with the generation it was issued under. A lookup loads the slot without a lock and without
//! touching a shared reference count (arc-swap's guards record the borrow in thread-local
//! storage), then compares generations. Writers — insert and release — serialise on one mutex
//! that also holds each slot's next generation, and replace a slot's value atomically; a reader
//! still holding the old value keeps it alive until it finishes (that is how a release racing
//! with a running invoke stays safe). An RwLock would make every invoke write the lock word
//! and the `Arc` count, which is what made two callers slower than one.
//!
//! Repeated calls can skip even arc-swap's borrow bookkeeping (two atomic read-modify-writes
//! on thread-local debt slots, a third of a tiny invoke's time): each slot also publishes
//! its live generation in one atomic word ([`SlotTable::is_live`]), a plain load. A caller that
//! already holds the program's `Arc` (the session pins it in the caller's `Scratch`) only
//! needs that load to know the handle is still live; the `Arc` it holds keeps the program
//! alive whatever a concurrent release does. Release clears the word before it takes the
//! program out, so once `release` returns no call that starts later gets through.
//!
//! Generations never wrap: a slot whose generation reaches `u32::MAX` is retired when that
//! program is released, instead of counting back to 0, so a released handle is refused forever
//! — at the price of one of [`crate::MAX_PROGRAMS`] slots after 2^32 compiles into it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use arc_swap::{ArcSwapOption, Guard};

/// Names one compiled program in later calls: a slot index and the slot's generation when the
/// program was compiled. [`crate::Session::release`] moves the slot's generation on, so every
/// copy of the old handle is refused with [`crate::Error::InvalidHandle`] from then on, even
/// after the slot is reused. Handles are plain values: copy them freely.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Handle {
    /// Slot index, below [`crate::MAX_PROGRAMS`].
    pub index: u32,
    /// The slot's generation when this handle was issued.
    pub generation: u32,
}

/// A value in a slot, with the generation it was inserted under.
#[derive(Debug)]
pub(crate) struct Entry<T> {
    generation: u32,
    index: u32,
    pub(crate) value: T,
}

impl<T> Entry<T> {
    /// The handle this entry was issued under.
    pub(crate) fn handle(&self) -> Handle {
        Handle {
            index: self.index,
            generation: self.generation,
        }
    }
}

/// What writers serialise on: each slot's next generation, and whether it is retired.
#[derive(Debug)]
struct Writer {
    next: Vec<u32>,
    retired: Vec<bool>,
}

/// A fixed table of `N` slots (see the module documentation).
#[derive(Debug)]
pub(crate) struct SlotTable<T, const N: usize> {
    slots: Vec<ArcSwapOption<Entry<T>>>,
    /// Per slot, [`live_word`] of the generation it holds, or 0 while it is empty.
    live: Vec<AtomicU64>,
    writer: Mutex<Writer>,
}

/// The word [`SlotTable::is_live`] compares: never 0, which marks an empty slot.
fn live_word(generation: u32) -> u64 {
    (1 << 32) | u64::from(generation)
}

/// A live value borrowed from the table: it stays alive while the borrow lasts, even if the
/// slot is released meanwhile.
pub(crate) type Borrowed<T> = Guard<Option<Arc<Entry<T>>>>;

impl<T, const N: usize> SlotTable<T, N> {
    pub(crate) fn new() -> Self {
        SlotTable {
            slots: (0..N).map(|_| ArcSwapOption::empty()).collect(),
            live: (0..N).map(|_| AtomicU64::new(0)).collect(),
            writer: Mutex::new(Writer {
                next: vec![0; N],
                retired: vec![false; N],
            }),
        }
    }

    // A panic while holding the writer lock cannot leave the table inconsistent (each slot
    // changes in one atomic store after its generation is decided), so a poisoned lock is
    // still safe to use.
    fn writer(&self) -> std::sync::MutexGuard<'_, Writer> {
        self.writer.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Stores `value` in the lowest free slot, or gives it back when every usable slot is
    /// taken.
    pub(crate) fn insert(&self, value: T) -> Result<Handle, T> {
        let writer = self.writer();
        let free = (0..N).find(|&i| !writer.retired[i] && self.slots[i].load().is_none());
        match free {
            Some(i) => {
                let generation = writer.next[i];
                self.slots[i].store(Some(Arc::new(Entry {
                    generation,
                    index: i as u32,
                    value,
                })));
                self.live[i].store(live_word(generation), Ordering::Release);
                Ok(Handle {
                    index: i as u32,
                    generation,
                })
            }
            None => Err(value),
        }
    }

    /// True if a slot is free (so an `insert` would succeed now).
    pub(crate) fn has_free(&self) -> bool {
        let writer = self.writer();
        (0..N).any(|i| !writer.retired[i] && self.slots[i].load().is_none())
    }

    /// The value `h` names, if `h` is live. Lock-free; writes no shared memory.
    pub(crate) fn get(&self, h: Handle) -> Option<Borrowed<T>> {
        let slot = self.slots.get(h.index as usize)?;
        let entry = slot.load();
        match &*entry {
            Some(e) if e.generation == h.generation => Some(entry),
            _ => None,
        }
    }

    /// Frees the slot `h` names and moves its generation on (or retires the slot when the
    /// generation would wrap); `None` if `h` is not live.
    pub(crate) fn remove(&self, h: Handle) -> Option<Arc<Entry<T>>> {
        let mut writer = self.writer();
        let i = h.index as usize;
        let slot = self.slots.get(i)?;
        match &*slot.load() {
            Some(e) if e.generation == h.generation => {}
            _ => return None,
        }
        match h.generation.checked_add(1) {
            Some(next) => writer.next[i] = next,
            None => writer.retired[i] = true,
        }
        if let Some(live) = self.live.get(i) {
            live.store(0, Ordering::Release);
        }
        slot.swap(None)
    }

    /// The value `h` names as an owned `Arc`, if `h` is live (one reference-count increment,
    /// on top of [`SlotTable::get`]).
    pub(crate) fn get_owned(&self, h: Handle) -> Option<Arc<Entry<T>>> {
        self.get(h).and_then(Guard::into_inner)
    }

    /// Whether `h` is live: one atomic load, no write. A caller holding `h`'s value already
    /// (from [`SlotTable::get_owned`]) may use it when this says yes.
    pub(crate) fn is_live(&self, h: Handle) -> bool {
        self.live
            .get(h.index as usize)
            .is_some_and(|w| w.load(Ordering::Acquire) == live_word(h.generation))
    }

    /// Number of live values.
    pub(crate) fn live(&self) -> usize {
        self.slots.iter().filter(|s| s.load().is_some()).count()
    }

    /// Sets the generation the next insert into slot `index` gets, as if that many programs
    /// had been released there (tests of generation exhaustion).
    #[cfg(test)]
    pub(crate) fn set_generation(&self, index: usize, generation: u32) {
        self.writer().next[index] = generation;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value<T: Copy, const N: usize>(t: &SlotTable<T, N>, h: Handle) -> Option<T> {
        t.get(h).and_then(|b| b.as_ref().map(|e| e.value))
    }

    #[test]
    fn release_invalidates_every_copy_and_reuse_gets_a_new_generation() {
        let t: SlotTable<&str, 2> = SlotTable::new();
        let a = t.insert("a").unwrap();
        let b = t.insert("b").unwrap();
        assert_eq!((a.index, b.index), (0, 1));
        assert_eq!(t.insert("c").unwrap_err(), "c");
        assert!(!t.has_free());
        assert_eq!(t.remove(a).map(|e| e.value), Some("a"));
        assert_eq!(value(&t, a), None);
        assert!(t.remove(a).is_none());
        let c = t.insert("c").unwrap();
        assert_eq!(c.index, 0);
        assert_ne!(c.generation, a.generation);
        assert_eq!(value(&t, a), None);
        assert_eq!(value(&t, c), Some("c"));
        let foreign = Handle {
            index: 7,
            generation: 0,
        };
        assert!(t.get(foreign).is_none());
        assert!(t.remove(foreign).is_none());
        assert_eq!(t.live(), 2);
    }

    #[test]
    fn a_slot_whose_generation_would_wrap_is_retired_so_old_handles_stay_dead() {
        let t: SlotTable<u8, 1> = SlotTable::new();
        let first = t.insert(0).unwrap();
        t.remove(first).unwrap();
        t.set_generation(0, u32::MAX);
        let last = t.insert(1).unwrap();
        assert_eq!(last.generation, u32::MAX);
        assert!(t.remove(last).is_some());
        // Wrapping would make generation 0 valid again, and `first` with it.
        assert!(!t.has_free());
        assert_eq!(t.insert(2).unwrap_err(), 2);
        assert_eq!(value(&t, first), None);
        assert_eq!(value(&t, last), None);
        assert_eq!(t.live(), 0);
    }

    #[test]
    fn a_borrowed_value_outlives_its_release() {
        let t: SlotTable<Arc<u32>, 1> = SlotTable::new();
        let shared = Arc::new(5u32);
        let h = t.insert(Arc::clone(&shared)).unwrap();
        let borrowed = t.get(h).unwrap();
        t.remove(h).unwrap();
        assert!(t.get(h).is_none());
        assert_eq!(borrowed.as_ref().map(|e| *e.value), Some(5));
        drop(borrowed);
        assert_eq!(Arc::strong_count(&shared), 1);
    }
}
