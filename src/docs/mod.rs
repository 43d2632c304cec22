//! Guides that are not about one item: pages of prose and examples, compiled as doctests.

#[doc = include_str!("coming_from.md")]
pub mod coming_from {}
