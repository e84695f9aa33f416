//! Every `native` method the Java classes of `io.hyperstream.jni` declare has its entry point in
//! `src/jni/`, and every entry point there a declaration: a missing one is an UnsatisfiedLinkError
//! only when an engine first calls it.

use std::collections::BTreeSet;
use std::path::Path;

fn files(dir: &Path, extension: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == extension) {
            let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
            out.push((stem, std::fs::read_to_string(&path).unwrap()));
        }
    }
    out
}

#[test]
fn every_java_native_method_has_its_entry_point_and_back() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut declared = BTreeSet::new();
    for (class, source) in files(&root.join("java/src/main/java/io/hyperstream/jni"), "java") {
        // A class nested in the file's class (four spaces in) names the natives declared in it.
        let mut nested: Option<String> = None;
        for line in source.lines() {
            let indent = line.len() - line.trim_start().len();
            let words: Vec<&str> = line.split_whitespace().collect();
            if indent == 4 {
                if let Some(at) = words.iter().position(|w| *w == "class" || *w == "record" || *w == "interface") {
                    nested = words.get(at + 1).map(|n| n.split(['(', '<', '{']).next().unwrap().to_owned());
                }
            }
            let Some(at) = words.iter().position(|w| *w == "native") else { continue };
            if !words[..at].contains(&"static") || words[0].starts_with('*') || words[0].starts_with("//") {
                continue;
            }
            let name = words[at + 2].split('(').next().unwrap();
            let owner = match (&nested, indent) {
                (Some(inner), 8) => format!("{class}_00024{inner}"),
                _ => class.clone(),
            };
            declared.insert(format!("Java_io_hyperstream_jni_{owner}_{name}"));
        }
    }
    let mut defined = BTreeSet::new();
    for (_, source) in files(&root.join("src/jni"), "rs") {
        for part in source.split("extern \"system\" fn ").skip(1) {
            let name = part.split(['<', '(']).next().unwrap().trim().to_owned();
            if name.starts_with("Java_") {
                defined.insert(name);
            }
        }
    }
    assert!(declared.len() > 50, "found only {} native declarations", declared.len());
    let undefined: Vec<_> = declared.difference(&defined).collect();
    let undeclared: Vec<_> = defined.difference(&declared).collect();
    assert!(undefined.is_empty(), "Java declares these, src/jni defines none: {undefined:?}");
    assert!(undeclared.is_empty(), "src/jni defines these, no Java class declares them: {undeclared:?}");
}
