//! Checks that the code tables in `docs/wire-format.md` say exactly what `codes` says, so the
//! specification cannot drift from the implementation.

use accy_ir::{BinaryOp, CompareOp, DType, ReduceOp, UnaryOp};

use crate::codes;

fn doc() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/wire-format.md");
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The `(code, name)` rows of the first table after the heading `heading`, where a row is
/// "| `0x..` | `name` | ...".
fn table(doc: &str, heading: &str) -> Vec<(u8, String)> {
    let start = doc
        .find(&format!("\n{heading}\n"))
        .unwrap_or_else(|| panic!("heading `{heading}` not found"));
    let mut rows = Vec::new();
    let mut in_table = false;
    for line in doc[start + heading.len() + 2..].lines() {
        if !line.starts_with('|') {
            if in_table {
                break;
            }
            continue;
        }
        in_table = true;
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let (Some(code), Some(name)) = (cells.get(1), cells.get(2)) else {
            continue;
        };
        let Some(hex) = code.strip_prefix("`0x").and_then(|c| c.strip_suffix('`')) else {
            continue;
        };
        let code = u8::from_str_radix(hex, 16).unwrap();
        rows.push((code, name.trim_matches('`').to_string()));
    }
    rows
}

fn expect<T: Copy>(all: &[T], code: fn(T) -> u8, name: fn(T) -> &'static str) -> Vec<(u8, String)> {
    let mut rows: Vec<(u8, String)> = all
        .iter()
        .map(|&v| (code(v), name(v).to_string()))
        .collect();
    rows.sort();
    rows
}

fn sorted(mut rows: Vec<(u8, String)>) -> Vec<(u8, String)> {
    rows.sort();
    rows
}

#[test]
fn documented_code_tables_match_the_code() {
    let doc = doc();
    let mut dtypes = expect(&DType::ALL, codes::dtype_code, DType::name);
    dtypes.extend(
        codes::RESERVED_DTYPES
            .iter()
            .map(|&(c, n)| (c, n.to_string())),
    );
    assert_eq!(sorted(table(&doc, "### 8.1 Dtypes")), sorted(dtypes));
    assert_eq!(
        table(&doc, "### 8.2 Parameter kinds"),
        vec![(0x01, "input".to_string()), (0x02, "weight".to_string())]
    );
    assert_eq!(codes::param_kind_code(accy_ir::ParamKind::Input), 0x01);
    assert_eq!(codes::param_kind_code(accy_ir::ParamKind::Weight), 0x02);
    let opcodes: Vec<(u8, String)> = codes::OPCODES
        .iter()
        .map(|&(c, n)| (c, n.to_string()))
        .collect();
    assert_eq!(
        sorted(table(&doc, "### 8.3 Opcodes")),
        sorted(opcodes.clone())
    );
    assert_eq!(
        sorted(table(&doc, "### 8.4 Unary functions")),
        expect(UnaryOp::ALL, codes::unary_code, UnaryOp::name)
    );
    assert_eq!(
        sorted(table(&doc, "### 8.5 Binary functions")),
        expect(BinaryOp::ALL, codes::binary_code, BinaryOp::name)
    );
    assert_eq!(
        sorted(table(&doc, "### 8.6 Comparisons")),
        expect(CompareOp::ALL, codes::compare_code, CompareOp::name)
    );
    assert_eq!(
        sorted(table(&doc, "### 8.7 Reductions")),
        expect(ReduceOp::ALL, codes::reduce_code, ReduceOp::name)
    );
    // The body table of §5.1 lists the same opcodes in its first two columns.
    assert_eq!(sorted(table(&doc, "### 5.1 Bodies")), sorted(opcodes));
}

#[test]
fn documented_section_ids_match_the_code() {
    let doc = doc();
    for (id, name) in codes::SECTIONS {
        let row = format!("| `{id:#06x}` | `{name}` |");
        assert!(
            doc.contains(&row),
            "docs/wire-format.md lacks the row {row}"
        );
    }
}
