//! Fields that are always present but may be `null` (`fence_token`, a
//! history's `run`): serde would read a *missing* `Option` field as `None`,
//! so a renamed field would decode as "no value". [`required`] makes the
//! field's absence an error, while `null` still reads as `None`.

use serde::{Deserialize, Deserializer};

/// Deserialize an `Option<T>` field that must be present (`null` allowed).
/// Use as `#[serde(deserialize_with = "crate::nullable::required")]`: with
/// a `deserialize_with` and no `default`, serde reports a missing field.
pub fn required<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer)
}
