//! Tables on S3: the same table engine against a real S3-compatible server on loopback (moto's S3,
//! started by `tests/s3_server.py`), whose conditional puts are what commits rely on there.
//! `./build-connectors.sh test` installs moto into its test Python and points
//! `HYPERSTREAM_TEST_PYTHON` at it; without that variable the tests say so and do nothing.

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

use arrow::array::{
    AsArray, FixedSizeListArray, Float32Array, Int64Array, RecordBatch, RecordBatchIterator, StringArray,
};
use arrow::datatypes::{DataType, Field, Float64Type, Int64Type, Schema};
use hyperstream::scan::Predicate;
use hyperstream::table::iceberg::Table;
use hyperstream::vector::search::VectorSearch;
use hyperstream::vector::Metric;
use hyperstream::Error;

/// The S3 server, killed when dropped.
struct Server {
    child: Child,
    port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn server(bucket: &str) -> Option<Server> {
    server_with(&[bucket])
}

/// The S3 server started with `args` (`--faults SEED` first, then the buckets).
fn server_with(args: &[&str]) -> Option<Server> {
    let Some(python) = std::env::var_os("HYPERSTREAM_TEST_PYTHON") else {
        eprintln!("HYPERSTREAM_TEST_PYTHON is not set: point it at a Python with moto[server] to run the S3 tests");
        return None;
    };
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/s3_server.py");
    let mut child = Command::new(python)
        .arg(script)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("starting tests/s3_server.py");
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    while !line.starts_with("READY") {
        line.clear();
        assert!(out.read_line(&mut line).unwrap() > 0, "the S3 server stopped before it was ready");
    }
    let port = line.trim().trim_start_matches("READY ").parse().unwrap();
    Some(Server { child, port })
}

fn options(server: &Server) -> HashMap<String, String> {
    [
        ("aws_endpoint", format!("http://127.0.0.1:{}", server.port)),
        ("aws_allow_http", "true".to_owned()),
        ("aws_access_key_id", "hyperstream".to_owned()),
        ("aws_secret_access_key", "hyperstream".to_owned()),
        ("aws_region", "us-east-1".to_owned()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}

fn schema() -> Arc<Schema> {
    let item = Arc::new(Field::new("item", DataType::Float32, false));
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("name", DataType::Utf8, true),
        Field::new("embedding", DataType::FixedSizeList(item, 3), false),
    ]))
}

fn rows(ids: std::ops::Range<i64>) -> impl arrow::record_batch::RecordBatchReader {
    let names: Vec<Option<String>> = ids.clone().map(|i| (i % 3 != 0).then(|| format!("n{i}"))).collect();
    let values = Float32Array::from_iter_values(ids.clone().flat_map(|i| [i as f32, 1.0, -(i as f32)]));
    let item = Arc::new(Field::new("item", DataType::Float32, false));
    let batch = RecordBatch::try_new(
        schema(),
        vec![
            Arc::new(Int64Array::from_iter_values(ids)),
            Arc::new(StringArray::from(names)),
            Arc::new(FixedSizeListArray::new(item, 3, Arc::new(values), None)),
        ],
    )
    .unwrap();
    RecordBatchIterator::new(vec![Ok(batch)], schema())
}

fn ids(table: &Table, snapshot: Option<i64>) -> Vec<i64> {
    let files = table.data_files(table.snapshot(snapshot, None).unwrap()).unwrap();
    let mut ids: Vec<i64> = table
        .scan_files(files, Some(&["id".to_owned()]), 1000)
        .unwrap()
        .flat_map(|b| b.unwrap().column(0).as_primitive::<Int64Type>().values().to_vec())
        .collect();
    ids.sort_unstable();
    ids
}

#[test]
fn s3_tables_append_scan_search_delete_travel_and_clean_up() {
    let Some(server) = server("lake") else { return };
    let options = options(&server);
    let location = "s3://lake/db/events";
    let mut table = Table::create(location, &schema(), BTreeMap::new(), &options).unwrap();
    let first = table.append(rows(0..300)).unwrap();
    table.append(rows(300..500)).unwrap();
    // A second handle, as another engine task would open it, sees both commits.
    let mut other = Table::load(location, &options).unwrap();
    assert_eq!(ids(&other, None), (0..500).collect::<Vec<_>>());
    assert_eq!(ids(&other, Some(first)), (0..300).collect::<Vec<_>>());
    // Search reads the vector sidecars from the bucket.
    let files = other.data_files(other.metadata().current_snapshot()).unwrap();
    let search = VectorSearch::new("embedding", vec![250.0, 1.0, -250.0], Metric::L2, 3);
    let found = other.search(files, Some(&["id".to_owned()]), None, &search, 100).unwrap();
    assert_eq!(found.column(0).as_primitive::<Int64Type>().values().to_vec(), vec![250, 249, 251]);
    assert!(found.column(1).as_primitive::<Float64Type>().value(0) < 1e-9);
    // Deletes write position delete files into the bucket.
    let filter = Predicate::from_json(
        r#"{"op":"or","args":[{"op":"is_null","column":"name"},{"op":"ge","column":"id","value":400}]}"#,
    )
    .unwrap();
    let (_, deleted) = other.delete_where(Some(&filter)).unwrap();
    let left: Vec<i64> = (0..400).filter(|i| i % 3 != 0).collect();
    assert_eq!(deleted as usize, 500 - left.len());
    table.refresh().unwrap();
    assert_eq!(ids(&table, None), left);
    // A write that never committed leaves orphans; orphan removal lists the bucket and takes them.
    let orphan = table.write_data_files(rows(900..910)).unwrap().remove(0);
    let removed = table.remove_orphan_files_unchecked(i64::MAX).unwrap();
    assert!(removed.iter().any(|p| orphan.file_path.ends_with(p.as_str())), "{removed:?}");
    assert_eq!(ids(&table, None), left);
    // The bucket holds an Iceberg table: metadata versions and the hint beside them.
    let reloaded = Table::load(location, &options).unwrap();
    assert_eq!(reloaded.version(), 4);
    // A missing table in the bucket is named.
    let missing = Table::load("s3://lake/db/nothing", &options).unwrap_err();
    assert!(missing.to_string().contains("nothing"), "{missing}");
}

