//! The library's one long-lived async runtime. Object-store I/O runs on it; JNI calls block on it
//! from engine threads without starving them, because the runtime has threads of its own.

use std::sync::OnceLock;

use tokio::runtime::{Builder, Runtime};

/// The shared runtime, started on first use.
pub fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        Builder::new_multi_thread()
            .thread_name("hyperstream-io")
            .enable_all()
            .build()
            .expect("the HyperStream async runtime could not start")
    })
}

/// Runs a future to completion on the shared runtime from a synchronous caller.
pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    runtime().block_on(future)
}

/// Bytes the C allocator holds for the process (every library in it, the JVM's own native memory
/// included), or `None` where the allocator cannot tell. Leak tests watch this figure stay flat.
pub fn allocated_bytes() -> Option<u64> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallinfo2 only reads the allocator's counters.
        let info = unsafe { libc::mallinfo2() };
        Some((info.uordblks + info.hblkhd) as u64)
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        None
    }
}

/// Reports something a caller should know about but that does not stop the work (a damaged sidecar
/// the answer was computed without): one line on stderr.
pub fn warn(message: &str) {
    eprintln!("hyperstream: warning: {message}");
}

/// Reports the progress of long work (index builds): one line on stderr, which engines keep in
/// their task and driver logs.
pub fn progress(message: &str) {
    eprintln!("hyperstream: {message}");
}

#[cfg(test)]
mod tests {
    #[test]
    fn block_on_runs_futures_on_the_shared_runtime() {
        let name = super::block_on(async {
            tokio::spawn(async { std::thread::current().name().map(str::to_owned) }).await.unwrap()
        });
        assert_eq!(name.as_deref(), Some("hyperstream-io"));
    }

    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn allocated_bytes_sees_a_large_allocation() {
        // The figure is process-wide, and tests on other threads allocate and free beside this one:
        // one of a few tries sees the block without their noise.
        let mut seen = Vec::new();
        for _ in 0..20 {
            let before = super::allocated_bytes().unwrap();
            let block = vec![1u8; 64 << 20];
            let during = super::allocated_bytes().unwrap();
            drop(std::hint::black_box(block));
            if during >= before + (64 << 20) - (1 << 20) {
                return;
            }
            seen.push((before, during));
        }
        panic!("no try saw the 64 MiB block: {seen:?}");
    }
}
