//! Typed entity ids and the arenas that own the entities (Cranelift's `entity` style).
//!
//! Every IR object that others refer to lives in an [`Arena`] and is named by a small `Copy`
//! id (a `u32` newtype made by [`entity_id!`](crate::entity_id)). An id is only meaningful for the arena (and so
//! the [`crate::Pipeline`]) it came from; ids are dense, start at 0 and are never reused, so two
//! pipeline images can coexist without any global numbering. Indexing an arena with an id from
//! another image is a logic error that the verifier reports as "out of range" when it can; use
//! [`Arena::get`] where an id is not known to be valid.

use std::fmt;
use std::marker::PhantomData;
use std::ops::{Index, IndexMut};

/// An entity id: a dense `u32` index into one [`Arena`].
pub trait EntityId: Copy + Eq + Ord + std::hash::Hash + fmt::Debug {
    /// Makes the id of the `index`th entity.
    fn new(index: u32) -> Self;
    /// The position of the entity in its arena.
    fn index(self) -> u32;
}

/// Declares a `u32` newtype id implementing [`EntityId`], printed as `prefix` + index.
#[macro_export]
macro_rules! entity_id {
    ($(#[$attr:meta])* $vis:vis struct $name:ident, $prefix:literal) => {
        $(#[$attr])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        $vis struct $name(u32);

        impl $crate::entity::EntityId for $name {
            fn new(index: u32) -> Self {
                $name(index)
            }
            fn index(self) -> u32 {
                self.0
            }
        }

        impl ::std::fmt::Debug for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                write!(f, concat!($prefix, "{}"), self.0)
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                write!(f, concat!($prefix, "{}"), self.0)
            }
        }
    };
}

/// A vector of entities indexed by a typed id (Cranelift's `PrimaryMap`).
#[derive(Clone, PartialEq, Eq)]
pub struct Arena<K: EntityId, V> {
    items: Vec<V>,
    _key: PhantomData<K>,
}

impl<K: EntityId, V> Arena<K, V> {
    /// An empty arena.
    pub fn new() -> Self {
        Arena {
            items: Vec::new(),
            _key: PhantomData,
        }
    }

    /// Adds an entity and returns its id.
    ///
    /// An arena holds at most `u32::MAX` entities; adding more is a programming error (no
    /// program gets near it: each entity is at least a few bytes).
    pub fn push(&mut self, value: V) -> K {
        let index = u32::try_from(self.items.len()).expect("arena holds at most u32::MAX entities");
        self.items.push(value);
        K::new(index)
    }

    /// The id the next [`Arena::push`] will return.
    pub fn next_id(&self) -> K {
        K::new(u32::try_from(self.items.len()).unwrap_or(u32::MAX))
    }

    /// The entity with id `key`, if it is in range.
    pub fn get(&self, key: K) -> Option<&V> {
        self.items.get(key.index() as usize)
    }

    /// The entity with id `key` for modification, if it is in range.
    pub fn get_mut(&mut self, key: K) -> Option<&mut V> {
        self.items.get_mut(key.index() as usize)
    }

    /// Whether `key` names an entity of this arena.
    pub fn contains(&self, key: K) -> bool {
        (key.index() as usize) < self.items.len()
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// All ids in order.
    pub fn keys(&self) -> impl DoubleEndedIterator<Item = K> + ExactSizeIterator + use<K, V> {
        (0..self.items.len() as u32).map(K::new)
    }

    /// All entities in id order.
    pub fn values(&self) -> std::slice::Iter<'_, V> {
        self.items.iter()
    }

    /// All `(id, entity)` pairs in id order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (K, &V)> + ExactSizeIterator {
        self.items
            .iter()
            .enumerate()
            .map(|(i, v)| (K::new(i as u32), v))
    }

    /// All `(id, entity)` pairs in id order, mutably.
    pub fn iter_mut(&mut self) -> impl DoubleEndedIterator<Item = (K, &mut V)> + ExactSizeIterator {
        self.items
            .iter_mut()
            .enumerate()
            .map(|(i, v)| (K::new(i as u32), v))
    }
}

impl<K: EntityId, V> Default for Arena<K, V> {
    fn default() -> Self {
        Arena::new()
    }
}

impl<K: EntityId, V: fmt::Debug> fmt::Debug for Arena<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// Typed indexing. Panics if `key` is out of range, which only happens for an id from another
/// arena: ids of a verified pipeline are always in range.
impl<K: EntityId, V> Index<K> for Arena<K, V> {
    type Output = V;
    fn index(&self, key: K) -> &V {
        &self.items[key.index() as usize]
    }
}

impl<K: EntityId, V> IndexMut<K> for Arena<K, V> {
    fn index_mut(&mut self, key: K) -> &mut V {
        &mut self.items[key.index() as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    entity_id!(struct TestId, "t");

    #[test]
    fn push_get_and_iterate_in_id_order() {
        let mut arena: Arena<TestId, &str> = Arena::new();
        assert!(arena.is_empty());
        assert_eq!(arena.next_id(), TestId::new(0));
        let a = arena.push("a");
        let b = arena.push("b");
        assert_eq!((a.index(), b.index()), (0, 1));
        assert_eq!(arena[b], "b");
        arena[a] = "A";
        assert_eq!(arena.get(a), Some(&"A"));
        assert_eq!(arena.get(TestId::new(7)), None);
        assert!(!arena.contains(TestId::new(2)));
        let all: Vec<_> = arena.iter().map(|(k, v)| (k.index(), *v)).collect();
        assert_eq!(all, vec![(0, "A"), (1, "b")]);
        assert_eq!(format!("{b} {b:?}"), "t1 t1");
    }
}
