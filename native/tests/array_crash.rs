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
            if i > stored.bytes.chunks_exact(4).map(|b| u32::from_le_bytes(b.try_into().unwrap())).max().unwrap() as u64 + 50 {
                break;
            }
        }
        let matched = matched.unwrap_or_else(|| panic!("kill {kill}: the store is not the state after any whole number of changes"));
        seen_changes.push(matched);

        // Opening as a writer removed what the killed change left half made.
        let mut files: Vec<String> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
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
