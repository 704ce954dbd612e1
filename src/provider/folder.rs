//! A folder as a provider: each pushed DAG is one CAR file, `<folder>/cars/<root>.car`,
//! each channel's head is a one-line file, `<folder>/heads/<channel>`, and the lineage
//! of a version (what it was built on) is `<folder>/lineage/<root>`. The head moves by
//! compare-and-swap under `<folder>/heads/<channel>.lock`, created with `O_EXCL`
//! (spec/sync.md#heads). The folder can
//! be a USB drive, a network share or a folder another sync tool mirrors; it never holds
//! anything the IPFS providers would not see (in `encrypted-ipfs` mode only the sealed
//! blob). Everything read back goes through the same verifying CAR reader as a
//! download.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use cid::Cid;

use super::{
    Blocks, BoxFuture, Capabilities, Direction, Env, HeadSwap, Progress, Provider, ProviderError,
    Receipt,
};
use crate::ipfs::car::{self, CarLimits};

/// Environment variable: the folder.
pub(crate) const FOLDER_VAR: &str = "MEMDIR_FOLDER";

const NAME: &str = "folder";

/// How long a head swap waits for another writer's lock before giving up.
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(20);
/// A lock file older than this is left over from a process that died: removed.
const LOCK_STALE: std::time::Duration = std::time::Duration::from_secs(60);
/// Largest lineage file read back.
const MAX_LINEAGE: u64 = 1 << 20;

/// A folder of CAR files.
#[derive(Clone, Debug)]
pub struct Folder {
    root: PathBuf,
}

fn io(path: &Path, source: std::io::Error) -> ProviderError {
    ProviderError::Folder {
        path: path.to_path_buf(),
        source,
    }
}

/// Opens `path` for reading only if it is a regular file: a FIFO, a device or a
/// folder in its place is an error, never a read that waits forever. `None` when it
/// does not exist.
fn open_regular(path: &Path) -> Result<Option<fs::File>, ProviderError> {
    let mut options = fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // Opening a FIFO without a writer would block; non-blocking, it does not,
        // and regular files read the same either way.
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = match options.open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io(path, e)),
    };
    let meta = file.metadata().map_err(|e| io(path, e))?;
    if !meta.is_file() {
        return Err(io(
            path,
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "not a regular file (a FIFO, device or folder is never read)",
            ),
        ));
    }
    Ok(Some(file))
}

impl Folder {
    /// A provider over `root` (created on the first push).
    pub fn new(root: impl Into<PathBuf>) -> Folder {
        Folder { root: root.into() }
    }

    /// `MEMDIR_FOLDER`.
    pub fn from_env(env: Env<'_>) -> Result<Folder, ProviderError> {
        let root = env(FOLDER_VAR).ok_or(ProviderError::NotConfigured {
            provider: NAME.into(),
            var: FOLDER_VAR,
        })?;
        Ok(Folder::new(root))
    }

    fn car_path(&self, root: &Cid) -> PathBuf {
        self.root.join("cars").join(format!("{root}.car"))
    }

    fn head_path(&self, channel: &str) -> Result<PathBuf, ProviderError> {
        super::check_channel(NAME, channel)?;
        Ok(self.root.join("heads").join(channel))
    }

