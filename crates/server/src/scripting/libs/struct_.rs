//! `struct`: lua-struct as Redis ships it, with the sizes of x86-64 Linux (`h` 2, `i` 4,
//! `l` and `T` 8 bytes, default maximum alignment 8, native order little-endian).
//!
//! Formats: `>` `<` (byte order), `!n` (maximum alignment, default off), `x` (a zero byte),
//! `b B h H l L T` and `i[n] I[n]` (integers, lower case signed; `n` up to 32 bytes), `f` `d`
//! (floats), `c[n]` (fixed-length string; `c0` takes its length from the string on pack and
//! from the previous result on unpack), `s` (zero-terminated string) and spaces.

use mlua::{Lua, MultiValue, Table, Value};

use super::{
    arg_error, check_number, check_string, lua_error, opt_integer, to_number, MAX_C_STACK,
};

const MAX_INT_SIZE: usize = 32;
const MAX_ALIGN: usize = 8;

/// Creates the `struct` table.
pub fn create(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set(
        "pack",
        lua.create_function(|lua, args: MultiValue| pack(lua, &args.into_vec()))?,
    )?;
    t.raw_set(
        "unpack",
        lua.create_function(|lua, args: MultiValue| unpack(lua, &args.into_vec()))?,
    )?;
    t.raw_set(
        "size",
        lua.create_function(|lua, args: MultiValue| size(lua, &args.into_vec()))?,
    )?;
    Ok(t)
}

#[derive(Clone, Copy)]
struct Header {
    little: bool,
    align: usize,
}

impl Header {
    fn new() -> Self {
        Header {
            little: true,
            align: 1,
        }
    }
}

/// A format string read up to its first NUL, as C reads it.
struct Format {
    bytes: Vec<u8>,
    pos: usize,
}

impl Format {
    fn new(s: &[u8]) -> Self {
        let end = s.iter().position(|&b| b == 0).unwrap_or(s.len());
        Format {
            bytes: s[..end].to_vec(),
            pos: 0,
        }
    }

    fn next(&mut self) -> Option<u8> {
        let c = self.bytes.get(self.pos).copied()?;
        self.pos += 1;
        Some(c)
    }

    /// A decimal count after an option, or `default` when there is none.
    fn num(&mut self, default: usize) -> mlua::Result<usize> {
        if !self.bytes.get(self.pos).is_some_and(u8::is_ascii_digit) {
            return Ok(default);
        }
        let mut a: i32 = 0;
        while let Some(&c) = self.bytes.get(self.pos).filter(|c| c.is_ascii_digit()) {
            let d = i32::from(c - b'0');
            if a > i32::MAX / 10 || a * 10 > i32::MAX - d {
                return Err(lua_error("integral size overflow"));
            }
            a = a * 10 + d;
            self.pos += 1;
        }
        Ok(a as usize)
    }

    /// The size of option `opt` (reading its count), 0 for options without one.
    fn opt_size(&mut self, opt: u8) -> mlua::Result<usize> {
        Ok(match opt {
            b'B' | b'b' | b'x' => 1,
            b'H' | b'h' => 2,
            b'L' | b'l' | b'T' | b'd' => 8,
            b'f' => 4,
            b'c' => self.num(1)?,
            b'i' | b'I' => {
                let sz = self.num(4)?;
                if sz > MAX_INT_SIZE {
                    return Err(lua_error(format!(
                        "integral size {sz} is larger than limit of {MAX_INT_SIZE}"
                    )));
                }
                sz
            }
            _ => 0,
        })
    }

    /// Applies a control option (`>`, `<`, `!n`, space) or rejects an unknown one.
    fn control(&mut self, opt: u8, h: &mut Header, fname: &str) -> mlua::Result<()> {
        match opt {
            b' ' => {}
            b'>' => h.little = false,
            b'<' => h.little = true,
            b'!' => {
                let a = self.num(MAX_ALIGN)?;
                if a == 0 || a & (a - 1) != 0 {
                    return Err(lua_error(format!("alignment {a} is not a power of 2")));
                }
                h.align = a;
            }
            _ => {
                let msg = format!("invalid format option '{}'", char::from(opt));
                return Err(arg_error(1, fname, &msg));
            }
        }
        Ok(())
    }
}

