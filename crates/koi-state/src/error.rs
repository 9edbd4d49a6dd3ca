//! The errors of the control-plane API. Every failing operation returns one of these and
//! leaves the state exactly as it was.

use thiserror::Error;

/// Why a control-plane operation was refused. The state is unchanged.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum StateError {
    /// No object of this kind has this name (exactly or as a suffix).
    #[error("unknown {kind} '{name}'")]
    Unknown { kind: &'static str, name: String },
    /// The name is a suffix of several objects' names.
    #[error("ambiguous {kind} '{name}': it matches {candidates}")]
    Ambiguous {
        kind: &'static str,
        name: String,
        candidates: String,
    },
    /// The wrong number of match fields for the table.
    #[error("table {table} needs {expected} match fields, got {found}")]
    KeyCount {
        table: String,
        expected: usize,
        found: usize,
    },
    /// A match field value that does not suit the field (width, match kind, range).
    #[error("table {table}, match field {field}: {why}")]
    BadKey {
        table: String,
        field: String,
        why: String,
    },
    /// The wrong number of action parameters.
    #[error("action {action} needs {expected} parameters, got {found}")]
    ArgCount {
        action: String,
        expected: usize,
        found: usize,
    },
    /// An action parameter value that does not fit the parameter.
    #[error("action {action}, parameter {param}: {why}")]
    BadArg {
        action: String,
        param: String,
        why: String,
    },
    /// The action is not in the table's `actions` list.
    #[error("action {action} is not an action of table {table}")]
    ActionNotInTable { table: String, action: String },
    /// The action is `@defaultonly` and was used in an entry.
    #[error("action {action} may only be the default action of table {table}")]
    DefaultOnlyAction { table: String, action: String },
    /// The action is `@tableonly` and was used as the default action.
    #[error("action {action} may not be the default action of table {table}")]
    TableOnlyAction { table: String, action: String },
    /// An entry with the same match key (and priority) exists.
    #[error("table {table} already has an entry with this match key (handle {handle})")]
    DuplicateEntry { table: String, handle: u32 },
    /// The table needs a priority (it has a ternary, range or optional field) and none was
    /// given.
    #[error("table {table} has ternary, range or optional match fields: entries need a priority")]
    MissingPriority { table: String },
    /// The table orders entries without priorities, and one was given.
    #[error("table {table} takes no entry priority")]
    UnexpectedPriority { table: String },
    /// No entry has this handle.
    #[error("table {table} has no entry with handle {handle}")]
    UnknownHandle { table: String, handle: u32 },
    /// The table holds `size` entries already.
    #[error("table {table} is full ({size} entries)")]
    TableFull { table: String, size: u64 },
    /// The table's entries are `const entries`.
    #[error("table {table} has const entries: they cannot be changed")]
    ConstTable { table: String },
    /// The entry is `const`.
    #[error("entry {handle} of table {table} is const")]
    ConstEntry { table: String, handle: u32 },
    /// The default action is `const default_action`.
    #[error("the default action of table {table} is const")]
    ConstDefault { table: String },
    /// The table has no match key: it can only run its default action.
    #[error("table {table} has no match key: it cannot have entries")]
    Keyless { table: String },
    /// A direct action on a table with an action profile, or a member or group on a table
    /// without one (or a group on a profile without selector).
    #[error("table {table}: {why}")]
    Implementation { table: String, why: String },
    /// An array index at or above the array's size.
    #[error("{name}: index {index} is out of range (size {size})")]
    IndexOutOfRange { name: String, index: u64, size: u64 },
    /// A value wider than its destination.
    #[error("{name}: value does not fit in {width} bits")]
    ValueTooWide { name: String, width: u32 },
    /// An object of the wrong kind (a counter where a register was named, ...).
    #[error("{name} is not a {expected}")]
    WrongKind {
        name: String,
        expected: &'static str,
    },
    /// An action profile operation refused (unknown member or group, still in use, ...).
    #[error("action profile {profile}: {why}")]
    Profile { profile: String, why: String },
    /// A meter configuration refused.
    #[error("meter {meter}: {why}")]
    Meter { meter: String, why: String },
    /// A multicast (PRE) operation refused.
    #[error("multicast: {0}")]
    Multicast(String),
    /// A mirroring session operation refused.
    #[error("mirroring: {0}")]
    Mirroring(String),
    /// A value set operation refused.
    #[error("value set {name}: {why}")]
    ValueSet { name: String, why: String },
    /// A command the executor does not support, or malformed command text.
    #[error("{0}")]
    Command(String),
}

/// Shorthand for results of this crate.
pub type Result<T> = std::result::Result<T, StateError>;
