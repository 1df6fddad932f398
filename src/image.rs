//! PNG output and the image comparison used by tests, `compare-png` and the GPU check.

use std::path::Path;

/// An RGBA8 image.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rgba {
    pub width: u32,
    pub height: u32,
    pub pixels: Vec<u8>,
}

/// Errors reading or writing PNGs.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    #[error("{path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("{path}: not a readable PNG: {message}")]
    Png { path: String, message: String },
}

impl Rgba {
    /// Write as an 8-bit RGBA PNG.
    pub fn write_png(&self, path: &Path) -> Result<(), ImageError> {
        let io = |source| ImageError::Io { path: path.display().to_string(), source };
        let png = |e: png::EncodingError| ImageError::Png {
            path: path.display().to_string(),
            message: e.to_string(),
        };
        let file = std::fs::File::create(path).map_err(io)?;
        let mut enc = png::Encoder::new(std::io::BufWriter::new(file), self.width, self.height);
        enc.set_color(png::ColorType::Rgba);
        enc.set_depth(png::BitDepth::Eight);
        let mut writer = enc.write_header().map_err(png)?;
        writer.write_image_data(&self.pixels).map_err(png)?;
        writer.finish().map_err(png)
    }

    /// Read an 8-bit RGB or RGBA PNG (RGB gets alpha 255).
    pub fn read_png(path: &Path) -> Result<Self, ImageError> {
        let p = path.display().to_string();
        let file = std::fs::File::open(path).map_err(|source| ImageError::Io { path: p.clone(), source })?;
        let bad = |m: String| ImageError::Png { path: p.clone(), message: m };
        let mut decoder = png::Decoder::new(std::io::BufReader::new(file));
        decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
        let mut reader = decoder.read_info().map_err(|e| bad(e.to_string()))?;
        let mut buf = vec![0; reader.output_buffer_size()];
        let info = reader.next_frame(&mut buf).map_err(|e| bad(e.to_string()))?;
        let data = &buf[..info.buffer_size()];
        let pixels = match info.color_type {
            png::ColorType::Rgba => data.to_vec(),
            png::ColorType::Rgb => data.chunks_exact(3).flat_map(|c| [c[0], c[1], c[2], 255]).collect(),
            png::ColorType::GrayscaleAlpha => {
                data.chunks_exact(2).flat_map(|c| [c[0], c[0], c[0], c[1]]).collect()
            }
            png::ColorType::Grayscale => data.iter().flat_map(|&g| [g, g, g, 255]).collect(),
            other => return Err(bad(format!("unsupported colour type {other:?}"))),
        };
        Ok(Rgba { width: info.width, height: info.height, pixels })
    }

    /// The pixel at (x, y).
    pub fn pixel(&self, x: u32, y: u32) -> [u8; 4] {
        let i = (y as usize * self.width as usize + x as usize) * 4;
        [self.pixels[i], self.pixels[i + 1], self.pixels[i + 2], self.pixels[i + 3]]
    }
}

/// How two images differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImageDiff {
    /// Largest difference of any colour channel (RGB) at any pixel.
    pub max_channel_diff: u8,
    /// Pixels where some RGB channel differs by more than the tolerance.
    pub pixels_over: usize,
    pub total_pixels: usize,
}

/// The tolerance vkhip uses to call two renders of the same frame "the same": a pixel differs if
/// a channel differs by more than [`CHANNEL_TOLERANCE`], and at most [`MAX_DIFFERING_FRACTION`] of
/// the pixels may differ (triangle edges can flip where heights differ in the last bits).
pub const CHANNEL_TOLERANCE: u8 = 8;
/// See [`CHANNEL_TOLERANCE`].
pub const MAX_DIFFERING_FRACTION: f64 = 0.001;

impl ImageDiff {
    /// Within the stated tolerance.
    pub fn same(&self) -> bool {
        self.pixels_over as f64 <= MAX_DIFFERING_FRACTION * self.total_pixels as f64
    }
}

/// Compare two images of equal size (None if the sizes differ).
pub fn compare(a: &Rgba, b: &Rgba, tolerance: u8) -> Option<ImageDiff> {
    if (a.width, a.height) != (b.width, b.height) {
        return None;
    }
    let mut d =
        ImageDiff { max_channel_diff: 0, pixels_over: 0, total_pixels: (a.width * a.height) as usize };
    for (pa, pb) in a.pixels.chunks_exact(4).zip(b.pixels.chunks_exact(4)) {
        let m = (0..3).map(|c| pa[c].abs_diff(pb[c])).max().unwrap_or(0);
        d.max_channel_diff = d.max_channel_diff.max(m);
        if m > tolerance {
            d.pixels_over += 1;
        }
    }
    Some(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn png_round_trip_and_compare() {
        let img = Rgba { width: 3, height: 2, pixels: (0..24).map(|i| (i * 10) as u8).collect() };
        let path = std::env::temp_dir().join(format!("vkhip-img-{}.png", std::process::id()));
        img.write_png(&path).unwrap();
        let back = Rgba::read_png(&path).unwrap();
        assert_eq!(back, img);
        let mut other = img.clone();
        other.pixels[4] += 20; // pixel 1, red
        other.pixels[9] += 3; // pixel 2, green (within tolerance)
        let d = compare(&img, &other, CHANNEL_TOLERANCE).unwrap();
        assert_eq!((d.max_channel_diff, d.pixels_over, d.total_pixels), (20, 1, 6));
        assert!(!d.same());
        assert!(compare(&img, &Rgba { width: 2, height: 3, pixels: img.pixels.clone() }, 0).is_none());
        let _ = std::fs::remove_file(path);
    }
}