/// Padding before an item of `size` bytes at offset `len`.
fn to_align(len: usize, h: &Header, opt: u8, size: usize) -> usize {
    if size == 0 || opt == b'c' {
        return 0;
    }
    let size = size.min(h.align);
    (size.wrapping_sub(len & (size - 1))) & (size - 1)
}

/// The 64 bits C's `(unsigned long)` / `(unsigned long)(long)` casts give for `n` on x86-64.
fn int_bits(n: f64) -> u64 {
    if n < 0.0 {
        super::c_double_to_i64(n) as u64
    } else if n < 18_446_744_073_709_551_616.0 {
        n as u64
    } else {
        0
    }
}

fn pack(lua: &Lua, args: &[Value]) -> mlua::Result<mlua::String> {
    let fmt = check_string(lua, args, 1, "pack")?;
    let mut fmt = Format::new(&fmt.as_bytes());
    let mut h = Header::new();
    let mut arg = 2;
    let mut out: Vec<u8> = Vec::new();
    while let Some(opt) = fmt.next() {
        let mut size = fmt.opt_size(opt)?;
        let pad = to_align(out.len(), &h, opt, size);
        out.resize(out.len() + pad, 0);
        match opt {
            b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                let mut v = int_bits(check_number(lua, args, arg, "pack")?);
                arg += 1;
                let mut buf = vec![0u8; size];
                for b in buf.iter_mut() {
                    *b = v as u8;
                    v >>= 8;
                }
                if !h.little {
                    buf.reverse();
                }
                out.extend_from_slice(&buf);
            }
            b'x' => out.push(0),
            b'f' => {
                let f = check_number(lua, args, arg, "pack")? as f32;
                arg += 1;
                out.extend_from_slice(&if h.little {
                    f.to_le_bytes()
                } else {
                    f.to_be_bytes()
                });
            }
            b'd' => {
                let d = check_number(lua, args, arg, "pack")?;
                arg += 1;
                out.extend_from_slice(&if h.little {
                    d.to_le_bytes()
                } else {
                    d.to_be_bytes()
                });
            }
            b'c' | b's' => {
                let s = check_string(lua, args, arg, "pack")?;
                arg += 1;
                let s = s.as_bytes();
                if size == 0 {
                    size = s.len();
                }
                if s.len() < size {
                    return Err(arg_error(arg, "pack", "string too short"));
                }
                out.extend_from_slice(&s[..size]);
                if opt == b's' {
                    out.push(0);
                }
            }
            _ => fmt.control(opt, &mut h, "pack")?,
        }
    }
    lua.create_string(&out)
}

/// A result of `struct.unpack` before it goes to Lua.
enum Item {
    Num(f64),
    Str(Vec<u8>),
}

fn read_int(b: &[u8], little: bool, signed: bool) -> f64 {
    let mut l: u64 = 0;
    let mut push = |byte: u8| l = (l << 8) | u64::from(byte);
    if little {
        b.iter().rev().for_each(|&x| push(x));
    } else {
        b.iter().for_each(|&x| push(x));
    }
    if !signed {
        return l as f64;
    }
    // The shift count wraps modulo 64 for sizes above 8, as x86 shifts do.
    let mask = u64::MAX.wrapping_shl((b.len() * 8 - 1) as u32);
    if l & mask != 0 {
        l |= mask;
    }
    l as i64 as f64
}

