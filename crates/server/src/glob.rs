//! Glob-style pattern matching with Redis's rules (`*`, `?`, `[abc]`, `[^a-z]`, `\x`), used by
//! KEYS, SCAN MATCH, CONFIG GET and COMMAND LIST FILTERBY PATTERN.

/// True when `text` matches `pattern`. `nocase` compares ASCII letters case-insensitively.
///
/// Iterative matching with a single backtrack point (the last `*`), so the cost is at most
/// O(pattern × text) even for patterns such as `*a*a*a*b` that make a recursive matcher
/// exponential.
pub fn glob_match(pattern: &[u8], text: &[u8], nocase: bool) -> bool {
    // Redis's matcher recurses once per '*' and gives up (no match) past 1000 levels; a
    // pattern with more than 1000 '*' groups before its end therefore never matches there.
    if star_groups_before_end(pattern) > 1000 {
        return false;
    }
    let (mut p, mut t) = (0usize, 0usize);
    // Where to resume after the last '*': (pattern index after the star, text index).
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() {
            match pattern[p] {
                b'*' => {
                    while p < pattern.len() && pattern[p] == b'*' {
                        p += 1;
                    }
                    if p == pattern.len() {
                        return true;
                    }
                    star = Some((p, t));
                    continue;
                }
                _ => {
                    if let Some(next) = match_one(pattern, p, text[t], nocase) {
                        p = next;
                        t += 1;
                        continue;
                    }
                }
            }
        }
        // Mismatch: let the last '*' swallow one more byte, or fail.
        match star {
            Some((sp, st)) => {
                p = sp;
                t = st + 1;
                star = Some((sp, st + 1));
            }
            None => return false,
        }
    }
    while p < pattern.len() && pattern[p] == b'*' {
        p += 1;
    }
    p == pattern.len()
}

/// Number of runs of '*' that are not at the very end of the pattern (escaped stars and
/// stars inside classes do not count).
fn star_groups_before_end(pattern: &[u8]) -> usize {
    let (mut groups, mut i, mut prev_star) = (0usize, 0usize, false);
    let mut in_class = false;
    while i < pattern.len() {
        let c = pattern[i];
        if c == b'\\' {
            i += 2;
            prev_star = false;
            continue;
        }
        if in_class {
            in_class = c != b']';
        } else if c == b'[' {
            in_class = true;
        } else if c == b'*' {
            if !prev_star {
                let rest_all_stars = pattern[i..].iter().all(|&x| x == b'*');
                if !rest_all_stars {
                    groups += 1;
                }
            }
            prev_star = true;
            i += 1;
            continue;
        }
        prev_star = false;
        i += 1;
    }
    groups
}

fn eq(a: u8, b: u8, nocase: bool) -> bool {
    if nocase {
        a.eq_ignore_ascii_case(&b)
    } else {
        a == b
    }
}

/// Matches one text byte `c` against the pattern element at `p` (not a '*'); returns the
/// index of the next pattern element on success.
fn match_one(pattern: &[u8], mut p: usize, c: u8, nocase: bool) -> Option<usize> {
    match pattern[p] {
        b'?' => Some(p + 1),
        b'\\' if p + 1 < pattern.len() => eq(pattern[p + 1], c, nocase).then_some(p + 2),
        b'[' => {
            p += 1;
            let negate = pattern.get(p) == Some(&b'^');
            if negate {
                p += 1;
            }
            let mut matched = false;
            loop {
                match pattern.get(p) {
                    None => break,
                    Some(b']') => break,
                    Some(b'\\') if p + 1 < pattern.len() => {
                        if pattern[p + 1] == c {
                            matched = true;
                        }
                        p += 2;
                    }
                    Some(&lo) if p + 2 < pattern.len() && pattern[p + 1] == b'-' => {
                        let hi = pattern[p + 2];
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
                        p += 3;
                    }
                    Some(&x) => {
                        if eq(x, c, nocase) {
                            matched = true;
                        }
                        p += 1;
                    }
                }
            }
            // p is at ']' (skip it) or at the end (an unterminated class ends the pattern).
            if p < pattern.len() {
                p += 1;
            }
            (matched != negate).then_some(p)
        }
        x => eq(x, c, nocase).then_some(p + 1),
    }
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
    fn pathological_pattern_is_fast() {
        let p = b"*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b".to_vec();
        let t = vec![b'a'; 5000];
        let started = std::time::Instant::now();
        assert!(!m(&p, &t, false));
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
    }

    #[test]
    fn nesting_limit_as_redis() {
        let text = vec![b'a'; 2000];
        let p1000 = b"*?".repeat(1000);
        let p1001 = b"*?".repeat(1001);
        assert!(m(&p1000, &text, false));
        assert!(
            !m(&p1001, &text, false),
            "over 1000 star levels never match, as in Redis"
        );
        assert!(!m(&b"a*".repeat(1500), &[b'a'; 1500], false));
    }

    #[test]
    fn stars_and_classes_combined() {
        assert!(m(b"a*b*c", b"aXXbYYc", false));
        assert!(!m(b"a*b*c", b"aXXbYY", false));
        assert!(m(b"*[0-9]", b"key7", false));
        assert!(m(b"user:*:name", b"user:42:name", false));
        assert!(!m(b"user:*:name", b"user:42:nam", false));
        assert!(m(b"**", b"", false));
        assert!(m(b"*\\?", b"what?", false));
        assert!(!m(b"*\\?", b"what", false));
    }
}
