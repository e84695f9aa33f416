//! A writer process killed at random points while it appends, replaces and drops rows: every time,
//! the store opens afterwards at the state after some whole number of its changes, and the files of a
//! half-made change are gone.
//!
//! The writer is this test binary run again with `HYPERSTREAM_ARRAY_CRASH_DIR` set (the ignored test
//! `crash_writer` below); its changes are a pure function of their number, so the checker replays them.

mod common;

use std::time::Duration;

use hyperstream::array::{ArrayStore, DType, StoreOptions};
use hyperstream::rand::splitmix64 as mix;

const DIR_VAR: &str = "HYPERSTREAM_ARRAY_CRASH_DIR";
const WIDTH: usize = 16;
const START_ROWS: usize = 300;
const KILLS: u64 = 24;

fn row(value: u32) -> Vec<u8> {
    (0..WIDTH).flat_map(|_| value.to_le_bytes()).collect()
}

/// Change number `i` (from 1) of array `a`, as the writer makes it and the checker replays it.
enum Change {
    Append(Vec<u8>),
    Replace(Vec<u64>, Vec<u8>),
    DropRows(Vec<u64>),
}

fn change(i: u64, rows: usize) -> Change {
    let value = i as u32;
    match i % 7 {
        0 | 3 => Change::Append((0..1 + i % 40).flat_map(|_| row(value)).collect()),
        6 => Change::DropRows((0..3).map(|j| mix(i * 31 + j) % rows as u64).collect()),
        _ => {
            let indices: Vec<u64> = (0..1 + mix(i) % 60).map(|j| mix(i * 1000 + j) % rows as u64).collect();
            let bytes = indices.iter().flat_map(|_| row(value)).collect();
            Change::Replace(indices, bytes)
        }
    }
}

fn apply(model: &mut Vec<Vec<u8>>, c: &Change) {
    match c {
        Change::Append(bytes) => model.extend(bytes.chunks_exact(WIDTH * 4).map(<[u8]>::to_vec)),
        Change::Replace(indices, bytes) => {
            for (&i, r) in indices.iter().zip(bytes.chunks_exact(WIDTH * 4)) {
                model[i as usize] = r.to_vec();
            }
        }
        Change::DropRows(indices) => {
            let mut at = 0u64;
            model.retain(|_| {
                at += 1;
                !indices.contains(&(at - 1))
            });
        }
    }
}

#[test]
#[ignore = "the writer process of killed_writers_leave_a_whole_state; run by that test"]
fn crash_writer() {
    let dir = std::env::var(DIR_VAR).expect("run by killed_writers_leave_a_whole_state");
    let store = ArrayStore::open(&dir, StoreOptions::default()).unwrap();
    let start: Vec<u8> = (0..START_ROWS).flat_map(|_| row(0)).collect();
    store.save("a", DType::U32, &[START_ROWS as u64, WIDTH as u64], &start).unwrap();
    println!("ready");
    let mut rows = START_ROWS;
    for i in 1.. {
        match change(i, rows) {
            Change::Append(bytes) => rows = store.append("a", &bytes).unwrap() as usize,
            Change::Replace(indices, bytes) => store.replace("a", &indices, &bytes).unwrap(),
            Change::DropRows(indices) => rows = store.drop_rows("a", &indices).unwrap() as usize,
        }
    }
}

#[test]
fn killed_writers_leave_a_whole_state() {
    let mut seen_changes = Vec::new();
    for kill in 0..KILLS {
        let dir = tempfile::tempdir().unwrap();
        common::kill_writer_after("crash_writer", DIR_VAR, dir.path(), Duration::from_micros(500 + mix(kill) % 40_000));

        let store = ArrayStore::open(dir.path(), StoreOptions::default()).unwrap();
        let stored = store.load("a").unwrap();
        assert_eq!(stored.info.shape[1], WIDTH as u64);
        let mut model: Vec<Vec<u8>> = (0..START_ROWS).map(|_| row(0)).collect();
        let mut matched = None;
        for i in 0..1_000_000u64 {
            if i > 0 {
                let c = change(i, model.len());
                apply(&mut model, &c);
            }
            if model.len() == stored.info.rows() as usize && model.concat() == stored.bytes.as_slice() {
                matched = Some(i);
                break;
            }
            // Every value stored is the number of the change that wrote it; past the largest, no match.
            if i > stored.bytes.chunks_exact(4).map(|b| u32::from_le_bytes(b.try_into().unwrap())).max().unwrap() as u64
                + 50
            {
                break;
            }
        }
        let matched = matched
            .unwrap_or_else(|| panic!("kill {kill}: the store is not the state after any whole number of changes"));
        seen_changes.push(matched);

        // Opening as a writer removed what the killed change left half made.
        let mut files: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        files.sort();
        let data: Vec<&String> = files.iter().filter(|f| f.ends_with(".hsa")).collect();
        assert_eq!(data.len(), 1, "kill {kill}: orphan data files left: {files:?}");
        assert!(!files.iter().any(|f| f.contains(".tmp-")), "kill {kill}: {files:?}");
        // And the store takes changes again.
        store.append("a", &row(7)).unwrap();
        assert_eq!(store.info("a").unwrap().rows(), stored.info.rows() + 1);
    }
    eprintln!("killed writers stopped after these numbers of whole changes: {seen_changes:?}");
    assert!(seen_changes.iter().any(|&n| n > 0), "no kill landed after the writer's first change");
}

const BATCH_DIR_VAR: &str = "HYPERSTREAM_ARRAY_BATCH_CRASH_DIR";

