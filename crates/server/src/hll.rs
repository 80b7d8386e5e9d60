//! HyperLogLog, byte for byte as Redis stores it (Redis's `hyperloglog.c`): pure functions
//! over the bytes of a string value, so that an HLL made by Redis works here and the other
//! way round, and PFADD produces the same bytes.
//!
//! Layout: a 16-byte header (`HYLL`, the encoding: 0 dense, 1 sparse, three zero bytes, the
//! cached cardinality as 8 bytes little endian whose top bit set means "stale"), then the
//! registers. 16384 registers of 6 bits each: dense packs them in 12288 bytes (register `i`
//! at bit `6 i`, least significant bits first); sparse is a run-length code of opcodes:
//! `00xxxxxx` ZERO (1..64 zero registers), `01xxxxxx yyyyyyyy` XZERO (1..16384 zero
//! registers), `1vvvvvxx` VAL (1..4 registers of value 1..32). A sparse HLL turns dense when
//! a register needs a value above 32 or when it would grow past `hll-sparse-max-bytes`.
//!
//! Elements hash with MurmurHash64A (seed `0xadc83b19`); the low 14 bits pick the register,
//! the run of zeros above them (plus one) is the candidate value. The cardinality is Otmar
//! Ertl's improved estimator over the histogram of register values, as in Redis 5+.

/// Size of the header.
pub const HDR: usize = 16;
/// Bits of the hash that pick the register.
pub const P: u32 = 14;
/// Bits left for the run of zeros.
pub const Q: u32 = 64 - P;
/// Number of registers.
pub const REGISTERS: usize = 1 << P;
/// Bits of a dense register.
const BITS: usize = 6;
/// Largest register value.
const REGISTER_MAX: u8 = (1 << BITS) - 1;
/// Size of a dense HLL, header included.
pub const DENSE_SIZE: usize = HDR + (REGISTERS * BITS).div_ceil(8);
/// The header's encoding byte of a dense HLL.
pub const DENSE: u8 = 0;
/// The header's encoding byte of a sparse HLL.
pub const SPARSE: u8 = 1;
/// Redis's seed for MurmurHash64A.
const SEED: u64 = 0xadc8_3b19;
/// Largest value a sparse VAL opcode holds.
const SPARSE_VAL_MAX_VALUE: u8 = 32;
/// Largest run of a VAL opcode.
const SPARSE_VAL_MAX_LEN: usize = 4;
/// Largest run of a ZERO opcode.
const SPARSE_ZERO_MAX_LEN: usize = 64;
/// Largest run of an XZERO opcode.
const SPARSE_XZERO_MAX_LEN: usize = 16384;
/// 0.5 / ln(2).
const ALPHA_INF: f64 = 0.721_347_520_444_481_7;

/// The HLL is corrupted (Redis's `INVALIDOBJ`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Corrupt;

