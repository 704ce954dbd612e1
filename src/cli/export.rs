//! `memdir export`: write the portable blob.

use std::path::PathBuf;

use serde_json::json;

use super::Out;
use crate::engine::Memory;
use crate::error::Error;
use crate::report::Failure;

/// Write the portable memory/0.1 blob (compatible with the three.ws runtime).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Write to this file instead of standard output.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}

pub fn run(mem: &Memory, a: &Args, out: &mut Out) -> Result<i32, Failure> {
    let (blob, problems) = mem.export()?;
    out.problems(&mem.root(), &problems);
    match &a.output {
        None => out.text(&blob),
        Some(path) => {
            let dir = path
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(std::path::Path::new("."));
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .ok_or(Error::Usage("-o needs a file name"))?;
            crate::store::Backend::Dir(dir.to_path_buf()).write_atomic(name, blob.as_bytes())?;
            if out.is_json() {
                out.json(&json!({"path": path, "bytes": blob.len()}));
            } else {
                out.text(&format!("wrote {} ({} bytes)", path.display(), blob.len()));
            }
        }
    }
    Ok(0)
}
