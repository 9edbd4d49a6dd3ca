//! What can go wrong when generating a P4Info: every problem found is collected and reported
//! together in one [`P4InfoError`], the way p4c reports all its errors before giving up.

use koi_proto::ids::IdError;

/// One problem of the pipeline that prevents a correct P4Info.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Problem {
    /// A top-level object's `@id` is unusable (wrong prefix, already taken) or no id is left.
    #[error("{kind} {error}")]
    Id {
        /// The P4Info kind of the object (`table`, `action`, `counter`, ...).
        kind: &'static str,
        /// koi-proto's allocation error (it names the object).
        error: IdError,
    },
    /// `@id(0)` on a match field, action parameter or packet metadata field.
    #[error("{owner}: field '{field}': 0 is not a valid @id value")]
    FieldIdZero {
        /// The table, action, value set or controller header.
        owner: String,
        /// The field's name.
        field: String,
    },
    /// Two fields of one object with the same `@id`.
    #[error("{owner}: field '{field}': @id {id} is used multiple times")]
    FieldIdDuplicate {
        /// The table, action, value set or controller header.
        owner: String,
        /// The field's name.
        field: String,
        /// The repeated id.
        id: u32,
    },
    /// Two objects of the same P4Info kind with the same name.
    #[error("name '{name}' is used for multiple {kind} objects in the P4Info message")]
    DuplicateName {
        /// The P4Info kind.
        kind: &'static str,
        /// The shared name.
        name: String,
    },
    /// A reference to an action, extern, digest or type that is not in the pipeline.
    #[error("{owner}: refers to a missing {what} ({detail})")]
    Dangling {
        /// The referring object.
        owner: String,
        /// What kind of object is missing.
        what: &'static str,
        /// The missing id or name.
        detail: String,
    },
    /// A direct counter or meter attached to several tables.
    #[error("{kind} {name} is attached to several tables: {}", .tables.join(", "))]
    SharedDirectResource {
        /// `direct counter` or `direct meter`.
        kind: &'static str,
        /// Its name.
        name: String,
        /// The tables using it.
        tables: Vec<String>,
    },
    /// An annotation P4Info interprets has an argument of the wrong form.
    #[error("{owner}: annotation {annotation}: expected {expected}")]
    BadAnnotation {
        /// The annotated object.
        owner: String,
        /// The annotation as written.
        annotation: String,
        /// What the argument should be.
        expected: &'static str,
    },
    /// A type P4Runtime cannot describe where P4Info needs one.
    #[error("{owner}: type {ty} cannot be represented in P4Info")]
    UnsupportedType {
        /// Where the type is used.
        owner: String,
        /// The type.
        ty: String,
    },
    /// A value set field with a match kind P4Runtime cannot use for value sets (`selector`).
    #[error("{owner}: unsupported match type '{kind}' for a value set field")]
    UnsupportedMatchKind {
        /// The value set.
        owner: String,
        /// The match kind.
        kind: String,
    },
}

/// Every problem found while generating a P4Info (never empty when returned).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("cannot generate P4Info: {}", .problems.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
pub struct P4InfoError {
    /// The problems, in the order they were found.
    pub problems: Vec<Problem>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_object_and_the_cause() {
        let e = P4InfoError {
            problems: vec![
                Problem::FieldIdDuplicate {
                    owner: "table ingress.t".into(),
                    field: "hdr.x".into(),
                    id: 3,
                },
                Problem::Id {
                    kind: "table",
                    error: IdError::DuplicateId {
                        index: 1,
                        name: "ingress.u".into(),
                        id: 0x0200_0001,
                    },
                },
            ],
        };
        assert_eq!(
            e.to_string(),
            "cannot generate P4Info: table ingress.t: field 'hdr.x': @id 3 is used multiple \
             times; table ingress.u: @id 0x02000001 is assigned to multiple declarations"
        );
    }
}
