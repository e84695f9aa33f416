//! The library's layers import only downward (ARCHITECTURE.md): `spec` from none of the others,
//! `scan` not from `index` or `table`, `index` and `vector` not from `table`. Test code may reach up.

use std::path::Path;

fn sources(dir: &Path, out: &mut Vec<(String, String)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).unwrap();
            // What comes before a file's tests is what it is built from.
            let code = text.split("#[cfg(test)]").next().unwrap_or_default().to_owned();
            out.push((path.display().to_string(), code));
        }
    }
}

#[test]
fn layers_import_only_downward() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let rules: [(&str, &[&str]); 4] = [
        ("spec", &["scan", "index", "table", "vector", "array", "jni"]),
        ("scan", &["index", "table", "array", "jni"]),
        ("index", &["table", "array", "jni"]),
        ("vector", &["index", "table", "array", "jni"]),
    ];
    let mut upward = Vec::new();
    for (layer, above) in rules {
        let mut files = Vec::new();
        sources(&src.join(layer), &mut files);
        assert!(!files.is_empty(), "no sources under src/{layer}");
        for (path, code) in files {
            for module in above {
                if code.contains(&format!("crate::{module}::")) {
                    upward.push(format!("{path} imports crate::{module}"));
                }
            }
        }
    }
    assert!(upward.is_empty(), "imports that point up a layer:\n{}", upward.join("\n"));
}