fn unpack(lua: &Lua, args: &[Value]) -> mlua::Result<MultiValue> {
    let fmt = check_string(lua, args, 1, "unpack")?;
    let data = check_string(lua, args, 2, "unpack")?;
    let data = data.as_bytes();
    let ld = data.len();
    let pos = opt_integer(lua, args, 3, "unpack", 1)? as u64 as usize;
    if pos == 0 {
        return Err(arg_error(3, "unpack", "offset must be 1 or greater"));
    }
    let mut pos = pos - 1;
    let mut fmt = Format::new(&fmt.as_bytes());
    let mut h = Header::new();
    let mut items: Vec<Item> = Vec::new();
    let too_short = || arg_error(2, "unpack", "data string too short");
    while let Some(opt) = fmt.next() {
        let mut size = fmt.opt_size(opt)?;
        pos = pos.wrapping_add(to_align(pos, &h, opt, size));
        if size > ld || pos > ld - size {
            return Err(too_short());
        }
        if args.len().max(3) + items.len() + 2 > MAX_C_STACK {
            return Err(lua_error("stack overflow (too many results)"));
        }
        match opt {
            b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                let signed = opt.is_ascii_lowercase();
                items.push(Item::Num(read_int(
                    &data[pos..pos + size],
                    h.little,
                    signed,
                )));
            }
            b'x' => {}
            b'f' => {
                let b: [u8; 4] = data[pos..pos + 4].try_into().unwrap_or_default();
                let f = if h.little {
                    f32::from_le_bytes(b)
                } else {
                    f32::from_be_bytes(b)
                };
                items.push(Item::Num(f64::from(f)));
            }
            b'd' => {
                let b: [u8; 8] = data[pos..pos + 8].try_into().unwrap_or_default();
                let d = if h.little {
                    f64::from_le_bytes(b)
                } else {
                    f64::from_be_bytes(b)
                };
                items.push(Item::Num(d));
            }
            b'c' => {
                if size == 0 {
                    let n = match items.last() {
                        Some(Item::Num(n)) => Some(*n),
                        Some(Item::Str(s)) => {
                            let v = Value::String(lua.create_string(s)?);
                            to_number(lua, Some(&v))
                        }
                        None => None,
                    };
                    let Some(n) = n else {
                        return Err(lua_error("format 'c0' needs a previous size"));
                    };
                    size = int_bits(n) as usize;
                    items.pop();
                    if size > ld || pos > ld - size {
                        return Err(too_short());
                    }
                }
                items.push(Item::Str(data[pos..pos + size].to_vec()));
            }
            b's' => {
                let Some(len) = data[pos..].iter().position(|&b| b == 0) else {
                    return Err(lua_error("unfinished string in data"));
                };
                items.push(Item::Str(data[pos..pos + len].to_vec()));
                size = len + 1;
            }
            _ => fmt.control(opt, &mut h, "unpack")?,
        }
        pos += size;
    }
    let mut out = Vec::with_capacity(items.len() + 1);
    for item in items {
        out.push(match item {
            Item::Num(n) => Value::Number(n),
            Item::Str(s) => Value::String(lua.create_string(&s)?),
        });
    }
    out.push(Value::Number(pos.wrapping_add(1) as i64 as f64));
    Ok(MultiValue::from_vec(out))
}

