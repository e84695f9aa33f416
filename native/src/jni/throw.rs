//! Errors and panics to Java exceptions. Exception classes are resolved once in `JNI_OnLoad`, with
//! the class loader that loaded the library, so any thread can throw them.

use std::any::Any;
use std::sync::OnceLock;

use jni::errors::ErrorPolicy;
use jni::objects::{Global, JClass};
use jni::strings::JNIString;
use jni::{jni_str, Env};

use crate::error::{panic_message, ErrorKind};
use crate::Error;

/// The error type of every entry point: one of ours, or a failed JNI call.
#[derive(Debug)]
pub enum JniError {
    Native(Error),
    Jni(jni::errors::Error),
}

impl From<Error> for JniError {
    fn from(e: Error) -> Self {
        JniError::Native(e)
    }
}

impl From<jni::errors::Error> for JniError {
    fn from(e: jni::errors::Error) -> Self {
        JniError::Jni(e)
    }
}

impl From<arrow::error::ArrowError> for JniError {
    fn from(e: arrow::error::ArrowError) -> Self {
        JniError::Native(Error::from(e))
    }
}

/// Exception classes, indexed like [`ErrorKind::ALL`].
static CLASSES: OnceLock<Vec<Global<JClass<'static>>>> = OnceLock::new();

/// Resolves the exception classes; called from `JNI_OnLoad`.
pub fn resolve_classes(env: &mut Env) -> jni::errors::Result<()> {
    let mut classes = Vec::with_capacity(ErrorKind::ALL.len());
    for kind in ErrorKind::ALL {
        let name = match kind {
            ErrorKind::InvalidArgument => jni_str!("io/hyperstream/jni/InvalidArgumentException"),
            ErrorKind::NotFound => jni_str!("io/hyperstream/jni/NotFoundException"),
            ErrorKind::CommitConflict => jni_str!("io/hyperstream/jni/CommitConflictException"),
            ErrorKind::CommitStateUnknown => jni_str!("io/hyperstream/jni/CommitStateUnknownException"),
            ErrorKind::Corrupt => jni_str!("io/hyperstream/jni/CorruptDataException"),
            ErrorKind::Io => jni_str!("io/hyperstream/jni/HyperStreamIOException"),
            ErrorKind::Internal => jni_str!("io/hyperstream/jni/InternalException"),
        };
        let class = env.find_class(name)?;
        classes.push(env.new_global_ref(class)?);
    }
    let _ = CLASSES.set(classes);
    Ok(())
}

fn throw(env: &mut Env, kind: ErrorKind, message: String) {
    if env.exception_check() {
        return; // A Java exception is already on its way; it wins.
    }
    let message = JNIString::new(message);
    let thrown = match CLASSES.get() {
        Some(classes) => {
            let index = ErrorKind::ALL.iter().position(|k| *k == kind).unwrap_or(0);
            env.throw_new(&classes[index], &message)
        }
        None => env.throw_new(jni_str!("java/lang/IllegalStateException"), &message),
    };
    if thrown.is_err() && !env.exception_check() {
        log::error!("could not throw a Java exception for a native error");
    }
}

/// The error policy of every entry point: errors become the exception of their kind, panics an
/// `InternalException`; the native method then returns the type's default.
#[derive(Debug)]
pub struct ThrowJava;

impl<T: Default> ErrorPolicy<T, JniError> for ThrowJava {
    type Captures<'unowned_env_local: 'native_method, 'native_method> = ();

    fn on_error<'unowned_env_local: 'native_method, 'native_method>(
        env: &mut Env<'unowned_env_local>,
        _cap: &mut Self::Captures<'unowned_env_local, 'native_method>,
        err: JniError,
    ) -> jni::errors::Result<T> {
        match err {
            JniError::Native(e) => throw(env, e.kind(), e.to_string()),
            JniError::Jni(e) => throw(env, ErrorKind::Internal, format!("JNI call failed: {e}")),
        }
        Ok(T::default())
    }

    fn on_panic<'unowned_env_local: 'native_method, 'native_method>(
        env: &mut Env<'unowned_env_local>,
        _cap: &mut Self::Captures<'unowned_env_local, 'native_method>,
        payload: Box<dyn Any + Send + 'static>,
    ) -> jni::errors::Result<T> {
        let message = panic_message(payload.as_ref());
        // Dropping a payload can itself panic; leak it rather than unwind into the JVM.
        std::mem::forget(payload);
        throw(env, ErrorKind::Internal, format!("native panic: {message}"));
        Ok(T::default())
    }
}
