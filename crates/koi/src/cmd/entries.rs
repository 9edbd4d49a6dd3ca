//! Loading table entries and other control-plane state from a file of simple_switch_CLI
//! commands (`--entries FILE`), as `koi trace`, `koi run` and `koi bench` accept it.

use koi_state::State;
use std::path::Path;

/// Why an entries file was not loaded.
#[derive(Debug)]
pub enum EntriesError {
    /// The file could not be read (missing, larger than
    /// [`koi_syntax::input::MAX_ENTRIES`], not a regular file, not UTF-8): exit code 2.
    Io(String),
    /// A command was malformed or refused (`FILE:LINE: why`): exit code 1.
    Command(String),
}

impl EntriesError {
    /// The exit code of a command that stops on this error.
    pub fn code(&self) -> u8 {
        match self {
            EntriesError::Io(_) => 2,
            EntriesError::Command(_) => 1,
        }
    }
}

impl std::fmt::Display for EntriesError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EntriesError::Io(m) | EntriesError::Command(m) => f.write_str(m),
        }
    }
}

impl From<EntriesError> for String {
    fn from(e: EntriesError) -> String {
        e.to_string()
    }
}

/// Runs every command of `path` against `state`, in order. Stops at the first refused command
/// and says which line it was; blank lines and `#` comments are skipped.
pub fn load(state: &mut State, path: &Path) -> Result<usize, EntriesError> {
    let text = koi_syntax::input::read_text(path, koi_syntax::input::MAX_ENTRIES)
        .map_err(|e| EntriesError::Io(e.to_string()))?;
    let mut n = 0;
    for (i, line) in text.lines().enumerate() {
        let where_ = || format!("{}:{}", path.display(), i + 1);
        let cmd = koi_control::command::parse(line)
            .map_err(|e| EntriesError::Command(format!("{}: {e}", where_())))?;
        if let Some(cmd) = cmd {
            koi_state::cli::execute(state, &cmd)
                .map_err(|e| EntriesError::Command(format!("{}: {e}", where_())))?;
            n += 1;
        }
    }
    Ok(n)
}
