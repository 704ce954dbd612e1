//! `memdir completions SHELL` and `memdir man`: the shell completion script and the
//! man pages, generated from the CLI definition itself (clap_complete, clap_mangen),
//! so they cannot fall behind the commands. They must not open the memory directory.

use std::path::{Path, PathBuf};

use clap::CommandFactory;

use super::{Cli, Out};

/// Print the completion script for a shell.
#[derive(Debug, clap::Args)]
#[command(after_help = "Install, for example:
  bash: memdir completions bash > ~/.local/share/bash-completion/completions/memdir
  zsh:  memdir completions zsh > ~/.zfunc/_memdir   (with fpath+=~/.zfunc before compinit)
  fish: memdir completions fish > ~/.config/fish/completions/memdir.fish")]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// Print the man page, or write one page per command into a folder.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  memdir man | man -l -
  memdir man --out-dir ~/.local/share/man/man1   (memdir.1, memdir-recall.1, ...)")]
pub struct ManArgs {
    /// Write memdir.1 and a page per command (memdir-recall.1, ...) into this folder.
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
}

pub fn completions(a: &CompletionsArgs, out: &mut Out) -> i32 {
    let mut cmd = Cli::command();
    let mut buf = Vec::new();
    clap_complete::generate(a.shell, &mut cmd, "memdir", &mut buf);
    out.text(&String::from_utf8_lossy(&buf));
    0
}

pub fn man(a: &ManArgs, out: &mut Out) -> i32 {
    let cmd = Cli::command();
    match &a.out_dir {
        None => {
            let mut buf = Vec::new();
            match clap_mangen::Man::new(cmd).render(&mut buf) {
                Ok(()) => {
                    out.text(&String::from_utf8_lossy(&buf));
                    0
                }
                Err(e) => fail(&format!("cannot render the man page: {e}"), out),
            }
        }
        Some(dir) => match write_pages(cmd, dir) {
            Ok(()) => {
                out.text(&format!(
                    "wrote memdir.1 and a page per command to {}",
                    dir.display()
                ));
                0
            }
            Err(e) => fail(
                &format!("cannot write the man pages to {}: {e}", dir.display()),
                out,
            ),
        },
    }
}

/// Writes a page per command into `dir` (created when missing).
fn write_pages(cmd: clap::Command, dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    clap_mangen::generate_to(cmd, dir)
}

fn fail(message: &str, out: &mut Out) -> i32 {
    out.warn(&memdir::report::lines(message, None));
    memdir::Class::Input.exit_code()
}
