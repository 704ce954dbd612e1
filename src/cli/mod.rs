//! The command-line interface: argument parsing, dispatch, output and error reporting.
//!
//! This is the only code that prints. Every command prints human text by default and
//! one JSON document with `--json`; errors go to stderr as `error: …` with `caused
//! by:` and `hint:` lines, and [`report`] is the one place that turns an error into an
//! exit code (0 ok, 1 bad input or data, 2 usage, 3 remote, 4 integrity).

mod bench;
mod check;
mod cid;
mod completions;
mod consolidate;
mod context;
mod doctor;
mod edit;
mod export;
mod facts;
mod filter;
mod forget;
mod graph;
mod import;
mod index;
mod init;
mod input;
#[cfg(feature = "sync")]
mod keygen;
mod link;
mod list;
#[cfg(feature = "mcp")]
mod mcp;
#[cfg(feature = "mcp")]
mod mcp_config;
mod memory_tool;
mod note;
mod output;
mod progress;
mod prune;
#[cfg(feature = "sync")]
mod pull;
#[cfg(feature = "sync")]
mod push;
mod read;
mod recall;
#[cfg(feature = "sync")]
mod remote;
mod rename;
mod session;
mod state;
#[cfg(feature = "sync")]
mod status;
#[cfg(feature = "sync")]
mod sync;
mod timeline;
mod watch;
mod write;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use memdir::Memory;
use memdir::report::Failure;
pub use output::{Out, Verbosity};

/// Durable, human-editable memory for AI agents.
///
/// A memory directory holds one Markdown file per memory (YAML frontmatter + body),
/// an index (MEMORY.md, rebuilt automatically) and a timeline of events
/// (timeline/YYYY-MM-DD.jsonl). Agents call `context` before every turn and put the
/// block in their system prompt; they `write`, `recall`, `forget` and `note` as they go.
#[derive(Debug, Parser)]
#[command(name = "memdir", version, max_term_width = 100)]
#[command(after_help = "Examples:
  memdir --dir fixtures/example context --max-tokens 1024
  memdir init
  memdir write user_role --name Role --type user --description \"Argentina fan\" --body \"Plays 5-a-side.\"
  memdir recall \"saturday football\"
  memdir note user_said text=\"how's my form?\"

Environment:
  MEMDIR_DIR   the memory directory when --dir is not given (default ./memory; only
               init, or a command given --create, creates it; a leading ~/ is HOME)
  MEMDIR_NOW   an RFC 3339 time that replaces the clock (reproducible output)
  MEMDIR_SESSION  the session id `note` stamps on events when --session is not given
  MEMDIR_KEY_FILE  the encrypted-ipfs key file (default ~/.config/memdir/key)
  IPFS_API, PINATA_JWT, FILEBASE_KEY/FILEBASE_SECRET/FILEBASE_BUCKET, WEB3_STORAGE_TOKEN,
  MEMDIR_FOLDER, MEMDIR_GATEWAYS   provider credentials and endpoints (`memdir push --help`)

Exit codes: 0 ok, 1 bad input or data problem, 2 usage, 3 remote failure, 4 integrity failure")]
pub struct Cli {
    /// The memory directory (a leading `~` or `~/` is your home directory).
    #[arg(long, global = true, env = "MEMDIR_DIR", default_value = "memory")]
    pub dir: PathBuf,
    /// Create the memory directory if it does not exist, as `init` does (otherwise
    /// only `init` creates it).
    #[arg(long, global = true)]
    pub create: bool,
    /// Print one JSON document on stdout instead of text.
    #[arg(long, global = true)]
    pub json: bool,
    /// Print only results, warnings and errors on stderr: no notes, no progress.
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,
    /// Also say on stderr which directory and configuration are used, and how long
    /// each phase took.
    #[arg(short, long, global = true)]
    pub verbose: bool,
    #[command(subcommand)]
    pub command: Command,
}

/// `--offline`, taken only by the commands that push after a change (`write`,
/// `forget`, `note`): elsewhere it would mean nothing, so it is not offered.
#[derive(Debug, Clone, clap::Args)]
pub struct Offline {
    /// Do not push after this change, even in ipfs / encrypted-ipfs mode.
    // MEMDIR_OFFLINE=1 is the documented form: take 1/0, true/false, yes/no, on/off,
    // and an empty value as unset.
    #[arg(long, env = "MEMDIR_OFFLINE", value_parser = parse_switch)]
    pub offline: bool,
}

