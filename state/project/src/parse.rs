//! Parsing (to be written by the campaign).
