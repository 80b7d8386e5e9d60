//! COMMAND DOCS entries of the GEO commands (`commands/geo.rs`), from Redis 8.0.2's
//! `src/commands/geo*.json`.

use super::*;

#[rustfmt::skip]
pub(super) static DOCS: &[Doc] = &[
    doc("geoadd", "3.2.0", "O(log(N)) for each item added, where N is the number of elements in the sorted set.")
        .history(&[
            ("6.2.0", "Added the `CH`, `NX` and `XX` options."),
        ])
        .args(&[
            key("key", 0),
            oneof("condition", &[pure("nx", "NX"), pure("xx", "XX")]).since("6.2.0").optional(),
            pure("change", "CH").since("6.2.0").optional(),
            block("data", &[double("longitude"), double("latitude"), string("member")]).multiple(),
        ]),
    doc("geodist", "3.2.0", "O(1)")
        .args(&[
            key("key", 0),
            string("member1"),
            string("member2"),
            oneof("unit", &[pure("m", "M"), pure("km", "KM"), pure("ft", "FT"), pure("mi", "MI")]).optional(),
        ]),
    doc("geohash", "3.2.0", "O(1) for each member requested.")
        .args(&[
            key("key", 0),
            string("member").optional().multiple(),
        ]),
    doc("geopos", "3.2.0", "O(1) for each member requested.")
        .args(&[
            key("key", 0),
            string("member").optional().multiple(),
        ]),
    doc("georadius", "3.2.0", "O(N+log(M)) where N is the number of elements inside the bounding box of the circular area delimited by center and radius and M is the number of items inside the index.")
        .doc_flags(&["deprecated"])
        .deprecated("6.2.0", "`GEOSEARCH` and `GEOSEARCHSTORE` with the `BYRADIUS` argument")
        .history(&[
            ("6.2.0", "Added the `ANY` option for `COUNT`."),
            ("7.0.0", "Added support for uppercase unit names."),
        ])
        .args(&[
            key("key", 0),
            double("longitude"),
            double("latitude"),
            double("radius"),
            oneof("unit", &[pure("m", "M"), pure("km", "KM"), pure("ft", "FT"), pure("mi", "MI")]),
            pure("withcoord", "WITHCOORD").optional(),
            pure("withdist", "WITHDIST").optional(),
            pure("withhash", "WITHHASH").optional(),
            block("count-block", &[integer("count").token("COUNT"), pure("any", "ANY").since("6.2.0").optional()]).optional(),
            oneof("order", &[pure("asc", "ASC"), pure("desc", "DESC")]).optional(),
            oneof("store", &[Arg { display_text: Some("key"), ..key("storekey", 1).token("STORE") }, Arg { display_text: Some("key"), ..key("storedistkey", 2).token("STOREDIST") }]).optional(),
        ]),
    doc("georadius_ro", "3.2.10", "O(N+log(M)) where N is the number of elements inside the bounding box of the circular area delimited by center and radius and M is the number of items inside the index.")
        .doc_flags(&["deprecated"])
        .deprecated("6.2.0", "`GEOSEARCH` with the `BYRADIUS` argument")
        .history(&[
            ("6.2.0", "Added the `ANY` option for `COUNT`."),
            ("7.0.0", "Added support for uppercase unit names."),
        ])
        .args(&[
            key("key", 0),
            double("longitude"),
            double("latitude"),
            double("radius"),
            oneof("unit", &[pure("m", "M"), pure("km", "KM"), pure("ft", "FT"), pure("mi", "MI")]),
            pure("withcoord", "WITHCOORD").optional(),
            pure("withdist", "WITHDIST").optional(),
            pure("withhash", "WITHHASH").optional(),
            block("count-block", &[integer("count").token("COUNT"), pure("any", "ANY").since("6.2.0").optional()]).optional(),
            oneof("order", &[pure("asc", "ASC"), pure("desc", "DESC")]).optional(),
        ]),
    doc("georadiusbymember", "3.2.0", "O(N+log(M)) where N is the number of elements inside the bounding box of the circular area delimited by center and radius and M is the number of items inside the index.")
        .doc_flags(&["deprecated"])
        .deprecated("6.2.0", "`GEOSEARCH` and `GEOSEARCHSTORE` with the `BYRADIUS` and `FROMMEMBER` arguments")
        .history(&[
            ("6.2.0", "Added the `ANY` option for `COUNT`."),
            ("7.0.0", "Added support for uppercase unit names."),
        ])
        .args(&[
            key("key", 0),
            string("member"),
            double("radius"),
            oneof("unit", &[pure("m", "M"), pure("km", "KM"), pure("ft", "FT"), pure("mi", "MI")]),
            pure("withcoord", "WITHCOORD").optional(),
            pure("withdist", "WITHDIST").optional(),
            pure("withhash", "WITHHASH").optional(),
            block("count-block", &[integer("count").token("COUNT"), pure("any", "ANY").optional()]).optional(),
            oneof("order", &[pure("asc", "ASC"), pure("desc", "DESC")]).optional(),
            oneof("store", &[Arg { display_text: Some("key"), ..key("storekey", 1).token("STORE") }, Arg { display_text: Some("key"), ..key("storedistkey", 2).token("STOREDIST") }]).optional(),
        ]),
    doc("georadiusbymember_ro", "3.2.10", "O(N+log(M)) where N is the number of elements inside the bounding box of the circular area delimited by center and radius and M is the number of items inside the index.")
        .doc_flags(&["deprecated"])
        .deprecated("6.2.0", "`GEOSEARCH` with the `BYRADIUS` and `FROMMEMBER` arguments")
        .history(&[
            ("6.2.0", "Added the `ANY` option for `COUNT`."),
            ("7.0.0", "Added support for uppercase unit names."),
        ])
        .args(&[
            key("key", 0),
            string("member"),
            double("radius"),
            oneof("unit", &[pure("m", "M"), pure("km", "KM"), pure("ft", "FT"), pure("mi", "MI")]),
            pure("withcoord", "WITHCOORD").optional(),
            pure("withdist", "WITHDIST").optional(),
            pure("withhash", "WITHHASH").optional(),
            block("count-block", &[integer("count").token("COUNT"), pure("any", "ANY").optional()]).optional(),
            oneof("order", &[pure("asc", "ASC"), pure("desc", "DESC")]).optional(),
        ]),
    doc("geosearch", "6.2.0", "O(N+log(M)) where N is the number of elements in the grid-aligned bounding box area around the shape provided as the filter and M is the number of items inside the shape")
        .history(&[
            ("7.0.0", "Added support for uppercase unit names."),
        ])
        .args(&[
            key("key", 0),
            oneof("from", &[string("member").token("FROMMEMBER"), block("fromlonlat", &[double("longitude"), double("latitude")]).token("FROMLONLAT")]),
            oneof("by", &[block("circle", &[double("radius").token("BYRADIUS"), oneof("unit", &[pure("m", "M"), pure("km", "KM"), pure("ft", "FT"), pure("mi", "MI")])]), block("box", &[double("width").token("BYBOX"), double("height"), oneof("unit", &[pure("m", "M"), pure("km", "KM"), pure("ft", "FT"), pure("mi", "MI")])])]),
            oneof("order", &[pure("asc", "ASC"), pure("desc", "DESC")]).optional(),
            block("count-block", &[integer("count").token("COUNT"), pure("any", "ANY").optional()]).optional(),
            pure("withcoord", "WITHCOORD").optional(),
            pure("withdist", "WITHDIST").optional(),
            pure("withhash", "WITHHASH").optional(),
        ]),
    doc("geosearchstore", "6.2.0", "O(N+log(M)) where N is the number of elements in the grid-aligned bounding box area around the shape provided as the filter and M is the number of items inside the shape")
        .history(&[
            ("7.0.0", "Added support for uppercase unit names."),
        ])
        .args(&[
            key("destination", 0),
            key("source", 1),
            oneof("from", &[string("member").token("FROMMEMBER"), block("fromlonlat", &[double("longitude"), double("latitude")]).token("FROMLONLAT")]),
            oneof("by", &[block("circle", &[double("radius").token("BYRADIUS"), oneof("unit", &[pure("m", "M"), pure("km", "KM"), pure("ft", "FT"), pure("mi", "MI")])]), block("box", &[double("width").token("BYBOX"), double("height"), oneof("unit", &[pure("m", "M"), pure("km", "KM"), pure("ft", "FT"), pure("mi", "MI")])])]),
            oneof("order", &[pure("asc", "ASC"), pure("desc", "DESC")]).optional(),
            block("count-block", &[integer("count").token("COUNT"), pure("any", "ANY").optional()]).optional(),
            pure("storedist", "STOREDIST").optional(),
        ]),
];