/// A yes/no environment value: `1`/`0`, `true`/`false`, `yes`/`no`, `on`/`off` (any
/// case, or their first letters), empty for no.
fn parse_switch(s: &str) -> Result<bool, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "" | "0" | "false" | "f" | "no" | "n" | "off" => Ok(false),
        "1" | "true" | "t" | "yes" | "y" | "on" => Ok(true),
        _ => Err("expected 1 or 0, true or false, yes or no, on or off".into()),
    }
}

/// A text value given in a positional's place: may start with `-` (`- tired`, `-5`),
/// but a lone `--word` is a mistyped flag, not text (spec/cli.md#values-that-start-with--).
/// An option's value (`--body "- item"`) needs no check: clap has already matched
/// the option.
fn text_value(s: &str) -> Result<String, String> {
    let flag = s.strip_prefix("--").is_some_and(|w| {
        w.starts_with(|c: char| c.is_ascii_alphabetic())
            && w.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '=')
    });
    if flag {
        return Err(format!(
            "`{s}` looks like a mistyped flag: this command has no such flag"
        ));
    }
    Ok(s.to_string())
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create the memory directory (MEMORY.md, timeline/, .memdir/).
    Init(init::Args),
    /// Create a memory (or replace one with --replace); prints created, updated or unchanged.
    Write(write::Args),
    /// Print a memory.
    Read(read::Args),
    /// List memories in rank order (salience × recency).
    List(list::Args),
    /// Delete a memory, rebuild the index and log a `forgot` event.
    Forget(forget::Args),
    /// List memories that could go (expired, long superseded, decayed, beyond a cap), or forget exactly those.
    Prune(prune::Args),
    /// Group exact and near duplicate memories for merging with supersedes.
    Consolidate(consolidate::Args),
    /// Change part of a memory (append, replace a section or a phrase, some fields).
    Edit(edit::Args),
    /// Move a memory to a new key and log a `renamed` event.
    Rename(rename::Args),
    /// Link one memory to another: add `- REL:: [[B]]` to A.
    Link(link::LinkArgs),
    /// Remove a `- REL:: [[B]]` line from A.
    Unlink(link::UnlinkArgs),
    /// Walk the links around a memory (depth, relation, direction, token budget).
    Graph(graph::Args),
    /// List the `- predicate:: value` facts of the memories.
    Facts(facts::Args),
    /// Append an event to the timeline.
    Note(note::Args),
    /// Run one command of Claude's memory tool (JSON on stdin) and print its reply.
    MemoryTool(memory_tool::Args),
    /// Get, set, list or unset agent state entries (`state_<key>.md`).
    #[command(subcommand)]
    State(state::Args),
    /// List the sessions of the timeline (id, first and last time, count, types).
    Sessions(session::ListArgs),
    /// Show a session's transcript or compact it into a summary memory.
    #[command(subcommand)]
    Session(session::Args),
    /// Print the most recent timeline events, newest first.
    Timeline(timeline::Args),
    /// Find memories relevant to a query, best first.
    Recall(recall::Args),
    /// Print the context block for an agent's system prompt.
    Context(context::Args),
    /// Rebuild MEMORY.md from the memory files.
    Index(index::Args),
    /// Report malformed files and timeline lines; --fix repairs what is safe.
    Check(check::Args),
    /// Check the directory, config, sync key, provider, embeddings and index; say what to do.
    Doctor(doctor::Args),
    /// Rebuild the index whenever files change (editor saves, git checkouts).
    Watch(watch::Args),
    /// Write the memories as a memory/0.1 blob or an MCP memory.jsonl.
    Export(export::Args),
    /// Import a memory/0.1 blob, a Claude Code memory folder, an MCP memory.jsonl or a basic-memory project.
    Import(import::Args),
    /// Print the IPFS root CID of the directory, computed offline.
    Cid(cid::Args),
    /// Upload the directory to a provider; print the root CID.
    #[cfg(feature = "sync")]
    Push(push::Args),
    /// Download a version by CID, verify it, merge it in.
    #[cfg(feature = "sync")]
    Pull(pull::Args),
    /// Pull the provider's latest version, merge, push.
    #[cfg(feature = "sync")]
    Sync(sync::Args),
    /// Show mode, last synced root, unpushed changes and conflicts (offline).
    #[cfg(feature = "sync")]
    Status(status::Args),
    /// Create a key pair for encrypted-ipfs sync (no recovery if lost).
    #[cfg(feature = "sync")]
    Keygen(keygen::Args),
    /// Serve the MCP tools and resources over stdio, or over Streamable HTTP with --http.
    #[cfg(feature = "mcp")]
    Mcp(mcp::Args),
    /// Print the shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(completions::CompletionsArgs),
    /// Print the man page (or write one per command with --out-dir).
    Man(completions::ManArgs),
    /// Measure memdir on a public benchmark (LoCoMo evidence recall).
    #[command(subcommand)]
    Bench(bench::Args),
}

