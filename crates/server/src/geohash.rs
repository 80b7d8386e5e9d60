//! Redis's geohash: 52-bit interleaved (26 steps of longitude and latitude) cell numbers
//! stored as sorted set scores, their neighbours, the cells a radius or box search covers,
//! the haversine distance with Redis's earth radius, and the textual forms of the replies
//! (`GEOHASH` strings, 4-decimal distances, Redis 8.0's shortest-double coordinates).
//!
//! Pure functions; the arithmetic follows `geohash.c` / `geohash_helper.c` step by step (the
//! same operations in the same order), so that every score, coordinate and distance is the
//! same double as Redis's.

/// Southmost latitude Redis can index (EPSG:900913 limits).
pub const LAT_MIN: f64 = -85.05112878;
/// Northmost latitude Redis can index.
pub const LAT_MAX: f64 = 85.05112878;
/// Westmost longitude.
pub const LON_MIN: f64 = -180.0;
/// Eastmost longitude.
pub const LON_MAX: f64 = 180.0;
/// Steps of a full-precision hash (26 * 2 = 52 bits).
pub const STEP_MAX: u8 = 26;
/// Redis's earth radius (quadratic mean radius of WGS-84), in meters.
pub const EARTH_RADIUS_IN_METERS: f64 = 6372797.560856;
const MERCATOR_MAX: f64 = 20037726.37;
const D_R: f64 = std::f64::consts::PI / 180.0;

fn deg_rad(a: f64) -> f64 {
    a * D_R
}

fn rad_deg(a: f64) -> f64 {
    a / D_R
}

/// A range of degrees.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Range {
    /// Lower end.
    pub min: f64,
    /// Upper end.
    pub max: f64,
}

/// The ranges Redis indexes: longitude, latitude.
pub const WGS84: (Range, Range) = (
    Range {
        min: LON_MIN,
        max: LON_MAX,
    },
    Range {
        min: LAT_MIN,
        max: LAT_MAX,
    },
);

/// A cell: `step * 2` interleaved bits (latitude in the even bits, longitude in the odd).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct HashBits {
    /// The bits.
    pub bits: u64,
    /// Bits per coordinate.
    pub step: u8,
}

impl HashBits {
    /// Redis's `HASHISZERO`: a cleared (unused) cell.
    pub fn is_zero(&self) -> bool {
        self.bits == 0 && self.step == 0
    }

    /// The cell's bits as a 52-bit score prefix (`geohashAlign52Bits`).
    pub fn align52(&self) -> u64 {
        self.bits << (52 - self.step as u32 * 2)
    }
}

/// A cell's area in degrees.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Area {
    /// Longitudes covered.
    pub lon: Range,
    /// Latitudes covered.
    pub lat: Range,
}

/// Spreads the low 32 bits of `x` to the even bits and those of `y` to the odd bits.
fn interleave64(x: u32, y: u32) -> u64 {
    fn spread(v: u32) -> u64 {
        let mut v = v as u64;
        v = (v | (v << 16)) & 0x0000_FFFF_0000_FFFF;
        v = (v | (v << 8)) & 0x00FF_00FF_00FF_00FF;
        v = (v | (v << 4)) & 0x0F0F_0F0F_0F0F_0F0F;
        v = (v | (v << 2)) & 0x3333_3333_3333_3333;
        (v | (v << 1)) & 0x5555_5555_5555_5555
    }
    spread(x) | (spread(y) << 1)
}

/// The inverse of [`interleave64`]: even bits in the low half, odd bits in the high half.
fn deinterleave64(v: u64) -> u64 {
    fn squash(v: u64) -> u64 {
        let mut v = v & 0x5555_5555_5555_5555;
        v = (v | (v >> 1)) & 0x3333_3333_3333_3333;
        v = (v | (v >> 2)) & 0x0F0F_0F0F_0F0F_0F0F;
        v = (v | (v >> 4)) & 0x00FF_00FF_00FF_00FF;
        v = (v | (v >> 8)) & 0x0000_FFFF_0000_FFFF;
        (v | (v >> 16)) & 0x0000_0000_FFFF_FFFF
    }
    squash(v) | (squash(v >> 1) << 32)
}

