//! Native objects handed to Java as `long` handles.
//!
//! A handle is a pointer to a heap box holding an `Arc` of the object and its type. Java owns the box
//! (one per handle, freed exactly once by `release`); every call clones the `Arc`, so a stream that
//! outlives its table's handle keeps the table alive. The type check turns a handle passed to the
//! wrong class's method into an error instead of undefined behaviour.

use std::any::Any;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use jni::sys::jlong;

use crate::{Error, Result};

static LIVE: AtomicI64 = AtomicI64::new(0);

struct Slot {
    value: Arc<dyn Any + Send + Sync>,
}

/// Boxes `value` and returns its handle.
pub fn into_handle<T: Send + Sync + 'static>(value: T) -> jlong {
    LIVE.fetch_add(1, Ordering::Relaxed);
    Box::into_raw(Box::new(Slot { value: Arc::new(value) })) as jlong
}

/// The object behind `handle`.
///
/// # Safety
/// `handle` must be 0 or a value returned by [`into_handle`] that has not been released. The Java
/// base class `NativeHandle` guarantees this: it never passes a closed handle and serializes
/// `release` after every call in flight.
pub unsafe fn get<T: Send + Sync + 'static>(handle: jlong) -> Result<Arc<T>> {
    if handle == 0 {
        return Err(Error::invalid("native handle is closed"));
    }
    // SAFETY: by the contract above the pointer is a live `Slot` box.
    let slot = unsafe { &*(handle as *const Slot) };
    slot.value
        .clone()
        .downcast::<T>()
        .map_err(|_| Error::invalid(format!("native handle does not refer to a {}", std::any::type_name::<T>())))
}

/// Frees the box behind `handle`; 0 is ignored.
///
/// # Safety
/// As for [`get`], and no call may use `handle` afterwards.
pub unsafe fn release(handle: jlong) {
    if handle != 0 {
        // SAFETY: by the contract above this is the one release of a live `Slot` box.
        drop(unsafe { Box::from_raw(handle as *mut Slot) });
        LIVE.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Handles created and not yet released, across every type.
pub fn live() -> i64 {
    LIVE.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_count_type_check_and_release() {
        let before = live();
        let h = into_handle(41u32);
        assert_eq!(live(), before + 1);
        assert_eq!(*unsafe { get::<u32>(h) }.unwrap(), 41);
        let wrong = unsafe { get::<String>(h) }.unwrap_err();
        assert!(wrong.to_string().contains("String"));
        assert!(unsafe { get::<u32>(0) }.is_err());
        unsafe { release(h) };
        unsafe { release(0) };
        assert_eq!(live(), before);
    }
}
