//! Power loss, simulated. The local writes of this thread are traced (files written whole or in
//! place, through a mapping too, synced whole or in a range, renamed, linked and removed, directories
//! made and synced), and a model of a disk rebuilds what would be there had the power gone after any
//! prefix of them: a name is there once its directory was synced after it was made (and its
//! directory is there), and a file holds the bytes it held when they were last synced, nothing else
//! (the worst a file system may do: unsynced writes lost, unsynced growth cut off). Tables rebuilt so
//! at every point of their commits must open at a version whose rows are whole, never older than the
//! last commit that returned; a durable array store likewise at the state of whole changes.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One traced file system operation, by absolute path.
#[derive(Debug, Clone)]
pub enum Op {
    CreateDir(PathBuf),
    /// A new file with these bytes.
    Write(PathBuf, Vec<u8>),
    /// Bytes written at an offset of a file (made when absent), by `pwrite` or through a mapping.
    WriteAt(PathBuf, u64, Vec<u8>),
    SyncFile(PathBuf),
    /// A range of a file synced (`msync` of a mapped range).
    SyncRange(PathBuf, u64, u64),
    Link(PathBuf, PathBuf),
    Rename(PathBuf, PathBuf),
    Remove(PathBuf),
    SyncDir(PathBuf),
}

thread_local! {
    static TRACE: RefCell<Option<Vec<Op>>> = const { RefCell::new(None) };
}

/// Adds `op` to this thread's trace when one is being taken.
pub fn record(op: Op) {
    TRACE.with(|t| {
        if let Some(ops) = t.borrow_mut().as_mut() {
            ops.push(op);
        }
    });
}

fn start_tracing() {
    TRACE.with(|t| *t.borrow_mut() = Some(Vec::new()));
}

fn traced() -> usize {
    TRACE.with(|t| t.borrow().as_ref().map_or(0, Vec::len))
}

