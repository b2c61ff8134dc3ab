//! [`Weights`]: immutable named weight tensors, loaded once and shared by every artifact that
//! binds them (DESIGN.md "Models", after seed `002_…`).
//!
//! A set's bytes live on read-only pages: either copied once into a page-aligned block that is
//! then frozen (`mprotect(PROT_READ)`, module `pages`), or used in place from a read-only file
//! mapping ([`Weights::from_mapping`], copying only the weights whose place in the file is not
//! aligned enough). Cloning a `Weights` shares that memory (an `Arc`), so any number of loaded
//! artifacts — one per shape, say — bind the same bytes, and [`Weights::weight_bytes`] counts
//! them once however many use them. Nothing writes them: the validator refuses a command that
//! writes a weight slot, a caller's output (a `&mut [u8]`) cannot alias memory this type only
//! lends out as `&[u8]`, and a kernel that broke its contract would fault on the read-only
//! pages instead of corrupting what every run shares.

use std::fmt;
use std::ops::Range;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex, PoisonError};

use memmap2::Mmap;

use crate::pages::{FrozenPages, Pages, PagesFailure};

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
    /// There was no memory (or address space) for the weights' copy (a limit).
    #[error("out of memory copying {weights} weights ({bytes} bytes)")]
    OutOfMemory {
        /// How many weights were being copied.
        weights: usize,
        /// Their total size in bytes, aligned (`usize::MAX` if the sum overflowed).
        bytes: usize,
    },
    /// A mapped weight's byte range does not lie inside the mapping (a caller bug).
    #[error("weight {name:?} is at bytes {}..{} of a mapping of {mapping} bytes", .range.start, .range.end)]
    OutsideMapping {
        /// The weight's name.
        name: String,
        /// Its range in the mapping.
        range: Range<usize>,
        /// The mapping's length.
        mapping: usize,
    },
    /// A mapped weight's alignment is not a power of two (a caller bug).
    #[error("weight {name:?} asks for alignment {alignment}, which is not a power of two")]
    BadAlignment {
        /// The weight's name.
        name: String,
        /// The alignment asked for.
        alignment: usize,
    },
}

/// One weight to use in place from a file mapping: its name, where its bytes are, and the
/// alignment its first byte needs (its element's, for accy's slots). See
/// [`Weights::from_mapping`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MappedWeight<'a> {
    /// The weight's name.
    pub name: &'a str,
    /// Its bytes in the mapping.
    pub range: Range<usize>,
    /// The alignment its address must have to be used in place (a power of two).
    pub alignment: usize,
}

/// Memory that weights point into. Never written after the set is built.
#[derive(Debug)]
enum Block {
    /// A block this crate copied weights into, now read-only.
    Frozen { _pages: FrozenPages },
    /// A read-only file mapping the weights are used from in place.
    Mapped { _map: Mmap },
}

/// One weight: its name and its bytes (inside one of its store's blocks).
#[derive(Debug)]
struct Weight {
    name: String,
    ptr: NonNull<u8>,
    len: usize,
    mapped: bool,
}

/// The weights of a set and the blocks they live in.
#[derive(Debug)]
struct Store {
    weights: Vec<Weight>,
    /// Kept alive for the pointers in `weights`; shared with the sets a set was extended from.
    _blocks: Vec<Arc<Block>>,
}

// SAFETY: every pointer in `weights` points into a block of `_blocks`, which the store keeps
// alive and which nobody writes after the set is built (frozen pages, a read-only mapping);
// sending the store moves only shared read access.
unsafe impl Send for Store {}
// SAFETY: as above: `&Store` gives read access to immutable bytes only.
unsafe impl Sync for Store {}

/// One weight in another layout (`accy_artifact::SlotRole::Derived`), computed once.
#[derive(Debug)]
struct Derived {
    weight: String,
    layout: String,
    bytes: Arc<FrozenPages>,
}

/// An immutable set of named weights on read-only pages, with the derived forms (packed
/// layouts) loaded artifacts computed from them. Cheap to clone: clones share the memory,
/// derived forms included. `Send + Sync`.
#[derive(Clone, Debug)]
pub struct Weights {
    store: Arc<Store>,
    /// Grows as artifacts are loaded; each entry is written once and never changes.
    derived: Arc<Mutex<Vec<Derived>>>,
}

impl Default for Weights {
    fn default() -> Weights {
        Weights::empty()
    }
}

/// Checks that every name is non-empty and unique.
fn check_names<'a>(names: impl Iterator<Item = &'a str> + Clone) -> Result<(), WeightError> {
    for (index, name) in names.clone().enumerate() {
        if name.is_empty() {
            return Err(WeightError::EmptyName { index });
        }
        if let Some(first) = names.clone().take(index).position(|n| n == name) {
            return Err(WeightError::DuplicateName {
                name: name.to_owned(),
                first,
                second: index,
            });
        }
    }
    Ok(())
}