/// Runs the CLI with the process arguments and returns the exit code.
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            // clap prints help/version to stdout (exit 0) and usage errors to stderr (exit 2).
            let code = e.exit_code();
            let _ = e.print();
            return code;
        }
    };
    // A process that serves for long gives freed memory back; one that answers
    // once keeps it until it ends (`keep_freed_memory`).
    let serves = matches!(cli.command, Command::Watch(_));
    #[cfg(feature = "mcp")]
    let serves = serves || matches!(cli.command, Command::Mcp(_));
    if !serves {
        keep_freed_memory();
    }
    let verbosity = match (cli.quiet, cli.verbose) {
        (true, _) => Verbosity::Quiet,
        (_, true) => Verbosity::Verbose,
        _ => Verbosity::Normal,
    };
    let mut out = Out::new(cli.json).with_verbosity(verbosity);
    let start = std::time::Instant::now();
    let code = match run(&cli, &mut out) {
        Ok(code) => code,
        Err(e) => report(&e, &mut out),
    };
    out.verbose(&format!(
        "exit {code} after {:.1} ms",
        start.elapsed().as_secs_f64() * 1e3
    ));
    code
}

/// For a command that ends once it has answered: freed memory stays with the
/// process instead of going back to the system as it is freed. mimalloc hands freed
/// pages back after a delay (`purge_delay`, a second), each return an `madvise` that
/// stops every core the process runs on to flush its TLB; a one-shot call frees its
/// whole load as it ends (on a thread of its own), and without those returns it took
/// some 5% less time at 10,000 memories (spec/decisions.md). A long-lived process (`mcp`,
/// `watch`) keeps mimalloc's default, so its memory goes back after a large load.
fn keep_freed_memory() {
    // mimalloc.h's `mi_option_purge_delay` (mimalloc 3; the crate has no name for
    // it). Changed only from its default, 1000 ms: a different value means the
    // option is not this one (another mimalloc) or was set (MIMALLOC_PURGE_DELAY).
    const PURGE_DELAY: std::ffi::c_int = 15;
    unsafe extern "C" {
        fn mi_option_get(option: std::ffi::c_int) -> std::ffi::c_long;
        fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
    }
    // SAFETY: both are exported by the mimalloc the binary links as its allocator
    // (libmimalloc-sys); getting and setting an option is thread-safe in mimalloc.
    unsafe {
        if mi_option_get(PURGE_DELAY) == 1000 {
            mi_option_set(PURGE_DELAY, -1);
        }
    }
}

/// Before a command that loads the store with term data, when there is no search index
/// yet: a spinner, on a terminal, should building it take more than a second.
fn first_index_build(command: &Command, mem: &Memory, out: &mut Out) {
    let loads = matches!(
        command,
        Command::Recall(_)
            | Command::Context(_)
            | Command::List(_)
            | Command::Graph(_)
            | Command::Facts(_)
            | Command::Consolidate(_)
            | Command::Prune(_)
            | Command::Check(_)
            | Command::Export(_)
            | Command::Index(_)
    );
    if loads && mem.root().is_dir() && !mem.has_search_index() {
        out.spinner("building the search index (first use; later runs reuse it)");
    }
}

/// The store `--dir` names, `~` expanded. A missing directory is an error for every
/// command but `init` (and those that do not use it), unless `--create` asks to create
/// it (spec/cli.md#the-memory-directory).
fn open_store(cli: &Cli) -> Result<Memory, Failure> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let dir = expand_home(&cli.dir, home.as_deref())?;
    let mem = Memory::open(&dir)?;
    if uses_store(&cli.command) && !dir.exists() {
        if !cli.create {
            return Err(memdir::Error::NoDir { path: dir }.into());
        }
        mem.init()?;
    }
    Ok(mem)
}

/// Whether the command needs the memory directory to exist: not `init` (it creates
/// it), `bench`, `keygen`, `completions` and `man` (they do not use it), `doctor`
/// (it reports a missing directory as a failed check, creating nothing), nor `mcp`
/// (it checks for itself, so that its in-memory mode needs no directory).
fn uses_store(c: &Command) -> bool {
    match c {
        Command::Init(_) | Command::Bench(_) | Command::Doctor(_) => false,
        Command::Completions(_) | Command::Man(_) => false,
        #[cfg(feature = "mcp")]
        Command::Mcp(_) => false,
        #[cfg(feature = "sync")]
        Command::Keygen(_) => false,
        _ => true,
    }
}

