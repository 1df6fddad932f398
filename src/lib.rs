//! vkhip: a Vulkan renderer whose height field is written by a pluggable compute backend
//! (CPU, Vulkan compute, CUDA, HIP) through exported memory and semaphores.
//!
//! The interop itself is the workspace's library crate, `vkhip_interop` (`crates/vkhip-interop`):
//! export → import → map → wait → kernel → signal, kernel-agnostic, with its own examples. This
//! app is built on its public API, like any engine (its Vulkan device is handed to the crate).
//!
//! Where to look first:
//! - [`sync`]: the frame-sync protocol, end to end (who waits on what, in every `--sync` mode).
//! - [`compute`]: the backend interface; `compute::cuda` and `compute::hip` drive the crate's
//!   CUDA and HIP sides with the sine wave.
//! - [`vk::external`]: the slots and semaphores, exportable ones made by the crate.
//! - [`sim`]: the sine-wave parameters and the CPU reference every test compares against.
#![warn(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks, clippy::missing_safety_doc)]

pub mod app;
pub mod camera;
pub mod cli;
pub mod compute;
pub mod embed;
pub mod fault;
pub mod image;
pub mod output;
pub mod overlay;
pub mod pending;
pub mod profile;
pub mod render;
pub mod shaders;
pub mod sim;
pub mod sync;
pub mod vk;
