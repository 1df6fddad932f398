//! The `wgpu` feature on lavapipe: wgpu textures (every format) and a wgpu buffer, exported by the
//! crate and imported into a second Vulkan device that plays the compute API, both ways — wgpu
//! writes, the second device reads (every byte checked) and writes, wgpu reads back (every byte
//! checked) — with wgpu's own validation and the Khronos layer (synchronization validation on)
//! reporting nothing, through both shapes of the hand-off (`finish_and_release`, three command
//! buffers, whose hooks write timestamps that must land in order; and `release`, four).
//! lavapipe exports memory but no semaphores: the host orders the two devices (`Device::poll`, the
//! second device's fences). A control shows the messenger hears a release that skips wgpu's
//! transition to GENERAL. And a device opened without the crate's extensions is refused in one
//! line naming what it lacks.

#[path = "common/skip.rs"]
mod skip;

use ash::vk;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use vkhip_interop::vulkan::{Device, ImageAccess, Importer};
use vkhip_interop::wgpu_interop::{WgpuBuffer, WgpuDevice, WgpuTexture};
use vkhip_interop::{ErrorKind, ImageFormat};

const WIDTH: u32 = 13;
const HEIGHT: u32 = 7;
const BUFFER_BYTES: u64 = 4096;

/// wgpu's warnings and errors (its Vulkan debug messenger logs the layer's messages through `log`).
static MESSAGES: Mutex<Vec<String>> = Mutex::new(Vec::new());

struct Collect;

impl log::Log for Collect {
    fn enabled(&self, m: &log::Metadata<'_>) -> bool {
        m.level() <= log::Level::Warn
    }

    fn log(&self, r: &log::Record<'_>) {
        if self.enabled(r.metadata()) && r.target().starts_with("wgpu") {
            let line = format!("{} {}: {}", r.level(), r.target(), r.args());
            eprintln!("{line}");
            MESSAGES.lock().unwrap_or_else(|p| p.into_inner()).push(line);
        }
    }

    fn flush(&self) {}
}

static COLLECT: Collect = Collect;

/// wgpu's native futures are ready when returned.
fn ready<F: Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("a wgpu future was not ready"),
    }
}

fn adapter(validated: bool) -> wgpu::Adapter {
    let flags = if validated {
        wgpu::InstanceFlags::VALIDATION | wgpu::InstanceFlags::DEBUG
    } else {
        wgpu::InstanceFlags::empty()
    };
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = wgpu::Backends::VULKAN;
    desc.flags = flags;
    let instance = wgpu::Instance::new(desc);
    if validated {
        // SAFETY: read only.
        let hal = unsafe { instance.as_hal::<wgpu::hal::api::Vulkan>() }.expect("wgpu's Vulkan instance");
        assert!(
            hal.shared_instance().extensions().contains(&ash::ext::debug_utils::NAME),
            "wgpu's validation messenger is on"
        );
    }
    ready(instance.request_adapter(&wgpu::RequestAdapterOptions::default()))
        .expect("a Vulkan adapter (lavapipe)")
}

/// A byte pattern of `len` bytes (bit-exact through copies, whatever the format).
fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed ^ (i / 253) as u8)).collect()
}

/// The two shapes of a hand-off on wgpu's queue.
#[derive(Clone, Copy, Debug)]
enum Shape {
    /// `[acquire_with, your encoder + wgpu's transition, release]`: `finish_and_release_with`,
    /// each hook writing a timestamp.
    Three,
    /// `[acquire, your encoder, general, release]`: `release`.
    Four,
}

/// Two timestamps on `device`, reset; destroyed on drop (after the device is idle).
struct Stamps(ash::Device, vk::QueryPool);

impl Stamps {
    fn new(device: &Device) -> Stamps {
        let d = device.ash();
        let info = vk::QueryPoolCreateInfo::default().query_type(vk::QueryType::TIMESTAMP).query_count(2);
        // SAFETY: the live device; `Stamps` destroys the pool.
        let pool = unsafe { d.create_query_pool(&info, None) }.expect("a timestamp pool");
        // SAFETY: a one-shot command buffer of `device`, recording; the pool is new.
        device
            .submit_one_shot(&[], &[], |cmd| unsafe { d.cmd_reset_query_pool(cmd, pool, 0, 2) })
            .expect("reset");
        Stamps(d.clone(), pool)
    }

