//! `cmsgpack`: lua-cmsgpack 0.4.0. `pack(...)` concatenates the encodings of its arguments;
//! `unpack(s)` returns every value in `s`, `unpack_one(s [, offset])` and
//! `unpack_limit(s, limit [, offset])` return the next offset (-1 at the end) before the values.
//!
//! Encoding: integral numbers as the smallest integer format, others as a 32-bit float when
//! that is exact and a 64-bit double otherwise; tables with keys exactly 1..n as arrays, others
//! as maps; nesting deeper than 16 tables, nil and non-serialisable values as nil.

use mlua::{Lua, MultiValue, Table, Value};

use super::{
    arg_error, as_number, c_double_to_i32, c_double_to_i64, check_integer, check_string,
    exact_entry, lua_error, opt_integer, MAX_C_STACK,
};

/// Tables nested deeper than this are packed as nil.
const MAX_NESTING: usize = 16;

const TOO_MANY: &str =
    "stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)";

/// Creates the `cmsgpack` table.
pub fn create(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set(
        "pack",
        lua.create_function(|lua, args: MultiValue| {
            if args.is_empty() {
                return Err(arg_error(0, "pack", "MessagePack pack needs input."));
            }
            // Lua 5.1's own limit: the arguments' refs fit mlua's reference stack.
            if 2 * args.len() > 8000 {
                return Err(arg_error(
                    0,
                    "pack",
                    "Too many arguments for MessagePack pack.",
                ));
            }
            let mut out = Vec::new();
            for v in args.iter() {
                encode(&mut out, v, 0)?;
            }
            lua.create_string(&out)
        })?,
    )?;
    t.raw_set(
        "unpack",
        lua.create_function(|lua, args: MultiValue| {
            let args = args.into_vec();
            let nargs = args.len();
            unpack_full(lua, &args, "unpack", 0, 0, nargs)
        })?,
    )?;
    t.raw_set(
        "unpack_one",
        lua.create_function(|lua, args: MultiValue| {
            let args = args.into_vec();
            let offset = opt_integer(lua, &args, 2, "unpack_one", 0)?;
            unpack_full(lua, &args, "unpack_one", 1, offset, 1)
        })?,
    )?;
    t.raw_set(
        "unpack_limit",
        lua.create_function(|lua, args: MultiValue| {
            let args = args.into_vec();
            let limit = check_integer(lua, &args, 2, "unpack_limit")?;
            let offset = opt_integer(lua, &args, 3, "unpack_limit", 0)?;
            unpack_full(lua, &args, "unpack_limit", limit, offset, 1)
        })?,
    )?;
    t.raw_set("_NAME", "cmsgpack")?;
    t.raw_set("_VERSION", "lua-cmsgpack 0.4.0")?;
    t.raw_set("_COPYRIGHT", "Copyright (C) 2012, Salvatore Sanfilippo")?;
    t.raw_set("_DESCRIPTION", "MessagePack C implementation for Lua")?;
    Ok(t)
}

// ===== Encoding =====

fn encode(out: &mut Vec<u8>, v: &Value, level: usize) -> mlua::Result<()> {
    match v {
        Value::String(s) => encode_bytes(out, &s.as_bytes()),
        Value::Boolean(b) => out.push(if *b { 0xc3 } else { 0xc2 }),
        Value::Integer(_) | Value::Number(_) => encode_number(out, as_number(v).unwrap_or(0.0)),
        Value::Table(t) if level < MAX_NESTING => encode_table(out, t, level)?,
        _ => out.push(0xc0),
    }
    Ok(())
}

fn encode_bytes(out: &mut Vec<u8>, s: &[u8]) {
    let len = s.len();
    if len < 32 {
        out.push(0xa0 | len as u8);
    } else if len <= 0xff {
        out.extend_from_slice(&[0xd9, len as u8]);
    } else if len <= 0xffff {
        out.push(0xda);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(0xdb);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    }
    out.extend_from_slice(s);
}

