//! STUB (replaced by the lcp branch).
#![allow(missing_docs, unused_variables)]
pub mod lcp;
