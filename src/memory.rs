//! Gives the allocator's free memory back to the system once a suite is planned.
//!
//! Why: loading a large suite (a promptfoo config expands every test, `docs/promptfoo.md`)
//! builds trees that are dropped before the run starts; glibc keeps the freed pages, so they
//! would count in the process's memory for the whole run (`README.md#performance`).

/// Returns freed heap pages to the system (glibc's `malloc_trim`); nothing elsewhere.
pub fn release_freed() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` only walks glibc's own free lists; any thread may call it.
    unsafe {
        libc::malloc_trim(0);
    }
}
