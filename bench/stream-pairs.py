#!/usr/bin/env python3
"""bench/stream-pairs.py - XREADGROUP COUNT 1 + XACK pairs (for bench/stream.sh).

CONNS connections (non-blocking sockets, one selector), each in a loop: XREADGROUP GROUP
GROUP c<i> COUNT 1 STREAMS KEY >, then XACK KEY GROUP <the ID it got>; one request in
flight per connection. Stops after PAIRS pairs in total. Prints "pairs seconds" (an
XREADGROUP that finds nothing counts as an error: the stream must hold enough entries).

Usage: stream-pairs.py PORT KEY GROUP PAIRS [CONNS]
"""
import selectors
import socket
import sys
import time


def cmd(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def parse(buf, pos):
    """One RESP2 value from buf[pos:]: (value, next pos), or None when incomplete."""
    end = buf.find(b"\r\n", pos)
    if end < 0:
        return None
    t, line = buf[pos:pos + 1], buf[pos + 1:end]
    pos = end + 2
    if t in (b"+", b"-", b":"):
        if t == b"-":
            raise SystemExit("error reply: %s" % line.decode())
        return line, pos
    if t == b"$":
        n = int(line)
        if n < 0:
            return None, pos
        if len(buf) < pos + n + 2:
            return None
        return buf[pos:pos + n], pos + n + 2
    if t == b"*":
        n = int(line)
        if n < 0:
            return None, pos
        items = []
        for _ in range(n):
            r = parse(buf, pos)
            if r is None:
                return None
            v, pos = r
            items.append(v)
        return items, pos
    raise SystemExit("bad reply %r" % buf[pos - 1:pos + 20])


def main():
    port, key, group, pairs = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
    conns = int(sys.argv[5]) if len(sys.argv) > 5 else 50
    sel = selectors.DefaultSelector()
    state = {}
    started = 0
    done = 0
    t0 = time.monotonic()
    for i in range(conns):
        s = socket.create_connection(("127.0.0.1", port))
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.setblocking(False)
        read = cmd("XREADGROUP", "GROUP", group, "c%d" % i, "COUNT", "1", "STREAMS", key, ">")
        state[s] = {"buf": b"", "read": read, "acking": False}
        if started < pairs:
            started += 1
            s.send(read)
            sel.register(s, selectors.EVENT_READ)
    while done < pairs:
        for k, _ in sel.select():
            s = k.fileobj
            st = state[s]
            data = s.recv(65536)
            if not data:
                raise SystemExit("connection closed")
            st["buf"] += data
            r = parse(st["buf"], 0)
            if r is None:
                continue
            v, pos = r
            st["buf"] = st["buf"][pos:]
            if not st["acking"]:
                if not v:
                    raise SystemExit("XREADGROUP found nothing: fill the stream with more entries")
                entry_id = v[0][1][0][0]
                st["acking"] = True
                s.send(cmd("XACK", key, group, entry_id))
            else:
                st["acking"] = False
                done += 1
                if started < pairs:
                    started += 1
                    s.send(st["read"])
    print(done, "%.3f" % (time.monotonic() - t0))


if __name__ == "__main__":
    main()
