//! The types of the settings that say more than their number or text: a
//! value that must be above zero ([`Positive`]), a URL of a known scheme
//! ([`StoreUrl`]). Each refuses a bad value where the settings are read,
//! with the setting's name (`config` adds "for key `…`"), so
//! [`crate::configuration::Settings::validate`] keeps only what one field
//! alone cannot say.

use std::fmt;
use std::marker::PhantomData;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A number that must be above zero: a duration in milliseconds, a pool's
/// size, a largest quantity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Positive<T>(T);

impl<T: Copy + PartialEq + Default> Positive<T> {
    /// `value`, which must not be zero (a default written in the code).
    ///
    /// # Panics
    /// When `value` is zero: a programming error, not a user's.
    pub fn new(value: T) -> Self {
        assert!(value != T::default(), "a Positive setting of 0");
        Self(value)
    }

    /// The number.
    pub fn get(self) -> T {
        self.0
    }
}

impl Positive<u64> {
    /// The number as milliseconds.
    pub fn ms(self) -> Duration {
        Duration::from_millis(self.0)
    }
}

impl<T: PartialEq> PartialEq<T> for Positive<T> {
    fn eq(&self, other: &T) -> bool {
        self.0 == *other
    }
}

impl PartialEq<Positive<u32>> for u32 {
    fn eq(&self, other: &Positive<u32>) -> bool {
        *self == other.0
    }
}

impl PartialEq<Positive<u64>> for u64 {
    fn eq(&self, other: &Positive<u64>) -> bool {
        *self == other.0
    }
}

impl<T: fmt::Display> fmt::Display for Positive<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl<T: Serialize> Serialize for Positive<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<'de, T: Deserialize<'de> + PartialEq + Default> Deserialize<'de> for Positive<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = T::deserialize(d)?;
        if value == T::default() {
            return Err(serde::de::Error::custom("must be greater than 0"));
        }
        Ok(Self(value))
    }
}

/// The schemes a [`StoreUrl`] accepts, in words for its error.
pub trait Schemes {
    /// Each one, without `://`.
    const SCHEMES: &'static [&'static str];
}

/// PostgreSQL: `postgres://` or `postgresql://`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Postgres;
impl Schemes for Postgres {
    const SCHEMES: &'static [&'static str] = &["postgres", "postgresql"];
}

/// The service's Redis: `redis://`, `rediss://` or a `unix://` socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnyRedis;
impl Schemes for AnyRedis {
    const SCHEMES: &'static [&'static str] = &["redis", "rediss", "unix"];
}

/// A Redis node reached over TCP: `redis://` (Redlock's nodes, the history's
/// arbiter).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Redis;
impl Schemes for Redis {
    const SCHEMES: &'static [&'static str] = &["redis"];
}

/// A URL whose scheme is one of `S`'s.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreUrl<S>(String, PhantomData<S>);

impl<S: Schemes> StoreUrl<S> {
    /// `text`, when its scheme is one of `S`'s; else why not.
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        if S::SCHEMES
            .iter()
            .any(|s| text.strip_prefix(s).is_some_and(|r| r.starts_with("://")))
        {
            Ok(Self(text.to_owned(), PhantomData))
        } else {
            let each: Vec<String> = S::SCHEMES.iter().map(|s| format!("{s}://")).collect();
            Err(format!("{text} must start with {}", each.join(" or ")))
        }
    }

    /// The URL.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl<S> std::ops::Deref for StoreUrl<S> {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl<S> AsRef<str> for StoreUrl<S> {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl<S> fmt::Display for StoreUrl<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<S: Schemes> std::str::FromStr for StoreUrl<S> {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, String> {
        Self::parse(text)
    }
}

impl<S> Serialize for StoreUrl<S> {
    fn serialize<Se: Serializer>(&self, s: Se) -> Result<Se::Ok, Se::Error> {
        self.0.serialize(s)
    }
}

impl<'de, S: Schemes> Deserialize<'de> for StoreUrl<S> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_of_another_scheme_is_refused_naming_the_ones_it_takes() {
        assert!(StoreUrl::<Postgres>::parse("postgresql://h/db").is_ok());
        let e = StoreUrl::<Redis>::parse("rediss://h:6379").expect_err("refused");
        assert_eq!(e, "rediss://h:6379 must start with redis://");
        let e = StoreUrl::<AnyRedis>::parse("http://h").expect_err("refused");
        assert!(e.contains("redis:// or rediss:// or unix://"), "{e}");
    }

    #[test]
    fn zero_is_refused_and_a_positive_number_kept() {
        let zero: Result<Positive<u64>, _> = serde_json::from_str("0");
        assert!(zero
            .expect_err("refused")
            .to_string()
            .contains("greater than 0"));
        let ms: Positive<u64> = serde_json::from_str("250").expect("kept");
        assert_eq!(ms.ms(), Duration::from_millis(250));
    }
}
