//! accy's public facade: sessions that compile tensor programs and run them on caller memory.
//!
//! Planned contents (issue "x86-64 JIT end to end"): `Session`, `Handle`, `Error`/`Status`,
//! `Descriptor`, and later models. Nothing is implemented yet, so this crate exports nothing;
//! until then, programs are built, checked and interpreted with `accy-ir` and encoded with
//! `accy-wire`.

#![deny(missing_docs)]
