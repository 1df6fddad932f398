//! What crosses from Vulkan to the compute API: an exported fd and the facts an importer needs
//! about the memory behind it. Built by [`crate::vulkan`], consumed by `cuda` and `hip`.

use crate::error::{Api, Error, Result};
use crate::fd::ImportFd;
use ash::vk;

/// Exported Vulkan memory on its way into a compute API.
#[derive(Debug)]
pub struct ExportedMemory {
    /// The OPAQUE_FD; an import consumes it (see [`ImportFd`]).
    pub fd: ImportFd,
    /// Import size: `VkMemoryRequirements::size` of the allocation, not the object's size
    /// (CUDA guide, "Importing Memory Objects").
    pub allocation_size: u64,
    /// The bytes to map, from offset 0: a buffer's size (for an image, its allocation size).
    pub size: u64,
    /// The allocation is dedicated to its buffer or image: the importer must say so
    /// (`CUDA_EXTERNAL_MEMORY_DEDICATED`, `hipExternalMemoryDedicated`).
    pub dedicated: bool,
}

impl ExportedMemory {
    /// Refuse sizes no importer can map: nothing to map, or more than the allocation holds.
    pub fn check_sizes(&self, api: Api) -> Result<()> {
        if self.size == 0 || self.size > self.allocation_size {
            return Err(Error::invalid(
                api,
                format!(
                    "{} bytes to map do not fit the allocation of {} bytes",
                    self.size, self.allocation_size
                ),
            ));
        }
        Ok(())
    }
}

/// The texel formats a shared image can have: each is a storage-image format in Vulkan and a
/// CUDA / HIP array format with 1, 2 or 4 channels of one type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ImageFormat {
    /// One 32-bit float (`VK_FORMAT_R32_SFLOAT`; a kernel writes `float`).
    R32Float,
    /// Four 8-bit unsigned normalised channels (`VK_FORMAT_R8G8B8A8_UNORM`; a kernel writes
    /// `uchar4`).
    Rgba8Unorm,
    /// Four 16-bit floats (`VK_FORMAT_R16G16B16A16_SFLOAT`; a kernel writes `ushort4` holding
    /// halves, or `half` through `surf2Dwrite` of a 64-bit value).
    Rgba16Float,
    /// Four 32-bit floats (`VK_FORMAT_R32G32B32A32_SFLOAT`; a kernel writes `float4`).
    Rgba32Float,
}

/// The kind of each channel, as the compute APIs' array descriptors name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ChannelType {
    /// 8-bit unsigned integer (read as normalised by a texture, written as raw bytes).
    U8,
    /// 16-bit float.
    F16,
    /// 32-bit float.
    F32,
}

impl ImageFormat {
    /// Every format, for tests and samples.
    pub const ALL: [ImageFormat; 4] =
        [ImageFormat::R32Float, ImageFormat::Rgba8Unorm, ImageFormat::Rgba16Float, ImageFormat::Rgba32Float];

    pub fn vk_format(self) -> vk::Format {
        match self {
            ImageFormat::R32Float => vk::Format::R32_SFLOAT,
            ImageFormat::Rgba8Unorm => vk::Format::R8G8B8A8_UNORM,
            ImageFormat::Rgba16Float => vk::Format::R16G16B16A16_SFLOAT,
            ImageFormat::Rgba32Float => vk::Format::R32G32B32A32_SFLOAT,
        }
    }

    /// Channels per texel (1 or 4).
    pub fn channels(self) -> u32 {
        match self {
            ImageFormat::R32Float => 1,
            _ => 4,
        }
    }

    pub fn channel_type(self) -> ChannelType {
        match self {
            ImageFormat::R32Float | ImageFormat::Rgba32Float => ChannelType::F32,
            ImageFormat::Rgba8Unorm => ChannelType::U8,
            ImageFormat::Rgba16Float => ChannelType::F16,
        }
    }

    /// Bytes per texel: what a kernel passes as the x offset factor to `surf2Dwrite`.
    pub fn texel_bytes(self) -> u32 {
        let channel = match self.channel_type() {
            ChannelType::U8 => 1,
            ChannelType::F16 => 2,
            ChannelType::F32 => 4,
        };
        channel * self.channels()
    }

    /// "R32_SFLOAT" etc., the Vulkan name without the prefix.
    pub fn name(self) -> &'static str {
        match self {
            ImageFormat::R32Float => "R32_SFLOAT",
            ImageFormat::Rgba8Unorm => "R8G8B8A8_UNORM",
            ImageFormat::Rgba16Float => "R16G16B16A16_SFLOAT",
            ImageFormat::Rgba32Float => "R32G32B32A32_SFLOAT",
        }
    }
}

impl std::fmt::Display for ImageFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What a 2D image is: `width` × `height` texels of `format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ImageShape {
    pub format: ImageFormat,
    pub width: u32,
    pub height: u32,
    /// The Vulkan image can be a colour attachment (a render target): CUDA must then map it
    /// with `CUDA_ARRAY3D_COLOR_ATTACHMENT` (`cuExternalMemoryGetMappedMipmappedArray`).
    pub color_attachment: bool,
}

/// An exported 2D image (one mip level, one layer, optimal tiling) on its way into a compute
/// API, which views it as a (mipmapped) array of `width` × `height` texels of `format`.
#[derive(Debug)]
pub struct ExportedImage {
    /// The image's whole allocation (`size` = `allocation_size`).
    pub memory: ExportedMemory,
    pub format: ImageFormat,
    pub width: u32,
    pub height: u32,
    /// Created with `VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT` (see [`ImageShape::color_attachment`]).
    pub color_attachment: bool,
}

impl ExportedImage {
    /// Refuse what no importer can map (see [`ExportedMemory::check_sizes`], and an empty
    /// extent); otherwise the memory to import and the image's shape.
    pub fn check(self, api: Api) -> Result<(ExportedMemory, ImageShape)> {
        let ExportedImage { memory, format, width, height, color_attachment } = self;
        memory.check_sizes(api)?;
        if width == 0 || height == 0 {
            return Err(Error::invalid(api, format!("an image of {width}x{height} texels")));
        }
        Ok((memory, ImageShape { format, width, height, color_attachment }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texel_sizes_match_the_vulkan_formats() {
        let expected = [
            (ImageFormat::R32Float, 4),
            (ImageFormat::Rgba8Unorm, 4),
            (ImageFormat::Rgba16Float, 8),
            (ImageFormat::Rgba32Float, 16),
        ];
        for (format, bytes) in expected {
            assert_eq!(format.texel_bytes(), bytes, "{format}");
            assert!(format!("{:?}", format.vk_format()).starts_with(format.name()), "{format}");
        }
    }

    #[test]
    fn sizes_an_importer_cannot_map_are_refused() {
        let fd = || ImportFd::new(std::fs::File::open("/dev/null").unwrap().into());
        let m = |size, allocation_size| ExportedMemory { fd: fd(), allocation_size, size, dedicated: true };
        assert!(m(4096, 4096).check_sizes(Api::Cuda).is_ok());
        let e = m(0, 4096).check_sizes(Api::Cuda).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Invalid);
        let e = m(8192, 4096).check_sizes(Api::Hip).unwrap_err();
        assert_eq!(e.to_string(), "hip: 8192 bytes to map do not fit the allocation of 4096 bytes");
    }
}
