//! skerry-bench: a memtier-like RESP load generator for benchmarking Skerry against Redis.
//!
//! One compio runtime (io_uring) per thread, one task per connection, pipelined writes,
//! a minimal in-place RESP reply parser and reused buffers: no allocation per request, so
//! that on a small machine the generator saturates the server before itself.
//!
//! - [`keys`]: key patterns (sequential fill streams, uniform, zipf).
//! - [`command`]: request templates (`SET __key__ __data__`).
//! - [`resp`]: the reply parser.
//! - [`stats`]: HDR histograms and percentiles.
//! - [`config`]: command-line options.
//! - [`run`]: the load itself.
//! - [`report`]: text, JSON and CSV summaries.

#![warn(missing_docs)]

pub mod command;
pub mod config;
pub mod keys;
pub mod report;
pub mod resp;
pub mod run;
pub mod stats;

pub use config::{Args, Config};
pub use run::{run, Report};
