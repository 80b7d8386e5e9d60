//! Glob-style pattern matching with Redis's rules (`*`, `?`, `[abc]`, `[^a-z]`, `\x`), used by
//! KEYS, SCAN MATCH, CONFIG GET and COMMAND LIST FILTERBY PATTERN.

/// True when `text` matches `pattern`. `nocase` compares ASCII letters case-insensitively.
pub fn glob_match(pattern: &[u8], text: &[u8], nocase: bool) -> bool {
    match_from(pattern, text, nocase, 0)
}

fn eq(a: u8, b: u8, nocase: bool) -> bool {
    if nocase {
        a.eq_ignore_ascii_case(&b)
    } else {
        a == b
    }
}

fn match_from(mut p: &[u8], mut t: &[u8], nocase: bool, depth: u32) -> bool {
    // Bound recursion on pathological patterns such as "*a*a*a*...".
    if depth > 1000 {
        return false;
    }
    while let Some(&pc) = p.first() {
        match pc {
            b'*' => {
                while p.len() > 1 && p[1] == b'*' {
                    p = &p[1..];
                }
                if p.len() == 1 {
                    return true;
                }
                for start in 0..=t.len() {
                    if match_from(&p[1..], &t[start..], nocase, depth + 1) {
                        return true;
                    }
                }
                return false;
            }
            b'?' => {
                if t.is_empty() {
                    return false;
                }
                t = &t[1..];
                p = &p[1..];
            }
            b'[' => {
                let Some(&c) = t.first() else { return false };
                p = &p[1..];
                let negate = p.first() == Some(&b'^');
                if negate {
                    p = &p[1..];
                }
                let mut matched = false;
                loop {
                    match p.first() {
                        None => break,
                        Some(b']') => break,
                        Some(b'\\') if p.len() >= 2 => {
                            if p[1] == c {
                                matched = true;
                            }
                            p = &p[2..];
                        }
                        Some(&lo) if p.len() >= 3 && p[1] == b'-' => {
                            let hi = p[2];
                            let (mut lo, mut hi, mut ch) = (lo, hi, c);
                            if lo > hi {
                                std::mem::swap(&mut lo, &mut hi);
                            }
                            if nocase {
                                lo = lo.to_ascii_lowercase();
                                hi = hi.to_ascii_lowercase();
                                ch = ch.to_ascii_lowercase();
                            }
                            if ch >= lo && ch <= hi {
                                matched = true;
                            }
                            p = &p[3..];
                        }
                        Some(&x) => {
                            if eq(x, c, nocase) {
                                matched = true;
                            }
                            p = &p[1..];
                        }
                    }
                }
                // p now at ']' or empty (an unterminated class ends the pattern).
                if !p.is_empty() {
                    p = &p[1..];
                }
                if matched == negate {
                    return false;
                }
                t = &t[1..];
            }
            b'\\' if p.len() >= 2 => {
                if t.first().is_none_or(|&c| !eq(c, p[1], nocase)) {
                    return false;
                }
                t = &t[1..];
                p = &p[2..];
            }
            _ => {
                if t.first().is_none_or(|&c| !eq(c, pc, nocase)) {
                    return false;
                }
                t = &t[1..];
                p = &p[1..];
            }
        }
    }
    t.is_empty()
}

#[cfg(test)]
mod tests {
    use super::glob_match as m;

    #[test]
    fn basics() {
        assert!(m(b"*", b"anything", false));
        assert!(m(b"h?llo", b"hello", false));
        assert!(m(b"h*llo", b"heeeello", false));
        assert!(m(b"h[ae]llo", b"hallo", false));
        assert!(!m(b"h[ae]llo", b"hillo", false));
        assert!(m(b"h[^e]llo", b"hallo", false));
        assert!(!m(b"h[^e]llo", b"hello", false));
        assert!(m(b"h[a-b]llo", b"hbllo", false));
        assert!(m(b"h\\*llo", b"h*llo", false));
        assert!(!m(b"h\\*llo", b"hallo", false));
        assert!(m(b"*max*", b"maxclients", false));
        assert!(m(b"MAX*", b"maxclients", true));
        assert!(!m(b"a", b"ab", false));
        assert!(m(b"", b"", false));
    }

    #[test]
    fn pathological_pattern_terminates() {
        let p = b"*a*a*a*a*a*a*a*a*a*a*a*a*b".to_vec();
        let t = vec![b'a'; 40];
        assert!(!m(&p, &t, false));
    }
}