    /// A hook that writes timestamp `i` once everything before it in the queue completed.
    fn write(&self, i: u32) -> impl FnOnce(vk::CommandBuffer) + '_ {
        // SAFETY: the caller passes it to a hook of the crate (a command buffer of the pool's
        // device, recording, outside a render pass); each query is written once after its reset.
        move |cmd| unsafe {
            self.0.cmd_write_timestamp(cmd, vk::PipelineStageFlags::BOTTOM_OF_PIPE, self.1, i)
        }
    }

    /// Both timestamps (waiting for them).
    fn read(&self) -> [u64; 2] {
        let mut v = [0u64; 2];
        // SAFETY: the pool holds two queries, both written by submitted work.
        unsafe {
            self.0.get_query_pool_results(
                self.1,
                0,
                &mut v,
                vk::QueryResultFlags::TYPE_64 | vk::QueryResultFlags::WAIT,
            )
        }
        .expect("the timestamps");
        v
    }
}

impl Drop for Stamps {
    fn drop(&mut self) {
        // SAFETY: the pool is ours; the work that wrote it finished (`read` waited).
        unsafe { self.0.destroy_query_pool(self.1, None) };
    }
}

/// Copy `texture` and `buffer` to the host through wgpu: acquire → copies → release, in one
/// submit of `shape`. Returns (texels, tightly packed; buffer bytes).
fn wgpu_read(
    shared: &WgpuDevice,
    texture: &WgpuTexture,
    buffer: &WgpuBuffer,
    shape: Shape,
) -> (Vec<u8>, Vec<u8>) {
    let device = shared.device();
    let texel = texture.image().format().texel_bytes();
    let row = WIDTH * texel;
    let padded = row.div_ceil(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT) * wgpu::COPY_BYTES_PER_ROW_ALIGNMENT;
    let usage = wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST;
    let texels = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: u64::from(padded * HEIGHT),
        usage,
        mapped_at_creation: false,
    });
    let bytes = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: BUFFER_BYTES,
        usage,
        mapped_at_creation: false,
    });
    let mut encoder = device.create_command_encoder(&Default::default());
    encoder.copy_texture_to_buffer(
        texture.texture().as_image_copy(),
        wgpu::TexelCopyBufferInfo {
            buffer: &texels,
            layout: wgpu::TexelCopyBufferLayout {
                offset: 0,
                bytes_per_row: Some(padded),
                rows_per_image: None,
            },
        },
        wgpu::Extent3d { width: WIDTH, height: HEIGHT, depth_or_array_layers: 1 },
    );
    encoder.copy_buffer_to_buffer(buffer.buffer(), 0, &bytes, 0, BUFFER_BYTES);
    let stamps = Stamps::new(shared.vulkan());
    match shape {
        Shape::Three => {
            // SAFETY: the hooks write a timestamp each (`Stamps::write`).
            let acquire = unsafe { shared.acquire_with(&[texture], &[buffer], stamps.write(0)) };
            // SAFETY: as above.
            let [work, release] =
                unsafe { shared.finish_and_release_with(encoder, &[texture], &[buffer], stamps.write(1)) };
            shared.queue().submit([acquire, work, release]);
        }
        Shape::Four => {
            let [general, release] = shared.release(&[texture], &[buffer]);
            shared.queue().submit([
                shared.acquire(&[texture], &[buffer]),
                encoder.finish(),
                general,
                release,
            ]);
        }
    }
    for b in [&texels, &bytes] {
        b.map_async(wgpu::MapMode::Read, .., |r| r.expect("map"));
    }
    device.poll(wgpu::PollType::wait_indefinitely()).expect("poll");
    if let Shape::Three = shape {
        let [after_acquire, after_release] = stamps.read();
        assert!(
            after_acquire > 0 && after_release >= after_acquire,
            "the hooks' timestamps: after the acquire {after_acquire}, after the release {after_release}"
        );
    }
    let t = texels.get_mapped_range(..).expect("mapped");
    let packed: Vec<u8> = t.chunks(padded as usize).flat_map(|r| r[..row as usize].iter().copied()).collect();
    let b = bytes.get_mapped_range(..).expect("mapped").to_vec();
    (packed, b)
}