/// Copies `weights` into one frozen block, each at a multiple of [`Weights::ALIGNMENT`];
/// returns the block and each weight's offset in it.
fn copy_block(weights: &[(&str, &[u8])]) -> Result<(FrozenPages, Vec<usize>), WeightError> {
    let mut offsets = Vec::with_capacity(weights.len());
    let mut total = Some(0usize);
    for (_, bytes) in weights {
        let offset = total.and_then(|t| t.checked_next_multiple_of(Weights::ALIGNMENT));
        offsets.push(offset.unwrap_or(0));
        total = offset.and_then(|o| o.checked_add(bytes.len()));
    }
    let out_of_memory = |bytes| WeightError::OutOfMemory {
        weights: weights.len(),
        bytes,
    };
    let total = total.ok_or(out_of_memory(usize::MAX))?;
    let mut pages = Pages::new(total).map_err(|f: PagesFailure| out_of_memory(f.bytes))?;
    let block = pages.as_mut_slice();
    for ((_, bytes), &offset) in weights.iter().zip(&offsets) {
        block[offset..offset + bytes.len()].copy_from_slice(bytes);
    }
    let frozen = pages.freeze().map_err(|f| out_of_memory(f.bytes))?;
    Ok((frozen, offsets))
}

/// Copies `copies` into a frozen block and appends a weight for each to `weights`, keeping
/// the block in `blocks`.
fn push_copies(
    copies: &[(&str, &[u8])],
    weights: &mut Vec<Weight>,
    blocks: &mut Vec<Arc<Block>>,
) -> Result<(), WeightError> {
    if copies.is_empty() {
        return Ok(());
    }
    let (frozen, offsets) = copy_block(copies)?;
    let base = frozen.as_ptr().cast_mut();
    for ((name, bytes), offset) in copies.iter().zip(offsets) {
        // SAFETY: `offset + len <= frozen.len()` (`copy_block` laid the block out so), so the
        // result stays inside the block; a zero-length weight at the end is one past it.
        let ptr = unsafe { base.add(offset) };
        weights.push(Weight {
            name: (*name).to_owned(),
            ptr: NonNull::new(ptr).unwrap_or(NonNull::dangling()),
            len: bytes.len(),
            mapped: false,
        });
    }
    blocks.push(Arc::new(Block::Frozen { _pages: frozen }));
    Ok(())
}

impl Weights {
    /// The alignment of every copied weight's first byte: the largest any accy slot asks for
    /// in practice (a cache line, and the widest vector). A weight used in place from a
    /// mapping has at least the alignment it was mapped with. A plan whose weight slot asks
    /// for more than a weight has is refused at load with both numbers.
    pub const ALIGNMENT: usize = 64;

    /// The set with no weights, for artifacts that have no weight slots.
    pub fn empty() -> Weights {
        Weights::from_store(Store {
            weights: Vec::new(),
            _blocks: Vec::new(),
        })
    }

    fn from_store(store: Store) -> Weights {
        Weights {
            store: Arc::new(store),
            derived: Arc::default(),
        }
    }

    /// Copies each `(name, bytes)` into one block of read-only pages owned by the new set.
    /// Names must be non-empty and unique; the order does not matter to artifacts, which bind
    /// by name.
    pub fn new(weights: &[(&str, &[u8])]) -> Result<Weights, WeightError> {
        check_names(weights.iter().map(|(n, _)| *n))?;
        let (mut entries, mut blocks) = (Vec::with_capacity(weights.len()), Vec::new());
        push_copies(weights, &mut entries, &mut blocks)?;
        Ok(Weights::from_store(Store {
            weights: entries,
            _blocks: blocks,
        }))
    }

