//! Change events of the memory directory for a warm process
//! (spec/architecture.md#warm-processes): which top-level names were created, written,
//! removed or renamed since the last look, read without blocking from an inotify
//! queue (Linux).
//!
//! The kernel queues an event in the same system call that makes the change, so
//! draining the queue at the start of a call sees every change finished before the
//! call began. Where that does not hold, [`DirWatch::new`] returns `None` and the
//! warm process checks every file's stat instead: another operating system, a
//! network or FUSE file system (changes made by other machines raise no event), or
//! no inotify instance to be had. A full queue, or the folder itself moved or
//! removed, is [`Changes::Rescan`].

use std::collections::BTreeSet;
use std::path::Path;

/// What changed since the last [`DirWatch::drain`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Changes {
    /// These names (of entries directly in the folder) were touched; nothing else.
    Names(BTreeSet<String>),
    /// Events were lost or the watch ended: everything must be checked.
    Rescan,
}

/// An inotify watch on one folder (its direct entries only).
#[derive(Debug)]
pub(crate) struct DirWatch {
    #[cfg(target_os = "linux")]
    fd: std::os::fd::OwnedFd,
    /// The watch ended (folder removed or moved, or a read failed): every drain from
    /// now on is a rescan.
    #[cfg(target_os = "linux")]
    dead: bool,
}

#[cfg(target_os = "linux")]
mod linux {
    use super::*;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::os::unix::ffi::OsStrExt;

    /// File systems whose changes can come from elsewhere without an event here.
    const REMOTE: &[i64] = &[
        0x6969,      // NFS
        0x517B,      // SMB
        0xFF53_4D42, // CIFS
        0xFE53_4D42, // SMB2
        0x6573_5546, // FUSE (sshfs, rclone, cloud drives)
        0x0102_1997, // 9P (WSL, virtual machines' shared folders)
        0x0BD0_0BD0, // Lustre
        0x7461_636F, // OCFS2
        0x0116_1970, // GFS2
        0x5346_414F, // AFS
        0x6B41_4653, // kAFS
        0x7375_7245, // Coda
        0x564C,      // NCP
        0x4750_4653, // GPFS
        0x00C3_6400, // Ceph
    ];

    const MASK: u32 = libc::IN_CREATE
        | libc::IN_DELETE
        | libc::IN_MODIFY
        | libc::IN_CLOSE_WRITE
        | libc::IN_MOVED_FROM
        | libc::IN_MOVED_TO
        | libc::IN_ATTRIB
        | libc::IN_DELETE_SELF
        | libc::IN_MOVE_SELF
        | libc::IN_ONLYDIR
        | libc::IN_DONT_FOLLOW;

    fn local(root: &Path) -> bool {
        let Ok(c) = std::ffi::CString::new(root.as_os_str().as_bytes()) else {
            return false;
        };
        let mut st: libc::statfs = unsafe { std::mem::zeroed() };
        // SAFETY: `c` is a valid C string and `st` a writable statfs buffer.
        if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 {
            return false;
        }
        #[allow(clippy::unnecessary_cast)]
        let kind = st.f_type as i64;
        !REMOTE.contains(&kind)
    }

    impl DirWatch {
        /// A watch on `root`, or `None` where events cannot be trusted (see the
        /// module's documentation). Create it before the first load: a change made
        /// during the load is then an event for the next call.
        pub(crate) fn new(root: &Path) -> Option<DirWatch> {
            if !local(root) {
                return None;
            }
            let c = std::ffi::CString::new(root.as_os_str().as_bytes()).ok()?;
            // SAFETY: plain system calls; the descriptor is owned right after.
            let raw = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
            if raw < 0 {
                return None;
            }
            // SAFETY: `raw` is a fresh descriptor nothing else owns.
            let fd = unsafe { OwnedFd::from_raw_fd(raw) };
            // SAFETY: `fd` is open and `c` a valid C string.
            if unsafe { libc::inotify_add_watch(fd.as_raw_fd(), c.as_ptr(), MASK) } < 0 {
                return None;
            }
            Some(DirWatch { fd, dead: false })
        }

