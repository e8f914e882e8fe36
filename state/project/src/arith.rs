//! Arithmetic (to be written by the campaign).
