//! `cjson`: lua-cjson 2.1.0 as Redis builds it. `encode`/`decode`, the configuration
//! functions (each table from `cjson.new()` has its own settings), `cjson.null` (a NULL light
//! userdata), `_NAME` and `_VERSION`.
//!
//! Numbers are written with C's `%.14g` (precision settable from 1 to 14) and read with C
//! `strtod`'s grammar (hex, `inf` and `nan` included while `decode_invalid_numbers` is on).
//! Strings are bytes: nothing is checked for UTF-8, `/` is escaped as `\/`, DEL as `\u007f`.

use std::cell::RefCell;
use std::rc::Rc;

use mlua::{Function, LightUserData, Lua, MultiValue, Table, Value};

use super::{
    arg_error, as_number, c_double_to_i32, c_double_to_i64, exact_entry, to_number, type_error,
    type_name, MAX_C_STACK,
};

/// Settings of one cjson table (shared by its functions).
#[derive(Clone, Copy, Debug)]
struct Config {
    sparse_convert: bool,
    sparse_ratio: i32,
    sparse_safe: i32,
    encode_max_depth: i32,
    decode_max_depth: i32,
    /// 0: error, 1: write `nan`/`inf`, 2: write `null`.
    encode_invalid_numbers: u8,
    decode_invalid_numbers: bool,
    keep_buffer: bool,
    precision: i32,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            sparse_convert: false,
            sparse_ratio: 2,
            sparse_safe: 10,
            encode_max_depth: 1000,
            decode_max_depth: 1000,
            encode_invalid_numbers: 0,
            decode_invalid_numbers: true,
            keep_buffer: true,
            precision: 14,
        }
    }
}

type Shared = Rc<RefCell<Config>>;

/// Creates a `cjson` table with default settings (what `cjson.new()` returns).
pub fn create(lua: &Lua) -> mlua::Result<Table> {
    create_with(lua, lua.globals().get("next")?)
}

