//! memdir's errors as Python exceptions: `MemdirError` and one subclass per
//! `memdir::Class` (`InputError`, `UsageError`, `RemoteError`, `IntegrityError`),
//! each instance carrying memdir's `message`, `hint`, `causes` and `exit_code`.

use std::error::Error as StdError;

use memdir::Class;
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

create_exception!(
    memdir,
    MemdirError,
    PyException,
    "An error of memdir: `message`, `hint` (or None), `causes` and `exit_code` as the CLI would exit."
);
create_exception!(
    memdir,
    InputError,
    MemdirError,
    "Bad input or a data problem: a key, a secret, a malformed file, a missing memory (CLI exit 1)."
);
create_exception!(
    memdir,
    UsageError,
    MemdirError,
    "Bad usage of an operation: an empty query, nothing to edit, a bad argument (CLI exit 2)."
);
create_exception!(
    memdir,
    RemoteError,
    MemdirError,
    "A remote failure during sync; a retry may help (CLI exit 3)."
);
create_exception!(
    memdir,
    IntegrityError,
    MemdirError,
    "Wrong CID, tampered or undecryptable data (CLI exit 4)."
);

/// What a Python exception is made from: the error's class, its message, its
/// causes (each source's message that the message does not already hold) and hint.
pub struct Raised {
    pub class: Class,
    pub message: String,
    pub causes: Vec<String>,
    pub hint: Option<String>,
}

impl Raised {
    /// The report of `error`, of `class`, with `hint`.
    pub fn of(error: &dyn StdError, class: Class, hint: Option<String>) -> Raised {
        let message = error.to_string();
        let mut causes = Vec::new();
        let mut src = error.source();
        while let Some(s) = src {
            let msg = s.to_string();
            // A transparent wrapper repeats its source's message; say it once.
            if !message.contains(&msg) {
                causes.push(msg);
            }
            src = s.source();
        }
        Raised {
            class,
            message,
            causes,
            hint,
        }
    }

    /// A usage error of the bindings themselves (an unknown mode, strategy, type).
    pub fn usage(message: String, hint: Option<String>) -> Raised {
        Raised {
            class: Class::Usage,
            message,
            causes: Vec::new(),
            hint,
        }
    }

    /// The Python exception: the subclass of the class, `str(e)` the message, and
    /// the attributes `message`, `hint`, `causes`, `exit_code`.
    pub fn into_py(self, py: Python<'_>) -> PyErr {
        let err = match self.class {
            Class::Input => InputError::new_err(self.message.clone()),
            Class::Usage => UsageError::new_err(self.message.clone()),
            Class::Remote => RemoteError::new_err(self.message.clone()),
            Class::Integrity => IntegrityError::new_err(self.message.clone()),
        };
        let value = err.value(py);
        let set = || -> PyResult<()> {
            value.setattr("message", &self.message)?;
            value.setattr("hint", &self.hint)?;
            value.setattr("causes", &self.causes)?;
            value.setattr("exit_code", self.class.exit_code())?;
            Ok(())
        };
        match set() {
            Ok(()) => err,
            Err(e) => e,
        }
    }
}

/// The hints that name what to do in Python terms (a method or an argument), where
/// the CLI's name a command and the MCP server's a tool; `None` where memdir's own
/// hint (which names neither) is the one.
fn python_hint(e: &memdir::Error) -> Option<String> {
    use memdir::Error;
    Some(match e {
        Error::NotFound { .. } => "no memory has that key; recall() finds memories by their text".into(),
        Error::Malformed { .. } => "memdir will not overwrite a file it cannot read; fix its frontmatter by hand (`memdir check` shows the problems) or remove the file".into(),
        Error::NoDir { .. } => "create it with Memory.init(), or open an existing memory directory".into(),
        Error::Type { .. } => "pass type= one of user, feedback, project, reference, state".into(),
        Error::Edit { key, .. } => format!("nothing was written; read(\"{key}\") shows its text and headings"),
        Error::AlreadyExists { key } => format!("pass replace=True to replace it, or expected_hash=read(\"{key}\").hash to replace only that version"),
        Error::HashMismatch { key, .. } => format!("another write got there first; read(\"{key}\") again and decide"),
        _ => return None,
    })
}

impl From<memdir::Error> for Raised {
    fn from(e: memdir::Error) -> Raised {
        let hint = python_hint(&e).or_else(|| e.hint());
        Raised::of(&e, e.class(), hint)
    }
}

impl From<memdir::sync::SyncError> for Raised {
    fn from(e: memdir::sync::SyncError) -> Raised {
        use memdir::sync::SyncError;
        let hint = match &e {
            SyncError::Core(core) => python_hint(core),
            SyncError::RemoteAhead { .. } | SyncError::HeadMoved { .. } => {
                Some("call sync() again to pull, merge and push".into())
            }
            SyncError::Secret { path, .. } => Some(format!(
                "memdir never publishes credentials: remove it from {path} (or forget() the memory), then sync again; nothing was sent"
            )),
            _ => None,
        };
        let hint = hint.or_else(|| e.hint());
        Raised::of(&e, e.class(), hint)
    }
}

impl From<memdir::provider::ProviderError> for Raised {
    fn from(e: memdir::provider::ProviderError) -> Raised {
        memdir::sync::SyncError::from(e).into()
    }
}

/// Adds the exception classes to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("MemdirError", py.get_type::<MemdirError>())?;
    m.add("InputError", py.get_type::<InputError>())?;
    m.add("UsageError", py.get_type::<UsageError>())?;
    m.add("RemoteError", py.get_type::<RemoteError>())?;
    m.add("IntegrityError", py.get_type::<IntegrityError>())?;
    Ok(())
}
