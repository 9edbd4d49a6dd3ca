//! Loading table entries and other control-plane state from a file of simple_switch_CLI
//! commands (`--entries FILE`), as `koi trace`, `koi run` and `koi bench` accept it.

use koi_state::State;
use std::path::Path;

/// Runs every command of `path` against `state`, in order. Stops at the first refused command
/// and says which line it was; blank lines and `#` comments are skipped.
pub fn load(state: &mut State, path: &Path) -> Result<usize, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut n = 0;
    for (i, line) in text.lines().enumerate() {
        let where_ = || format!("{}:{}", path.display(), i + 1);
        let cmd = koi_control::command::parse(line).map_err(|e| format!("{}: {e}", where_()))?;
        if let Some(cmd) = cmd {
            koi_state::cli::execute(state, &cmd).map_err(|e| format!("{}: {e}", where_()))?;
            n += 1;
        }
    }
    Ok(n)
}