/// The cell of `step` bits per coordinate holding (`lon`, `lat`) in the given ranges
/// (`geohashEncode`); None outside the ranges or Redis's limits.
pub fn encode(lon_r: Range, lat_r: Range, lon: f64, lat: f64, step: u8) -> Option<HashBits> {
    if step > 32 || step == 0 {
        return None;
    }
    if !(LON_MIN..=LON_MAX).contains(&lon) || !(LAT_MIN..=LAT_MAX).contains(&lat) {
        return None;
    }
    if lat < lat_r.min || lat > lat_r.max || lon < lon_r.min || lon > lon_r.max {
        return None;
    }
    let mut lat_offset = (lat - lat_r.min) / (lat_r.max - lat_r.min);
    let mut lon_offset = (lon - lon_r.min) / (lon_r.max - lon_r.min);
    let scale = (1u64 << step) as f64;
    lat_offset *= scale;
    lon_offset *= scale;
    Some(HashBits {
        bits: interleave64(lat_offset as u32, lon_offset as u32),
        step,
    })
}

/// The full-precision cell of (`lon`, `lat`) on Redis's ranges.
pub fn encode_wgs84(lon: f64, lat: f64) -> Option<HashBits> {
    encode(WGS84.0, WGS84.1, lon, lat, STEP_MAX)
}

/// The area of cell `h` in the given ranges (`geohashDecode`); None for a cleared cell.
pub fn decode(lon_r: Range, lat_r: Range, h: HashBits) -> Option<Area> {
    if h.is_zero() {
        return None;
    }
    let sep = deinterleave64(h.bits);
    let lat_scale = lat_r.max - lat_r.min;
    let lon_scale = lon_r.max - lon_r.min;
    let ilat = sep as u32;
    let ilon = (sep >> 32) as u32;
    let div = (1u64 << h.step) as f64;
    Some(Area {
        lat: Range {
            min: lat_r.min + (ilat as f64 * 1.0 / div) * lat_scale,
            max: lat_r.min + ((ilat as u64 + 1) as f64 * 1.0 / div) * lat_scale,
        },
        lon: Range {
            min: lon_r.min + (ilon as f64 * 1.0 / div) * lon_scale,
            max: lon_r.min + ((ilon as u64 + 1) as f64 * 1.0 / div) * lon_scale,
        },
    })
}

/// The centre of `a`, clamped to Redis's limits: (longitude, latitude).
pub fn area_center(a: &Area) -> (f64, f64) {
    let lon = ((a.lon.min + a.lon.max) / 2.0).clamp(LON_MIN, LON_MAX);
    let lat = ((a.lat.min + a.lat.max) / 2.0).clamp(LAT_MIN, LAT_MAX);
    (lon, lat)
}

/// C's `(uint64_t)d` as x86-64 code built by GCC computes it (out-of-range values included:
/// a score not written by GEOADD still decodes to something, as in Redis).
pub fn score_bits(d: f64) -> u64 {
    const TWO63: f64 = 9_223_372_036_854_775_808.0;
    // cvttsd2si: truncation, or 0x8000000000000000 when out of the i64 range.
    let cvt = |v: f64| -> u64 {
        if v.is_nan() || !(-TWO63..TWO63).contains(&v) {
            1 << 63
        } else {
            v as i64 as u64
        }
    };
    if d < TWO63 {
        cvt(d)
    } else {
        cvt(d - TWO63) ^ (1 << 63)
    }
}

/// The position (longitude, latitude) a sorted set score stands for (`decodeGeohash`).
pub fn decode_score(score: f64) -> (f64, f64) {
    let h = HashBits {
        bits: score_bits(score),
        step: STEP_MAX,
    };
    let a = decode(WGS84.0, WGS84.1, h).expect("step is not zero");
    area_center(&a)
}

/// The score GEOADD stores for (`lon`, `lat`), which must be inside Redis's limits.
pub fn score_of(lon: f64, lat: f64) -> u64 {
    encode_wgs84(lon, lat).map_or(0, |h| h.align52())
}

fn move_x(h: &mut HashBits, d: i8) {
    if d == 0 {
        return;
    }
    let mut x = h.bits & 0xaaaa_aaaa_aaaa_aaaa;
    let y = h.bits & 0x5555_5555_5555_5555;
    let shift = 64 - h.step as u32 * 2;
    let zz = 0x5555_5555_5555_5555u64 >> shift;
    if d > 0 {
        x = x.wrapping_add(zz + 1);
    } else {
        x |= zz;
        x = x.wrapping_sub(zz + 1);
    }
    x &= 0xaaaa_aaaa_aaaa_aaaau64 >> shift;
    h.bits = x | y;
}

