//! The one integration test binary (`autotests = false`): every file under tests/
//! is a module here, and `every_test_file_is_registered` fails if one is not.

mod common;

mod bad_input;
#[cfg(feature = "sync")]
mod bench_hybrid;
mod cache;
mod claude_code;
mod cli_golden;
#[cfg(feature = "cli")]
mod completions;
#[cfg(all(feature = "cli", feature = "mcp", feature = "sync"))]
mod config_errors;
#[cfg(feature = "cli")]
mod doctor;
#[cfg(feature = "sync")]
mod embed;
#[cfg(feature = "embed-builtin")]
mod embed_builtin;
#[cfg(feature = "sync")]
mod embed_passages;
mod graph;
mod hardening;
mod import_formats;
#[cfg(feature = "sync")]
mod keygen;
mod library;
mod lifecycle;
#[cfg(feature = "mcp")]
mod mcp;
#[cfg(feature = "mcp")]
mod mcp_config;
#[cfg(all(feature = "mcp", feature = "sync"))]
mod mcp_remote;
mod memory_tool;
mod props;
#[cfg(feature = "sync")]
mod providers;
mod reliability;
mod robustness;
#[cfg(feature = "sync")]
mod seal;
mod state;
mod store_safety;
#[cfg(feature = "sync")]
mod support;
#[cfg(feature = "sync")]
mod sync;
mod threews;
mod tidy;
#[cfg(feature = "sync")]
mod tls;
#[cfg(feature = "cli")]
mod verbosity;
mod watch;

#[test]
fn every_test_file_is_registered() {
    let this = include_str!("tests.rs");
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_str().unwrap().to_string();
        if name == "tests" || path.extension().is_some_and(|e| e != "rs") && !path.is_dir() {
            continue;
        }
        assert!(
            this.contains(&format!("mod {name};")),
            "tests/{} is not registered in tests/tests.rs",
            path.file_name().unwrap().to_string_lossy()
        );
    }
}
