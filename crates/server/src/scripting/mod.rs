//! Lua scripting.

pub mod libs;
