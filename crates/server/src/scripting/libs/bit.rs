//! `bit`: LuaBitOp 1.0.2. Operands are Lua numbers normalised to 32 bits (rounded to the
//! nearest integer, ties to even, taken modulo 2^32); results are signed 32-bit numbers.

use mlua::{Lua, MultiValue, Table, Value};

use super::{to_number, type_error};

/// Creates the `bit` table.
pub fn create(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    unary(lua, &t, "tobit", |b| b)?;
    unary(lua, &t, "bnot", |b| !b)?;
    unary(lua, &t, "bswap", u32::swap_bytes)?;
    fold(lua, &t, "band", |a, b| a & b)?;
    fold(lua, &t, "bor", |a, b| a | b)?;
    fold(lua, &t, "bxor", |a, b| a ^ b)?;
    shift(lua, &t, "lshift", |b, n| b << n)?;
    shift(lua, &t, "rshift", |b, n| b >> n)?;
    shift(lua, &t, "arshift", |b, n| ((b as i32) >> n) as u32)?;
    shift(lua, &t, "rol", u32::rotate_left)?;
    shift(lua, &t, "ror", u32::rotate_right)?;
    t.raw_set(
        "tohex",
        lua.create_function(|lua, args: MultiValue| {
            let b = barg(lua, &args, 1, "tohex")?;
            let n = if args.len() < 2 {
                8
            } else {
                barg(lua, &args, 2, "tohex")? as i32
            };
            Ok(Value::String(lua.create_string(tohex(b, n))?))
        })?,
    )?;
    Ok(t)
}

/// The 32 bits of a number as LuaBitOp takes them: the low word of `n + 2^52 + 2^51`.
pub fn tobit(n: f64) -> u32 {
    (n + 6_755_399_441_055_744.0).to_bits() as u32
}

/// `bit.tohex(b, n)`: `|n|` hex digits (at most 8), upper case when `n` is negative.
fn tohex(mut b: u32, n: i32) -> Vec<u8> {
    let digits: &[u8; 16] = if n < 0 {
        b"0123456789ABCDEF"
    } else {
        b"0123456789abcdef"
    };
    let n = n.max(i32::MIN + 1).unsigned_abs().min(8) as usize;
    let mut out = vec![0u8; n];
    for slot in out.iter_mut().rev() {
        *slot = digits[(b & 15) as usize];
        b >>= 4;
    }
    out
}

/// Argument `narg` as bits; non-numbers raise LuaBitOp's type error.
fn barg(lua: &Lua, args: &MultiValue, narg: usize, fname: &str) -> mlua::Result<u32> {
    let v = args.get(narg - 1);
    match to_number(lua, v) {
        Some(n) => Ok(tobit(n)),
        None => Err(type_error(narg, fname, "number", v)),
    }
}

fn ret(b: u32) -> Value {
    Value::Number(f64::from(b as i32))
}

fn unary(lua: &Lua, t: &Table, name: &'static str, op: fn(u32) -> u32) -> mlua::Result<()> {
    let f =
        lua.create_function(move |lua, args: MultiValue| Ok(ret(op(barg(lua, &args, 1, name)?))))?;
    t.raw_set(name, f)
}

fn fold(lua: &Lua, t: &Table, name: &'static str, op: fn(u32, u32) -> u32) -> mlua::Result<()> {
    let f = lua.create_function(move |lua, args: MultiValue| {
        let mut b = barg(lua, &args, 1, name)?;
        // LuaBitOp reads the remaining arguments from the last one down.
        for i in (2..=args.len()).rev() {
            b = op(b, barg(lua, &args, i, name)?);
        }
        Ok(ret(b))
    })?;
    t.raw_set(name, f)
}

fn shift(lua: &Lua, t: &Table, name: &'static str, op: fn(u32, u32) -> u32) -> mlua::Result<()> {
    let f = lua.create_function(move |lua, args: MultiValue| {
        let b = barg(lua, &args, 1, name)?;
        let n = barg(lua, &args, 2, name)? & 31;
        Ok(ret(op(b, n)))
    })?;
    t.raw_set(name, f)
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{err, eval, lua};

    fn num(code: &str) -> f64 {
        eval(&lua(), code)
    }

    fn s(code: &str) -> String {
        eval(&lua(), code)
    }

    #[test]
    fn tobit_normalises() {
        assert_eq!(num("return bit.tobit(2^32 + 1)"), 1.0);
        assert_eq!(num("return bit.tobit(0xffffffff)"), -1.0);
        assert_eq!(num("return bit.tobit(2^31)"), -2147483648.0);
        assert_eq!(num("return bit.tobit(-1)"), -1.0);
        // Rounded to nearest, ties to even.
        assert_eq!(num("return bit.tobit(1.5)"), 2.0);
        assert_eq!(num("return bit.tobit(2.5)"), 2.0);
        assert_eq!(num("return bit.tobit(-2.5)"), -2.0);
        assert_eq!(num("return bit.tobit(0.4999)"), 0.0);
        assert_eq!(num("return bit.tobit('16')"), 16.0);
        assert_eq!(num("return bit.tobit('0x10')"), 16.0);
    }

    #[test]
    fn logic_ops() {
        assert_eq!(num("return bit.band(0xff, 0x0f, 0x3)"), 3.0);
        assert_eq!(num("return bit.bor(1, 2, 4, 8)"), 15.0);
        assert_eq!(num("return bit.bxor(0xf0, 0xff)"), 15.0);
        assert_eq!(num("return bit.bnot(0)"), -1.0);
        assert_eq!(num("return bit.band(-1)"), -1.0);
        assert_eq!(num("return bit.bswap(0x12345678)"), f64::from(0x78563412));
    }

    #[test]
    fn shifts() {
        assert_eq!(num("return bit.lshift(1, 31)"), -2147483648.0);
        assert_eq!(num("return bit.lshift(1, 32)"), 1.0);
        assert_eq!(num("return bit.rshift(-1, 28)"), 15.0);
        assert_eq!(num("return bit.arshift(-256, 4)"), -16.0);
        assert_eq!(num("return bit.rol(0x12345678, 12)"), f64::from(0x45678123));
        assert_eq!(num("return bit.ror(0x12345678, 12)"), f64::from(0x67812345));
        assert_eq!(num("return bit.rol(1, 0)"), 1.0);
        assert_eq!(num("return bit.ror(1, 0)"), 1.0);
    }

    #[test]
    fn tohex() {
        assert_eq!(s("return bit.tohex(-1)"), "ffffffff");
        assert_eq!(s("return bit.tohex(255, 2)"), "ff");
        assert_eq!(s("return bit.tohex(255, -4)"), "00FF");
        assert_eq!(s("return bit.tohex(0x12345678, 20)"), "12345678");
        assert_eq!(s("return bit.tohex(1, 0)"), "");
        assert_eq!(s("return bit.tohex(0xabcdef, -2^31)"), "00ABCDEF");
    }

    #[test]
    fn type_errors() {
        assert_eq!(
            err("bit.tobit()"),
            "bad argument #1 to 'tobit' (number expected, got no value)"
        );
        assert_eq!(
            err("bit.band(1, 'x', {})"),
            "bad argument #3 to 'band' (number expected, got table)"
        );
        assert_eq!(
            err("bit.lshift(1)"),
            "bad argument #2 to 'lshift' (number expected, got no value)"
        );
        assert_eq!(
            err("bit.tohex(1, nil)"),
            "bad argument #2 to 'tohex' (number expected, got nil)"
        );
    }
}
