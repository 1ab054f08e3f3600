//! Keeping stdout for the protocol: while a runner is active, anything else written to file
//! descriptor 1 (`println!`, C libraries, child processes that inherit it) lands on stderr, and
//! in persistent mode file descriptor 0 reads nothing, so neither the judge nor its children
//! can eat the requests.

use std::io::{self, BufRead, BufReader, Write};

/// The real stdout, for protocol lines only. Dropping it points file descriptor 1 back at it.
pub(crate) struct ProtocolOut {
    channel: Channel,
}

enum Channel {
    /// A private duplicate of the original file descriptor 1.
    #[cfg(unix)]
    Private(std::fs::File),
    /// No file descriptors to juggle: protocol lines share stdout with everything else.
    Shared(io::Stdout),
}

impl ProtocolOut {
    /// Takes stdout over: protocol lines go to the returned writer, everything else to stderr.
    pub(crate) fn take() -> Self {
        let _ = io::stdout().flush();
        #[cfg(unix)]
        if let Some(private) = unix::redirect_stdout_to_stderr() {
            return Self {
                channel: Channel::Private(private),
            };
        }
        Self {
            channel: Channel::Shared(io::stdout()),
        }
    }

    /// Writes one protocol line and flushes it.
    pub(crate) fn line(&mut self, text: &str) -> io::Result<()> {
        let mut bytes = Vec::with_capacity(text.len() + 1);
        bytes.extend_from_slice(text.as_bytes());
        bytes.push(b'\n');
        match &mut self.channel {
            #[cfg(unix)]
            Channel::Private(file) => file.write_all(&bytes).and_then(|()| file.flush()),
            Channel::Shared(out) => {
                let mut out = out.lock();
                out.write_all(&bytes).and_then(|()| out.flush())
            }
        }
    }
}

impl Drop for ProtocolOut {
    fn drop(&mut self) {
        let _ = io::stdout().flush();
        #[cfg(unix)]
        if let Channel::Private(file) = &self.channel {
            unix::restore_stdout(file);
        }
    }
}

/// The requests' stdin; file descriptor 0 then reads nothing (`/dev/null`).
pub(crate) fn private_stdin() -> Box<dyn BufRead> {
    #[cfg(unix)]
    if let Some(private) = unix::detach_stdin() {
        return Box::new(BufReader::new(private));
    }
    Box::new(BufReader::new(io::stdin()))
}

#[cfg(unix)]
mod unix {
    use std::fs::File;
    use std::io;
    use std::os::fd::AsFd;

    /// A private duplicate of file descriptor 1, which then points at stderr.
    pub(super) fn redirect_stdout_to_stderr() -> Option<File> {
        let private = io::stdout().as_fd().try_clone_to_owned().ok()?;
        rustix::stdio::dup2_stdout(io::stderr().as_fd()).ok()?;
        Some(File::from(private))
    }

    pub(super) fn restore_stdout(private: &File) {
        let _ = rustix::stdio::dup2_stdout(private.as_fd());
    }

    /// A private duplicate of file descriptor 0, which then reads `/dev/null`.
    pub(super) fn detach_stdin() -> Option<File> {
        let private = io::stdin().as_fd().try_clone_to_owned().ok()?;
        let null = File::open("/dev/null").ok()?;
        rustix::stdio::dup2_stdin(null.as_fd()).ok()?;
        Some(File::from(private))
    }
}
