//! Vulkan compute backend (placeholder).
