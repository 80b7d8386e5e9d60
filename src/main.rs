//! The `skerry` binary: a thin wrapper over `skerry_server::main_from_args`.

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    // Ask mimalloc for large (transparent huge) OS pages: the keyspace and its values are
    // touched at random, and fewer TLB misses measured ~7% fewer CPU-seconds per GET at
    // pipeline 1 (docs/decisions/0003-large-os-pages.md).
    // SAFETY: setting a mimalloc option is a plain store into mimalloc's option table; it
    // takes effect for memory requested from the OS from now on.
    unsafe {
        libmimalloc_sys::mi_option_set(libmimalloc_sys::mi_option_large_os_pages, 1);
    }
    skerry_server::set_allocator_collect(|thorough| {
        // SAFETY: `mi_collect` only frees and purges mimalloc's own unused memory; it may
        // be called from any thread at any time.
        unsafe { libmimalloc_sys::mi_collect(thorough) }
    });
    std::process::exit(skerry_server::main_from_args(std::env::args_os()));
}