/// [`create`] with Lua's `next` function (taken from the globals before scripts run).
fn create_with(lua: &Lua, next: Function) -> mlua::Result<Table> {
    let cfg: Shared = Rc::new(RefCell::new(Config::default()));
    let t = lua.create_table()?;

    let c = cfg.clone();
    let next_fn = next.clone();
    t.raw_set(
        "encode",
        lua.create_function(move |lua, args: MultiValue| {
            if args.len() != 1 {
                return Err(arg_error(1, "encode", "expected 1 argument"));
            }
            let config = *c.borrow();
            let mut enc = Encoder {
                cfg: config,
                out: Vec::new(),
                next: next_fn.clone(),
            };
            enc.encode(&args[0])?;
            lua.create_string(&enc.out)
        })?,
    )?;

    let c = cfg.clone();
    t.raw_set(
        "decode",
        lua.create_function(move |lua, args: MultiValue| {
            if args.len() != 1 {
                return Err(arg_error(1, "decode", "expected 1 argument"));
            }
            let args = args.into_vec();
            let s = super::check_string(lua, &args, 1, "decode")?;
            let config = *c.borrow();
            decode(lua, &s.as_bytes(), config)
        })?,
    )?;

    let c = cfg.clone();
    t.raw_set(
        "encode_sparse_array",
        lua.create_function(move |lua, args: MultiValue| {
            let args = arg_init(args, 3, "encode_sparse_array")?;
            let mut cfg = c.borrow_mut();
            let name = "encode_sparse_array";
            let mut convert = u8::from(cfg.sparse_convert);
            let r1 = enum_option(lua, &args, 1, name, &mut convert, &["off", "on"])?;
            cfg.sparse_convert = convert != 0;
            let r2 = integer_option(lua, &args, 2, name, &mut cfg.sparse_ratio, 0, i32::MAX)?;
            let r3 = integer_option(lua, &args, 3, name, &mut cfg.sparse_safe, 0, i32::MAX)?;
            Ok(MultiValue::from_vec(vec![r1, r2, r3]))
        })?,
    )?;

    type IntField = fn(&mut Config) -> &mut i32;
    let int_options: [(&'static str, IntField, i32, i32); 3] = [
        ("encode_max_depth", |c| &mut c.encode_max_depth, 1, i32::MAX),
        ("decode_max_depth", |c| &mut c.decode_max_depth, 1, i32::MAX),
        ("encode_number_precision", |c| &mut c.precision, 1, 14),
    ];
    for (name, field, min, max) in int_options {
        let c = cfg.clone();
        t.raw_set(
            name,
            lua.create_function(move |lua, args: MultiValue| {
                let args = arg_init(args, 1, name)?;
                let mut cfg = c.borrow_mut();
                integer_option(lua, &args, 1, name, field(&mut cfg), min, max)
            })?,
        )?;
    }

    let c = cfg.clone();
    t.raw_set(
        "encode_keep_buffer",
        lua.create_function(move |lua, args: MultiValue| {
            let args = arg_init(args, 1, "encode_keep_buffer")?;
            let mut cfg = c.borrow_mut();
            let mut v = u8::from(cfg.keep_buffer);
            let r = enum_option(lua, &args, 1, "encode_keep_buffer", &mut v, &["off", "on"])?;
            cfg.keep_buffer = v != 0;
            Ok(r)
        })?,
    )?;

    let c = cfg.clone();
    t.raw_set(
        "encode_invalid_numbers",
        lua.create_function(move |lua, args: MultiValue| {
            let args = arg_init(args, 1, "encode_invalid_numbers")?;
            let mut cfg = c.borrow_mut();
            let name = "encode_invalid_numbers";
            enum_option(
                lua,
                &args,
                1,
                name,
                &mut cfg.encode_invalid_numbers,
                &["off", "on", "null"],
            )
        })?,
    )?;

    let c = cfg;
    t.raw_set(
        "decode_invalid_numbers",
        lua.create_function(move |lua, args: MultiValue| {
            let args = arg_init(args, 1, "decode_invalid_numbers")?;
            let mut cfg = c.borrow_mut();
            let mut v = u8::from(cfg.decode_invalid_numbers);
            let r = enum_option(
                lua,
                &args,
                1,
                "decode_invalid_numbers",
                &mut v,
                &["off", "on"],
            )?;
            cfg.decode_invalid_numbers = v != 0;
            Ok(r)
        })?,
    )?;

    t.raw_set(
        "new",
        lua.create_function(|lua, _: MultiValue| create(lua))?,
    )?;
    t.raw_set(
        "null",
        Value::LightUserData(LightUserData(std::ptr::null_mut())),
    )?;
    t.raw_set("_NAME", "cjson")?;
    t.raw_set("_VERSION", "2.1.0")?;
    Ok(t)
}

/// Checks a configuration function got at most `n` arguments.
fn arg_init(args: MultiValue, n: usize, name: &str) -> mlua::Result<Vec<Value>> {
    if args.len() > n {
        return Err(arg_error(n + 1, name, "found too many arguments"));
    }
    Ok(args.into_vec())
}

/// An integer setting: argument `narg` (when not nil) must be an integer in `min..=max`;
/// returns the setting.
fn integer_option(
    lua: &Lua,
    args: &[Value],
    narg: usize,
    name: &str,
    setting: &mut i32,
    min: i32,
    max: i32,
) -> mlua::Result<Value> {
    match args.get(narg - 1) {
        None | Some(Value::Nil) => {}
        v => {
            let n = to_number(lua, v).ok_or_else(|| type_error(narg, name, "number", v))?;
            let value = c_double_to_i64(n) as i32;
            if value < min || value > max {
                let msg = format!("expected integer between {min} and {max}");
                return Err(arg_error(1, name, &msg));
            }
            *setting = value;
        }
    }
    Ok(Value::Number(f64::from(*setting)))
}

/// An enumerated setting: a boolean (off/on) or one of `options` by name; returns a boolean
/// for off/on and the option's name otherwise.
fn enum_option(
    lua: &Lua,
    args: &[Value],
    narg: usize,
    name: &str,
    setting: &mut u8,
    options: &[&str],
) -> mlua::Result<Value> {
    match args.get(narg - 1) {
        None | Some(Value::Nil) => {}
        Some(Value::Boolean(b)) => *setting = u8::from(*b),
        _ => {
            let s = super::check_string(lua, args, narg, name)?;
            let bytes = s.as_bytes();
            match options.iter().position(|o| o.as_bytes() == &*bytes) {
                Some(i) => *setting = i as u8,
                None => {
                    let msg = format!("invalid option '{}'", String::from_utf8_lossy(&bytes));
                    return Err(arg_error(narg, name, &msg));
                }
            }
        }
    }
    Ok(if *setting <= 1 {
        Value::Boolean(*setting == 1)
    } else {
        Value::String(lua.create_string(options[*setting as usize])?)
    })
}

// ===== Encoding =====

struct Encoder {
    cfg: Config,
    out: Vec<u8>,
    /// Lua's `next`, taken before any script could replace it.
    next: Function,
}

fn encode_error(v: Option<&Value>, reason: &str) -> mlua::Error {
    super::lua_error(format!("Cannot serialise {}: {reason}", type_name(v)))
}

/// A table being written by [`Encoder::encode`]; `slots` is the C encoder's Lua stack use
/// with the table on top.
enum Frame {
    Array {
        t: Table,
        next: i32,
        len: i32,
        slots: usize,
    },
    Object {
        t: Table,
        key: Value,
        slots: usize,
    },
}

impl Encoder {
    /// Appends the encoding of `v` (iteratively: nesting is bounded by `encode_max_depth` and
    /// the C stack model, not by Rust's stack).
    fn encode(&mut self, v: &Value) -> mlua::Result<()> {
        let mut stack: Vec<Frame> = Vec::new();
        if let Some(frame) = self.value(v, 0, 1)? {
            stack.push(frame);
        }
        loop {
            let depth = stack.len() as i32;
            let Some(top) = stack.last_mut() else {
                break;
            };
            let child = match top {
                Frame::Array {
                    t,
                    next,
                    len,
                    slots,
                } => {
                    if *next > *len {
                        self.out.push(b']');
                        stack.pop();
                        continue;
                    }
                    if *next > 1 {
                        self.out.push(b',');
                    }
                    let key = Value::Integer(i64::from(*next));
                    *next += 1;
                    let item = exact_entry(t, &key, t.raw_get(key.clone())?, true)?;
                    let slots = *slots + 1;
                    self.value(&item, depth, slots)?
                }
                Frame::Object { t, key, slots } => {
                    let (k, item): (Value, Value) = self
                        .next
                        .call((t.clone(), std::mem::replace(key, Value::Nil)))?;
                    if k.is_nil() {
                        self.out.push(b'}');
                        stack.pop();
                        continue;
                    }
                    if self.out.last() != Some(&b'{') {
                        self.out.push(b',');
                    }
                    match &k {
                        Value::String(s) => {
                            self.string(&s.as_bytes());
                            self.out.push(b':');
                        }
                        Value::Integer(_) | Value::Number(_) => {
                            self.out.push(b'"');
                            self.number(as_number(&k).unwrap_or(0.0), &k)?;
                            self.out.extend_from_slice(b"\":");
                        }
                        other => {
                            return Err(encode_error(
                                Some(other),
                                "table key must be a number or string",
                            ))
                        }
                    }
                    let item = exact_entry(t, &k, item, true)?;
                    *key = k;
                    let slots = *slots + 2;
                    self.value(&item, depth, slots)?
                }
            };
            if let Some(frame) = child {
                stack.push(frame);
            }
        }
        Ok(())
    }

    /// Appends a scalar, or opens a table and returns its frame; `depth` counts the tables
    /// around `v`, `slots` the C encoder's stack use with `v` on top.
    fn value(&mut self, v: &Value, depth: i32, slots: usize) -> mlua::Result<Option<Frame>> {
        match v {
            Value::String(s) => self.string(&s.as_bytes()),
            Value::Integer(_) | Value::Number(_) => {
                self.number(as_number(v).unwrap_or(0.0), v)?;
            }
            Value::Boolean(true) => self.out.extend_from_slice(b"true"),
            Value::Boolean(false) => self.out.extend_from_slice(b"false"),
            Value::Nil => self.out.extend_from_slice(b"null"),
            Value::LightUserData(p) if p.0.is_null() => self.out.extend_from_slice(b"null"),
            Value::Table(t) => {
                let depth = depth + 1;
                if depth > self.cfg.encode_max_depth || slots + 3 > MAX_C_STACK {
                    return Err(super::lua_error(format!(
                        "Cannot serialise, excessive nesting ({depth})"
                    )));
                }
                let len = self.array_length(t, v)?;
                let t = t.clone();
                return Ok(Some(if len > 0 {
                    self.out.push(b'[');
                    Frame::Array {
                        t,
                        next: 1,
                        len,
                        slots,
                    }
                } else {
                    self.out.push(b'{');
                    Frame::Object {
                        t,
                        key: Value::Nil,
                        slots,
                    }
                }));
            }
            other => return Err(encode_error(Some(other), "type not supported")),
        }
        Ok(None)
    }

    /// The array length of `t` (its largest index) or a non-positive number when it must be
    /// written as an object.
    fn array_length(&mut self, t: &Table, tv: &Value) -> mlua::Result<i32> {
        let mut max: i32 = 0;
        let mut items: i32 = 0;
        for pair in t.pairs::<Value, Value>() {
            let (k, _) = pair?;
            let k = match as_number(&k) {
                Some(k) if k != 0.0 => k,
                _ => return Ok(-1),
            };
            if k.floor() == k && k >= 1.0 {
                if k > f64::from(max) {
                    max = c_double_to_i32(k);
                }
                items = items.wrapping_add(1);
            } else {
                return Ok(-1);
            }
        }
        let ratio = self.cfg.sparse_ratio;
        if ratio > 0 && max > items.wrapping_mul(ratio) && max > self.cfg.sparse_safe {
            if !self.cfg.sparse_convert {
                return Err(encode_error(Some(tv), "excessively sparse array"));
            }
            return Ok(-1);
        }
        Ok(max)
    }

    fn number(&mut self, n: f64, v: &Value) -> mlua::Result<()> {
        if !n.is_finite() {
            match self.cfg.encode_invalid_numbers {
                0 => return Err(encode_error(Some(v), "must not be NaN or Inf")),
                1 if n.is_nan() => {
                    self.out.extend_from_slice(b"nan");
                    return Ok(());
                }
                2 => {
                    self.out.extend_from_slice(b"null");
                    return Ok(());
                }
                _ => {}
            }
        }
        self.out
            .extend_from_slice(format_g(n, self.cfg.precision as usize).as_bytes());
        Ok(())
    }

    fn string(&mut self, s: &[u8]) {
        self.out.reserve(s.len() + 2);
        self.out.push(b'"');
        for &c in s {
            match c {
                b'"' => self.out.extend_from_slice(b"\\\""),
                b'\\' => self.out.extend_from_slice(b"\\\\"),
                b'/' => self.out.extend_from_slice(b"\\/"),
                b'\x08' => self.out.extend_from_slice(b"\\b"),
                b'\t' => self.out.extend_from_slice(b"\\t"),
                b'\n' => self.out.extend_from_slice(b"\\n"),
                b'\x0c' => self.out.extend_from_slice(b"\\f"),
                b'\r' => self.out.extend_from_slice(b"\\r"),
                0..=0x1f | 0x7f => {
                    const HEX: &[u8; 16] = b"0123456789abcdef";
                    self.out.extend_from_slice(b"\\u00");
                    self.out.push(HEX[usize::from(c >> 4)]);
                    self.out.push(HEX[usize::from(c & 15)]);
                }
                _ => self.out.push(c),
            }
        }
        self.out.push(b'"');
    }
}

/// C's `printf("%.<precision>g", n)`.
pub fn format_g(n: f64, precision: usize) -> String {
    if n.is_nan() {
        return if n.is_sign_negative() { "-nan" } else { "nan" }.to_string();
    }
    if n.is_infinite() {
        return if n < 0.0 { "-inf" } else { "inf" }.to_string();
    }
    let p = precision.max(1);
    if n == 0.0 {
        return if n.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    let e_form = format!("{:.*e}", p - 1, n);
    let (mantissa, exp) = e_form.split_once('e').unwrap_or((&e_form, "0"));
    let x: i32 = exp.parse().unwrap_or(0);
    if x < -4 || x >= p as i32 {
        let mantissa = strip_zeros(mantissa);
        let sign = if x < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", x.unsigned_abs())
    } else {
        let decimals = (p as i32 - 1 - x) as usize;
        strip_zeros(&format!("{n:.decimals$}")).to_string()
    }
}

fn strip_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

// ===== Decoding =====

#[derive(Debug)]
enum Token {
    ObjBegin,
    ObjEnd,
    ArrBegin,
    ArrEnd,
    Str(Vec<u8>),
    Num(f64),
    Bool(bool),
    Null,
    Colon,
    Comma,
    End,
    Error(&'static str),
}

impl Token {
    fn name(&self) -> &'static str {
        match self {
            Token::ObjBegin => "T_OBJ_BEGIN",
            Token::ObjEnd => "T_OBJ_END",
            Token::ArrBegin => "T_ARR_BEGIN",
            Token::ArrEnd => "T_ARR_END",
            Token::Str(_) => "T_STRING",
            Token::Num(_) => "T_NUMBER",
            Token::Bool(_) => "T_BOOLEAN",
            Token::Null => "T_NULL",
            Token::Colon => "T_COLON",
            Token::Comma => "T_COMMA",
            Token::End => "T_END",
            Token::Error(msg) => msg,
        }
    }
}

struct Parser<'a> {
    data: &'a [u8],
    pos: usize,
    depth: i32,
    cfg: Config,
}

fn decode(lua: &Lua, data: &[u8], cfg: Config) -> mlua::Result<Value> {
    if data.len() >= 2 && (data[0] == 0 || data[1] == 0) {
        return Err(super::lua_error(
            "JSON parser does not support UTF-16 or UTF-32",
        ));
    }
    let mut p = Parser {
        data,
        pos: 0,
        depth: 0,
        cfg,
    };
    let (tok, idx) = p.next_token();
    let v = p.value(lua, tok, idx)?;
    let (tok, idx) = p.next_token();
    if !matches!(tok, Token::End) {
        return Err(parse_error("the end", &tok, idx));
    }
    Ok(v)
}

fn parse_error(expected: &str, tok: &Token, idx: usize) -> mlua::Error {
    super::lua_error(format!(
        "Expected {expected} but found {} at character {}",
        tok.name(),
        idx + 1
    ))
}

impl Parser<'_> {
    /// The byte at `i`; the input reads as NUL-terminated, so past the end is 0.
    fn at(&self, i: usize) -> u8 {
        self.data.get(i).copied().unwrap_or(0)
    }

    /// The next token and the index it starts at (where the error is, for errors).
    fn next_token(&mut self) -> (Token, usize) {
        while matches!(self.at(self.pos), b' ' | b'\t' | b'\n' | b'\r') {
            self.pos += 1;
        }
        let start = self.pos;
        let ch = self.at(start);
        let single = match ch {
            b'{' => Some(Token::ObjBegin),
            b'}' => Some(Token::ObjEnd),
            b'[' => Some(Token::ArrBegin),
            b']' => Some(Token::ArrEnd),
            b',' => Some(Token::Comma),
            b':' => Some(Token::Colon),
            _ => None,
        };
        if let Some(t) = single {
            self.pos += 1;
            return (t, start);
        }
        if ch == 0 {
            return (Token::End, start);
        }
        if !matches!(
            ch,
            b'f' | b'i' | b'I' | b'n' | b'N' | b't' | b'"' | b'+' | b'-' | b'0'..=b'9'
        ) {
            return (Token::Error("invalid token"), start);
        }
        if ch == b'"' {
            return self.string_token();
        }
        let rest = &self.data[start..];
        if ch == b'-' || ch.is_ascii_digit() {
            if !self.cfg.decode_invalid_numbers && self.is_invalid_number() {
                return (Token::Error("invalid number"), start);
            }
            return self.number_token();
        }
        for (word, tok) in [
            (&b"true"[..], Token::Bool(true)),
            (b"false", Token::Bool(false)),
            (b"null", Token::Null),
        ] {
            if rest.starts_with(word) {
                self.pos += word.len();
                return (tok, start);
            }
        }
        if self.cfg.decode_invalid_numbers && self.is_invalid_number() {
            return self.number_token();
        }
        (Token::Error("invalid token"), start)
    }

    /// Strict JSON would reject this number: a leading `+` or zero, hex, `inf` or `nan`.
    fn is_invalid_number(&self) -> bool {
        let mut p = self.pos;
        if self.at(p) == b'+' {
            return true;
        }
        if self.at(p) == b'-' {
            p += 1;
        }
        let c = self.at(p);
        if c == b'0' {
            let c2 = self.at(p + 1);
            return c2 | 0x20 == b'x' || c2.is_ascii_digit();
        }
        // C compares a signed char: bytes from 0x80 count as below '9'.
        if c <= b'9' || c >= 0x80 {
            return false;
        }
        let word = |w: &[u8]| (0..3).all(|i| self.at(p + i).to_ascii_lowercase() == w[i]);
        word(b"inf") || word(b"nan")
    }

    fn number_token(&mut self) -> (Token, usize) {
        let start = self.pos;
        match strtod(self.data, start) {
            Some((n, end)) => {
                self.pos = end;
                (Token::Num(n), start)
            }
            None => (Token::Error("invalid number"), start),
        }
    }

    fn string_token(&mut self) -> (Token, usize) {
        let start = self.pos;
        self.pos += 1;
        let mut out = Vec::new();
        loop {
            let ch = self.at(self.pos);
            if ch == b'"' {
                break;
            }
            if ch == 0 {
                return (Token::Error("unexpected end of string"), self.pos);
            }
            if ch == b'\\' {
                let translated = match self.at(self.pos + 1) {
                    b'"' => b'"',
                    b'\\' => b'\\',
                    b'/' => b'/',
                    b'b' => 8,
                    b't' => b'\t',
                    b'n' => b'\n',
                    b'f' => 12,
                    b'r' => b'\r',
                    b'u' => {
                        if self.unicode_escape(&mut out) {
                            continue;
                        }
                        return (Token::Error("invalid unicode escape code"), self.pos);
                    }
                    _ => return (Token::Error("invalid escape code"), self.pos),
                };
                out.push(translated);
                self.pos += 2;
                continue;
            }
            out.push(ch);
            self.pos += 1;
        }
        self.pos += 1;
        (Token::Str(out), start)
    }

    fn hex4(&self, at: usize) -> Option<u32> {
        let mut v = 0;
        for i in 0..4 {
            let d = (self.at(at + i) as char).to_digit(16)?;
            v = (v << 4) | d;
        }
        Some(v)
    }

    /// Decodes `\uXXXX` (and a following low surrogate) at `pos` as UTF-8 into `out`.
    fn unicode_escape(&mut self, out: &mut Vec<u8>) -> bool {
        let Some(mut cp) = self.hex4(self.pos + 2) else {
            return false;
        };
        let mut len = 6;
        if cp & 0xF800 == 0xD800 {
            if cp & 0x400 != 0 {
                return false;
            }
            if self.at(self.pos + 6) != b'\\' || self.at(self.pos + 7) != b'u' {
                return false;
            }
            let Some(low) = self.hex4(self.pos + 8) else {
                return false;
            };
            if low & 0xFC00 != 0xDC00 {
                return false;
            }
            cp = (((cp & 0x3FF) << 10) | (low & 0x3FF)) + 0x10000;
            len = 12;
        }
        let mut buf = [0u8; 4];
        let n = utf8_encode(cp, &mut buf);
        out.extend_from_slice(&buf[..n]);
        self.pos += len;
        true
    }

    fn descend(&mut self, need: usize, slots: usize) -> mlua::Result<()> {
        self.depth += 1;
        if self.depth <= self.cfg.decode_max_depth && slots + need <= MAX_C_STACK {
            return Ok(());
        }
        Err(super::lua_error(format!(
            "Found too many nested data structures ({}) at character {}",
            self.depth, self.pos
        )))
    }

    /// Converts the value starting with `tok` (iteratively: nesting is bounded by
    /// `decode_max_depth` and the C stack model, not by Rust's stack).
    fn value(&mut self, lua: &Lua, mut tok: Token, mut idx: usize) -> mlua::Result<Value> {
        let mut stack: Vec<DecodeFrame> = Vec::new();
        loop {
            // The C decoder keeps each table, and an object's key, under the value.
            let slots = match stack.last() {
                None => 1,
                Some(DecodeFrame::Array { slots, .. }) => slots + 1,
                Some(DecodeFrame::Object { slots, .. }) => slots + 2,
            };
            let mut v = match tok {
                Token::Str(s) => Value::String(lua.create_string(&s)?),
                Token::Num(n) => Value::Number(n),
                Token::Bool(b) => Value::Boolean(b),
                Token::Null => Value::LightUserData(LightUserData(std::ptr::null_mut())),
                Token::ObjBegin => {
                    self.descend(3, slots)?;
                    let t = lua.create_table()?;
                    let (first, fidx) = self.next_token();
                    if matches!(first, Token::ObjEnd) {
                        self.depth -= 1;
                        Value::Table(t)
                    } else {
                        let key = self.key(lua, first, fidx)?;
                        stack.push(DecodeFrame::Object { t, key, slots });
                        (tok, idx) = self.next_token();
                        continue;
                    }
                }
                Token::ArrBegin => {
                    self.descend(2, slots)?;
                    let t = lua.create_table()?;
                    let (first, fidx) = self.next_token();
                    if matches!(first, Token::ArrEnd) {
                        self.depth -= 1;
                        Value::Table(t)
                    } else {
                        stack.push(DecodeFrame::Array { t, next: 1, slots });
                        (tok, idx) = (first, fidx);
                        continue;
                    }
                }
                other => return Err(parse_error("value", &other, idx)),
            };
            // Store the value in its table; a table completed by it is itself stored in turn.
            loop {
                match stack.last_mut() {
                    None => return Ok(v),
                    Some(DecodeFrame::Array { t, next, .. }) => {
                        t.raw_set(*next, v)?;
                        *next += 1;
                        let (after, aidx) = self.next_token();
                        match after {
                            Token::ArrEnd => {}
                            Token::Comma => {
                                (tok, idx) = self.next_token();
                                break;
                            }
                            other => return Err(parse_error("comma or array end", &other, aidx)),
                        }
                    }
                    Some(DecodeFrame::Object { t, key, .. }) => {
                        t.raw_set(key.clone(), v)?;
                        let (after, aidx) = self.next_token();
                        match after {
                            Token::ObjEnd => {}
                            Token::Comma => {
                                let (ktok, kidx) = self.next_token();
                                *key = self.key(lua, ktok, kidx)?;
                                (tok, idx) = self.next_token();
                                break;
                            }
                            other => return Err(parse_error("comma or object end", &other, aidx)),
                        }
                    }
                };
                self.depth -= 1;
                v = match stack.pop() {
                    Some(DecodeFrame::Array { t, .. }) | Some(DecodeFrame::Object { t, .. }) => {
                        Value::Table(t)
                    }
                    None => Value::Nil,
                };
            }
        }
    }

    /// An object key (a string token) and the colon after it.
    fn key(&mut self, lua: &Lua, tok: Token, idx: usize) -> mlua::Result<mlua::String> {
        let Token::Str(key) = tok else {
            return Err(parse_error("object key string", &tok, idx));
        };
        let key = lua.create_string(&key)?;
        let (colon, cidx) = self.next_token();
        if !matches!(colon, Token::Colon) {
            return Err(parse_error("colon", &colon, cidx));
        }
        Ok(key)
    }
}

