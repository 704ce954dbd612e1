//! `memdir keygen`: create the key pair of the encrypted-ipfs mode.

use std::path::PathBuf;

use serde_json::json;

use super::Out;
use memdir::Error;
use memdir::Memory;
use memdir::report::Failure;

/// Create a new X25519 key pair for encrypted-ipfs sync and print the public key.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "The key file is written with mode 0600, outside the memory directory (it is
refused inside it), and never over an existing file. Default location: $MEMDIR_KEY_FILE,
else $XDG_CONFIG_HOME/memdir/key, else ~/.config/memdir/key.

THERE IS NO KEY RECOVERY. Memories pushed in encrypted-ipfs mode can only be read with
this file: copy it to your other devices and keep a backup somewhere safe. A lost key
means lost memories.

To rotate the key: `memdir keygen --out NEW`, point MEMDIR_KEY_FILE or key_file in
.memdir/config.toml at NEW, then `memdir push`: the current version is sealed again to
the new key. Copy NEW to every other device and point it there before its next sync
(with only the old key a device cannot open the new version, and its pushes are
refused). Keep the old key: versions pushed before the rotation stay sealed to it."
)]
pub struct Args {
    /// Where to write the key file.
    #[arg(long, value_name = "PATH")]
    pub out: Option<PathBuf>,
}

pub fn run(mem: &Memory, a: &Args, out: &mut Out) -> Result<i32, Failure> {
    let path = a
        .out
        .clone()
        .or_else(memdir::sync::default_key_path)
        .ok_or(Error::Usage("no HOME to put the key in; pass --out PATH"))?;
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        create_private_dir(parent)?;
    }
    let key = memdir::sync::seal::generate_key();
    memdir::sync::seal::write_key_file(&path, &key, &mem.root())?;
    let public = data_encoding::BASE64.encode(&key.public_bytes());
    // A warning, not a note: it prints under -q too.
    out.warn(&format!(
        "wrote {} (mode 0600). There is no key recovery: copy this file to your other devices and keep a backup; a lost key means lost memories.",
        path.display()
    ));
    if out.is_json() {
        out.json(&json!({"path": path, "public": public}));
    } else {
        out.text(&format!("public key: {public}"));
    }
    Ok(0)
}

/// Creates the key's folder (0700 when new) so the default location works on a
/// fresh machine.
fn create_private_dir(dir: &std::path::Path) -> Result<(), Failure> {
    if dir.is_dir() {
        return Ok(());
    }
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        b.mode(0o700);
    }
    Ok(b.create(dir).map_err(|e| Error::Io {
        path: dir.to_path_buf(),
        source: e,
    })?)
}