fn stop_tracing() -> Vec<Op> {
    TRACE.with(|t| t.borrow_mut().take().unwrap_or_default())
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Node {
    Dir,
    File(usize),
}

/// A file's bytes as written, and as last synced.
#[derive(Debug, Default)]
struct Inode {
    written: Vec<u8>,
    synced: Vec<u8>,
}

/// Rebuilds under `out` what the disk holds after a power loss once `ops` had run on `base` (a
/// directory that was durable, and empty, before them).
fn rebuild_after_power_loss(ops: &[Op], base: &Path, out: &Path) {
    let mut inodes: Vec<Inode> = Vec::new();
    let mut current: BTreeMap<PathBuf, Node> = BTreeMap::new();
    let mut durable: BTreeMap<PathBuf, Node> = BTreeMap::new();
    for op in ops {
        match op {
            Op::CreateDir(dir) => {
                current.insert(dir.clone(), Node::Dir);
            }
            Op::Write(path, bytes) => {
                inodes.push(Inode { written: bytes.clone(), synced: Vec::new() });
                current.insert(path.clone(), Node::File(inodes.len() - 1));
            }
            Op::WriteAt(path, at, bytes) => {
                let i = match current.get(path) {
                    Some(Node::File(i)) => *i,
                    _ => {
                        inodes.push(Inode::default());
                        current.insert(path.clone(), Node::File(inodes.len() - 1));
                        inodes.len() - 1
                    }
                };
                let (at, written) = (*at as usize, &mut inodes[i].written);
                if written.len() < at + bytes.len() {
                    written.resize(at + bytes.len(), 0);
                }
                written[at..at + bytes.len()].copy_from_slice(bytes);
            }
            Op::SyncFile(path) => {
                if let Some(Node::File(i)) = current.get(path) {
                    inodes[*i].synced = inodes[*i].written.clone();
                }
            }
            Op::SyncRange(path, at, len) => {
                if let Some(Node::File(i)) = current.get(path) {
                    let inode = &mut inodes[*i];
                    let end = ((at + len) as usize).min(inode.written.len());
                    let at = (*at as usize).min(end);
                    if inode.synced.len() < end {
                        inode.synced.resize(end, 0);
                    }
                    inode.synced[at..end].copy_from_slice(&inode.written[at..end]);
                }
            }
            Op::Link(from, to) => {
                let node = current[from];
                current.insert(to.clone(), node);
            }
            Op::Rename(from, to) => {
                let node = current.remove(from).expect("renamed a file that is there");
                current.insert(to.clone(), node);
            }
            Op::Remove(path) => {
                current.remove(path);
            }
            Op::SyncDir(dir) => {
                durable.retain(|p, _| p.parent() != Some(dir.as_path()));
                durable.extend(
                    current.iter().filter(|(p, _)| p.parent() == Some(dir.as_path())).map(|(p, n)| (p.clone(), *n)),
                );
            }
        }
    }
    for (path, node) in &durable {
        // Reachable only through durable directories.
        let reachable = path.ancestors().skip(1).take_while(|a| *a != base).all(|a| durable.get(a) == Some(&Node::Dir));
        if !reachable {
            continue;
        }
        let target = out.join(path.strip_prefix(base).expect("traced paths lie under the base"));
        match node {
            Node::Dir => std::fs::create_dir_all(&target).unwrap(),
            Node::File(i) => {
                std::fs::create_dir_all(target.parent().unwrap()).unwrap();
                std::fs::write(&target, &inodes[*i].synced).unwrap();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Arc;

    use arrow::array::{AsArray, FixedSizeListArray, Float32Array, Int64Array, RecordBatch, RecordBatchIterator};
    use arrow::datatypes::{DataType, Field, Int64Type, Schema};

    use super::*;
    use crate::scan::Predicate;
    use crate::table::iceberg::Table;
    use crate::Error;

    fn schema() -> Arc<Schema> {
        let item = Arc::new(Field::new("item", DataType::Float32, false));
        Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("v", DataType::FixedSizeList(item, 2), true),
        ]))
    }

    fn rows(ids: std::ops::Range<i64>) -> impl arrow::record_batch::RecordBatchReader {
        let item = Arc::new(Field::new("item", DataType::Float32, false));
        let values: Vec<f32> = ids.clone().flat_map(|i| [i as f32, 1.0]).collect();
        let batch = RecordBatch::try_new(
            schema(),
            vec![
                Arc::new(Int64Array::from_iter_values(ids)),
                Arc::new(FixedSizeListArray::new(item, 2, Arc::new(Float32Array::from(values)), None)),
            ],
        )
        .unwrap();
        RecordBatchIterator::new([Ok(batch)], schema())
    }

    fn live_ids(table: &Table) -> crate::Result<Vec<i64>> {
        let files = table.data_files(table.metadata().current_snapshot())?;
        let mut ids = Vec::new();
        for batch in table.scan_files(files, Some(&["id".to_owned()]), 1024)? {
            ids.extend(batch?.column(0).as_primitive::<Int64Type>().values().iter().copied());
        }
        ids.sort_unstable();
        Ok(ids)
    }

    #[test]
    fn tables_open_whole_after_a_power_loss_at_every_point_of_their_commits() {
        let base = tempfile::tempdir().unwrap();
        let location = base.path().join("t");
        start_tracing();
        // Each state the table reaches: how many operations it took, and its rows.
        let mut states: Vec<(usize, Vec<i64>)> = Vec::new();
        let mut table =
            Table::create(location.to_str().unwrap(), &schema(), Default::default(), &HashMap::new()).unwrap();
        states.push((traced(), Vec::new()));
        for i in 0..3 {
            table.append(rows(i * 100..(i + 1) * 100)).unwrap();
            states.push((traced(), (0..(i + 1) * 100).collect()));
        }
        let filter = Predicate::from_json(r#"{"op":"lt","column":"id","value":50}"#).unwrap();
        table.delete_where(Some(&filter)).unwrap();
        states.push((traced(), (50..300).collect()));
        table.rewrite_data_files(10_000).unwrap();
        states.push((traced(), (50..300).collect()));
        table.append(rows(300..310)).unwrap();
        states.push((traced(), (50..310).collect()));
        let ops = stop_tracing();
        assert!(ops.len() > 100, "{} operations traced", ops.len());
        assert!(ops.iter().any(|o| matches!(o, Op::Link(..))) && ops.iter().any(|o| matches!(o, Op::Rename(..))));

        drop(table);
        // Tables name their files by absolute path: each disk is rebuilt where the table was.
        let mut opened_at = vec![0usize; states.len()];
        for cut in 0..=ops.len() {
            // (A load of a missing table makes its directory: there may be one to remove.)
            let _ = std::fs::remove_dir_all(&location);
            rebuild_after_power_loss(&ops[..cut], base.path(), base.path());
            // The last state whose commit had returned, which must survive.
            let returned = states.iter().rposition(|(at, _)| *at <= cut);
            let loaded = Table::load(location.to_str().unwrap(), &HashMap::new());
            let table = match (loaded, returned) {
                (Ok(table), _) => table,
                (Err(Error::NotFound(_)), None) => continue, // the table's creation had not returned
                (Err(e), _) => panic!("after {cut} of {} operations the table does not open: {e}", ops.len()),
            };
            let ids = live_ids(&table).unwrap_or_else(|e| panic!("after {cut} operations a read fails: {e}"));
            let earliest = returned.unwrap_or(0);
            let state = (earliest..states.len().min(earliest + 2))
                .find(|&s| states[s].1 == ids)
                .unwrap_or_else(|| panic!("after {cut} operations the table holds {} rows, not those of a whole commit at or after the last that returned", ids.len()));
            opened_at[state] += 1;
        }
        eprintln!("{} power-loss points; tables opened at each state this often: {opened_at:?}", ops.len() + 1);
        assert!(opened_at.iter().all(|&n| n > 0), "every state was seen at some point: {opened_at:?}");
    }

    #[test]
    fn durable_array_stores_open_whole_after_a_power_loss_at_every_point_of_their_changes() {
        use crate::array::{ArrayStore, DType, StoreOptions};
        let base = tempfile::tempdir().unwrap();
        let root = base.path().join("store");
        std::fs::create_dir(&root).unwrap();
        let durable = StoreOptions { durable: true, ..Default::default() };
        let row = |v: u32| -> Vec<u8> { (0..4).flat_map(|_| v.to_le_bytes()).collect() };
        // Each state the store reaches: operations it took, and the rows of `a` and `b` (None: absent).
        type State = (Option<Vec<Vec<u8>>>, Option<Vec<Vec<u8>>>);
        let load = |store: &ArrayStore, name: &str| {
            store.load(name).ok().map(|d| d.bytes.chunks_exact(16).map(<[u8]>::to_vec).collect::<Vec<_>>())
        };
        let mut states: Vec<(usize, State)> = Vec::new();
        start_tracing();
        {
            let store = ArrayStore::open(&root, durable).unwrap();
            states.push((traced(), (None, None)));
            let snapshot = |store: &ArrayStore| (load(store, "a"), load(store, "b"));
            let start: Vec<u8> = (0..20).flat_map(|_| row(0)).collect();
            store.save("a", DType::U32, &[20, 4], &start).unwrap();
            states.push((traced(), snapshot(&store)));
            for v in 1..4u32 {
                store.append("a", &[row(v), row(v)].concat()).unwrap();
                states.push((traced(), snapshot(&store)));
                store.replace("a", &[1, 5, 7], &[row(v * 10), row(v * 10), row(v * 10)].concat()).unwrap();
                states.push((traced(), snapshot(&store)));
            }
            store.save("b", DType::U32, &[2, 4], &[row(9), row(9)].concat()).unwrap();
            states.push((traced(), snapshot(&store)));
            store.drop_rows("a", &[0, 3]).unwrap();
            states.push((traced(), snapshot(&store)));
            store.drop_array("b").unwrap();
            states.push((traced(), snapshot(&store)));
            store.replace("a", &[2], &row(77)).unwrap();
            states.push((traced(), snapshot(&store)));
        }
        let ops = stop_tracing();
        assert!(ops.iter().any(|o| matches!(o, Op::SyncRange(..))) && ops.iter().any(|o| matches!(o, Op::Rename(..))));

        let mut opened_at = vec![0usize; states.len()];
        for cut in 0..=ops.len() {
            std::fs::remove_dir_all(&root).unwrap();
            std::fs::create_dir(&root).unwrap();
            rebuild_after_power_loss(&ops[..cut], &root, &root);
            let store = ArrayStore::open(&root, durable)
                .unwrap_or_else(|e| panic!("after {cut} of {} operations the store does not open: {e}", ops.len()));
            let found: State = (load(&store, "a"), load(&store, "b"));
            let returned = states.iter().rposition(|(at, _)| *at <= cut).unwrap_or(0);
            let state = (returned..states.len().min(returned + 2))
                .find(|&s| states[s].1 == found)
                .unwrap_or_else(|| panic!("after {cut} of {} operations the store holds no whole state at or after the last that returned ({returned}): {found:?}", ops.len()));
            opened_at[state] += 1;
        }
        eprintln!("{} power-loss points; stores opened at each state this often: {opened_at:?}", ops.len() + 1);
        assert!(opened_at.iter().all(|&n| n > 0), "every state was seen at some point: {opened_at:?}");
    }
}
