//! [`Weights`]: immutable named weight tensors, loaded once and shared by every artifact that
//! binds them (DESIGN.md "Models", after seed `002_…`).
//!
//! A model's weights are copied once into aligned memory of their own; cloning a `Weights`
//! shares that memory (an `Arc`), so any number of loaded artifacts — one per shape, say —
//! bind the same bytes, and [`Weights::weight_bytes`] counts them once however many use them.
//! Nothing ever writes them: the validator refuses a command that writes a weight slot, and
//! a caller's output (a `&mut [u8]`) cannot alias memory this type only lends out as `&[u8]`.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use crate::aligned::AlignedBytes;

/// Why a [`Weights`] set could not be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WeightError {
    /// A weight has an empty name (a caller bug: a plan names every weight).
    #[error("weight {index} has an empty name")]
    EmptyName {
        /// Position in the list given.
        index: usize,
    },
    /// Two weights share a name (a caller bug).
    #[error("weights {first} and {second} are both named {name:?}")]
    DuplicateName {
        /// The shared name.
        name: String,
        /// The earlier weight's position.
        first: usize,
        /// The later weight's position.
        second: usize,
    },
    /// There was no memory for a weight's copy (a limit).
    #[error("out of memory copying weight {name:?} ({bytes} bytes, alignment {alignment})")]
    OutOfMemory {
        /// The weight's name.
        name: String,
        /// Its size in bytes.
        bytes: usize,
        /// The alignment asked for.
        alignment: usize,
    },
}

/// One weight: its name and its bytes.
#[derive(Debug)]
struct Weight {
    name: String,
    bytes: AlignedBytes,
}

/// One weight in another layout (`accy_artifact::SlotRole::Derived`), computed once.
#[derive(Debug)]
struct Derived {
    weight: String,
    layout: String,
    bytes: Arc<AlignedBytes>,
}

/// An immutable set of named weights in aligned memory of their own, with the derived forms
/// (packed layouts) loaded artifacts computed from them. Cheap to clone: clones share the
/// memory, derived forms included. `Send + Sync`.
#[derive(Clone, Debug)]
pub struct Weights {
    entries: Arc<[Weight]>,
    /// Grows as artifacts are loaded; each entry is written once and never changes.
    derived: Arc<Mutex<Vec<Derived>>>,
}

impl Default for Weights {
    fn default() -> Weights {
        Weights::empty()
    }
}

impl Weights {
    /// The alignment of every weight's first byte: the largest any accy slot asks for in
    /// practice (a cache line, and the widest vector). A plan whose weight slot asks for more
    /// is refused at load with both numbers.
    pub const ALIGNMENT: usize = 64;

    /// The set with no weights, for artifacts that have no weight slots.
    pub fn empty() -> Weights {
        Weights {
            entries: Arc::from(Vec::new()),
            derived: Arc::default(),
        }
    }

    /// Copies each `(name, bytes)` into aligned memory owned by the new set. Names must be
    /// non-empty and unique; the order does not matter to artifacts, which bind by name.
    pub fn new(weights: &[(&str, &[u8])]) -> Result<Weights, WeightError> {
        let mut entries = Vec::with_capacity(weights.len());
        for (index, &(name, bytes)) in weights.iter().enumerate() {
            if name.is_empty() {
                return Err(WeightError::EmptyName { index });
            }
            if let Some(first) = weights[..index].iter().position(|(n, _)| *n == name) {
                return Err(WeightError::DuplicateName {
                    name: name.to_owned(),
                    first,
                    second: index,
                });
            }
            let copy = AlignedBytes::copy_of(bytes, Weights::ALIGNMENT).map_err(|failure| {
                WeightError::OutOfMemory {
                    name: name.to_owned(),
                    bytes: failure.bytes,
                    alignment: failure.alignment,
                }
            })?;
            entries.push(Weight {
                name: name.to_owned(),
                bytes: copy,
            });
        }
        Ok(Weights {
            entries: Arc::from(entries),
            derived: Arc::default(),
        })
    }

    /// The number of weights.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the set has no weights.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The bytes of the weight called `name`, if there is one.
    pub fn get(&self, name: &str) -> Option<&[u8]> {
        self.position(name)
            .map(|i| self.entries[i].bytes.as_slice())
    }