/// A table being filled by [`Parser::value`]; `slots` is the C decoder's Lua stack use before
/// the table was pushed.
enum DecodeFrame {
    Array {
        t: Table,
        next: i64,
        slots: usize,
    },
    Object {
        t: Table,
        key: mlua::String,
        slots: usize,
    },
}

fn utf8_encode(cp: u32, buf: &mut [u8; 4]) -> usize {
    if cp <= 0x7F {
        buf[0] = cp as u8;
        1
    } else if cp <= 0x7FF {
        buf[0] = (cp >> 6) as u8 | 0xC0;
        buf[1] = (cp & 0x3F) as u8 | 0x80;
        2
    } else if cp <= 0xFFFF {
        buf[0] = (cp >> 12) as u8 | 0xE0;
        buf[1] = ((cp >> 6) & 0x3F) as u8 | 0x80;
        buf[2] = (cp & 0x3F) as u8 | 0x80;
        3
    } else {
        buf[0] = (cp >> 18) as u8 | 0xF0;
        buf[1] = ((cp >> 12) & 0x3F) as u8 | 0x80;
        buf[2] = ((cp >> 6) & 0x3F) as u8 | 0x80;
        buf[3] = (cp & 0x3F) as u8 | 0x80;
        4
    }
}

/// C `strtod` on `data[start..]` (no leading white space there): the value and the index
/// after the number, or `None` when no number starts there.
pub fn strtod(data: &[u8], start: usize) -> Option<(f64, usize)> {
    let at = |i: usize| data.get(i).copied().unwrap_or(0);
    let mut p = start;
    let negative = match at(p) {
        b'-' => {
            p += 1;
            true
        }
        b'+' => {
            p += 1;
            false
        }
        _ => false,
    };
    let sign = |v: f64| if negative { -v } else { v };
    let lower_starts =
        |p: usize, w: &[u8]| (0..w.len()).all(|i| at(p + i).to_ascii_lowercase() == w[i]);
    if lower_starts(p, b"inf") {
        let end = if lower_starts(p, b"infinity") {
            p + 8
        } else {
            p + 3
        };
        return Some((sign(f64::INFINITY), end));
    }
    if lower_starts(p, b"nan") {
        let mut end = p + 3;
        if at(end) == b'(' {
            let mut q = end + 1;
            while at(q).is_ascii_alphanumeric() || at(q) == b'_' {
                q += 1;
            }
            if at(q) == b')' {
                end = q + 1;
            }
        }
        return Some((sign(f64::NAN), end));
    }
    if at(p) == b'0' && at(p + 1) | 0x20 == b'x' {
        if let Some((v, end)) = hex_float(data, p + 2) {
            return Some((sign(v), end));
        }
    }
    // Decimal: digits [. digits] [e [sign] digits], at least one digit in the mantissa.
    let mut q = p;
    let mut digits = 0;
    while at(q).is_ascii_digit() {
        q += 1;
        digits += 1;
    }
    if at(q) == b'.' {
        q += 1;
        while at(q).is_ascii_digit() {
            q += 1;
            digits += 1;
        }
    }
    if digits == 0 {
        return None;
    }
    if at(q) | 0x20 == b'e' {
        let mut r = q + 1;
        if matches!(at(r), b'+' | b'-') {
            r += 1;
        }
        if at(r).is_ascii_digit() {
            while at(r).is_ascii_digit() {
                r += 1;
            }
            q = r;
        }
    }
    let text = std::str::from_utf8(&data[p..q]).ok()?;
    let text = text.strip_suffix('.').unwrap_or(text);
    let v: f64 = if let Some(t) = text.strip_prefix('.') {
        format!("0.{t}").parse().ok()?
    } else {
        text.parse().ok()?
    };
    Some((sign(v), q))
}