/// `path` with a leading `~` or `~/` replaced by `home`; `~user` is refused (memdir
/// does not look users up), and so is `~` without a home.
fn expand_home(path: &std::path::Path, home: Option<&std::path::Path>) -> Result<PathBuf, Failure> {
    let Some(text) = path.to_str().filter(|t| t.starts_with('~')) else {
        return Ok(path.to_path_buf());
    };
    let rest = match text.strip_prefix('~') {
        Some("") => "",
        Some(r) if r.starts_with('/') => r.trim_start_matches('/'),
        _ => {
            return Err(memdir::Error::Argument {
                arg: "--dir".into(),
                message: format!(
                    "`{text}`: memdir expands only a leading `~` or `~/` (to HOME), not `~user`; give the full path"
                ),
            }
            .into());
        }
    };
    let Some(home) = home.filter(|h| !h.as_os_str().is_empty()) else {
        return Err(memdir::Error::Argument {
            arg: "--dir".into(),
            message: format!(
                "`{text}`: HOME is not set, so `~` cannot be expanded; give the full path"
            ),
        }
        .into());
    };
    Ok(if rest.is_empty() {
        home.to_path_buf()
    } else {
        home.join(rest)
    })
}

/// Under `-v`: the directory and the configuration file this run uses.
fn say_where(mem: &Memory, out: &mut Out) {
    if out.verbosity() < Verbosity::Verbose {
        return;
    }
    let root = mem.root();
    let state = if root.join(memdir::memory::layout::INDEX_FILE).is_file() {
        "a memory directory"
    } else if root.is_dir() {
        "no MEMORY.md yet"
    } else {
        "does not exist yet"
    };
    out.verbose(&format!("directory {} ({state})", root.display()));
    let config = mem.config_path();
    out.verbose(&format!(
        "config {} ({})",
        config.display(),
        if config.is_file() {
            "present"
        } else {
            "absent: the defaults"
        }
    ));
}

fn run(cli: &Cli, out: &mut Out) -> Result<i32, Failure> {
    // Generated from the CLI definition; no memory directory is opened.
    match &cli.command {
        Command::Completions(a) => return Ok(completions::completions(a, out)),
        Command::Man(a) => return Ok(completions::man(a, out)),
        _ => {}
    }
    // `mcp config` writes a client's file, not the memory directory: it opens nothing.
    #[cfg(feature = "mcp")]
    if let Command::Mcp(mcp::Args {
        action: Some(mcp::Action::Config(a)),
        ..
    }) = &cli.command
    {
        return Ok(mcp_config::run(&cli.dir, a, out));
    }
    let mem = open_store(cli)?;
    say_where(&mem, out);
    first_index_build(&cli.command, &mem, out);
    match &cli.command {
        Command::Init(a) => init::run(&mem, a, out),
        Command::Write(a) => write::run(&mem, a, out).map(|c| after_write(&mem, &a.push, out, c)),
        Command::Read(a) => read::run(&mem, a, out),
        Command::List(a) => list::run(&mem, a, out),
        Command::Forget(a) => forget::run(&mem, a, out).map(|c| after_write(&mem, &a.push, out, c)),
        Command::Prune(a) => prune::run(&mem, a, out).map(|c| {
            if a.apply {
                after_write(&mem, &a.push, out, c)
            } else {
                c
            }
        }),
        Command::Consolidate(a) => consolidate::run(&mem, a, out),
        Command::Note(a) => note::run(&mem, a, out).map(|c| after_write(&mem, &a.push, out, c)),
        Command::MemoryTool(a) => memory_tool::run(&mem, a, out).map(|(c, changed)| {
            if changed {
                after_write(&mem, &a.push, out, c)
            } else {
                c
            }
        }),
        Command::Edit(a) => edit::run(&mem, a, out).map(|c| after_write(&mem, &a.push, out, c)),
        Command::Rename(a) => rename::run(&mem, a, out).map(|c| after_write(&mem, &a.push, out, c)),
        Command::State(a) => state::run(&mem, a, out).map(|c| match a.push() {
            Some(p) => after_write(&mem, p, out, c),
            None => c,
        }),
        Command::Sessions(a) => session::list(&mem, a, out),
        Command::Session(a) => {
            let code = session::run(&mem, a, out);
            match a {
                session::Args::Compact(c) => code.map(|n| after_write(&mem, &c.push, out, n)),
                session::Args::Show(_) => code,
            }
        }
        Command::Link(a) => {
            link::run_link(&mem, a, out).map(|c| after_write(&mem, &a.push, out, c))
        }
        Command::Unlink(a) => {
            link::run_unlink(&mem, a, out).map(|c| after_write(&mem, &a.push, out, c))
        }
        Command::Graph(a) => graph::run(&mem, a, out),
        Command::Facts(a) => facts::run(&mem, a, out),
        Command::Timeline(a) => timeline::run(&mem, a, out),
        Command::Recall(a) => recall::run(&mem, a, out),
        Command::Context(a) => context::run(&mem, a, out),
        Command::Index(a) => index::run(&mem, a, out),
        Command::Check(a) => check::run(&mem, a, out),
        Command::Doctor(a) => doctor::run(&mem, a, out),
        Command::Watch(a) => watch::run(&mem, a, out),
        Command::Export(a) => export::run(&mem, a, out),
        Command::Import(a) => import::run(&mem, a, out),
        Command::Cid(a) => cid::run(&mem, a, out),
        #[cfg(feature = "sync")]
        Command::Push(a) => push::run(&mem, a, out),
        #[cfg(feature = "sync")]
        Command::Pull(a) => pull::run(&mem, a, out),
        #[cfg(feature = "sync")]
        Command::Sync(a) => sync::run(&mem, a, out),
        #[cfg(feature = "sync")]
        Command::Status(a) => status::run(&mem, a, out),
        #[cfg(feature = "sync")]
        Command::Keygen(a) => keygen::run(&mem, a, out),
        #[cfg(feature = "mcp")]
        Command::Mcp(a) => mcp::run(&mem, a, cli.create, out),
        Command::Bench(a) => bench::run(a, out),
        // Answered above, before the directory is opened.
        Command::Completions(a) => Ok(completions::completions(a, out)),
        Command::Man(a) => Ok(completions::man(a, out)),
    }
}

