//! The `skerry-bench` command: see `skerry-bench --help` and bench/README.md.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use clap::Parser;
use skerry_bench::run::Progress;
use skerry_bench::{report, run, Args, Config};

fn main() -> ExitCode {
    let args = Args::parse();
    let cfg = match Config::from_args(&args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("skerry-bench: {e}");
            return ExitCode::from(2);
        }
    };
    let tty = std::io::stderr().is_terminal();
    let mut show = |p: Progress| {
        let line = format!(
            "[{:6.1}s] {:>10.0} ops/s  {:>12} ops  {} misses  {} errors",
            p.elapsed.as_secs_f64(),
            p.ops_per_sec,
            p.ops,
            p.misses,
            p.errors
        );
        let mut err = std::io::stderr().lock();
        let _ = if tty {
            write!(err, "\r\x1b[2K{line}")
        } else {
            writeln!(err, "{line}")
        };
    };
    let progress: Option<&mut dyn FnMut(Progress)> =
        if args.quiet { None } else { Some(&mut show) };
    let result = run(&cfg, progress);
    if tty && !args.quiet {
        eprintln!();
    }
    let r = match result {
        Ok(r) => r,
        Err(e) => {
            eprintln!("skerry-bench: {e}");
            return ExitCode::from(2);
        }
    };
    print!("{}", report::text(&cfg, &r));
    for (path, body) in [
        (&args.json, report::json(&cfg, &r)),
        (&args.csv, report::csv(&cfg, &r)),
    ] {
        if let Some(path) = path {
            if let Err(e) = std::fs::write(path, body) {
                eprintln!("skerry-bench: cannot write {}: {e}", path.display());
                return ExitCode::from(2);
            }
        }
    }
    if args.require_no_misses && r.misses > 0 {
        eprintln!(
            "skerry-bench: {} GET(s) missed (--require-no-misses)",
            r.misses
        );
        return ExitCode::from(3);
    }
    if args.require_no_errors && r.errors > 0 {
        eprintln!(
            "skerry-bench: {} error reply(s) (--require-no-errors), first: {}",
            r.errors,
            r.first_error.as_deref().unwrap_or("?")
        );
        return ExitCode::from(4);
    }
    ExitCode::SUCCESS
}
