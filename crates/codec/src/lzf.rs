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

/// log2 of the compressor's hash table size.
const HLOG: usize = 14;

thread_local! {
    /// The compressor's hash table, reused from call to call: (generation of the current
    /// call, slots). A slot holds `generation << 32 | position`; a slot of another
    /// generation is empty. So a call does not clear (or allocate) 128 KiB first, which
    /// cost a small value's DUMP (or MIGRATE) more than the rest of its work.
    static TABLE: std::cell::RefCell<(u64, Vec<u64>)> = const { std::cell::RefCell::new((0, Vec::new())) };
}

/// LZF compression of `input` (a greedy compressor with a hash of 3-byte prefixes), or
/// None when the result would not be shorter than `input`.
pub fn compress(input: &[u8]) -> Option<Vec<u8>> {
    if input.len() < 4 || input.len() > u32::MAX as usize {
        return None;
    }
    TABLE.with_borrow_mut(|(generation, table)| {
        *generation += 1;
        if table.is_empty() || *generation > u64::from(u32::MAX) {
            *table = vec![0; 1 << HLOG];
            *generation = 1;
        }
        compress_with(input, table, *generation << 32)
    })
}

/// [`compress`] with the slots of generation `tag` (in the high 32 bits) as its table.
fn compress_with(input: &[u8], table: &mut [u64], tag: u64) -> Option<Vec<u8>> {
    const MAX_OFF: usize = 1 << 13;
    const MAX_REF: usize = (1 << 8) + (1 << 3);
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
        let slot = table[h];
        table[h] = tag | i as u64;
        let cand = (slot & !0xFFFF_FFFF == tag).then_some((slot & 0xFFFF_FFFF) as usize);
        if let Some(cand) = cand.filter(|&c| i - c <= MAX_OFF && input[c..c + 3] == input[i..i + 3])
        {
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

    /// The compressor as it was, with a fresh table per call: [`compress`] must give the
    /// same bytes whatever came before it on the thread.
    fn compress_fresh(input: &[u8]) -> Option<Vec<u8>> {
        if input.len() < 4 {
            return None;
        }
        let mut table = vec![0; 1 << HLOG];
        compress_with(input, &mut table, 1 << 32)
    }

    #[test]
    fn generations_wrap_without_stale_slots() {
        let a = b"abcabcabcabcabcabc-xyzxyzxyzxyzxyz".repeat(3);
        let b = b"xyzxyzxyz-abcabcabcabcabcabc".repeat(3);
        let first = compress(&a);
        TABLE.with_borrow_mut(|(g, _)| *g = u64::from(u32::MAX));
        assert_eq!(compress(&b), compress_fresh(&b));
        assert_eq!(compress(&a), first);
    }

    proptest! {
        #[test]
        fn same_bytes_as_a_fresh_table(
            inputs in proptest::collection::vec(proptest::collection::vec(0u8..4, 0..600), 1..8)
        ) {
            for input in &inputs {
                prop_assert_eq!(compress(input), compress_fresh(input));
            }
        }

        #[test]
        fn round_trips(input in proptest::collection::vec(0u8..4, 0..3000)) {
            if let Some(c) = compress(&input) {
                prop_assert_eq!(decompress(&c, input.len()).unwrap(), input);
            }
        }
    }
}
