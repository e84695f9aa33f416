//! Damaged and crafted files of every format the library parses, thousands of cases from a fixed
//! seed: random byte flips and truncations of a table's metadata JSON, manifest list, manifests,
//! Parquet footers, position delete files, deletion vectors, vector sidecars, HNSW graphs, scalar
//! indexes and NDV sketches, and of an array store's headers, replace journal, catalog and `.npy`
//! imports. Each case ends in an error that names the damaged file, or in the documented fallback
//! (an index, sidecar or sketch that does not check out is not used: the answer is the one the
//! undamaged table gives); never in a panic, and never in an abort (which would end this process).

use std::collections::{BTreeMap, HashMap};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::{
    AsArray, FixedSizeListArray, Float32Array, Int64Array, RecordBatch, RecordBatchIterator, StringArray,
};
use arrow::datatypes::{DataType, Field, Int64Type, Schema};
use hyperstream::array::{ArrayStore, DType, StoreOptions};
use hyperstream::error::ErrorKind;
use hyperstream::rand::splitmix64 as mix;
use hyperstream::scan::Predicate;
use hyperstream::table::iceberg::Table;
use hyperstream::vector::hnsw::HnswParams;
use hyperstream::vector::{Metric, VectorSearch};

const DIM: i32 = 8;
const CASES_PER_FILE: u64 = 150;

fn schema() -> Arc<Schema> {
    let item = Arc::new(Field::new("item", DataType::Float32, false));
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("name", DataType::Utf8, true),
        Field::new("embedding", DataType::FixedSizeList(item, DIM), false),
    ]))
}

fn rows(ids: std::ops::Range<i64>) -> impl arrow::record_batch::RecordBatchReader {
    let item = Arc::new(Field::new("item", DataType::Float32, false));
    let names: Vec<Option<String>> = ids.clone().map(|i| (i % 5 != 0).then(|| format!("name-{}", i % 37))).collect();
    let values: Vec<f32> =
        ids.clone().flat_map(|i| (0..DIM).map(move |j| ((i * 31 + i64::from(j) * 17) % 101) as f32 / 101.0)).collect();
    let batch = RecordBatch::try_new(
        schema(),
        vec![
            Arc::new(Int64Array::from_iter_values(ids)),
            Arc::new(StringArray::from(names)),
            Arc::new(FixedSizeListArray::new(item, DIM, Arc::new(Float32Array::from(values)), None)),
        ],
    )
    .unwrap();
    RecordBatchIterator::new(vec![Ok(batch)], schema())
}

