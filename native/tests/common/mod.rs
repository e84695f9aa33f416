//! What the crash tests share: a writer that is this test binary run again, and its killing.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// Starts this test binary's ignored test `writer` with `var` set to `dir`, waits until it prints
/// `ready`, lets it run for `run`, then kills it; returns the lines it printed after `ready`.
pub fn kill_writer_after(writer: &str, var: &str, dir: &Path, run: Duration) -> Vec<String> {
    let exe = std::env::current_exe().unwrap();
    let mut child: Child = Command::new(exe)
        .args(["--ignored", "--exact", writer, "--nocapture", "--test-threads=1"])
        .env(var, dir)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    while !line.contains("ready") {
        line.clear();
        assert!(out.read_line(&mut line).unwrap() > 0, "the writer stopped before it was ready");
    }
    std::thread::sleep(run);
    child.kill().unwrap();
    child.wait().unwrap();
    out.lines().map_while(|l| l.ok()).collect()
}
