//! Formatting (to be written by the campaign).
