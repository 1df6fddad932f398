//! The post filter on an interop API's stream (`cuda`, `hip`): the pairs' imported images, the
//! loaded `outline` kernel, the post timelines where they were imported, and the two ways to run
//! it ([`crate::compute::post`] says which backend takes which):
//!
//! - [`PostStage::enqueue`] (GPU-side, `--sync external`): on the stream, wait `rendered` (the
//!   height protocol's timeline, already imported by the backend) and `presented`, launch,
//!   signal `posted`; the host returns at once and never waits on anything the API signals.
//! - [`PostStage::run_and_wait`] (`bridged`, `none`): launch, record an event, wait on it on the
//!   host (the API's own completion primitive, never a semaphore value).
//!
//! Timing: where the API's kernels stamp the GPU timer ([`PostApi::stamp_target`], CUDA), a
//! GPU-stamped [`StreamTimer`] of its own turns the stamps into [`Phase::PostFilter`] spans of
//! both paths' frames (the kernel itself, on the Vulkan device clock, as the CUDA backend's
//! `Write` spans: the profiler's filter scope, which reads the scene and writes the output, is
//! that span in every mode); the wait and signal around it leave no GPU span
//! (`PostWait`/`PostSignal` are the host-timed spans of the bridged path, which the bridge
//! thread emits).

use super::outline::{outline_launch, wrong_surface, OutlineArgs};
use super::post::{PostKind, PostResources, PostSurface, PostSync};
use super::timing::{Mark, StreamTimer, TimedEvent};
use super::ComputeError;
use crate::compute::kernel::StampTarget;
use crate::profile::{Phase, Span};
use std::ffi::c_void;
use vkhip_interop::{ExportedImage, ImportFd};

type Result<T> = std::result::Result<T, ComputeError>;

/// What [`PostStage`] needs from an interop API (implemented by the CUDA and HIP backends).
pub trait PostApi {
    const NAME: &'static str;
    type Stream;
    type Image;
    type Kernel;
    type Semaphore;
    type Event: TimedEvent<Stream = Self::Stream>;

    /// Import one exported image (the fd is consumed either way).
    fn import_image(&self, image: ExportedImage) -> Result<Self::Image>;
    /// Import one exported timeline semaphore, or refuse (HIP on Linux).
    fn import_timeline(&self, fd: ImportFd) -> Result<Self::Semaphore>;
    /// The surface object a kernel reads and writes the image through.
    fn surface(image: &Self::Image) -> u64;
    /// A new event without timing (completion only).
    fn event(&self) -> Result<Self::Event>;
    /// Enqueue `kernel` on `stream`.
    ///
    /// # Safety
    /// As the API's `launch`: `args` matches the kernel's parameters, and everything they reach
    /// outlives the stream's work.
    unsafe fn launch(
        &self,
        stream: &Self::Stream,
        kernel: &Self::Kernel,
        grid: [u32; 3],
        block: [u32; 3],
        args: &mut [*mut c_void],
    ) -> Result<()>;
    fn wait(&self, stream: &Self::Stream, semaphore: &Self::Semaphore, value: u64) -> Result<()>;
    fn signal(&self, stream: &Self::Stream, semaphore: &Self::Semaphore, value: u64) -> Result<()>;
    /// Where the launch of timer entry `entry` stamps the GPU timer (None: no stamps).
    fn stamp_target(&self, _entry: usize) -> Option<StampTarget> {
        None
    }
    /// The stamps of entry `entry` as they are now (None until its launch wrote both; see
    /// [`crate::compute::timing::StampReader`]).
    fn read_stamps(&self, _entry: usize) -> Option<(u64, u64)> {
        None
    }
}

/// The post timelines as imported: `posted` (signalled here), `presented` (waited for here).
struct PostTimelines<S> {
    posted: S,
    presented: S,
}

/// One backend's post stage: declared so that the timer's events, the semaphores and the images
/// go before the kernel (every crate object waits for the stream before it goes).
pub struct PostStage<P: PostApi> {
    timer: Option<StreamTimer<P::Event>>,
    done: P::Event,
    timelines: Option<PostTimelines<P::Semaphore>>,
    pairs: Vec<(P::Image, P::Image)>,
    width: u32,
    height: u32,
    kernel: P::Kernel,
    api: P,
}

