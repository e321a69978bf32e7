//! The final answer classes of one grab: the wire's [`Outcome`], which the
//! service counts its answers by and this crate reads them back with.

pub use seckill_wire::outcome::Outcome;
