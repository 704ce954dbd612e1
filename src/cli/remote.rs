//! What push, pull, sync and the push after a write share on the command line: the
//! `--provider` / `--mode` flags, handed to the library's [`memdir::sync::open`], and
//! transfer progress drawn on a terminal.

// Errors carry CIDs by value; see the note in `memdir::ipfs::car`.
#![allow(clippy::result_large_err)]

use clap::ValueEnum;

use super::Out;
use memdir::Memory;
use memdir::provider::{Direction, Progress, Waiting};
use memdir::sync::config::Mode;
use memdir::sync::{Choice, Opened, SyncError};

/// `--mode` on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    Ipfs,
    #[value(name = "encrypted-ipfs")]
    EncryptedIpfs,
}

impl From<ModeArg> for Mode {
    fn from(m: ModeArg) -> Mode {
        match m {
            ModeArg::Ipfs => Mode::Ipfs,
            ModeArg::EncryptedIpfs => Mode::EncryptedIpfs,
        }
    }
}

/// The flags every network command takes.
#[derive(Debug, Clone, clap::Args)]
pub struct RemoteArgs {
    /// kubo (IPFS_API), pinata (PINATA_JWT), filebase (FILEBASE_KEY...), storacha
    /// (WEB3_STORAGE_TOKEN...), folder (MEMDIR_FOLDER); default: `provider` in
    /// .memdir/config.toml.
    #[arg(long, value_name = "P")]
    pub provider: Option<String>,
    /// ipfs or encrypted-ipfs; default: `mode` in .memdir/config.toml, else ipfs.
    #[arg(long, value_enum)]
    pub mode: Option<ModeArg>,
}

/// Opens the provider named by `--provider`, the configuration, or `fallback`
/// (the library's policy: [`memdir::sync::open`]).
pub fn open(
    mem: &Memory,
    args: &RemoteArgs,
    fallback: Option<&str>,
    gateway: Option<&str>,
) -> Result<Opened, SyncError> {
    memdir::sync::open(
        mem,
        &Choice {
            provider: args.provider.clone(),
            mode: args.mode.map(Mode::from),
            fallback: fallback.map(str::to_string),
            gateway: gateway.map(str::to_string),
        },
    )
}

/// Transfer progress on stderr, drawn only when stderr is a terminal and `-q` was
/// not given.
pub struct Bar {
    bar: indicatif::ProgressBar,
}

impl Bar {
    pub fn new(out: &Out) -> Bar {
        let bar = indicatif::ProgressBar::with_draw_target(
            None,
            super::progress::target(out.verbosity()),
        );
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "{msg:12} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} {elapsed}",
        ) {
            bar.set_style(style.progress_chars("=> "));
        }
        Bar { bar }
    }
}

impl Progress for Bar {
    fn progress(&self, direction: Direction, done: u64, total: Option<u64>) {
        if let Some(t) = total {
            self.bar.set_length(t);
        }
        self.bar.set_message(match direction {
            Direction::Upload => "uploading",
            Direction::Download => "downloading",
        });
        self.bar.set_position(done);
    }

    /// One line about every ten seconds while a download has received nothing,
    /// on a terminal only (a log gets the final error alone).
    fn waiting(&self, w: &Waiting<'_>) {
        use std::io::IsTerminal;
        if std::io::stderr().is_terminal() {
            let line = format!(
                "still waiting for {} from {} ({} s of {} s; {} sets the limit)",
                w.root,
                w.provider,
                w.elapsed.as_secs(),
                w.deadline.as_secs(),
                memdir::provider::DEADLINE_VAR
            );
            self.bar.suspend(|| eprintln!("{line}"));
        }
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}

/// After `write`, `forget` or `note` succeeded: push when the mode syncs, unless
/// `--offline`. A failed push keeps the local change and says so; the exit code stays
/// the command's own.
pub fn push_after_write(mem: &Memory, offline: bool, out: &mut Out) {
    if offline {
        return;
    }
    match memdir::sync::push_after_write(mem, &Bar::new(out)) {
        Ok(None) => {}
        Ok(Some(r)) if r.up_to_date => {}
        Ok(Some(r)) => {
            for w in &r.warnings {
                out.warn(&format!("warning: {w}"));
            }
            out.note(&format!("pushed {} to {}", r.network_root, r.provider));
        }
        Err(e) => out.warn_error(
            "the change is saved locally but was not pushed (`memdir status` lists unpushed changes; `memdir sync` retries)",
            &e.into(),
        ),
    }
}
