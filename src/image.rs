//! PNG output and the image comparison used by tests, `compare-png` and the GPU check.

use crate::pending::PendingFile;
use std::fs::File;
use std::path::Path;

/// An RGBA8 image.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rgba {
    pub width: u32,
    pub height: u32,
    pub pixels: Vec<u8>,
}

/// Largest image `read_png` decodes (pixels); larger header dimensions are refused before any
/// allocation. vkhip never writes more than 16384 x 16384.
pub const MAX_READ_PIXELS: u64 = 16384 * 16384;

/// Errors reading or writing PNGs. The OS error is part of the message, not a `source`, so a
/// `{:#}` chain prints it once.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    #[error("{path}: {error}")]
    Io { path: String, error: std::io::Error },
    #[error("{path}: not a readable PNG: {message}")]
    Png { path: String, message: String },
    #[error(
        "{path}: PNG header declares {width}x{height} pixels, more than the {MAX_READ_PIXELS} vkhip reads"
    )]
    TooLarge { path: String, width: u32, height: u32 },
    #[error("{path}: cannot write here: {what}")]
    NotWritable { path: String, what: String },
    #[error("{path}: writing the PNG failed: {error} (the previous file, if any, is unchanged)")]
    Write { path: String, error: std::io::Error },
    #[error("{path}: cannot encode the PNG: {message}")]
    Encode { path: String, message: String },
}

/// A PNG written atomically (a [`PendingFile`]): created before the work, committed after.
#[derive(Debug)]
pub struct PendingPng(PendingFile);

impl PendingPng {
    /// Check that `path` can be written: not a directory, its directory exists and takes a new file.
    pub fn create(path: &Path) -> Result<Self, ImageError> {
        PendingFile::create(path)
            .map(PendingPng)
            .map_err(|what| ImageError::NotWritable { path: path.display().to_string(), what })
    }

    /// The target path.
    pub fn path(&self) -> &Path {
        self.0.path()
    }

    /// Encode `img` into the temporary file, sync it, and rename it over the target.
    pub fn commit(self, img: &Rgba) -> Result<(), ImageError> {
        let path = self.0.path().display().to_string();
        let write = |error| ImageError::Write { path: path.clone(), error };
        self.0.commit(
            |out| {
                img.encode(out).map_err(|e| match e {
                    png::EncodingError::IoError(error) => write(error),
                    other => ImageError::Encode { path: path.clone(), message: other.to_string() },
                })
            },
            write,
        )
    }
}

/// The grid N views are tiled in, (columns, rows): ⌈√N⌉ columns, as many rows as they fill (at
/// least 1 of each): the captures' tiles ([`Rgba::tiled`]) and the window's
/// ([`crate::render::view_tiles`]).
///
/// ```
/// use vkhip::image::tile_grid;
///
/// assert_eq!([1, 2, 3, 4, 5, 16, 17].map(tile_grid), [(1, 1), (2, 1), (2, 2), (2, 2), (3, 2), (4, 4), (5, 4)]);
/// assert_eq!(tile_grid(0), (1, 1));
/// ```
pub fn tile_grid(n: u32) -> (u32, u32) {
    let cols = (n as f64).sqrt().ceil().max(1.0) as u32;
    (cols, n.div_ceil(cols).max(1))
}

impl Rgba {
    /// `views` images of `width` × `height` (contiguous RGBA8, one after the other: an
    /// `(N, H, W, 4)` array) tiled into one picture, ⌈√N⌉ columns, row by row; tiles past the
    /// last view stay transparent black.
    ///
    /// ```
    /// use vkhip::image::Rgba;
    ///
    /// let views: Vec<u8> = (0..3u8).flat_map(|v| [v; 2 * 1 * 4]).collect(); // 3 views of 2x1
    /// let t = Rgba::tiled(&views, 2, 1, 3);
    /// assert_eq!((t.width, t.height), (4, 2)); // 2 columns, 2 rows
    /// assert_eq!(t.pixels[..16], [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1]);
    /// assert_eq!(t.pixels[16..24], [2; 8]);
    /// assert_eq!(t.pixels[24..], [0; 8]);
    /// ```
    pub fn tiled(views: &[u8], width: u32, height: u32, n: u32) -> Rgba {
        let (cols, rows) = tile_grid(n);
        let (w, h) = (width as usize, height as usize);
        let out_w = w * cols as usize;
        let mut pixels = vec![0u8; out_w * h * rows as usize * 4];
        for (i, view) in views.chunks_exact(w * h * 4).take(n as usize).enumerate() {
            let (tx, ty) = (i % cols as usize, i / cols as usize);
            for (y, row) in view.chunks_exact(w * 4).enumerate() {
                let start = ((ty * h + y) * out_w + tx * w) * 4;
                pixels[start..start + w * 4].copy_from_slice(row);
            }
        }
        Rgba { width: width * cols, height: height * rows, pixels }
    }

    /// Write as an 8-bit RGBA PNG, atomically (see [`PendingPng`]).
    pub fn write_png(&self, path: &Path) -> Result<(), ImageError> {
        PendingPng::create(path)?.commit(self)
    }

    /// Encode as an 8-bit RGBA PNG into `out`.
    fn encode<W: std::io::Write>(&self, out: &mut W) -> Result<(), png::EncodingError> {
        let mut enc = png::Encoder::new(&mut *out, self.width, self.height);
        enc.set_color(png::ColorType::Rgba);
        enc.set_depth(png::BitDepth::Eight);
        let mut writer = enc.write_header()?;
        writer.write_image_data(&self.pixels)?;
        writer.finish()?;
        out.flush()?;
        Ok(())
    }

    /// Read an 8-bit RGB or RGBA PNG (RGB gets alpha 255).
    pub fn read_png(path: &Path) -> Result<Self, ImageError> {
        let p = path.display().to_string();
        let file = File::open(path).map_err(|error| ImageError::Io { path: p.clone(), error })?;
        let bad = |m: String| ImageError::Png { path: p.clone(), message: m };
        // The decoder's own limit (bytes it may allocate) backs up the explicit check below.
        let limits = png::Limits { bytes: (MAX_READ_PIXELS * 8) as usize };
        let mut decoder = png::Decoder::new_with_limits(std::io::BufReader::new(file), limits);
        decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
        let header = decoder.read_header_info().map_err(|e| bad(e.to_string()))?;
        let (width, height) = (header.width, header.height);
        if width as u64 * height as u64 > MAX_READ_PIXELS {
            return Err(ImageError::TooLarge { path: p, width, height });
        }
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
///
/// # Examples
///
/// ```
/// use vkhip::image::{compare, Rgba, CHANNEL_TOLERANCE};
///
/// let a = Rgba { width: 2, height: 1, pixels: vec![10, 20, 30, 255, 40, 50, 60, 255] };
/// let mut b = a.clone();
/// b.pixels[0] += CHANNEL_TOLERANCE; // within tolerance
/// let d = compare(&a, &b, CHANNEL_TOLERANCE).unwrap();
/// assert_eq!((d.max_channel_diff, d.pixels_over), (8, 0));
/// assert!(d.same());
/// b.pixels[5] += 100; // pixel 1, green: over the tolerance
/// let d = compare(&a, &b, CHANNEL_TOLERANCE).unwrap();
/// assert_eq!((d.pixels_over, d.total_pixels), (1, 2));
/// assert!(!d.same());
/// // Different sizes do not compare at all.
/// assert!(compare(&a, &Rgba { width: 1, height: 2, pixels: a.pixels.clone() }, 0).is_none());
/// ```
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