/// The compute API's side, played by device `b` on the imported image and buffer: read both
/// (returned), then write `image_bytes` and `buffer_bytes` over them (acquire → copy → release).
fn external_reads_then_writes(
    b: &Device,
    texture: &WgpuTexture,
    buffer: &WgpuBuffer,
    image_bytes: &[u8],
    buffer_bytes: &[u8],
) -> (Vec<u8>, Vec<u8>) {
    let image =
        b.import_image(texture.image().export().expect("export the texture")).expect("import the texture");
    let imported =
        b.import_buffer(buffer.shared().export().expect("export the buffer")).expect("import the buffer");
    let image_read = b.read_image(&image, None, None).expect("the external side reads the texture");
    let staging_image = b.shared_buffer(image_bytes.len() as u64).expect("staging");
    let staging_read = b.shared_buffer(BUFFER_BYTES).expect("staging");
    let (width, height) = image.extent();
    let d = b.ash();
    b.submit_one_shot(&[], &[], |cmd| {
        let transfer = vk::PipelineStageFlags::TRANSFER;
        let ownership = |acquire: bool| {
            let (src, dst) = if acquire {
                (vk::QUEUE_FAMILY_EXTERNAL, b.queue_family())
            } else {
                (b.queue_family(), vk::QUEUE_FAMILY_EXTERNAL)
            };
            vk::BufferMemoryBarrier::default()
                .src_access_mask(if acquire {
                    vk::AccessFlags::empty()
                } else {
                    vk::AccessFlags::TRANSFER_WRITE
                })
                .dst_access_mask(if acquire {
                    vk::AccessFlags::TRANSFER_READ | vk::AccessFlags::TRANSFER_WRITE
                } else {
                    vk::AccessFlags::empty()
                })
                .src_queue_family_index(src)
                .dst_queue_family_index(dst)
                .buffer(imported.buffer())
                .size(vk::WHOLE_SIZE)
        };
        let between = vk::MemoryBarrier::default()
            .src_access_mask(vk::AccessFlags::TRANSFER_WRITE | vk::AccessFlags::TRANSFER_READ)
            .dst_access_mask(vk::AccessFlags::TRANSFER_READ | vk::AccessFlags::TRANSFER_WRITE);
        let region = vk::BufferImageCopy::default()
            .image_subresource(
                vk::ImageSubresourceLayers::default().aspect_mask(vk::ImageAspectFlags::COLOR).layer_count(1),
            )
            .image_extent(vk::Extent3D { width, height, depth: 1 });
        let write = ImageAccess::TRANSFER_WRITE;
        let none = vk::DependencyFlags::empty();
        // SAFETY: recording on b's queue family; every buffer holds what is copied; the updates
        // are ≤ 64 KiB and multiples of 4 bytes.
        unsafe {
            d.cmd_pipeline_barrier(
                cmd,
                vk::PipelineStageFlags::TOP_OF_PIPE,
                transfer,
                none,
                &[],
                &[ownership(true)],
                &[],
            );
            let whole = [vk::BufferCopy { src_offset: 0, dst_offset: 0, size: BUFFER_BYTES }];
            d.cmd_copy_buffer(cmd, imported.buffer(), staging_read.buffer(), &whole);
            d.cmd_update_buffer(cmd, staging_image.buffer(), 0, image_bytes);
            d.cmd_pipeline_barrier(cmd, transfer, transfer, none, &[between], &[], &[]);
            d.cmd_update_buffer(cmd, imported.buffer(), 0, buffer_bytes);
            image.cmd_acquire(cmd, write);
            d.cmd_copy_buffer_to_image(cmd, staging_image.buffer(), image.image(), write.layout(), &[region]);
            image.cmd_release(cmd, write);
            d.cmd_pipeline_barrier(
                cmd,
                transfer,
                vk::PipelineStageFlags::BOTTOM_OF_PIPE,
                none,
                &[],
                &[ownership(false)],
                &[],
            );
        }
    })
    .expect("the external side reads and writes");
    let buffer_read = b.read_buffer(&staging_read, None, None).expect("read the staging buffer");
    (image_read, buffer_read)
}