/// MurmurHash2, 64-bit version, with Redis's endian-neutral reading (little endian words).
pub fn murmur64a(key: &[u8], seed: u64) -> u64 {
    const M: u64 = 0xc6a4_a793_5bd1_e995;
    const R: u32 = 47;
    let mut h = seed ^ (key.len() as u64).wrapping_mul(M);
    let mut chunks = key.chunks_exact(8);
    for c in &mut chunks {
        let mut k = u64::from_le_bytes(c.try_into().expect("8 bytes"));
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let tail = chunks.remainder();
    if !tail.is_empty() {
        for (i, b) in tail.iter().enumerate() {
            h ^= u64::from(*b) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h
}

/// The register `ele` maps to and the value it offers (the run of zeros after the index
/// bits, plus one: 1..=Q+1).
pub fn pat_len(ele: &[u8]) -> (usize, u8) {
    let hash = murmur64a(ele, SEED);
    let index = (hash & (REGISTERS as u64 - 1)) as usize;
    let rest = (hash >> P) | (1u64 << Q);
    (index, rest.trailing_zeros() as u8 + 1)
}

/// A new, empty HLL: sparse, one XZERO covering every register, cache valid at 0.
pub fn new_sparse() -> Vec<u8> {
    let mut v = Vec::with_capacity(HDR + 2);
    v.extend_from_slice(b"HYLL");
    v.push(SPARSE);
    v.extend_from_slice(&[0; 11]);
    let mut left = REGISTERS;
    while left > 0 {
        let run = left.min(SPARSE_XZERO_MAX_LEN);
        push_xzero(&mut v, run);
        left -= run;
    }
    v
}

/// True when `v` is an HLL Redis would accept (`isHLLObjectOrReply`): the magic, a known
/// encoding, and the exact size when dense. A sparse body is checked only as it is read.
pub fn is_valid(v: &[u8]) -> bool {
    v.len() >= HDR
        && &v[..4] == b"HYLL"
        && v[4] <= SPARSE
        && (v[4] != DENSE || v.len() == DENSE_SIZE)
}

/// True when `v` (a valid HLL) is sparse.
pub fn is_sparse(v: &[u8]) -> bool {
    v[4] == SPARSE
}

/// The cached cardinality, None when it is stale.
pub fn cached_card(v: &[u8]) -> Option<u64> {
    (v[15] & 0x80 == 0).then(|| u64::from_le_bytes(v[8..16].try_into().expect("8 bytes")))
}

/// Stores `card` as the cached cardinality (valid).
pub fn set_cached_card(v: &mut [u8], card: u64) {
    v[8..16].copy_from_slice(&card.to_le_bytes());
}

/// Marks the cached cardinality stale.
pub fn invalidate_cache(v: &mut [u8]) {
    v[15] |= 0x80;
}

/// Dense register `i` of `regs` (the bytes after the header). A byte past the end reads
/// as zero (Redis reads the string's terminator there).
pub fn dense_get(regs: &[u8], i: usize) -> u8 {
    let byte = i * BITS / 8;
    let fb = (i * BITS) & 7;
    let b0 = u16::from(regs[byte]);
    let b1 = u16::from(regs.get(byte + 1).copied().unwrap_or(0));
    (((b0 >> fb) | (b1 << (8 - fb))) & u16::from(REGISTER_MAX)) as u8
}

/// Sets dense register `i` of `regs` to `val` (< 64).
pub fn dense_put(regs: &mut [u8], i: usize, val: u8) {
    let byte = i * BITS / 8;
    let fb = (i * BITS) & 7;
    let v = u16::from(val);
    let m = u16::from(REGISTER_MAX);
    regs[byte] = ((u16::from(regs[byte]) & !(m << fb)) | (v << fb)) as u8;
    if let Some(next) = regs.get_mut(byte + 1) {
        let fb8 = 8 - fb;
        *next = ((u16::from(*next) & !(m >> fb8)) | (v >> fb8)) as u8;
    }
}

/// Raises dense register `i` to `count` when it is lower; true when it changed.
pub fn dense_set(regs: &mut [u8], i: usize, count: u8) -> bool {
    if count > dense_get(regs, i) {
        dense_put(regs, i, count);
        true
    } else {
        false
    }
}

/// One decoded sparse opcode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    /// A run of zero registers; `wide` for XZERO (two bytes).
    Zero { len: usize, wide: bool },
    /// A run of registers holding `value`.
    Val { value: u8, len: usize },
}

impl Op {
    fn bytes(self) -> usize {
        match self {
            Op::Zero { wide: true, .. } => 2,
            _ => 1,
        }
    }
    fn len(self) -> usize {
        match self {
            Op::Zero { len, .. } | Op::Val { len, .. } => len,
        }
    }
}

/// The opcode at `p` (an XZERO cut short reads its second byte as 0, as Redis reads the
/// terminator).
fn op_at(v: &[u8], p: usize) -> Op {
    let b = v[p];
    if b & 0xc0 == 0 {
        Op::Zero {
            len: usize::from(b & 0x3f) + 1,
            wide: false,
        }
    } else if b & 0x80 == 0 {
        let lo = usize::from(v.get(p + 1).copied().unwrap_or(0));
        Op::Zero {
            len: ((usize::from(b & 0x3f) << 8) | lo) + 1,
            wide: true,
        }
    } else {
        Op::Val {
            value: ((b >> 2) & 0x1f) + 1,
            len: usize::from(b & 3) + 1,
        }
    }
}

fn val_byte(value: u8, len: usize) -> u8 {
    (((value - 1) << 2) | (len as u8 - 1)) | 0x80
}

fn push_xzero(out: &mut Vec<u8>, len: usize) {
    let l = len - 1;
    out.push(((l >> 8) as u8) | 0x40);
    out.push((l & 0xff) as u8);
}

fn push_zero_run(out: &mut Vec<u8>, len: usize) {
    if len > SPARSE_ZERO_MAX_LEN {
        push_xzero(out, len);
    } else {
        out.push((len - 1) as u8);
    }
}

/// Walks the sparse body of `v`, calling `f(first_register, value, run)` for every VAL run;
/// fails when the runs overflow or do not cover exactly every register.
fn sparse_runs(v: &[u8], mut f: impl FnMut(usize, u8, usize)) -> Result<(), Corrupt> {
    let (mut p, mut idx) = (HDR, 0usize);
    while p < v.len() {
        let op = op_at(v, p);
        if idx + op.len() > REGISTERS {
            return Err(Corrupt);
        }
        if let Op::Val { value, len } = op {
            f(idx, value, len);
        }
        idx += op.len();
        p += op.bytes();
    }
    if idx == REGISTERS {
        Ok(())
    } else {
        Err(Corrupt)
    }
}

/// The dense form of sparse `v` (the header copied, encoding set to dense; the registers
/// decoded). A dense `v` comes back as is.
pub fn to_dense(v: &[u8]) -> Result<Vec<u8>, Corrupt> {
    if v[4] == DENSE {
        return Ok(v.to_vec());
    }
    let mut d = vec![0u8; DENSE_SIZE];
    d[..HDR].copy_from_slice(&v[..HDR]);
    d[4] = DENSE;
    let regs = &mut d[HDR..];
    sparse_runs(v, |first, value, len| {
        for i in first..first + len {
            dense_put(regs, i, value);
        }
    })?;
    Ok(d)
}

/// Raises register `index` of sparse `v` to `count`, exactly as Redis's `hllSparseSet`
/// edits the opcodes (so that the bytes match); turns `v` dense when the value does not
/// fit a VAL opcode or the body would grow past `max_bytes`. True when a register changed.
pub fn sparse_set(
    v: &mut Vec<u8>,
    index: usize,
    count: u8,
    max_bytes: usize,
) -> Result<bool, Corrupt> {
    if count > SPARSE_VAL_MAX_VALUE {
        return promote(v, index, count);
    }
    // Step 1: the opcode covering `index`.
    let end = v.len();
    let (mut p, mut first, mut prev, mut span) = (HDR, 0usize, None, 0usize);
    let mut op = None;
    while p < end {
        let o = op_at(v, p);
        span = o.len();
        if index < first + span {
            op = Some(o);
            break;
        }
        prev = Some(p);
        p += o.bytes();
        first += span;
    }
    let Some(op) = op else {
        return Err(Corrupt);
    };
    // Step 2: trivial updates in place, else the split sequence.
    let mut in_place = false;
    if let Op::Val { value, len } = op {
        if value >= count {
            return Ok(false);
        }
        if len == 1 {
            v[p] = val_byte(count, 1);
            in_place = true;
        }
    }
    if let Op::Zero {
        len: 1,
        wide: false,
    } = op
    {
        v[p] = val_byte(count, 1);
        in_place = true;
    }
    if !in_place {
        let last = first + span - 1;
        let mut seq = Vec::with_capacity(5);
        match op {
            Op::Zero { .. } => {
                if index != first {
                    push_zero_run(&mut seq, index - first);
                }
                seq.push(val_byte(count, 1));
                if index != last {
                    push_zero_run(&mut seq, last - index);
                }
            }
            Op::Val { value, .. } => {
                if index != first {
                    seq.push(val_byte(value, index - first));
                }
                seq.push(val_byte(count, 1));
                if index != last {
                    seq.push(val_byte(value, last - index));
                }
            }
        }
        // Step 3: the sequence replaces the opcode, unless that grows past the limit.
        let old = op.bytes();
        if seq.len() > old && end + seq.len() - old > max_bytes {
            return promote(v, index, count);
        }
        let new_len = end + seq.len() - old;
        v.splice(p..(p + old).min(end), seq);
        v.truncate(new_len);
    }
    // Step 4: merge adjacent VAL opcodes of equal value, scanning up to 5 opcodes from
    // the one before the change.
    let mut p = prev.unwrap_or(HDR);
    let mut scan = 5;
    while p < v.len() && scan > 0 {
        scan -= 1;
        match op_at(v, p) {
            Op::Zero { wide, .. } => {
                p += if wide { 2 } else { 1 };
                continue;
            }
            Op::Val { value, len } => {
                if p + 1 < v.len() {
                    if let Op::Val {
                        value: v2,
                        len: len2,
                    } = op_at(v, p + 1)
                    {
                        if value == v2 && len + len2 <= SPARSE_VAL_MAX_LEN {
                            v[p + 1] = val_byte(value, len + len2);
                            v.remove(p);
                            continue;
                        }
                    }
                }
                p += 1;
            }
        }
    }
    invalidate_cache(v);
    Ok(true)
}

/// Turns sparse `v` dense and sets register `index` to `count` there.
fn promote(v: &mut Vec<u8>, index: usize, count: u8) -> Result<bool, Corrupt> {
    let mut d = to_dense(v)?;
    let changed = dense_set(&mut d[HDR..], index, count);
    *v = d;
    Ok(changed)
}

/// Adds `ele` to the HLL `v` (valid): true when a register changed. The cache is not
/// touched here for a dense HLL (PFADD invalidates it when anything changed).
pub fn add(v: &mut Vec<u8>, ele: &[u8], max_bytes: usize) -> Result<bool, Corrupt> {
    let (index, count) = pat_len(ele);
    match v[4] {
        DENSE => Ok(dense_set(&mut v[HDR..], index, count)),
        SPARSE => sparse_set(v, index, count, max_bytes),
        _ => Err(Corrupt),
    }
}

/// Histogram of register values of `v` (valid), indexed by value.
pub fn histogram(v: &[u8]) -> Result<[u32; 64], Corrupt> {
    let mut h = [0u32; 64];
    if v[4] == DENSE {
        for c in v[HDR..DENSE_SIZE].chunks_exact(3) {
            let (a, b, d) = (c[0], c[1], c[2]);
            h[usize::from(a & 63)] += 1;
            h[usize::from((a >> 6) | ((b << 2) & 63))] += 1;
            h[usize::from((b >> 4) | ((d << 4) & 63))] += 1;
            h[usize::from(d >> 2)] += 1;
        }
    } else {
        let mut zeros = REGISTERS as u32;
        sparse_runs(v, |_, value, len| {
            h[usize::from(value)] += len as u32;
            zeros -= len as u32;
        })?;
        h[0] += zeros;
    }
    Ok(h)
}

/// Histogram of raw registers (one byte each, as PFCOUNT of several keys merges them).
pub fn raw_histogram(regs: &[u8; REGISTERS]) -> [u32; 64] {
    let mut h = [0u32; 64];
    for r in regs {
        h[usize::from(*r & 63)] += 1;
    }
    h
}

fn sigma(mut x: f64) -> f64 {
    if x == 1.0 {
        return f64::INFINITY;
    }
    let (mut y, mut z) = (1.0f64, x);
    loop {
        x *= x;
        let z_prev = z;
        z += x * y;
        y += y;
        if z_prev == z {
            return z;
        }
    }
}

fn tau(mut x: f64) -> f64 {
    if x == 0.0 || x == 1.0 {
        return 0.0;
    }
    let (mut y, mut z) = (1.0f64, 1.0 - x);
    loop {
        x = x.sqrt();
        let z_prev = z;
        y *= 0.5;
        let d = 1.0 - x;
        z -= d * d * y;
        if z_prev == z {
            return z / 3.0;
        }
    }
}

/// Ertl's improved estimator over a register histogram (Redis's `hllCount`).
pub fn estimate(h: &[u32; 64]) -> u64 {
    let m = REGISTERS as f64;
    let q = Q as usize;
    let mut z = m * tau((m - f64::from(h[q + 1])) / m);
    for j in (1..=q).rev() {
        z += f64::from(h[j]);
        z *= 0.5;
    }
    z += m * sigma(f64::from(h[0]) / m);
    let e = ALPHA_INF * m * m / z;
    // llroundl: half away from zero; Redis then casts to uint64.
    e.round() as i64 as u64
}

/// The estimated cardinality of `v` (valid), ignoring the cache.
pub fn count(v: &[u8]) -> Result<u64, Corrupt> {
    Ok(estimate(&histogram(v)?))
}

/// `max[i] = max(max[i], register i of v)` for the HLL `v` (valid).
pub fn merge_into(max: &mut [u8; REGISTERS], v: &[u8]) -> Result<(), Corrupt> {
    if v[4] == DENSE {
        // Three bytes hold four registers.
        for (c, m) in v[HDR..DENSE_SIZE]
            .chunks_exact(3)
            .zip(max.chunks_exact_mut(4))
        {
            let regs = [
                c[0] & 63,
                (c[0] >> 6) | ((c[1] << 2) & 63),
                (c[1] >> 4) | ((c[2] << 4) & 63),
                c[2] >> 2,
            ];
            for (m, r) in m.iter_mut().zip(regs) {
                *m = (*m).max(r);
            }
        }
        Ok(())
    } else {
        sparse_runs(v, |first, value, len| {
            for m in &mut max[first..first + len] {
                if value > *m {
                    *m = value;
                }
            }
        })
    }
}

/// Overwrites every register of dense `v` with `max` (Redis's `hllDenseCompress`).
pub fn dense_fill(v: &mut [u8], max: &[u8; REGISTERS]) {
    for (c, r) in v[HDR..DENSE_SIZE]
        .chunks_exact_mut(3)
        .zip(max.chunks_exact(4))
    {
        let r = [r[0] & 63, r[1] & 63, r[2] & 63, r[3] & 63];
        c[0] = r[0] | (r[1] << 6);
        c[1] = (r[1] >> 2) | (r[2] << 4);
        c[2] = (r[2] >> 4) | (r[3] << 2);
    }
}

/// PFDEBUG DECODE's text of sparse `v`: `z:len`, `Z:len`, `v:value,len` separated by spaces.
pub fn decode(v: &[u8]) -> String {
    let mut out = String::new();
    let mut p = HDR;
    while p < v.len() {
        let op = op_at(v, p);
        if !out.is_empty() {
            out.push(' ');
        }
        match op {
            Op::Zero { len, wide: false } => out.push_str(&format!("z:{len}")),
            Op::Zero { len, wide: true } => out.push_str(&format!("Z:{len}")),
            Op::Val { value, len } => out.push_str(&format!("v:{value},{len}")),
        }
        p += op.bytes();
    }
    out
}

/// PFSELFTEST: register access on random values, then estimates of dense and sparse HLLs
/// fed the same `elements` (Redis: 10 million) against each other and against the truth.
/// Err holds Redis's `TESTFAILED ...` message.
pub fn self_test(
    max_bytes: usize,
    rng: &mut impl rand::Rng,
    cycles: usize,
    elements: u64,
) -> Result<(), String> {
    let mut dense = vec![0u8; DENSE_SIZE];
    let mut bytes = vec![0u8; REGISTERS];
    for _ in 0..cycles {
        for (i, b) in bytes.iter_mut().enumerate() {
            let r = rng.random::<u8>() & REGISTER_MAX;
            *b = r;
            dense_put(&mut dense[HDR..], i, r);
        }
        for (i, b) in bytes.iter().enumerate() {
            let got = dense_get(&dense[HDR..], i);
            if got != *b {
                return Err(format!(
                    "TESTFAILED Register {i} should be {b} but is {got}"
                ));
            }
        }
    }
    dense[HDR..].fill(0);
    dense[..4].copy_from_slice(b"HYLL");
    let mut sparse = new_sparse();
    let relerr = 1.04 / (REGISTERS as f64).sqrt();
    let mut checkpoint: u64 = 1;
    let seed: u64 = rng.random();
    for j in 1..=elements {
        let ele = (j ^ seed).to_le_bytes();
        add(&mut dense, &ele, max_bytes).map_err(|_| "TESTFAILED corrupted".to_string())?;
        add(&mut sparse, &ele, max_bytes).map_err(|_| "TESTFAILED corrupted".to_string())?;
        if j != checkpoint {
            continue;
        }
        if (j as usize) < max_bytes / 2 && !is_sparse(&sparse) {
            return Err("TESTFAILED sparse encoding not used".into());
        }
        let est = count(&dense).map_err(|_| "TESTFAILED corrupted".to_string())?;
        if Ok(est) != count(&sparse) {
            return Err("TESTFAILED dense/sparse disagree".into());
        }
        let abserr = (checkpoint as i64 - est as i64).unsigned_abs();
        let maxerr = if j == 10 {
            1
        } else {
            (relerr * 6.0 * checkpoint as f64).ceil() as u64
        };
        if abserr > maxerr {
            return Err(format!(
                "TESTFAILED Too big error. card:{checkpoint} abserr:{abserr}"
            ));
        }
        checkpoint *= 10;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn murmur_matches_the_reference_algorithm() {
        // Tail lengths 0..=7 and whole words, against a straightforward transcription.
        fn reference(key: &[u8], seed: u64) -> u64 {
            let m: u64 = 0xc6a4a7935bd1e995;
            let mut h = seed ^ (key.len() as u64).wrapping_mul(m);
            let n = key.len() / 8 * 8;
            let mut i = 0;
            while i < n {
                let mut k = 0u64;
                for b in 0..8 {
                    k |= u64::from(key[i + b]) << (8 * b);
                }
                k = k.wrapping_mul(m);
                k ^= k >> 47;
                k = k.wrapping_mul(m);
                h ^= k;
                h = h.wrapping_mul(m);
                i += 8;
            }
            let rest = key.len() & 7;
            for b in (0..rest).rev() {
                h ^= u64::from(key[n + b]) << (8 * b);
            }
            if rest > 0 {
                h = h.wrapping_mul(m);
            }
            h ^= h >> 47;
            h = h.wrapping_mul(m);
            h ^= h >> 47;
            h
        }
        let data: Vec<u8> = (0..40u8).map(|b| b.wrapping_mul(37)).collect();
        for len in 0..data.len() {
            assert_eq!(murmur64a(&data[..len], SEED), reference(&data[..len], SEED));
        }
        assert_ne!(murmur64a(b"a", SEED), murmur64a(b"b", SEED));
    }

    #[test]
    fn new_hll_is_one_xzero_and_counts_zero() {
        let v = new_sparse();
        assert_eq!(v.len(), HDR + 2);
        assert!(is_valid(&v));
        assert_eq!(decode(&v), "Z:16384");
        assert_eq!(cached_card(&v), Some(0));
        assert_eq!(count(&v), Ok(0));
    }

    #[test]
    fn dense_registers_do_not_disturb_neighbours() {
        let mut regs = vec![0u8; DENSE_SIZE - HDR];
        for i in 0..REGISTERS {
            dense_put(&mut regs, i, (i % 64) as u8);
        }
        for i in 0..REGISTERS {
            assert_eq!(dense_get(&regs, i), (i % 64) as u8, "register {i}");
        }
        dense_put(&mut regs, 5, 0);
        assert_eq!(dense_get(&regs, 4), 4);
        assert_eq!(dense_get(&regs, 5), 0);
        assert_eq!(dense_get(&regs, 6), 6);
        assert!(dense_set(&mut regs, 5, 3));
        assert!(!dense_set(&mut regs, 5, 2));
    }

    #[test]
    fn sparse_splits_and_merges_opcodes() {
        let mut v = new_sparse();
        assert_eq!(sparse_set(&mut v, 100, 3, 3000), Ok(true));
        assert_eq!(decode(&v), "Z:100 v:3,1 Z:16283");
        assert_eq!(cached_card(&v), None);
        assert_eq!(sparse_set(&mut v, 101, 3, 3000), Ok(true));
        assert_eq!(decode(&v), "Z:100 v:3,2 Z:16282");
        assert_eq!(sparse_set(&mut v, 101, 2, 3000), Ok(false));
        assert_eq!(sparse_set(&mut v, 0, 1, 3000), Ok(true));
        assert_eq!(decode(&v), "v:1,1 Z:99 v:3,2 Z:16282");
        assert_eq!(sparse_set(&mut v, 99, 5, 3000), Ok(true));
        assert_eq!(decode(&v), "v:1,1 Z:98 v:5,1 v:3,2 Z:16282");
        assert_eq!(sparse_set(&mut v, 16383, 7, 3000), Ok(true));
        assert_eq!(decode(&v), "v:1,1 Z:98 v:5,1 v:3,2 Z:16281 v:7,1");
        // A zero run of 64 or fewer becomes a one-byte ZERO.
        assert_eq!(sparse_set(&mut v, 60, 2, 3000), Ok(true));
        assert_eq!(
            decode(&v),
            "v:1,1 z:59 v:2,1 z:38 v:5,1 v:3,2 Z:16281 v:7,1"
        );
        let mut h = histogram(&v).unwrap();
        assert_eq!(h[0], REGISTERS as u32 - 6);
        assert_eq!((h[1], h[2], h[3], h[5], h[7]), (1, 1, 2, 1, 1));
        // The dense form holds the same registers.
        let d = to_dense(&v).unwrap();
        assert_eq!(d.len(), DENSE_SIZE);
        assert_eq!(dense_get(&d[HDR..], 99), 5);
        assert_eq!(dense_get(&d[HDR..], 16383), 7);
        h = histogram(&d).unwrap();
        assert_eq!(count(&d), Ok(estimate(&h)));
        assert_eq!(count(&d), count(&v));
    }

    #[test]
    fn sparse_promotes_on_big_values_and_on_size() {
        let mut v = new_sparse();
        assert_eq!(sparse_set(&mut v, 10, 33, 3000), Ok(true));
        assert_eq!(v.len(), DENSE_SIZE);
        assert_eq!(v[4], DENSE);
        let mut v = new_sparse();
        let mut i = 0;
        while is_sparse(&v) {
            sparse_set(&mut v, i * 7, 1 + (i % 30) as u8, 40).unwrap();
            i += 1;
            assert!(v.len() <= 40 || !is_sparse(&v));
        }
        assert!(i > 3);
        for j in 0..i {
            assert_eq!(dense_get(&v[HDR..], j * 7), 1 + (j % 30) as u8);
        }
    }

    #[test]
    fn dense_merge_and_fill_match_register_access() {
        let mut v = vec![0u8; DENSE_SIZE];
        v[..4].copy_from_slice(b"HYLL");
        let mut max = [0u8; REGISTERS];
        for (i, m) in max.iter_mut().enumerate() {
            *m = ((i * 7919) % 64) as u8;
        }
        dense_fill(&mut v, &max);
        for (i, m) in max.iter().enumerate() {
            assert_eq!(dense_get(&v[HDR..], i), *m, "register {i}");
        }
        let mut got = [0u8; REGISTERS];
        got[5] = 63;
        merge_into(&mut got, &v).unwrap();
        for (i, m) in max.iter().enumerate() {
            assert_eq!(got[i], if i == 5 { 63 } else { *m }, "register {i}");
        }
    }

    #[test]
    fn corrupted_sparse_bodies_are_detected() {
        let mut v = new_sparse();
        v.push(0x00); // one more zero register than exist
        assert_eq!(count(&v), Err(Corrupt));
        assert_eq!(to_dense(&v), Err(Corrupt));
        let mut m = [0u8; REGISTERS];
        assert_eq!(merge_into(&mut m, &v), Err(Corrupt));
        let mut short = new_sparse();
        short.truncate(HDR); // no registers at all
        assert_eq!(add(&mut short, b"x", 3000), Err(Corrupt));
        assert!(!is_valid(b"HYLL"));
        let mut d = vec![0u8; DENSE_SIZE - 1];
        d[..4].copy_from_slice(b"HYLL");
        assert!(!is_valid(&d));
        d.push(0);
        assert!(is_valid(&d));
        d[4] = 2;
        assert!(!is_valid(&d));
    }

    #[test]
    fn estimates_are_close_and_equal_across_encodings() {
        let mut dense = new_sparse();
        dense = to_dense(&dense).unwrap();
        let mut sparse = new_sparse();
        let mut m = [0u8; REGISTERS];
        for n in 1..=20_000u32 {
            let e = format!("ele:{n}");
            add(&mut dense, e.as_bytes(), 3000).unwrap();
            add(&mut sparse, e.as_bytes(), 3000).unwrap();
            if n % 1000 == 0 {
                let c = count(&dense).unwrap();
                assert_eq!(Ok(c), count(&sparse));
                let err = (c as f64 - f64::from(n)).abs() / f64::from(n);
                assert!(err < 0.05, "{n}: {c}");
            }
        }
        merge_into(&mut m, &sparse).unwrap();
        assert_eq!(estimate(&raw_histogram(&m)), count(&dense).unwrap());
        assert_eq!(count(&new_sparse()), Ok(0));
    }

    #[test]
    fn self_test_passes() {
        let mut rng = rand::rng();
        // PFSELFTEST runs 1000 cycles and 10 million elements; fewer here.
        assert_eq!(self_test(3000, &mut rng, 3, 200_000), Ok(()));
    }
}
