use super::*;
use crate::test_support::mapping_perms;

#[test]
fn weights_are_copied_aligned_read_only_and_shared_by_clones() {
    let q = [1u8, 2, 3, 4];
    let w = Weights::new(&[("w.q", &q), ("w.k", &[9; 32])]).unwrap();
    assert_eq!(w.len(), 2);
    assert_eq!(w.get("w.q"), Some(&q[..]));
    assert_eq!(w.get("w.v"), None);
    assert_eq!(w.names().collect::<Vec<_>>(), vec!["w.q", "w.k"]);
    assert_eq!(w.weight_bytes(), 36);
    assert_eq!(w.mapped_bytes(), 0);
    for i in 0..2 {
        assert_eq!(w.ptr(i).unwrap() as usize % Weights::ALIGNMENT, 0);
        assert!(w.alignment_of(i) >= Weights::ALIGNMENT);
        let perms = mapping_perms(w.ptr(i).unwrap() as usize).unwrap();
        assert!(perms.starts_with("r--"), "weight {i} is on {perms} pages");
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
    let w = Weights::new(&[("a", &[1])]).unwrap();
    assert_eq!(
        w.extend(&[("b", &[2]), ("a", &[3])]).unwrap_err(),
        WeightError::DuplicateName {
            name: "a".into(),
            first: 0,
            second: 2
        }
    );
}

#[test]
fn an_extended_set_shares_the_original_bytes_and_adds_copies() {
    let w = Weights::new(&[("a", &[1, 2, 3])]).unwrap();
    let more = w.extend(&[("b", &[4, 5])]).unwrap();
    assert_eq!(more.names().collect::<Vec<_>>(), vec!["a", "b"]);
    assert_eq!(
        more.get("a").unwrap().as_ptr(),
        w.get("a").unwrap().as_ptr()
    );
    assert_eq!(more.get("b"), Some(&[4u8, 5][..]));
    assert_eq!(more.given_bytes(), 5);
    assert!(!more.shares_memory_with(&w));
    let both = more.merge(&Weights::new(&[("c", &[6])]).unwrap()).unwrap();
    assert_eq!(both.names().collect::<Vec<_>>(), vec!["a", "b", "c"]);
    assert_eq!(
        both.get("b").unwrap().as_ptr(),
        more.get("b").unwrap().as_ptr()
    );
    assert!(matches!(
        both.merge(&Weights::new(&[("b", &[0])]).unwrap()),
        Err(WeightError::DuplicateName { .. })
    ));
    // The original set's memory outlives the set itself while the extension lives.
    let a = more.get("a").unwrap().as_ptr();
    drop(w);
    assert_eq!(more.get("a").unwrap().as_ptr(), a);
    assert_eq!(more.get("a"), Some(&[1u8, 2, 3][..]));
}

/// A file of `len` bytes counting up from 0, mapped read-only.
fn mapped_file(name: &str, len: usize) -> Mmap {
    let path = std::env::temp_dir().join(format!("accy-weights-{}-{name}.bin", std::process::id()));
    let bytes: Vec<u8> = (0..len).map(|i| i as u8).collect();
    std::fs::write(&path, &bytes).unwrap();
    let file = std::fs::File::open(&path).unwrap();
    // SAFETY: the file is this test's own and nothing changes it while it is mapped.
    let map = unsafe { Mmap::map(&file) }.unwrap();
    std::fs::remove_file(&path).unwrap();
    map
}

#[test]
fn mapped_weights_are_used_in_place_unless_misaligned() {
    let map = mapped_file("in-place", 256);
    let base = map.as_ptr() as usize;
    assert_eq!(base % 4096, 0, "mappings start on a page");
    let entries = [
        MappedWeight {
            name: "aligned",
            range: 8..24,
            alignment: 4,
        },
        MappedWeight {
            name: "misaligned",
            range: 10..22,
            alignment: 4,
        },
        MappedWeight {
            name: "bytes",
            range: 101..104,
            alignment: 1,
        },
    ];
    let w = Weights::from_mapping(map, &entries).unwrap();
    assert_eq!(
        w.names().collect::<Vec<_>>(),
        vec!["aligned", "misaligned", "bytes"]
    );
    assert_eq!(w.get("aligned").unwrap().as_ptr() as usize, base + 8);
    assert_eq!(w.get("bytes").unwrap().as_ptr() as usize, base + 101);
    let copied = w.get("misaligned").unwrap();
    assert_ne!(copied.as_ptr() as usize, base + 10);
    assert_eq!(copied.as_ptr() as usize % Weights::ALIGNMENT, 0);
    assert_eq!(copied, &(10u8..22).collect::<Vec<_>>()[..]);
    assert_eq!(
        w.get("aligned").unwrap(),
        &(8u8..24).collect::<Vec<_>>()[..]
    );
    assert_eq!(w.mapped_bytes(), 16 + 3);
    assert_eq!(w.given_bytes(), 16 + 12 + 3);
    for i in 0..3 {
        let perms = mapping_perms(w.ptr(i).unwrap() as usize).unwrap();
        assert!(perms.starts_with("r--"), "weight {i} is on {perms} pages");
    }
}

#[test]
fn mapped_weights_outside_the_mapping_or_oddly_aligned_are_refused() {
    let outside = [MappedWeight {
        name: "w",
        range: 200..300,
        alignment: 4,
    }];
    assert_eq!(
        Weights::from_mapping(mapped_file("outside", 256), &outside).unwrap_err(),
        WeightError::OutsideMapping {
            name: "w".into(),
            range: 200..300,
            mapping: 256
        }
    );
    let odd = [MappedWeight {
        name: "w",
        range: 0..4,
        alignment: 3,
    }];
    assert_eq!(
        Weights::from_mapping(mapped_file("odd", 256), &odd).unwrap_err(),
        WeightError::BadAlignment {
            name: "w".into(),
            alignment: 3
        }
    );
}