#[test]
fn wgpu_textures_and_a_buffer_round_trip_through_a_second_device_with_no_validation_messages() {
    let test = "wgpu_textures_and_a_buffer_round_trip_through_a_second_device_with_no_validation_messages";
    if !skip::require(test, skip::Component::ValidationLayer) {
        return;
    }
    log::set_logger(&COLLECT).expect("the only logger");
    log::set_max_level(log::LevelFilter::Warn);
    // The Khronos layer's synchronization validation too (read when wgpu creates its instance).
    std::env::set_var("VK_LAYER_ENABLES", "VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT");
    let errors = Arc::new(Mutex::new(Vec::<String>::new()));
    {
        let adapter = adapter(true);
        let shared =
            WgpuDevice::open(&adapter, &wgpu::DeviceDescriptor::default(), Importer::Hip).expect("open");
        let sink = errors.clone();
        shared.device().on_uncaptured_error(Arc::new(move |e| {
            sink.lock().unwrap_or_else(|p| p.into_inner()).push(e.to_string());
        }));
        let b = Device::open(&[shared.vulkan().uuid()], Importer::Hip).expect("the second device");
        for (seed, format) in ImageFormat::ALL.into_iter().enumerate() {
            let seed = seed as u8 * 4;
            let texture = shared.shared_texture(format, WIDTH, HEIGHT).expect("texture");
            let usage = texture.texture().usage();
            assert!(
                usage.contains(wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::STORAGE_BINDING)
            );
            let buffer = shared.shared_buffer(BUFFER_BYTES).expect("buffer");
            let image_len = (WIDTH * HEIGHT * format.texel_bytes()) as usize;
            let (wgpu_image, wgpu_bytes) =
                (pattern(image_len, seed), pattern(BUFFER_BYTES as usize, seed + 1));
            // wgpu writes first, then hands both to the compute API.
            shared.queue().write_texture(
                texture.texture().as_image_copy(),
                &wgpu_image,
                wgpu::TexelCopyBufferLayout {
                    offset: 0,
                    bytes_per_row: Some(WIDTH * format.texel_bytes()),
                    rows_per_image: None,
                },
                wgpu::Extent3d { width: WIDTH, height: HEIGHT, depth_or_array_layers: 1 },
            );
            shared.queue().write_buffer(buffer.buffer(), 0, &wgpu_bytes);
            shared.queue().submit(shared.release(&[&texture], &[&buffer]));
            shared.device().poll(wgpu::PollType::wait_indefinitely()).expect("poll");
            let (b_image, b_bytes) = (pattern(image_len, seed + 2), pattern(BUFFER_BYTES as usize, seed + 3));
            let (image_read, buffer_read) =
                external_reads_then_writes(&b, &texture, &buffer, &b_image, &b_bytes);
            assert_eq!(image_read, wgpu_image, "{format}: what wgpu wrote, as the second device reads it");
            assert_eq!(
                buffer_read, wgpu_bytes,
                "{format}: the buffer wgpu wrote, as the second device reads it"
            );
            let shape = if seed % 8 == 0 { Shape::Three } else { Shape::Four };
            let (image_back, buffer_back) = wgpu_read(&shared, &texture, &buffer, shape);
            assert_eq!(
                image_back, b_image,
                "{format}: what the second device wrote, read back through wgpu ({shape:?})"
            );
            assert_eq!(
                buffer_back, b_bytes,
                "{format}: the buffer the second device wrote, read back through wgpu ({shape:?})"
            );
        }
        shared.device().poll(wgpu::PollType::wait_indefinitely()).expect("poll");
    }
    let messages = MESSAGES.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let errors = errors.lock().unwrap_or_else(|p| p.into_inner()).clone();
    assert!(messages.is_empty(), "{} wgpu / validation-layer messages: {messages:#?}", messages.len());
    assert!(errors.is_empty(), "{} wgpu validation errors: {errors:#?}", errors.len());

    // The control: the crate's release without wgpu's transition to GENERAL before it (wgpu's
    // tracker then holds COPY_DST, the barrier says GENERAL) is reported, so the 0 above is the
    // two agreeing, not a deaf messenger.
    {
        let shared = WgpuDevice::open(&adapter(true), &wgpu::DeviceDescriptor::default(), Importer::Hip)
            .expect("open");
        let texture = shared.shared_texture(ImageFormat::Rgba8Unorm, WIDTH, HEIGHT).expect("texture");
        let texels = vec![7u8; (WIDTH * HEIGHT * 4) as usize];
        let layout = wgpu::TexelCopyBufferLayout { bytes_per_row: Some(WIDTH * 4), ..Default::default() };
        let size = wgpu::Extent3d { width: WIDTH, height: HEIGHT, depth_or_array_layers: 1 };
        shared.queue().write_texture(texture.texture().as_image_copy(), &texels, layout, size);
        let [_to_general, release] = shared.release(&[&texture], &[]);
        shared.queue().submit([release]);
        shared.device().poll(wgpu::PollType::wait_indefinitely()).expect("poll");
    }
    let control = MESSAGES.lock().unwrap_or_else(|p| p.into_inner()).clone();
    assert!(
        control.iter().any(|m| m.contains("InvalidImageLayout")),
        "a release without wgpu's transition was not reported: {control:#?}"
    );
}

/// A device wgpu opened without the crate's extensions is refused in one line that names each.
#[test]
fn a_wgpu_device_without_semaphore_export_is_refused_naming_it() {
    let adapter = adapter(false);
    let (device, queue) =
        ready(adapter.request_device(&wgpu::DeviceDescriptor::default())).expect("a plain device");
    let Err(e) = WgpuDevice::from_wgpu(device, queue, Importer::Cuda) else {
        panic!("a device without VK_KHR_external_semaphore_fd enabled was accepted for CUDA");
    };
    let text = e.to_string();
    assert_eq!(e.kind(), ErrorKind::Unsupported, "{text}");
    assert!(text.contains("VK_KHR_external_semaphore_fd (not enabled)"), "{text}");
    assert!(!text.contains("VK_KHR_external_memory_fd"), "wgpu enables memory export itself: {text}");
    assert_eq!(text.lines().count(), 1, "{text}");
}
