//! Bounds on the sizes users give (options, table properties, procedure arguments), checked before
//! anything is allocated for them: a size out of range is an invalid argument naming itself, never an
//! allocation that aborts the process. The Java binding checks engine options through these too
//! (`io.hyperstream.jni.Limits`), so both engines refuse the same values with the same words.

use crate::{Error, Result};

/// Longest vector: elements of one `fixed_size_list<float>` value.
pub const MAX_DIMENSION: usize = 65_536;

/// Most rows in one Arrow batch a stream produces (a Spark batch, a Trino page).
pub const MAX_BATCH_ROWS: usize = 1 << 20;

/// Most rows one vector search answers (its k).
pub const MAX_K: usize = 100_000;

/// Most queries one batched vector search (a similarity join's batch) answers at once.
pub const MAX_QUERIES: usize = 65_536;

/// Longest candidate list an HNSW search keeps (its ef).
pub const MAX_EF: i64 = 100_000;

/// Most splits one plan makes: past this, a split size is too small for the rows it divides.
pub const MAX_SPLITS: u64 = 1 << 20;

/// How old a file must be before orphan removal may delete it: a day, as Iceberg's procedures ask,
/// so that a writer that has written its files but not yet committed them keeps them.
pub const MIN_ORPHAN_AGE_MS: i64 = 24 * 3_600_000;

/// `older_than_ms` as an orphan-removal cutoff at time `now_ms`: at least [`MIN_ORPHAN_AGE_MS`] in
/// the past (so not now, not in the future).
pub fn orphan_cutoff(older_than_ms: i64, now_ms: i64) -> Result<i64> {
    if older_than_ms > now_ms.saturating_sub(MIN_ORPHAN_AGE_MS) {
        let hours = (now_ms as f64 - older_than_ms as f64) / 3_600_000.0;
        return Err(Error::invalid(format!(
            "orphan removal deletes only files older than 24 hours (a writer may still be about to commit \
             younger ones); the cutoff asked for is {hours:.2} hours ago"
        )));
    }
    Ok(older_than_ms)
}

/// `k` as the rows a vector search answers: 1 to [`MAX_K`].
pub fn top_k(what: &str, k: i64) -> Result<usize> {
    usize::try_from(k)
        .ok()
        .filter(|k| (1..=MAX_K).contains(k))
        .ok_or_else(|| Error::invalid(format!("{what} must be between 1 and {MAX_K}, got {k}")))
}

/// `count` as the queries of one batched search: 1 to [`MAX_QUERIES`].
pub fn query_count(what: &str, count: i64) -> Result<usize> {
    usize::try_from(count)
        .ok()
        .filter(|c| (1..=MAX_QUERIES).contains(c))
        .ok_or_else(|| Error::invalid(format!("{what} must be between 1 and {MAX_QUERIES} queries, got {count}")))
}

/// `ef` as the engines give a search's use of an HNSW index: a candidate list length of 1 to
/// [`MAX_EF`], -1 for exact search, or 0 for the library's choice.
pub fn ef_search(what: &str, ef: i64) -> Result<i64> {
    if (-1..=MAX_EF).contains(&ef) {
        return Ok(ef);
    }
    Err(Error::invalid(format!(
        "{what} must be between 1 and {MAX_EF}, -1 for exact search or 0 for the library's choice, got {ef}"
    )))
}

/// `dim` as a vector dimension: 1 to [`MAX_DIMENSION`].
pub fn dimension(what: &str, dim: i64) -> Result<usize> {
    usize::try_from(dim)
        .ok()
        .filter(|d| (1..=MAX_DIMENSION).contains(d))
        .ok_or_else(|| Error::invalid(format!("{what} needs a dimension of 1 to {MAX_DIMENSION}, got {dim}")))
}

/// `rows` as rows per batch: 1 to [`MAX_BATCH_ROWS`].
pub fn batch_rows(what: &str, rows: i64) -> Result<usize> {
    usize::try_from(rows)
        .ok()
        .filter(|r| (1..=MAX_BATCH_ROWS).contains(r))
        .ok_or_else(|| Error::invalid(format!("{what} must be between 1 and {MAX_BATCH_ROWS} rows, got {rows}")))
}

/// How many splits of about `split_rows` rows `rows` rows make: at most [`MAX_SPLITS`].
pub fn split_count(rows: u64, split_rows: u64) -> Result<u64> {
    if split_rows == 0 {
        return Err(Error::invalid("rows per split must be positive, got 0"));
    }
    let count = rows.div_ceil(split_rows);
    if count > MAX_SPLITS {
        return Err(Error::invalid(format!(
            "{rows} rows in splits of {split_rows} would make {count} splits, more than {MAX_SPLITS}: give more rows per split"
        )));
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_in_range_pass_and_others_are_named() {
        assert_eq!(dimension("vector column 'v'", 768).unwrap(), 768);
        for bad in [0, -1, i64::MIN, 65_537, i64::from(i32::MAX)] {
            let e = dimension("vector column 'v'", bad).unwrap_err().to_string();
            assert!(
                e.contains("vector column 'v' needs a dimension of 1 to 65536") && e.contains(&bad.to_string()),
                "{e}"
            );
        }
        assert_eq!(batch_rows("batch.rows", 8192).unwrap(), 8192);
        for bad in [0, -5, (1 << 20) + 1, i64::from(i32::MAX)] {
            assert!(batch_rows("batch.rows", bad)
                .unwrap_err()
                .to_string()
                .contains("batch.rows must be between 1 and 1048576"));
        }
        assert_eq!(split_count(10, 3).unwrap(), 4);
        assert_eq!(split_count(0, 3).unwrap(), 0);
        let e = split_count(1_000_000_000_000_000, 1).unwrap_err().to_string();
        assert!(e.contains("would make 1000000000000000 splits"), "{e}");
        assert!(split_count(5, 0).is_err());
        let now = 1_000_000_000_000;
        assert_eq!(orphan_cutoff(now - MIN_ORPHAN_AGE_MS, now).unwrap(), now - MIN_ORPHAN_AGE_MS);
        for bad in [now, now + 1, i64::MAX, now - MIN_ORPHAN_AGE_MS + 1] {
            assert!(orphan_cutoff(bad, now).unwrap_err().to_string().contains("older than 24 hours"), "{bad}");
        }
    }
}
