//! The writer's lock: an exclusive `File::lock` on `.splice/lock`, a file that is never renamed
//! and never holds data, so the lock and the data can never be confused.

use std::fs::{File, OpenOptions};
use std::path::Path;

use crate::error::{Error, Result};

/// Held while a transition runs; dropping it releases the lock.
pub struct LockGuard {
    file: File,
}

impl LockGuard {
    /// Block until the lock is ours.
    pub fn acquire(path: &Path) -> Result<LockGuard> {
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .map_err(|e| Error::io(path, e))?;
        file.lock().map_err(|e| Error::io(path, e))?;
        Ok(LockGuard { file })
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        // Closing the descriptor releases the lock too; unlocking first makes it prompt.
        let _ = self.file.unlock();
    }
}
