//! COMMAND DOCS entries of the zset commands (`commands/zset.rs`), as Redis 7.0.15's
//! `src/commands/*.json` describe them.

use super::*;

#[rustfmt::skip]
pub(super) static DOCS: &[Doc] = &[
    doc("zadd", "1.2.0", "O(log(N)) for each item added, where N is the number of elements in the sorted set.")
        .history(&[
            ("2.4.0", "Accepts multiple elements."),
            ("3.0.2", "Added the `XX`, `NX`, `CH` and `INCR` options."),
            ("6.2.0", "Added the `GT` and `LT` options."),
        ])
        .args(&[
            key("key", 0),
            oneof("condition", &[pure("nx", "NX"), pure("xx", "XX")]).since("3.0.2").optional(),
            oneof("comparison", &[pure("gt", "GT"), pure("lt", "LT")]).since("6.2.0").optional(),
            pure("change", "CH").since("3.0.2").optional(),
            pure("increment", "INCR").since("3.0.2").optional(),
            block("score_member", &[double("score"), string("member")]).multiple(),
        ]),
    doc("zincrby", "1.2.0", "O(log(N)) where N is the number of elements in the sorted set.")
        .args(&[
            key("key", 0),
            integer("increment"),
            string("member"),
        ]),
    doc("zrem", "1.2.0", "O(M*log(N)) with N being the number of elements in the sorted set and M the number of elements to be removed.")
        .history(&[
            ("2.4.0", "Accepts multiple elements."),
        ])
        .args(&[
            key("key", 0),
            string("member").multiple(),
        ]),
    doc("zcard", "1.2.0", "O(1)")
        .args(&[
            key("key", 0),
        ]),
    doc("zcount", "2.0.0", "O(log(N)) with N being the number of elements in the sorted set.")
        .args(&[
            key("key", 0),
            double("min"),
            double("max"),
        ]),
    doc("zlexcount", "2.8.9", "O(log(N)) with N being the number of elements in the sorted set.")
        .args(&[
            key("key", 0),
            string("min"),
            string("max"),
        ]),
    doc("zscore", "1.2.0", "O(1)")
        .args(&[
            key("key", 0),
            string("member"),
        ]),
    doc("zmscore", "6.2.0", "O(N) where N is the number of members being requested.")
        .args(&[
            key("key", 0),
            string("member").multiple(),
        ]),
    doc("zrank", "2.0.0", "O(log(N))")
        .history(&[
            ("7.2.0", "Added the optional `WITHSCORE` argument."),
        ])
        .args(&[
            key("key", 0),
            string("member"),
            pure("withscore", "WITHSCORE").optional(),
        ]),
    doc("zrevrank", "2.0.0", "O(log(N))")
        .history(&[
            ("7.2.0", "Added the optional `WITHSCORE` argument."),
        ])
        .args(&[
            key("key", 0),
            string("member"),
            pure("withscore", "WITHSCORE").optional(),
        ]),
    doc("zrange", "1.2.0", "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements returned.")
        .history(&[
            ("6.2.0", "Added the `REV`, `BYSCORE`, `BYLEX` and `LIMIT` options."),
        ])
        .args(&[
            key("key", 0),
            string("start"),
            string("stop"),
            oneof("sortby", &[pure("byscore", "BYSCORE"), pure("bylex", "BYLEX")]).since("6.2.0").optional(),
            pure("rev", "REV").since("6.2.0").optional(),
            block("offset_count", &[integer("offset"), integer("count")]).token("LIMIT").since("6.2.0").optional(),
            pure("withscores", "WITHSCORES").optional(),
        ]),
    doc("zrangestore", "6.2.0", "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements stored into the destination key.")
        .args(&[
            key("dst", 0),
            key("src", 1),
            string("min"),
            string("max"),
            oneof("sortby", &[pure("byscore", "BYSCORE"), pure("bylex", "BYLEX")]).optional(),
            pure("rev", "REV").optional(),
            block("offset_count", &[integer("offset"), integer("count")]).token("LIMIT").optional(),
        ]),
    doc("zrangebyscore", "1.0.5", "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned. If M is constant (e.g. always asking for the first 10 elements with LIMIT), you can consider it O(log(N)).")
        .doc_flags(&["deprecated"])
        .deprecated("6.2.0", "`ZRANGE` with the `BYSCORE` argument")
        .history(&[
            ("2.0.0", "Added the `WITHSCORES` modifier."),
        ])
        .args(&[
            key("key", 0),
            double("min"),
            double("max"),
            pure("withscores", "WITHSCORES").since("2.0.0").optional(),
            block("offset_count", &[integer("offset"), integer("count")]).token("LIMIT").optional(),
        ]),
    doc("zrevrangebyscore", "2.2.0", "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned. If M is constant (e.g. always asking for the first 10 elements with LIMIT), you can consider it O(log(N)).")
        .doc_flags(&["deprecated"])
        .deprecated("6.2.0", "`ZRANGE` with the `REV` and `BYSCORE` arguments")
        .history(&[
            ("2.1.6", "`min` and `max` can be exclusive."),
        ])
        .args(&[
            key("key", 0),
            double("max"),
            double("min"),
            pure("withscores", "WITHSCORES").optional(),
            block("offset_count", &[integer("offset"), integer("count")]).token("LIMIT").optional(),
        ]),
    doc("zrangebylex", "2.8.9", "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned. If M is constant (e.g. always asking for the first 10 elements with LIMIT), you can consider it O(log(N)).")
        .doc_flags(&["deprecated"])
        .deprecated("6.2.0", "`ZRANGE` with the `BYLEX` argument")
        .args(&[
            key("key", 0),
            string("min"),
            string("max"),
            block("offset_count", &[integer("offset"), integer("count")]).token("LIMIT").optional(),
        ]),
    doc("zrevrangebylex", "2.8.9", "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned. If M is constant (e.g. always asking for the first 10 elements with LIMIT), you can consider it O(log(N)).")
        .doc_flags(&["deprecated"])
        .deprecated("6.2.0", "`ZRANGE` with the `REV` and `BYLEX` arguments")
        .args(&[
            key("key", 0),
            string("max"),
            string("min"),
            block("offset_count", &[integer("offset"), integer("count")]).token("LIMIT").optional(),
        ]),
    doc("zrevrange", "1.2.0", "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements returned.")
        .doc_flags(&["deprecated"])
        .deprecated("6.2.0", "`ZRANGE` with the `REV` argument")
        .args(&[
            key("key", 0),
            integer("start"),
            integer("stop"),
            pure("withscores", "WITHSCORES").optional(),
        ]),
    doc("zremrangebyrank", "2.0.0", "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements removed by the operation.")
        .args(&[
            key("key", 0),
            integer("start"),
            integer("stop"),
        ]),
    doc("zremrangebyscore", "1.2.0", "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements removed by the operation.")
        .args(&[
            key("key", 0),
            double("min"),
            double("max"),
        ]),
    doc("zremrangebylex", "2.8.9", "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements removed by the operation.")
        .args(&[
            key("key", 0),
            string("min"),
            string("max"),
        ]),
    doc("zpopmin", "5.0.0", "O(log(N)*M) with N being the number of elements in the sorted set, and M being the number of elements popped.")
        .args(&[
            key("key", 0),
            integer("count").optional(),
        ]),
    doc("zpopmax", "5.0.0", "O(log(N)*M) with N being the number of elements in the sorted set, and M being the number of elements popped.")
        .args(&[
            key("key", 0),
            integer("count").optional(),
        ]),
    doc("zmpop", "7.0.0", "O(K) + O(M*log(N)) where K is the number of provided keys, N being the number of elements in the sorted set, and M being the number of elements popped.")
        .args(&[
            integer("numkeys"),
            key("key", 0).multiple(),
            oneof("where", &[pure("min", "MIN"), pure("max", "MAX")]),
            integer("count").token("COUNT").optional(),
        ]),
    doc("bzpopmin", "5.0.0", "O(log(N)) with N being the number of elements in the sorted set.")
        .history(&[
            ("6.0.0", "`timeout` is interpreted as a double instead of an integer."),
        ])
        .args(&[
            key("key", 0).multiple(),
            double("timeout"),
        ]),
    doc("bzpopmax", "5.0.0", "O(log(N)) with N being the number of elements in the sorted set.")
        .history(&[
            ("6.0.0", "`timeout` is interpreted as a double instead of an integer."),
        ])
        .args(&[
            key("key", 0).multiple(),
            double("timeout"),
        ]),
    doc("bzmpop", "7.0.0", "O(K) + O(M*log(N)) where K is the number of provided keys, N being the number of elements in the sorted set, and M being the number of elements popped.")
        .args(&[
            double("timeout"),
            integer("numkeys"),
            key("key", 0).multiple(),
            oneof("where", &[pure("min", "MIN"), pure("max", "MAX")]),
            integer("count").token("COUNT").optional(),
        ]),
    doc("zrandmember", "6.2.0", "O(N) where N is the number of elements returned")
        .args(&[
            key("key", 0),
            block("options", &[integer("count"), pure("withscores", "WITHSCORES").optional()]).optional(),
        ]),
    doc("zunion", "6.2.0", "O(N)+O(M*log(M)) with N being the sum of the sizes of the input sorted sets, and M being the number of elements in the resulting sorted set.")
        .args(&[
            integer("numkeys"),
            key("key", 0).multiple(),
            integer("weight").token("WEIGHTS").optional().multiple(),
            oneof("aggregate", &[pure("sum", "SUM"), pure("min", "MIN"), pure("max", "MAX")]).token("AGGREGATE").optional(),
            pure("withscores", "WITHSCORES").optional(),
        ]),
    doc("zunionstore", "2.0.0", "O(N)+O(M log(M)) with N being the sum of the sizes of the input sorted sets, and M being the number of elements in the resulting sorted set.")
        .args(&[
            key("destination", 0),
            integer("numkeys"),
            key("key", 1).multiple(),
            integer("weight").token("WEIGHTS").optional().multiple(),
            oneof("aggregate", &[pure("sum", "SUM"), pure("min", "MIN"), pure("max", "MAX")]).token("AGGREGATE").optional(),
        ]),
    doc("zinter", "6.2.0", "O(N*K)+O(M*log(M)) worst case with N being the smallest input sorted set, K being the number of input sorted sets and M being the number of elements in the resulting sorted set.")
        .args(&[
            integer("numkeys"),
            key("key", 0).multiple(),
            integer("weight").token("WEIGHTS").optional().multiple(),
            oneof("aggregate", &[pure("sum", "SUM"), pure("min", "MIN"), pure("max", "MAX")]).token("AGGREGATE").optional(),
            pure("withscores", "WITHSCORES").optional(),
        ]),
    doc("zinterstore", "2.0.0", "O(N*K)+O(M*log(M)) worst case with N being the smallest input sorted set, K being the number of input sorted sets and M being the number of elements in the resulting sorted set.")
        .args(&[
            key("destination", 0),
            integer("numkeys"),
            key("key", 1).multiple(),
            integer("weight").token("WEIGHTS").optional().multiple(),
            oneof("aggregate", &[pure("sum", "SUM"), pure("min", "MIN"), pure("max", "MAX")]).token("AGGREGATE").optional(),
        ]),
    doc("zintercard", "7.0.0", "O(N*K) worst case with N being the smallest input sorted set, K being the number of input sorted sets.")
        .args(&[
            integer("numkeys"),
            key("key", 0).multiple(),
            integer("limit").token("LIMIT").optional(),
        ]),
    doc("zdiff", "6.2.0", "O(L + (N-K)log(N)) worst case where L is the total number of elements in all the sets, N is the size of the first set, and K is the size of the result set.")
        .args(&[
            integer("numkeys"),
            key("key", 0).multiple(),
            pure("withscores", "WITHSCORES").optional(),
        ]),
    doc("zdiffstore", "6.2.0", "O(L + (N-K)log(N)) worst case where L is the total number of elements in all the sets, N is the size of the first set, and K is the size of the result set.")
        .args(&[
            key("destination", 0),
            integer("numkeys"),
            key("key", 1).multiple(),
        ]),
    doc("zscan", "2.8.0", "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection..")
        .args(&[
            key("key", 0),
            integer("cursor"),
            pattern("pattern").token("MATCH").optional(),
            integer("count").token("COUNT").optional(),
        ]),
];