fn move_y(h: &mut HashBits, d: i8) {
    if d == 0 {
        return;
    }
    let x = h.bits & 0xaaaa_aaaa_aaaa_aaaa;
    let mut y = h.bits & 0x5555_5555_5555_5555;
    let shift = 64 - h.step as u32 * 2;
    let zz = 0xaaaa_aaaa_aaaa_aaaau64 >> shift;
    if d > 0 {
        y = y.wrapping_add(zz + 1);
    } else {
        y |= zz;
        y = y.wrapping_sub(zz + 1);
    }
    y &= 0x5555_5555_5555_5555u64 >> shift;
    h.bits = x | y;
}

/// The cell itself then its eight neighbours, in the order Redis searches them: centre,
/// north, south, east, west, north-east, north-west, south-east, south-west.
pub fn neighbours(h: HashBits) -> [HashBits; 9] {
    let mv = |dx: i8, dy: i8| {
        let mut n = h;
        move_x(&mut n, dx);
        move_y(&mut n, dy);
        n
    };
    [
        h,
        mv(0, 1),
        mv(0, -1),
        mv(1, 0),
        mv(-1, 0),
        mv(1, 1),
        mv(-1, 1),
        mv(1, -1),
        mv(-1, -1),
    ]
}

/// The shape of a search.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Shape {
    /// BYRADIUS radius (in the unit).
    Radius(f64),
    /// BYBOX width height (in the unit).
    Box(f64, f64),
}

/// A search: centre, shape and the unit's size in meters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Search {
    /// Centre longitude.
    pub lon: f64,
    /// Centre latitude.
    pub lat: f64,
    /// Shape in the unit.
    pub shape: Shape,
    /// Meters per unit.
    pub conversion: f64,
}

/// The steps of the cells to search for a radius at a latitude
/// (`geohashEstimateStepsByRadius`).
pub fn estimate_steps(mut range_meters: f64, lat: f64) -> u8 {
    if range_meters == 0.0 {
        return 26;
    }
    let mut step: i32 = 1;
    while range_meters < MERCATOR_MAX {
        range_meters *= 2.0;
        step += 1;
    }
    step -= 2;
    if !(-66.0..=66.0).contains(&lat) {
        step -= 1;
        if !(-80.0..=80.0).contains(&lat) {
            step -= 1;
        }
    }
    step.clamp(1, 26) as u8
}

/// The bounding box of a search: min longitude, min latitude, max longitude, max latitude
/// (`geohashBoundingBox`).
pub fn bounding_box(s: &Search) -> [f64; 4] {
    let (h, w) = match s.shape {
        Shape::Radius(r) => (s.conversion * r, s.conversion * r),
        Shape::Box(w, h) => (s.conversion * (h / 2.0), s.conversion * (w / 2.0)),
    };
    let lat_delta = rad_deg(h / EARTH_RADIUS_IN_METERS);
    let lon_delta_top = rad_deg(w / EARTH_RADIUS_IN_METERS / deg_rad(s.lat + lat_delta).cos());
    let lon_delta_bottom = rad_deg(w / EARTH_RADIUS_IN_METERS / deg_rad(s.lat - lat_delta).cos());
    let south = s.lat < 0.0;
    let d = if south {
        lon_delta_bottom
    } else {
        lon_delta_top
    };
    [s.lon - d, s.lat - lat_delta, s.lon + d, s.lat + lat_delta]
}

/// The cells to search, in Redis's order (centre first; cleared cells are skipped by the
/// caller), and the search's bounding box (`geohashCalculateAreasByShapeWGS84`).
pub fn search_cells(s: &Search) -> [HashBits; 9] {
    let [min_lon, min_lat, max_lon, max_lat] = bounding_box(s);
    let radius_meters = match s.shape {
        Shape::Radius(r) => r,
        Shape::Box(w, h) => ((w / 2.0) * (w / 2.0) + (h / 2.0) * (h / 2.0)).sqrt(),
    } * s.conversion;
    let mut steps = estimate_steps(radius_meters, s.lat);
    let (lr, ar) = WGS84;
    let enc = |steps| encode(lr, ar, s.lon, s.lat, steps).unwrap_or_default();
    let dec = |h| decode(lr, ar, h);
    let mut hash = enc(steps);
    let mut n = neighbours(hash);
    let mut area = dec(hash);
    let decrease = {
        let north = dec(n[1]);
        let south = dec(n[2]);
        let east = dec(n[3]);
        let west = dec(n[4]);
        north.is_some_and(|a| a.lat.max < max_lat)
            || south.is_some_and(|a| a.lat.min > min_lat)
            || east.is_some_and(|a| a.lon.max < max_lon)
            || west.is_some_and(|a| a.lon.min > min_lon)
    };
    if steps > 1 && decrease {
        steps -= 1;
        hash = enc(steps);
        n = neighbours(hash);
        area = dec(hash);
    }
    if steps >= 2 {
        // A cleared (zero) hash decodes to nothing; Redis then compares an all-zero area.
        let a = area.unwrap_or(Area {
            lon: Range { min: 0.0, max: 0.0 },
            lat: Range { min: 0.0, max: 0.0 },
        });
        let zero = HashBits::default();
        if a.lat.min < min_lat {
            n[2] = zero; // south
            n[8] = zero; // south-west
            n[7] = zero; // south-east
        }
        if a.lat.max > max_lat {
            n[1] = zero; // north
            n[5] = zero; // north-east
            n[6] = zero; // north-west
        }
        if a.lon.min < min_lon {
            n[4] = zero; // west
            n[8] = zero;
            n[6] = zero;
        }
        if a.lon.max > max_lon {
            n[3] = zero; // east
            n[7] = zero;
            n[5] = zero;
        }
    }
    n
}