/// A hex float's digits after `0x`: `None` when there is no hex digit.
fn hex_float(data: &[u8], start: usize) -> Option<(f64, usize)> {
    let at = |i: usize| data.get(i).copied().unwrap_or(0);
    let hex = |c: u8| (c as char).to_digit(16);
    let mut p = start;
    let mut mantissa: u64 = 0;
    let mut exp: i64 = 0;
    let mut digits = 0;
    let mut sticky = false;
    let mut push = |d: u32, fraction: bool, mantissa: &mut u64, exp: &mut i64| {
        if *mantissa >> 56 == 0 {
            *mantissa = (*mantissa << 4) | u64::from(d);
            if fraction {
                *exp -= 4;
            }
        } else {
            sticky |= d != 0;
            if !fraction {
                *exp += 4;
            }
        }
    };
    while let Some(d) = hex(at(p)) {
        push(d, false, &mut mantissa, &mut exp);
        p += 1;
        digits += 1;
    }
    if at(p) == b'.' {
        let mut q = p + 1;
        let mut frac = 0;
        while let Some(d) = hex(at(q)) {
            push(d, true, &mut mantissa, &mut exp);
            q += 1;
            frac += 1;
        }
        if digits + frac > 0 {
            p = q;
            digits += frac;
        }
    }
    if digits == 0 {
        return None;
    }
    if at(p) | 0x20 == b'p' {
        let mut r = p + 1;
        let neg = match at(r) {
            b'-' => {
                r += 1;
                true
            }
            b'+' => {
                r += 1;
                false
            }
            _ => false,
        };
        if at(r).is_ascii_digit() {
            let mut e: i64 = 0;
            while at(r).is_ascii_digit() {
                e = (e * 10 + i64::from(at(r) - b'0')).min(1 << 20);
                r += 1;
            }
            exp += if neg { -e } else { e };
            p = r;
        }
    }
    if sticky {
        mantissa |= 1;
    }
    let v = (mantissa as f64) * 2f64.powi(exp.clamp(-2200, 2200) as i32);
    Some((v, p))
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{bytes, err, eval, lua};
    use super::*;

    fn enc(code: &str) -> String {
        String::from_utf8(bytes(&format!("return cjson.encode({code})"))).unwrap()
    }

    #[test]
    fn format_g_matches_printf() {
        assert_eq!(format_g(0.1, 14), "0.1");
        assert_eq!(format_g(1.0 / 3.0, 14), "0.33333333333333");
        assert_eq!(format_g(100.0, 14), "100");
        assert_eq!(format_g(1e14, 14), "1e+14");
        assert_eq!(format_g(12345678901234.0, 14), "12345678901234");
        assert_eq!(format_g(123456789012345.0, 14), "1.2345678901234e+14");
        assert_eq!(format_g(0.0001, 14), "0.0001");
        assert_eq!(format_g(0.00001, 14), "1e-05");
        assert_eq!(format_g(-1.5e-300, 14), "-1.5e-300");
        assert_eq!(format_g(1.23456, 3), "1.23");
        assert_eq!(format_g(100_000_000_000_005.0, 14), "1e+14");
        assert_eq!(format_g(999_999.0, 3), "1e+06");
        assert_eq!(format_g(-0.0, 14), "-0");
        assert_eq!(format_g(f64::INFINITY, 14), "inf");
        assert_eq!(format_g(2.5, 1), "2");
    }

    #[test]
    fn encode_scalars() {
        assert_eq!(enc("1"), "1");
        assert_eq!(enc("-3.25"), "-3.25");
        assert_eq!(enc("1/3"), "0.33333333333333");
        assert_eq!(enc("2^53"), "9.007199254741e+15");
        assert_eq!(
            bytes(r#"return cjson.encode('a"b\\c/d\n\1\127\200')"#),
            b"\"a\\\"b\\\\c\\/d\\n\\u0001\\u007f\xc8\""
        );
        assert_eq!(enc("true"), "true");
        assert_eq!(enc("nil"), "null");
        assert_eq!(enc("cjson.null"), "null");
    }

    #[test]
    fn encode_strings_are_bytes() {
        let out = bytes("return cjson.encode('\\255\\8\\12\\r\\t')");
        assert_eq!(out, b"\"\xff\\b\\f\\r\\t\"");
    }

    #[test]
    fn encode_tables() {
        assert_eq!(enc("{}"), "{}");
        assert_eq!(enc("{1,2,3}"), "[1,2,3]");
        assert_eq!(enc("{1,nil,3}"), "[1,null,3]");
        assert_eq!(enc("{a={b={}}}"), "{\"a\":{\"b\":{}}}");
        assert_eq!(
            enc("{[1]=1,[2]=2,[10]=10}"),
            "[1,2,null,null,null,null,null,null,null,10]"
        );
        assert_eq!(enc("{[1.5]=1}"), "{\"1.5\":1}");
        assert_eq!(enc("{[-1]=1}"), "{\"-1\":1}");
        assert_eq!(enc("{{1e-20}}"), "[[1e-20]]");
        assert_eq!(enc("{-0.0}"), "[-0]");
    }

    #[test]
    fn sparse_arrays() {
        assert_eq!(
            err("cjson.encode({[11]=1})"),
            "Cannot serialise table: excessively sparse array"
        );
        assert_eq!(
            err("cjson.encode({[1]=1,[100]=2})"),
            "Cannot serialise table: excessively sparse array"
        );
        let lua = lua();
        let r: (bool, i32, i32) = eval(&lua, "return cjson.encode_sparse_array()");
        assert_eq!(r, (false, 2, 10));
        let r: (bool, i32, i32) = eval(&lua, "return cjson.encode_sparse_array(true)");
        assert_eq!(r, (true, 2, 10));
        let s: String = eval(&lua, "return cjson.encode({[11]=1})");
        assert_eq!(s, "{\"11\":1}");
        let s: String = eval(
            &lua,
            "cjson.encode_sparse_array(false, 0); return cjson.encode({[4]=1})",
        );
        assert_eq!(s, "[null,null,null,1]");
    }

    #[test]
    fn encode_errors() {
        assert_eq!(
            err("cjson.encode(function() end)"),
            "Cannot serialise function: type not supported"
        );
        assert_eq!(
            err("cjson.encode({[true]=1})"),
            "Cannot serialise boolean: table key must be a number or string"
        );
        assert_eq!(
            err("cjson.encode(0/0)"),
            "Cannot serialise number: must not be NaN or Inf"
        );
        assert_eq!(
            err("cjson.encode()"),
            "bad argument #1 to 'encode' (expected 1 argument)"
        );
        assert_eq!(
            err("cjson.encode(1, 2)"),
            "bad argument #1 to 'encode' (expected 1 argument)"
        );
        assert_eq!(
            err("local t = {} t[1] = t cjson.encode(t)"),
            "Cannot serialise, excessive nesting (1001)"
        );
        assert_eq!(
            err("cjson.encode_max_depth(2) cjson.encode({{{}}})"),
            "Cannot serialise, excessive nesting (3)"
        );
    }

    #[test]
    fn invalid_numbers_option() {
        let lua = lua();
        let r: Value = eval(&lua, "return cjson.encode_invalid_numbers('null')");
        assert_eq!(r.to_string().unwrap(), "null");
        let s: String = eval(&lua, "return cjson.encode({1/0, 0/0})");
        assert_eq!(s, "[null,null]");
        let s: String = eval(
            &lua,
            "cjson.encode_invalid_numbers(true) return cjson.encode({1/0, -1/0, 0/0})",
        );
        assert_eq!(s, "[inf,-inf,nan]");
    }

    #[test]
    fn number_precision() {
        let lua = lua();
        let s: String = eval(
            &lua,
            "cjson.encode_number_precision(3) return cjson.encode(math.pi)",
        );
        assert_eq!(s, "3.14");
        assert_eq!(
            err("cjson.encode_number_precision(15)"),
            "bad argument #1 to 'encode_number_precision' (expected integer between 1 and 14)"
        );
        assert_eq!(
            err("cjson.encode_max_depth(1, 2)"),
            "bad argument #2 to 'encode_max_depth' (found too many arguments)"
        );
        assert_eq!(
            err("cjson.encode_keep_buffer('maybe')"),
            "bad argument #1 to 'encode_keep_buffer' (invalid option 'maybe')"
        );
        // Each table from cjson.new() has its own settings.
        let s: String = eval(&lua, "return cjson.new().encode(math.pi)");
        assert_eq!(s, "3.1415926535898");
    }

    #[test]
    fn decode_values() {
        let lua = lua();
        let r: (f64, f64, String, bool) = eval(
            &lua,
            r#"local t = cjson.decode('{"a":[1,2.5,"x"],"b":true}')
               return t.a[1], t.a[2], t.a[3], t.b"#,
        );
        assert_eq!(r, (1.0, 2.5, "x".to_string(), true));
        let r: bool = eval(&lua, "return cjson.decode('null') == cjson.null");
        assert!(r);
        let r: bool = eval(&lua, "return cjson.decode('[null]')[1] == cjson.null");
        assert!(r);
        let r: f64 = eval(&lua, "return cjson.decode('12345678901234567890')");
        assert_eq!(r, 12345678901234567890.0);
        let r: f64 = eval(&lua, "return cjson.decode(' -1.5e3 ')");
        assert_eq!(r, -1500.0);
        let r: f64 = eval(&lua, "return cjson.decode('0x10')");
        assert_eq!(r, 16.0);
        let r: bool = eval(&lua, "local n = cjson.decode('nan') return n ~= n");
        assert!(r);
        let r: f64 = eval(&lua, "return cjson.decode('-Infinity')");
        assert_eq!(r, f64::NEG_INFINITY);
        let r: f64 = eval(&lua, "return cjson.decode(42)");
        assert_eq!(r, 42.0);
    }

    #[test]
    fn decode_strings() {
        assert_eq!(
            bytes(r#"return cjson.decode('"a\\/b\\u00e9\\ud83d\\ude00"')"#),
            "a/bé😀".as_bytes()
        );
        assert_eq!(bytes("return cjson.decode('\"\\255\\1\"')"), b"\xff\x01");
        assert_eq!(bytes(r#"return cjson.decode('"\\u0000"')"#), b"\0");
    }

    #[test]
    fn decode_errors() {
        assert_eq!(
            err("cjson.decode('x')"),
            "Expected value but found invalid token at character 1"
        );
        assert_eq!(
            err("cjson.decode('')"),
            "Expected value but found T_END at character 1"
        );
        assert_eq!(
            err("cjson.decode('[1,2')"),
            "Expected comma or array end but found T_END at character 5"
        );
        assert_eq!(
            err("cjson.decode('{1:2}')"),
            "Expected object key string but found T_NUMBER at character 2"
        );
        assert_eq!(
            err("cjson.decode('{\"a\" 1}')"),
            "Expected colon but found T_NUMBER at character 6"
        );
        assert_eq!(
            err("cjson.decode('[1] x')"),
            "Expected the end but found invalid token at character 5"
        );
        assert_eq!(
            err(r#"cjson.decode('"ab')"#),
            "Expected value but found unexpected end of string at character 4"
        );
        assert_eq!(
            err(r#"cjson.decode('"a\\qb"')"#),
            "Expected value but found invalid escape code at character 3"
        );
        assert_eq!(
            err(r#"cjson.decode('"\\udc00"')"#),
            "Expected value but found invalid unicode escape code at character 2"
        );
        assert_eq!(
            err("cjson.decode('-')"),
            "Expected value but found invalid number at character 1"
        );
        assert_eq!(
            err("cjson.decode('tru')"),
            "Expected value but found invalid token at character 1"
        );
        assert_eq!(
            err("cjson.decode('\\0a')"),
            "JSON parser does not support UTF-16 or UTF-32"
        );
        assert_eq!(
            err("cjson.decode(string.rep('[', 1001))"),
            "Found too many nested data structures (1001) at character 1001"
        );
        assert_eq!(
            err("cjson.decode()"),
            "bad argument #1 to 'decode' (expected 1 argument)"
        );
        assert_eq!(
            err("cjson.decode({})"),
            "bad argument #1 to 'decode' (string expected, got table)"
        );
        assert_eq!(
            err("cjson.decode_invalid_numbers(false) cjson.decode('0x10')"),
            "Expected value but found invalid number at character 1"
        );
    }

    #[test]
    fn decode_nul_ends_input() {
        let lua = lua();
        let r: f64 = eval(&lua, "return cjson.decode('[7]\\0garbage')[1]");
        assert_eq!(r, 7.0);
    }

    #[test]
    fn fields() {
        let lua = lua();
        let r: (String, String) = eval(&lua, "return cjson._NAME, cjson._VERSION");
        assert_eq!(r, ("cjson".to_string(), "2.1.0".to_string()));
        let r: String = eval(&lua, "return type(cjson.null)");
        assert_eq!(r, "userdata");
    }

    #[test]
    fn strtod_forms() {
        assert_eq!(strtod(b"1.", 0), Some((1.0, 2)));
        assert_eq!(strtod(b"-.5x", 0), Some((-0.5, 3)));
        assert_eq!(strtod(b"1e", 0), Some((1.0, 1)));
        assert_eq!(strtod(b"1e+5", 0), Some((1e5, 4)));
        assert_eq!(strtod(b"0x1.8p1", 0), Some((3.0, 7)));
        assert_eq!(strtod(b"0xg", 0), Some((0.0, 1)));
        assert_eq!(strtod(b"infinityx", 0), Some((f64::INFINITY, 8)));
        assert_eq!(strtod(b".", 0), None);
    }
}