fn encode_number(out: &mut Vec<u8>, n: f64) {
    let i = c_double_to_i64(n);
    if !n.is_infinite() && i as f64 == n {
        encode_int(out, i);
    } else if f64::from(n as f32) == n {
        out.push(0xca);
        out.extend_from_slice(&(n as f32).to_be_bytes());
    } else {
        out.push(0xcb);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

fn encode_int(out: &mut Vec<u8>, n: i64) {
    if n >= 0 {
        if n <= 127 {
            out.push(n as u8);
        } else if n <= 0xff {
            out.extend_from_slice(&[0xcc, n as u8]);
        } else if n <= 0xffff {
            out.push(0xcd);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        } else if n <= 0xffff_ffff {
            out.push(0xce);
            out.extend_from_slice(&(n as u32).to_be_bytes());
        } else {
            out.push(0xcf);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
    } else if n >= -32 {
        out.push(n as i8 as u8);
    } else if n >= -128 {
        out.extend_from_slice(&[0xd0, n as i8 as u8]);
    } else if n >= -32768 {
        out.push(0xd1);
        out.extend_from_slice(&(n as i16).to_be_bytes());
    } else if n >= -2_147_483_648 {
        out.push(0xd2);
        out.extend_from_slice(&(n as i32).to_be_bytes());
    } else {
        out.push(0xd3);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

fn encode_len(out: &mut Vec<u8>, n: usize, fix: u8, b16: u8, b32: u8) {
    if n <= 15 {
        out.push(fix | n as u8);
    } else if n <= 0xffff {
        out.push(b16);
        out.extend_from_slice(&(n as u16).to_be_bytes());
    } else {
        out.push(b32);
        out.extend_from_slice(&(n as u32).to_be_bytes());
    }
}

/// Every key a positive integer (as a C `int`) and as many keys as the largest one.
fn is_array(t: &Table) -> mlua::Result<bool> {
    let mut count: i32 = 0;
    let mut max: i32 = 0;
    for pair in t.pairs::<Value, Value>() {
        let (k, _) = pair?;
        match as_number(&k) {
            Some(n) if n > 0.0 && f64::from(c_double_to_i32(n)) == n => {
                max = max.max(n as i32);
                count = count.wrapping_add(1);
            }
            _ => return Ok(false),
        }
    }
    Ok(max == count)
}

fn encode_table(out: &mut Vec<u8>, t: &Table, level: usize) -> mlua::Result<()> {
    if is_array(t)? {
        let len = t.raw_len();
        encode_len(out, len, 0x90, 0xdc, 0xdd);
        for i in 1..=len {
            let key = Value::Integer(i as i64);
            let v = exact_entry(t, &key, t.get(i)?, false)?;
            encode(out, &v, level + 1)?;
        }
    } else {
        let len = t.pairs::<Value, Value>().count();
        encode_len(out, len, 0x80, 0xde, 0xdf);
        for pair in t.pairs::<Value, Value>() {
            let (k, v) = pair?;
            let v = exact_entry(t, &k, v, true)?;
            encode(out, &k, level + 1)?;
            encode(out, &v, level + 1)?;
        }
    }
    Ok(())
}

// ===== Decoding =====

enum DecodeError {
    /// The input ends inside a value.
    Eof,
    /// A byte no MessagePack type this library reads starts with.
    BadFormat,
    Lua(mlua::Error),
}

impl From<mlua::Error> for DecodeError {
    fn from(e: mlua::Error) -> Self {
        DecodeError::Lua(e)
    }
}

struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn left(&self) -> usize {
        self.data.len() - self.pos
    }

    /// The next `n` bytes, consumed.
    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if self.left() < n {
            return Err(DecodeError::Eof);
        }
        let s = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn be<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let mut b = [0u8; N];
        b.copy_from_slice(self.take(N)?);
        Ok(b)
    }
}

/// What a value's first bytes say: a whole value, or the header of an array or a map.
enum Head {
    Value(Value),
    Array(usize),
    Map(usize),
}

/// A table being filled by [`decode`].
enum Frame {
    Array {
        t: Table,
        next: usize,
        len: usize,
        slots: usize,
    },
    Map {
        t: Table,
        left: usize,
        key: Option<Value>,
        slots: usize,
    },
}

/// Decodes one value (iteratively: nesting is bounded only by the C stack model); `base` is
/// the C decoder's Lua stack use before pushing it.
fn decode(lua: &Lua, c: &mut Cursor, base: usize) -> Result<Value, DecodeError> {
    let mut stack: Vec<Frame> = Vec::new();
    loop {
        // The C decoder keeps a table and an index (array) or key (map) under each element.
        let slots = match stack.last() {
            None => base,
            Some(Frame::Array { slots, .. }) => slots + 2,
            Some(Frame::Map { slots, key, .. }) => slots + 1 + usize::from(key.is_some()),
        };
        let mut v = match decode_head(lua, c, slots)? {
            Head::Value(v) => v,
            Head::Array(len) => {
                let t = lua.create_table()?;
                if len == 0 {
                    Value::Table(t)
                } else {
                    stack.push(Frame::Array {
                        t,
                        next: 1,
                        len,
                        slots,
                    });
                    continue;
                }
            }
            Head::Map(len) => {
                let t = lua.create_table()?;
                if len == 0 {
                    Value::Table(t)
                } else {
                    stack.push(Frame::Map {
                        t,
                        left: len,
                        key: None,
                        slots,
                    });
                    continue;
                }
            }
        };
        // Store the value in its table; a table completed by it is itself stored in turn.
        loop {
            let done = match stack.last_mut() {
                None => return Ok(v),
                Some(Frame::Array { t, next, len, .. }) => {
                    t.raw_set(*next as i64, v)?;
                    *next += 1;
                    *next > *len
                }
                Some(Frame::Map { t, left, key, .. }) => match key.take() {
                    None => {
                        *key = Some(v);
                        false
                    }
                    Some(k) => {
                        match &k {
                            Value::Nil => return Err(lua_error("table index is nil").into()),
                            Value::Number(n) if n.is_nan() => {
                                return Err(lua_error("table index is NaN").into())
                            }
                            _ => {}
                        }
                        t.raw_set(k, v)?;
                        *left -= 1;
                        *left == 0
                    }
                },
            };
            if !done {
                break;
            }
            v = match stack.pop() {
                Some(Frame::Array { t, .. }) | Some(Frame::Map { t, .. }) => Value::Table(t),
                None => return Ok(Value::Nil),
            };
        }
    }
}

/// Reads one value, or the header of an array or map; `slots` is the C decoder's Lua stack
/// use before pushing it.
fn decode_head(lua: &Lua, c: &mut Cursor, slots: usize) -> Result<Head, DecodeError> {
    if c.left() < 1 {
        return Err(DecodeError::Eof);
    }
    if slots + 1 > MAX_C_STACK {
        return Err(lua_error(TOO_MANY).into());
    }
    let tag = c.data[c.pos];
    // Multi-byte values need their whole encoding before anything is consumed.
    let need = |c: &Cursor, n: usize| {
        if c.left() < n {
            Err(DecodeError::Eof)
        } else {
            Ok(())
        }
    };
    let num = |n: f64| Ok(Head::Value(Value::Number(n)));
    match tag {
        0xcc | 0xd0 => need(c, 2)?,
        0xcd | 0xd1 => need(c, 3)?,
        0xce | 0xd2 | 0xca => need(c, 5)?,
        0xcf | 0xd3 | 0xcb => need(c, 9)?,
        _ => {}
    }
    match tag {
        0x00..=0x7f => {
            c.pos += 1;
            num(f64::from(tag))
        }
        0xe0..=0xff => {
            c.pos += 1;
            num(f64::from(tag as i8))
        }
        0xcc => {
            c.pos += 1;
            num(f64::from(c.be::<1>()?[0]))
        }
        0xd0 => {
            c.pos += 1;
            num(f64::from(c.be::<1>()?[0] as i8))
        }
        0xcd => {
            c.pos += 1;
            num(f64::from(u16::from_be_bytes(c.be()?)))
        }
        0xd1 => {
            c.pos += 1;
            num(f64::from(i16::from_be_bytes(c.be()?)))
        }
        0xce => {
            c.pos += 1;
            num(f64::from(u32::from_be_bytes(c.be()?)))
        }
        0xd2 => {
            c.pos += 1;
            num(f64::from(i32::from_be_bytes(c.be()?)))
        }
        // Pushed as a Lua integer (signed 64 bits) on the way to a number.
        0xcf | 0xd3 => {
            c.pos += 1;
            num(i64::from_be_bytes(c.be()?) as f64)
        }
        0xca => {
            c.pos += 1;
            num(f64::from(f32::from_be_bytes(c.be()?)))
        }
        0xcb => {
            c.pos += 1;
            num(f64::from_be_bytes(c.be()?))
        }
        0xc0 => {
            c.pos += 1;
            Ok(Head::Value(Value::Nil))
        }
        0xc2 | 0xc3 => {
            c.pos += 1;
            Ok(Head::Value(Value::Boolean(tag == 0xc3)))
        }
        0xa0..=0xbf => string(lua, c, 1, usize::from(tag & 0x1f)),
        0xd9 => {
            need(c, 2)?;
            let l = usize::from(c.data[c.pos + 1]);
            string(lua, c, 2, l)
        }
        0xda => {
            need(c, 3)?;
            let l = usize::from(u16::from_be_bytes([c.data[c.pos + 1], c.data[c.pos + 2]]));
            string(lua, c, 3, l)
        }
        0xdb => {
            c.pos += 1;
            let l = u32::from_be_bytes(c.be()?) as usize;
            string(lua, c, 0, l)
        }
        0x90..=0x9f => {
            c.pos += 1;
            Ok(Head::Array(usize::from(tag & 0xf)))
        }
        0x80..=0x8f => {
            c.pos += 1;
            Ok(Head::Map(usize::from(tag & 0xf)))
        }
        0xdc | 0xde => {
            c.pos += 1;
            let l = usize::from(u16::from_be_bytes(c.be()?));
            if tag == 0xdc {
                Ok(Head::Array(l))
            } else {
                Ok(Head::Map(l))
            }
        }
        0xdd | 0xdf => {
            c.pos += 1;
            let l = u32::from_be_bytes(c.be()?) as usize;
            if tag == 0xdd {
                Ok(Head::Array(l))
            } else {
                Ok(Head::Map(l))
            }
        }
        _ => Err(DecodeError::BadFormat),
    }
}

/// A string of `len` bytes after a `header` bytes long header (all needed before any is
/// consumed).
fn string(lua: &Lua, c: &mut Cursor, header: usize, len: usize) -> Result<Head, DecodeError> {
    if c.left() < header.saturating_add(len) {
        return Err(DecodeError::Eof);
    }
    c.pos += header;
    let s = c.take(len)?;
    Ok(Head::Value(Value::String(lua.create_string(s)?)))
}

/// The common body of the three unpack functions; `base` is the number of arguments left on
/// the C function's stack under the results.
fn unpack_full(
    lua: &Lua,
    args: &[Value],
    fname: &str,
    limit: i64,
    offset: i64,
    base: usize,
) -> mlua::Result<MultiValue> {
    let s = check_string(lua, args, 1, fname)?;
    let data = s.as_bytes();
    let len = data.len();
    let decode_all = limit == 0 && offset == 0;
    if offset < 0 || limit < 0 {
        return Err(lua_error(format!(
            "Invalid request to unpack with offset of {} and limit of {}.",
            offset as i32, len as i32
        )));
    }
    if offset as u64 > len as u64 {
        return Err(lua_error(format!(
            "Start offset {} greater than input length {}.",
            offset as i32, len as i32
        )));
    }
    let limit = if decode_all {
        i64::from(i32::MAX)
    } else {
        limit
    };
    let mut c = Cursor {
        data: &data,
        pos: offset as usize,
    };
    let mut out = Vec::new();
    while c.left() > 0 && (out.len() as i64) < limit {
        match decode(lua, &mut c, base + out.len()) {
            Ok(v) => out.push(v),
            Err(DecodeError::Eof) => return Err(lua_error("Missing bytes in input.")),
            Err(DecodeError::BadFormat) => return Err(lua_error("Bad data format in input.")),
            Err(DecodeError::Lua(e)) => return Err(e),
        }
    }
    if !decode_all {
        if 1 + out.len() + 1 > MAX_C_STACK {
            return Err(lua_error("stack overflow (in function mp_unpack_full)"));
        }
        let next = if c.left() == 0 { -1 } else { c.pos as i64 };
        out.insert(0, Value::Integer(next));
    }
    Ok(MultiValue::from_vec(out))
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{bytes, err, eval, lua};

    fn pack(args: &str) -> Vec<u8> {
        bytes(&format!("return cmsgpack.pack({args})"))
    }

    #[test]
    fn pack_integers() {
        assert_eq!(pack("0"), [0x00]);
        assert_eq!(pack("127"), [0x7f]);
        assert_eq!(pack("128"), [0xcc, 0x80]);
        assert_eq!(pack("256"), [0xcd, 0x01, 0x00]);
        assert_eq!(pack("65536"), [0xce, 0, 1, 0, 0]);
        assert_eq!(pack("2^32"), [0xcf, 0, 0, 0, 1, 0, 0, 0, 0]);
        assert_eq!(pack("-1"), [0xff]);
        assert_eq!(pack("-32"), [0xe0]);
        assert_eq!(pack("-33"), [0xd0, 0xdf]);
        assert_eq!(pack("-129"), [0xd1, 0xff, 0x7f]);
        assert_eq!(pack("-32769"), [0xd2, 0xff, 0xff, 0x7f, 0xff]);
        assert_eq!(
            pack("-2^31-1"),
            [0xd3, 0xff, 0xff, 0xff, 0xff, 0x7f, 0xff, 0xff, 0xff]
        );
    }

    #[test]
    fn pack_floats() {
        assert_eq!(pack("0.5"), [0xca, 0x3f, 0x00, 0x00, 0x00]);
        assert_eq!(
            pack("1.1"),
            [0xcb, 0x3f, 0xf1, 0x99, 0x99, 0x99, 0x99, 0x99, 0x9a]
        );
        assert_eq!(pack("1/0"), [0xca, 0x7f, 0x80, 0x00, 0x00]);
        assert_eq!(pack("2^63"), [0xca, 0x5f, 0x00, 0x00, 0x00]);
        assert_eq!(pack("{1e-20}")[..2], [0x91, 0xcb]);
    }

    #[test]
    fn pack_other_types() {
        assert_eq!(pack("'abc'"), b"\xa3abc");
        assert_eq!(pack("string.rep('x', 32)")[..2], [0xd9, 32]);
        assert_eq!(pack("string.rep('x', 256)")[..3], [0xda, 1, 0]);
        assert_eq!(pack("string.rep('x', 65536)")[..5], [0xdb, 0, 1, 0, 0]);
        assert_eq!(pack("true, false, nil"), [0xc3, 0xc2, 0xc0]);
        assert_eq!(pack("print"), [0xc0]);
        assert_eq!(pack("cjson.null"), [0xc0]);
        assert_eq!(pack("{}"), [0x90]);
        assert_eq!(pack("{1, 2}"), [0x92, 1, 2]);
        assert_eq!(pack("{a = 1}"), b"\x81\xa1a\x01");
        assert_eq!(pack("{[2] = 1}"), [0x81, 2, 1]);
        assert_eq!(pack("{[1.5] = 1}"), [0x81, 0xca, 0x3f, 0xc0, 0, 0, 1]);
        let a16 = pack("{1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16}");
        assert_eq!(a16[..3], [0xdc, 0, 16]);
    }

    #[test]
    fn pack_nesting_limit() {
        // 16 levels of tables are written; the 17th becomes nil.
        let out = pack("(function() local t = {} for i = 1, 20 do t = {t} end return t end)()");
        assert_eq!(out, [vec![0x91; 16], vec![0xc0]].concat());
        assert_eq!(
            err("cmsgpack.pack()"),
            "bad argument #0 to 'pack' (MessagePack pack needs input.)"
        );
    }

    #[test]
    fn unpack_values() {
        let lua = lua();
        let r: (f64, String, bool, Option<f64>, f64) = eval(
            &lua,
            "return cmsgpack.unpack(cmsgpack.pack(-5, 'hi', true, nil, 0.25))",
        );
        assert_eq!(r, (-5.0, "hi".to_string(), true, None, 0.25));
        let r: (f64, f64, String) = eval(
            &lua,
            "local t = cmsgpack.unpack(cmsgpack.pack({10, 20, x = 'y'})) return t[1], t[2], t.x",
        );
        assert_eq!(r, (10.0, 20.0, "y".to_string()));
        let r: f64 = eval(
            &lua,
            "return cmsgpack.unpack('\\207\\255\\255\\255\\255\\255\\255\\255\\255')",
        );
        assert_eq!(r, -1.0);
        let r: f64 = eval(&lua, "return cmsgpack.unpack('\\205\\1\\2')");
        assert_eq!(r, 258.0);
        let r: f64 = eval(&lua, "return cmsgpack.unpack('\\209\\255\\0')");
        assert_eq!(r, -256.0);
        let r: f64 = eval(&lua, "return select('#', cmsgpack.unpack(''))");
        assert_eq!(r, 0.0);
        let r: f64 = eval(
            &lua,
            "local t = cmsgpack.unpack('\\146\\192\\1') return t[2]",
        );
        assert_eq!(r, 1.0);
    }

    #[test]
    fn unpack_one_and_limit() {
        let lua = lua();
        let r: (i64, f64) = eval(&lua, "return cmsgpack.unpack_one(cmsgpack.pack(1, 2, 3))");
        assert_eq!(r, (1, 1.0));
        let r: (i64, f64) = eval(
            &lua,
            "return cmsgpack.unpack_one(cmsgpack.pack(1, 2, 3), 2)",
        );
        assert_eq!(r, (-1, 3.0));
        let r: (i64, f64, f64) = eval(
            &lua,
            "return cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), 2)",
        );
        assert_eq!(r, (2, 1.0, 2.0));
        let r: (i64, f64) = eval(
            &lua,
            "return cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), 5, 2)",
        );
        assert_eq!(r, (-1, 3.0));
        let r: i64 = eval(
            &lua,
            "return select('#', cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), 0, 0))",
        );
        assert_eq!(r, 3);
        let r: i64 = eval(
            &lua,
            "return cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), 0, 1)",
        );
        assert_eq!(r, 1);
    }

    #[test]
    fn unpack_errors() {
        assert_eq!(
            err("cmsgpack.unpack('\\205\\1')"),
            "Missing bytes in input."
        );
        assert_eq!(
            err("cmsgpack.unpack('\\146\\1')"),
            "Missing bytes in input."
        );
        assert_eq!(err("cmsgpack.unpack('\\193')"), "Bad data format in input.");
        assert_eq!(
            err("cmsgpack.unpack('\\196\\1\\1')"),
            "Bad data format in input."
        );
        assert_eq!(
            err("cmsgpack.unpack_one('abc', -1)"),
            "Invalid request to unpack with offset of -1 and limit of 3."
        );
        assert_eq!(
            err("cmsgpack.unpack_one('abc', 4)"),
            "Start offset 4 greater than input length 3."
        );
        assert_eq!(
            err("cmsgpack.unpack()"),
            "bad argument #1 to 'unpack' (string expected, got no value)"
        );
        assert_eq!(
            err("cmsgpack.unpack_limit('a')"),
            "bad argument #2 to 'unpack_limit' (number expected, got no value)"
        );
        assert_eq!(
            err("cmsgpack.unpack('\\129\\192\\1')"),
            "table index is nil"
        );
        assert_eq!(
            err("cmsgpack.unpack(string.rep('\\145', 5000) .. '\\1')"),
            "stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)"
        );
    }

    #[test]
    fn unpack_many_values() {
        let lua = lua();
        let r: i64 = eval(
            &lua,
            "return select('#', cmsgpack.unpack(string.rep('\\161a', 3999)))",
        );
        assert_eq!(r, 3999);
        assert_eq!(
            err("cmsgpack.unpack(string.rep('\\1', 4000))"),
            "stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)"
        );
    }

    #[test]
    fn fields() {
        let lua = lua();
        let r: (String, String) = eval(&lua, "return cmsgpack._NAME, cmsgpack._VERSION");
        assert_eq!(
            r,
            ("cmsgpack".to_string(), "lua-cmsgpack 0.4.0".to_string())
        );
    }
}
