//! `memdir completions SHELL` and `memdir man` (spec/cli.md#completions-and-man-page):
//! generated from the CLI definition, they name every command, and need no memory
//! directory.

use crate::common::*;

/// The commands `memdir --help` lists.
fn commands() -> Vec<String> {
    let o = run(std::process::Command::new(bin()).arg("--help"));
    let help = stdout(&o);
    let start = help.find("Commands:\n").unwrap() + "Commands:\n".len();
    help[start..]
        .lines()
        .take_while(|l| l.starts_with("  "))
        // A command's line; deeper indentation continues a description.
        .filter(|l| !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_string)
        .collect()
}

#[test]
fn completion_scripts_name_every_command() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("memory");
    let commands = commands();
    assert!(commands.len() > 30, "{commands:?}");
    for (shell, first) in [
        ("bash", "_memdir()"),
        ("zsh", "#compdef memdir"),
        ("fish", ""),
        ("elvish", ""),
        ("powershell", ""),
    ] {
        let o = run(memdir(&dir).args(["completions", shell]));
        assert_eq!(o.status.code(), Some(0), "{shell}: {}", stderr(&o));
        let script = stdout(&o);
        assert!(
            script.trim_start().starts_with(first),
            "{shell}: {script:.200}"
        );
        for c in &commands {
            assert!(script.contains(c.as_str()), "{shell} lacks {c}");
        }
    }
    // Also the options of a command, e.g. recall's --limit, and mcp config's clients.
    let bash = stdout(&run(memdir(&dir).args(["completions", "bash"])));
    assert!(bash.contains("--limit") && bash.contains("claude-desktop"));
    let o = run(memdir(&dir).args(["completions", "tcsh"]));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(!dir.exists(), "completions created the memory directory");
}

#[test]
fn the_man_page_is_the_cli_definition() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("memory");
    let o = run(memdir(&dir).arg("man"));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let page = stdout(&o);
    assert!(page.contains(".TH memdir 1"), "{page:.300}");
    for c in commands() {
        // roff escapes a hyphen (`memory\-tool`).
        let roff = c.replace('-', "\\-");
        assert!(page.contains(&roff), "the man page lacks {c}");
    }

    let pages = tmp.path().join("man1");
    let o = run(memdir(&dir).args(["man", "--out-dir"]).arg(&pages));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    for c in [
        "memdir.1",
        "memdir-recall.1",
        "memdir-mcp-config.1",
        "memdir-state-set.1",
    ] {
        let text = std::fs::read_to_string(pages.join(c)).unwrap_or_else(|e| panic!("{c}: {e}"));
        assert!(text.contains(".TH"), "{c}");
    }
    assert!(!dir.exists(), "man created the memory directory");
}
