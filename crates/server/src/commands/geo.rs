//! GEO commands (Redis's `geo.c`) over sorted sets: a member's score is its 52-bit geohash
//! (see [`crate::geohash`]). GEOADD is ZADD with encoded scores; the searches walk the score
//! ranges of the cells around the centre in Redis's order, filter by exact distance, sort
//! as Redis does (glibc's stable merge sort, or Redis's partial quicksort with COUNT) and
//! reply or store the result.
//!
//! Replies and errors follow Redis 8.0: coordinates as 8.0's shortest doubles, distances
//! with 4 decimals, the argument checks in Redis's order.

use super::zset::{parse_score, store_zset, zadd, zset_ref};
use super::{is, parse_i64, Exec};
use crate::coll::zset::{ScoreRange, Zset};
use crate::geohash::{self as gh, Search, Shape};
use crate::reply::{errors, Reply};
use std::cmp::Ordering;

const UNIT_ERR: &str = "ERR unsupported unit provided. please use M, KM, FT, MI";
const MEMBER_ERR: &str = "ERR could not decode requested zset member";

// ----- arguments -----

/// The meters per unit of `u` (`extractUnitOrReply`).
fn unit(r: &mut Reply, u: &[u8]) -> Option<f64> {
    let c = if is(u, "m") {
        1.0
    } else if is(u, "km") {
        1000.0
    } else if is(u, "ft") {
        0.3048
    } else if is(u, "mi") {
        1609.34
    } else {
        r.error(UNIT_ERR);
        return None;
    };
    Some(c)
}

/// A double argument; `msg` is the error for a non-number (Redis's default otherwise).
fn double(r: &mut Reply, b: &[u8], msg: Option<&str>) -> Option<f64> {
    let v = parse_score(b);
    if v.is_none() {
        r.error(msg.unwrap_or(errors::NOT_FLOAT));
    }
    v
}

/// C's `%f`.
fn c_f(v: f64) -> String {
    if v.is_infinite() {
        return if v < 0.0 { "-inf" } else { "inf" }.to_string();
    }
    format!("{v:.6}")
}

/// A longitude and a latitude (`extractLongLatOrReply`).
fn lon_lat(r: &mut Reply, a: &[&[u8]]) -> Option<(f64, f64)> {
    let lon = double(r, a[0], None)?;
    let lat = double(r, a[1], None)?;
    if !(gh::LON_MIN..=gh::LON_MAX).contains(&lon) || !(gh::LAT_MIN..=gh::LAT_MAX).contains(&lat) {
        r.error(&format!(
            "ERR invalid longitude,latitude pair {},{}",
            c_f(lon),
            c_f(lat)
        ));
        return None;
    }
    Some((lon, lat))
}

/// `radius unit` (`extractDistanceOrReply`): the radius and the unit's meters.
fn radius(r: &mut Reply, a: &[&[u8]]) -> Option<(f64, f64)> {
    let d = double(r, a[0], Some("ERR need numeric radius"))?;
    if d < 0.0 {
        r.error("ERR radius cannot be negative");
        return None;
    }
    Some((d, unit(r, a[1])?))
}

/// `width height unit` (`extractBoxOrReply`).
fn box_(r: &mut Reply, a: &[&[u8]]) -> Option<(f64, f64, f64)> {
    let w = double(r, a[0], Some("ERR need numeric width"))?;
    let h = double(r, a[1], Some("ERR need numeric height"))?;
    if h < 0.0 || w < 0.0 {
        r.error("ERR height or width cannot be negative");
        return None;
    }
    Some((w, h, unit(r, a[2])?))
}

/// The position of `member` in `z` (`longLatFromMember`).
fn member_pos(z: &Zset, member: &[u8]) -> Option<(f64, f64)> {
    z.score(member).map(gh::decode_score)
}

// ----- replies -----

/// A double as Redis 8.0 replies it (RESP2: bulk string; RESP3: `,` double).
fn reply_double(r: &mut Reply, d: f64) {
    r.double(d);
}

/// C's `(long long)d` on x86-64 (WITHHASH of a score).
fn c_ll(d: f64) -> i64 {
    if (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&d) {
        d as i64
    } else {
        i64::MIN
    }
}

// ----- GEOADD -----

