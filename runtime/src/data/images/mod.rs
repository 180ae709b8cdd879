//! Image data (being split by concept: see `listing`).

mod listing;

pub use listing::*;