impl<P: PostApi> PostStage<P> {
    /// Import `post`'s pairs ([`PostSurface::Exported`] only) and, if given, its timelines;
    /// `kernel` is `outline`, loaded. `timer` (a GPU-stamped timer) times GPU-side frames.
    pub fn new(
        api: P,
        kernel: P::Kernel,
        post: PostResources,
        timer: Option<StreamTimer<P::Event>>,
    ) -> Result<Self> {
        if post.kind != PostKind::Outline {
            return Err(ComputeError::Unsupported {
                backend: P::NAME,
                reason: format!("no post filter '{}'", post.kind),
            });
        }
        let PostResources { width, height, pairs, semaphores, .. } = post;
        let mut imported = Vec::with_capacity(pairs.len());
        for (i, pair) in pairs.into_iter().enumerate() {
            let (PostSurface::Exported(scene), PostSurface::Exported(output)) = (pair.scene, pair.output)
            else {
                return Err(wrong_surface(P::NAME, "Exported", i));
            };
            for image in [&scene, &output] {
                if (image.width, image.height) != (width, height) {
                    return Err(ComputeError::Unsupported {
                        backend: P::NAME,
                        reason: format!(
                            "post pair {i}: an image of {}x{} for a {width}x{height} post stage",
                            image.width, image.height
                        ),
                    });
                }
            }
            imported.push((api.import_image(scene)?, api.import_image(output)?));
        }
        let timelines = match semaphores {
            Some(s) => {
                let posted = api.import_timeline(s.posted)?;
                Some(PostTimelines { posted, presented: api.import_timeline(s.presented)? })
            }
            None => None,
        };
        log::info!(
            "{}: post filter outline on {} pair(s) of {width}x{height}, timelines: {}",
            P::NAME,
            imported.len(),
            if timelines.is_some() { "imported" } else { "none (host-synchronous only)" }
        );
        Ok(PostStage { timer, done: api.event()?, timelines, pairs: imported, width, height, kernel, api })
    }

    /// Whether the filter's runs are timed on the stream (a GPU-stamped or event timer), so that
    /// [`Self::take_spans`] gives their [`Phase::PostFilter`] spans.
    pub fn is_timed(&self) -> bool {
        self.timer.is_some()
    }

    /// Whether the post timelines were imported (the GPU-side path is possible).
    pub fn has_timelines(&self) -> bool {
        self.timelines.is_some()
    }

    fn launch(&self, stream: &P::Stream, pair: usize, stamps: Option<StampTarget>) -> Result<()> {
        let (scene, output) = self.pairs.get(pair).ok_or_else(|| ComputeError::Unsupported {
            backend: P::NAME,
            reason: format!("post pair {pair} out of range ({} attached)", self.pairs.len()),
        })?;
        let stamps = stamps.unwrap_or(StampTarget { stamps: 0, blocks_done: 0 });
        let mut args = OutlineArgs {
            src: P::surface(scene),
            dst: P::surface(output),
            width: self.width,
            height: self.height,
            stamps: stamps.stamps,
            blocks_done: stamps.blocks_done,
        };
        let mut ptrs = args.param_pointers();
        let (grid, block) = outline_launch(self.width, self.height);
        // SAFETY: `kernel` is `outline`, whose parameters are `OutlineArgs::SIGNATURE` (a unit test
        // reads the source) and `ptrs` follows that order; both surfaces belong to images of
        // width × height (checked at import) that this stage keeps until the stream is idle, and
        // the kernel touches texels inside that extent only; the stamp pointers are null or a
        // live stamp entry and counter; `args` outlives the call, which copies the values.
        unsafe { self.api.launch(stream, &self.kernel, grid, block, &mut ptrs) }
    }

    /// GPU-side: wait `rendered` (the backend's imported `rendered`, None: no wait) ≥
    /// `sync.wait_rendered` and `presented` ≥ `sync.wait_presented`, filter pair `pair`, signal
    /// `posted` = `sync.signal_posted`; returns at once.
    pub fn enqueue(
        &mut self,
        stream: &P::Stream,
        rendered: Option<&P::Semaphore>,
        frame: u64,
        pair: usize,
        sync: PostSync,
    ) -> Result<()> {
        let refuse = |what: &str| ComputeError::Unsupported {
            backend: P::NAME,
            reason: format!("the post stage waits or signals on the GPU, but {what} was not imported"),
        };
        let needs_timelines = sync.wait_presented.is_some() || sync.signal_posted.is_some();
        let timelines = match &self.timelines {
            Some(t) => Some(t),
            None if needs_timelines => return Err(refuse("the post timelines")),
            None => None,
        };
        if let Some(value) = sync.wait_rendered {
            self.api.wait(stream, rendered.ok_or_else(|| refuse("the rendered timeline"))?, value)?;
        }
        if let (Some(value), Some(t)) = (sync.wait_presented, timelines) {
            self.api.wait(stream, &t.presented, value)?;
        }
        let entry = self.timer.as_mut().map(|t| t.begin(frame));
        let stamps = entry.and_then(|i| self.timer.as_ref()?.stamping().then(|| self.api.stamp_target(i))?);
        self.launch(stream, pair, stamps)?;
        if let (Some(timer), Some(i)) = (&self.timer, entry) {
            timer.mark(i, Mark::AfterKernel, stream)?;
        }
        if let (Some(value), Some(t)) = (sync.signal_posted, timelines) {
            self.api.signal(stream, &t.posted, value)?;
        }
        Ok(())
    }

