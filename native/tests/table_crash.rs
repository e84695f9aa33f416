//! A table writer process killed at random points while it commits appends: every time, the table
//! opens afterwards at the snapshot of some whole number of its appends with all of their rows, takes
//! appends again, and orphan removal then deletes exactly what the killed append left behind.
//!
//! The writer is this test binary run again with `HYPERSTREAM_TABLE_CRASH_DIR` set (the ignored test
//! `table_crash_writer` below); append `i` holds ids `i * ROWS .. (i + 1) * ROWS`.

mod common;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use arrow::array::{AsArray, Float32Array, Int64Array, RecordBatch, RecordBatchIterator};
use arrow::datatypes::{DataType, Field, Int64Type, Schema};
use hyperstream::rand::splitmix64 as mix;
use hyperstream::table::iceberg::Table;

const DIR_VAR: &str = "HYPERSTREAM_TABLE_CRASH_DIR";
const ROWS: i64 = 200;
const KILLS: u64 = 24;

fn schema() -> Arc<Schema> {
    let item = Arc::new(Field::new("item", DataType::Float32, false));
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("embedding", DataType::FixedSizeList(item, 4), false),
    ]))
}

fn append(i: i64) -> impl arrow::record_batch::RecordBatchReader {
    let ids: Int64Array = (i * ROWS..(i + 1) * ROWS).collect();
    let values = Float32Array::from_iter_values((0..ROWS * 4).map(|v| v as f32));
    let item = Arc::new(Field::new("item", DataType::Float32, false));
    let vectors = arrow::array::FixedSizeListArray::new(item, 4, Arc::new(values), None);
    let batch = RecordBatch::try_new(schema(), vec![Arc::new(ids), Arc::new(vectors)]).unwrap();
    RecordBatchIterator::new(vec![Ok(batch)], schema())
}

#[test]
#[ignore = "the writer process of killed_table_writers_leave_a_whole_snapshot; run by that test"]
fn table_crash_writer() {
    let dir = std::env::var(DIR_VAR).expect("run by killed_table_writers_leave_a_whole_snapshot");
    let mut table = Table::create(&dir, &schema(), BTreeMap::new(), &HashMap::new()).unwrap();
    println!("ready");
    for i in 0.. {
        table.append(append(i)).unwrap();
    }
}

fn files_under(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    for sub in ["data", "metadata"] {
        if let Ok(entries) = std::fs::read_dir(dir.join(sub)) {
            out.extend(entries.map(|e| format!("{sub}/{}", e.unwrap().file_name().to_string_lossy())));
        }
    }
    out.sort();
    out
}

#[test]
fn killed_table_writers_leave_a_whole_snapshot() {
    let mut appends_seen = Vec::new();
    let mut orphans_removed = 0;
    for kill in 0..KILLS {
        let dir = tempfile::tempdir().unwrap();
        common::kill_writer_after(
            "table_crash_writer",
            DIR_VAR,
            dir.path(),
            Duration::from_micros(2_000 + mix(kill) % 150_000),
        );

        let location = dir.path().to_str().unwrap();
        let mut table = Table::load(location, &HashMap::new()).unwrap();
        let files = table.data_files(table.snapshot(None, None).unwrap()).unwrap();
        let mut ids: Vec<i64> = Vec::new();
        for batch in table.scan_files(files.clone(), None, 4096).unwrap() {
            ids.extend(batch.unwrap().column(0).as_primitive::<Int64Type>().values().iter().copied());
        }
        ids.sort_unstable();
        let appends = ids.len() as i64 / ROWS;
        assert_eq!(
            ids,
            (0..appends * ROWS).collect::<Vec<_>>(),
            "kill {kill}: not the rows of {appends} whole appends"
        );
        assert_eq!(table.metadata().snapshots.len() as i64, appends, "kill {kill}: one snapshot per append");
        appends_seen.push(appends);

        // Orphan removal deletes only what no snapshot references; the table reads the same after it.
        let before = files_under(dir.path());
        let removed = table.remove_orphan_files_unchecked(i64::MAX).unwrap();
        let after = files_under(dir.path());
        orphans_removed += removed.len();
        assert_eq!(after.len() + removed.len(), before.len(), "kill {kill}");
        let still = table.data_files(table.snapshot(None, None).unwrap()).unwrap();
        assert_eq!(still.len(), files.len());
        let mut count = 0;
        for batch in table.scan_files(still, None, 4096).unwrap() {
            count += batch.unwrap().num_rows() as i64;
        }
        assert_eq!(count, appends * ROWS, "kill {kill}: rows lost to orphan removal");
        let data_after = after.iter().filter(|f| f.ends_with(".parquet")).count();
        assert_eq!(data_after, files.len(), "kill {kill}: data files left beside the committed ones: {after:?}");
        assert!(
            table.remove_orphan_files_unchecked(i64::MAX).unwrap().is_empty(),
            "kill {kill}: a second pass finds nothing"
        );

        // And the table takes appends again.
        table.append(append(appends)).unwrap();
        assert_eq!(table.metadata().snapshots.len() as i64, appends + 1);
    }
    eprintln!("killed writers stopped after these numbers of whole appends: {appends_seen:?}; {orphans_removed} orphans removed");
    assert!(orphans_removed > 0, "no kill left a half-made append behind");
    assert!(appends_seen.iter().any(|&n| n > 0), "no kill landed after the writer's first append");
    assert!(appends_seen.windows(2).any(|w| w[0] != w[1]), "every kill landed at the same point");
}

