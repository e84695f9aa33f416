//! The crate's one error type. Variants are named for what a caller can do about them; the JNI layer
//! maps each to a documented Java exception class.

use arrow::error::ArrowError;

/// Errors raised by the native engine.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The caller passed something that can never work (bad option, wrong shape, out of range).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// A table, column, snapshot or file that was named does not exist.
    #[error("not found: {0}")]
    NotFound(String),
    /// Another writer committed first and the change cannot be rebased on top of it.
    #[error("commit conflict: {0}")]
    CommitConflict(String),
    /// A commit failed in a way that leaves open whether it took effect (the store failed after it
    /// may have stored the new version, and reading it back failed too): reload the table to see,
    /// and keep every file the commit named, as they may be committed.
    #[error("commit state unknown: {0}")]
    CommitStateUnknown(String),
    /// Stored data or metadata failed validation.
    #[error("corrupt data: {0}")]
    Corrupt(String),
    /// Reading or writing storage failed.
    #[error("I/O error at {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// Arrow rejected a batch or schema.
    #[error("arrow error: {0}")]
    Arrow(ArrowError),
    /// A bug: an invariant of the library did not hold.
    #[error("internal error: {0}")]
    Internal(String),
}

impl From<ArrowError> for Error {
    /// Arrow streams carry the library's own errors as `ExternalError`; those come back unwrapped so
    /// that their kind survives a trip through a record-batch iterator.
    fn from(e: ArrowError) -> Self {
        match e {
            ArrowError::ExternalError(inner) => match inner.downcast::<Error>() {
                Ok(ours) => *ours,
                Err(other) => Error::Arrow(ArrowError::ExternalError(other)),
            },
            other => Error::Arrow(other),
        }
    }
}

/// Result with the crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Shorthand for [`Error::InvalidArgument`].
    pub fn invalid(msg: impl Into<String>) -> Self {
        Error::InvalidArgument(msg.into())
    }

    /// This error as met while reading `file`, which its message then names (first), unless it
    /// does already: a damaged manifest list that names a missing manifest is the list's fault.
    pub fn within(self, file: &str) -> Error {
        if self.to_string().contains(file) {
            return self;
        }
        match self {
            Error::InvalidArgument(m) => Error::InvalidArgument(format!("{file}: {m}")),
            Error::NotFound(m) => Error::NotFound(format!("{file}: {m}")),
            Error::CommitConflict(m) => Error::CommitConflict(format!("{file}: {m}")),
            Error::CommitStateUnknown(m) => Error::CommitStateUnknown(format!("{file}: {m}")),
            Error::Corrupt(m) => Error::Corrupt(format!("{file}: {m}")),
            Error::Io { path, source } => Error::Io { path: format!("{file}: {path}"), source },
            Error::Arrow(e) => Error::Corrupt(format!("{file}: {e}")),
            Error::Internal(m) => Error::Internal(format!("{file}: {m}")),
        }
    }

    /// Stable name of the error's kind; the JNI layer picks the Java exception class by it.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::InvalidArgument(_) => ErrorKind::InvalidArgument,
            Error::NotFound(_) => ErrorKind::NotFound,
            Error::CommitConflict(_) => ErrorKind::CommitConflict,
            Error::CommitStateUnknown(_) => ErrorKind::CommitStateUnknown,
            Error::Corrupt(_) => ErrorKind::Corrupt,
            Error::Io { .. } => ErrorKind::Io,
            // Arrow errors at this boundary come from batches we were handed or built.
            Error::Arrow(ArrowError::InvalidArgumentError(_))
            | Error::Arrow(ArrowError::SchemaError(_))
            | Error::Arrow(ArrowError::CastError(_)) => ErrorKind::InvalidArgument,
            Error::Arrow(ArrowError::IoError(..)) => ErrorKind::Io,
            Error::Arrow(_) | Error::Internal(_) => ErrorKind::Internal,
        }
    }
}

/// What a panic said: its `&str` or `String` payload.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&'static str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic with a non-string payload".to_owned()
    }
}

/// An error that leaves the library inside an Arrow stream, where only its text crosses: the text
/// starts with the kind's name in brackets (`[CORRUPT] corrupt data: ...`), from which the Java
/// binding raises the exception class of that kind.
#[derive(Debug)]
pub struct TaggedError(pub Error);

impl std::fmt::Display for TaggedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "[{}] {}", self.0.kind().name(), self.0)
    }
}

impl std::error::Error for TaggedError {}

/// The kinds of [`Error`], one per Java exception class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    InvalidArgument,
    NotFound,
    CommitConflict,
    CommitStateUnknown,
    Corrupt,
    Io,
    Internal,
}

impl ErrorKind {
    /// Every kind, in a fixed order.
    pub const ALL: [ErrorKind; 7] = [
        ErrorKind::InvalidArgument,
        ErrorKind::NotFound,
        ErrorKind::CommitConflict,
        ErrorKind::CommitStateUnknown,
        ErrorKind::Corrupt,
        ErrorKind::Io,
        ErrorKind::Internal,
    ];

    /// The kind's name as Java code spells it (`INVALID_ARGUMENT`, ...).
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::InvalidArgument => "INVALID_ARGUMENT",
            ErrorKind::NotFound => "NOT_FOUND",
            ErrorKind::CommitConflict => "COMMIT_CONFLICT",
            ErrorKind::CommitStateUnknown => "COMMIT_STATE_UNKNOWN",
            ErrorKind::Corrupt => "CORRUPT",
            ErrorKind::Io => "IO",
            ErrorKind::Internal => "INTERNAL",
        }
    }

    /// Parses [`ErrorKind::name`].
    pub fn from_name(name: &str) -> Option<ErrorKind> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    /// An error of this kind with the given message.
    pub fn error(self, msg: impl Into<String>) -> Error {
        let msg = msg.into();
        match self {
            ErrorKind::InvalidArgument => Error::InvalidArgument(msg),
            ErrorKind::NotFound => Error::NotFound(msg),
            ErrorKind::CommitConflict => Error::CommitConflict(msg),
            ErrorKind::CommitStateUnknown => Error::CommitStateUnknown(msg),
            ErrorKind::Corrupt => Error::Corrupt(msg),
            ErrorKind::Io => Error::Io { path: String::new(), source: std::io::Error::other(msg) },
            ErrorKind::Internal => Error::Internal(msg),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_round_trips_through_its_name_and_error() {
        for kind in ErrorKind::ALL {
            assert_eq!(ErrorKind::from_name(kind.name()), Some(kind));
            assert_eq!(kind.error("boom").kind(), kind);
        }
        assert_eq!(ErrorKind::from_name("NOPE"), None);
    }

    #[test]
    fn library_errors_survive_a_trip_through_arrow() {
        let wrapped = ArrowError::ExternalError(Box::new(Error::NotFound("column 'x'".into())));
        assert!(matches!(Error::from(wrapped), Error::NotFound(m) if m == "column 'x'"));
        assert_eq!(Error::from(ArrowError::CastError("no".into())).kind(), ErrorKind::InvalidArgument);
    }

    #[test]
    fn arrow_argument_errors_count_as_invalid_arguments() {
        let err = Error::from(ArrowError::InvalidArgumentError("bad".into()));
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
        assert!(err.to_string().contains("bad"));
    }
}
