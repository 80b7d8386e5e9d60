//! Property tests: request encoding/parsing, value encoding/decoding, no panics.

use proptest::prelude::*;
use skerry_resp::*;

type Outcome = (Vec<Vec<Vec<u8>>>, Option<ProtocolError>);

/// Feeds `input` to a parser in chunks of the given sizes (cycled), like a
/// server: append, parse until Incomplete, drop consumed bytes.
fn run_chunked(input: &[u8], chunks: &[usize], limits: &Limits) -> Outcome {
    let mut p = RequestParser::new();
    let mut acc = Vec::new();
    let mut start = 0;
    let mut fed = 0;
    let mut ci = 0;
    let mut reqs = Vec::new();
    let mut last_hint = 0;
    loop {
        if fed < input.len() {
            let want = if chunks.is_empty() {
                usize::MAX
            } else {
                chunks[ci % chunks.len()]
            };
            ci += 1;
            let n = want.clamp(1, input.len() - fed);
            acc.extend_from_slice(&input[fed..fed + n]);
            fed += n;
        }
        loop {
            let buf = &acc[start..];
            match p.parse(buf, limits) {
                Ok(Parsed::Complete { consumed }) => {
                    assert!(consumed > 0 && consumed <= buf.len());
                    assert!(buf.len() >= last_hint);
                    reqs.push(p.args(buf).map(<[u8]>::to_vec).collect());
                    start += consumed;
                    last_hint = 0;
                }
                Ok(Parsed::Incomplete { hint }) => {
                    assert!(hint > buf.len());
                    last_hint = hint;
                    break;
                }
                Err(e) => {
                    assert!(buf.len() >= last_hint);
                    return (reqs, Some(e));
                }
            }
        }
        if fed == input.len() {
            return (reqs, None);
        }
    }
}

fn arb_args() -> impl Strategy<Value = Vec<Vec<u8>>> {
    prop::collection::vec(prop::collection::vec(any::<u8>(), 0..40), 0..8)
}

fn chunks() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(1usize..24, 1..16)
}

/// Quotes an argument for an inline request so that `sdssplitargs` yields it back.
fn quote(arg: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    for &c in arg {
        match c {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'"' => out.extend_from_slice(b"\\\""),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x20..=0x7e => out.push(c),
            _ => out.extend_from_slice(format!("\\x{c:02x}").as_bytes()),
        }
    }
    out.push(b'"');
}

