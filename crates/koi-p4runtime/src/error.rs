//! Refused P4Runtime operations: the status code the spec names for each case and a message
//! saying what was refused and why, naming the object by its P4Info name; and how koi-state's
//! refusals map to those codes.

use koi_state::StateError;
use tonic::Code;

/// A refused P4Runtime operation: the spec's status code and a message saying what and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}: {message}", code.description())]
pub struct P4Error {
    pub code: Code,
    pub message: String,
}

/// Shorthand for results of this crate.
pub type Result<T> = std::result::Result<T, P4Error>;

/// The error space of koi's per-update errors.
pub const ERROR_SPACE: &str = "koi";

impl P4Error {
    pub fn new(code: Code, message: impl Into<String>) -> P4Error {
        P4Error {
            code,
            message: message.into(),
        }
    }

    /// As a per-update `p4.v1.Error` (canonical_code = code, message, space "koi" only when
    /// code != OK).
    pub fn to_update_error(&self) -> koi_proto::p4runtime::Error {
        koi_proto::p4runtime::Error {
            canonical_code: self.code as i32,
            message: self.message.clone(),
            space: if self.code == Code::Ok {
                String::new()
            } else {
                ERROR_SPACE.to_string()
            },
            ..Default::default()
        }
    }

    /// The per-update `p4.v1.Error` of an update that succeeded (code OK, nothing else).
    pub fn ok_update_error() -> koi_proto::p4runtime::Error {
        koi_proto::p4runtime::Error::default()
    }
}

pub(crate) fn invalid(msg: impl Into<String>) -> P4Error {
    P4Error::new(Code::InvalidArgument, msg)
}

pub(crate) fn not_found(msg: impl Into<String>) -> P4Error {
    P4Error::new(Code::NotFound, msg)
}

pub(crate) fn exists(msg: impl Into<String>) -> P4Error {
    P4Error::new(Code::AlreadyExists, msg)
}

pub(crate) fn out_of_range(msg: impl Into<String>) -> P4Error {
    P4Error::new(Code::OutOfRange, msg)
}

pub(crate) fn exhausted(msg: impl Into<String>) -> P4Error {
    P4Error::new(Code::ResourceExhausted, msg)
}

pub(crate) fn denied(msg: impl Into<String>) -> P4Error {
    P4Error::new(Code::PermissionDenied, msg)
}

pub(crate) fn unimplemented(msg: impl Into<String>) -> P4Error {
    P4Error::new(Code::Unimplemented, msg)
}

pub(crate) fn precondition(msg: impl Into<String>) -> P4Error {
    P4Error::new(Code::FailedPrecondition, msg)
}

pub(crate) fn internal(msg: impl Into<String>) -> P4Error {
    P4Error::new(Code::Internal, msg)
}

/// The P4Runtime code of a koi-state refusal. The callers check the cases whose code depends
/// on the context first (unknown members and groups, full profiles, ...); this is the
/// fallback.
impl From<StateError> for P4Error {
    fn from(e: StateError) -> P4Error {
        use StateError as S;
        let code = match &e {
            S::Unknown { .. } | S::UnknownHandle { .. } => Code::NotFound,
            S::DuplicateEntry { .. } => Code::AlreadyExists,
            S::TableFull { .. } => Code::ResourceExhausted,
            S::IndexOutOfRange { .. } | S::ValueTooWide { .. } => Code::OutOfRange,
            S::DefaultOnlyAction { .. }
            | S::TableOnlyAction { .. }
            | S::ConstTable { .. }
            | S::ConstEntry { .. }
            | S::ConstDefault { .. } => Code::PermissionDenied,
            S::Profile { why, .. } | S::ValueSet { why, .. } if why.starts_with("full") => {
                Code::ResourceExhausted
            }
            S::Profile { why, .. } if why.contains("still used") => Code::FailedPrecondition,
            S::Profile { why, .. } if why.starts_with("no ") => Code::NotFound,
            _ => Code::InvalidArgument,
        };
        P4Error::new(code, e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn update_errors_carry_code_message_and_space() {
        let e = not_found("table I.t has no such entry");
        let u = e.to_update_error();
        assert_eq!(u.canonical_code, Code::NotFound as i32);
        assert_eq!(u.message, "table I.t has no such entry");
        assert_eq!(u.space, "koi");
        let ok = P4Error::new(Code::Ok, "").to_update_error();
        assert_eq!((ok.canonical_code, ok.space.as_str()), (0, ""));
        assert_eq!(P4Error::ok_update_error(), ok);
    }

    #[test]
    fn state_errors_map_to_spec_codes() {
        let code = |e: StateError| P4Error::from(e).code;
        let t = || "I.t".to_string();
        assert_eq!(
            code(StateError::DuplicateEntry {
                table: t(),
                handle: 0
            }),
            Code::AlreadyExists
        );
        assert_eq!(
            code(StateError::TableFull {
                table: t(),
                size: 1
            }),
            Code::ResourceExhausted
        );
        assert_eq!(
            code(StateError::ConstTable { table: t() }),
            Code::PermissionDenied
        );
        assert_eq!(
            code(StateError::Profile {
                profile: t(),
                why: "member 3 is still used".into()
            }),
            Code::FailedPrecondition
        );
        assert_eq!(
            code(StateError::Profile {
                profile: t(),
                why: "full (4 members)".into()
            }),
            Code::ResourceExhausted
        );
        assert_eq!(
            code(StateError::IndexOutOfRange {
                name: t(),
                index: 9,
                size: 4
            }),
            Code::OutOfRange
        );
        assert_eq!(
            code(StateError::Keyless { table: t() }),
            Code::InvalidArgument
        );
    }
}
