//! Ownership of a file descriptor handed to a foreign API's import call: the interop crate's
//! [`ImportFd`] and [`FdOwnership`], which the app's exports and backends use as they are.

pub use vkhip_interop::{FdOwnership, ImportFd};