fn size(lua: &Lua, args: &[Value]) -> mlua::Result<f64> {
    let fmt = check_string(lua, args, 1, "size")?;
    let mut fmt = Format::new(&fmt.as_bytes());
    let mut h = Header::new();
    let mut pos: usize = 0;
    while let Some(opt) = fmt.next() {
        let size = fmt.opt_size(opt)?;
        pos += to_align(pos, &h, opt, size);
        if opt == b's' {
            return Err(arg_error(1, "size", "option 's' has no fixed size"));
        }
        if opt == b'c' && size == 0 {
            return Err(arg_error(1, "size", "option 'c0' has no fixed size"));
        }
        if !opt.is_ascii_alphanumeric() {
            fmt.control(opt, &mut h, "size")?;
        }
        pos += size;
    }
    Ok(pos as f64)
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{bytes, err, eval, lua};

    #[test]
    fn pack_integers() {
        assert_eq!(bytes("return struct.pack('>I2', 258)"), b"\x01\x02");
        assert_eq!(bytes("return struct.pack('<I2', 258)"), b"\x02\x01");
        assert_eq!(bytes("return struct.pack('I2', 258)"), b"\x02\x01");
        assert_eq!(bytes("return struct.pack('>i', -2)"), b"\xff\xff\xff\xfe");
        assert_eq!(bytes("return struct.pack('b', -1)"), b"\xff");
        assert_eq!(bytes("return struct.pack('>l', 1)"), b"\0\0\0\0\0\0\0\x01");
        assert_eq!(bytes("return struct.pack('>H', 65537)"), b"\x00\x01");
        assert_eq!(
            bytes("return struct.pack('<i10', -1)"),
            b"\xff\xff\xff\xff\xff\xff\xff\xff\0\0"
        );
        assert_eq!(bytes("return struct.pack('>I3', '66051')"), b"\x01\x02\x03");
    }

    #[test]
    fn pack_floats_strings_padding() {
        assert_eq!(
            bytes("return struct.pack('>d', 1.5)"),
            b"\x3f\xf8\0\0\0\0\0\0"
        );
        assert_eq!(bytes("return struct.pack('<f', 0.5)"), b"\0\0\0\x3f");
        assert_eq!(bytes("return struct.pack('c3', 'abcdef')"), b"abc");
        assert_eq!(bytes("return struct.pack('c0', 'abcdef')"), b"abcdef");
        assert_eq!(bytes("return struct.pack('s', 'ab')"), b"ab\0");
        assert_eq!(bytes("return struct.pack('bxb', 1, 2)"), b"\x01\0\x02");
        assert_eq!(
            bytes("return struct.pack('!>bi', 1, 2)"),
            b"\x01\0\0\0\0\0\0\x02"
        );
        assert_eq!(
            bytes("return struct.pack('!2>bi', 1, 2)"),
            b"\x01\0\0\0\0\x02"
        );
        assert_eq!(bytes("return struct.pack('>bi', 1, 2)"), b"\x01\0\0\0\x02");
    }

    #[test]
    fn unpack_values() {
        let lua = lua();
        let r: (f64, f64) = eval(&lua, "return struct.unpack('>I2', '\\1\\2')");
        assert_eq!(r, (258.0, 3.0));
        let r: (f64, f64, f64) = eval(&lua, "return struct.unpack('<hH', '\\255\\255\\255\\255')");
        assert_eq!(r, (-1.0, 65535.0, 5.0));
        let r: (String, String, f64) = eval(&lua, "return struct.unpack('sc2', 'ab\\0cde')");
        assert_eq!(r, ("ab".into(), "cd".into(), 6.0));
        let r: (String, f64) = eval(&lua, "return struct.unpack('bc0', '\\3abcd')");
        assert_eq!(r, ("abc".into(), 5.0));
        let r: (f64, f64) = eval(&lua, "return struct.unpack('>I2', 'xx\\1\\2', 3)");
        assert_eq!(r, (258.0, 5.0));
        let r: (f64, f64) = eval(&lua, "return struct.unpack('>d', struct.pack('>d', -0.1))");
        assert_eq!(r, (-0.1, 9.0));
        let r: (f64, f64) = eval(
            &lua,
            "return struct.unpack('<i16', string.rep('\\255', 16))",
        );
        assert_eq!(r, (-1.0, 17.0));
    }

    #[test]
    fn size() {
        let lua = lua();
        let r: f64 = eval(&lua, "return struct.size('>bhilT')");
        assert_eq!(r, 23.0);
        let r: f64 = eval(&lua, "return struct.size('!bd')");
        assert_eq!(r, 16.0);
        let r: f64 = eval(&lua, "return struct.size('c10 z')");
        assert_eq!(r, 10.0);
        assert_eq!(
            err("struct.size('s')"),
            "bad argument #1 to 'size' (option 's' has no fixed size)"
        );
        assert_eq!(
            err("struct.size('c0')"),
            "bad argument #1 to 'size' (option 'c0' has no fixed size)"
        );
    }

    #[test]
    fn errors() {
        assert_eq!(
            err("struct.pack('>I2')"),
            "bad argument #2 to 'pack' (number expected, got no value)"
        );
        assert_eq!(
            err("struct.pack('c5', 'ab')"),
            "bad argument #3 to 'pack' (string too short)"
        );
        assert_eq!(
            err("struct.pack('=I2', 1)"),
            "bad argument #1 to 'pack' (invalid format option '=')"
        );
        assert_eq!(
            err("struct.pack('i33', 1)"),
            "integral size 33 is larger than limit of 32"
        );
        assert_eq!(
            err("struct.pack('!3i', 1)"),
            "alignment 3 is not a power of 2"
        );
        assert_eq!(
            err("struct.pack('i99999999999', 1)"),
            "integral size overflow"
        );
        assert_eq!(
            err("struct.unpack('>I4', 'abc')"),
            "bad argument #2 to 'unpack' (data string too short)"
        );
        assert_eq!(
            err("struct.unpack('s', 'abc')"),
            "unfinished string in data"
        );
        assert_eq!(
            err("struct.unpack('c0', 'abc')"),
            "format 'c0' needs a previous size"
        );
        assert_eq!(
            err("struct.unpack('b', 'abc', 0)"),
            "bad argument #3 to 'unpack' (offset must be 1 or greater)"
        );
        assert_eq!(
            err("struct.unpack('b', 'abc', -1)"),
            "bad argument #2 to 'unpack' (data string too short)"
        );
        assert_eq!(
            err("struct.pack()"),
            "bad argument #1 to 'pack' (string expected, got no value)"
        );
    }
}