    /// A set whose weights are `entries` of the read-only file mapping `map`, used in place:
    /// only a weight whose address in the mapping is not a multiple of its `alignment` is
    /// copied (into read-only pages of its own). The set keeps the mapping alive.
    ///
    /// The mapping is read-only, so nothing in this process writes it; as for every file
    /// mapping, the file must not be truncated or changed by anyone while the set lives
    /// (that is why creating `map` is `unsafe`).
    pub fn from_mapping(map: Mmap, entries: &[MappedWeight<'_>]) -> Result<Weights, WeightError> {
        check_names(entries.iter().map(|e| e.name))?;
        let base = map.as_ptr();
        let mut weights = Vec::with_capacity(entries.len());
        let mut copies: Vec<(&str, &[u8])> = Vec::new();
        for entry in entries {
            if !entry.alignment.is_power_of_two() {
                return Err(WeightError::BadAlignment {
                    name: entry.name.to_owned(),
                    alignment: entry.alignment,
                });
            }
            let bytes =
                map.get(entry.range.clone())
                    .ok_or_else(|| WeightError::OutsideMapping {
                        name: entry.name.to_owned(),
                        range: entry.range.clone(),
                        mapping: map.len(),
                    })?;
            if (base as usize + entry.range.start).is_multiple_of(entry.alignment) {
                weights.push(Weight {
                    name: entry.name.to_owned(),
                    ptr: NonNull::new(bytes.as_ptr().cast_mut()).unwrap_or(NonNull::dangling()),
                    len: bytes.len(),
                    mapped: true,
                });
            } else {
                copies.push((entry.name, bytes));
            }
        }
        let mut blocks = Vec::new();
        push_copies(&copies, &mut weights, &mut blocks)?;
        blocks.push(Arc::new(Block::Mapped { _map: map }));
        // Copies went last; put every weight back in the order given.
        weights.sort_by_key(|w| entries.iter().position(|e| e.name == w.name));
        Ok(Weights::from_store(Store {
            weights,
            _blocks: blocks,
        }))
    }

    /// A new set with this set's weights (sharing their memory, not copying it) plus copies
    /// of `more`, whose names must be new. The new set computes its own derived forms.
    pub fn extend(&self, more: &[(&str, &[u8])]) -> Result<Weights, WeightError> {
        self.merge(&Weights::new(more)?)
    }

    /// A new set with the weights of both sets, sharing their memory (nothing is copied);
    /// names must not repeat. The new set computes its own derived forms.
    pub fn merge(&self, other: &Weights) -> Result<Weights, WeightError> {
        check_names(self.names().chain(other.names()))?;
        let weights = self
            .store
            .weights
            .iter()
            .chain(&other.store.weights)
            .map(|w| Weight {
                name: w.name.clone(),
                ptr: w.ptr,
                len: w.len,
                mapped: w.mapped,
            })
            .collect();
        let blocks = self
            .store
            ._blocks
            .iter()
            .chain(&other.store._blocks)
            .cloned()
            .collect();
        Ok(Weights::from_store(Store {
            weights,
            _blocks: blocks,
        }))
    }

    /// The number of weights.
    pub fn len(&self) -> usize {
        self.store.weights.len()
    }

    /// Whether the set has no weights.
    pub fn is_empty(&self) -> bool {
        self.store.weights.is_empty()
    }

    /// The bytes of the weight called `name`, if there is one.
    pub fn get(&self, name: &str) -> Option<&[u8]> {
        self.position(name).map(|i| self.bytes(i))
    }

    /// The alignment the weight called `name` has in memory: the largest power of two
    /// dividing its address, at most a page (at least [`Weights::ALIGNMENT`] for a copied
    /// weight).
    pub fn alignment(&self, name: &str) -> Option<usize> {
        self.position(name).map(|i| self.alignment_of(i))
    }

    fn bytes(&self, index: usize) -> &[u8] {
        let w = &self.store.weights[index];
        // SAFETY: `ptr` points at `len` bytes inside a block the store keeps alive and nobody
        // writes (see `Store`); a zero-length weight may dangle, which a slice of 0 allows.
        unsafe { std::slice::from_raw_parts(w.ptr.as_ptr(), w.len) }
    }

    /// The weights' names, in the order they were given.
    pub fn names(&self) -> impl Iterator<Item = &str> + Clone {
        self.store.weights.iter().map(|w| w.name.as_str())
    }

    /// The physical bytes the set holds — the weights as given plus every derived form
    /// (packed layout) computed from them so far — counted once however many clones and
    /// loaded artifacts share them.
    pub fn weight_bytes(&self) -> u64 {
        self.given_bytes() + self.derived_bytes()
    }

    /// The bytes of the weights as given (copied or mapped).
    pub fn given_bytes(&self) -> u64 {
        self.store.weights.iter().map(|w| w.len as u64).sum()
    }

    /// The bytes of the weights used in place from a file mapping (the rest were copied).
    pub fn mapped_bytes(&self) -> u64 {
        let mapped = self.store.weights.iter().filter(|w| w.mapped);
        mapped.map(|w| w.len as u64).sum()
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
        make: impl FnOnce() -> Result<FrozenPages, E>,
    ) -> Result<Arc<FrozenPages>, E> {
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
        Arc::ptr_eq(&self.store, &other.store)
    }

    /// The position of the weight called `name`.
    pub(crate) fn position(&self, name: &str) -> Option<usize> {
        self.store.weights.iter().position(|w| w.name == name)
    }

    /// The first byte of weight `index` (from [`Weights::position`]), for reading only.
    pub(crate) fn ptr(&self, index: usize) -> Option<*const u8> {
        self.store
            .weights
            .get(index)
            .map(|w| w.ptr.as_ptr().cast_const())
    }

    /// The length of weight `index`.
    pub(crate) fn len_of(&self, index: usize) -> Option<usize> {
        self.store.weights.get(index).map(|w| w.len)
    }

    /// The alignment weight `index`'s address has: the largest power of two dividing it, at
    /// most a page (0 for no such weight).
    pub(crate) fn alignment_of(&self, index: usize) -> usize {
        self.ptr(index).map_or(0, |p| {
            let address = p as usize;
            let page = crate::sys::page_size();
            if address == 0 {
                page
            } else {
                (1usize << address.trailing_zeros()).min(page)
            }
        })
    }
}

impl fmt::Display for Weights {
    /// `2 weights, 96 bytes: "w.q" 64, "w.k" 32; 1 derived forms, 64 bytes`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} weights, {} bytes", self.len(), self.given_bytes())?;
        for (i, w) in self.store.weights.iter().enumerate() {
            f.write_str(if i == 0 { ": " } else { ", " })?;
            write!(f, "{:?} {}", w.name, w.len)?;
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
mod tests;