// ---- every kind of commit, killed at random points, with readers running --------------------------

const OPS_DIR_VAR: &str = "HYPERSTREAM_TABLE_OPS_CRASH_DIR";

/// The columns of the operations test: a vector column with an HNSW index (built as files are
/// written and rewritten) and a note column the writer renames back and forth.
fn ops_schema(note: &str) -> Arc<Schema> {
    let item = Arc::new(Field::new("item", DataType::Float32, false));
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("embedding", DataType::FixedSizeList(item, 4), false),
        Field::new(note, DataType::Utf8, true),
    ]))
}

fn ops_rows(ids: std::ops::Range<i64>, note: &str) -> impl arrow::record_batch::RecordBatchReader {
    let n = (ids.end - ids.start) as usize;
    let item = Arc::new(Field::new("item", DataType::Float32, false));
    let values = Float32Array::from_iter_values(ids.clone().flat_map(|i| [i as f32, 1.0, (i % 7) as f32, -1.0]));
    let notes = arrow::array::StringArray::from_iter_values(ids.clone().map(|i| format!("row {i}")));
    let batch = RecordBatch::try_new(
        ops_schema(note),
        vec![
            Arc::new(Int64Array::from_iter_values(ids)),
            Arc::new(arrow::array::FixedSizeListArray::new(item, 4, Arc::new(values), None)),
            Arc::new(notes),
        ],
    )
    .unwrap();
    assert_eq!(batch.num_rows(), n);
    RecordBatchIterator::new(vec![Ok(batch)], ops_schema(note))
}

/// Operation `i` of the writer's fixed sequence.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    /// Rows `i * ROWS ..` (and an HNSW graph for the new file).
    Append,
    /// The rows of the append before whose id % 5 == 0 (position deletes).
    Delete,
    /// Compaction: the small files and those with deleted rows rewritten into one (graphs rebuilt).
    Compact,
    /// Snapshot expiry, keeping the last three, with the files only expired snapshots referenced.
    Expire,
    /// The note column renamed (a schema change).
    Rename,
}

fn op(i: i64) -> Op {
    [Op::Append, Op::Delete, Op::Append, Op::Rename, Op::Append, Op::Compact, Op::Append, Op::Expire][(i % 8) as usize]
}

fn note_name(i: i64) -> &'static str {
    // The name the note column has before operation `i`: each rename flips it.
    if (0..i).filter(|&j| op(j) == Op::Rename).count() % 2 == 0 {
        "note"
    } else {
        "memo"
    }
}

/// The live ids once operations `0..done` have taken effect.
fn model(done: i64) -> Vec<i64> {
    let mut live = std::collections::BTreeSet::new();
    let mut last_append = None;
    for i in 0..done {
        match op(i) {
            Op::Append => {
                live.extend(i * ROWS..(i + 1) * ROWS);
                last_append = Some(i);
            }
            Op::Delete => {
                if let Some(a) = last_append {
                    live.retain(|id| !(*id >= a * ROWS && *id < (a + 1) * ROWS && id % 5 == 0));
                }
            }
            Op::Compact | Op::Expire | Op::Rename => {}
        }
    }
    live.into_iter().collect()
}

