//! The load engine's errors: a configuration rejected before anything
//! started, an operating-system call that failed, or a load that ran and
//! stopped on an error. Each message names what was being done, joined
//! with `": "` as a chain of contexts.

use std::fmt::Display;
use std::io;

/// What went wrong in [`crate::run`] or [`crate::serve_echo`].
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The configuration was rejected; nothing was started.
    #[error("{0}")]
    Config(String),
    /// An operating-system call failed (the message says what it did).
    /// The OS error is the message, so it is not also the source (a
    /// chain printer such as anyhow's `{:#}` would print it twice).
    #[error("{0}")]
    Io(io::Error),
    /// The load ran and stopped on this error; the timeline records it.
    #[error("{0}")]
    Run(String),
}

impl From<io::Error> for LoadError {
    fn from(e: io::Error) -> LoadError {
        LoadError::Io(e)
    }
}

/// This crate's result.
pub type Result<T, E = LoadError> = std::result::Result<T, E>;

/// Return a [`LoadError::Config`] made with `format!`.
macro_rules! bail {
    ($($t:tt)*) => {
        return Err($crate::error::LoadError::Config(format!($($t)*)))
    };
}
pub(crate) use bail;

/// A [`LoadError::Config`] with this message.
pub(crate) fn config(msg: impl Into<String>) -> LoadError {
    LoadError::Config(msg.into())
}

/// Say what was being done when an error happened: `"{what}: {error}"`,
/// keeping the error's kind.
pub(crate) trait Context<T> {
    fn context(self, what: impl Display) -> Result<T>;
    fn with_context<D: Display>(self, what: impl FnOnce() -> D) -> Result<T>;
}

impl<T> Context<T> for Result<T> {
    fn context(self, what: impl Display) -> Result<T> {
        self.map_err(|e| match e {
            LoadError::Config(m) => LoadError::Config(format!("{what}: {m}")),
            LoadError::Io(e) => LoadError::Io(io::Error::new(e.kind(), format!("{what}: {e}"))),
            LoadError::Run(m) => LoadError::Run(format!("{what}: {m}")),
        })
    }
    fn with_context<D: Display>(self, what: impl FnOnce() -> D) -> Result<T> {
        match self {
            Ok(v) => Ok(v),
            Err(e) => Err(e).context(what()),
        }
    }
}

impl<T> Context<T> for io::Result<T> {
    fn context(self, what: impl Display) -> Result<T> {
        self.map_err(|e| LoadError::Io(io::Error::new(e.kind(), format!("{what}: {e}"))))
    }
    fn with_context<D: Display>(self, what: impl FnOnce() -> D) -> Result<T> {
        match self {
            Ok(v) => Ok(v),
            Err(e) => Err(e).context(what()),
        }
    }
}

impl<T> Context<T> for Option<T> {
    fn context(self, what: impl Display) -> Result<T> {
        self.ok_or_else(|| LoadError::Config(what.to_string()))
    }
    fn with_context<D: Display>(self, what: impl FnOnce() -> D) -> Result<T> {
        self.ok_or_else(|| LoadError::Config(what().to_string()))
    }
}