/// A table with every kind of file: two data files with vector sidecars, HNSW graphs, scalar
/// indexes and NDV sketches, and deletes (position delete files for V2, deletion vectors for V3).
fn table(location: &Path, format_version: &str) {
    let properties = BTreeMap::from([("format-version".to_owned(), format_version.to_owned())]);
    let mut table = Table::create(location.to_str().unwrap(), &schema(), properties, &HashMap::new()).unwrap();
    table.create_scalar_index("id").unwrap();
    table.create_vector_index("embedding", HnswParams { metric: Metric::L2, ..HnswParams::default() }).unwrap();
    table.append(rows(0..1200)).unwrap();
    table.append(rows(1200..2000)).unwrap();
    table.delete_where(Some(&Predicate::from_json(r#"{"op":"lt","column":"id","value":40}"#).unwrap())).unwrap();
}

/// What a user's reads see of the table: every id, the ids a filtered (index-pruned) read returns,
/// the nearest ids of a vector search, and the column statistics.
type Answer = (Vec<i64>, Vec<i64>, Vec<i64>, String);

fn read_everything(location: &Path) -> hyperstream::Result<Answer> {
    let table = Table::load(location.to_str().unwrap(), &HashMap::new())?;
    let files = table.data_files(table.metadata().current_snapshot())?;
    let ids = |stream: hyperstream::scan::BatchStream| -> hyperstream::Result<Vec<i64>> {
        let mut out = Vec::new();
        for batch in stream {
            let batch = batch.map_err(hyperstream::Error::from)?;
            out.extend(batch.column(0).as_primitive::<Int64Type>().values().iter().copied());
        }
        out.sort_unstable();
        Ok(out)
    };
    let all = ids(table.scan(
        files.clone(),
        Some(&["id".to_owned(), "name".to_owned(), "embedding".to_owned()]),
        None,
        500,
    )?)?;
    let filter = Predicate::from_json(r#"{"op":"lt","column":"id","value":300}"#)?;
    let filtered = ids(table.scan(files.clone(), Some(&["id".to_owned()]), Some(filter.clone()), 500)?)?;
    let search = VectorSearch::new("embedding", vec![0.5; DIM as usize], Metric::L2, 5);
    let nearest = table.search(files.clone(), Some(&["id".to_owned()]), None, &search, 500)?;
    let nearest = nearest.column(0).as_primitive::<Int64Type>().values().to_vec();
    let explained = format!("{:?}", table.explain(files.clone(), Some(&filter))?.files);
    let stats = format!("{:?}{explained}", table.column_statistics(table.metadata().current_snapshot())?.len());
    Ok((all, filtered, nearest, stats))
}

/// Runs `read`, catching a panic without printing it (the caller reports it, with the case).
fn quietly<T>(read: impl FnOnce() -> T) -> std::thread::Result<T> {
    std::panic::set_hook(Box::new(|_| {}));
    let outcome = catch_unwind(AssertUnwindSafe(read));
    drop(std::panic::take_hook());
    outcome
}

/// A damaged copy of `original`: a few bytes flipped within `region` (byte offsets), or the file cut short.
fn damage(original: &[u8], region: std::ops::Range<usize>, seed: u64) -> Vec<u8> {
    let mut bytes = original.to_vec();
    let mut r = mix(seed);
    if r.is_multiple_of(4) {
        r = mix(r);
        bytes.truncate((r % original.len() as u64) as usize);
        return bytes;
    }
    let span = (region.end - region.start).max(1) as u64;
    for _ in 0..1 + mix(r) % 8 {
        r = mix(r);
        let at = region.start + (r % span) as usize;
        bytes[at] ^= (mix(r) % 255 + 1) as u8;
    }
    bytes
}

/// The files of a table directory by kind: what follows a data file's stem (`parquet`, `3.hnsw`, ...),
/// or the metadata file's role.
fn files_by_kind(location: &Path) -> BTreeMap<String, PathBuf> {
    let mut kinds = BTreeMap::new();
    for sub in ["data", "metadata"] {
        for entry in std::fs::read_dir(location.join(sub)).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let kind = if sub == "metadata" {
                if name.ends_with(".metadata.json") {
                    "metadata.json".to_owned()
                } else if name.starts_with("snap-") {
                    "manifest list".to_owned()
                } else if name.ends_with(".avro") {
                    "manifest".to_owned()
                } else {
                    continue; // the version hint: a reader probes past it
                }
            } else if name.ends_with(".parquet") && name.contains("delete") {
                "position deletes".to_owned()
            } else {
                name.split_once('.').map(|(_, rest)| rest.to_owned()).unwrap_or(name.clone())
            };
            // The newest metadata version: the one a load reads.
            let newer = kinds.get(&kind).is_none_or(|p: &PathBuf| {
                path.metadata().unwrap().modified().unwrap() > p.metadata().unwrap().modified().unwrap()
            });
            if newer {
                kinds.insert(kind, path);
            }
        }
    }
    kinds
}

/// Kinds whose damage the reads survive with the undamaged answer (accelerators and statistics).
fn falls_back(kind: &str) -> bool {
    ["vec", "hnsw", "sidx", "ndv"].iter().any(|k| kind.ends_with(k))
}

fn check_case(
    kind: &str,
    file: &Path,
    reference: &Answer,
    outcome: std::thread::Result<hyperstream::Result<Answer>>,
    case: u64,
) -> bool {
    let name = file.file_name().unwrap().to_string_lossy();
    match outcome {
        Err(payload) => panic!(
            "{kind} case {case}: reading a damaged {name} panicked: {}",
            hyperstream::error::panic_message(payload.as_ref())
        ),
        Ok(Ok(answer)) => {
            if falls_back(kind) {
                assert_eq!(&answer.0, &reference.0, "{kind} case {case}: every row still read");
                assert_eq!(&answer.1, &reference.1, "{kind} case {case}: a filtered read gives the same rows");
            }
            false
        }
        Ok(Err(e)) => {
            assert!(
                !falls_back(kind),
                "{kind} case {case}: a damaged {name} is an accelerator, yet the read failed: {e}"
            );
            // Metadata JSON and Avro carry no checksum: damage can leave a valid document that says
            // something else (a column without its dimension), which then fails as what it says.
            let still_valid = matches!(kind, "metadata.json" | "manifest" | "manifest list")
                && matches!(e.kind(), ErrorKind::InvalidArgument | ErrorKind::NotFound);
            assert!(e.kind() != ErrorKind::Internal, "{kind} case {case}: an internal error is a bug: {e}");
            assert!(
                still_valid || e.to_string().contains(name.as_ref()),
                "{kind} case {case}: the error names {name}: {e}"
            );
            true
        }
    }
}

fn fuzz_table(format_version: &str) {
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().join("t");
    table(&location, format_version);
    let reference = read_everything(&location).unwrap();
    assert_eq!(reference.0.len(), 1960);
    let kinds = files_by_kind(&location);
    for required in ["metadata.json", "manifest list", "manifest", "parquet"] {
        assert!(kinds.contains_key(required), "{required} in {kinds:?}");
    }
    let mut report = Vec::new();
    for (kind, file) in &kinds {
        let original = std::fs::read(file).unwrap();
        // A data file's pages carry no checksum (damage there decodes): its footer is what is parsed.
        let region =
            if kind == "parquet" { original.len().saturating_sub(4096)..original.len() } else { 0..original.len() };
        let mut failed = 0;
        for case in 0..CASES_PER_FILE {
            std::fs::write(
                file,
                damage(
                    &original,
                    region.clone(),
                    mix(case ^ (kind.len() as u64 * 7919)) ^ u64::from(format_version.as_bytes()[0]),
                ),
            )
            .unwrap();
            let outcome = quietly(|| read_everything(&location));
            failed += u64::from(check_case(kind, file, &reference, outcome, case));
        }
        std::fs::write(file, &original).unwrap();
        report.push(format!("{kind}: {CASES_PER_FILE} cases, {failed} refused by name"));
    }
    assert_eq!(read_everything(&location).unwrap(), reference, "the undamaged table reads as before");
    eprintln!("format version {format_version}: {}", report.join("; "));
}

#[test]
fn damaged_v2_table_files_end_in_named_errors_or_the_fallback() {
    fuzz_table("2");
}

#[test]
fn damaged_v3_table_files_end_in_named_errors_or_the_fallback() {
    fuzz_table("3");
}

#[test]
fn damaged_array_store_files_end_in_named_errors() {
    let dir = tempfile::tempdir().unwrap();
    let rows: Vec<u8> = (0..400u32).flat_map(|v| (v as f32).to_le_bytes()).collect();
    let store_dir = dir.path().join("store");
    {
        let store = ArrayStore::open(&store_dir, StoreOptions::default()).unwrap();
        store.save("emb", DType::F32, &[100, 4], &rows).unwrap();
        store.export_npy("emb", &dir.path().join("emb.npy")).unwrap();
    }
    let data = store_dir.join("data-1.hsa");
    // A committed replace journal (row 3 becomes 7s), as a writer killed while applying it leaves one.
    let journal = {
        let mut j = b"HSJRN001".to_vec();
        for word in [1u64, 16, 24] {
            j.extend(word.to_le_bytes());
        }
        j.extend(3u64.to_le_bytes());
        j.extend([7u8; 16]);
        j
    };
    let catalog = std::fs::read(store_dir.join("arrays.json")).unwrap();
    let header = std::fs::read(&data).unwrap();
    let npy = std::fs::read(dir.path().join("emb.npy")).unwrap();
    let read = |store_dir: &Path| -> hyperstream::Result<usize> {
        let store = ArrayStore::open(store_dir, StoreOptions::default())?;
        let loaded = store.load("emb")?;
        let lazy = store.lazy("emb")?;
        Ok(loaded.bytes.len() + lazy.bytes().len())
    };
    for (kind, path, original, region) in [
        ("array header", data.clone(), header.clone(), 0..64),
        ("replace journal", PathBuf::from(format!("{}.journal", data.display())), journal, 0..usize::MAX),
        ("catalog", store_dir.join("arrays.json"), catalog.clone(), 0..usize::MAX),
    ] {
        let region = region.start..region.end.min(original.len());
        for case in 0..CASES_PER_FILE {
            std::fs::write(&data, &header).unwrap();
            std::fs::write(&path, damage(&original, region.clone(), mix(case ^ 0xA11A))).unwrap();
            let outcome = quietly(|| read(&store_dir));
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            match outcome {
                Err(payload) => {
                    panic!("{kind} case {case} panicked: {}", hyperstream::error::panic_message(payload.as_ref()))
                }
                Ok(Err(e)) => {
                    // A damaged catalog can still be a valid one naming another array file or dtype.
                    let still_valid =
                        kind == "catalog" && matches!(e.kind(), ErrorKind::InvalidArgument | ErrorKind::NotFound);
                    assert!(e.kind() != ErrorKind::Internal, "{kind} case {case}: an internal error is a bug: {e}");
                    assert!(
                        still_valid || e.to_string().contains(&name) || e.to_string().contains("data-1.hsa"),
                        "{kind} case {case}: {e}"
                    );
                }
                Ok(Ok(_)) => {}
            }
            let _ = std::fs::remove_file(format!("{}.journal", data.display()));
            std::fs::write(store_dir.join("arrays.json"), &catalog).unwrap();
        }
    }
    std::fs::write(&data, &header).unwrap();
    assert_eq!(read(&store_dir).unwrap(), 2 * rows.len(), "the undamaged store reads as before");
    // .npy imports of damaged files.
    let store = ArrayStore::open(dir.path().join("imports"), StoreOptions::default()).unwrap();
    let damaged_npy = dir.path().join("damaged.npy");
    for case in 0..CASES_PER_FILE * 2 {
        std::fs::write(&damaged_npy, damage(&npy, 0..npy.len().min(128), mix(case ^ 0x4E59))).unwrap();
        let outcome = quietly(|| store.import_npy(&format!("a{case}"), &damaged_npy));
        match outcome {
            Err(payload) => {
                panic!(".npy case {case} panicked: {}", hyperstream::error::panic_message(payload.as_ref()))
            }
            Ok(Err(e)) => assert!(e.to_string().contains("damaged.npy"), ".npy case {case}: {e}"),
            Ok(Ok(_)) => {}
        }
    }
}
