//! The C libraries Redis links into its Lua interpreter, rewritten over `mlua`: `bit`
//! (LuaBitOp 1.0.2), `cjson` (lua-cjson 2.1.0), `cmsgpack` (lua-cmsgpack 0.4.0) and `struct`
//! (lua-struct). Scripts see them as the globals `bit`, `cjson`, `cmsgpack` and `struct`, with
//! Redis 7.0's behaviour: the same results, the same limits and the same error messages.
//!
//! Errors are raised as [`mlua::Error::RuntimeError`] carrying the message the C library
//! raises (without position, as `luaL_error` from a C function gives none); mlua hands them to
//! Lua wrapped in its callback error, and [`error_message`] recovers the message.
//!
//! Where the C code depends on the Lua C stack limit (`LUAI_MAXCSTACK`, 8000 slots in Lua 5.1)
//! the limit is modelled by counting the slots the C code would have used, so that deep or
//! wide inputs fail with the C library's message instead of exhausting Rust's stack. The
//! modelled limit is [`MAX_C_STACK`] = 4000, half of Lua's: every live string or table a
//! library function holds is an mlua reference, and mlua's reference stack (itself a Lua 5.1
//! stack of at most 8000 slots) panics when exhausted. Only settings raised far above their
//! defaults or more than 3999 results from one call reach it (C allows 7999).

pub mod bit;
pub mod cjson;
pub mod cmsgpack;
pub mod struct_;

use mlua::{Lua, Value};

/// Creates the global tables `bit`, `cjson`, `cmsgpack` and `struct`, as Redis's
/// `luaLoadLibraries` does after the standard libraries.
pub fn register(lua: &Lua) -> mlua::Result<()> {
    let globals = lua.globals();
    globals.raw_set("cjson", cjson::create(lua)?)?;
    globals.raw_set("struct", struct_::create(lua)?)?;
    globals.raw_set("cmsgpack", cmsgpack::create(lua)?)?;
    globals.raw_set("bit", bit::create(lua)?)?;
    Ok(())
}

/// The message a library function raised: the innermost cause of an mlua callback error
/// (`RuntimeError` text as is, anything else as displayed).
pub fn error_message(err: &mlua::Error) -> String {
    let mut err = err;
    while let mlua::Error::CallbackError { cause, .. } = err {
        err = cause;
    }
    match err {
        mlua::Error::RuntimeError(msg) => msg.clone(),
        other => other.to_string(),
    }
}

/// Slots of a C function's Lua stack frame as modelled here: `lua_checkstack` fails when the
/// frame would grow past it (Lua 5.1's `LUAI_MAXCSTACK` is 8000; see the module doc for why
/// half).
pub(crate) const MAX_C_STACK: usize = 4000;

/// A Lua error with a message (what `luaL_error` raises from a C function).
pub(crate) fn lua_error(msg: impl Into<String>) -> mlua::Error {
    mlua::Error::RuntimeError(msg.into())
}

/// `luaL_argerror`'s message for argument `narg` of function `fname`.
pub(crate) fn arg_error(narg: usize, fname: &str, extramsg: &str) -> mlua::Error {
    lua_error(format!("bad argument #{narg} to '{fname}' ({extramsg})"))
}

/// `luaL_typerror`'s message: argument `narg` is not of type `expected`.
pub(crate) fn type_error(
    narg: usize,
    fname: &str,
    expected: &str,
    got: Option<&Value>,
) -> mlua::Error {
    arg_error(
        narg,
        fname,
        &format!("{expected} expected, got {}", type_name(got)),
    )
}

/// `luaL_typename`: "no value" for an absent argument, else Lua's type name.
pub(crate) fn type_name(v: Option<&Value>) -> &'static str {
    match v {
        None => "no value",
        Some(Value::Nil) => "nil",
        Some(Value::Boolean(_)) => "boolean",
        Some(Value::LightUserData(_)) => "userdata",
        Some(Value::Integer(_)) | Some(Value::Number(_)) => "number",
        Some(Value::String(_)) => "string",
        Some(Value::Table(_)) => "table",
        Some(Value::Function(_)) => "function",
        Some(Value::Thread(_)) => "thread",
        Some(_) => "userdata",
    }
}

/// The number of a numeric value (no string coercion).
pub(crate) fn as_number(v: &Value) -> Option<f64> {
    match v {
        Value::Integer(i) => Some(*i as f64),
        Value::Number(n) => Some(*n),
        _ => None,
    }
}

