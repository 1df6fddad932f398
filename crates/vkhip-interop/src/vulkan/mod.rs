//! Vulkan export side (being written).
