//! calc: a tiny calculator library, built by the splice demo campaign.

pub mod arith;
pub mod format;
pub mod parse;