/// GEOADD key [NX|XX] [CH] longitude latitude member [...]
pub fn geoadd(x: &mut Exec, a: &[&[u8]]) {
    let (mut nx, mut xx) = (false, false);
    let mut i = 2;
    while i < a.len() {
        if is(a[i], "nx") {
            nx = true;
        } else if is(a[i], "xx") {
            xx = true;
        } else if !is(a[i], "ch") {
            break;
        }
        i += 1;
    }
    if !(a.len() - i).is_multiple_of(3) || (xx && nx) {
        return x.reply.error(errors::SYNTAX);
    }
    let mut scores = Vec::with_capacity((a.len() - i) / 3);
    for e in a[i..].chunks(3) {
        let Some((lon, lat)) = lon_lat(x.reply, e) else {
            return;
        };
        scores.push(gh::score_of(lon, lat).to_string());
    }
    let mut z: Vec<&[u8]> = Vec::with_capacity(i + scores.len() * 2);
    z.push(b"zadd");
    z.extend_from_slice(&a[1..i]);
    for (s, e) in scores.iter().zip(a[i..].chunks(3)) {
        z.push(s.as_bytes());
        z.push(e[2]);
    }
    zadd(x, &z);
}

// ----- GEOPOS, GEODIST, GEOHASH -----

/// GEOPOS key [member ...]
pub fn geopos(x: &mut Exec, a: &[&[u8]]) {
    let Ok(z) = zset_ref(x.ks, x.reply, x.db, a[1], x.now_ms) else {
        return;
    };
    x.reply.array(a.len() - 2);
    for m in &a[2..] {
        match z.and_then(|z| member_pos(z, m)) {
            Some((lon, lat)) => {
                x.reply.array(2);
                reply_double(x.reply, lon);
                reply_double(x.reply, lat);
            }
            None => x.reply.null_array(),
        }
    }
}

/// GEODIST key member1 member2 [M|KM|FT|MI]
pub fn geodist(x: &mut Exec, a: &[&[u8]]) {
    let mut to_meter = 1.0;
    if a.len() == 5 {
        match unit(x.reply, a[4]) {
            Some(u) => to_meter = u,
            None => return,
        }
    } else if a.len() > 5 {
        return x.reply.error(errors::SYNTAX);
    }
    let z = match zset_ref(x.ks, x.reply, x.db, a[1], x.now_ms) {
        Ok(Some(z)) => z,
        Ok(None) => return x.reply.null(),
        Err(()) => return,
    };
    match (member_pos(z, a[2]), member_pos(z, a[3])) {
        (Some(p), Some(q)) => {
            let d = gh::distance(p.0, p.1, q.0, q.1) / to_meter;
            x.reply.bulk(gh::distance_text(d).as_bytes());
        }
        _ => x.reply.null(),
    }
}

/// GEOHASH key [member ...]
pub fn geohash(x: &mut Exec, a: &[&[u8]]) {
    let Ok(z) = zset_ref(x.ks, x.reply, x.db, a[1], x.now_ms) else {
        return;
    };
    x.reply.array(a.len() - 2);
    for m in &a[2..] {
        match z.and_then(|z| z.score(m)) {
            Some(s) => x.reply.bulk(&gh::geohash_string(s)),
            None => x.reply.null(),
        }
    }
}

// ----- searches -----

/// One point found.
struct Point {
    lon: f64,
    lat: f64,
    dist: f64,
    score: f64,
    member: Vec<u8>,
}

/// Which command (`georadiusGeneric`'s flags).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// GEORADIUS[_RO]: centre from coordinates.
    Coords { store: bool },
    /// GEORADIUSBYMEMBER[_RO]: centre from a member.
    Member { store: bool },
    /// GEOSEARCH / GEOSEARCHSTORE.
    Search { store: bool },
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Sort {
    None,
    Asc,
    Desc,
}

/// Appends the members of `z` inside `s` in the cells Redis searches, in its order, stopping
/// at `limit` points (0: no limit).
fn points_in(z: &Zset, s: &Search, limit: usize) -> Vec<Point> {
    let cells = gh::search_cells(s);
    let mut out: Vec<Point> = Vec::new();
    let mut last: usize = 0;
    for (i, c) in cells.iter().enumerate() {
        if c.is_zero() {
            continue;
        }
        // Redis skips a cell equal to the last one searched (never comparing with the
        // centre cell, its index 0).
        if last != 0 && *c == cells[last] {
            continue;
        }
        if limit != 0 && out.len() >= limit {
            break;
        }
        let (min, max) = gh::cell_scores(*c);
        let range = ScoreRange {
            min: min as f64,
            max: max as f64,
            minex: false,
            maxex: true,
        };
        for (m, score) in z.score_range(&range) {
            let (lon, lat) = gh::decode_score(score);
            if let Some(dist) = gh::within(s, lon, lat) {
                out.push(Point {
                    lon,
                    lat,
                    dist,
                    score,
                    member: m.to_vec(),
                });
            }
            if limit != 0 && out.len() >= limit {
                break;
            }
        }
        last = i;
    }
    out
}

