//! `memdir keygen`: a 0600 key file outside the memory directory, never overwritten.

use std::os::unix::fs::PermissionsExt;

use crate::common::*;

#[test]
fn keygen_writes_a_private_key_once_and_never_inside_the_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("memory");
    assert!(run(memdir(&dir).arg("init")).status.success());
    let key = tmp.path().join("keys/k");
    let o = run(memdir(&dir).args(["keygen", "--out"]).arg(&key));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let printed = stdout(&o);
    let public = printed
        .trim()
        .strip_prefix("public key: ")
        .expect("prints the public key");
    assert!(
        stderr(&o).contains("There is no key recovery"),
        "{}",
        stderr(&o)
    );
    let mode = std::fs::metadata(&key).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let parsed = memdir::sync::seal::read_key_file(&key).unwrap();
    assert_eq!(data_encoding::BASE64.encode(&parsed.public_bytes()), public);

    // Never over an existing key.
    let before = std::fs::read(&key).unwrap();
    let o = run(memdir(&dir).args(["keygen", "--out"]).arg(&key));
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("already exists")
            && stderr(&o).contains("hint: memdir never overwrites a key"),
        "{}",
        stderr(&o)
    );
    assert_eq!(std::fs::read(&key).unwrap(), before);

    // Never inside the memory directory, however the path is spelled.
    for inside in ["memory/k", "memory/../memory/k", "memory/./timeline/k"] {
        let o = run(memdir(&dir)
            .args(["keygen", "--out"])
            .arg(tmp.path().join(inside)));
        assert_eq!(o.status.code(), Some(1), "{inside}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("hint: keep the key outside the memory directory"),
            "{inside}: {}",
            stderr(&o)
        );
    }
    assert!(!dir.join("k").exists() && !dir.join("timeline/k").exists());
}

#[test]
fn keygen_default_location_is_private() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("memory");
    let o = run(memdir(&dir)
        .arg("--json")
        .arg("keygen")
        .env_remove("MEMDIR_KEY_FILE")
        .env("XDG_CONFIG_HOME", tmp.path().join("cfg")));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let path = tmp.path().join("cfg/memdir/key");
    assert_eq!(v["path"], path.to_string_lossy().as_ref());
    assert_eq!(
        std::fs::metadata(path.parent().unwrap())
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o700
    );
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );
    // MEMDIR_KEY_FILE wins over the default.
    let chosen = tmp.path().join("chosen.key");
    let o = run(memdir(&dir).arg("keygen").env("MEMDIR_KEY_FILE", &chosen));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(chosen.exists());
}
