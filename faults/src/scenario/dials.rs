//! Each scenario's dials as one typed struct ([`dials!`]): the field's
//! name is the dial's name on the command line (`--set NAME=…`), its
//! [`Shape`] gives the unit, the default and the meaning, and
//! `Struct::of(&params)` reads every dial once, resolved (`1.5ttl` in ms,
//! `fill` in ms, a word as its enum). A scenario, its verdict's model and
//! the debate's rows read the struct's fields; no code names a dial by a
//! string, so a misspelt name is a compile error, and a misspelt `--set`
//! is refused at the command line naming the dials ([`super::params`]).

use serde::Serialize;

use super::in_force::{Facts, FaultRecord};
use super::params::{Params, Resolved, Spec, Unit};

/// A dial's unit, default and meaning; its name is the field's.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    /// Its unit.
    pub unit: Unit,
    /// Its default, as it would be typed.
    pub default: &'static str,
    /// What it sets.
    pub meaning: &'static str,
}

impl Shape {
    /// A duration: ms (`600`, `600ms`) or a multiple of the TTL (`1.5ttl`).
    pub const fn ms(default: &'static str, meaning: &'static str) -> Self {
        Self {
            unit: Unit::Ms,
            default,
            meaning,
        }
    }

    /// As [`Shape::ms`], or `fill`: Redlock's validity less `margin_ms`.
    pub const fn ms_or_fill(default: &'static str, meaning: &'static str) -> Self {
        Self {
            unit: Unit::MsOrFill,
            default,
            meaning,
        }
    }

    /// A whole number.
    pub const fn count(default: &'static str, meaning: &'static str) -> Self {
        Self {
            unit: Unit::Count,
            default,
            meaning,
        }
    }

    /// A number (a percentage, a factor).
    pub const fn number(default: &'static str, meaning: &'static str) -> Self {
        Self {
            unit: Unit::Number,
            default,
            meaning,
        }
    }

    /// One of `words` (an enum's [`Choice::WORDS`]).
    pub const fn choice(
        words: &'static [&'static str],
        default: &'static str,
        meaning: &'static str,
    ) -> Self {
        Self {
            unit: Unit::Choice(words),
            default,
            meaning,
        }
    }

    /// This shape under `name`.
    pub const fn named(self, name: &'static str) -> Spec {
        Spec {
            name,
            unit: self.unit,
            default: self.default,
            meaning: self.meaning,
        }
    }
}

/// A field of a dial struct: read from the resolved params.
pub trait Dial: Sized {
    /// The value of the declared dial `name`.
    fn read(params: &Params, name: &'static str) -> Self;
}

impl Dial for u64 {
    fn read(params: &Params, name: &'static str) -> Self {
        match params.resolved(name) {
            Resolved::Ms(v) | Resolved::Count(v) => v,
            other => panic!("dial {name} is {other:?}, not a whole number of ms or a count"),
        }
    }
}

impl Dial for usize {
    fn read(params: &Params, name: &'static str) -> Self {
        usize::try_from(u64::read(params, name)).unwrap_or(usize::MAX)
    }
}

impl Dial for f64 {
    fn read(params: &Params, name: &'static str) -> Self {
        match params.resolved(name) {
            Resolved::Number(v) => v,
            other => panic!("dial {name} is {other:?}, not a number"),
        }
    }
}

/// A dial whose value is one of a few words, as an enum ([`choice!`]).
pub trait Choice: Sized + Copy + 'static {
    /// Every word, in declaration order.
    const WORDS: &'static [&'static str];
    /// The variant a word names.
    fn from_word(word: &str) -> Option<Self>;
    /// The word.
    fn word(self) -> &'static str;
}

impl<T: Choice> Dial for T {
    fn read(params: &Params, name: &'static str) -> Self {
        match params.resolved(name) {
            Resolved::Word(w) => T::from_word(w)
                .unwrap_or_else(|| panic!("dial {name}={w} passed its check but names no variant")),
            other => panic!("dial {name} is {other:?}, not a word"),
        }
    }
}

