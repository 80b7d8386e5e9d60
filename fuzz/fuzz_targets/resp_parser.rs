//! Fuzzes `RequestParser` (whole buffer vs. chunked delivery) and `decode_value`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use skerry_resp::{decode_value, encode_value, Limits, Parsed, ProtocolError, RequestParser};

type Outcome = (Vec<Vec<Vec<u8>>>, Option<ProtocolError>);

/// Parses `input` delivered in chunks of the sizes produced by `next_chunk`,
/// like a server: append, parse until Incomplete, drop consumed bytes.
fn run(input: &[u8], limits: &Limits, mut next_chunk: impl FnMut() -> usize) -> Outcome {
    let mut p = RequestParser::new();
    let mut acc: Vec<u8> = Vec::new();
    let mut start = 0;
    let mut fed = 0;
    let mut reqs = Vec::new();
    let mut last_hint = 0usize;
    loop {
        if fed < input.len() {
            let n = next_chunk().clamp(1, input.len() - fed);
            acc.extend_from_slice(&input[fed..fed + n]);
            fed += n;
        }
        loop {
            let buf = &acc[start..];
            let avail = buf.len();
            match p.parse(buf, limits) {
                Ok(Parsed::Complete { consumed }) => {
                    assert!(consumed > 0 && consumed <= avail);
                    assert!(
                        avail >= last_hint,
                        "completed with fewer bytes than the hint"
                    );
                    assert_eq!(p.args(buf).len(), p.argc());
                    let args: Vec<Vec<u8>> = p.args(buf).map(|a| a.to_vec()).collect();
                    for i in 0..p.argc() {
                        assert_eq!(p.arg(buf, i), &args[i][..]);
                    }
                    reqs.push(args);
                    start += consumed;
                    last_hint = 0;
                }
                Ok(Parsed::Incomplete { hint }) => {
                    assert!(hint > avail, "hint must ask for more bytes");
                    last_hint = hint;
                    break;
                }
                Err(e) => {
                    assert!(avail >= last_hint, "error with fewer bytes than the hint");
                    assert!(!e.to_string().is_empty());
                    return (reqs, Some(e));
                }
            }
        }
        if fed == input.len() {
            return (reqs, None);
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, input)) = data.split_first() else {
        return;
    };
    // Small limits sometimes, so that limit paths are reachable.
    let limits = if mode & 0x80 != 0 {
        Limits {
            max_bulk_len: 64,
            max_inline_len: 32,
            max_multibulk_len: 8,
            unauthenticated: mode & 0x40 != 0,
        }
    } else {
        Limits::default()
    };
    let whole = run(input, &limits, || usize::MAX);
    let chunked = match mode & 0x7f {
        0 => run(input, &limits, || 1),
        m if m < 64 => run(input, &limits, || m as usize),
        m => {
            // pseudo-random chunk sizes seeded by the mode byte
            let mut s = u32::from(m).wrapping_mul(2_654_435_761) | 1;
            run(input, &limits, move || {
                s ^= s << 13;
                s ^= s >> 17;
                s ^= s << 5;
                (s % 17) as usize + 1
            })
        }
    };
    assert_eq!(
        whole, chunked,
        "chunked parsing differs from whole-buffer parsing"
    );

    // Reply decoder: never panics; a decoded value re-encodes and decodes to
    // the same value (modulo NaN and lossy simple strings).
    if let Ok(Some((v, consumed))) = decode_value(input) {
        assert!(consumed <= input.len());
        let mut out = Vec::new();
        encode_value(&mut out, &v);
        let (v2, n2) = decode_value(&out)
            .expect("re-encoded value decodes")
            .expect("complete");
        assert_eq!(n2, out.len());
        let mut out2 = Vec::new();
        encode_value(&mut out2, &v2);
        assert_eq!(out, out2);
    }
});