    /// Writes `data` to `path` through a temporary file and a rename, with mode 0644
    /// less the umask (not tempfile's 0600): other accounts on a shared drive must
    /// read CARs, heads and lineage; an encrypted CAR is sealed, so it is safe too
    /// (spec/providers.md#folder, spec/decisions.md).
    fn write_atomic(path: &Path, data: &[u8]) -> Result<(), ProviderError> {
        let dir = path.parent().expect("folder paths have a parent");
        fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
        let mut builder = tempfile::Builder::new();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            builder.permissions(fs::Permissions::from_mode(0o644));
        }
        let mut tmp = builder.tempfile_in(dir).map_err(|e| io(dir, e))?;
        tmp.write_all(data)
            .and_then(|_| tmp.as_file().sync_all())
            .map_err(|e| io(path, e))?;
        tmp.persist(path).map_err(|e| io(path, e.error))?;
        Ok(())
    }

    fn put(
        &self,
        root: &Cid,
        data: &[u8],
        progress: &dyn Progress,
    ) -> Result<Receipt, ProviderError> {
        let path = self.car_path(root);
        // What we store must be what we say it is: verify before writing.
        let limits = CarLimits {
            max_total_bytes: data.len() as u64 + 1,
            ..CarLimits::default()
        };
        car::read_car(data, root, &limits).map_err(|source| ProviderError::Car {
            provider: NAME.into(),
            url: path.display().to_string(),
            source,
        })?;
        let total = data.len() as u64;
        progress.progress(Direction::Upload, 0, Some(total));
        Self::write_atomic(&path, data)?;
        progress.progress(Direction::Upload, total, Some(total));
        Ok(Receipt {
            provider: NAME.into(),
            root: *root,
            provider_id: path
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into(),
            car_bytes: total,
            delta: false,
        })
    }

    fn get(
        &self,
        root: &Cid,
        limits: &CarLimits,
        progress: &dyn Progress,
    ) -> Result<Blocks, ProviderError> {
        let path = self.car_path(root);
        let file = open_regular(&path)?.ok_or_else(|| {
            io(
                &path,
                std::io::Error::new(std::io::ErrorKind::NotFound, "no such file"),
            )
        })?;
        let total = file.metadata().map(|m| m.len()).ok();
        progress.progress(Direction::Download, 0, total);
        let blocks = car::read_car(file, root, limits).map_err(|source| ProviderError::Car {
            provider: NAME.into(),
            url: path.display().to_string(),
            source,
        })?;
        progress.progress(Direction::Download, total.unwrap_or(0), total);
        Ok(blocks)
    }

    fn lineage_path(&self, root: &Cid) -> PathBuf {
        self.root.join("lineage").join(root.to_string())
    }

    /// Takes `<head>.lock` with `O_EXCL`, waiting (bounded) for another writer to
    /// finish; a lock older than [`LOCK_STALE`] is a dead writer's and is removed.
    fn lock_head(&self, head: &Path) -> Result<HeadLock, ProviderError> {
        let dir = head.parent().expect("head paths have a parent");
        fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
        let mut name = head.file_name().unwrap_or_default().to_os_string();
        name.push(".lock");
        let path = dir.join(name);
        let start = std::time::Instant::now();
        let mut pause = std::time::Duration::from_millis(2);
        loop {
            match fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
            {
                Ok(mut f) => {
                    let _ = writeln!(f, "{}", std::process::id());
                    return Ok(HeadLock { path });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let stale = fs::metadata(&path)
                        .and_then(|m| m.modified())
                        .ok()
                        .and_then(|t| t.elapsed().ok())
                        .is_some_and(|age| age > LOCK_STALE);
                    if stale {
                        let _ = fs::remove_file(&path);
                        continue;
                    }
                    if start.elapsed() > LOCK_WAIT {
                        return Err(io(
                            &path,
                            std::io::Error::new(
                                std::io::ErrorKind::TimedOut,
                                "another device is moving the head (lock held); try again, or remove the lock file if no memdir is running",
                            ),
                        ));
                    }
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(std::time::Duration::from_millis(50));
                }
                Err(e) => return Err(io(&path, e)),
            }
        }
    }

    /// Compare-and-swap of the head: under the lock, the head is read, compared with
    /// `expected` and replaced by a rename only when it matches.
    fn swap(
        &self,
        channel: &str,
        expected: Option<&Cid>,
        root: &Cid,
    ) -> Result<HeadSwap, ProviderError> {
        let path = self.head_path(channel)?;
        let _lock = self.lock_head(&path)?;
        let found = self.read_head(channel)?;
        if found.as_ref() != expected {
            return Ok(HeadSwap::Changed { found });
        }
        Self::write_atomic(&path, format!("{root}\n").as_bytes())?;
        Ok(HeadSwap::Moved)
    }

    fn read_lineage(&self, root: &Cid) -> Result<Option<Vec<u8>>, ProviderError> {
        use std::io::Read;
        let path = self.lineage_path(root);
        let Some(file) = open_regular(&path)? else {
            return Ok(None);
        };
        let mut bytes = Vec::new();
        file.take(MAX_LINEAGE)
            .read_to_end(&mut bytes)
            .map_err(|e| io(&path, e))?;
        Ok(Some(bytes))
    }

    fn read_head(&self, channel: &str) -> Result<Option<Cid>, ProviderError> {
        use std::io::Read;
        let path = self.head_path(channel)?;
        let Some(file) = open_regular(&path)? else {
            return Ok(None);
        };
        let mut text = String::new();
        file.take(4096)
            .read_to_string(&mut text)
            .map_err(|e| io(&path, e))?;
        Cid::try_from(text.trim())
            .map(Some)
            .map_err(|e| ProviderError::BadResponse {
                provider: NAME.into(),
                method: "read".into(),
                url: path.display().to_string(),
                detail: format!("not a CID: {e}"),
            })
    }
}

