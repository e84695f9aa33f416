//! Split planning: the library decides how a scan divides; the engine schedules the pieces.

use crate::Result;

/// A half-open range of row positions `[start, end)` that one engine task reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowSplit {
    pub start: u64,
    pub end: u64,
}

impl RowSplit {
    /// Number of rows in the split.
    pub fn len(&self) -> u64 {
        self.end - self.start
    }

    /// Whether the split holds no rows.
    pub fn is_empty(&self) -> bool {
        self.start == self.end
    }
}

/// Divides `rows` rows into contiguous splits of at most `target_rows` rows, sized as evenly as the
/// count allows (no small tail split). Zero rows give no splits.
pub fn plan_row_splits(rows: u64, target_rows: u64) -> Result<Vec<RowSplit>> {
    let count = crate::limits::split_count(rows, target_rows)?;
    if count == 0 {
        return Ok(Vec::new());
    }
    let base = rows / count;
    let extra = rows % count;
    let mut splits = Vec::with_capacity(count as usize);
    let mut start = 0;
    for i in 0..count {
        let len = base + u64::from(i < extra);
        splits.push(RowSplit { start, end: start + len });
        start += len;
    }
    Ok(splits)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;

    #[test]
    fn splits_cover_every_row_once_and_respect_the_target() {
        for rows in [1u64, 2, 7, 100, 1000, 1001, 99_999] {
            for target in [1u64, 3, 64, 1000, 1 << 20] {
                let splits = plan_row_splits(rows, target).unwrap();
                assert_eq!(splits.first().unwrap().start, 0);
                assert_eq!(splits.last().unwrap().end, rows);
                for pair in splits.windows(2) {
                    assert_eq!(pair[0].end, pair[1].start);
                }
                assert!(splits.iter().all(|s| !s.is_empty() && s.len() <= target));
                let (min, max) = splits.iter().fold((u64::MAX, 0), |(lo, hi), s| (lo.min(s.len()), hi.max(s.len())));
                assert!(max - min <= 1, "uneven splits for {rows} rows, target {target}");
            }
        }
    }

    #[test]
    fn no_rows_give_no_splits_and_zero_target_is_rejected() {
        assert!(plan_row_splits(0, 10).unwrap().is_empty());
        let err = plan_row_splits(10, 0).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)));
    }
}
