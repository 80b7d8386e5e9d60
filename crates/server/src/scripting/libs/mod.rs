//! Placeholder until the libraries land.
/// Registers nothing yet.
pub fn register(_lua: &mlua::Lua) -> mlua::Result<()> {
    Ok(())
}
