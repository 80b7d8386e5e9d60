//! COMMAND DOCS entries of the list commands (`commands/list.rs`).

use super::*;

const WHERE_LR: &[Arg] = &[pure("left", "LEFT"), pure("right", "RIGHT")];

#[rustfmt::skip]
pub(super) static DOCS: &[Doc] = &[
    doc("lpush", "1.0.0", "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.")
        .history(&[
            ("2.4.0", "Accepts multiple `element` arguments."),
        ])
        .args(&[
            key("key", 0),
            string("element").multiple(),
        ]),
    doc("rpush", "1.0.0", "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.")
        .history(&[
            ("2.4.0", "Accepts multiple `element` arguments."),
        ])
        .args(&[
            key("key", 0),
            string("element").multiple(),
        ]),
    doc("lpushx", "2.2.0", "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.")
        .history(&[
            ("4.0.0", "Accepts multiple `element` arguments."),
        ])
        .args(&[
            key("key", 0),
            string("element").multiple(),
        ]),
    doc("rpushx", "2.2.0", "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.")
        .history(&[
            ("4.0.0", "Accepts multiple `element` arguments."),
        ])
        .args(&[
            key("key", 0),
            string("element").multiple(),
        ]),
    doc("lpop", "1.0.0", "O(N) where N is the number of elements returned")
        .history(&[
            ("6.2.0", "Added the `count` argument."),
        ])
        .args(&[
            key("key", 0),
            integer("count").optional().since("6.2.0"),
        ]),
    doc("rpop", "1.0.0", "O(N) where N is the number of elements returned")
        .history(&[
            ("6.2.0", "Added the `count` argument."),
        ])
        .args(&[
            key("key", 0),
            integer("count").optional().since("6.2.0"),
        ]),
    doc("llen", "1.0.0", "O(1)")
        .args(&[
            key("key", 0),
        ]),
    doc("lindex", "1.0.0", "O(N) where N is the number of elements to traverse to get to the element at index. This makes asking for the first or the last element of the list O(1).")
        .args(&[
            key("key", 0),
            integer("index"),
        ]),
    doc("lrange", "1.0.0", "O(S+N) where S is the distance of start offset from HEAD for small lists, from nearest end (HEAD or TAIL) for large lists; and N is the number of elements in the specified range.")
        .args(&[
            key("key", 0),
            integer("start"),
            integer("stop"),
        ]),
    doc("lset", "1.0.0", "O(N) where N is the length of the list. Setting either the first or the last element of the list is O(1).")
        .args(&[
            key("key", 0),
            integer("index"),
            string("element"),
        ]),
    doc("linsert", "2.2.0", "O(N) where N is the number of elements to traverse before seeing the value pivot. This means that inserting somewhere on the left end on the list (head) can be considered O(1) and inserting somewhere on the right end (tail) is O(N).")
        .args(&[
            key("key", 0),
            oneof("where", &[pure("before", "BEFORE"), pure("after", "AFTER")]),
            string("pivot"),
            string("element"),
        ]),
    doc("lrem", "1.0.0", "O(N+M) where N is the length of the list and M is the number of elements removed.")
        .args(&[
            key("key", 0),
            integer("count"),
            string("element"),
        ]),
    doc("ltrim", "1.0.0", "O(N) where N is the number of elements to be removed by the operation.")
        .args(&[
            key("key", 0),
            integer("start"),
            integer("stop"),
        ]),
    doc("lpos", "6.0.6", "O(N) where N is the number of elements in the list, for the average case. When searching for elements near the head or the tail of the list, or when the MAXLEN option is provided, the command may run in constant time.")
        .args(&[
            key("key", 0),
            string("element"),
            integer("rank").token("RANK").optional(),
            integer("num-matches").token("COUNT").optional(),
            integer("len").token("MAXLEN").optional(),
        ]),
    doc("lmove", "6.2.0", "O(1)")
        .args(&[
            key("source", 0),
            key("destination", 1),
            oneof("wherefrom", WHERE_LR),
            oneof("whereto", WHERE_LR),
        ]),
    doc("rpoplpush", "1.2.0", "O(1)")
        .doc_flags(&["deprecated"])
        .deprecated("6.2.0", "`LMOVE` with the `RIGHT` and `LEFT` arguments")
        .args(&[
            key("source", 0),
            key("destination", 1),
        ]),
    doc("lmpop", "7.0.0", "O(N+M) where N is the number of provided keys and M is the number of elements returned.")
        .args(&[
            integer("numkeys"),
            key("key", 0).multiple(),
            oneof("where", WHERE_LR),
            integer("count").token("COUNT").optional(),
        ]),
    doc("blpop", "2.0.0", "O(N) where N is the number of provided keys.")
        .history(&[
            ("6.0.0", "`timeout` is interpreted as a double instead of an integer."),
        ])
        .args(&[
            key("key", 0).multiple(),
            double("timeout"),
        ]),
    doc("brpop", "2.0.0", "O(N) where N is the number of provided keys.")
        .history(&[
            ("6.0.0", "`timeout` is interpreted as a double instead of an integer."),
        ])
        .args(&[
            key("key", 0).multiple(),
            double("timeout"),
        ]),
    doc("blmove", "6.2.0", "O(1)")
        .args(&[
            key("source", 0),
            key("destination", 1),
            oneof("wherefrom", WHERE_LR),
            oneof("whereto", WHERE_LR),
            double("timeout"),
        ]),
    doc("brpoplpush", "2.2.0", "O(1)")
        .doc_flags(&["deprecated"])
        .deprecated("6.2.0", "`BLMOVE` with the `RIGHT` and `LEFT` arguments")
        .history(&[
            ("6.0.0", "`timeout` is interpreted as a double instead of an integer."),
        ])
        .args(&[
            key("source", 0),
            key("destination", 1),
            double("timeout"),
        ]),
    doc("blmpop", "7.0.0", "O(N+M) where N is the number of provided keys and M is the number of elements returned.")
        .args(&[
            double("timeout"),
            integer("numkeys"),
            key("key", 0).multiple(),
            oneof("where", WHERE_LR),
            integer("count").token("COUNT").optional(),
        ]),
];