/// After a successful write, edit, rename, forget or note: push when the configured mode syncs.
fn after_write(mem: &Memory, push: &Offline, out: &mut Out, code: i32) -> i32 {
    #[cfg(feature = "sync")]
    if code == 0 {
        remote::push_after_write(mem, push.offline, out);
    }
    #[cfg(not(feature = "sync"))]
    let _ = (mem, push, &out);
    code
}

/// Prints an error with its causes and hint, and returns its exit code.
pub fn report(e: &Failure, out: &mut Out) -> i32 {
    out.error(e);
    e.class().exit_code()
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use clap::CommandFactory;

    use super::expand_home;

    fn check(input: &str, home: Option<&str>, expect: Result<&str, &str>) {
        let got = expand_home(Path::new(input), home.map(Path::new));
        match (got, expect) {
            (Ok(p), Ok(want)) => assert_eq!(p, Path::new(want), "{input}"),
            (Err(e), Err(want)) => {
                let msg = e.to_string();
                assert!(msg.contains(want), "{input}: {msg}")
            }
            (got, want) => panic!("{input}: got {got:?}, want {want:?}"),
        }
    }

    #[test]
    fn a_leading_tilde_is_home() {
        check("~", Some("/home/me"), Ok("/home/me"));
        check("~/", Some("/home/me"), Ok("/home/me"));
        check(
            "~/agent/memory",
            Some("/home/me"),
            Ok("/home/me/agent/memory"),
        );
        check("~//x", Some("/home/me"), Ok("/home/me/x"));
        check("memory", None, Ok("memory"));
        check("a/~/b", Some("/home/me"), Ok("a/~/b"));
        check("/abs/~x", Some("/home/me"), Ok("/abs/~x"));
        check("~bob/memory", Some("/home/me"), Err("not `~user`"));
        check("~~", Some("/home/me"), Err("not `~user`"));
        check("~/m", None, Err("HOME is not set"));
        check("~", Some(""), Err("HOME is not set"));
    }

    /// Every command's help, subcommands included, with its path.
    fn helps(cmd: &mut clap::Command, path: String, out: &mut Vec<(String, String)>) {
        out.push((path.clone(), cmd.render_long_help().to_string()));
        for sub in cmd.get_subcommands_mut() {
            let p = format!("{path} {}", sub.get_name());
            helps(sub, p, out);
        }
    }

    #[test]
    fn help_names_no_repository_file() {
        // spec/architecture.md#what-is-absent-on-purpose: a user has the binary, not
        // the repository, so help names commands, never a file under spec/.
        let mut cmd = super::Cli::command();
        cmd.build();
        let mut all = Vec::new();
        helps(&mut cmd, "memdir".into(), &mut all);
        assert!(all.len() > 30, "{}", all.len());
        let bad: Vec<&String> = all
            .iter()
            .filter(|(_, h)| h.contains("spec/"))
            .map(|(p, _)| p)
            .collect();
        assert!(bad.is_empty(), "help citing spec/: {bad:?}");
    }
}