/// Redis's comparison of two distances (`sort_gp_asc`): NaN compares as smaller.
fn cmp_dist(a: f64, b: f64) -> Ordering {
    if a > b {
        Ordering::Greater
    } else if a == b {
        Ordering::Equal
    } else {
        Ordering::Less
    }
}

/// glibc's `qsort` (a stable top-down merge sort), with a comparator that may not be a
/// total order (NaN distances), exactly as it orders the points.
fn merge_sort<T>(v: &mut Vec<T>, cmp: &impl Fn(&T, &T) -> Ordering) {
    fn rec<T>(v: Vec<T>, cmp: &impl Fn(&T, &T) -> Ordering) -> Vec<T> {
        if v.len() <= 1 {
            return v;
        }
        let mut v = v;
        let n1 = v.len() / 2;
        let right = rec(v.split_off(n1), cmp);
        let left = rec(v, cmp);
        let mut out = Vec::with_capacity(left.len() + right.len());
        let mut l = left.into_iter().peekable();
        let mut r = right.into_iter().peekable();
        while let (Some(a), Some(b)) = (l.peek(), r.peek()) {
            if cmp(a, b) != Ordering::Greater {
                out.push(l.next().expect("peeked"));
            } else {
                out.push(r.next().expect("peeked"));
            }
        }
        out.extend(l);
        out.extend(r);
        out
    }
    let taken = std::mem::take(v);
    *v = rec(taken, cmp);
}

fn med3<T>(v: &[T], a: usize, b: usize, c: usize, cmp: &impl Fn(&T, &T) -> Ordering) -> usize {
    if cmp(&v[a], &v[b]).is_lt() {
        if cmp(&v[b], &v[c]).is_lt() {
            b
        } else if cmp(&v[a], &v[c]).is_lt() {
            c
        } else {
            a
        }
    } else if cmp(&v[b], &v[c]).is_gt() {
        b
    } else if cmp(&v[a], &v[c]).is_lt() {
        a
    } else {
        c
    }
}

/// Redis's `pqsort`: the BSD quicksort that only sorts the parts overlapping ranks
/// `lrange..=rrange` (so those ranks hold the right elements, in the order it leaves them).
fn pqsort<T>(v: &mut [T], lrange: usize, rrange: usize, cmp: &impl Fn(&T, &T) -> Ordering) {
    let overlaps = |off: usize, cnt: usize| {
        !((lrange < off && rrange < off) || (lrange >= off + cnt && rrange >= off + cnt))
    };
    fn rec<T>(
        v: &mut [T],
        mut a: usize,
        mut n: usize,
        cmp: &impl Fn(&T, &T) -> Ordering,
        overlaps: &impl Fn(usize, usize) -> bool,
    ) {
        loop {
            if n < 7 {
                for pm in a + 1..a + n {
                    let mut pl = pm;
                    while pl > a && cmp(&v[pl - 1], &v[pl]).is_gt() {
                        v.swap(pl, pl - 1);
                        pl -= 1;
                    }
                }
                return;
            }
            let mut pm = a + n / 2;
            if n > 7 {
                let mut pl = a;
                let mut pn = a + n - 1;
                if n > 40 {
                    let d = n / 8;
                    pl = med3(v, pl, pl + d, pl + 2 * d, cmp);
                    pm = med3(v, pm - d, pm, pm + d, cmp);
                    pn = med3(v, pn - 2 * d, pn - d, pn, cmp);
                }
                pm = med3(v, pl, pm, pn, cmp);
            }
            v.swap(a, pm);
            let (mut pa, mut pb) = (a + 1, a + 1);
            let (mut pc, mut pd) = (a + n - 1, a + n - 1);
            loop {
                while pb <= pc {
                    let c = cmp(&v[pb], &v[a]);
                    if c.is_gt() {
                        break;
                    }
                    if c.is_eq() {
                        v.swap(pa, pb);
                        pa += 1;
                    }
                    pb += 1;
                }
                while pb <= pc {
                    let c = cmp(&v[pc], &v[a]);
                    if c.is_lt() {
                        break;
                    }
                    if c.is_eq() {
                        v.swap(pc, pd);
                        pd -= 1;
                    }
                    pc -= 1;
                }
                if pb > pc {
                    break;
                }
                v.swap(pb, pc);
                pb += 1;
                pc -= 1;
            }
            let pn = a + n;
            let r = (pa - a).min(pb - pa);
            for i in 0..r {
                v.swap(a + i, pb - r + i);
            }
            let r = (pd - pc).min(pn - pd - 1);
            for i in 0..r {
                v.swap(pb + i, pn - r + i);
            }
            let r = pb - pa;
            if r > 1 && overlaps(a, r) {
                rec(v, a, r, cmp, overlaps);
            }
            let r = pd - pc;
            if r > 1 {
                a = pn - r;
                n = r;
                if overlaps(a, n) {
                    continue;
                }
            }
            return;
        }
    }
    let n = v.len();
    rec(v, 0, n, cmp, &overlaps);
}

