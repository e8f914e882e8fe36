//! The runner side of a pass: read the snapshot, decide, act, record (DESIGN §5).

pub mod snapshot;