impl Provider for Folder {
    fn name(&self) -> &str {
        NAME
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            push: true,
            keeps_blocks: false,
            unpin: true,
        }
    }

    fn put_car<'a>(
        &'a self,
        root: &'a Cid,
        car: &'a [u8],
        progress: &'a dyn Progress,
    ) -> BoxFuture<'a, Result<Receipt, ProviderError>> {
        Box::pin(async move { self.put(root, car, progress) })
    }

    fn get_car<'a>(
        &'a self,
        root: &'a Cid,
        limits: &'a CarLimits,
        progress: &'a dyn Progress,
    ) -> BoxFuture<'a, Result<Blocks, ProviderError>> {
        Box::pin(async move { self.get(root, limits, progress) })
    }

    fn has<'a>(&'a self, root: &'a Cid) -> BoxFuture<'a, Result<bool, ProviderError>> {
        Box::pin(async move { Ok(self.car_path(root).is_file()) })
    }

    fn unpin<'a>(&'a self, receipt: &'a Receipt) -> BoxFuture<'a, Result<(), ProviderError>> {
        Box::pin(async move {
            let path = self.car_path(&receipt.root);
            match fs::remove_file(&path) {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                Err(e) => Err(io(&path, e)),
            }
        })
    }

    fn head<'a>(&'a self, channel: &'a str) -> BoxFuture<'a, Result<Option<Cid>, ProviderError>> {
        Box::pin(async move { self.read_head(channel) })
    }

    fn set_head<'a>(
        &'a self,
        channel: &'a str,
        root: &'a Cid,
    ) -> BoxFuture<'a, Result<(), ProviderError>> {
        Box::pin(async move {
            let path = self.head_path(channel)?;
            Self::write_atomic(&path, format!("{root}\n").as_bytes())
        })
    }

    fn swap_head<'a>(
        &'a self,
        channel: &'a str,
        expected: Option<&'a Cid>,
        root: &'a Cid,
    ) -> BoxFuture<'a, Result<HeadSwap, ProviderError>> {
        Box::pin(async move { self.swap(channel, expected, root) })
    }

    fn put_lineage<'a>(
        &'a self,
        root: &'a Cid,
        lineage: &'a [u8],
    ) -> BoxFuture<'a, Result<(), ProviderError>> {
        Box::pin(async move { Self::write_atomic(&self.lineage_path(root), lineage) })
    }

    fn lineage<'a>(
        &'a self,
        root: &'a Cid,
    ) -> BoxFuture<'a, Result<Option<Vec<u8>>, ProviderError>> {
        Box::pin(async move { self.read_lineage(root) })
    }
}

/// The head lock, removed when dropped.
struct HeadLock {
    path: PathBuf,
}

impl Drop for HeadLock {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
    }
}
