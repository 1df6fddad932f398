//! CUDA (being moved here from the vkhip app; see the crate's issue).
