//! The library façade's modules (see the crate doc): [`model`] (the
//! [`Model`](model::Model) type), [`arrays`] (named arrays into the
//! session's input buffers) and [`error`].

pub mod arrays;
pub mod error;
pub mod model;
