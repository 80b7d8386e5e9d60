import socket, subprocess, time, sys, os, tempfile

def resp(args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        if isinstance(a, str): a = a.encode()
        elif isinstance(a, (int, float)): a = str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out

class C:
    def __init__(s, port):
        s.s = socket.create_connection(("127.0.0.1", port)); s.f = s.s.makefile("rb")
    def cmd(s, *args):
        s.s.sendall(resp(args)); return s.read()
    def read(s):
        line = s.f.readline()
        t, rest = line[:1], line[1:-2]
        if t == b"+": return rest.decode()
        if t == b"-": raise Exception(rest.decode())
        if t == b":": return int(rest)
        if t == b"$":
            n = int(rest)
            if n < 0: return None
            d = s.f.read(n + 2); return d[:-2]
        if t == b"*":
            return [s.read() for _ in range(int(rest))]
        raise Exception(line)

def start(binary, port):
    d = tempfile.mkdtemp()
    p = subprocess.Popen([binary, "--port", str(port), "--save", "", "--appendonly", "no", "--dir", d,
                          "--enable-debug-command", "yes", "--list-compress-depth", "1"], stdout=subprocess.DEVNULL)
    for _ in range(100):
        try:
            c = C(port); c.cmd("PING"); return p, c
        except Exception: time.sleep(0.05)
    raise Exception("no start")

def build(c, v8):
    c.cmd("SET", "string_int", "12345")
    c.cmd("SET", "string_plain", "hello world")
    c.cmd("SET", "string_lzf", "abc" * 100)
    c.cmd("RPUSH", "list_small", "a", "b", "c", "1", "-2")
    for i in range(0, 2000, 100):
        c.cmd("RPUSH", "list_big", *[f"item-{j}" for j in range(i, i + 100)])
    if v8:
        c.cmd("DEBUG", "QUICKLIST-PACKED-THRESHOLD", "10")
        c.cmd("CONFIG", "SET", "list-max-listpack-size", "4")
        c.cmd("RPUSH", "list_plain", *(["x" * 20 + str(i) for i in range(5)] + ["s", "t", "u"]))
        c.cmd("CONFIG", "SET", "list-max-listpack-size", "-2")
        c.cmd("DEBUG", "QUICKLIST-PACKED-THRESHOLD", str(1 << 30))
    c.cmd("SADD", "set_int", *[i * 3 - 100 for i in range(50)])
    c.cmd("SADD", "set_small", *[f"m{i}" for i in range(20)])
    c.cmd("SADD", "set_ht", *[f"member-{i}" for i in range(1000)])
    args = []
    for i in range(20): args += [i * 1.5 - 3, f"z{i}"]
    c.cmd("ZADD", "zset_lp", *args)
    args = []
    for i in range(300): args += [repr(i / 7), f"z{i}"]
    c.cmd("ZADD", "zset_sl", *args)
    args = []
    for i in range(20): args += [f"f{i}", f"v{i}"]
    c.cmd("HSET", "hash_lp", *args, "n", "123")
    args = []
    for i in range(600): args += [f"field-{i}", "x" * (i % 20)]
    c.cmd("HSET", "hash_ht", *args)
    if v8:
        c.cmd("HSET", "hash_ttl_lp", *[x for i in range(20) for x in (f"f{i}", f"v{i}")])
        for i in range(5):
            c.cmd("HPEXPIREAT", "hash_ttl_lp", 4000000000000 + i, "FIELDS", 1, f"f{i}")
        c.cmd("HSET", "hash_ttl_ht", *args)
        for i in range(10):
            c.cmd("HPEXPIREAT", "hash_ttl_ht", 4000000000000 + i, "FIELDS", 1, f"field-{i}")
    for i in range(1, 11):
        if i % 3 == 0:
            c.cmd("XADD", "stream", f"{i}-0", "c", str(i))
        else:
            c.cmd("XADD", "stream", f"{i}-0", "a", str(i), "b", "v" * i)
    c.cmd("XDEL", "stream", "5-0")
    c.cmd("XGROUP", "CREATE", "stream", "g1", "0")
    c.cmd("XREADGROUP", "GROUP", "g1", "alice", "COUNT", "3", "STREAMS", "stream", ">")
    c.cmd("XACK", "stream", "g1", "1-0")
    c.cmd("XGROUP", "CREATE", "stream", "g2", "$")
    c.cmd("XGROUP", "CREATECONSUMER", "stream", "g2", "bob")
    keys = ["string_int", "string_plain", "string_lzf", "list_small", "list_big", "set_int", "set_small",
            "set_ht", "zset_lp", "zset_sl", "hash_lp", "hash_ht", "stream"]
    if v8: keys += ["list_plain", "hash_ttl_lp", "hash_ttl_ht"]
    return keys

out = ["//! Payloads written by real Redis servers (DUMP of values built by the commands in",
       "//! `gen_fixtures.py` beside this file, mirrored by `expected` in `tests.rs`): the reference",
       "//! Redis 8.0.2 (RDB 12) and Debian's Redis 7.0.15 (RDB 10).", ""]
for name, binary, port, v8 in [("REDIS_8_0_2", "/work/ref/redis-8.0.2/src/redis-server", 17781, True),
                               ("REDIS_7_0_15", "/usr/bin/redis-server", 17782, False)]:
    p, c = start(binary, port)
    try:
        keys = build(c, v8)
        out.append(f"/// (key, DUMP payload as hex) from {name}.")
        out.append(f"pub const {name}: &[(&str, &str)] = &[")
        for k in keys:
            enc = c.cmd("OBJECT", "ENCODING", k)
            d = c.cmd("DUMP", k)
            out.append(f"    // {enc.decode()}, RDB type {d[0]}")
            out.append(f'    ("{k}", "{d.hex()}"),')
        out.append("];")
        out.append("")
    finally:
        p.kill()
open(sys.argv[1], "w").write("\n".join(out))