#[test]
fn two_writers_racing_on_s3_lose_no_commit() {
    let Some(server) = server("race") else { return };
    let options = options(&server);
    let location = "s3://race/db/t";
    Table::create(location, &schema(), BTreeMap::new(), &options).unwrap();
    const APPENDS: i64 = 25;
    let writers: Vec<_> = (0..2i64)
        .map(|w| {
            let options = options.clone();
            std::thread::spawn(move || {
                let mut table = Table::load(location, &options).unwrap();
                for i in 0..APPENDS {
                    let start = w * 10_000 + i * 10;
                    table.append(rows(start..start + 10)).unwrap();
                }
            })
        })
        .collect();
    for writer in writers {
        writer.join().unwrap();
    }
    let table = Table::load(location, &options).unwrap();
    assert_eq!(table.metadata().snapshots.len() as i64, 2 * APPENDS);
    assert_eq!(table.version() as i64, 2 * APPENDS + 1);
    let mut want: Vec<i64> = (0..2i64).flat_map(|w| (0..APPENDS * 10).map(move |i| w * 10_000 + i)).collect();
    want.sort_unstable();
    assert_eq!(ids(&table, None), want);
}

/// What the faulty server says it injected: (stored then answered 500, refused with 503, stored
/// then the connection dropped, dropped before storing).
fn injected(server: &Server) -> (u64, u64, u64, u64) {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    write!(stream, "GET /_faults HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let body: serde_json::Value = serde_json::from_str(answer.split("\r\n\r\n").nth(1).unwrap()).unwrap();
    let count = |key: &str| body[key].as_u64().unwrap();
    (count("stored_then_500"), count("refused_503"), count("stored_then_dropped"), count("dropped"))
}

#[test]
fn commits_whose_answers_are_lost_land_exactly_once() {
    // Puts of metadata versions that the store keeps but answers with a 500, or whose connection it
    // drops, are retried by the client, and the retry of the conditional put finds the version
    // there: its own. Taken for a lost race, the writer would rebase onto its own snapshot and commit
    // its rows twice.
    let Some(server) = server_with(&["--faults", "7", "faulty"]) else { return };
    let options = options(&server);
    let location = "s3://faulty/db/t";
    let mut table = Table::create(location, &schema(), BTreeMap::new(), &options).unwrap();
    const APPENDS: i64 = 30;
    let mut snapshots = Vec::new();
    for i in 0..APPENDS {
        snapshots.push(table.append(rows(i * 10..i * 10 + 10)).unwrap());
    }
    let (lost_answers, refused, stored_dropped, dropped) = injected(&server);
    assert!(
        lost_answers >= 3 && refused >= 1 && stored_dropped >= 1 && dropped >= 1,
        "the server injected its faults: {lost_answers} lost answers, {refused} refusals, {stored_dropped} connections dropped \
         after storing, {dropped} before"
    );
    let table = Table::load(location, &options).unwrap();
    assert_eq!(table.metadata().snapshots.len() as i64, APPENDS, "one snapshot per append");
    let ids_committed: Vec<i64> = table.metadata().snapshots.iter().map(|s| s.snapshot_id).collect();
    assert_eq!(ids_committed, snapshots, "each append's own snapshot, in order");
    assert_eq!(ids(&table, None), (0..APPENDS * 10).collect::<Vec<_>>(), "every row once");
}

#[test]
fn a_commit_whose_outcome_cannot_be_read_back_is_unknown_and_keeps_its_files() {
    // The store keeps the new metadata version, answers 500, and refuses the read-back: the writer
    // cannot tell whether its commit took effect, says so, and deletes nothing.
    let Some(server) = server_with(&["--faults", "unknown", "unknown"]) else { return };
    let options = options(&server);
    let location = "s3://unknown/db/t";
    let mut table = Table::create(location, &schema(), BTreeMap::new(), &options).unwrap();
    let e = table.append(rows(0..10)).unwrap_err();
    assert!(matches!(e, Error::CommitStateUnknown(_)), "{e}");
    assert!(e.to_string().contains("v2.metadata.json") && e.to_string().contains("reload the table"), "{e}");
    // It did take effect: a reload finds the snapshot, whose files are all there.
    let reloaded = Table::load(location, &options).unwrap();
    assert_eq!(reloaded.metadata().snapshots.len(), 1);
    assert_eq!(ids(&reloaded, None), (0..10).collect::<Vec<_>>());
}