    /// The weights' names, in the order they were given.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|w| w.name.as_str())
    }

    /// The physical bytes the set holds — the weights as given plus every derived form
    /// (packed layout) computed from them so far — counted once however many clones and
    /// loaded artifacts share them.
    pub fn weight_bytes(&self) -> u64 {
        self.given_bytes() + self.derived_bytes()
    }

    /// The bytes of the weights as given.
    pub fn given_bytes(&self) -> u64 {
        self.entries.iter().map(|w| w.bytes.len() as u64).sum()
    }

    /// The bytes of the derived forms computed so far.
    pub fn derived_bytes(&self) -> u64 {
        self.derived_list()
            .iter()
            .map(|d| d.bytes.len() as u64)
            .sum()
    }

    /// How many derived forms have been computed so far (one per weight and layout).
    pub fn derived_count(&self) -> usize {
        self.derived_list().len()
    }

    /// The derived forms as `(weight, layout, bytes)`, in the order they were computed.
    pub fn derived_forms(&self) -> Vec<(String, String, u64)> {
        self.derived_list()
            .iter()
            .map(|d| (d.weight.clone(), d.layout.clone(), d.bytes.len() as u64))
            .collect()
    }

    fn derived_list(&self) -> std::sync::MutexGuard<'_, Vec<Derived>> {
        // An entry is pushed whole or not at all, so a poisoned list is still consistent.
        self.derived.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The form of weight `weight` in `layout`: the one computed before, or `make()`'s,
    /// which is kept for the next caller. The lock is held while `make` runs, so concurrent
    /// loads never compute one form twice.
    pub(crate) fn derived<E>(
        &self,
        weight: &str,
        layout: &str,
        make: impl FnOnce() -> Result<AlignedBytes, E>,
    ) -> Result<Arc<AlignedBytes>, E> {
        let mut list = self.derived_list();
        if let Some(d) = list
            .iter()
            .find(|d| d.weight == weight && d.layout == layout)
        {
            return Ok(Arc::clone(&d.bytes));
        }
        let bytes = Arc::new(make()?);
        list.push(Derived {
            weight: weight.to_owned(),
            layout: layout.to_owned(),
            bytes: Arc::clone(&bytes),
        });
        Ok(bytes)
    }

    /// Whether `self` and `other` share the same memory (one is a clone of the other).
    pub fn shares_memory_with(&self, other: &Weights) -> bool {
        Arc::ptr_eq(&self.entries, &other.entries)
    }

    /// The position of the weight called `name`.
    pub(crate) fn position(&self, name: &str) -> Option<usize> {
        self.entries.iter().position(|w| w.name == name)
    }

    /// The first byte of weight `index` (from [`Weights::position`]), for reading only.
    pub(crate) fn ptr(&self, index: usize) -> Option<*const u8> {
        self.entries.get(index).map(|w| w.bytes.as_ptr())
    }

    /// The length of weight `index`.
    pub(crate) fn len_of(&self, index: usize) -> Option<usize> {
        self.entries.get(index).map(|w| w.bytes.len())
    }
}

impl fmt::Display for Weights {
    /// `2 weights, 96 bytes: "w.q" 64, "w.k" 32; 1 derived forms, 64 bytes`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} weights, {} bytes", self.len(), self.given_bytes())?;
        for (i, w) in self.entries.iter().enumerate() {
            f.write_str(if i == 0 { ": " } else { ", " })?;
            write!(f, "{:?} {}", w.name, w.bytes.len())?;
        }
        let derived = self.derived_count();
        if derived > 0 {
            write!(
                f,
                "; {derived} derived forms, {} bytes",
                self.derived_bytes()
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_are_copied_aligned_and_shared_by_clones() {
        let q = [1u8, 2, 3, 4];
        let w = Weights::new(&[("w.q", &q), ("w.k", &[9; 32])]).unwrap();
        assert_eq!(w.len(), 2);
        assert_eq!(w.get("w.q"), Some(&q[..]));
        assert_eq!(w.get("w.v"), None);
        assert_eq!(w.names().collect::<Vec<_>>(), vec!["w.q", "w.k"]);
        assert_eq!(w.weight_bytes(), 36);
        for i in 0..2 {
            assert_eq!(w.ptr(i).unwrap() as usize % Weights::ALIGNMENT, 0);
        }
        // A copy, not a borrow of the caller's bytes.
        assert_ne!(w.get("w.q").unwrap().as_ptr(), q.as_ptr());
        let clone = w.clone();
        assert!(clone.shares_memory_with(&w));
        assert_eq!(
            clone.get("w.q").unwrap().as_ptr(),
            w.get("w.q").unwrap().as_ptr()
        );
        assert!(!Weights::new(&[("w.q", &q)]).unwrap().shares_memory_with(&w));
        assert_eq!(w.to_string(), "2 weights, 36 bytes: \"w.q\" 4, \"w.k\" 32");
        assert!(Weights::empty().is_empty());
        assert_eq!(Weights::default().weight_bytes(), 0);
    }

    #[test]
    fn bad_names_are_refused() {
        assert_eq!(
            Weights::new(&[("a", &[]), ("", &[1])]).unwrap_err(),
            WeightError::EmptyName { index: 1 }
        );
        assert_eq!(
            Weights::new(&[("a", &[]), ("b", &[]), ("a", &[1])]).unwrap_err(),
            WeightError::DuplicateName {
                name: "a".into(),
                first: 0,
                second: 2
            }
        );
    }
}
