//! ONNX value names to accy parameter names: accy allows 1–255 bytes of `[A-Za-z0-9_.:/-]`,
//! unique per program; ONNX allows any string.

use std::collections::HashSet;

use accy_ir::MAX_NAME_LEN;

/// Hands out unique, valid parameter names.
#[derive(Debug, Default)]
pub(crate) struct Names {
    used: HashSet<String>,
}

impl Names {
    /// A valid name for the ONNX name `onnx`: invalid bytes become `_`, long names are cut,
    /// and a clash with an earlier name gets a `.N` suffix.
    pub(crate) fn assign(&mut self, onnx: &str) -> String {
        let mut base: String = onnx
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "_.:/-".contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        if base.is_empty() {
            base.push('_');
        }
        // Room for a `.N` suffix; the name is ASCII now, so any cut is on a char boundary.
        base.truncate(MAX_NAME_LEN - 8);
        let mut name = base.clone();
        let mut n = 1u32;
        while self.used.contains(&name) {
            name = format!("{base}.{n}");
            n += 1;
        }
        self.used.insert(name.clone());
        name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_become_valid_and_unique() {
        let mut n = Names::default();
        assert_eq!(n.assign("input_ids"), "input_ids");
        assert_eq!(n.assign("a b"), "a_b");
        assert_eq!(n.assign("a_b"), "a_b.1");
        assert_eq!(n.assign(""), "_");
        assert_eq!(n.assign("héllo"), "h_llo");
        let long = n.assign(&"x".repeat(1000));
        assert!(accy_ir::is_valid_name(&long));
    }
}
