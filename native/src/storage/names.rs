//! Names that users give and that become one component of a path: the schema (namespace) and table
//! names of the engines' catalogs, and array names. One rule for all of them, so that no name from
//! SQL, a procedure or a table function can reach outside the directory it is meant to live in.

use crate::{Error, Result};

/// The longest name, in bytes (the usual file-name limit of Linux and macOS file systems).
pub const MAX_NAME_BYTES: usize = 255;

/// Why `name` cannot be one path component, or `None` when it can: it is empty or too long, is `.` or
/// `..`, holds a path separator (`/`, or `\` which Windows takes as one) or a control character (NUL
/// and newlines included). An absolute path always holds a separator.
pub fn refusal(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        Some("it is empty")
    } else if name.len() > MAX_NAME_BYTES {
        Some("it is longer than 255 bytes")
    } else if name == "." || name == ".." {
        Some("'.' and '..' name a directory itself or its parent")
    } else if name.contains(['/', '\\']) {
        Some("it holds a path separator ('/' or '\\')")
    } else if name.chars().any(char::is_control) {
        Some("it holds a control character")
    } else {
        None
    }
}

/// Checks `name`, a `kind` of name ("schema", "table", "array"), against [`refusal`].
pub fn check_name(kind: &str, name: &str) -> Result<()> {
    match refusal(name) {
        None => Ok(()),
        Some(why) => Err(Error::invalid(format!(
            "{kind} name {name:?} is not allowed: {why}; a name is one path component of 1 to {MAX_NAME_BYTES} \
             bytes without '/', '\\' or control characters, and not '.' or '..'"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinary_names_pass() {
        for name in
            ["db", "items", "my-table", "a.b", "..x", "x..", ".hidden", "Ünïcode", "with space", &"n".repeat(255)]
        {
            assert_eq!(refusal(name), None, "{name:?}");
        }
    }

    #[test]
    fn names_that_would_leave_their_directory_are_refused() {
        let long = "n".repeat(256);
        for name in ["", ".", "..", "../x", "a/b", "/abs", "/", "a\\b", "..\\x", "a\0b", "a\nb", "\u{7f}", &long] {
            let e = check_name("table", name).unwrap_err();
            assert!(matches!(e, Error::InvalidArgument(_)), "{name:?}: {e}");
            assert!(e.to_string().contains(&format!("table name {name:?} is not allowed")), "{e}");
        }
    }
}