/// The score range [min, max) of the members inside cell `h`.
pub fn cell_scores(h: HashBits) -> (u64, u64) {
    let min = h.align52();
    let next = HashBits {
        bits: h.bits + 1,
        step: h.step,
    };
    (min, next.align52())
}

/// The distance in meters along a meridian between two latitudes.
pub fn lat_distance(lat1: f64, lat2: f64) -> f64 {
    EARTH_RADIUS_IN_METERS * (deg_rad(lat2) - deg_rad(lat1)).abs()
}

/// The haversine distance in meters between two points (`geohashGetDistance`).
pub fn distance(lon1: f64, lat1: f64, lon2: f64, lat2: f64) -> f64 {
    let lon1r = deg_rad(lon1);
    let lon2r = deg_rad(lon2);
    let v = ((lon2r - lon1r) / 2.0).sin();
    if v == 0.0 {
        return lat_distance(lat1, lat2);
    }
    let lat1r = deg_rad(lat1);
    let lat2r = deg_rad(lat2);
    let u = ((lat2r - lat1r) / 2.0).sin();
    let a = u * u + lat1r.cos() * lat2r.cos() * v * v;
    2.0 * EARTH_RADIUS_IN_METERS * a.sqrt().asin()
}

/// Whether (`lon`, `lat`) is inside search `s`, and then its distance in meters from the
/// centre (`geoWithinShape` on a decoded point).
pub fn within(s: &Search, lon: f64, lat: f64) -> Option<f64> {
    match s.shape {
        Shape::Radius(r) => {
            let d = distance(s.lon, s.lat, lon, lat);
            // Rejected only when farther, as Redis tests it (a NaN distance would be in).
            #[allow(clippy::neg_cmp_op_on_partial_ord)]
            let inside = !(d > r * s.conversion);
            inside.then_some(d)
        }
        Shape::Box(w, h) => {
            let (w, h) = (w * s.conversion, h * s.conversion);
            if lat_distance(s.lat, lat) > h / 2.0 {
                return None;
            }
            if distance(lon, lat, s.lon, lat) > w / 2.0 {
                return None;
            }
            Some(distance(s.lon, s.lat, lon, lat))
        }
    }
}

/// The 11-character standard geohash of a score (GEOHASH): decoded, then encoded again
/// on the standard ranges (-180..180, -90..90); the 11th character is always `0`.
pub fn geohash_string(score: f64) -> [u8; 11] {
    const ALPHABET: &[u8; 32] = b"0123456789bcdefghjkmnpqrstuvwxyz";
    let (lon, lat) = decode_score(score);
    let bits = encode(
        Range {
            min: -180.0,
            max: 180.0,
        },
        Range {
            min: -90.0,
            max: 90.0,
        },
        lon,
        lat,
        26,
    )
    .map_or(0, |h| h.bits);
    let mut out = [b'0'; 11];
    for (i, c) in out.iter_mut().enumerate().take(10) {
        *c = ALPHABET[((bits >> (52 - (i + 1) * 5)) & 0x1f) as usize];
    }
    out
}