/// Redis's `georadiusGeneric`: the source key at `a[src]`.
fn search_generic(x: &mut Exec, a: &[&[u8]], src: usize, kind: Kind) {
    let t = x.thresholds();
    let z = match zset_ref(x.ks, x.reply, x.db, a[src], x.now_ms) {
        Ok(z) => z,
        Err(()) => return,
    };
    let r = &mut *x.reply;
    let mut lon = 0.0;
    let mut lat = 0.0;
    let mut shape: Option<Shape> = None;
    let mut conversion = 1.0;
    let mut storekey: Option<&[u8]> = None;
    let mut storedist = false;
    let base = match kind {
        Kind::Coords { .. } => {
            let Some(p) = lon_lat(r, &a[2..4]) else {
                return;
            };
            (lon, lat) = p;
            let Some((rad, c)) = radius(r, &a[4..6]) else {
                return;
            };
            shape = Some(Shape::Radius(rad));
            conversion = c;
            6
        }
        Kind::Member { .. } => {
            if let Some(z) = z {
                let Some(p) = member_pos(z, a[2]) else {
                    return r.error(MEMBER_ERR);
                };
                (lon, lat) = p;
                let Some((rad, c)) = radius(r, &a[3..5]) else {
                    return;
                };
                shape = Some(Shape::Radius(rad));
                conversion = c;
            }
            5
        }
        Kind::Search { store } => {
            if store {
                storekey = Some(a[1]);
                3
            } else {
                2
            }
        }
    };
    let allow_store = matches!(
        kind,
        Kind::Coords { store: true } | Kind::Member { store: true }
    );
    let search = matches!(kind, Kind::Search { .. });
    let searchstore = kind == (Kind::Search { store: true });
    let (mut withdist, mut withhash, mut withcoord) = (false, false, false);
    let (mut frommember, mut fromloc, mut byradius, mut bybox) = (false, false, false, false);
    let mut sort = Sort::None;
    let mut any = false;
    let mut count: i64 = 0;
    let rest = &a[base.min(a.len())..];
    let remaining = rest.len();
    let mut i = 0;
    while i < remaining {
        let arg = rest[i];
        if is(arg, "withdist") {
            withdist = true;
        } else if is(arg, "withhash") {
            withhash = true;
        } else if is(arg, "withcoord") {
            withcoord = true;
        } else if is(arg, "any") {
            any = true;
        } else if is(arg, "asc") {
            sort = Sort::Asc;
        } else if is(arg, "desc") {
            sort = Sort::Desc;
        } else if is(arg, "count") && i + 1 < remaining {
            let Some(c) = parse_i64(rest[i + 1]) else {
                return r.error(errors::NOT_INT);
            };
            if c <= 0 {
                return r.error("ERR COUNT must be > 0");
            }
            count = c;
            i += 1;
        } else if (is(arg, "store") || is(arg, "storedist")) && i + 1 < remaining && allow_store {
            storekey = Some(rest[i + 1]);
            storedist = is(arg, "storedist");
            i += 1;
        } else if is(arg, "storedist") && searchstore {
            storedist = true;
        } else if is(arg, "frommember") && i + 1 < remaining && search && !fromloc {
            if let Some(z) = z {
                let Some(p) = member_pos(z, rest[i + 1]) else {
                    return r.error(MEMBER_ERR);
                };
                (lon, lat) = p;
            }
            frommember = true;
            i += 1;
        } else if is(arg, "fromlonlat") && i + 2 < remaining && search && !frommember {
            let Some(p) = lon_lat(r, &rest[i + 1..i + 3]) else {
                return;
            };
            (lon, lat) = p;
            fromloc = true;
            i += 2;
        } else if is(arg, "byradius") && i + 2 < remaining && search && !bybox {
            let Some((rad, c)) = radius(r, &rest[i + 1..i + 3]) else {
                return;
            };
            shape = Some(Shape::Radius(rad));
            conversion = c;
            byradius = true;
            i += 2;
        } else if is(arg, "bybox") && i + 3 < remaining && search && !byradius {
            let Some((w, h, c)) = box_(r, &rest[i + 1..i + 4]) else {
                return;
            };
            shape = Some(Shape::Box(w, h));
            conversion = c;
            bybox = true;
            i += 3;
        } else {
            return r.error(errors::SYNTAX);
        }
        i += 1;
    }
    let name = String::from_utf8_lossy(a[0]);
    if storekey.is_some() && (withdist || withhash || withcoord) {
        return r.error(&format!(
            "ERR {} is not compatible with WITHDIST, WITHHASH and WITHCOORD options",
            if searchstore {
                "GEOSEARCHSTORE"
            } else {
                "STORE option in GEORADIUS"
            }
        ));
    }
    if search && !(frommember || fromloc) {
        return r.error(&format!(
            "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for {name}"
        ));
    }
    if search && !(byradius || bybox) {
        return r.error(&format!(
            "ERR exactly one of BYRADIUS and BYBOX can be specified for {name}"
        ));
    }
    if any && count == 0 {
        return r.error("ERR the ANY argument requires COUNT argument");
    }
    let Some(z) = z else {
        match storekey {
            Some(k) => {
                x.ks.delete(x.db, k, x.now_ms);
                x.reply.int(0);
            }
            None => x.reply.array(0),
        }
        return;
    };
    if count != 0 && sort == Sort::None && !any {
        sort = Sort::Asc;
    }
    let s = Search {
        lon,
        lat,
        shape: shape.unwrap_or(Shape::Radius(0.0)),
        conversion,
    };
    let limit = if any { count as usize } else { 0 };
    let mut points = points_in(z, &s, limit);
    if points.is_empty() && storekey.is_none() {
        return r.array(0);
    }
    let total = points.len();
    let returned = if count == 0 || (total as i64) < count {
        total
    } else {
        count as usize
    };
    if sort != Sort::None {
        let desc = sort == Sort::Desc;
        let cmp = move |p: &Point, q: &Point| {
            let o = cmp_dist(p.dist, q.dist);
            if desc {
                o.reverse()
            } else {
                o
            }
        };
        if returned == total {
            merge_sort(&mut points, &cmp);
        } else {
            pqsort(&mut points, 0, returned - 1, &cmp);
        }
    }
    points.truncate(returned);
    match storekey {
        None => {
            let opts = withdist as usize + withcoord as usize + withhash as usize;
            r.array(returned);
            for p in &points {
                if opts > 0 {
                    r.array(opts + 1);
                }
                r.bulk(&p.member);
                if withdist {
                    r.bulk(gh::distance_text(p.dist / conversion).as_bytes());
                }
                if withhash {
                    r.int(c_ll(p.score));
                }
                if withcoord {
                    r.array(2);
                    reply_double(r, p.lon);
                    reply_double(r, p.lat);
                }
            }
        }
        Some(k) => {
            let mut out = Zset::default();
            for p in &points {
                let score = if storedist {
                    p.dist / conversion
                } else {
                    p.score
                };
                out.insert(&p.member, score);
            }
            out.note_encoding(&t);
            if store_zset(x, k, out) {
                x.reply.int(returned as i64);
            }
        }
    }
}

