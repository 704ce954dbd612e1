//! The cross-process write lock (`.memdir/lock`, or a mutex in the `none` mode): taken
//! by [`Backend::lock`](super::Backend::lock), held by a [`LockGuard`] until dropped.
//! It must not read or write anything but the lock file.

use std::fs::{self, File, OpenOptions};
use std::sync::{Mutex, MutexGuard};

use crate::error::{Error, Result};
use crate::memory::layout::{LOCK_FILE, STATE_DIR};
use crate::store::Backend;
use crate::store::disk::{check_parent, is_link_error};

/// Holds the cross-process write lock until dropped.
pub(crate) enum LockGuard<'a> {
    File(File),
    // Held, never read: dropping it unlocks.
    Mem(#[allow(dead_code)] MutexGuard<'a, ()>),
}

impl Drop for LockGuard<'_> {
    fn drop(&mut self) {
        if let LockGuard::File(f) = self {
            let _ = f.unlock();
        }
    }
}

impl Backend {
    /// Takes the cross-process write lock (`.memdir/lock`), waiting for it.
    pub(crate) fn lock<'a>(&self, mem_lock: &'a Mutex<()>) -> Result<LockGuard<'a>> {
        match self {
            Backend::Mem(_) => Ok(LockGuard::Mem(
                mem_lock.lock().unwrap_or_else(|e| e.into_inner()),
            )),
            Backend::Dir(root) => {
                check_parent(root, LOCK_FILE)?;
                let dir = root.join(STATE_DIR);
                fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
                let path = dir.join("lock");
                let mut o = OpenOptions::new();
                o.create(true).truncate(false).write(true);
                // A link in the lock's place (even a dangling one) would make the
                // open create or lock a file outside the directory.
                #[cfg(unix)]
                {
                    use std::os::unix::fs::OpenOptionsExt;
                    o.custom_flags(libc::O_NOFOLLOW);
                }
                let f = o.open(&path).map_err(|e| {
                    if is_link_error(&e) {
                        Error::Symlink { path: path.clone() }
                    } else {
                        Error::io(&path, e)
                    }
                })?;
                f.lock().map_err(|e| Error::io(&path, e))?;
                Ok(LockGuard::File(f))
            }
        }
    }
}