/// Batch `j` (from 1) of the batch writer: rows of `a` replaced and rows appended to it, and every
/// third batch array `b` saved anew (`j` rows of value `j`).
struct Batch {
    replaced: Vec<u64>,
    appended: usize,
    saved_b: bool,
}

fn batch_of(j: u64, rows: usize) -> Batch {
    let mut replaced: Vec<u64> = (0..1 + mix(j) % 20).map(|k| mix(j * 1000 + k) % rows as u64).collect();
    replaced.sort_unstable();
    replaced.dedup();
    Batch { replaced, appended: 1 + (j % 10) as usize, saved_b: j.is_multiple_of(3) }
}

/// The steps of a flush in the order it writes them (the catalog change for `b`, the replace of
/// `a`'s rows, the append to `a`), each atomic: the states a store may be in are the state after
/// whole batches with a prefix of the next batch's steps.
#[derive(Clone, PartialEq, Debug)]
struct BatchModel {
    a: Vec<Vec<u8>>,
    b: Option<Vec<Vec<u8>>>,
}

impl BatchModel {
    fn step(&mut self, j: u64, batch: &Batch, step: usize) {
        match step {
            0 if batch.saved_b => self.b = Some((0..j).map(|_| row(j as u32)).collect()),
            1 => {
                for &i in &batch.replaced {
                    self.a[i as usize] = row(j as u32);
                }
            }
            2 => self.a.extend((0..batch.appended).map(|_| row(j as u32))),
            _ => {}
        }
    }
}

#[test]
#[ignore = "the writer process of killed_batch_flushes_leave_whole_steps; run by that test"]
fn batch_crash_writer() {
    let dir = std::env::var(BATCH_DIR_VAR).expect("run by killed_batch_flushes_leave_whole_steps");
    let store = std::sync::Arc::new(ArrayStore::open(&dir, StoreOptions::default()).unwrap());
    let start: Vec<u8> = (0..START_ROWS).flat_map(|_| row(0)).collect();
    store.save("a", DType::U32, &[START_ROWS as u64, WIDTH as u64], &start).unwrap();
    println!("ready");
    let mut rows = START_ROWS;
    for j in 1.. {
        let batch = store.batch();
        let planned = batch_of(j, rows);
        for &i in &planned.replaced {
            batch.replace("a", &[i], &row(j as u32)).unwrap();
        }
        batch.append("a", &(0..planned.appended).flat_map(|_| row(j as u32)).collect::<Vec<u8>>()).unwrap();
        if planned.saved_b {
            let b: Vec<u8> = (0..j).flat_map(|_| row(j as u32)).collect();
            batch.save("b", DType::U32, &[j, WIDTH as u64], &b).unwrap();
        }
        batch.flush().unwrap();
        rows += planned.appended;
    }
}

/// A writer flushing batches of changes (replaced and appended rows of one array, another array
/// saved anew every third batch), killed at 24 points: every time the store holds the state after
/// whole batches and whole steps of the next one, and nothing half made is left.
#[test]
fn killed_batch_flushes_leave_whole_steps() {
    let mut seen = Vec::new();
    for kill in 0..KILLS {
        let dir = tempfile::tempdir().unwrap();
        common::kill_writer_after(
            "batch_crash_writer",
            BATCH_DIR_VAR,
            dir.path(),
            Duration::from_micros(500 + mix(kill + 99) % 40_000),
        );

        let store = ArrayStore::open(dir.path(), StoreOptions::default()).unwrap();
        let a = store.load("a").unwrap();
        let stored = BatchModel {
            a: a.bytes.chunks_exact(WIDTH * 4).map(<[u8]>::to_vec).collect(),
            b: store.load("b").ok().map(|b| b.bytes.chunks_exact(WIDTH * 4).map(<[u8]>::to_vec).collect()),
        };
        let newest = a.bytes.chunks_exact(4).map(|b| u32::from_le_bytes(b.try_into().unwrap())).max().unwrap() as u64;
        let mut model = BatchModel { a: (0..START_ROWS).map(|_| row(0)).collect(), b: None };
        let mut matched = None;
        'batches: for j in 1..=newest + 5 {
            let batch = batch_of(j, model.a.len());
            let mut partial = model.clone();
            for step in 0..3 {
                if partial == stored {
                    matched = Some((j - 1, step));
                    break 'batches;
                }
                partial.step(j, &batch, step);
            }
            model = partial;
        }
        let (whole, steps) =
            matched.unwrap_or_else(|| panic!("kill {kill}: the store is not a state of whole batches and steps"));
        seen.push((whole, steps));

        let mut files: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        files.sort();
        let data = files.iter().filter(|f| f.ends_with(".hsa")).count();
        assert_eq!(data, 1 + usize::from(stored.b.is_some()), "kill {kill}: orphan data files left: {files:?}");
        assert!(!files.iter().any(|f| f.contains(".tmp-")), "kill {kill}: {files:?}");
        let store = std::sync::Arc::new(store);
        let batch = store.batch();
        batch.append("a", &row(7)).unwrap();
        batch.flush().unwrap();
        assert_eq!(
            store.info("a").unwrap().rows() as usize,
            stored.a.len() + 1,
            "kill {kill}: the store takes batches again"
        );
    }
    eprintln!("killed batch writers stopped after (whole batches, steps of the next): {seen:?}");
    assert!(seen.iter().any(|&(whole, _)| whole > 0), "no kill landed after the writer's first batch");
}