/// GEORADIUS key longitude latitude radius unit [options] [STORE key] [STOREDIST key]
pub fn georadius(x: &mut Exec, a: &[&[u8]]) {
    search_generic(x, a, 1, Kind::Coords { store: true });
}

/// GEORADIUS_RO key longitude latitude radius unit [options]
pub fn georadius_ro(x: &mut Exec, a: &[&[u8]]) {
    search_generic(x, a, 1, Kind::Coords { store: false });
}

/// GEORADIUSBYMEMBER key member radius unit [options] [STORE key] [STOREDIST key]
pub fn georadiusbymember(x: &mut Exec, a: &[&[u8]]) {
    search_generic(x, a, 1, Kind::Member { store: true });
}

/// GEORADIUSBYMEMBER_RO key member radius unit [options]
pub fn georadiusbymember_ro(x: &mut Exec, a: &[&[u8]]) {
    search_generic(x, a, 1, Kind::Member { store: false });
}

/// GEOSEARCH key FROMMEMBER|FROMLONLAT ... BYRADIUS|BYBOX ... [options]
pub fn geosearch(x: &mut Exec, a: &[&[u8]]) {
    search_generic(x, a, 1, Kind::Search { store: false });
}

/// GEOSEARCHSTORE destination source FROMMEMBER|FROMLONLAT ... BYRADIUS|BYBOX ...
/// [options] [STOREDIST]
pub fn geosearchstore(x: &mut Exec, a: &[&[u8]]) {
    search_generic(x, a, 2, Kind::Search { store: true });
}