#[test]
#[ignore = "the writer process of killed_writers_of_every_kind_of_commit_leave_whole_operations; run by that test"]
fn table_ops_crash_writer() {
    let dir = std::env::var(OPS_DIR_VAR).expect("run by killed_writers_of_every_kind_of_commit_leave_whole_operations");
    let mut table = Table::create(&dir, &ops_schema("note"), BTreeMap::new(), &HashMap::new()).unwrap();
    table
        .create_vector_index(
            "embedding",
            hyperstream::vector::hnsw::HnswParams { m: 8, ef_construction: 40, ..Default::default() },
        )
        .unwrap();
    println!("ready");
    let mut last_append = None;
    for i in 0.. {
        match op(i) {
            Op::Append => {
                table.append(ops_rows(i * ROWS..(i + 1) * ROWS, note_name(i))).unwrap();
                last_append = Some(i);
            }
            Op::Delete => {
                let a = last_append.unwrap();
                let filter = format!(
                    r#"{{"op":"and","args":[{{"op":"ge","column":"id","value":{}}},{{"op":"lt","column":"id","value":{}}},{{"op":"in","column":"id","values":[{}]}}]}}"#,
                    a * ROWS,
                    (a + 1) * ROWS,
                    (a * ROWS..(a + 1) * ROWS)
                        .filter(|id| id % 5 == 0)
                        .map(|id| id.to_string())
                        .collect::<Vec<_>>()
                        .join(",")
                );
                table.delete_where(Some(&hyperstream::scan::Predicate::from_json(&filter).unwrap())).unwrap();
            }
            Op::Compact => {
                table.rewrite_data_files(1 << 20).unwrap();
            }
            Op::Expire => {
                table.expire_snapshots(Some(i64::MAX), Some(3)).unwrap();
            }
            Op::Rename => {
                let from = note_name(i);
                table.rename_column(from, if from == "note" { "memo" } else { "note" }).unwrap();
            }
        }
        println!("done {i}");
    }
}

/// The live ids of the table's current snapshot.
fn live_ids(table: &Table) -> hyperstream::Result<Vec<i64>> {
    let files = table.data_files(table.snapshot(None, None)?)?;
    let mut ids = Vec::new();
    for batch in table.scan(files, Some(&["id".to_owned()]), None, 4096)? {
        ids.extend(
            batch.map_err(hyperstream::Error::from)?.column(0).as_primitive::<Int64Type>().values().iter().copied(),
        );
    }
    ids.sort_unstable();
    Ok(ids)
}

#[test]
fn killed_writers_of_every_kind_of_commit_leave_whole_operations() {
    let mut reached = Vec::new();
    let mut reads = 0u64;
    for kill in 0..KILLS {
        let dir = tempfile::tempdir().unwrap();
        let location = dir.path().to_str().unwrap().to_owned();
        // Readers run while the writer commits and dies: every read they make sees some whole
        // operation's rows (a file removed under a reader by expiry ends that read with NotFound).
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let reader = {
            let (stop, location) = (stop.clone(), location.clone());
            std::thread::spawn(move || {
                let models: Vec<Vec<i64>> = (0..=200).map(model).collect();
                let mut seen = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let Ok(table) = Table::load(&location, &HashMap::new()) else { continue };
                    match live_ids(&table) {
                        Ok(ids) => {
                            let whole = models.contains(&ids);
                            assert!(whole, "kill {kill}: a reader saw rows of no whole operation: {} ids", ids.len());
                            seen += 1;
                        }
                        Err(hyperstream::Error::NotFound(_)) => {}
                        Err(e) => panic!("kill {kill}: a reader failed: {e}"),
                    }
                }
                seen
            })
        };
        let printed = common::kill_writer_after(
            "table_ops_crash_writer",
            OPS_DIR_VAR,
            dir.path(),
            Duration::from_micros(5_000 + mix(kill ^ 0x0905) % 400_000),
        );
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        reads += reader.join().unwrap();
        let done = printed.iter().filter(|l| l.starts_with("done ")).count() as i64;

        // The table opens at the state after the operations that finished, or after the one the kill
        // interrupted if its commit had landed.
        let mut table = Table::load(&location, &HashMap::new()).unwrap();
        let ids = live_ids(&table).unwrap();
        let landed = if ids == model(done) { done } else { done + 1 };
        assert_eq!(ids, model(landed), "kill {kill}: after {done} operations ({:?} next)", op(done));
        reached.push(landed);

        // A vector search over it answers (graphs or their fallback), orphan removal keeps every
        // committed row, and the table takes commits again.
        let search = hyperstream::vector::VectorSearch::new(
            "embedding",
            vec![3.0, 1.0, 3.0, -1.0],
            hyperstream::vector::Metric::L2,
            3,
        );
        let files = table.data_files(table.snapshot(None, None).unwrap()).unwrap();
        let nearest = table.search(files, Some(&["id".to_owned()]), None, &search, 4096).unwrap();
        assert_eq!(nearest.num_rows(), ids.len().min(3), "kill {kill}");
        table.remove_orphan_files_unchecked(i64::MAX).unwrap();
        assert_eq!(live_ids(&table).unwrap(), model(landed), "kill {kill}: rows lost to orphan removal");
        // (A rename leaves the rows as they were: the schema says which name the note column has.)
        let note = if table.arrow_schema().unwrap().field_with_name("memo").is_ok() { "memo" } else { "note" };
        table.append(ops_rows(1_000_000..1_000_000 + ROWS, note)).unwrap();
    }
    eprintln!("killed writers left the table after these numbers of whole operations: {reached:?}; readers made {reads} whole reads");
    assert!(reached.iter().any(|&n| n >= 8), "no kill landed after a whole round of operations");
    assert!(reads > 0, "the readers read nothing");
}