/// A distance with 4 decimals, as Redis's `fixedpoint_d2string(.., 4)` writes it.
pub fn distance_text(d: f64) -> String {
    if d == 0.0 {
        return "0.0000".to_string();
    }
    // llrint: round half to even; out of range gives i64::MIN as on x86-64.
    let r = (d * 10000.0).round_ties_even();
    let v: i64 = if (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&r) {
        r as i64
    } else {
        i64::MIN
    };
    let neg = v < 0;
    let u = v.unsigned_abs();
    format!(
        "{}{}.{:04}",
        if neg { "-" } else { "" },
        u / 10000,
        u % 10000
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interleave_round_trips() {
        for (x, y) in [
            (0u32, 0u32),
            (1, 0),
            (0, 1),
            (0x3ff_ffff, 0x155_5555),
            (u32::MAX, 7),
        ] {
            let v = interleave64(x, y);
            assert_eq!(deinterleave64(v), x as u64 | ((y as u64) << 32));
        }
        assert_eq!(interleave64(1, 0), 1);
        assert_eq!(interleave64(0, 1), 2);
    }

    #[test]
    fn scores_and_positions_match_redis() {
        // Values from Redis 8.0.2: GEOADD Sicily 13.361389 38.115556 "Palermo", then ZSCORE
        // and GEOPOS.
        assert_eq!(score_of(13.361389, 38.115556), 3479099956230698);
        assert_eq!(score_of(15.087269, 37.502669), 3479447370796909);
        let (lon, lat) = decode_score(3479099956230698.0);
        let text = |d: f64| {
            let mut v = Vec::new();
            skerry_resp::format_double(d, &mut v);
            v
        };
        assert_eq!(text(lon), b"13.361389338970184");
        assert_eq!(text(lat), b"38.1155563954963");
        assert_eq!(&geohash_string(3479099956230698.0), b"sqc8b49rny0");
        assert_eq!(&geohash_string(3479447370796909.0), b"sqdtr74hyu0");
    }

    #[test]
    fn distances_match_redis() {
        let (a, b) = (
            decode_score(3479099956230698.0),
            decode_score(3479447370796909.0),
        );
        let d = distance(a.0, a.1, b.0, b.1);
        assert_eq!(distance_text(d), "166274.1516");
        assert_eq!(distance_text(d / 1000.0), "166.2742");
        assert_eq!(distance_text(0.0), "0.0000");
        assert_eq!(distance_text(0.00005), "0.0000"); // llrint(0.5): half to even
        assert_eq!(distance_text(0.00016), "0.0002");
        // Same longitude: the meridian shortcut.
        assert_eq!(distance(10.0, 0.0, 10.0, 1.0), lat_distance(0.0, 1.0));
    }

    #[test]
    fn limits_refuse_outside_points() {
        assert!(encode_wgs84(180.0, 85.05112878).is_some());
        assert!(encode_wgs84(180.000001, 0.0).is_none());
        assert!(encode_wgs84(0.0, 85.06).is_none());
        assert!(encode_wgs84(0.0, -85.06).is_none());
    }

    #[test]
    fn neighbours_move_one_cell() {
        let h = encode_wgs84(13.0, 38.0).unwrap();
        let n = neighbours(HashBits {
            bits: h.bits >> 40,
            step: 6,
        });
        let a = decode(WGS84.0, WGS84.1, n[0]).unwrap();
        let north = decode(WGS84.0, WGS84.1, n[1]).unwrap();
        let east = decode(WGS84.0, WGS84.1, n[3]).unwrap();
        assert_eq!(north.lat.min, a.lat.max);
        assert_eq!(east.lon.min, a.lon.max);
        assert_eq!(north.lon, a.lon);
        // Cell score ranges are consecutive 52-bit prefixes.
        let (lo, hi) = cell_scores(n[0]);
        assert_eq!(hi - lo, 1 << 40);
    }

    #[test]
    fn steps_follow_the_radius() {
        assert_eq!(estimate_steps(0.0, 0.0), 26);
        assert!(estimate_steps(1000.0, 0.0) > estimate_steps(100_000.0, 0.0));
        assert_eq!(
            estimate_steps(1000.0, 70.0) + 1,
            estimate_steps(1000.0, 0.0)
        );
        assert_eq!(estimate_steps(1e9, 0.0), 1);
    }

    #[test]
    fn score_bits_follow_x86_conversions() {
        assert_eq!(score_bits(5.0), 5);
        assert_eq!(score_bits(-1.0), u64::MAX);
        assert_eq!(score_bits(f64::INFINITY), 0);
        assert_eq!(score_bits(f64::NEG_INFINITY), 1 << 63);
        assert_eq!(score_bits(1.8e19), 18_000_000_000_000_000_000);
    }
}
