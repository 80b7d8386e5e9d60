//! INCRBYFLOAT arithmetic in C `long double`, as Redis computes it (see `csrc/longdouble.c`).

use std::os::raw::{c_char, c_int};

extern "C" {
    fn skerry_ld_add(
        base: *const c_char,
        base_len: usize,
        incr: *const c_char,
        incr_len: usize,
        out: *mut c_char,
        out_len: usize,
    ) -> c_int;
}

/// Why [`add`] failed.
#[derive(Debug, PartialEq, Eq)]
pub enum LdError {
    /// The stored value is not a float.
    BaseNotFloat,
    /// The increment is not a float.
    IncrNotFloat,
    /// The result is NaN or infinite.
    NotFinite,
}

/// `base + incr` in long double, formatted as Redis's INCRBYFLOAT reply. `base` None is 0.
pub fn add(base: Option<&[u8]>, incr: &[u8]) -> Result<Vec<u8>, LdError> {
    let mut out = vec![0u8; 6000];
    let (bp, bl) = match base {
        Some(b) => (b.as_ptr() as *const c_char, b.len()),
        None => (std::ptr::null(), 0),
    };
    // SAFETY: every pointer is valid for the length passed with it; the C side reads at most
    // `len` bytes of each input and writes at most `out.len()` bytes (NUL included) to `out`.
    let n = unsafe {
        skerry_ld_add(
            bp,
            bl,
            incr.as_ptr() as *const c_char,
            incr.len(),
            out.as_mut_ptr() as *mut c_char,
            out.len(),
        )
    };
    match n {
        -1 => Err(LdError::BaseNotFloat),
        -2 => Err(LdError::IncrNotFloat),
        n if n < 0 => Err(LdError::NotFinite),
        n => {
            out.truncate(n as usize);
            Ok(out)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_redis_outputs() {
        assert_eq!(add(Some(b"10.50"), b"0.1").unwrap(), b"10.6");
        assert_eq!(add(None, b"0.1").unwrap(), b"0.1");
        assert_eq!(add(Some(b"0.1"), b"0.2").unwrap(), b"0.3");
        assert_eq!(add(Some(b"5.0e3"), b"2.0e2").unwrap(), b"5200");
        assert_eq!(add(Some(b"3"), b"-3").unwrap(), b"0");
        assert_eq!(add(Some(b"abc"), b"1"), Err(LdError::BaseNotFloat));
        assert_eq!(add(Some(b"1"), b" 1"), Err(LdError::IncrNotFloat));
        assert_eq!(add(Some(b"1"), b"nan"), Err(LdError::IncrNotFloat));
        assert_eq!(add(Some(b"1\x002"), b"1"), Err(LdError::BaseNotFloat));
        assert_eq!(add(Some(b"1e4932"), b"1e4932"), Err(LdError::NotFinite));
    }
}