fn arb_value() -> impl Strategy<Value = Value> {
    let no_crlf = prop::collection::vec(any::<u8>(), 0..20).prop_map(|v| {
        v.into_iter()
            .filter(|&c| c != b'\r' && c != b'\n')
            .collect()
    });
    let leaf = prop_oneof![
        no_crlf.clone().prop_map(Value::Simple),
        prop::collection::vec(any::<u8>(), 0..20).prop_map(Value::Error),
        any::<i64>().prop_map(Value::Integer),
        prop::collection::vec(any::<u8>(), 0..40).prop_map(Value::Bulk),
        Just(Value::Null),
        Just(Value::NullArray),
        any::<f64>()
            .prop_filter("NaN != NaN", |d| !d.is_nan())
            .prop_map(Value::Double),
        any::<bool>().prop_map(Value::Boolean),
        "-?[0-9]{1,40}".prop_map(|s| Value::BigNumber(s.into_bytes())),
        (any::<[u8; 3]>(), prop::collection::vec(any::<u8>(), 0..20))
            .prop_map(|(f, t)| Value::Verbatim(f, t)),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Set),
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Push),
            prop::collection::vec((inner.clone(), inner.clone()), 0..4).prop_map(Value::Map),
            (
                prop::collection::vec((inner.clone(), inner.clone()), 0..3),
                inner
            )
                .prop_map(|(a, v)| Value::Attribute(a, Box::new(v))),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn multibulk_roundtrip(cmds in prop::collection::vec(arb_args(), 1..6), split in chunks()) {
        let mut input = Vec::new();
        for c in &cmds {
            let refs: Vec<&[u8]> = c.iter().map(|a| a.as_slice()).collect();
            encode_command(&mut input, &refs);
        }
        let limits = Limits::default();
        let whole = run_chunked(&input, &[], &limits);
        prop_assert_eq!(&whole, &(cmds.clone(), None));
        prop_assert_eq!(run_chunked(&input, &split, &limits), whole.clone());
        prop_assert_eq!(run_chunked(&input, &[1], &limits), whole);
    }

    #[test]
    fn inline_quoted_roundtrip(cmds in prop::collection::vec(
        prop::collection::vec(prop::collection::vec(any::<u8>(), 0..20), 1..6), 1..5),
        crlf in any::<bool>(), split in chunks())
    {
        let mut input = Vec::new();
        for c in &cmds {
            for (i, a) in c.iter().enumerate() {
                if i > 0 {
                    input.push(b' ');
                }
                quote(a, &mut input);
            }
            input.extend_from_slice(if crlf { b"\r\n" } else { b"\n" });
        }
        let limits = Limits::default();
        let whole = run_chunked(&input, &[], &limits);
        prop_assert_eq!(&whole, &(cmds.clone(), None));
        prop_assert_eq!(run_chunked(&input, &split, &limits), whole);
    }

    #[test]
    fn inline_plain_tokens(cmds in prop::collection::vec(
        prop::collection::vec("[a-zA-Z0-9:_.-]{1,12}", 0..6), 1..5))
    {
        let mut input = Vec::new();
        for c in &cmds {
            input.extend_from_slice(c.join("  ").as_bytes());
            input.extend_from_slice(b"\r\n");
        }
        let expected: Vec<Vec<Vec<u8>>> = cmds
            .iter()
            .map(|c| c.iter().map(|s| s.as_bytes().to_vec()).collect())
            .collect();
        prop_assert_eq!(run_chunked(&input, &[], &Limits::default()), (expected, None));
    }

    #[test]
    fn parse_never_panics_and_chunking_is_invisible(
        input in prop::collection::vec(any::<u8>(), 0..300),
        split in chunks(),
        small in any::<bool>())
    {
        let limits = if small {
            Limits { max_bulk_len: 16, max_inline_len: 12, max_multibulk_len: 4, unauthenticated: false }
        } else {
            Limits::default()
        };
        let whole = run_chunked(&input, &[], &limits);
        prop_assert_eq!(run_chunked(&input, &split, &limits), whole.clone());
        prop_assert_eq!(run_chunked(&input, &[1], &limits), whole);
    }

    #[test]
    fn resp_shaped_input_never_panics(
        parts in prop::collection::vec(prop_oneof![
            Just(&b"*"[..]), Just(&b"$"[..]), Just(&b"\r\n"[..]), Just(&b"\r"[..]),
            Just(&b"\n"[..]), Just(&b"1"[..]), Just(&b"3"[..]), Just(&b"-1"[..]),
            Just(&b"0"[..]), Just(&b"abc"[..]), Just(&b"\""[..]), Just(&b"'"[..]),
            Just(&b"\\x4"[..]), Just(&b" "[..]), Just(&b"\0"[..]),
        ], 0..60),
        split in chunks())
    {
        let input: Vec<u8> = parts.concat();
        let limits = Limits::default();
        let whole = run_chunked(&input, &[], &limits);
        prop_assert_eq!(run_chunked(&input, &split, &limits), whole);
        let _ = decode_value(&input);
    }

    #[test]
    fn value_roundtrip(v in arb_value()) {
        let mut out = Vec::new();
        encode_value(&mut out, &v);
        let (d, n) = decode_value(&out).unwrap().unwrap();
        prop_assert_eq!(n, out.len());
        prop_assert_eq!(&d, &v);
        // any strict prefix is incomplete, never an error
        let cut = out.len() / 2;
        prop_assert_eq!(decode_value(&out[..cut]), Ok(None));
        // pipelined values decode one after the other
        let mut two = out.clone();
        two.extend_from_slice(&out);
        let (d2, n2) = decode_value(&two).unwrap().unwrap();
        prop_assert_eq!(n2, out.len());
        prop_assert_eq!(d2, v);
    }

    #[test]
    fn decode_never_panics(input in prop::collection::vec(any::<u8>(), 0..200)) {
        if let Ok(Some((_, n))) = decode_value(&input) {
            prop_assert!(n <= input.len());
        }
    }

    #[test]
    fn g17_roundtrips(d in any::<f64>()) {
        let mut out = Vec::new();
        format_double_g17(d, &mut out);
        let s = std::str::from_utf8(&out).unwrap();
        if d.is_nan() {
            prop_assert_eq!(s, "nan");
        } else {
            let back: f64 = s.parse().unwrap();
            prop_assert_eq!(back.to_bits(), d.to_bits());
        }
    }

    #[test]
    fn d2string_roundtrips(d in prop_oneof![
        any::<f64>(),
        (any::<i64>(), -30i32..30).prop_map(|(m, e)| m as f64 * 10f64.powi(e)),
        any::<u64>().prop_map(|b| f64::from_bits(b & 0x000f_ffff_ffff_ffff)),
        (-(1i64 << 62)..=(1i64 << 62)).prop_map(|n| n as f64),
    ]) {
        let mut out = Vec::new();
        format_double(d, &mut out);
        let s = std::str::from_utf8(&out).unwrap();
        // fpconv writes up to 24 characters, plus the sign (e.g. -106873386028644920000000).
        prop_assert!(out.len() <= 25, "{}", s);
        if d.is_nan() {
            prop_assert_eq!(s, "nan");
        } else {
            let back: f64 = s.parse().unwrap();
            prop_assert_eq!(back.to_bits(), d.to_bits(), "{}", s);
        }
        if let Some(n) = double_to_i64_exact(d) {
            if d != 0.0 {
                prop_assert_eq!(s, n.to_string());
            }
        }
        let mut short = Vec::new();
        format_double_shortest(d, &mut short);
        let t = std::str::from_utf8(&short).unwrap();
        prop_assert!(short.len() <= 25, "{}", t);
        if d.is_nan() {
            prop_assert!(t == "nan" || t == "-nan", "{}", t);
        } else {
            let back: f64 = t.parse().unwrap();
            prop_assert_eq!(back.to_bits(), d.to_bits(), "{}", t);
            // At most 17 significant digits, never more than needed to round-trip + 1.
            let digits = t.split('e').next().unwrap().bytes().filter(u8::is_ascii_digit)
                .skip_while(|&c| c == b'0').count();
            prop_assert!(digits <= 17 || !t.contains('.'), "{}", t);
        }
    }

    #[test]
    fn reply_encoders_decode(n in any::<i64>(), b in prop::collection::vec(any::<u8>(), 0..50),
                             d in any::<f64>(), flag in any::<bool>())
    {
        let dec = |out: &[u8]| {
            let (v, used) = decode_value(out).unwrap().unwrap();
            assert_eq!(used, out.len());
            v
        };
        let mut o = Vec::new();
        integer(&mut o, n);
        prop_assert_eq!(dec(&o), Value::Integer(n));
        o.clear();
        bulk_int(&mut o, n);
        prop_assert_eq!(dec(&o), Value::Bulk(n.to_string().into_bytes()));
        o.clear();
        bulk(&mut o, &b);
        prop_assert_eq!(dec(&o), Value::Bulk(b.clone()));
        o.clear();
        error(&mut o, &b);
        prop_assert!(matches!(dec(&o), Value::Error(_)));
        o.clear();
        boolean(&mut o, flag, Proto::Resp3);
        prop_assert_eq!(dec(&o), Value::Boolean(flag));
        o.clear();
        boolean(&mut o, flag, Proto::Resp2);
        prop_assert_eq!(dec(&o), Value::Integer(flag as i64));
        o.clear();
        verbatim(&mut o, b"txt", &b, Proto::Resp3);
        prop_assert_eq!(dec(&o), Value::Verbatim(*b"txt", b.clone()));
        if !d.is_nan() {
            o.clear();
            double(&mut o, d, Proto::Resp3);
            prop_assert_eq!(dec(&o), Value::Double(d));
            o.clear();
            double(&mut o, d, Proto::Resp2);
            let Value::Bulk(s) = dec(&o) else { panic!("not a bulk") };
            let back: f64 = std::str::from_utf8(&s).unwrap().parse().unwrap();
            prop_assert_eq!(back, d);
        }
    }
}