/// An enum of words for a choice dial: `Serialize` as the word,
/// [`Choice::WORDS`] for its [`Shape::choice`].
macro_rules! choice {
    (
        $(#[$meta:meta])*
        pub enum $name:ident { $( $(#[$vmeta:meta])* $variant:ident = $word:literal ),+ $(,)? }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum $name { $( $(#[$vmeta])* $variant ),+ }

        impl $crate::scenario::dials::Choice for $name {
            const WORDS: &'static [&'static str] = &[$($word),+];
            fn from_word(word: &str) -> Option<Self> {
                match word {
                    $($word => Some(Self::$variant),)+
                    _ => None,
                }
            }
            fn word(self) -> &'static str {
                match self { $(Self::$variant => $word),+ }
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str($crate::scenario::dials::Choice::word(*self))
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let word = <std::borrow::Cow<'de, str>>::deserialize(d)?;
                <Self as $crate::scenario::dials::Choice>::from_word(&word).ok_or_else(|| {
                    serde::de::Error::unknown_variant(&word, <Self as $crate::scenario::dials::Choice>::WORDS)
                })
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str($crate::scenario::dials::Choice::word(*self))
            }
        }
    };
}
pub(crate) use choice;

choice! {
    /// A switch: a remedy on or off (the database checks the lock's random
    /// value, or its fencing token).
    pub enum OnOff {
        /// No.
        Off = "off",
        /// Yes.
        On = "on",
    }
}

/// The dial's name: the field's, or the one given (`r#where as "where"`).
macro_rules! dial_name {
    ($field:ident) => {
        stringify!($field)
    };
    ($field:ident $dial:literal) => {
        $dial
    };
}
pub(crate) use dial_name;

/// A scenario's dials: a struct whose fields are its dials, with
/// `SPECS` (what `--set` accepts and `--params` prints, in field order)
/// and `of(&Params)` (every dial resolved).
macro_rules! dials {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $(
                $(#[doc = $doc:literal])*
                $field:ident $(as $dial:literal)? : $ty:ty = $shape:expr
            ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, serde::Serialize)]
        pub struct $name {
            $(
                $(#[doc = $doc])*
                $(#[serde(rename = $dial)])?
                pub $field: $ty,
            )+
        }

        impl $name {
            /// The dials, in order.
            pub const SPECS: &'static [$crate::scenario::params::Spec] = &[
                $( ($shape).named($crate::scenario::dials::dial_name!($field $($dial)?)) ),+
            ];

            /// Every dial of `params`, resolved.
            pub fn of(params: &$crate::scenario::params::Params) -> Self {
                Self {
                    $( $field: $crate::scenario::dials::Dial::read(
                        params,
                        $crate::scenario::dials::dial_name!($field $($dial)?),
                    ), )+
                }
            }
        }
    };
}
pub(crate) use dials;

/// `ttl_ms`, with `default` ms.
pub const fn ttl(default: &'static str) -> Shape {
    Shape::count(
        default,
        "the lock's TTL or lease, ms (every replica's SECKILL_LOCK_TTL_MS)",
    )
}

/// `work_ms`, with `default` ms.
pub const fn work(default: &'static str) -> Shape {
    Shape::ms(
        default,
        "simulated work inside the critical section, ms (work_delay_ms)",
    )
}

/// `lock_wait_ms`, with `default` ms: how long a grab waits for the lock
/// before it answers `busy`. The buyers are a closed loop, so a waiter
/// that gives up is followed at once by the same buyer's next grab; the
/// wait mostly bounds how long a round's queued grabs take to drain when
/// its buyers stop. Where a waiter must outlast the fault (a lease that
/// expires late, a link slower than the TTL) the scenario's default is
/// longer.
pub const fn lock_wait(default: &'static str) -> Shape {
    Shape::ms(
        default,
        "how long a grab waits for the lock before it answers busy, ms (every replica's SECKILL_LOCK_WAIT_MS)",
    )
}

/// `injections`, with `default` of them per trial.
pub const fn injections(default: &'static str) -> Shape {
    Shape::count(
        default,
        "faults injected per trial, each judged on its own (k of n)",
    )
}

/// `window_ms`: load with the fault on, per injection (the scenarios
/// whose fault is a condition, not an event).
pub const fn window(default: &'static str) -> Shape {
    Shape::ms(default, "load with the fault on, per injection")
}

/// `users`, closed-loop buyers spread over both replicas.
pub const fn users(default: &'static str) -> Shape {
    Shape::count(default, "closed-loop buyers, spread over both replicas")
}

/// A case's fault record: the dials its run used beside the facts it
/// adds.
pub fn record(dials: &impl Serialize, facts: Facts) -> FaultRecord {
    FaultRecord::new(dials, facts)
}

#[cfg(test)]
mod tests {
    use super::*;

    choice! {
        /// Where.
        pub enum Where { Before = "before-check", After = "after-check" }
    }

    dials! {
        /// A test scenario's dials.
        pub struct Test {
            ttl_ms: u64 = ttl("400"),
            pause: u64 = Shape::ms("1.5ttl", "the pause"),
            r#where as "where": Where = Shape::choice(Where::WORDS, "before-check", "where"),
            slew_pct: f64 = Shape::number("2.5", "slew"),
            users: usize = users("8"),
        }
    }

    #[test]
    fn a_dial_struct_reads_each_dial_by_its_field_resolved() {
        let sets = vec![("where".to_owned(), "after-check".to_owned())];
        let d = Test::of(&Params::new("t", Test::SPECS, &sets).expect("valid"));
        assert_eq!(
            d,
            Test {
                ttl_ms: 400,
                pause: 600,
                r#where: Where::After,
                slew_pct: 2.5,
                users: 8,
            }
        );
        let names: Vec<&str> = Test::SPECS.iter().map(|s| s.name).collect();
        assert_eq!(names, ["ttl_ms", "pause", "where", "slew_pct", "users"]);
        let json = serde_json::to_value(&d).expect("serialises");
        assert_eq!(json["where"], "after-check");
        assert_eq!(json["pause"], 600);
        let e = Params::new("t", Test::SPECS, &[("pasue".into(), "1".into())])
            .expect_err("a misspelt dial is refused");
        assert!(
            e.contains("no dial \"pasue\"") && e.contains("pause"),
            "{e}"
        );
    }
}
