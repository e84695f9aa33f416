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

#[cfg(test)]
mod tests {
    #[test]
    fn block_on_runs_futures_on_the_shared_runtime() {
        let name = super::block_on(async {
            tokio::spawn(async { std::thread::current().name().map(str::to_owned) })
                .await
                .unwrap()
        });
        assert_eq!(name.as_deref(), Some("hyperstream-io"));
    }
}
