//! Ownership of an exported fd handed to a foreign API's import: the interop crate's
//! [`ImportFd`] and [`FdOwnership`] (one definition, used by the app's backends and the crate).
pub use vkhip_interop::{FdOwnership, ImportFd};
