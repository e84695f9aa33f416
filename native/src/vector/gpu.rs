//! Which GPU backends this build has and whether this machine can run them. The CPU path is always
//! there and is the reference every GPU result is checked against.

use std::fmt;

/// One backend's probe result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendStatus {
    /// `cpu`, `cuda` or `wgpu`.
    pub name: &'static str,
    /// Built into this library (its cargo feature was on).
    pub compiled: bool,
    /// A device answered.
    pub available: bool,
    /// The device, or why none answered.
    pub detail: String,
}

impl fmt::Display for BackendStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match (self.compiled, self.available) {
            (false, _) => "not compiled",
            (true, false) => "unavailable",
            (true, true) => "available",
        };
        write!(f, "{}: {state}", self.name)?;
        if !self.detail.is_empty() {
            write!(f, " ({})", self.detail)?;
        }
        Ok(())
    }
}

/// Probes every backend. Never fails: a backend that cannot start reports why.
pub fn probe() -> Vec<BackendStatus> {
    vec![
        BackendStatus {
            name: "cpu",
            compiled: true,
            available: true,
            detail: format!("{} threads", std::thread::available_parallelism().map_or(1, |n| n.get())),
        },
        probe_cuda(),
        probe_wgpu(),
    ]
}

fn status(name: &'static str, compiled: bool, outcome: Result<String, String>) -> BackendStatus {
    match outcome {
        Ok(detail) => BackendStatus { name, compiled, available: true, detail },
        Err(detail) => BackendStatus { name, compiled, available: false, detail },
    }
}

/// Runs a probe that may panic (dynamic loading of a missing driver does) and reports the panic.
#[cfg(any(feature = "cuda", feature = "wgpu"))]
fn guarded(probe: impl FnOnce() -> Result<String, String>) -> Result<String, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(probe)).unwrap_or_else(|payload| {
        let msg = payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_else(|| "driver probe panicked".to_owned());
        Err(msg)
    })
}

#[cfg(feature = "cuda")]
fn probe_cuda() -> BackendStatus {
    let outcome = guarded(|| {
        let ctx = cudarc::driver::CudaContext::new(0).map_err(|e| e.to_string())?;
        ctx.name().map_err(|e| e.to_string())
    });
    status("cuda", true, outcome)
}

#[cfg(not(feature = "cuda"))]
fn probe_cuda() -> BackendStatus {
    status("cuda", false, Err("build with --features cuda".to_owned()))
}

#[cfg(feature = "wgpu")]
fn probe_wgpu() -> BackendStatus {
    let outcome = guarded(|| {
        let instance = wgpu::Instance::default();
        let adapter = crate::runtime::block_on(
            instance.request_adapter(&wgpu::RequestAdapterOptions::default()),
        )
        .map_err(|e| e.to_string())?;
        let info = adapter.get_info();
        Ok(format!("{} via {:?}", info.name, info.backend))
    });
    status("wgpu", true, outcome)
}

#[cfg(not(feature = "wgpu"))]
fn probe_wgpu() -> BackendStatus {
    status("wgpu", false, Err("build with --features wgpu".to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cpu_backend_is_always_available_and_every_backend_reports() {
        let report = probe();
        let names: Vec<_> = report.iter().map(|b| b.name).collect();
        assert_eq!(names, ["cpu", "cuda", "wgpu"]);
        assert!(report[0].available);
        assert_eq!(report[1].compiled, cfg!(feature = "cuda"));
        assert_eq!(report[2].compiled, cfg!(feature = "wgpu"));
        assert!(report.iter().all(|b| b.compiled || !b.available));
    }
}