/// Key finder of GEORADIUS and GEORADIUSBYMEMBER (Redis's `georadiusGetKeys`): the source,
/// then the key of the last STORE or STOREDIST option.
pub fn keys_georadius(argv: &[&[u8]]) -> smallvec::SmallVec<[usize; 8]> {
    let mut keys = smallvec::SmallVec::new();
    if argv.len() < 2 {
        return keys;
    }
    keys.push(1);
    let mut stored = None;
    let mut i = 5;
    while i < argv.len() {
        if (is(argv[i], "store") || is(argv[i], "storedist")) && i + 1 < argv.len() {
            stored = Some(i + 1);
            i += 1;
        }
        i += 1;
    }
    if let Some(s) = stored {
        keys.push(s);
    }
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_keys_are_found() {
        let a: Vec<&[u8]> = vec![b"georadius", b"k", b"1", b"2", b"3", b"km", b"STORE", b"d"];
        assert_eq!(keys_georadius(&a).to_vec(), vec![1, 7]);
        let b: Vec<&[u8]> = vec![b"georadius", b"k", b"1", b"2", b"3", b"km", b"store"];
        assert_eq!(keys_georadius(&b).to_vec(), vec![1]);
        let c: Vec<&[u8]> = vec![
            b"georadiusbymember",
            b"k",
            b"m",
            b"3",
            b"km",
            b"storedist",
            b"d1",
            b"store",
            b"d2",
        ];
        assert_eq!(keys_georadius(&c).to_vec(), vec![1, 8]);
    }

    #[test]
    fn pqsort_sorts_the_asked_ranks() {
        let mut seed = 12345u64;
        for n in [1usize, 5, 7, 8, 41, 100, 500] {
            for take in [1usize, 3, 10] {
                let take = take.min(n);
                let mut v: Vec<u32> = (0..n)
                    .map(|_| {
                        seed = seed
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                        ((seed >> 33) % 50) as u32
                    })
                    .collect();
                let mut sorted = v.clone();
                sorted.sort();
                pqsort(&mut v, 0, take - 1, &|a: &u32, b: &u32| a.cmp(b));
                assert_eq!(&v[..take], &sorted[..take], "n {n} take {take}");
            }
        }
    }

    #[test]
    fn merge_sort_is_stable() {
        let mut v: Vec<(u8, usize)> = [3u8, 1, 3, 2, 1, 3].iter().copied().zip(0..).collect();
        merge_sort(&mut v, &|a: &(u8, usize), b: &(u8, usize)| a.0.cmp(&b.0));
        assert_eq!(v, vec![(1, 1), (1, 4), (2, 3), (3, 0), (3, 2), (3, 5)]);
    }

    #[test]
    fn c_formats() {
        assert_eq!(c_f(200.0), "200.000000");
        assert_eq!(c_f(f64::INFINITY), "inf");
        assert_eq!(c_f(-0.0), "-0.000000");
        assert_eq!(c_ll(3.0), 3);
        assert_eq!(c_ll(f64::INFINITY), i64::MIN);
    }
}
