//! The pure core. Nothing here touches the file system, processes, the environment or the clock.

pub mod autonomy;
