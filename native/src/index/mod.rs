//! Indexes kept beside each data file for filtered scans: the scalar index of a column (its distinct
//! values with the rows holding each) and the planning that turns a predicate into candidate rows;
//! and the distinct-value sketches of its columns, for the engines' statistics.

pub mod ndv;
pub mod scalar;

pub use scalar::{candidate_rows, indexable, scalar_index_path, ScalarIndex, ScalarIndexBuilder};