    /// Host-synchronous: filter pair `pair` (frame `frame`'s), and return once the output is
    /// written. Timed as the GPU-side path is: the filter's work is on the stream either way, and
    /// the profiler puts the scope that reads the scene and writes the output there.
    pub fn run_and_wait(&mut self, stream: &P::Stream, frame: u64, pair: usize) -> Result<()> {
        let entry = self.timer.as_mut().map(|t| t.begin(frame));
        let stamps = entry.and_then(|i| self.timer.as_ref()?.stamping().then(|| self.api.stamp_target(i))?);
        self.launch(stream, pair, stamps)?;
        if let (Some(timer), Some(i)) = (&self.timer, entry) {
            timer.mark(i, Mark::AfterKernel, stream)?;
        }
        self.done.record_on(stream)?;
        self.done.wait()
    }

    /// The GPU-side frames' [`Phase::PostFilter`] spans measured so far (never blocks).
    pub fn take_spans(&mut self, out: &mut Vec<Span>) {
        let Some(timer) = self.timer.as_mut() else { return };
        let mut spans = Vec::new();
        let api = &self.api;
        timer.take_spans_with(&mut spans, &|entry| api.read_stamps(entry));
        out.extend(
            spans
                .into_iter()
                .filter(|s| s.phase == Phase::Write)
                .map(|s| Span { phase: Phase::PostFilter, ..s }),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compute::post::{PostPair, PostSemaphores};
    use std::cell::RefCell;
    use std::rc::Rc;
    use vkhip_interop::{ExportedMemory, ImageFormat};

    type Log = Rc<RefCell<Vec<String>>>;

    struct FakeEvent;

    impl TimedEvent for FakeEvent {
        type Stream = Log;
        fn record_on(&self, log: &Log) -> Result<()> {
            log.borrow_mut().push("event".into());
            Ok(())
        }
        fn is_done(&self) -> Result<bool> {
            Ok(true)
        }
        fn ms_since(&self, _: &Self) -> Result<f32> {
            Ok(0.0)
        }
        fn wait(&self) -> Result<()> {
            Ok(())
        }
    }

    /// Images are their surface numbers (scene 10·i+1, output 10·i+2, by import order); a
    /// semaphore is its name; every call is logged in order.
    struct Fake {
        imported: RefCell<u64>,
        timelines: bool,
    }

    impl PostApi for Fake {
        const NAME: &'static str = "fake";
        type Stream = Log;
        type Image = u64;
        type Kernel = ();
        type Semaphore = &'static str;
        type Event = FakeEvent;

        fn import_image(&self, _image: ExportedImage) -> Result<u64> {
            let mut n = self.imported.borrow_mut();
            *n += 1;
            Ok((*n - 1) / 2 * 10 + (*n - 1) % 2 + 1)
        }
        fn import_timeline(&self, _fd: ImportFd) -> Result<&'static str> {
            if self.timelines {
                return Ok("imported");
            }
            Err(ComputeError::Unsupported { backend: "fake", reason: "refused".into() })
        }
        fn surface(image: &u64) -> u64 {
            *image
        }
        fn event(&self) -> Result<FakeEvent> {
            Ok(FakeEvent)
        }
        unsafe fn launch(
            &self,
            log: &Log,
            _kernel: &(),
            grid: [u32; 3],
            block: [u32; 3],
            args: &mut [*mut c_void],
        ) -> Result<()> {
            // SAFETY: `args` are `OutlineArgs::param_pointers`: two u64 then two u32.
            let (src, dst, w, h) = unsafe {
                (
                    *(args[0] as *const u64),
                    *(args[1] as *const u64),
                    *(args[2] as *const u32),
                    *(args[3] as *const u32),
                )
            };
            log.borrow_mut().push(format!("outline {src}->{dst} {w}x{h} grid {grid:?} block {block:?}"));
            Ok(())
        }
        fn wait(&self, log: &Log, semaphore: &&'static str, value: u64) -> Result<()> {
            log.borrow_mut().push(format!("wait {semaphore} {value}"));
            Ok(())
        }
        fn signal(&self, log: &Log, semaphore: &&'static str, value: u64) -> Result<()> {
            log.borrow_mut().push(format!("signal {semaphore} {value}"));
            Ok(())
        }
    }

    fn fd() -> ImportFd {
        ImportFd::new(std::fs::File::open("/dev/null").unwrap().into())
    }

    fn exported(width: u32, height: u32) -> PostSurface {
        let memory = ExportedMemory { fd: fd(), allocation_size: 4096, size: 4096, dedicated: true };
        PostSurface::Exported(ExportedImage {
            memory,
            format: ImageFormat::Rgba8Unorm,
            width,
            height,
            color_attachment: true,
        })
    }

    fn resources(pairs: usize, semaphores: bool) -> PostResources {
        PostResources {
            kind: PostKind::Outline,
            width: 333,
            height: 77,
            pairs: (0..pairs)
                .map(|_| PostPair { scene: exported(333, 77), output: exported(333, 77) })
                .collect(),
            semaphores: semaphores.then(|| PostSemaphores { posted: fd(), presented: fd() }),
        }
    }

    fn stage(pairs: usize, semaphores: bool) -> PostStage<Fake> {
        let api = Fake { imported: RefCell::new(0), timelines: true };
        PostStage::new(api, (), resources(pairs, semaphores), None).unwrap()
    }

    #[test]
    fn gpu_side_frame_waits_both_timelines_then_filters_its_pair_then_signals() {
        let log = Log::default();
        let mut s = stage(3, true);
        assert!(s.has_timelines());
        let sync = PostSync { wait_rendered: Some(5), wait_presented: Some(2), signal_posted: Some(5) };
        s.enqueue(&log, Some(&"rendered"), 4, 1, sync).unwrap();
        assert_eq!(
            *log.borrow(),
            [
                "wait rendered 5",
                "wait imported 2",
                "outline 11->12 333x77 grid [21, 5, 1] block [16, 16, 1]",
                "signal imported 5",
            ]
        );
        // The first K frames wait for no copy; `--sync none` waits and signals nothing.
        log.borrow_mut().clear();
        let first = PostSync { wait_rendered: Some(1), wait_presented: None, signal_posted: Some(1) };
        s.enqueue(&log, Some(&"rendered"), 0, 0, first).unwrap();
        let none = PostSync { wait_rendered: None, wait_presented: None, signal_posted: None };
        s.enqueue(&log, None, 1, 2, none).unwrap();
        assert_eq!(
            *log.borrow(),
            [
                "wait rendered 1",
                "outline 1->2 333x77 grid [21, 5, 1] block [16, 16, 1]",
                "signal imported 1",
                "outline 21->22 333x77 grid [21, 5, 1] block [16, 16, 1]",
            ]
        );
    }

    #[test]
    fn host_synchronous_frame_filters_then_waits_for_its_event() {
        let log = Log::default();
        let mut s = stage(2, false);
        s.run_and_wait(&log, 0, 1).unwrap();
        assert_eq!(*log.borrow(), ["outline 11->12 333x77 grid [21, 5, 1] block [16, 16, 1]", "event"]);
    }

    #[test]
    fn what_was_not_imported_is_refused_not_skipped() {
        let log = Log::default();
        let mut s = stage(2, false);
        let sync = PostSync { wait_rendered: Some(1), wait_presented: None, signal_posted: Some(1) };
        let e = s.enqueue(&log, Some(&"rendered"), 0, 0, sync).unwrap_err();
        assert!(e.to_string().contains("the post timelines was not imported"), "{e}");
        let mut s = stage(2, true);
        let e = s.enqueue(&log, None, 0, 0, sync).unwrap_err();
        assert!(e.to_string().contains("the rendered timeline was not imported"), "{e}");
        let e = s.run_and_wait(&log, 0, 2).unwrap_err();
        assert!(e.to_string().contains("post pair 2 out of range (2 attached)"), "{e}");
        assert!(log.borrow().is_empty(), "nothing enqueued: {:?}", log.borrow());
    }

    #[test]
    fn pairs_of_another_shape_or_kind_are_refused() {
        let api = || Fake { imported: RefCell::new(0), timelines: true };
        let mut wrong_size = resources(1, false);
        wrong_size.pairs[0].output = exported(333, 78);
        let e = PostStage::new(api(), (), wrong_size, None).err().unwrap();
        assert!(e.to_string().contains("post pair 0: an image of 333x78 for a 333x77 post stage"), "{e}");
        let mut mapped = resources(1, false);
        mapped.pairs[0].scene = PostSurface::Mapped { ptr: std::ptr::null_mut(), len: 0 };
        let e = PostStage::new(api(), (), mapped, None).err().unwrap();
        assert!(e.to_string().contains("expected Exported surfaces"), "{e}");
        let refused = Fake { imported: RefCell::new(0), timelines: false };
        assert!(PostStage::new(refused, (), resources(1, true), None).is_err());
    }
}
