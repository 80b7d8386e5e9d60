//! LZF (the format of Redis's compressed RDB strings): decompression, and a simple
//! compressor whose output Redis's `lzf_decompress` reads.

/// The most output one input byte of LZF can describe: a back reference of 3 bytes
/// copies at most 264 bytes.
const MAX_EXPANSION: usize = 88;

/// LZF decompression of `input` into exactly `out_len` bytes; None when the input does not
/// describe that (truncated, a reference before the start, a different length). Never
/// reserves more than the input can expand to.
pub fn decompress(input: &[u8], out_len: usize) -> Option<Vec<u8>> {
    if out_len > input.len().saturating_mul(MAX_EXPANSION) {
        return None;
    }
    let mut out: Vec<u8> = Vec::with_capacity(out_len);
    let mut i = 0;
    while i < input.len() {
        let ctrl = usize::from(input[i]);
        i += 1;
        if ctrl < 32 {
            // A run of ctrl + 1 literal bytes.
            let run = ctrl + 1;
            out.extend_from_slice(input.get(i..i + run)?);
            i += run;
        } else {
            // A back reference: length and distance.
            let mut n = ctrl >> 5;
            if n == 7 {
                n += usize::from(*input.get(i)?);
                i += 1;
            }
            let back = ((ctrl & 0x1f) << 8) + usize::from(*input.get(i)?) + 1;
            i += 1;
            let from = out.len().checked_sub(back)?;
            for k in 0..n + 2 {
                let b = out[from + k];
                out.push(b);
            }
        }
        if out.len() > out_len {
            return None;
        }
    }
    (out.len() == out_len).then_some(out)
}

/// LZF compression of `input` (a greedy compressor with a hash of 3-byte prefixes), or
/// None when the result would not be shorter than `input`.
pub fn compress(input: &[u8]) -> Option<Vec<u8>> {
    const MAX_OFF: usize = 1 << 13;
    const MAX_REF: usize = (1 << 8) + (1 << 3);
    const HLOG: usize = 14;
    if input.len() < 4 {
        return None;
    }
    let mut table = vec![usize::MAX; 1 << HLOG];
    let hash = |p: usize| -> usize {
        let v =
            (u32::from(input[p]) << 16) | (u32::from(input[p + 1]) << 8) | u32::from(input[p + 2]);
        (v.wrapping_mul(2_654_435_761) >> (32 - HLOG)) as usize
    };
    let mut out = Vec::with_capacity(input.len());
    let mut lit_start = 0;
    let mut i = 0;
    let flush = |out: &mut Vec<u8>, from: usize, to: usize| {
        let mut s = from;
        while s < to {
            let n = (to - s).min(32);
            out.push((n - 1) as u8);
            out.extend_from_slice(&input[s..s + n]);
            s += n;
        }
    };
    while i + 2 < input.len() {
        let h = hash(i);
        let cand = table[h];
        table[h] = i;
        if cand != usize::MAX && i - cand <= MAX_OFF && input[cand..cand + 3] == input[i..i + 3] {
            let max = (input.len() - i).min(MAX_REF);
            let mut len = 3;
            while len < max && input[cand + len] == input[i + len] {
                len += 1;
            }
            flush(&mut out, lit_start, i);
            let off = i - cand - 1;
            let l = len - 2;
            if l < 7 {
                out.push(((l << 5) | (off >> 8)) as u8);
            } else {
                out.push(((7 << 5) | (off >> 8)) as u8);
                out.push((l - 7) as u8);
            }
            out.push(off as u8);
            i += len;
            lit_start = i;
            if out.len() >= input.len() {
                return None;
            }
        } else {
            i += 1;
        }
    }
    flush(&mut out, lit_start, input.len());
    (out.len() < input.len()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn compresses_repetitive_input_and_round_trips() {
        let input: Vec<u8> = b"hello hello hello hello hello world ".repeat(50);
        let c = compress(&input).expect("repetitive input compresses");
        assert!(c.len() < input.len() / 4);
        assert_eq!(decompress(&c, input.len()).unwrap(), input);
    }

    #[test]
    fn wrong_lengths_and_damage_are_none() {
        let input = b"abcabcabcabcabcabcabcabc".to_vec();
        let c = compress(&input).unwrap();
        assert!(decompress(&c, input.len() + 1).is_none());
        assert!(decompress(&c, input.len() - 1).is_none());
        assert!(decompress(&c[..c.len() - 1], input.len()).is_none());
        assert!(
            decompress(&[0x20, 0x00], 3).is_none(),
            "reference before the start"
        );
        assert!(decompress(&[0], usize::MAX).is_none());
    }

    proptest! {
        #[test]
        fn round_trips(input in proptest::collection::vec(0u8..4, 0..3000)) {
            if let Some(c) = compress(&input) {
                prop_assert_eq!(decompress(&c, input.len()).unwrap(), input);
            }
        }
    }
}
