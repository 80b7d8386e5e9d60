//! Memory per connection (issue 25, item 6): idle connections hold no read or write buffer,
//! so 10,000 of them, each after one PING, cost at most 80 MB of RSS above an idle server's,
//! and the server still answers every one of them.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::*;

const CONNECTIONS: usize = 10_000;
/// The bound on what the idle connections may add to the server's RSS.
const MAX_RSS_GROWTH: u64 = 80_000_000;
const PING: &[u8] = b"*1\r\n$4\r\nPING\r\n";
const PONG: &[u8] = b"+PONG\r\n";

/// Raises this process's descriptor limit (the server it starts inherits it) to `want`,
/// raising the hard limit too where it is lower (root may).
fn raise_fd_limit(want: u64) -> u64 {
    // SAFETY: getrlimit/setrlimit on our own process with a valid, initialised struct.
    unsafe {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim), 0);
        if lim.rlim_cur < want {
            let raised = libc::rlimit {
                rlim_cur: want,
                rlim_max: lim.rlim_max.max(want),
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) != 0 {
                lim.rlim_cur = want.min(lim.rlim_max);
                libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
            }
            libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim);
        }
        lim.rlim_cur
    }
}

/// Sends PING on every connection, then reads every PONG.
fn ping_all(conns: &mut [TcpStream]) {
    for c in conns.iter_mut() {
        c.write_all(PING).expect("send PING");
    }
    for (i, c) in conns.iter_mut().enumerate() {
        let mut got = [0u8; PONG.len()];
        c.read_exact(&mut got)
            .unwrap_or_else(|e| panic!("connection {i}: no PONG: {e}"));
        assert_eq!(&got, PONG, "connection {i}");
    }
}

#[test]
fn ten_thousand_idle_connections_fit_in_80_mb() {
    skip_if_redis!();
    let _env = ENV.lock().unwrap_or_else(|e| e.into_inner());
    let limit = raise_fd_limit(CONNECTIONS as u64 + 2048);
    assert!(
        limit >= CONNECTIONS as u64 + 256,
        "RLIMIT_NOFILE is {limit}: cannot open {CONNECTIONS} connections"
    );
    let started = Instant::now();
    // The default maxclients is exactly 10,000; the harness's own start-up connection may
    // still be counted for a moment.
    let s = Server::start(&["--maxclients", "20000"]);
    std::thread::sleep(Duration::from_millis(300));
    let idle = rss_bytes(s.pid());

    let mut conns: Vec<TcpStream> = Vec::with_capacity(CONNECTIONS);
    while conns.len() < CONNECTIONS {
        let from = conns.len();
        for _ in 0..500.min(CONNECTIONS - from) {
            let c = TcpStream::connect(("127.0.0.1", s.port())).expect("connect");
            c.set_read_timeout(Some(REPLY_TIMEOUT)).unwrap();
            c.set_nodelay(true).unwrap();
            conns.push(c);
        }
        ping_all(&mut conns[from..]);
    }
    std::thread::sleep(Duration::from_millis(300));
    let loaded = rss_bytes(s.pid());
    let growth = loaded.saturating_sub(idle);
    eprintln!(
        "idle server {} KiB, with {CONNECTIONS} idle connections {} KiB: {} bytes per connection",
        idle / 1024,
        loaded / 1024,
        growth / CONNECTIONS as u64
    );
    assert!(
        growth <= MAX_RSS_GROWTH,
        "{CONNECTIONS} idle connections added {growth} bytes of RSS (at most {MAX_RSS_GROWTH})"
    );

    // Every one of them is still served.
    ping_all(&mut conns);
    let mut r = s.raw();
    let info = r.cmd(&["INFO", "clients"]).text();
    let connected: usize = info_field(&info, "connected_clients")
        .expect("connected_clients")
        .parse()
        .unwrap();
    assert!(connected > CONNECTIONS, "connected_clients {connected}");
    drop(conns);
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "took {:?}",
        started.elapsed()
    );
}

/// Serialises the tests: one of them starts its server with a tiny read buffer ring through
/// the environment, which a server started meanwhile would inherit.
static ENV: Mutex<()> = Mutex::new(());

/// A burst of 2,000 requests arriving while the worker sleeps (DEBUG SLEEP), every tenth
/// longer than a ring buffer, into a server whose ring has only 2 buffers
/// (`SKERRY_TEST_RING_BUFFERS`): the recvs that find the ring empty read into buffers of
/// their own, every request is answered, and the long ones arrive whole.
#[test]
fn a_burst_beyond_the_ring_buffers_is_served() {
    skip_if_redis!();
    let _env = ENV.lock().unwrap_or_else(|e| e.into_inner());
    const N: usize = 2_000;
    let limit = raise_fd_limit(N as u64 + 1024);
    assert!(limit >= N as u64 + 64, "RLIMIT_NOFILE is {limit}");
    std::env::set_var("SKERRY_TEST_RING_BUFFERS", "2");
    let s = Server::start(&["--threads", "1"]);
    std::env::remove_var("SKERRY_TEST_RING_BUFFERS");
    let mut conns: Vec<TcpStream> = (0..N)
        .map(|_| {
            let c = TcpStream::connect(("127.0.0.1", s.port())).expect("connect");
            c.set_read_timeout(Some(REPLY_TIMEOUT)).unwrap();
            c
        })
        .collect();
    ping_all(&mut conns);
    let mut sleeper = s.raw();
    sleeper.send(&resp::encode(&["DEBUG", "SLEEP", "0.5"]));
    std::thread::sleep(Duration::from_millis(100));
    // Every tenth request is larger than a ring buffer (16 KiB).
    let payload = |i: usize| {
        let len = if i.is_multiple_of(10) {
            40_000 + i
        } else {
            10 + i % 100
        };
        format!("{i}:{}", "x".repeat(len))
    };
    for (i, c) in conns.iter_mut().enumerate() {
        c.write_all(&resp::encode(&["ECHO", &payload(i)]))
            .expect("send ECHO");
    }
    assert_eq!(sleeper.read_value(), ok());
    for (i, c) in conns.iter_mut().enumerate() {
        let want = payload(i);
        let head = format!("${}\r\n", want.len());
        let mut got = vec![0u8; head.len() + want.len() + 2];
        c.read_exact(&mut got)
            .unwrap_or_else(|e| panic!("connection {i}: no reply: {e}"));
        assert_eq!(
            got,
            format!("{head}{want}\r\n").into_bytes(),
            "connection {i}"
        );
    }
    ping_all(&mut conns);
}
