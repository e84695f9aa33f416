//! Indexes kept beside each data file for filtered scans: the scalar index of a column (its distinct
//! values with the rows holding each) and the planning that turns a predicate into candidate rows.

pub mod scalar;

pub use scalar::{candidate_rows, indexable, scalar_index_path, ScalarIndex, ScalarIndexBuilder};
