//! Ids of the fields inside a P4Info object: match fields of a table or value set, action
//! parameters, controller packet metadata fields.
//!
//! p4c's `FieldIdAllocator`: first every `@id` is taken as written (0 and repeated values are
//! errors); then the fields without one, in order, get the smallest free id not below their
//! position (1-based). Without any `@id` that is 1, 2, 3, ... in declaration order. Fields
//! P4Info leaves out (a table's `selector` keys, `@hidden` packet metadata) still take part,
//! as in p4c, so they consume an id.

use std::collections::HashSet;

use crate::error::Problem;

/// The id of each field, given each field's name and `@id`. Problems name `owner`.
pub(crate) fn field_ids(
    owner: &str,
    fields: &[(&str, Option<u32>)],
    problems: &mut Vec<Problem>,
) -> Vec<u32> {
    let mut assigned: HashSet<u32> = HashSet::new();
    let mut ids: Vec<Option<u32>> = vec![None; fields.len()];
    for (i, (name, id)) in fields.iter().enumerate() {
        let Some(id) = *id else { continue };
        if id == 0 {
            problems.push(Problem::FieldIdZero {
                owner: owner.to_string(),
                field: name.to_string(),
            });
        } else if assigned.contains(&id) {
            problems.push(Problem::FieldIdDuplicate {
                owner: owner.to_string(),
                field: name.to_string(),
                id,
            });
        }
        ids[i] = Some(id);
        assigned.insert(id);
    }
    let mut index: u32 = 1;
    for slot in &mut ids {
        if slot.is_some() {
            index = index.saturating_add(1);
            continue;
        }
        while assigned.contains(&index) {
            index = index.saturating_add(1);
        }
        *slot = Some(index);
        assigned.insert(index);
    }
    ids.into_iter().map(Option::unwrap_or_default).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(fields: &[Option<u32>]) -> (Vec<u32>, Vec<Problem>) {
        let named: Vec<(String, Option<u32>)> = fields
            .iter()
            .enumerate()
            .map(|(i, id)| (format!("f{i}"), *id))
            .collect();
        let refs: Vec<(&str, Option<u32>)> =
            named.iter().map(|(n, id)| (n.as_str(), *id)).collect();
        let mut problems = Vec::new();
        let out = field_ids("t", &refs, &mut problems);
        (out, problems)
    }

    #[test]
    fn without_annotations_ids_count_from_one() {
        assert_eq!(ids(&[None, None, None]).0, [1, 2, 3]);
        assert_eq!(ids(&[]).0, Vec::<u32>::new());
    }

    #[test]
    fn annotated_ids_are_kept_and_skipped() {
        // p4c: an annotated field advances the position, the others take the first free id.
        assert_eq!(ids(&[None, Some(1), None]).0, [2, 1, 3]);
        assert_eq!(ids(&[Some(5), None, None]).0, [5, 2, 3]);
        assert_eq!(ids(&[None, Some(3), None, None]).0, [1, 3, 2, 4]);
        assert_eq!(ids(&[Some(2), Some(1), None]).0, [2, 1, 3]);
    }

    #[test]
    fn zero_and_repeated_ids_are_errors() {
        let (_, problems) = ids(&[Some(0), Some(4), Some(4)]);
        assert_eq!(
            problems,
            [
                Problem::FieldIdZero {
                    owner: "t".into(),
                    field: "f0".into()
                },
                Problem::FieldIdDuplicate {
                    owner: "t".into(),
                    field: "f2".into(),
                    id: 4
                },
            ]
        );
    }
}