        /// Every name touched since the last drain, without waiting.
        pub(crate) fn drain(&mut self) -> Changes {
            if self.dead {
                return Changes::Rescan;
            }
            let mut names = BTreeSet::new();
            let mut rescan = false;
            // Room for many events per read; aligned for the event header.
            let mut buf = vec![0u64; 8192];
            let bytes = buf.len() * 8;
            // Bounded: each read takes at least one event off a finite queue, and a
            // queue that keeps filling faster than this reads overflows (a rescan).
            for _ in 0..100_000 {
                // SAFETY: `buf` is writable for `bytes` bytes.
                let n = unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), bytes) };
                if n < 0 {
                    let e = std::io::Error::last_os_error();
                    if e.kind() == std::io::ErrorKind::WouldBlock {
                        break;
                    }
                    if e.kind() == std::io::ErrorKind::Interrupted {
                        continue;
                    }
                    self.dead = true;
                    return Changes::Rescan;
                }
                if n == 0 {
                    break;
                }
                // SAFETY: the kernel wrote `n` bytes of whole events into `buf`.
                let data =
                    unsafe { std::slice::from_raw_parts(buf.as_ptr().cast::<u8>(), n as usize) };
                let head = std::mem::size_of::<libc::inotify_event>();
                let mut at = 0usize;
                while at + head <= data.len() {
                    // SAFETY: a whole header lies at `at`; read unaligned to be safe.
                    let ev: libc::inotify_event =
                        unsafe { std::ptr::read_unaligned(data[at..].as_ptr().cast()) };
                    let len = ev.len as usize;
                    let name = &data[at + head..(at + head + len).min(data.len())];
                    at += head + len;
                    if ev.mask & libc::IN_Q_OVERFLOW != 0 {
                        rescan = true;
                        continue;
                    }
                    if ev.mask & (libc::IN_DELETE_SELF | libc::IN_MOVE_SELF | libc::IN_IGNORED) != 0
                    {
                        self.dead = true;
                        return Changes::Rescan;
                    }
                    let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
                    match std::str::from_utf8(&name[..end]) {
                        Ok("") => {}
                        Ok(s) => {
                            names.insert(s.to_string());
                        }
                        // A name only a full scan can report.
                        Err(_) => rescan = true,
                    }
                }
            }
            if rescan {
                Changes::Rescan
            } else {
                Changes::Names(names)
            }
        }
    }
}

#[cfg(not(target_os = "linux"))]
impl DirWatch {
    /// No change events on this system: the warm process checks stats.
    pub fn new(_root: &Path) -> Option<DirWatch> {
        None
    }

    /// Never called (no watch is ever made here).
    pub fn drain(&mut self) -> Changes {
        Changes::Rescan
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    fn names(c: Changes) -> Vec<String> {
        match c {
            Changes::Names(n) => n.into_iter().collect(),
            Changes::Rescan => panic!("unexpected rescan"),
        }
    }

    #[test]
    fn sees_writes_renames_and_removals_made_before_the_drain() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        std::fs::write(d.join("a.md"), "x").unwrap();
        let mut w = DirWatch::new(d).expect("a local folder on Linux");
        assert_eq!(names(w.drain()), Vec::<String>::new());
        std::fs::write(d.join("a.md"), "y").unwrap();
        std::fs::write(d.join(".b.tmp"), "z").unwrap();
        std::fs::rename(d.join(".b.tmp"), d.join("b.md")).unwrap();
        assert_eq!(names(w.drain()), [".b.tmp", "a.md", "b.md"]);
        std::fs::remove_file(d.join("a.md")).unwrap();
        assert_eq!(names(w.drain()), ["a.md"]);
        assert_eq!(names(w.drain()), Vec::<String>::new());
    }

    #[test]
    fn a_removed_folder_ends_the_watch() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path().join("m");
        std::fs::create_dir(&d).unwrap();
        let mut w = DirWatch::new(&d).unwrap();
        std::fs::remove_dir(&d).unwrap();
        assert_eq!(w.drain(), Changes::Rescan);
        std::fs::create_dir(&d).unwrap();
        assert_eq!(w.drain(), Changes::Rescan, "a dead watch stays dead");
    }
}
