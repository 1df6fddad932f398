//! vkhip: a Vulkan renderer whose height field is written by a pluggable compute backend
//! (CPU, Vulkan compute, CUDA, HIP) through exported memory and semaphores.
//!
//! Where to look first (export → import → map → wait → kernel → signal):
//! - [`interop`]: the interop as a library, kernel-agnostic — Vulkan exports a buffer and
//!   timelines ([`interop::vulkan`]); CUDA imports them and runs your kernel between a wait and a
//!   signal in the `vkhip-interop` crate (`vkhip_interop::cuda`, examples in
//!   `crates/vkhip-interop/examples/`).
//! - [`vk::external`]: export of slot memory and semaphores as OPAQUE_FD.
//! - [`compute`]: the backend interface; `compute::cuda` (over `vkhip_interop::cuda`) and
//!   `compute::hip` import the fds and map them.
//! - [`sync`]: the frame-sync protocol, end to end (who waits on what, in every `--sync` mode).
//! - [`sim`]: the sine-wave parameters and the CPU reference every test compares against.
#![warn(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks, clippy::missing_safety_doc)]

pub mod app;
pub mod camera;
pub mod cli;
pub mod compute;
pub mod fault;
pub mod image;
pub mod interop;
pub mod output;
pub mod overlay;
pub mod pending;
pub mod profile;
pub mod render;
pub mod shaders;
pub mod sim;
pub mod sync;
pub mod vk;