/// `lua_tonumber` with `lua_isnumber`: numbers, and strings Lua converts to numbers.
pub(crate) fn to_number(lua: &Lua, v: Option<&Value>) -> Option<f64> {
    match v {
        Some(Value::String(_)) => lua.coerce_number(v?.clone()).ok().flatten(),
        Some(v) => as_number(v),
        None => None,
    }
}

/// `luaL_checknumber` for argument `narg` (1-based) of `args`.
pub(crate) fn check_number(
    lua: &Lua,
    args: &[Value],
    narg: usize,
    fname: &str,
) -> mlua::Result<f64> {
    let v = args.get(narg - 1);
    to_number(lua, v).ok_or_else(|| type_error(narg, fname, "number", v))
}

/// `luaL_checkinteger` (a C cast of the number to `lua_Integer`).
pub(crate) fn check_integer(
    lua: &Lua,
    args: &[Value],
    narg: usize,
    fname: &str,
) -> mlua::Result<i64> {
    check_number(lua, args, narg, fname).map(c_double_to_i64)
}

/// `luaL_optinteger`: `default` for an absent or nil argument.
pub(crate) fn opt_integer(
    lua: &Lua,
    args: &[Value],
    narg: usize,
    fname: &str,
    default: i64,
) -> mlua::Result<i64> {
    match args.get(narg - 1) {
        None | Some(Value::Nil) => Ok(default),
        Some(_) => check_integer(lua, args, narg, fname),
    }
}

/// `luaL_checklstring`: strings, and numbers converted by Lua.
pub(crate) fn check_string(
    lua: &Lua,
    args: &[Value],
    narg: usize,
    fname: &str,
) -> mlua::Result<mlua::String> {
    let v = args.get(narg - 1);
    match v {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Integer(_)) | Some(Value::Number(_)) => lua
            .coerce_string(v.cloned().unwrap_or(Value::Nil))?
            .ok_or_else(|| type_error(narg, fname, "string", v)),
        _ => Err(type_error(narg, fname, "string", v)),
    }
}

/// A C cast of a double to a 64-bit integer as x86-64 performs it: truncation, and
/// `i64::MIN` for NaN and values out of range.
pub(crate) fn c_double_to_i64(n: f64) -> i64 {
    if (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&n) {
        n as i64
    } else {
        i64::MIN
    }
}

/// A C cast of a double to a 32-bit `int` as x86-64 performs it: truncation, and `i32::MIN`
/// for NaN and values out of range.
pub(crate) fn c_double_to_i32(n: f64) -> i32 {
    if n > -2_147_483_649.0 && n < 2_147_483_648.0 {
        n as i32
    } else {
        i32::MIN
    }
}

/// Reads `t[key]` again as an exact number when mlua's conversion may have lost it: mlua
/// turns a Lua number within `f64::EPSILON` of its truncation into an integer, so `-0` and
/// numbers of magnitude below 2.2e-16 arrive as `Integer(0)`.
pub(crate) fn exact_entry(
    t: &mlua::Table,
    key: &Value,
    v: Value,
    raw: bool,
) -> mlua::Result<Value> {
    if let Value::Integer(0) = v {
        let n: f64 = if raw {
            t.raw_get(key.clone())?
        } else {
            t.get(key.clone())?
        };
        return Ok(Value::Number(n));
    }
    Ok(v)
}

#[cfg(test)]
pub(crate) mod testutil {
    use mlua::Lua;

    /// A fresh interpreter with the four libraries registered.
    pub fn lua() -> Lua {
        let lua = Lua::new();
        super::register(&lua).unwrap();
        lua
    }

    /// Evaluates `code` (a chunk ending in `return ...`) and converts the result.
    pub fn eval<T: mlua::FromLuaMulti>(lua: &Lua, code: &str) -> T {
        lua.load(code)
            .eval()
            .unwrap_or_else(|e| panic!("{code}: {e}"))
    }

    /// Evaluates `code` on a fresh interpreter and returns the bytes of its string result.
    pub fn bytes(code: &str) -> Vec<u8> {
        let lua = lua();
        let s: mlua::String = eval(&lua, code);
        s.as_bytes().to_vec()
    }

    /// Evaluates `code`, which must fail, and returns the library's message.
    pub fn err(code: &str) -> String {
        let lua = lua();
        match lua.load(code).exec() {
            Ok(()) => panic!("{code}: no error"),
            Err(e) => super::error_message(&e),
        }
    }
}
